/* Hardware counters through the CUPTI Range Profiler, for kl-worker
 * (cupti_profiler.c). */
#ifndef KLW_CUPTI_PROFILER_H
#define KLW_CUPTI_PROFILER_H

#include <stddef.h>

/* Why a profile could not be taken; the worker passes it on as "code". */
typedef enum klw_prof_status {
  KLW_PROF_OK = 0,
  KLW_PROF_ERROR = -1,          /* anything else; the message says */
  KLW_PROF_UNKNOWN_METRIC = -2, /* a name the chip does not have */
  KLW_PROF_PERMISSION = -3,     /* ERR_NVGPUCTRPERM: counters are admin-only */
  KLW_PROF_UNAVAILABLE = -4     /* no counters here (vGPU, MIG, CC, ...) */
} klw_prof_status;

/* The status as a reply's "code": "unknown_metric", "permission",
 * "unavailable" or "error". */
const char *klw_prof_status_code(klw_prof_status st);

/* What one pass needs from the caller: put the device in the state a
 * timed launch starts from (restore, flush, synchronise), and launch. */
typedef struct klw_prof_hooks {
  int (*prepare)(void *arg);
  int (*launch)(void *arg);
  void *arg;
} klw_prof_hooks;

typedef struct klw_prof_result {
  char chip[32];
  const char *replay; /* "user" or "kernel" (static strings) */
  size_t passes, nranges, nmetrics, dropped_ranges;
  double *values;       /* nranges x nmetrics, range-major */
  char **range_names;   /* nranges, each its kernel's name or NULL */
  double init_ms;       /* profiler start-up in this call (0 once done) */
  double config_ms;     /* building the config image (0 when cached) */
  double setup_ms;      /* enabling the range profiler, its config set */
  double first_pass_ms; /* of collect_ms: the first pass */
  double collect_ms;    /* the passes */
  double decode_ms;     /* decoding and evaluating */
} klw_prof_result;

/* Offline (chip given, e.g. "GH100") or for the current context's device
 * (chip NULL): check every name and count the passes the set needs. */
klw_prof_status klw_prof_passes(const char *chip, const char *const *names,
                                size_t n, size_t *passes, char *err,
                                size_t errlen);
/* Profile one launch of the current context's kernels: one range per
 * kernel (auto range), every pass started from hooks->prepare. */
klw_prof_status klw_prof_collect(const char *const *names, size_t n,
                                 const klw_prof_hooks *hooks,
                                 klw_prof_result *out, char *err,
                                 size_t errlen);
/* Disable the range profiler, which stays enabled between profiles: the
 * counters are the device's, and the next worker must find them free. */
void klw_prof_release(void);
void klw_prof_result_dispose(klw_prof_result *r);

#endif /* KLW_CUPTI_PROFILER_H */
