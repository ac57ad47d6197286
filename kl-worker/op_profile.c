/* kl-worker's profile requests: counters of one launch of a loaded plugin.
 *
 *   {"op":"profile","plugin":N,"shape":S,"metrics":[names],"seed":s,
 *    "cold":b}
 *   device -> {"ok":true,"backend":"cuda","chip":C,"replay":R,"passes":P,
 *              "metrics":[names],"ranges":[[values per name] per kernel],
 *              "range_names":[each range's kernel name, or null],
 *              "kernel":{launch, attributes, occupancy API, device limits},
 *              "init_ms","config_ms","setup_ms","collect_ms",
 *              "first_pass_ms","decode_ms",
 *              "dropped_ranges"}
 *   host   -> {"ok":true,"backend":"host","runs":k,"events":{name:count per
 *              run},"note":why-not-when-no-counters}
 *   {"op":"metric_passes","metrics":[names],"chip":C(optional)}
 *          -> {"ok":true,"passes":P,"chip":C}
 * A failure of the profiler answers {"ok":false,"error":..,"code":K} with
 * K one of "unknown_metric", "permission", "unavailable", "error", so the
 * parent can tell a bad name from a machine without counters.
 *
 * The instance is warmed up first (lazy module loading must not happen
 * inside a pass). Every pass starts like a cold timing sample: inouts
 * restored, caches flushed, device idle. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../libkernlab/core/internal.h"
#include "../libkernlab/profile/kernel_info_fields.h"
#include "perf_counters.h"
#include "worker_internal.h"
#ifdef KL_HAVE_CUPTI
#include <cupti.h>

#include "cupti_profiler.h"
#include "cupti_timer.h"
#endif

#define MAX_METRICS 512

/* The request's metric names (pointers into req); -1 when malformed. */
static int metric_names(json_object *req, const char **names, size_t *n) {
  json_object *arr;
  *n = 0;
  if (!json_object_object_get_ex(req, "metrics", &arr) ||
      !json_object_is_type(arr, json_type_array))
    return -1;
  size_t len = json_object_array_length(arr);
  if (len > MAX_METRICS) return -1;
  for (size_t i = 0; i < len; i++) {
    json_object *v = json_object_array_get_idx(arr, i);
    if (!json_object_is_type(v, json_type_string)) return -1;
    names[(*n)++] = json_object_get_string(v);
  }
  return 0;
}

typedef struct pass_ctx {
  const kl_plugin *pl;
  void *inst;
  int cold;
} pass_ctx;

#ifdef KL_HAVE_CUPTI
static int pass_prepare(void *arg) {
  pass_ctx *p = arg;
  return p->pl->restore(p->inst) || (p->cold && p->pl->flush(p->inst)) ||
         p->pl->sync(p->inst);
}

/* A kernel's name as its source spells a call of it: the runtime gives the
 * mangled symbol ("_ZN7kernels4rowsILi32EEvPfi"), this the instantiation
 * ("kernels::rows<32>"), through the C++ runtime's demangler (libstdc++,
 * which CUPTI needs anyway); else the symbol as it is. */
static char *readable_name(const char *symbol) {
  static char *(*demangle)(const char *, char *, size_t *, int *);
  static bool looked;
  if (!looked) {
    looked = true;
    void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    if (cxx) *(void **)&demangle = dlsym(cxx, "__cxa_demangle");
  }
  char *d = NULL, call[512];
  int status = -1;
  if (demangle && strncmp(symbol, "_Z", 2) == 0)
    d = demangle(symbol, NULL, NULL, &status);
  char *out = strdup(status == 0 && d && kl__c_call_name(call, sizeof call, d)
                         ? call
                         : symbol);
  free(d);
  return out;
}

/* The kernels a launch runs, by name, in order: the runtime's kernel
 * launches (launch_guard.c's CUPTI subscriber hands them over), recorded
 * only inside a pass's launch. The Range Profiler's auto ranges are
 * numbered, not named; this names them (the last pass's list, range i
 * being its i-th kernel). */
#define MAX_NAMED 64
static char *launched[MAX_NAMED];
static size_t nlaunched;
static bool naming;

static void on_kernel(const char *symbol) {
  if (naming && nlaunched < MAX_NAMED)
    launched[nlaunched++] = readable_name(symbol);
}

static void names_reset(void) {
  for (size_t i = 0; i < nlaunched; i++)
    free(launched[i]);
  nlaunched = 0;
}

