/* kl bench and kl compare of a `backend: command` case: the case's own
 * benchmark program is the measurement.
 *
 * A candidate is a file: the case's kernel.source for the baseline, else
 * the candidate's text written to a private folder under the same name.
 * `{candidate}` in the command's (and build's) argv becomes its path, and
 * KL_CANDIDATE names it in the environment, with each tunable setting
 * (NAME=VALUE) beside it. Both run in the worker's sandbox (core/sandbox.h:
 * the candidate may be code the command runs, and model-written code gets
 * no secret and no network): an allow-listed environment, no network, the
 * case folder readable, the private folder as HOME and TMPDIR. The build
 * runs once per candidate; then every
 * run of the command (no shell, in the case folder, within its timeout)
 * must exit 0 and print a JSON object last on stdout holding every metric
 * as a finite number. A build that fails is COMPILE_ERROR, a run that
 * fails CRASHED, one past its time TIMEOUT, output without the metrics
 * INVALID_OUTPUT, each with the output's tail.
 *
 * Each metric is a row of the report. bench: a warm-up run, then runs
 * until every metric's median is known to target_rel_ci (at least
 * min_samples runs), or the runs or the case's time cap run out. compare:
 * rounds of A B B A, each metric's improvement ratio (baseline over candidate
 * for `better: lower`, candidate over baseline for `higher`) with the same
 * interval and decision as kernel times, stopping once every metric is
 * decided (or known to target_rel_ci) at min_samples pairs; the objective
 * is the metrics' weighted geometric mean. */
#define _GNU_SOURCE /* realpath */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../case/case_view.h"
#include "../core/json.h"
#include "../worker/client_internal.h"
#include "../core/sandbox.h"
#include "bench_internal.h"
#include "kernlab/time_request.h"

#define TAIL 600 /* bytes of output kept in a verdict's reason */

typedef struct side {
  char *path;     /* the candidate file */
  double *values; /* [metric][run], cap runs per metric */
} side;

typedef struct cmd_run {
  kl__case_command k; /* the case's command, build and metrics */
  const kl_bench_options *o;
  kl_report *r;
  char *dir;      /* private folder: candidate files */
  char *case_dir; /* the case's folder, absolute: the command's cwd */
  size_t cap, runs;
  side sides[2]; /* 0: the baseline (or the benched file), 1: the candidate */
  const char *const *config[2]; /* each side's tunable settings */
} cmd_run;

static int reject(kl_report *r, kl_verdict v, const char *what,
                  const kl_buf *out) {
  kl_buf b = KL_BUF_INIT;
  const char *text = out && out->ptr ? out->ptr : "";
  size_t n = strlen(text);
  kl__buf_printf(&b, "%s", what);
  if (n)
    kl__buf_printf(&b, "; output%s: %s", n > TAIL ? " (tail)" : "",
                   text + (n > TAIL ? n - TAIL : 0));
  int rc = kl__buf_status(&b);
  if (rc < 0) return rc;
  r->verdict = v;
  kl__free(r->reason);
  r->reason = kl__buf_detach(&b);
  return 0;
}

/* argv with every "{candidate}" replaced by path, and an argument "{kl}"
 * (a serving case's command) by the kl program. */
static char **substitute(char *const *argv, size_t n, const char *path) {
  char **out = kl__calloc(n + 1, sizeof(char *));
  for (size_t i = 0; out && i < n; i++) {
    if (strcmp(argv[i], "{kl}") == 0 && (out[i] = kl__find_kl())) continue;
    kl_buf b = KL_BUF_INIT;
    const char *s = argv[i], *hit;
    while ((hit = strstr(s, "{candidate}"))) {
      kl__buf_put(&b, s, (size_t)(hit - s));
      kl__buf_puts(&b, path);
      s = hit + strlen("{candidate}");
    }
    kl__buf_puts(&b, s);
    if (kl__buf_status(&b) < 0 || !(out[i] = kl__buf_detach(&b))) {
      for (size_t j = 0; j < i; j++)
        kl__free(out[j]);
      kl__free(out);
      return NULL;
    }
  }
  return out;
}

