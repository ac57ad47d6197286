/* kl_bench_run and kl_bench_compare: the path of a candidate.
 *
 * Up to three plugins, compiled through the cache: the oracle (the case's
 * baseline as written; it is also the host reference's carrier), the side
 * compared against (the baseline unless `against` or its configuration
 * says otherwise) and the candidate. Tunable settings reload the case with
 * that configuration, so launch geometry follows them. One worker loads
 * them all (comparisons stay in one process); per shape, check on fresh
 * seeds, and only if every check passed, time, with the timed outputs
 * re-checked on re-randomised inputs afterwards. The first rejection stops
 * the work: a candidate that is wrong at one shape is wrong. Each step's
 * failure becomes the report's verdict and a one-line reason; only
 * failures of kernlab itself (no compiler, no worker, out of memory) are
 * errors of the call. */
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../case/case_view.h"
#include "../profile/profile_internal.h"
#include "../worker/client_internal.h"
#include "bench_internal.h"

static bool breaks_launch_contract(const char *why) {
  return strstr(why, "the launch called") || strstr(why, "scratch region");
}

/* The worker died or hung before any shape ran (its start, the device
 * query, loading the plugins: the candidate's constructors run there).
 * With a candidate in it, that is the candidate's verdict, as it would be
 * a moment later; a bench of the case's own kernel fails. */
static int setup_failure(kl_report *r, int rc, bool candidate) {
  return candidate
             ? kl__bench_worker_failure(r, rc, NULL, "loading the plugins")
             : rc;
}

/* Which plugin a compile is for: its name in messages, and whose fault a
 * compiler error is. */
typedef enum side { SIDE_ORACLE, SIDE_AGAINST, SIDE_CANDIDATE } side;

static int compile_side(kl_artifact **out, kl_report *r, const kl_case *c,
                        const char *source, const char *const *config,
                        const kl_bench_options *o, side role) {
  kl_compile_options copts = KL_COMPILE_OPTIONS_INIT;
  if (o->compile) copts = *o->compile;
  if (role != SIDE_ORACLE && config)
    copts.defines = config; /* declared tunables and the candidate's own */
  if (role == SIDE_CANDIDATE && o->candidate_name)
    copts.candidate_name = o->candidate_name;
  int rc = kl_compile_plugin(out, c, source, &copts);
  if (rc < 0) return rc;
  r->compile_seconds += kl_artifact_seconds(*out);
  if (role == SIDE_CANDIDATE)
    r->candidate_cached = kl_artifact_cached(*out);
  else if (role == SIDE_ORACLE)
    r->baseline_cached = kl_artifact_cached(*out);
  if (kl_artifact_ok(*out)) return 0;
  const char *first = kl_artifact_first_error(*out);
  if (!(r->compile_log = kl__strdup(kl_artifact_log(*out))))
    return kl__error_oom();
  if (role != SIDE_CANDIDATE) { /* the case's own: one line, the log after */
    size_t len = strlen(r->compile_log);
    while (len && (r->compile_log[len - 1] == '\n'))
      len--;
    char *log = kl__strndup(r->compile_log, len);
    if (!log) return kl__error_oom();
    rc = kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, NULL, 0, 0, len ? log : NULL,
                      "the %s of case '%s' does not compile: %s",
                      role == SIDE_ORACLE ? "baseline"
                                          : "kernel compared against",
                      kl_case_name(c), first ? first : "see the compiler log");
    kl__free(log);
    return rc;
  }
  return kl__bench_reject(r, KL_VERDICT_COMPILE_ERROR, "%s",
                          first ? first : "the compiler failed (see its log)");
}

/* The case as configured by `config`: c itself without settings, else c
 * reloaded with them (launch geometry and the harness's defaults follow;
 * the loader checks every setting). *owned is what the caller frees. */
static int configured_case(const kl_case **out, kl_case **owned,
                           const kl_case *c, const char *const *config) {
  *out = c;
  *owned = NULL;
  if (!config || !config[0]) return 0;
  kl_case_options copts = KL_CASE_OPTIONS_INIT;
  copts.tunables = config;
  int rc = kl_case_load(owned, kl_case_path(c), &copts);
  if (rc < 0) return rc;
  *out = *owned;
  return 0;
}

/* Compile one side under its configuration. */
static int build_side(kl_artifact **out, kl_report *r, const kl_case *c,
                      const char *source, const char *const *config,
                      const kl_bench_options *o, side role) {
  const kl_case *cc;
  kl_case *owned;
  int rc = configured_case(&cc, &owned, c, config);
  if (rc == 0) rc = compile_side(out, r, cc, source, config, o, role);
  kl_case_free(owned);
  return rc;
}

