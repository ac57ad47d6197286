/* Host hardware counters for kl-worker through perf_event_open(2).
 *
 * Each event is opened on its own (not as a group), counting this thread in
 * user space only (which perf_event_paranoid 2, the common default, allows),
 * and read with its enabled and running times so that a multiplexed count
 * is scaled up honestly. Where the kernel or the VM has no PMU (ENOENT), or
 * the paranoid level forbids it, nothing opens and the caller gets the
 * reason as a note: counters are extra information, never a failure. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perf_counters.h"

static const struct {
  const char *name;
  uint32_t type;
  uint64_t config;
} events[KLW_PERF_NEVENTS] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache_references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
};

const char *klw_perf_event_name(int i) {
  return events[i].name;
}

static int paranoid_level(void) {
  FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
  int v = -100;
  if (f) {
    if (fscanf(f, "%d", &v) != 1) v = -100;
    fclose(f);
  }
  return v;
}

int klw_perf_open(klw_perf *p, char *note, size_t notelen) {
  int first_errno = 0, opened = 0;
  for (int i = 0; i < KLW_PERF_NEVENTS; i++) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = events[i].type;
    a.config = events[i].config;
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.read_format =
        PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    p->fd[i] = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (p->fd[i] < 0 && !first_errno) first_errno = errno;
    opened += p->fd[i] >= 0;
    p->total[i] = 0;
  }
  if (opened) return opened;
  int level = paranoid_level();
  if (first_errno == ENOENT || first_errno == EOPNOTSUPP)
    snprintf(note, notelen,
             "host counters are not available: this machine exposes no "
             "hardware performance counters to perf_event_open (%s; common "
             "in VMs and containers)",
             strerror(first_errno));
  else if (first_errno == EACCES || first_errno == EPERM)
    snprintf(note, notelen,
             "host counters are not available: perf_event_open was refused "
             "(%s; kernel.perf_event_paranoid is %d, counting one's own "
             "user-space code needs 2 or lower, or CAP_PERFMON)",
             strerror(first_errno), level);
  else
    snprintf(note, notelen,
             "host counters are not available: "
             "perf_event_open: %s",
             strerror(first_errno));
  return 0;
}

void klw_perf_enable(klw_perf *p, int on) {
  for (int i = 0; i < KLW_PERF_NEVENTS; i++)
    if (p->fd[i] >= 0)
      ioctl(p->fd[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

void klw_perf_read(klw_perf *p) {
  for (int i = 0; i < KLW_PERF_NEVENTS; i++) {
    uint64_t v[3];
    if (p->fd[i] < 0 || read(p->fd[i], v, sizeof(v)) != (ssize_t)sizeof(v)) {
      p->total[i] = -1;
      continue;
    }
    /* scaled when the event shared a counter with others */
    p->total[i] = v[2] > 0 ? (double)v[0] * ((double)v[1] / (double)v[2]) : 0.0;
  }
}

void klw_perf_close(klw_perf *p) {
  for (int i = 0; i < KLW_PERF_NEVENTS; i++)
    if (p->fd[i] >= 0) {
      close(p->fd[i]);
      p->fd[i] = -1;
    }
}