static void argv_free(char **argv) {
  for (size_t i = 0; argv && argv[i]; i++)
    kl__free(argv[i]);
  kl__free(argv);
}

/* KL_CANDIDATE=path and the tunable settings, NULL-ended. */
static char **environment(const char *path, const char *const *config) {
  size_t n = 0;
  while (config && config[n])
    n++;
  char **env = kl__calloc(n + 2, sizeof(char *));
  if (!env) return NULL;
  kl_buf b = KL_BUF_INIT;
  kl__buf_printf(&b, "KL_CANDIDATE=%s", path);
  if (kl__buf_status(&b) < 0 || !(env[0] = kl__buf_detach(&b))) {
    kl__free(env);
    return NULL;
  }
  for (size_t i = 0; i < n; i++)
    if (!(env[i + 1] = kl__strdup(config[i]))) {
      argv_free(env);
      return NULL;
    }
  return env;
}

/* Run argv for side s; 0 with the verdict set on failure. *doc: the last
 * JSON object on stdout (parse_output only). */
static int run_program(cmd_run *cr, char *const *argv, size_t n, int s,
                       const char *const *config, const char *what,
                       kl_verdict on_fail, json_object **doc) {
  char **args = substitute(argv, n, cr->sides[s].path);
  char **env = environment(cr->sides[s].path, config);
  if (!args || !env) {
    argv_free(args);
    argv_free(env);
    return kl__error_oom();
  }
  kl__run_result res;
  memset(&res, 0, sizeof res);
  kl_buf err = KL_BUF_INIT;
  /* the candidate may be code the command runs: the worker's sandbox
   * (an allow-listed environment, no network or a loopback of its own, the
   * case folder read-only, the private folder as HOME and TMPDIR) */
  const char *readable[] = {cr->case_dir, NULL};
  kl__sandbox_spec spec = {.dir = cr->dir,
                           .readable = readable,
                           .env = (const char *const *)env,
                           .loopback = cr->k.loopback};
  kl__sandbox sb;
  int rc = kl__sandbox_prepare(&sb, &spec);
  if (rc < 0) {
    argv_free(args);
    argv_free(env);
    return rc;
  }
  kl__run_extras io = {.errors = doc ? &err : NULL, .sandbox = &sb};
  int timeout = (int)(cr->k.timeout_s * 1000);
  rc = kl__run_io(&res, (const char *const *)args, cr->case_dir,
                  timeout > 0 ? timeout : 1, 4u << 20, &io);
  kl__sandbox_dispose(&sb);
  char line[512];
  if (rc == KL_ENOTFOUND) {
    kl_error_clear();
    snprintf(line, sizeof line, "%s: cannot run '%s'", what, args[0]);
    rc = reject(cr->r, on_fail, line, NULL);
  } else if (rc == 0 && res.timed_out) {
    snprintf(line, sizeof line, "%s: still running after %.0f s", what,
             cr->k.timeout_s);
    rc = reject(cr->r, KL_VERDICT_TIMEOUT, line, doc ? &err : &res.output);
  } else if (rc == 0 && (res.exit_code != 0 || res.signal)) {
    if (res.signal)
      snprintf(line, sizeof line, "%s: killed by signal %d", what, res.signal);
    else
      snprintf(line, sizeof line, "%s: exit status %d", what, res.exit_code);
    bool build = on_fail == KL_VERDICT_COMPILE_ERROR;
    if (build && res.output.ptr) { /* the build's log, shown as a compiler's */
      kl__free(cr->r->compile_log);
      cr->r->compile_log = kl__strdup(res.output.ptr);
    }
    rc = reject(cr->r, on_fail, line,
                build             ? NULL
                : doc && err.size ? &err
                                  : &res.output);
  } else if (rc == 0 && doc) {
    *doc = kl__json_last_object(res.output.ptr ? res.output.ptr : "");
    if (!*doc)
      rc = reject(cr->r, KL_VERDICT_INVALID_OUTPUT,
                  "the command printed no JSON object last on stdout",
                  &res.output);
  }
  kl_buf_dispose(&res.output);
  kl_buf_dispose(&err);
  argv_free(args);
  argv_free(env);
  return rc;
}