static int check_shape(kl_report *r, const kl_case *c, kl_worker *w, int plugin,
                       int oracle, int shape, shape_entry *e) {
  kl_check_result res[64];
  for (size_t i = 0; i < KL_ARRAY_SIZE(res); i++)
    res[i] = (kl_check_result)KL_CHECK_RESULT_INIT;
  int rc = kl_worker_check(res, w, plugin, oracle, shape, r->seeds, r->nseeds);
  if (rc < 0) return kl__bench_worker_failure(r, rc, e->res.name, "check");
  e->res.checked = 1;
  e->res.correct = 1;
  r->gates |= KL__GATE_TOLERANCE | KL__GATE_WORK_AFTER_RETURN;
  if (r->backend == KL_BACKEND_CUDA || r->backend == KL_BACKEND_HOST)
    r->gates |= KL__GATE_LAUNCH_CONTRACT; /* the harness's launch guard */
  kl__report_phases *ph = &r->phases;
  for (size_t i = 0; i < r->nseeds; i++) {
    ph->oracle = (ph->oracle >= 0 ? ph->oracle : 0) + res[i].oracle_ms;
    ph->settle = (ph->settle >= 0 ? ph->settle : 0) + res[i].settle_ms;
    r->oracle_kept += res[i].oracle_kept != 0;
  }
  for (size_t i = 0; i < r->nseeds; i++) {
    if (!res[i].late_bytes && !res[i].busy_threads) continue;
    e->res.correct = 0;
    /* threads that run on and wrote nothing may be a thread pool's
     * spinning: a new user's OpenMP kernel under OMP_WAIT_POLICY=active
     * was told it cheats, with nothing to say why */
    bool spinning = !res[i].late_bytes;
    rc = kl__bench_reject(
        r, KL_VERDICT_CHEAT,
        "shape %s, seed %llu: work went on after the launch returned "
        "(%llu output bytes changed later, %d threads still "
        "running): work on another thread or stream is not timed%s",
        e->res.name, (unsigned long long)res[i].seed,
        (unsigned long long)res[i].late_bytes, res[i].busy_threads,
        spinning ? " (threads that wrote nothing count too, as a thread "
                   "pool's that spin after a parallel region: OpenMP's "
                   "under OMP_WAIT_POLICY=active or a large "
                   "GOMP_SPINCOUNT; unset them)"
                 : "");
    r->gate = "work_after_return";
    return rc;
  }
  const kl_check_result *bad = NULL;
  for (size_t i = 0; i < r->nseeds; i++) {
    e->res.mismatches += res[i].mismatches;
    e->res.unwritten += res[i].unwritten;
    e->res.nonfinite += res[i].nonfinite;
    e->res.inputs_written += res[i].inputs_written;
    if (res[i].max_abs_err > e->res.max_abs_err)
      e->res.max_abs_err = res[i].max_abs_err;
    if (!res[i].correct && !bad) bad = &res[i];
  }
  if (!bad) return kl__bench_scale_gate(r, c, res, e);
  e->res.correct = 0;
  if (strncmp(bad->detail, "launch failed: ", 15) == 0) {
    bool contract = breaks_launch_contract(bad->detail);
    rc = kl__bench_reject(r, contract ? KL_VERDICT_CHEAT : KL_VERDICT_INCORRECT,
                          "shape %s, seed %llu: %s", e->res.name,
                          (unsigned long long)bad->seed, bad->detail);
    if (contract) {
      r->gate = "launch_contract";
      r->gates |= KL__GATE_LAUNCH_CONTRACT;
    }
    return rc;
  }
  if (bad->inputs_written && !bad->mismatches)
    return kl__bench_reject(
        r, KL_VERDICT_INCORRECT,
        "shape %s, seed %llu: the kernel wrote its input (%s)", e->res.name,
        (unsigned long long)bad->seed, bad->detail);
  if (bad->unwritten)
    return kl__bench_reject(
        r, KL_VERDICT_INCORRECT,
        "shape %s, seed %llu: %llu output elements never written "
        "(%s)",
        e->res.name, (unsigned long long)bad->seed,
        (unsigned long long)bad->unwritten, bad->detail);
  return kl__bench_reject(
      r, KL_VERDICT_INCORRECT,
      "shape %s, seed %llu: %llu mismatches, max abs error %g "
      "(%s%s)",
      e->res.name, (unsigned long long)bad->seed,
      (unsigned long long)bad->mismatches, bad->max_abs_err, bad->detail,
      bad->nonfinite ? "; NaN or Inf where the oracle is finite" : "");
}

/* Leave out samples (rounds, for a pair) taken while the SM clock was
 * under 97% of the run's median clock: a throttled sample measures the
 * clock, not the kernel. Their count is reported. */
static int drop_throttled(kl_samples *s, kl_shape_result *res) {
  size_t total = s->n * s->nplugins;
  double *all = kl__malloc(total * sizeof(double));
  if (!all) return kl__error_oom();
  size_t m = 0;
  for (size_t k = 0; k < s->nplugins; k++)
    for (size_t i = 0; i < s->n; i++)
      if (s->mhz[k][i] > 0) all[m++] = s->mhz[k][i];
  kl_summary clock;
  int rc = kl_stats_summarize(&clock, all, m);
  kl__free(all);
  if (rc < 0 || m == 0) return rc;
  res->sm_clock_mhz = clock.median;
  double floor_mhz = 0.97 * clock.median;
  size_t kept = 0;
  for (size_t i = 0; i < s->n; i++) {
    bool slow = false;
    for (size_t k = 0; k < s->nplugins; k++)
      slow |= s->mhz[k][i] > 0 && s->mhz[k][i] < floor_mhz;
    if (slow) {
      res->throttled++;
      continue;
    }
    for (size_t k = 0; k < s->nplugins; k++) {
      s->us[k][kept] = s->us[k][i];
      s->mhz[k][kept] = s->mhz[k][i];
    }
    kept++;
  }
  if (kept == 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "every sample was taken under 97%% of the median SM "
                     "clock");
  s->n = kept;
  return 0;
}

