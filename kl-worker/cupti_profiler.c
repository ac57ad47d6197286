/* Hardware counters for kl-worker: CUPTI Range Profiler + Profiler Host API.
 *
 * How: the profiler is initialised once per worker (chip name and counter
 * availability of the device; ~0.65 s on an H200), and a host object with
 * its config image is built once per metric set and kept (6-66 ms each).
 * The range profiler stays enabled between profiles of one metric set
 * (until another set is asked for, or the worker quits: klw_prof_release),
 * and a throwaway session of the same set primes it: the first Start after
 * an enable took 200-250 ms on an H200 (per profile, per shape, when each
 * enabled and disabled it) and left dirty lines in the L2 that the
 * profiled kernel then wrote back (transpose at 4k x 4k: 78 MB of DRAM
 * writes against ncu's 51). Primed and kept, a first Start takes 20-36
 * ms. (A session of another set on the same enabled profiler read back
 * NaN for every metric: a one-metric priming session broke every profile
 * after it, so another set enables afresh.)
 *
 * A profile is auto range (one range per kernel) with *user* replay: for
 * every pass the caller's prepare hook restores the inouts, flushes the L2
 * and synchronises, then the launch runs between Start and Stop. That makes
 * every pass start from the state of a cold timing sample, as Nsight
 * Compute's --cache-control all does, where CUPTI 13.0's kernel replay
 * would carry the previous pass's cache contents over. Kernel replay is the
 * fallback where user replay is refused.
 *
 * Two facts found the hard way (cupti.md has the rest): metric names must be
 * added to a host object in one ConfigAddMetrics call, or the passes are
 * not merged (63 names: 15 passes in one call, 82 in 63 calls); and a
 * profiled launch's activity record has no timestamps, so no duration is
 * ever taken from here: the worker drops those records.
 *
 * libcupti and libcuda are opened at run time like the timer's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_profiler_host.h> /* needs an empty <string>: see CMake */
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "cupti_profiler.h"
#include "cupti_timer.h"
#include "worker_internal.h"

#define CACHE_SLOTS 8
#define MAX_RANGES 64

typedef CUptiResult(CUPTIAPI *params_fn)(void *);

static struct {
  bool loaded;
  params_fn initialize, device_supported, chip_name, availability;
  params_fn host_init, host_deinit, host_add, host_image_size, host_image,
      host_passes, host_evaluate, host_base_metrics;
  params_fn rp_enable, rp_disable, rp_data_size, rp_data_init, rp_set_config,
      rp_start, rp_stop, rp_decode, rp_data_info, rp_range_info;
  CUptiResult (*result_string)(CUptiResult, const char **);
  CUresult (*ctx_get_current)(CUcontext *);
  CUresult (*ctx_get_device)(CUdevice *);
} api;

/* One metric set's host object and config image. */
typedef struct config {
  char *key; /* the names, one per line */
  CUpti_Profiler_Host_Object *host;
  uint8_t *image;
  size_t image_size, passes;
} config;

static struct {
  bool ready;
  CUcontext ctx;
  CUpti_RangeProfiler_Object *obj; /* enabled for one config at a time */
  char *obj_key;                   /* that config's names */
  char chip[32];
  uint8_t *availability;
  config cache[CACHE_SLOTS];
  size_t next_slot;
} prof;

static double now_ms(void) {
  return klw_now_us() / 1000.0;
}

static const char *result_text(CUptiResult r) {
  const char *s = NULL;
  if (api.result_string) api.result_string(r, &s);
  return s ? s : "unknown CUPTI error";
}

/* A failed call's status: permissions and unsupported devices are told
 * apart from everything else, because the user can act on them. */