/* One run of side s: its metrics appended, or a verdict. */
static int measure(cmd_run *cr, int s, const char *const *config, bool keep) {
  const kl__case_command *k = &cr->k;
  json_object *doc = NULL;
  int rc = run_program(cr, k->command, k->ncommand, s, config, "the command",
                       KL_VERDICT_CRASHED, &doc);
  if (rc < 0 || !doc) return rc;
  double v[64];
  for (size_t m = 0; m < k->nmetrics; m++) {
    json_object *x = kl__json_path(doc, k->metrics[m].name);
    v[m] = x && (json_object_is_type(x, json_type_double) ||
                 json_object_is_type(x, json_type_int))
               ? json_object_get_double(x)
               : NAN;
    bool usable = isfinite(v[m]) && (!k->metrics[m].higher || v[m] > 0) &&
                  (k->metrics[m].higher || v[m] >= 0);
    if (!usable) {
      char line[300];
      snprintf(line, sizeof line,
               "metric '%s' is %s in the command's JSON (a finite number%s "
               "is needed)",
               k->metrics[m].name, x ? json_object_to_json_string(x) : "absent",
               k->metrics[m].higher ? " above 0" : " from 0");
      json_object_put(doc);
      return reject(cr->r, KL_VERDICT_INVALID_OUTPUT, line, NULL);
    }
  }
  json_object_put(doc);
  if (!keep) return 0;
  for (size_t m = 0; m < k->nmetrics; m++)
    cr->sides[s].values[m * cr->cap + cr->runs] = v[m];
  return 0;
}

/* Time-like samples of metric m of side s (lower is better): the values,
 * or their reciprocals for a metric where higher is better. */
static void timelike(double *out, const cmd_run *cr, int s, size_t m) {
  const double *x = cr->sides[s].values + m * cr->cap;
  for (size_t i = 0; i < cr->runs; i++)
    out[i] = cr->k.metrics[m].higher ? 1.0 / x[i] : x[i];
}

/* Summaries (and, comparing, decisions) of every metric; *done when each
 * metric is decided or known to the target. */
static int summarize(cmd_run *cr, bool compare, bool *done) {
  const kl_time_options *t = &cr->o->time;
  double target =
      t->target_rel_ci > 0 ? t->target_rel_ci : KL_TIME_DEFAULT_TARGET_REL_CI;
  double *a = kl__calloc(cr->runs ? cr->runs : 1, sizeof *a);
  double *b = kl__calloc(cr->runs ? cr->runs : 1, sizeof *b);
  if (!a || !b) {
    kl__free(a);
    kl__free(b);
    return kl__error_oom();
  }
  int rc = 0;
  *done = true;
  for (size_t m = 0; rc == 0 && m < cr->k.nmetrics; m++) {
    kl_shape_result *res = &cr->r->shapes[m].res;
    int subject = compare ? 1 : 0;
    rc = kl_stats_summarize(&res->time, cr->sides[subject].values + m * cr->cap,
                            cr->runs);
    res->timed = cr->runs > 0;
    if (rc == 0 && compare) {
      rc = kl_stats_summarize(&res->baseline, cr->sides[0].values + m * cr->cap,
                              cr->runs);
      timelike(a, cr, 0, m);
      timelike(b, cr, 1, m);
      if (rc == 0)
        rc = kl_stats_speedup(&res->speedup, a, b, cr->runs,
                              cr->r->min_gain_pct);
      double half = (log(res->speedup.ci_high) - log(res->speedup.ci_low)) / 2;
      if (res->speedup.decision == KL_DECISION_SAME && !(half <= target))
        *done = false;
    } else if (rc == 0 && !(res->time.rel_ci <= target)) {
      *done = false;
    }
  }
  kl__free(a);
  kl__free(b);
  return rc;
}

static int objective(kl_report *r, const kl__case_command *k) {
  kl_speedup sp[64];
  double w[64];
  for (size_t m = 0; m < k->nmetrics; m++) {
    sp[m] = r->shapes[m].res.speedup;
    w[m] = k->metrics[m].weight;
  }
  int rc = kl_stats_geomean(&r->objective_speedup, sp, w, k->nmetrics,
                            r->min_gain_pct);
  if (rc == 0) r->has_objective = true;
  return rc;
}