static void calibration_from(double cal[3], const kl_samples *s) {
  cal[0] = s->calibration_us;
  cal[1] = s->probe_records_us;
  cal[2] = s->probe_true_us;
}

/* The graph pass of KL_LAUNCH_BOTH: the samples' statistics go beside the
 * stream's (res.graph_*), which keep the decision. */
static int graph_summaries(shape_entry *e, kl_samples *s, double gain_pct) {
  kl_shape_result scratch = e->res, *res = &e->res;
  scratch.throttled = 0; /* counts the graph pass's own */
  int rc = 0;
  if (s->mhz[0] && s->n > 0 && (rc = drop_throttled(s, &scratch)) < 0)
    return rc;
  res->throttled += scratch.throttled;
  res->wall_ms += s->wall_ms;
  res->graph_timed = 1;
  snprintf(e->graph_tracing, sizeof(e->graph_tracing), "%s", s->tracing);
  calibration_from(e->graph_calibration, s);
  if (s->nplugins == 1)
    return kl_stats_summarize(&res->graph_time, s->us[0], s->n);
  if ((rc = kl_stats_summarize(&res->graph_baseline, s->us[0], s->n)) < 0 ||
      (rc = kl_stats_summarize(&res->graph_time, s->us[1], s->n)) < 0)
    return rc;
  return kl_stats_speedup_blocked(&res->graph_speedup, s->us[0], s->us[1], s->n,
                                  s->block_rounds, s->placements, gain_pct);
}

/* One timing of one shape under `launch` (stream or graph). Under
 * KL_LAUNCH_BOTH the caller times each shape twice, stream then graph, and
 * the graph pass fills res.graph_*. */
static int time_shape(kl_report *r, kl_worker *w, const int *ids, size_t n,
                      int shape, const kl_time_options *t, shape_entry *e,
                      int launch) {
  kl_samples s = KL_SAMPLES_INIT;
  int rc = kl_worker_time_launch(&s, w, ids, n, shape, t, launch);
  if (rc == KL_EREJECTED && strcmp(s.gate, "graph_launch") == 0) {
    /* a launch a CUDA graph cannot hold: the case's own kernel cannot be
     * timed so; a candidate that cannot is one that fails as launched */
    const char *msg = kl_error_last()->message;
    const char *why = strstr(msg, "the ");
    if (s.culprit == 0 && (n == 2 || !r->has_candidate))
      return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                       "shape %s: the %s cannot be timed under CUDA graphs "
                       "(launch: graph): %s",
                       e->res.name,
                       n == 2 ? "kernel compared against" : "case's kernel",
                       why ? why : msg);
    return kl__bench_reject(r, KL_VERDICT_CRASHED,
                            "shape %s: under CUDA graphs (launch: graph), %s",
                            e->res.name, why ? why : msg);
  }
  if (rc == KL_EREJECTED) {
    /* checked clean, then behaved otherwise while timed (broke the launch
     * contract, launched nothing): the timed code's verdict, whichever
     * side it was (a baseline that does it is named as such) */
    const char *msg = kl_error_last()->message, *why = strstr(msg, "sample ");
    bool contract = strcmp(s.gate, "launch_contract") == 0;
    if (contract) why = strstr(msg, "the launch called");
    if (!why) why = strstr(msg, "a launch ");
    if (!why) why = strstr(msg, "scratch region");
    bool baseline = n == 2 ? s.culprit == 0 : false;
    rc = kl__bench_reject(r, KL_VERDICT_CHEAT, "shape %s: while timed, %s%s",
                          e->res.name, baseline ? "the baseline: " : "",
                          why ? why : msg);
    r->gate = contract ? "launch_contract" : "timed_work";
    r->gates |= contract ? KL__GATE_LAUNCH_CONTRACT : KL__GATE_TIMED_WORK;
    return rc;
  }
  if (rc < 0) return kl__bench_worker_failure(r, rc, e->res.name, "timing");
  if (launch == KL_LAUNCH_GRAPH && strcmp(s.launch, "graph") != 0) {
    kl_samples_dispose(&s); /* a worker that ignored "launch" */
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_NONE,
                     "shape %s: the worker did not time under CUDA graphs "
                     "(an older kl-worker?)",
                     e->res.name);
  }
  kl__report_phases *ph = &r->phases; /* timing's parts besides sampling */
  ph->setup = (ph->setup >= 0 ? ph->setup : 0) + s.costs.setup_ms;
  ph->placements =
      (ph->placements >= 0 ? ph->placements : 0) + s.costs.place_ms;
  ph->verify = (ph->verify >= 0 ? ph->verify : 0) + s.costs.verify_ms;
  if (s.verified) r->gates |= KL__GATE_STALE_OUTPUTS;
  if (s.verified && s.varied) r->gates |= KL__GATE_VARIED_INPUTS;
  if (s.verified && s.stale[n - 1]) {
    /* correct when checked, wrong once its inputs changed under timing */
    rc = kl__bench_reject(
        r, KL_VERDICT_CHEAT,
        "shape %s: %llu output elements did not match the inputs of "
        "the last timed samples (%s): results computed once and "
        "handed back later",
        e->res.name, (unsigned long long)s.stale[n - 1], s.stale_detail[n - 1]);
    r->gate = "stale_outputs";
    kl_samples_dispose(&s);
    return rc;
  }
  if (strcmp(s.timer, "cupti") == 0 && r->backend == KL_BACKEND_CUDA &&
      !strstr(r->gates_off, "timed_work"))
    r->gates |= KL__GATE_TIMED_WORK; /* the C worker's kernels per launch */
  if (r->launch == KL_LAUNCH_BOTH && launch == KL_LAUNCH_GRAPH) {
    rc = graph_summaries(e, &s, r->min_gain_pct);
    goto done;
  }
  e->res.timed = 1;
  e->res.wall_ms = s.wall_ms;
  snprintf(e->stop_reason, sizeof(e->stop_reason), "%s", s.stop_reason);
  snprintf(e->tracing, sizeof(e->tracing), "%s", s.tracing);
  calibration_from(e->calibration, &s);
  snprintf(r->timer, sizeof(r->timer), "%s", s.timer);
  if (s.mhz[0] && s.n > 0 && (rc = drop_throttled(&s, &e->res)) < 0) goto done;
  if (n == 1) {
    rc = kl_stats_summarize(&e->res.time, s.us[0], s.n);
    goto done;
  }
  if ((rc = kl_stats_summarize(&e->res.baseline, s.us[0], s.n)) < 0 ||
      (rc = kl_stats_summarize(&e->res.time, s.us[1], s.n)) < 0)
    goto done;
  rc = kl_stats_speedup_blocked(&e->res.speedup, s.us[0], s.us[1], s.n,
                                s.block_rounds, s.placements, r->min_gain_pct);
  if (rc == 0) rc = kl__shape_decision(e, &s, r->min_gain_pct);
