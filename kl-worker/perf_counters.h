/* Host hardware counters through perf_event_open (perf_counters.c). */
#ifndef KLW_PERF_COUNTERS_H
#define KLW_PERF_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#define KLW_PERF_NEVENTS 6

typedef struct klw_perf {
  int fd[KLW_PERF_NEVENTS];
  double total[KLW_PERF_NEVENTS]; /* after klw_perf_read; -1: not counted */
} klw_perf;

/* "cycles", "instructions", "cache_references", "cache_misses",
 * "branches", "branch_misses". */
const char *klw_perf_event_name(int i);
/* Open every event for this thread, disabled; the number opened. With
 * none, note says why in one line. */
int klw_perf_open(klw_perf *p, char *note, size_t notelen);
void klw_perf_enable(klw_perf *p, int on);
/* Read the counts accumulated while enabled (scaled if multiplexed). */
void klw_perf_read(klw_perf *p);
void klw_perf_close(klw_perf *p);

#endif /* KLW_PERF_COUNTERS_H */