static klw_prof_status fail(CUptiResult r, const char *what, char *err,
                            size_t errlen) {
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ||
      r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES) {
    snprintf(err, errlen,
             "%s: the driver does not let this user read GPU performance "
             "counters (ERR_NVGPUCTRPERM). Run as root or with "
             "CAP_SYS_ADMIN, or load the nvidia module with "
             "NVreg_RestrictProfilingToAdminUsers=0 (see "
             "https://developer.nvidia.com/ERR_NVGPUCTRPERM); timing still "
             "works",
             what);
    return KLW_PROF_PERMISSION;
  }
  if (r == CUPTI_ERROR_NOT_SUPPORTED ||
      r == CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED ||
      r == CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED ||
      r == CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED ||
      r == CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED ||
      r == CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED ||
      r == CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED) {
    snprintf(err, errlen,
             "%s: performance counters are not available on this device "
             "(%s); timing still works",
             what, result_text(r));
    return KLW_PROF_UNAVAILABLE;
  }
  snprintf(err, errlen, "%s: %s", what, result_text(r));
  return KLW_PROF_ERROR;
}

static klw_prof_status load(char *err, size_t errlen) {
  if (api.loaded) return KLW_PROF_OK;
  void *h = klw_cupti_open(err, errlen);
  if (!h) return KLW_PROF_UNAVAILABLE;
  static const struct {
    size_t offset;
    const char *name;
  } syms[] = {
#define S(field, name) {offsetof(__typeof__(api), field), name}
      S(initialize, "cuptiProfilerInitialize"),
      S(device_supported, "cuptiProfilerDeviceSupported"),
      S(chip_name, "cuptiDeviceGetChipName"),
      S(availability, "cuptiProfilerGetCounterAvailability"),
      S(host_init, "cuptiProfilerHostInitialize"),
      S(host_deinit, "cuptiProfilerHostDeinitialize"),
      S(host_add, "cuptiProfilerHostConfigAddMetrics"),
      S(host_image_size, "cuptiProfilerHostGetConfigImageSize"),
      S(host_image, "cuptiProfilerHostGetConfigImage"),
      S(host_passes, "cuptiProfilerHostGetNumOfPasses"),
      S(host_evaluate, "cuptiProfilerHostEvaluateToGpuValues"),
      S(host_base_metrics, "cuptiProfilerHostGetBaseMetrics"),
      S(rp_enable, "cuptiRangeProfilerEnable"),
      S(rp_disable, "cuptiRangeProfilerDisable"),
      S(rp_data_size, "cuptiRangeProfilerGetCounterDataSize"),
      S(rp_data_init, "cuptiRangeProfilerCounterDataImageInitialize"),
      S(rp_set_config, "cuptiRangeProfilerSetConfig"),
      S(rp_start, "cuptiRangeProfilerStart"),
      S(rp_stop, "cuptiRangeProfilerStop"),
      S(rp_decode, "cuptiRangeProfilerDecodeData"),
      S(rp_data_info, "cuptiRangeProfilerGetCounterDataInfo"),
      S(rp_range_info, "cuptiRangeProfilerCounterDataGetRangeInfo"),
      S(result_string, "cuptiGetResultString"),
#undef S
  };
  for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
    void *f = dlsym(h, syms[i].name);
    if (!f) {
      snprintf(err, errlen,
               "this CUPTI lacks %s: the Range Profiler needs CUPTI 13",
               syms[i].name);
      return KLW_PROF_UNAVAILABLE;
    }
    memcpy((char *)&api + syms[i].offset, &f, sizeof(f));
  }
  api.loaded = true;
  return KLW_PROF_OK;
}

/* The device side, once per worker: the context the plugins made current,
 * its chip, and which counters this context may use. */