done:
  kl_samples_dispose(&s);
  return rc;
}

const kl_profile *kl_report_profile(const kl_report *r, size_t i) {
  return i < r->nshapes ? r->shapes[i].profile : NULL;
}

/* Counters of one launch at one shape, collected *before* any timing in
 * this worker: concurrent-kernel tracing (which timing turns on for a
 * launch on two streams) instruments kernel code and would add its own
 * instructions to the counts. The reply
 * is kept until the timing gives the duration the profile's roofline
 * values need. */
static int profile_collect(json_object **reply, kl_report *r, kl_worker *w,
                           int plugin, int shape, char **names, size_t nnames,
                           uint64_t seed, double *wall_ms, shape_entry *e) {
  double t0 = kl__now_ms();
  int rc = kl__worker_profile(reply, w, plugin, shape, names, nnames, seed);
  *wall_ms = kl__now_ms() - t0;
  if (rc < 0) return kl__bench_worker_failure(r, rc, e->res.name, "profiling");
  return 0;
}

/* The profile from its reply and the timing. A machine without counters
 * gives a profile that says why (the timing stands); a name the chip lacks
 * fails the call. */
static int profile_build(json_object *reply, const kl_case *c, int shape,
                         const char *spec, double wall_ms, shape_entry *e) {
  kl_profile_inputs in = {0};
  in.set = spec;
  in.time_us = e->res.timed ? e->res.time.median : 0;
  in.wall_ms = wall_ms;
  in.has_roofline = kl_case_roofline(&in.bytes, &in.flops, c, shape) == 0;
  int rc = kl__worker_reply_status(reply, "profile");
  if (rc == KL_EUNSUPPORTED) {
    const kl_error *err = kl_error_last();
    return kl__profile_unavailable(&e->profile, &in,
                                   kl_case_on_gpu(c) ? "cuda" : "host",
                                   err ? err->text : "no counters");
  }
  return rc < 0 ? rc : kl__profile_from_reply(&e->profile, reply, &in);
}

static int objective(kl_report *r, const kl_case *c) {
  size_t n = 0;
  kl_speedup sp[64];
  double w[64];
  for (size_t i = 0; i < r->nshapes && n < 64; i++) {
    shape_entry *e = &r->shapes[i];
    if (!e->res.timed) return 0;
    sp[n] = e->res.speedup;
    int s = kl_case_shape_find(c, e->res.name);
    w[n] = kl_case_shape_weight(c, s);
    /* total_time weighs each shape by its share of the baseline's time,
     * which makes the weighted geometric mean track the ratio of totals */
    if (r->objective == KL_OBJECTIVE_TOTAL_TIME) w[n] *= e->res.baseline.median;
    n++;
  }
  int rc = kl_stats_geomean(&r->objective_speedup, sp, w, n, r->min_gain_pct);
  if (rc == 0) r->has_objective = true;
  return rc;
}

