/* Kernel durations from CUPTI activity records, for kl-worker.
 *
 * libcupti is opened at run time (dlopen) the first time a device plugin is
 * timed, so a worker built with CUDA still starts where there is none.
 * Kernel records come in one of two kinds, switched while the process runs
 * (klw_cupti_trace): KERNEL records (the default) serialise kernels and
 * leave their code alone; CONCURRENT_KERNEL records let kernels of
 * different streams overlap but instrument every kernel's code, which
 * slows kernels that read memory in proportion to their blocks (0.09 us a
 * thousand on the H200, bench/README.md), so the timer asks for them only
 * for launches that use two streams (timer_cupti.c). KERNLAB_TRACE=kernel
 * or concurrent pins one kind. Either gives each kernel's start and end in
 * ns with its stream, MEMCPY and MEMSET records each copy's and memset's
 * (the sampler counts those a launch queued, launch_guard.c); launch API
 * records are enabled only so that every kernel record carries the correlation
 * id of its launch (CUPTI assigns them only with API activity on), which orders
 * kernels by launch, whatever stream they ran on. Buffers are handed to CUPTI
 * from a small pool; the completion callback (CUPTI's thread, or the one
 * flushing) appends the kernel records to a vector under a mutex. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "cupti_copy_ids.h"
#include "cupti_launch_ids.h"
#include "cupti_timer.h"

#define BUF_SIZE (8u << 20)

static struct {
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                    CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*enable)(CUpti_ActivityKind);
  CUptiResult (*disable)(CUpti_ActivityKind);
  CUptiResult (*enable_runtime_api)(CUpti_CallbackId, uint8_t);
  CUptiResult (*enable_driver_api)(CUpti_CallbackId, uint8_t);
  CUptiResult (*flush_all)(uint32_t);
  CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
  CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
  CUptiResult (*get_result_string)(CUptiResult, const char **);
  CUptiResult (*get_version)(uint32_t *);
} api;

static bool started;
static int trace_kind;   /* KLW_TRACE_*: the kind enabled now */
static int trace_pinned; /* -1, or the kind KERNLAB_TRACE pins */
static bool broken;      /* a switch left neither kind enabled */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static klw_kernel *recs;
static size_t nrecs, caprecs;
static size_t dropped_total;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size,
                                      size_t *max_records) {
  *buffer = aligned_alloc(8, BUF_SIZE);
  *size = *buffer ? BUF_SIZE : 0;
  *max_records = 0;
}

static int classify(const char *name) {
  if (!name) return KLW_WORK;
  if (strcmp(name, "klh_l2_flush") == 0) return KLW_FLUSH;
  if (strcmp(name, "klh_l2_flush_mark") == 0) return KLW_FLUSH_MARK;
  if (strcmp(name, "klh_clock_probe") == 0) return KLW_PROBE;
  if (strncmp(name, "klh_restore_", 12) == 0) return KLW_RESTORE;
  return KLW_WORK;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
                                      uint8_t *buffer, size_t size,
                                      size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  CUpti_Activity *rec = NULL;
  pthread_mutex_lock(&lock);
  while (api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    klw_kernel got = {0};
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
        rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
      got = (klw_kernel){k->start, k->end,      k->correlationId,
                         0,        k->streamId, classify(k->name)};
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
      got = (klw_kernel){m->start,         m->end,
                         m->correlationId, m->runtimeCorrelationId,
                         m->streamId,      KLW_COPY};
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
      got = (klw_kernel){m->start, m->end,      m->correlationId,
                         0,        m->streamId, KLW_COPY};
    } else {
      continue;
    }
    if (nrecs == caprecs) {
      size_t cap = caprecs ? caprecs * 2 : 4096;
      klw_kernel *more = realloc(recs, cap * sizeof(*recs));
      if (!more) break;
      recs = more;
      caprecs = cap;
    }
    recs[nrecs++] = got;
  }
  size_t dropped = 0;
  if (api.dropped && api.dropped(NULL, 0, &dropped) == CUPTI_SUCCESS)
    dropped_total += dropped;
  pthread_mutex_unlock(&lock);
  free(buffer);
}

static CUpti_ActivityKind activity_kind(int trace) {
  return trace == KLW_TRACE_CONCURRENT ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                                       : CUPTI_ACTIVITY_KIND_KERNEL;
}

static const char *result_string(CUptiResult r) {
  const char *s = NULL;
  if (api.get_result_string) api.get_result_string(r, &s);
  return s ? s : "unknown CUPTI error";
}

void *klw_cupti_open(char *err, size_t errlen) {
  static void *handle;
  if (handle) return handle;
  const char *names[] = {getenv("KERNLAB_CUPTI"), "libcupti.so.13",
                         KLW_CUPTI_BUILD_PATH, "libcupti.so"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !handle; i++)
    if (names[i] && names[i][0])
      handle = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
  if (!handle)
    snprintf(err, errlen,
             "CUPTI (libcupti.so.13) cannot be loaded: %s; set "
             "KERNLAB_CUPTI to its path",
             dlerror());
  return handle;
}