static klw_prof_status start_device(char *err, size_t errlen) {
  if (prof.ready) return KLW_PROF_OK;
  klw_prof_status st = load(err, errlen);
  if (st) return st;
  if (!api.ctx_get_current) {
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (cu) {
      *(void **)&api.ctx_get_current = dlsym(cu, "cuCtxGetCurrent");
      *(void **)&api.ctx_get_device = dlsym(cu, "cuCtxGetDevice");
    }
    if (!api.ctx_get_current || !api.ctx_get_device) {
      snprintf(err, errlen, "the CUDA driver (libcuda.so.1) cannot be used");
      return KLW_PROF_UNAVAILABLE;
    }
  }
  CUcontext ctx = NULL;
  CUdevice dev = 0;
  if (api.ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx ||
      api.ctx_get_device(&dev) != CUDA_SUCCESS) {
    snprintf(err, errlen, "no current CUDA context to profile");
    return KLW_PROF_ERROR;
  }
  CUptiResult r;
  CUpti_Profiler_Initialize_Params ip = {
      CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
  if ((r = api.initialize(&ip)) != CUPTI_SUCCESS)
    return fail(r, "cuptiProfilerInitialize", err, errlen);
  CUpti_Profiler_DeviceSupported_Params sp = {
      CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE, NULL, dev};
  sp.api = CUPTI_PROFILER_RANGE_PROFILING;
  if (api.device_supported(&sp) == CUPTI_SUCCESS &&
      sp.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
    const char *why =
        sp.architecture != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
            ? "the architecture is older than compute 7.0"
        : sp.vGpu != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
            ? "a virtual GPU without profiling enabled"
        : sp.confidentialCompute != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
            ? "confidential computing is on"
        : sp.sli != CUPTI_PROFILER_CONFIGURATION_SUPPORTED ? "SLI is on"
        : sp.cmp != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
            ? "a mining (CMP) device"
        : sp.wsl != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
            ? "WSL without profiling support"
            : "the driver says no";
    snprintf(err, errlen,
             "performance counters are not available on this device (%s); "
             "timing still works",
             why);
    return KLW_PROF_UNAVAILABLE;
  }
  CUpti_Device_GetChipName_Params cp = {
      CUpti_Device_GetChipName_Params_STRUCT_SIZE, NULL, (size_t)dev, NULL};
  if ((r = api.chip_name(&cp)) != CUPTI_SUCCESS)
    return fail(r, "cuptiDeviceGetChipName", err, errlen);
  snprintf(prof.chip, sizeof(prof.chip), "%s", cp.pChipName);
  CUpti_Profiler_GetCounterAvailability_Params ap = {
      CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE, NULL, ctx, 0,
      NULL};
  if ((r = api.availability(&ap)) != CUPTI_SUCCESS)
    return fail(r, "cuptiProfilerGetCounterAvailability", err, errlen);
  if (!(prof.availability = malloc(ap.counterAvailabilityImageSize))) {
    snprintf(err, errlen, "out of memory");
    return KLW_PROF_ERROR;
  }
  ap.pCounterAvailabilityImage = prof.availability;
  if ((r = api.availability(&ap)) != CUPTI_SUCCESS)
    return fail(r, "cuptiProfilerGetCounterAvailability", err, errlen);
  prof.ctx = ctx;
  prof.ready = true;
  return KLW_PROF_OK;
}

static klw_prof_status host_object(CUpti_Profiler_Host_Object **out,
                                   const char *chip, const uint8_t *avail,
                                   char *err, size_t errlen) {
  CUpti_Profiler_Host_Initialize_Params hp = {
      CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE, NULL};
  hp.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  hp.pChipName = chip;
  hp.pCounterAvailabilityImage = avail;
  CUptiResult r = api.host_init(&hp);
  if (r != CUPTI_SUCCESS)
    return fail(r, "cuptiProfilerHostInitialize", err, errlen);
  *out = hp.pHostObject;
  return KLW_PROF_OK;
}

static void host_free(CUpti_Profiler_Host_Object *h) {
  if (!h) return;
  CUpti_Profiler_Host_Deinitialize_Params dp = {
      CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, NULL, h};
  api.host_deinit(&dp);
}

static klw_prof_status add_metrics(CUpti_Profiler_Host_Object *h,
                                   const char *const *names, size_t n) {
  CUpti_Profiler_Host_ConfigAddMetrics_Params p = {
      CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE, NULL, h,
      (const char **)names, n};
  return api.host_add(&p) == CUPTI_SUCCESS ? KLW_PROF_OK : KLW_PROF_ERROR;
}

static size_t edit_distance(const char *a, size_t la, const char *b,
                            size_t lb) {
  size_t row[128];
  if (la >= 128 || lb >= 128) return 1000;
  for (size_t j = 0; j <= lb; j++)
    row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

/* "unknown metric 'x'" with the nearest base name of the chip, if close. */
static void unknown_metric(CUpti_Profiler_Host_Object *h, const char *chip,
                           const char *name, char *err, size_t errlen) {
  const char *dot = strchr(name, '.');
  size_t base_len = dot ? (size_t)(dot - name) : strlen(name);
  const char *best = NULL;
  size_t best_d = 4;
  bool base_known = false;
  for (int t = 0; t < CUPTI_METRIC_TYPE__COUNT && h; t++) {
    CUpti_Profiler_Host_GetBaseMetrics_Params bp = {
        CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE, NULL, h};
    bp.metricType = (CUpti_MetricType)t;
    if (api.host_base_metrics(&bp) != CUPTI_SUCCESS) continue;
    for (size_t i = 0; i < bp.numMetrics; i++) {
      const char *m = bp.ppMetricNames[i];
      size_t d = edit_distance(name, base_len, m, strlen(m));
      if (d == 0) base_known = true;
      if (d < best_d) {
        best_d = d;
        best = m;
      }
    }
  }
  if (base_known)
    snprintf(err, errlen,
             "unknown metric '%s' for chip %s: '%.*s' exists, but not with "
             "that suffix (counters need a rollup such as .sum or .avg, "
             "ratios .pct or .ratio)",
             name, chip, (int)base_len, name);
  else if (best)
    snprintf(err, errlen,
             "unknown metric '%s' for chip %s (did you mean '%s%s'?)", name,
             chip, best, dot ? dot : "");
  else
    snprintf(err, errlen, "unknown metric '%s' for chip %s", name, chip);
}

/* Build a host object holding every name (one call: see the top), its
 * config image and pass count. A name the chip lacks is found by trying
 * each alone, and named. */
static klw_prof_status build(config *c, const char *chip, const uint8_t *avail,
                             const char *const *names, size_t n, char *err,
                             size_t errlen) {
  memset(c, 0, sizeof(*c));
  klw_prof_status st = host_object(&c->host, chip, avail, err, errlen);
  if (st) return st;
  if (add_metrics(c->host, names, n) != KLW_PROF_OK) {
    host_free(c->host);
    c->host = NULL;
    for (size_t i = 0; i < n; i++) {
      CUpti_Profiler_Host_Object *one = NULL;
      if ((st = host_object(&one, chip, avail, err, errlen))) return st;
      bool ok = add_metrics(one, &names[i], 1) == KLW_PROF_OK;
      if (!ok) unknown_metric(one, chip, names[i], err, errlen);
      host_free(one);
      if (!ok) return KLW_PROF_UNKNOWN_METRIC;
    }
    snprintf(err, errlen,
             "CUPTI refused this set of %zu metrics together, though it "
             "takes each alone",
             n);
    return KLW_PROF_ERROR;
  }
  CUptiResult r;
  CUpti_Profiler_Host_GetConfigImageSize_Params sp = {
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE, NULL, c->host};
  if ((r = api.host_image_size(&sp)) != CUPTI_SUCCESS)
    return fail(r, "cuptiProfilerHostGetConfigImageSize", err, errlen);
  c->image_size = sp.configImageSize;
  if (!(c->image = malloc(c->image_size))) {
    snprintf(err, errlen, "out of memory");
    return KLW_PROF_ERROR;
  }
  CUpti_Profiler_Host_GetConfigImage_Params gp = {
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE, NULL, c->host,
      c->image_size, c->image};
  if ((r = api.host_image(&gp)) != CUPTI_SUCCESS)
    return fail(r, "cuptiProfilerHostGetConfigImage", err, errlen);
  CUpti_Profiler_Host_GetNumOfPasses_Params pp = {
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE, NULL,
      c->image_size, c->image};
  if ((r = api.host_passes(&pp)) != CUPTI_SUCCESS)
    return fail(r, "cuptiProfilerHostGetNumOfPasses", err, errlen);
  c->passes = pp.numOfPasses;
  return KLW_PROF_OK;
}

static void config_free(config *c) {
  host_free(c->host);
  free(c->image);
  free(c->key);
  memset(c, 0, sizeof(*c));
}

static char *join(const char *const *names, size_t n) {
  size_t len = 1;
  for (size_t i = 0; i < n; i++)
    len += strlen(names[i]) + 1;
  char *key = malloc(len), *p = key;
  if (!key) return NULL;
  for (size_t i = 0; i < n; i++) {
    size_t k = strlen(names[i]);
    memcpy(p, names[i], k);
    p[k] = '\n';
    p += k + 1;
  }
  *p = '\0';
  return key;
}

/* The cached config of this exact list of names, built if new. */
static klw_prof_status cached_config(config **out, const char *const *names,
                                     size_t n, double *build_ms, char *err,
                                     size_t errlen) {
  char *key = join(names, n);
  if (!key) {
    snprintf(err, errlen, "out of memory");
    return KLW_PROF_ERROR;
  }
  *build_ms = 0;
  for (size_t i = 0; i < CACHE_SLOTS; i++)
    if (prof.cache[i].key && strcmp(prof.cache[i].key, key) == 0) {
      free(key);
      *out = &prof.cache[i];
      return KLW_PROF_OK;
    }
  config *slot = &prof.cache[prof.next_slot++ % CACHE_SLOTS];
  config_free(slot);
  double t0 = now_ms();
  klw_prof_status st =
      build(slot, prof.chip, prof.availability, names, n, err, errlen);
  if (st) {
    config_free(slot);
    free(key);
    return st;
  }
  slot->key = key;
  *build_ms = now_ms() - t0;
  *out = slot;
  return KLW_PROF_OK;
}

klw_prof_status klw_prof_passes(const char *chip, const char *const *names,
                                size_t n, size_t *passes, char *err,
                                size_t errlen) {
  klw_prof_status st;
  if (chip) {
    if ((st = load(err, errlen))) return st;
    config c;
    st = build(&c, chip, NULL, names, n, err, errlen);
    *passes = c.passes;
    config_free(&c);
    return st;
  }
  if ((st = start_device(err, errlen))) return st;
  config *c;
  double ms;
  if ((st = cached_config(&c, names, n, &ms, err, errlen))) return st;
  *passes = c->passes;
  return KLW_PROF_OK;
}

void klw_prof_result_dispose(klw_prof_result *r) {
  free(r->values);
  for (size_t i = 0; r->range_names && i < r->nranges; i++)
    free(r->range_names[i]);
  free(r->range_names);
  memset(r, 0, sizeof(*r));
}

/* Start..Stop around one launch per pass until CUPTI has every pass. */
static klw_prof_status run_passes(CUpti_RangeProfiler_Object *obj,
                                  const klw_prof_hooks *hooks,
                                  CUpti_ProfilerReplayMode mode,
                                  size_t *passes_run, double *first_ms,
                                  char *err, size_t errlen) {
  CUptiResult r;
  *passes_run = 0;
  double t0 = now_ms();
  for (size_t pass = 0; pass < 256; pass++) {
    if (pass == 1) *first_ms = now_ms() - t0;
    if (hooks->prepare(hooks->arg)) {
      snprintf(err, errlen, "preparing pass %zu failed", pass);
      return KLW_PROF_ERROR;
    }
    CUpti_RangeProfiler_Start_Params sp = {
        CUpti_RangeProfiler_Start_Params_STRUCT_SIZE, NULL, obj};
    if ((r = api.rp_start(&sp)) != CUPTI_SUCCESS)
      return fail(r, "cuptiRangeProfilerStart", err, errlen);
    int launch_rc = hooks->launch(hooks->arg);
    CUpti_RangeProfiler_Stop_Params tp = {
        CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE, NULL, obj};
    r = api.rp_stop(&tp);
    if (launch_rc) {
      snprintf(err, errlen, "the launch failed in pass %zu", pass);
      return KLW_PROF_ERROR;
    }
    if (r != CUPTI_SUCCESS)
      return fail(r, "cuptiRangeProfilerStop", err, errlen);
    (*passes_run)++;
    if (tp.isAllPassSubmitted || mode == CUPTI_KernelReplay) {
      if (pass == 0) *first_ms = now_ms() - t0;
      return KLW_PROF_OK;
    }
  }
  snprintf(err, errlen, "CUPTI wanted more than 256 passes");
  return KLW_PROF_ERROR;
}

/* Size and initialise a counter data image for `names` and set the config
 * of one session on prof.obj. *data is the caller's to free. */
static klw_prof_status set_session(const config *cfg, const char *const *names,
                                   size_t n, CUpti_ProfilerReplayMode mode,
                                   uint8_t **data, size_t *size, char *err,
                                   size_t errlen) {
  CUptiResult r;
  *data = NULL;
  CUpti_RangeProfiler_GetCounterDataSize_Params dsp = {
      CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE,
      NULL,
      prof.obj,
      (const char **)names,
      n,
      MAX_RANGES,
      MAX_RANGES,
      0};
  if ((r = api.rp_data_size(&dsp)) != CUPTI_SUCCESS)
    return fail(r, "cuptiRangeProfilerGetCounterDataSize", err, errlen);
  if (!(*data = malloc(dsp.counterDataSize))) {
    snprintf(err, errlen, "out of memory");
    return KLW_PROF_ERROR;
  }
  *size = dsp.counterDataSize;
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params ip = {
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE, NULL,
      prof.obj, dsp.counterDataSize, *data};
  if ((r = api.rp_data_init(&ip)) != CUPTI_SUCCESS)
    return fail(r, "cuptiRangeProfilerCounterDataImageInitialize", err, errlen);
  CUpti_RangeProfiler_SetConfig_Params cp = {
      CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE, NULL, prof.obj};
  cp.configSize = cfg->image_size;
  cp.pConfig = cfg->image;
  cp.counterDataImageSize = dsp.counterDataSize;
  cp.pCounterDataImage = *data;
  cp.range = CUPTI_AutoRange;
  cp.replayMode = mode;
  cp.maxRangesPerPass = MAX_RANGES;
  cp.numNestingLevels = 1;
  cp.minNestingLevel = 1;
  cp.passIndex = 0;
  cp.targetNestingLevel = 1;
  if ((r = api.rp_set_config(&cp)) != CUPTI_SUCCESS)
    return fail(r, "cuptiRangeProfilerSetConfig", err, errlen);
  return KLW_PROF_OK;
}

/* The throwaway session before the first profile of a config: the same
 * metrics, every pass run on the caller's launch, decoded and dropped. A
 * failure is not the profile's: the real session reports its own. */
static void prime(const config *cfg, const char *const *names, size_t n,
                  const klw_prof_hooks *hooks) {
  char err[256];
  uint8_t *data = NULL;
  size_t size = 0, passes = 0;
  double first = 0;
  if (set_session(cfg, names, n, CUPTI_UserReplay, &data, &size, err,
                  sizeof err) == KLW_PROF_OK &&
      run_passes(prof.obj, hooks, CUPTI_UserReplay, &passes, &first, err,
                 sizeof err) == KLW_PROF_OK) {
    /* decoded, so that CUPTI holds nothing of this image once it is freed */
    CUpti_RangeProfiler_DecodeData_Params dp = {
        CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE, NULL, prof.obj, 0};
    api.rp_decode(&dp);
  }
  free(data);
}

const char *klw_prof_status_code(klw_prof_status st) {
  switch (st) {
  case KLW_PROF_UNKNOWN_METRIC:
    return "unknown_metric";
  case KLW_PROF_PERMISSION:
    return "permission";
  case KLW_PROF_UNAVAILABLE:
    return "unavailable";
  default:
    return "error";
  }
}

void klw_prof_release(void) {
  free(prof.obj_key);
  prof.obj_key = NULL;
  if (!prof.obj) return;
  CUpti_RangeProfiler_Disable_Params xp = {
      CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE, NULL, prof.obj};
  api.rp_disable(&xp);
  prof.obj = NULL;
}

klw_prof_status klw_prof_collect(const char *const *names, size_t n,
                                 const klw_prof_hooks *hooks,
                                 klw_prof_result *out, char *err,
                                 size_t errlen) {
  memset(out, 0, sizeof(*out));
  double t0 = now_ms();
  bool first = !prof.ready;
  klw_prof_status st = start_device(err, errlen);
  if (st) return st;
  out->init_ms = first ? now_ms() - t0 : 0;
  snprintf(out->chip, sizeof(out->chip), "%s", prof.chip);
  config *cfg;
  if ((st = cached_config(&cfg, names, n, &out->config_ms, err, errlen)))
    return st;
  out->passes = cfg->passes;

  CUptiResult r;
  uint8_t *data = NULL;
  size_t data_size = 0;
  /* another config than the one enabled: enable afresh (sessions of two
   * configs on one enabled profiler read back nothing) */
  if (prof.obj && (!prof.obj_key || strcmp(prof.obj_key, cfg->key) != 0))
    klw_prof_release();
  if (!prof.obj) {
    CUpti_RangeProfiler_Enable_Params ep = {
        CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE, NULL, prof.ctx, NULL};
    if ((r = api.rp_enable(&ep)) != CUPTI_SUCCESS)
      return fail(r, "cuptiRangeProfilerEnable", err, errlen);
    prof.obj = ep.pRangeProfilerObject;
    prof.obj_key = strdup(cfg->key);
    /* primed once per enable (and so per config), like the start-up */
    double p0 = now_ms();
    prime(cfg, names, n, hooks);
    out->init_ms += now_ms() - p0;
  }
  CUpti_RangeProfiler_Object *obj = prof.obj;
  static const CUpti_ProfilerReplayMode modes[2] = {CUPTI_UserReplay,
                                                    CUPTI_KernelReplay};
  size_t passes_run = 0;
  /* KERNLAB_PROFILE_REPLAY=kernel: CUPTI's kernel replay (for comparing) */
  const char *want = getenv("KERNLAB_PROFILE_REPLAY");
  int first_mode = want && strcmp(want, "kernel") == 0;
  for (int m = first_mode; m < 2; m++) {
    double s0 = now_ms();
    free(data);
    st = set_session(cfg, names, n, modes[m], &data, &data_size, err, errlen);
    if (st) {
      if (m == 0 && st == KLW_PROF_ERROR) continue; /* try kernel replay */
      goto done;
    }
    out->replay = m == 0 ? "user" : "kernel";
    out->setup_ms = now_ms() - s0;
    double c0 = now_ms();
    st = run_passes(obj, hooks, modes[m], &passes_run, &out->first_pass_ms, err,
                    errlen);
    out->collect_ms = now_ms() - c0;
    break;
  }
  if (st) goto done;

  double d0 = now_ms();
  CUpti_RangeProfiler_DecodeData_Params dp = {
      CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE, NULL, obj, 0};
  if ((r = api.rp_decode(&dp)) != CUPTI_SUCCESS) {
    st = fail(r, "cuptiRangeProfilerDecodeData", err, errlen);
    goto done;
  }
  out->dropped_ranges = dp.numOfRangeDropped;
  CUpti_RangeProfiler_GetCounterDataInfo_Params gp = {
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE, NULL, data,
      data_size, 0};
  if ((r = api.rp_data_info(&gp)) != CUPTI_SUCCESS) {
    st = fail(r, "cuptiRangeProfilerGetCounterDataInfo", err, errlen);
    goto done;
  }
  out->nranges = gp.numTotalRanges;
  out->nmetrics = n;
  if (out->nranges == 0) {
    snprintf(err, errlen, "the profiled launch ran no kernel");
    st = KLW_PROF_ERROR;
    goto done;
  }
  if (!(out->values = calloc(out->nranges * n, sizeof(double)))) {
    snprintf(err, errlen, "out of memory");
    st = KLW_PROF_ERROR;
    goto done;
  }
  /* each range's name: in auto range mode, its kernel's */
  out->range_names = calloc(out->nranges, sizeof(char *));
  for (size_t i = 0; out->range_names && i < out->nranges; i++) {
    CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri = {
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE,
        NULL,
        data,
        data_size,
        i,
        "/",
        NULL};
    if (api.rp_range_info(&ri) == CUPTI_SUCCESS && ri.rangeName)
      out->range_names[i] = strdup(ri.rangeName);
  }
  for (size_t i = 0; i < out->nranges; i++) {
    CUpti_Profiler_Host_EvaluateToGpuValues_Params vp = {
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE,
        NULL,
        cfg->host,
        data,
        data_size,
        i,
        (const char **)names,
        n,
        out->values + i * n};
    if ((r = api.host_evaluate(&vp)) != CUPTI_SUCCESS) {
      st = fail(r, "cuptiProfilerHostEvaluateToGpuValues", err, errlen);
      goto done;
    }
  }
  out->decode_ms = now_ms() - d0;
done:
  if (st) klw_prof_release(); /* start over next time, not mid-session */
  free(data);
  if (st) klw_prof_result_dispose(out);
  return st;
}