/* A report for `c` under `o`, with its seeds and shapes; *only is the
 * one shape asked for, or -1. */
static int report_new(kl_report **out, int *only, const kl_case *c,
                      const kl_bench_options *o, bool compare) {
  *out = NULL;
  *only = -1;
  if (compare && !o->candidate && !o->candidate_config)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "compare needs a candidate (a source or a "
                     "configuration)");
  if (o->shape && (*only = kl_case_shape_find(c, o->shape)) < 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE, "case '%s' has no shape '%s'",
                     kl_case_name(c), o->shape);
  int launch =
      o->launch == KL_LAUNCH_CASE ? kl_case_timing_launch(c) : o->launch;
  if (!kl_launch_name(launch))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_bench_options.launch: %d is no launch mode",
                     o->launch);
  if (launch != KL_LAUNCH_STREAM && kl_case_backend(c) != KL_BACKEND_CUDA)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                     "case '%s': launch %s replays CUDA-C launches "
                     "from a CUDA graph; a %s case's launch is not captured "
                     "(time it with launch stream)",
                     kl_case_name(c), kl_launch_name(launch),
                     kl_backend_name(kl_case_backend(c)));
  kl_report *r = kl__calloc(1, sizeof(*r));
  if (!r) return kl__error_oom();
  r->launch = launch;
  const kl__report_phases none = KL__REPORT_PHASES_NONE;
  r->phases = none;
  r->compare = compare;
  r->cold = o->time.cold;
  r->min_gain_pct = kl__case_budget(c)->min_gain_pct;
  r->objective = kl_case_objective(c);
  r->backend = kl_case_backend(c);
  r->case_name = kl__strdup(kl_case_name(c));
  r->candidate_name = kl__strdup(o->candidate_name ? o->candidate_name
                                 : o->candidate    ? "candidate"
                                                   : "baseline");
  r->nseeds = o->check_seeds < 3 ? 3 : (size_t)o->check_seeds;
  if (r->nseeds > 64) r->nseeds = 64;
  r->nshapes = *only >= 0 ? 1 : kl_case_shape_count(c);
  r->seeds = kl__calloc(r->nseeds, sizeof(*r->seeds));
  r->shapes = kl__calloc(r->nshapes, sizeof(*r->shapes));
  bool ok = r->case_name && r->candidate_name && r->seeds && r->shapes;
  for (size_t i = 0; ok && i < r->nshapes; i++) {
    r->shapes[i].name =
        kl__strdup(kl_case_shape_name(c, *only >= 0 ? (size_t)*only : i));
    r->shapes[i].res.name = r->shapes[i].name;
    ok = r->shapes[i].name != NULL;
  }
  if (!ok) {
    kl_report_free(r);
    return kl__error_oom();
  }
  *out = r;
  return 0;
}

static bool has_candidate(const kl_bench_options *o) {
  return o->candidate || o->candidate_config;
}

void kl__bench_plugins_dispose(kl__bench_plugins *p) {
  kl__free(p->oracle);
  kl__free(p->against);
  kl__free(p->candidate);
  kl__free(p->warnings);
  memset(p, 0, sizeof(*p));
}

static int keep_path(char **to, const kl_artifact *a) {
  if (!a) return 0;
  return (*to = kl__strdup(kl_artifact_path(a))) ? 0 : kl__error_oom();
}

/* The compiler's output for a plugin that compiled: its warnings (a
 * pointer of the wrong type, an implicit declaration), which a user needs
 * to see though the build went through; nothing when the log is blank. */
static int keep_warnings(char **to, const kl_artifact *a) {
  const char *log = a ? kl_artifact_log(a) : "";
  if (log[strspn(log, " \t\r\n")] == '\0') return 0;
  return (*to = kl__strdup(log)) ? 0 : kl__error_oom();
}

int kl__bench_build(kl__bench_plugins *p, kl_report **failed, const kl_case *c,
                    const kl_bench_options *o, bool compare) {
  memset(p, 0, sizeof(*p));
  *failed = NULL;
  if (kl_case_backend(c) == KL_BACKEND_COMMAND) /* nothing to build and ship */
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_NONE,
                     "case '%s' runs a command: it is measured on this "
                     "machine (the local executor), not shipped to another",
                     kl_case_name(c));
  int only;
  kl_report *r = NULL;
  int rc = report_new(&r, &only, c, o, compare);
  if (rc < 0) return rc;
  const char *against = o->against;
  const char *const *against_config = o->against_config;
  const char *const *cand_config = o->candidate_config;
  kl_artifact *base = NULL, *other = NULL, *cand = NULL;
  if ((rc = compile_side(&base, r, c, NULL, NULL, o, SIDE_ORACLE)) < 0)
    goto done;
  if (compare && (against || against_config) &&
      (rc = build_side(&other, r, c, against, against_config, o,
                       SIDE_AGAINST)) < 0)
    goto done;
  if (has_candidate(o) &&
      ((rc = build_side(&cand, r, c, o->candidate, cand_config, o,
                        SIDE_CANDIDATE)) < 0 ||
       r->verdict != KL_VERDICT_OK))
    goto done;
  if ((rc = keep_path(&p->oracle, base)) < 0 ||
      (rc = keep_path(&p->against, other)) < 0 ||
      (rc = keep_path(&p->candidate, cand)) < 0 ||
      (rc = keep_warnings(&p->warnings, cand ? cand : base)) < 0)
    goto done;
  p->compile_seconds = r->compile_seconds;
  p->oracle_cached = r->baseline_cached;
  p->candidate_cached = r->candidate_cached;