int klw_cupti_start(char *err, size_t errlen) {
  if (started) return 0;
  void *h = klw_cupti_open(err, errlen);
  if (!h) return -1;
#define SYM(field, name)                                                       \
  do {                                                                         \
    *(void **)&api.field = dlsym(h, name);                                     \
    if (!api.field) {                                                          \
      snprintf(err, errlen, "CUPTI lacks %s", name);                           \
      return -1;                                                               \
    }                                                                          \
  } while (0)
  SYM(register_callbacks, "cuptiActivityRegisterCallbacks");
  SYM(enable, "cuptiActivityEnable");
  SYM(enable_runtime_api, "cuptiActivityEnableRuntimeApi");
  SYM(enable_driver_api, "cuptiActivityEnableDriverApi");
  SYM(flush_all, "cuptiActivityFlushAll");
  SYM(next_record, "cuptiActivityGetNextRecord");
  SYM(dropped, "cuptiActivityGetNumDroppedRecords");
  SYM(get_result_string, "cuptiGetResultString");
  SYM(get_version, "cuptiGetVersion");
  SYM(disable, "cuptiActivityDisable");
#undef SYM
  uint32_t version = 0;
  api.get_version(&version);
  if (version < CUPTI_API_VERSION / 10000 * 10000) {
    snprintf(err, errlen,
             "CUPTI API version %u is older than the headers kl-worker was "
             "built with (%d)",
             version, CUPTI_API_VERSION);
    return -1;
  }
  const char *pin = getenv("KERNLAB_TRACE");
  trace_pinned = -1;
  if (pin && strcmp(pin, "kernel") == 0)
    trace_pinned = KLW_TRACE_KERNEL;
  else if (pin && strcmp(pin, "concurrent") == 0)
    trace_pinned = KLW_TRACE_CONCURRENT;
  else if (pin && pin[0]) {
    snprintf(err, errlen,
             "KERNLAB_TRACE '%s': expected kernel or concurrent (or unset: "
             "the timer picks per launch)",
             pin);
    return -1;
  }
  trace_kind = trace_pinned >= 0 ? trace_pinned : KLW_TRACE_KERNEL;
  CUptiResult r;
  if ((r = api.register_callbacks(buffer_requested, buffer_completed)) !=
          CUPTI_SUCCESS ||
      (r = api.enable(activity_kind(trace_kind))) != CUPTI_SUCCESS ||
      (r = api.enable(CUPTI_ACTIVITY_KIND_MEMCPY)) != CUPTI_SUCCESS ||
      (r = api.enable(CUPTI_ACTIVITY_KIND_MEMSET)) != CUPTI_SUCCESS) {
    snprintf(err, errlen, "CUPTI activity: %s", result_string(r));
    return -1;
  }
  /* Launch API records, only for the launch calls: they make CUPTI give
   * every kernel record its launch's correlation id. */
  for (size_t i = 0; i < KL_LAUNCH_IDS(kl__launch_runtime_cbids); i++)
    api.enable_runtime_api(kl__launch_runtime_cbids[i], 1);
  for (size_t i = 0; i < KL_LAUNCH_IDS(kl__launch_driver_cbids); i++)
    api.enable_driver_api(kl__launch_driver_cbids[i], 1);
  /* and for the copies and memsets, which a launch may queue as work */
  for (size_t i = 0; i < KLW_COPY_IDS(klw_copy_runtime_cbids); i++)
    api.enable_runtime_api(klw_copy_runtime_cbids[i], 1);
  for (size_t i = 0; i < KLW_COPY_IDS(klw_copy_driver_cbids); i++)
    api.enable_driver_api(klw_copy_driver_cbids[i], 1);
  started = true;
  return 0;
}

bool klw_cupti_started(void) {
  return started;
}

bool klw_cupti_tracing(void) {
  /* leaving CONCURRENT_KERNEL records takes the instrumentation out: a
   * baseline timed after it reads as in a fresh worker (bench/README.md) */
  return started && trace_kind == KLW_TRACE_CONCURRENT;
}

int klw_cupti_trace(int want, char *err, size_t errlen) {
  if (!started) return -1;
  if (broken) {
    snprintf(err, errlen,
             "CUPTI activity: no kernel records since a switch of kinds "
             "failed; restart the worker");
    return -1;
  }
  if (trace_pinned >= 0 || want == trace_kind) return trace_kind;
  /* the records of the kind being left are delivered before it goes */
  api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  CUptiResult r = api.disable(activity_kind(trace_kind));
  if (r == CUPTI_SUCCESS &&
      (r = api.enable(activity_kind(want))) != CUPTI_SUCCESS &&
      api.enable(activity_kind(trace_kind)) != CUPTI_SUCCESS)
    broken = true; /* neither kind records: no later sample could be timed */
  if (r != CUPTI_SUCCESS) {
    snprintf(err, errlen, "CUPTI activity (switching to %s records): %s",
             klw_cupti_trace_name(want), result_string(r));
    return -1;
  }
  trace_kind = want;
  return trace_kind;
}

bool klw_cupti_trace_pinned(void) {
  return trace_pinned >= 0;
}

const char *klw_cupti_trace_name(int trace) {
  return trace == KLW_TRACE_CONCURRENT ? "concurrent" : "kernel";
}

int klw_cupti_take(klw_kernel **out, size_t *n, size_t *dropped) {
  *out = NULL;
  *n = 0;
  if (!started) return -1;
  api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&lock);
  *out = recs;
  *n = nrecs;
  *dropped = dropped_total;
  recs = NULL;
  nrecs = caprecs = 0;
  dropped_total = 0;
  pthread_mutex_unlock(&lock);
  return 0;
}