/* The candidate's text as a file named like the baseline's, in dir. */
static int write_candidate(char **path, const char *dir, const char *name,
                           const char *text) {
  const char *base = strrchr(name, '/');
  *path = kl__path_join(dir, base ? base + 1 : name);
  if (!*path) return kl__error_oom();
  return kl__write_file_atomic(*path, text, strlen(text));
}

static int sample(cmd_run *cr, bool compare) {
  const kl_bench_options *o = cr->o;
  const kl_time_options *t = &o->time;
  size_t min = t->min_samples ? t->min_samples : KL_TIME_DEFAULT_MIN_SAMPLES;
  if (min < 3) min = 3;
  /* the case's own cap: a kernel timer's (2 s) is no measure of a
   * program that runs for seconds */
  double cap_ms = cr->k.time_cap_s * 1000;
  const char *const *const *cfg = cr->config;
  kl_report *r = cr->r;
  /* a warm-up run of each side: caches, JIT, a server's first request */
  for (int s = 0; s < (compare ? 2 : 1) && r->verdict == KL_VERDICT_OK; s++) {
    int rc = measure(cr, s, cfg[s], false);
    if (rc < 0) return rc;
  }
  const char *why = "max_samples";
  double t0 = kl__now_ms();
  while (r->verdict == KL_VERDICT_OK && cr->runs < cr->cap) {
    /* A B B A: drift between runs falls on both sides alike */
    int order[2] = {0, 1};
    if (compare && cr->runs % 2) order[0] = 1, order[1] = 0;
    for (int k = 0; k < (compare ? 2 : 1) && r->verdict == KL_VERDICT_OK; k++) {
      int rc = measure(cr, compare ? order[k] : 0, cfg[compare ? order[k] : 0],
                       true);
      if (rc < 0) return rc;
    }
    if (r->verdict != KL_VERDICT_OK) break;
    cr->runs++;
    bool done = false;
    int rc = summarize(cr, compare, &done);
    if (rc < 0) return rc;
    if (cr->runs >= min && done) {
      why = compare ? "decided" : "converged";
      break;
    }
    if (kl__now_ms() - t0 >= cap_ms && cr->runs >= 3) {
      why = "time_cap";
      break;
    }
  }
  double wall = kl__now_ms() - t0;
  for (size_t m = 0; m < cr->k.nmetrics; m++) {
    snprintf(r->shapes[m].stop_reason, sizeof r->shapes[m].stop_reason, "%s",
             why);
    r->shapes[m].res.stop_reason = r->shapes[m].stop_reason;
    r->shapes[m].res.wall_ms = wall;
  }
  r->phases.sampling = wall;
  return 0;
}