done:
  kl_artifact_free(base);
  kl_artifact_free(other);
  kl_artifact_free(cand);
  if (rc == 0 && r->verdict != KL_VERDICT_OK) {
    kl__bench_plugins_dispose(p);
    *failed = r; /* the candidate did not compile: that is its report */
    return 0;
  }
  kl_report_free(r);
  if (rc < 0) kl__bench_plugins_dispose(p);
  return rc;
}

/* Tell the caller's live view which phase begins. */
static void phase(const kl_bench_options *o, const char *name) {
  if (o->on_phase) o->on_phase(name, o->phase_payload);
}

/* Milliseconds since *mark, which moves to now. */
/* The device a bench's worker runs on: the one asked for, else for a GPU
 * case the idlest of several (kernlab/worker.h, KL_DEVICE_IDLEST). */
static int worker_device(const kl_case *c, const kl_bench_options *o) {
  return o->device >= 0 || !kl_case_on_gpu(c) ? o->device : KL_DEVICE_IDLEST;
}

static double lap(double *mark) {
  double now = kl__now_ms(), ms = now - *mark;
  *mark = now;
  return ms;
}

/* The plugin at path in w: through the kept worker's table when there is
 * one (loaded once a run), else loaded into w now. */
static int load_plugin(int *id, kl_worker *w, kl__kept_worker *keep,
                       const char *path) {
  return keep ? kl__kept_worker_load(id, keep, path)
              : kl_worker_load(id, w, path);
}

