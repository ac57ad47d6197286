/* kl-worker's calibrate request: what the timer's probe kernel really
 * takes on this device, for the CUPTI timer's calibration.
 *
 *   {"op":"calibrate","launches":N}
 *     -> {"ok":true,"probe_true_us":T,"values_us":[..N],"chip":C,
 *         "init_ms":I}
 *
 * CUPTI's KERNEL records (the timer's default kind) take each kernel's
 * start and end from timestamps the GPU's front end writes around the
 * launch, so every record is longer than the kernel ran: on an H200 about
 * 1.1 us, whatever the kernel (an empty kernel reads 2.40 us where ncu's
 * gpu__time_duration reads 1.28-1.41; bench/README.md, "the timer's
 * calibration"). The time request subtracts that fixed part: the probe
 * kernel's KERNEL-record duration, measured in the request itself, less its
 * true duration, measured here once per device with the range profiler's
 * gpu__time_duration (ncu's metric) and kept by the parent
 * (libkernlab/worker/calibration.c).
 *
 * The probe is the harness's own (klh_clock_probe with spin 0, the bare
 * sample marker of cuda_probes.inc), taken from libkernlab-device.so beside
 * this worker: no candidate code is involved, and the request is refused
 * once a plugin is loaded or kernel records are on, so the parent asks a
 * fresh worker. N launches back to back, one profiler range each: the
 * kernel's own duration; the time request times the probe's records
 * after each sample's prelude, where they carry what a sample's work
 * carries (timer_cupti.c, dev_calibrate). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker_internal.h"
#ifdef KL_HAVE_CUPTI
#include "cupti_profiler.h"
#include "cupti_timer.h"
#include "kernlab/stats.h"
#endif

#define MAX_LAUNCHES 32

#ifdef KL_HAVE_CUPTI
/* libkernlab-device.so's probe, opened beside this worker's own object */
static struct {
  void *(*probes_new)(void);
  int (*clock_mark)(void *probes, void *stream, int spin_ns);
  int (*sync)(void);
  const char *(*error)(void);
  void *probes;
} dev;

static int open_device_lib(char *err, size_t errlen) {
  if (dev.probes) return 0;
  Dl_info self;
  if (!dladdr((void *)&klw_op_calibrate, &self) || !self.dli_fname) {
    snprintf(err, errlen, "cannot tell where this worker lies");
    return -1;
  }
  char path[4096];
  const char *slash = strrchr(self.dli_fname, '/');
  int dir = slash ? (int)(slash - self.dli_fname) : 1;
  snprintf(path, sizeof(path), "%.*s/libkernlab-device.so", dir,
           slash ? self.dli_fname : ".");
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(err, errlen, "%s", dlerror());
    return -1;
  }
  *(void **)&dev.probes_new = dlsym(h, "kl_device_probes_new");
  *(void **)&dev.clock_mark = dlsym(h, "kl_device_clock_mark");
  *(void **)&dev.sync = dlsym(h, "kl_device_sync");
  *(void **)&dev.error = dlsym(h, "kl_device_error");
  if (!dev.probes_new || !dev.clock_mark || !dev.sync || !dev.error) {
    snprintf(err, errlen, "%.400s lacks the probe's entry points", path);
    return -1;
  }
  if (!(dev.probes = dev.probes_new())) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return 0;
}

typedef struct probe_run {
  int launches;
} probe_run;

static int probe_prepare(void *arg) {
  (void)arg;
  return dev.sync();
}

static int probe_launch(void *arg) {
  const probe_run *p = arg;
  for (int i = 0; i < p->launches; i++)
    if (dev.clock_mark(dev.probes, NULL, 0)) return -1;
  return 0;
}

#endif

void klw_op_calibrate(json_object *req) {
#ifndef KL_HAVE_CUPTI
  (void)req;
  klw_reply_error("calibrate: this worker was built without CUPTI");
#else
  char err[512] = "";
  probe_run run = {(int)klw_get_int(req, "launches", 9)};
  if (run.launches < 1 || run.launches > MAX_LAUNCHES) {
    klw_reply_error("calibrate: launches must be 1 to %d", MAX_LAUNCHES);
    return;
  }
  if (klw_loads_asked() > 0 || klw_cupti_started()) {
    klw_reply_error("calibrate: only in a fresh worker (no plugin loaded, "
                    "no kernel records on)");
    return;
  }
  if (open_device_lib(err, sizeof(err)) < 0) {
    klw_reply_error("calibrate: libkernlab-device.so: %s", err);
    return;
  }
  /* the context, the module and the probe's ring before any pass */
  for (int i = 0; i < 3; i++)
    if (dev.clock_mark(dev.probes, NULL, 0) || dev.sync()) {
      klw_reply_error("calibrate: the probe: %s", dev.error());
      return;
    }
  const char *names[] = {"gpu__time_duration.sum"};
  klw_prof_hooks hooks = {probe_prepare, probe_launch, &run};
  klw_prof_result res;
  klw_prof_status st =
      klw_prof_collect(names, 1, &hooks, &res, err, sizeof(err));
  klw_prof_release(); /* this worker's counters go back now */
  if (st != KLW_PROF_OK) {
    char msg[600];
    snprintf(msg, sizeof(msg), "calibrate: the range profiler: %s", err);
    klw_reply_code(klw_prof_status_code(st), msg);
    return;
  }
  double us[MAX_LAUNCHES];
  size_t n = 0;
  for (size_t i = 0; i < res.nranges && n < MAX_LAUNCHES; i++)
    if (res.values[i] > 0) us[n++] = res.values[i] / 1000.0; /* ns */
  kl_summary sum;
  const char *why = n == 0 ? "the profiler read no duration of the probe"
                    : kl_stats_summarize(&sum, us, n) ? "out of memory"
                                                      : NULL;
  if (why) {
    klw_prof_result_dispose(&res);
    klw_reply_error("calibrate: %s", why);
    return;
  }
  json_object *o = json_object_new_object();
  json_object *vals = json_object_new_array();
  for (size_t i = 0; i < n; i++)
    json_object_array_add(vals, json_object_new_double(us[i]));
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  json_object_object_add(o, "probe_true_us",
                         json_object_new_double(sum.median));
  json_object_object_add(o, "values_us", vals);
  json_object_object_add(o, "chip", json_object_new_string(res.chip));
  json_object_object_add(o, "init_ms", json_object_new_double(res.init_ms));
  klw_prof_result_dispose(&res);
  klw_reply(o);
#endif
}
