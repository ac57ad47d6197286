/* Kernel records from CUPTI for kl-worker (cupti_timer.c). */
#ifndef KLW_CUPTI_TIMER_H
#define KLW_CUPTI_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
  KLW_WORK = 0,
  KLW_FLUSH = 1,      /* klh_l2_flush */
  KLW_PROBE = 2,      /* klh_clock_probe: a sample's marker */
  KLW_COPY = 3,       /* a copy or memset: work when a launch queued it */
  KLW_RESTORE = 4,    /* klh_restore_*: the harness's restores */
  KLW_FLUSH_MARK = 5, /* klh_l2_flush_mark: a flush and a sample's marker */
  KLW_KINDS = 6
};

/* A kernel's, a copy's or a memset's record. */
typedef struct klw_kernel {
  uint64_t start, end;          /* ns, CUPTI's clock; both 0: not timed */
  uint32_t correlation;         /* the launch's correlation id (launch order) */
  uint32_t runtime_correlation; /* a copy's runtime call's, or 0 */
  uint32_t stream;
  int kind; /* KLW_WORK, ... above */
} klw_kernel;

/* libcupti, opened once (RTLD_GLOBAL); NULL with a message. */
void *klw_cupti_open(char *err, size_t errlen);
/* Load CUPTI and start recording kernels; 0, or -1 with a message. */
int klw_cupti_start(char *err, size_t errlen);
/* Whether kernel records are on in this process (klw_cupti_start ran). */
bool klw_cupti_started(void);
/* Whether kernels of this process are traced by CONCURRENT_KERNEL records
 * now, which instrument their code. */
bool klw_cupti_tracing(void);
/* The kernel records' kind: KERNEL records serialise kernels (no
 * instrumentation), CONCURRENT_KERNEL records let streams overlap and
 * instrument every kernel. */
enum { KLW_TRACE_KERNEL = 0, KLW_TRACE_CONCURRENT = 1 };
/* Switch to `want` (the records before it are flushed first; the caller
 * discards them); the kind now in force (KERNLAB_TRACE may pin it), or -1
 * with a message. */
int klw_cupti_trace(int want, char *err, size_t errlen);
bool klw_cupti_trace_pinned(void);
const char *klw_cupti_trace_name(int trace);
/* After the device is synchronised: every kernel record since the last
 * call (caller frees *out), and how many records CUPTI dropped. */
int klw_cupti_take(klw_kernel **out, size_t *n, size_t *dropped);

#endif /* KLW_CUPTI_TIMER_H */