int kl__bench_execute(kl_report **out, const kl_case *c,
                      const kl_bench_options *o, bool compare,
                      const kl__bench_plugins *p, kl__kept_worker *keep) {
  *out = NULL;
  if (!p->oracle || (has_candidate(o) && !p->candidate))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "a bench needs the oracle's plugin%s",
                     has_candidate(o) ? " and the candidate's" : "");
  int only;
  kl_report *r = NULL;
  int rc = report_new(&r, &only, c, o, compare);
  if (rc < 0) return rc;
  if (p->warnings && !(r->compile_log = kl__strdup(p->warnings))) {
    kl_report_free(r);
    return kl__error_oom();
  }
  char **pnames = NULL;
  size_t npnames = 0;
  if (o->profile && kl_case_on_gpu(c) &&
      (rc = kl__profile_names(&pnames, &npnames, o->profile)) < 0) {
    kl_report_free(r);
    return rc;
  }
  json_object **replies = NULL; /* profile replies, per shape */
  double *prof_ms = NULL;
  kl_worker *w = NULL;
  int restarts_before = 0;
  r->compile_seconds = p->compile_seconds;
  r->baseline_cached = p->oracle_cached;
  r->candidate_cached = p->candidate_cached;
  uint64_t base_seed = o->seed ? o->seed : kl__fresh_seed();
  r->base_seed = base_seed;
  for (size_t i = 0; i < r->nseeds; i++)
    r->seeds[i] = kl__derive_seed(o->check_seed ? o->check_seed : base_seed, i);
  bool cand = p->candidate != NULL;
  r->has_candidate = cand;
  kl_worker_options wopts = KL_WORKER_OPTIONS_INIT;
  wopts.worker_path = o->worker_path;
  wopts.timeout_ms = o->timeout_ms;
  wopts.device = worker_device(c, o);
  int base_id = -1, other_id = -1, cand_id = -1;
  kl__report_phases *ph = &r->phases;
  double mark = kl__now_ms(), started = mark;
  phase(o, "worker");
  char *pyworker = NULL; /* python cases: kl-worker's Python sibling */
  if (kl_case_backend(c) == KL_BACKEND_PYTHON && !o->worker_path) {
    if (!(pyworker = kl__find_pyworker())) {
      rc = KL_ENOTFOUND;
      goto done;
    }
    wopts.worker_path = pyworker;
  }
  rc = keep ? kl__kept_worker_take(&w, keep, &wopts)
            : kl_worker_create(&w, &wopts);
  kl__free(pyworker);
  if (rc < 0) goto done;
  restarts_before = kl_worker_restarts(w);
  r->worker_served = keep ? keep->served : 0;
  snprintf(r->sandbox, sizeof(r->sandbox), "%s", kl__worker_sandbox(w));
  const char *off = getenv("KERNLAB_GATES_OFF");
  snprintf(r->gates_off, sizeof(r->gates_off), "%s", off ? off : "");
  if (kl_case_on_gpu(c)) {
    r->device.size = sizeof(r->device);
    if ((rc = kl_worker_device(&r->device, w)) < 0) {
      rc = setup_failure(r, rc, cand);
      goto done;
    }
    if (r->device.count == 0) {
      rc = kl__error(KL_ENODEVICE, KL_DOMAIN_NONE,
                     "no CUDA device is available to run case '%s': %s",
                     kl_case_name(c), r->device.why);
      goto done;
    }
    r->has_device = true;
  }
  ph->worker = lap(&mark);
  phase(o, "load"); /* a python case imports its module and candidate here */
  if ((rc = load_plugin(&base_id, w, keep, p->oracle)) < 0 ||
      (compare && p->against &&
       (rc = load_plugin(&other_id, w, keep, p->against)) < 0)) {
    rc = setup_failure(r, rc, cand);
    goto done;
  }
  if (cand && (rc = load_plugin(&cand_id, w, keep, p->candidate)) < 0) {
    /* the worker refused the candidate's plugin (its import raised, its
     * library did not load): the candidate's verdict, not kernlab's error */
    const char *why = kl__worker_load_refused(w);
    if (!why)
      why = kl_error_last() ? kl_error_last()->message : kl_strerror(rc);
    rc = rc == KL_EINVALID ? kl__bench_reject(r, KL_VERDICT_CRASHED,
                                              "loading the candidate: %s", why)
                           : setup_failure(r, rc, cand);
    goto done;
  }
  ph->load = lap(&mark);
  /* one evaluation's instances made once (check, profile, timing); a
   * worker kept for a run on fixed check seeds keeps the oracle's outputs */
  kl__worker_pool(w, true);
  kl__worker_keep_oracle(w,
                         keep && !keep->once && o->check_seed ? base_id : -1);
  int subject = cand ? cand_id : base_id;
  int reference_side = other_id >= 0 ? other_id : base_id;
  int oracle = kl__case_reference(c)->kind == KL_REFERENCE_HOST ? -1 : base_id;
  /* Correctness first: every shape passes before anything is timed. */
  phase(o, "checks");
  for (size_t i = 0; i < r->nshapes && r->verdict == KL_VERDICT_OK; i++) {
    int shape = only >= 0 ? only : (int)i;
    if ((rc = check_shape(r, c, w, subject, oracle, shape, &r->shapes[i])) < 0)
      goto done;
  }
  ph->checks = lap(&mark);
  if (o->checks_only) goto done; /* kl check's tolerance probe */
  /* Profiles first (see profile_collect), built after the timing. */
  if (o->profile && r->verdict == KL_VERDICT_OK) {
    replies = kl__calloc(r->nshapes, sizeof(*replies));
    prof_ms = kl__calloc(r->nshapes, sizeof(*prof_ms));
    if (!replies || !prof_ms) {
      rc = kl__error_oom();
      goto done;
    }
  }
  if (replies && r->verdict == KL_VERDICT_OK) phase(o, "profile");
  for (size_t i = 0; replies && i < r->nshapes && r->verdict == KL_VERDICT_OK;
       i++) {
    int shape = only >= 0 ? only : (int)i;
    if ((rc = profile_collect(&replies[i], r, w, subject, shape, pnames,
                              npnames, kl__derive_seed(base_seed, 2000),
                              &prof_ms[i], &r->shapes[i])) < 0)
      goto done;
  }
  double profiled = lap(&mark);
  kl_time_options t = o->time;
  if (compare && t.decide_gain_pct < 0) t.decide_gain_pct = r->min_gain_pct;
  if (t.seed == 0 || t.seed == 1) t.seed = kl__derive_seed(base_seed, 1000);
  t.version = KL_TIME_OPTIONS_VERSION;
  t.verify = 1; /* the stale_outputs gate */
  t.oracle = oracle;
  if (r->verdict == KL_VERDICT_OK) {
    phase(o, "timing");
    kl__gpu_idle_read(r, w, false);
  }
  for (size_t i = 0; i < r->nshapes && r->verdict == KL_VERDICT_OK; i++) {
    int shape = only >= 0 ? only : (int)i;
    int ids[2] = {reference_side, cand_id};
    const int *timed = compare ? ids : &subject;
    size_t ntimed = compare ? 2 : 1;
    bool both = r->launch == KL_LAUNCH_BOTH; /* the stream's time decides */
    rc = time_shape(r, w, timed, ntimed, shape, &t, &r->shapes[i],
                    both ? KL_LAUNCH_STREAM : r->launch);
    if (rc == 0 && both && r->verdict == KL_VERDICT_OK)
      rc = time_shape(r, w, timed, ntimed, shape, &t, &r->shapes[i],
                      KL_LAUNCH_GRAPH);
    if (rc < 0) goto done;
  }
  if (r->verdict == KL_VERDICT_OK) kl__gpu_idle_read(r, w, true);
  ph->timing = lap(&mark);
  ph->sampling = 0;
  for (size_t i = 0; i < r->nshapes; i++)
    if (r->shapes[i].res.wall_ms > 0) ph->sampling += r->shapes[i].res.wall_ms;
  if (cand && r->verdict == KL_VERDICT_OK) {
    phase(o, "gates");
    if ((rc = kl__bench_roofline_gate(r, c, w, t.cold)) < 0) goto done;
    ph->gates = lap(&mark);
  }
  for (size_t i = 0; replies && i < r->nshapes && r->verdict == KL_VERDICT_OK;
       i++) {
    int shape = only >= 0 ? only : (int)i;
    if ((rc = profile_build(replies[i], c, shape, o->profile, prof_ms[i],
                            &r->shapes[i])) < 0)
      goto done;
  }
  if (replies) ph->profile = profiled + lap(&mark);
  if (compare && r->verdict == KL_VERDICT_OK) rc = objective(r, c);
  /* what the Python worker saw of the calls: warm-up, allocations */
  if (rc == 0 && kl_case_backend(c) == KL_BACKEND_PYTHON) {
    if ((compare || !cand) &&
        kl__worker_notes(&r->notes_baseline, w, reference_side) < 0)
      kl_error_clear();
    if (cand && kl__worker_notes(&r->notes_candidate, w, cand_id) < 0)
      kl_error_clear();
  }