int kl__command_bench(kl_report **out, const kl_case *c,
                      const kl_bench_options *o, bool compare) {
  *out = NULL;
  if (compare && !o->candidate && !o->candidate_config)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "compare needs a candidate (a file or a configuration)");
  if (o->shape)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                     "case '%s' runs a command: it has no shapes",
                     kl_case_name(c));
  if (o->profile)
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_NONE,
                     "case '%s' runs a command: kernlab has no kernel of it "
                     "to profile",
                     kl_case_name(c));
  kl__case_command k;
  kl__case_command_of(&k, c);
  double started = kl__now_ms();
  kl_report *r = kl__calloc(1, sizeof(*r));
  if (!r) return kl__error_oom();
  const kl__report_phases none = KL__REPORT_PHASES_NONE;
  r->phases = none;
  r->command = true;
  r->compare = compare;
  r->min_gain_pct = kl__case_budget(c)->min_gain_pct;
  r->objective = KL_OBJECTIVE_GEOMEAN_SPEEDUP;
  r->case_name = kl__strdup(kl_case_name(c));
  r->candidate_name = kl__strdup(o->candidate_name ? o->candidate_name
                                 : o->candidate    ? "candidate"
                                                   : "baseline");
  r->nshapes = k.nmetrics;
  r->shapes = kl__calloc(k.nmetrics, sizeof(*r->shapes));
  snprintf(r->timer, sizeof r->timer, "command");
  cmd_run cr = {.k = k,
                .o = o,
                .r = r,
                .config = {compare ? o->against_config : o->candidate_config,
                           o->candidate_config}};
  size_t max =
      o->time.max_samples ? o->time.max_samples : KL_TIME_DEFAULT_MAX_SAMPLES;
  cr.cap = max > 10000 ? 10000 : max;
  int rc = r->case_name && r->candidate_name && r->shapes ? 0 : kl__error_oom();
  for (size_t m = 0; rc == 0 && m < k.nmetrics; m++) {
    if (!(r->shapes[m].name = kl__strdup(k.metrics[m].name))) rc = KL_ENOMEM;
    r->shapes[m].res.name = r->shapes[m].name;
    r->shapes[m].better = k.metrics[m].higher ? "higher" : "lower";
  }
  for (int s = 0; rc == 0 && s < 2; s++)
    if (!(cr.sides[s].values = kl__calloc(k.nmetrics * cr.cap, sizeof(double))))
      rc = kl__error_oom();
  if (rc < 0) goto done;
  if ((rc = kl__sandbox_dir_named(&cr.dir, "command")) < 0) goto done;
  /* the child enters its private folder first: a case given by a relative
   * path is named absolutely */
  if (!(cr.case_dir = realpath(kl_case_dir(c), NULL))) {
    rc = kl__error_os(KL_ENOTFOUND, kl_case_dir(c), "cannot read");
    goto done;
  }
  /* side 0: the baseline (or, compared, what the candidate is against);
   * side 1: the candidate. A bench measures side 0: the candidate, if any,
   * else the baseline. */
  const char *text0 = compare ? o->against : o->candidate;
  char sub[2][16] = {"base", "candidate"};
  for (int s = 0; rc == 0 && s < (compare ? 2 : 1); s++) {
    const char *text = s == 0 ? text0 : o->candidate;
    if (!text) { /* the case's own file, by a path the command can use */
      cr.sides[s].path = realpath(kl_case_kernel_path(c), NULL);
      if (!cr.sides[s].path)
        rc = kl__error_os(KL_ENOTFOUND, kl_case_kernel_path(c), "cannot read");
      continue;
    }
    char *d = kl__path_join(cr.dir, sub[s]);
    rc = d ? (mkdir(d, 0700) == 0 ? 0 : kl__error_os(KL_EIO, d, "mkdir"))
           : kl__error_oom();
    if (rc == 0)
      rc = write_candidate(&cr.sides[s].path, d, kl_case_kernel_path(c), text);
    kl__free(d);
  }
  if (rc < 0) goto done;
  r->phases.worker = 0;
  r->phases.load = 0;
  r->phases.checks = 0;
  if (o->on_phase) o->on_phase("build", o->phase_payload);
  double b0 = kl__now_ms();
  for (int s = 0;
       cr.k.build && s < (compare ? 2 : 1) && r->verdict == KL_VERDICT_OK; s++)
    if ((rc = run_program(&cr, cr.k.build, cr.k.nbuild, s, cr.config[s],
                          "the build", KL_VERDICT_COMPILE_ERROR, NULL)) < 0)
      goto done;
  r->phases.build = kl__now_ms() - b0;
  r->compile_seconds = r->phases.build / 1e3;
  if (r->verdict == KL_VERDICT_OK) {
    if (o->on_phase) o->on_phase("timing", o->phase_payload);
    double t0 = kl__now_ms();
    if ((rc = sample(&cr, compare)) < 0) goto done;
    r->phases.timing = kl__now_ms() - t0;
  }
  if (compare && r->verdict == KL_VERDICT_OK && cr.runs)
    rc = objective(r, &cr.k);
done:
  r->phases.total = kl__now_ms() - started;
  for (int s = 0; s < 2; s++) {
    kl__free(cr.sides[s].path);
    kl__free(cr.sides[s].values);
  }
  if (cr.dir) {
    kl__sandbox_dir_remove(cr.dir); /* and whatever a build left there */
    kl__free(cr.dir);
  }
  kl__free(cr.case_dir);
  if (rc < 0) {
    kl_report_free(r);
    return rc;
  }
  *out = r;
  return 0;
}