static int pass_launch(void *arg) {
  pass_ctx *p = arg;
  names_reset();
  naming = true;
  int rc = p->pl->launch(p->inst);
  naming = false;
  return rc || p->pl->sync(p->inst);
}

static json_object *kernel_json(const kl_plugin_kernel_info *k) {
  json_object *o = json_object_new_object(), *g = json_object_new_array(),
              *b = json_object_new_array();
  for (int d = 0; d < 3; d++) {
    json_object_array_add(g, json_object_new_int64(k->grid[d]));
    json_object_array_add(b, json_object_new_int64(k->block[d]));
  }
  json_object_object_add(o, "grid", g);
  json_object_object_add(o, "block", b);
#define F(name)                                                                \
  json_object_object_add(o, #name, json_object_new_int64(k->name));
  KL_KERNEL_INFO_FIELDS(F)
#undef F
  return o;
}

static void profile_device(const kl_plugin *pl, void *inst, const char **names,
                           size_t n, int cold) {
  /* warm up: module loading and first-touch happen here, not in a pass */
  if (pl->restore(inst) || pl->launch(inst) || pl->sync(inst)) {
    klw_reply_error("profile: warm-up: %s", pl->last_error(inst));
    return;
  }
  kl_plugin_kernel_info info;
  int have_info = pl->struct_size >= offsetof(kl_plugin, kernel_info) +
                                         sizeof(pl->kernel_info) &&
                  pl->kernel_info && pl->kernel_info(inst, &info) == 0;
  pass_ctx pc = {pl, inst, cold};
  klw_prof_hooks hooks = {pass_prepare, pass_launch, &pc};
  klw_watch_kernels(on_kernel);
  klw_prof_result res;
  char err[1024];
  klw_prof_status st =
      klw_prof_collect(names, n, &hooks, &res, err, sizeof(err));
  /* the replayed launches' kernel records carry no times: drop them */
  klw_kernel *recs = NULL;
  size_t nrecs = 0, dropped = 0;
  klw_cupti_take(&recs, &nrecs, &dropped);
  free(recs);
  if (st) {
    klw_reply_code(klw_prof_status_code(st), err);
    return;
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  json_object_object_add(o, "backend", json_object_new_string("cuda"));
  json_object_object_add(o, "chip", json_object_new_string(res.chip));
  json_object_object_add(o, "replay", json_object_new_string(res.replay));
  json_object_object_add(o, "passes",
                         json_object_new_int64((int64_t)res.passes));
  json_object *m = json_object_new_array(), *ranges = json_object_new_array();
  for (size_t i = 0; i < n; i++)
    json_object_array_add(m, json_object_new_string(names[i]));
  for (size_t r = 0; r < res.nranges; r++) {
    json_object *vals = json_object_new_array();
    for (size_t i = 0; i < n; i++)
      json_object_array_add(vals,
                            json_object_new_double(res.values[r * n + i]));
    json_object_array_add(ranges, vals);
  }
  json_object_object_add(o, "metrics", m);
  json_object_object_add(o, "ranges", ranges);
  json_object *rn = json_object_new_array();
  for (size_t r = 0; r < res.nranges; r++) /* the launch's kernels by name */
  {
    char *named = nlaunched == res.nranges ? NULL
                  : res.range_names && res.range_names[r]
                      ? readable_name(res.range_names[r])
                      : NULL;
    json_object_array_add(rn, nlaunched == res.nranges
                                  ? json_object_new_string(launched[r])
                              : named ? json_object_new_string(named)
                                      : NULL);
    free(named);
  }
  json_object_object_add(o, "range_names", rn);
  names_reset();
  if (have_info) json_object_object_add(o, "kernel", kernel_json(&info));
  json_object_object_add(o, "init_ms", json_object_new_double(res.init_ms));
  json_object_object_add(o, "config_ms", json_object_new_double(res.config_ms));
  json_object_object_add(o, "setup_ms", json_object_new_double(res.setup_ms));
  json_object_object_add(o, "collect_ms",
                         json_object_new_double(res.collect_ms));
  json_object_object_add(o, "first_pass_ms",
                         json_object_new_double(res.first_pass_ms));
  json_object_object_add(o, "decode_ms", json_object_new_double(res.decode_ms));
  /* CONCURRENT_KERNEL tracing instruments kernel code: counts taken with
   * it on include CUPTI's own instructions */
  json_object_object_add(o, "tracing_on",
                         json_object_new_boolean(klw_cupti_tracing()));
  json_object_object_add(o, "dropped_ranges",
                         json_object_new_int64((int64_t)res.dropped_ranges));
  klw_prof_result_dispose(&res);
  klw_reply(o);
}
#endif /* KL_HAVE_CUPTI */

/* Host plugins: perf counters around a few launches, per launch. */
static void profile_host(const kl_plugin *pl, void *inst, int cold) {
  klw_perf perf;
  char note[256] = "";
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  json_object_object_add(o, "backend", json_object_new_string("host"));
  if (klw_perf_open(&perf, note, sizeof(note)) == 0) {
    json_object_object_add(o, "note", json_object_new_string(note));
    klw_reply(o);
    return;
  }
  /* at least 3 launches and about 50 ms of them, at most 1000 */
  int runs = 0;
  double spent = 0;
  while (runs < 1000 && (runs < 3 || spent < 50e3)) {
    if (pl->restore(inst) || (cold && klw_flush_host_caches())) {
      klw_perf_close(&perf);
      json_object_put(o);
      klw_reply_error("profile: %s", pl->last_error(inst));
      return;
    }
    double t0 = klw_now_us();
    klw_perf_enable(&perf, 1);
    int rc = pl->launch(inst) || pl->sync(inst);
    klw_perf_enable(&perf, 0);
    spent += klw_now_us() - t0;
    if (rc) {
      klw_perf_close(&perf);
      json_object_put(o);
      klw_reply_error("profile: launch: %s", pl->last_error(inst));
      return;
    }
    runs++;
  }
  klw_perf_read(&perf);
  klw_perf_close(&perf);
  json_object *ev = json_object_new_object();
  for (int i = 0; i < KLW_PERF_NEVENTS; i++)
    if (perf.total[i] >= 0)
      json_object_object_add(ev, klw_perf_event_name(i),
                             json_object_new_double(perf.total[i] / runs));
  json_object_object_add(o, "runs", json_object_new_int(runs));
  json_object_object_add(o, "events", ev);
  klw_reply(o);
}

void klw_op_profile(json_object *req) {
  const kl_plugin *pl = klw_plugin_at(klw_get_int(req, "plugin", -1));
  int shape = (int)klw_get_int(req, "shape", 0);
  int cold = (int)klw_get_int(req, "cold", 1);
  uint64_t seed = (uint64_t)klw_get_int(req, "seed", 1);
  const char *names[MAX_METRICS];
  size_t n = 0;
  if (!pl) {
    klw_reply_error("profile: no such plugin");
    return;
  }
  if (pl->flush && (metric_names(req, names, &n) < 0 || n == 0)) {
    klw_reply_error("profile: 'metrics' must be 1 to %d names", MAX_METRICS);
    return;
  }
  bool pooled = klw_get_int(req, "pool", 0) != 0;
  void *inst = NULL;
  if (klw_instance_take(pl, shape, pooled, &inst, NULL)) {
    klw_reply_error("profile: create: %s", pl->last_error(NULL));
    return;
  }
  if (pl->prepare(inst, seed, 0)) {
    klw_reply_error("profile: prepare: %s", pl->last_error(inst));
  } else if (pl->flush) {
#ifdef KL_HAVE_CUPTI
    profile_device(pl, inst, names, n, cold);
#else
    klw_reply_code("unavailable", "profile: this kl-worker was built without "
                                  "CUPTI, so it cannot read device counters");
#endif
  } else {
    profile_host(pl, inst, cold);
  }
  klw_instance_give(pl, shape, inst, pooled);
}

void klw_profile_release(void) {
#ifdef KL_HAVE_CUPTI
  klw_prof_release();
#endif
}

void klw_op_metric_passes(json_object *req) {
  const char *names[MAX_METRICS];
  size_t n = 0;
  if (metric_names(req, names, &n) < 0 || n == 0) {
    klw_reply_error("metric_passes: 'metrics' must be 1 to %d names",
                    MAX_METRICS);
    return;
  }
#ifdef KL_HAVE_CUPTI
  json_object *c;
  const char *chip = json_object_object_get_ex(req, "chip", &c)
                         ? json_object_get_string(c)
                         : NULL;
  size_t passes = 0;
  char err[1024];
  klw_prof_status st =
      klw_prof_passes(chip, names, n, &passes, err, sizeof(err));
  if (st) {
    klw_reply_code(klw_prof_status_code(st), err);
    return;
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  json_object_object_add(o, "passes", json_object_new_int64((int64_t)passes));
  klw_reply(o);
#else
  klw_reply_code("unavailable", "metric_passes: this kl-worker was built "
                                "without CUPTI");
#endif
}