done:
  ph->total = kl__now_ms() - started;
  for (size_t i = 0; replies && i < r->nshapes; i++)
    json_object_put(replies[i]);
  kl__free(replies);
  kl__free(prof_ms);
  kl__profile_names_free(pnames, npnames);
  if (w) r->worker_restarts = kl_worker_restarts(w) - restarts_before;
  if (!keep) {
    kl_worker_free(w);
  } else if (!keep->once) { /* kept after a clean evaluation, its pool let go
                             * (a bench of its own: kl__bench_in ends it) */
    bool clean =
        rc == 0 && r->verdict == KL_VERDICT_OK && r->worker_restarts == 0;
    if (clean && kl__worker_release(w) < 0) {
      clean = false; /* a worker that cannot let go is not kept */
      kl_error_clear();
    }
    if (w) {
      kl__worker_pool(w, false);
      kl__worker_keep_oracle(w, -1);
    }
    kl__kept_worker_after(keep, clean);
  }
  if (rc < 0) {
    kl_report_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* Whether the compile cache's folder exists. A worker started before it
 * does cannot be given it (its sandbox grants folders that exist when it
 * starts), and would be started again at the first load. */
static bool cache_exists(const kl_bench_options *o) {
  kl_buf dir = KL_BUF_INIT;
  bool there = kl_compile_cache_dir(&dir, o->compile) == 0 && dir.ptr &&
               kl__is_dir(dir.ptr);
  kl_buf_dispose(&dir);
  kl_error_clear();
  return there;
}

/* Build here, then execute here (in keep's worker, if given). */
int kl__bench_in(kl_report **out, const kl_case *c,
                 const kl_bench_options *given, bool compare,
                 kl__kept_worker *keep) {
  *out = NULL;
  kl_bench_options o;
  int rc = kl__bench_options_take(&o, given);
  if (rc < 0) return rc;
  if (kl_case_backend(c) == KL_BACKEND_COMMAND)
    return kl__command_bench(out, c, &o, compare);
  kl__bench_plugins p;
  double t0 = kl__now_ms();
  /* A bench of its own starts its worker before it builds, and the worker
   * makes the device's context while the build runs: a candidate's first
   * compile takes seconds, the context about 0.15 s. (A Python case
   * builds nothing.) */
  kl__kept_worker own;
  memset(&own, 0, sizeof(own));
  if (!keep && kl_case_backend(c) != KL_BACKEND_PYTHON && cache_exists(&o)) {
    kl_worker_options wopts = KL_WORKER_OPTIONS_INIT;
    wopts.worker_path = o.worker_path;
    wopts.timeout_ms = o.timeout_ms;
    wopts.device = worker_device(c, &o);
    own.once = true;
    kl__kept_worker_start(&own, &wopts);
    keep = &own;
  }
  phase(&o, "build");
  rc = kl__bench_build(&p, out, c, &o, compare);
  double built = kl__now_ms() - t0;
  if (rc == 0 && !*out) rc = kl__bench_execute(out, c, &o, compare, &p, keep);
  kl__kept_worker_end(&own);
  if (rc == 0 && *out) { /* the build's own time, and the whole */
    (*out)->phases.build = built;
    (*out)->phases.total = kl__now_ms() - t0;
  }
  kl__bench_plugins_dispose(&p);
  return rc;
}

int kl_bench_run(kl_report **out, const kl_case *c,
                 const kl_bench_options *opts) {
  return kl__bench_in(out, c, opts, false, NULL);
}

int kl_bench_compare(kl_report **out, const kl_case *c,
                     const kl_bench_options *opts) {
  return kl__bench_in(out, c, opts, true, NULL);
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t bench_options_sizes[] = {
    0,
    offsetof(kl_bench_options, against),
    offsetof(kl_bench_options, on_phase),
    offsetof(kl_bench_options, check_seed),
    offsetof(kl_bench_options, checks_only),
    offsetof(kl_bench_options, launch),
    sizeof(kl_bench_options)};

KL__OPTIONS_FUNCTIONS(kl_bench_options, kl_bench_options_init,
                      kl__bench_options_take, KL_BENCH_OPTIONS_INIT,
                      bench_options_sizes)
