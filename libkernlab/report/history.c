/* A case's runs, and one run gathered from its records for the report.
 *
 * solutions.jsonl is the truth: an iteration exists once its line is
 * there. Around it: runs/<id>/run.json (how the run was started),
 * summary.json (how its last session ended; absent when it was killed),
 * and, for the baseline and the best, their report.json (per-shape times),
 * profile.json (peaks and bottlenecks) and rules.json (findings). The
 * per-shape speedup of a best that is several acceptances away from the
 * baseline is chained along its parents, as the run's own best_speedup
 * is: per-shape speedups multiplied, log-scale half-widths combined as
 * independent errors. */
#define _GNU_SOURCE
#include <stddef.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/json.h"
#include "../records/records.h"
#include "kernlab/profile.h"
#include "report_internal.h"

/* ---- small JSON readers ----------------------------------------------------
 */

static int dup_or_null(char **dst, const char *s) {
  *dst = NULL;
  if (s && !(*dst = kl__strdup(s))) return kl__error_oom();
  return 0;
}

/* ---- kl history ------------------------------------------------------------
 */

typedef struct run_row {
  char *id;
  double started;
  char *proposer, *stop_reason;
  int iterations, counts[KL_OUTCOME_COUNT];
  double best, best_lo, best_hi, wall_s, worker_s, usd;
} run_row;

typedef struct rows {
  run_row *v;
  size_t n, cap;
} rows;

static run_row *row_find(rows *rs, const char *id) {
  for (size_t i = 0; id && i < rs->n; i++)
    if (strcmp(rs->v[i].id, id) == 0) return &rs->v[i];
  return NULL;
}

static int row_add(rows *rs, const char *id) {
  if (KL__GROW(rs->v, rs->cap, rs->n + 1) < 0) return KL_ENOMEM;
  run_row *r = &rs->v[rs->n];
  memset(r, 0, sizeof(*r));
  r->best = r->best_lo = r->best_hi = 1;
  if (!(r->id = kl__strdup(id))) return kl__error_oom();
  rs->n++;
  return 0;
}

static int history_line(const kl__solution *s, int line, void *payload) {
  (void)line;
  rows *rs = payload;
  run_row *r = row_find(rs, s->run);
  if (!r) {
    if (!s->run) return 0;
    int rc = row_add(rs, s->run);
    if (rc < 0) return rc;
    r = &rs->v[rs->n - 1];
  }
  if (s->iteration > 0) r->iterations++;
  r->counts[s->outcome]++;
  if (s->outcome == KL_OUTCOME_ACCEPTED && s->has_vs_baseline &&
      s->vs_baseline.speedup > r->best) {
    r->best = s->vs_baseline.speedup;
    r->best_lo = s->vs_baseline.ci_low;
    r->best_hi = s->vs_baseline.ci_high;
  }
  r->wall_s += s->cost.wall_s;
  r->worker_s += s->cost.worker_s;
  r->usd += s->cost.usd;
  return 0;
}

static void rows_dispose(rows *rs) {
  for (size_t i = 0; i < rs->n; i++) {
    kl__free(rs->v[i].id);
    kl__free(rs->v[i].proposer);
    kl__free(rs->v[i].stop_reason);
  }
  kl__free(rs->v);
}

/* How a run was started (run.json, absent for a run older than it) and
 * how its last session ended (summary.json, absent when it was killed). */
typedef struct run_files {
  double started;
  char *proposer, *strategy;
} run_files;

static int take_meta(const kl__run_meta *m, void *payload) {
  run_files *f = payload;
  f->started = (double)m->started;
  if ((m->proposer && !(f->proposer = kl__strdup(m->proposer))) ||
      (m->strategy && !(f->strategy = kl__strdup(m->strategy))))
    return kl__error_oom();
  return 0;
}

static int read_run_files(run_files *f, const char *run_dir) {
  memset(f, 0, sizeof(*f));
  int rc = kl__run_meta_read(run_dir, take_meta, f);
  if (rc == KL_ENOTFOUND) { /* a run older than run.json */
    kl_error_clear();
    rc = 0;
  }
  return rc;
}

/* One run's start and how its last session stopped. */
static int row_files(run_row *r, const kl_case *c) {
  char *dir = NULL, *webhook = NULL;
  run_files f;
  memset(&f, 0, sizeof(f));
  int rc;
  if ((rc = kl__run_dir(&dir, kl_case_dir(c), r->id)) < 0 ||
      (rc = read_run_files(&f, dir)) < 0 ||
      (rc = kl__summary_read(dir, &r->stop_reason, &webhook, NULL)) < 0)
    goto done;
  r->started = f.started;
  r->proposer = f.proposer;
  f.proposer = NULL;
done:
  kl__free(f.proposer);
  kl__free(f.strategy);
  kl__free(webhook);
  kl__free(dir);
  return rc;
}

/* Every run: the folders under runs/ and the runs solutions.jsonl names. */
static int gather_rows(rows *rs, const kl_case *c) {
  char **names = NULL;
  size_t n = 0;
  int rc = kl__runs_list(&names, &n, kl_case_dir(c));
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = row_add(rs, names[i]);
  kl__names_free(names, n);
  if (rc < 0 || (rc = kl__solutions_read(kl_case_dir(c), history_line, rs)) < 0)
    return rc;
  for (size_t i = 0; i < rs->n; i++)
    if ((rc = row_files(&rs->v[i], c)) < 0) return rc;
  return 0;
}

static void time_text(char *out, size_t n, double t) {
  time_t tt = (time_t)t;
  struct tm tm;
  if (t <= 0 || !gmtime_r(&tt, &tm) ||
      strftime(out, n, "%Y-%m-%d %H:%M:%SZ", &tm) == 0)
    snprintf(out, n, "-");
}

int kl_history(kl_buf *out, const kl_case *c, const char *format) {
  bool json = format && strcmp(format, "json") == 0;
  if (!out || !c || (format && !json && strcmp(format, "text") != 0))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_history: format is \"text\" or \"json\"");
  rows rs = {0};
  kl_buf b = KL_BUF_INIT;
  int rc = gather_rows(&rs, c);
  if (rc < 0) goto done;
  if (json) {
    kl__buf_puts(&b, "{\"case\":");
    kl__buf_json_string(&b, kl_case_name(c));
    kl__buf_puts(&b, ",\"runs\":[");
    for (size_t i = 0; i < rs.n; i++) {
      const run_row *r = &rs.v[i];
      kl__buf_puts(&b, i ? ",{\"run\":" : "{\"run\":");
      kl__buf_json_string(&b, r->id);
      kl__buf_printf(&b, ",\"started\":%.0f,\"proposer\":", r->started);
      kl__buf_json_string(&b, r->proposer);
      kl__buf_printf(&b, ",\"iterations\":%d,\"verdicts\":{", r->iterations);
      for (int v = 1; v < KL_OUTCOME_COUNT; v++)
        kl__buf_printf(&b, "%s\"%s\":%d", v > 1 ? "," : "",
                       kl_outcome_name((kl_outcome)v), r->counts[v]);
      kl__buf_printf(&b,
                     "},\"best_speedup\":{\"speedup\":%.6g,\"ci\":[%.6g,"
                     "%.6g]},\"wall_s\":%.3f,\"worker_s\":%.3f,"
                     "\"usd\":%.6f,\"stop_reason\":",
                     r->best, r->best_lo, r->best_hi, r->wall_s, r->worker_s,
                     r->usd);
      kl__buf_json_string(&b, r->stop_reason);
      kl__buf_putc(&b, '}');
    }
    kl__buf_puts(&b, "]}\n");
  } else {
    kl__buf_printf(&b, "%-22s %-20s %-8s %5s %4s %-24s %9s %-12s\n", "run",
                   "started", "proposer", "iters", "acc", "best vs baseline",
                   "worker s", "stopped");
    for (size_t i = 0; i < rs.n; i++) {
      const run_row *r = &rs.v[i];
      char when[32], best[64];
      time_text(when, sizeof(when), r->started);
      snprintf(best, sizeof(best), "x%.3f [%.3f, %.3f]", r->best, r->best_lo,
               r->best_hi);
      kl__buf_printf(&b, "%-22s %-20s %-8s %5d %4d %-24s %9.1f %-12s\n", r->id,
                     when, r->proposer ? r->proposer : "-", r->iterations,
                     r->counts[1], best, r->worker_s,
                     r->stop_reason ? r->stop_reason
                     : r->counts[0] ? "(no summary)"
                                    : "(no baseline)");
    }
    if (rs.n == 0) kl__buf_puts(&b, "(no runs yet)\n");
  }
  if ((rc = kl__buf_status(&b)) == 0) kl__buf_give(out, &b);
done:
  rows_dispose(&rs);
  kl_buf_dispose(&b);
  return rc;
}

/* ---- one run ----------------------------------------------------------------
 */

typedef struct collect {
  rp_run *run;
  int rc;
} collect;

static int iter_line(const kl__solution *s, int line, void *payload) {
  (void)line;
  collect *cl = payload;
  rp_run *run = cl->run;
  if (!s->run || strcmp(s->run, run->id) != 0) return 0;
  if (KL__GROW(run->iters, run->cap_iters, run->niters + 1) < 0)
    return KL_ENOMEM;
  rp_iter *it = &run->iters[run->niters++];
  memset(it, 0, sizeof(*it));
  it->iteration = s->iteration >= 0 ? s->iteration : (int)run->niters - 1;
  int rc = dup_or_null(&it->id, s->id);
  rc = rc ? rc : dup_or_null(&it->parent, s->parent);
  rc = rc ? rc : dup_or_null(&it->proposer, s->proposer);
  rc = rc ? rc : dup_or_null(&it->verdict, kl_outcome_name(s->outcome));
  rc = rc ? rc : dup_or_null(&it->reason, s->reason);
  rc = rc ? rc : dup_or_null(&it->gate, s->gate);
  rc = rc ? rc : dup_or_null(&it->memo, s->memo);
  rc = rc ? rc : dup_or_null(&it->dir, s->dir);
  if (rc < 0) return rc;
  if (s->config && s->config[0] &&
      !(it->config = kl__strv_join(s->config, " ")))
    return kl__error_oom();
  it->timed = s->timed;
  it->speedup = s->vs_parent.speedup;
  it->lo = s->vs_parent.ci_low;
  it->hi = s->vs_parent.ci_high;
  if (s->has_vs_baseline) {
    it->has_vs_base = true;
    it->vs_base = s->vs_baseline.speedup;
    it->vb_lo = s->vs_baseline.ci_low;
    it->vb_hi = s->vs_baseline.ci_high;
    if ((rc = dup_or_null(&it->vb_method, s->method)) < 0) return rc;
  }
  if ((s->outcome == KL_OUTCOME_ACCEPTED ||
       s->outcome == KL_OUTCOME_BASELINE) &&
      (rc = kl__rp_measurement_text(&it->how, s->measurement)) < 0)
    return rc;
  it->has_log = s->timed || s->iteration == 0;
  it->log_vs_base = s->iteration == 0 ? 0 : s->log_vs_baseline;
  it->wall_s = s->cost.wall_s;
  it->worker_s = s->cost.worker_s;
  it->usd = s->cost.usd;
  it->tokens_in = (double)s->cost.tokens_in;
  it->tokens_out = (double)s->cost.tokens_out;
  int v = (int)s->outcome;
  run->counts[v]++;
  if (v == KL_OUTCOME_ACCEPTED && it->has_vs_base &&
      (run->best < 0 || it->vs_base > run->iters[run->best].vs_base))
    run->best = (int)run->niters - 1;
  if (v == KL_OUTCOME_BASELINE && run->best < 0)
    run->best = (int)run->niters - 1;
  if (!run->device && s->environment) {
    json_object *env = json_tokener_parse(s->environment);
    const char *gpu = kl__json_text(env, "gpu");
    const char *host = kl__json_text(env, "host");
    rc = dup_or_null(&run->device, gpu ? gpu : host);
    json_object_put(env);
    if (rc < 0) return rc;
  }
  return 0;
}

static rp_iter *iter_by_id(rp_run *run, const char *id) {
  for (size_t i = 0; id && i < run->niters; i++)
    if (run->iters[i].id && strcmp(run->iters[i].id, id) == 0)
      return &run->iters[i];
  return NULL;
}

/* A file of an iteration's folder, parsed (NULL when absent). */
static int iter_json(json_object **out, const kl_case *c, const rp_iter *it,
                     const char *name) {
  *out = NULL;
  if (!it || !it->dir) return 0;
  char *dir = kl__path_join(kl_case_dir(c), it->dir);
  int rc = dir ? kl__record_json_read(out, dir, name) : kl__error_oom();
  kl__free(dir);
  return rc;
}

static json_object *shape_of(json_object *report, const char *name) {
  json_object *shapes;
  if (!report || !json_object_object_get_ex(report, "shapes", &shapes) ||
      !json_object_is_type(shapes, json_type_array))
    return NULL;
  for (size_t i = 0; i < json_object_array_length(shapes); i++) {
    json_object *s = json_object_array_get_idx(shapes, i);
    const char *n = kl__json_text(s, "name");
    if (!n) n = kl__json_text(s, "shape");
    if (n && strcmp(n, name) == 0) return s;
  }
  return NULL;
}

/* Baseline and best times per shape, and the best's speedup over the
 * baseline, chained along the accepted parents when it is not direct. */
static int gather_shapes(rp_run *run, const kl_case *c,
                         json_object *const *chain, size_t nchain,
                         json_object *base_report) {
  /* a command case's rows are its metrics, in their own units */
  bool command = kl_case_backend(c) == KL_BACKEND_COMMAND;
  json_object *metric_rows =
      command ? kl__json_get(base_report, "shapes") : NULL;
  size_t n = !command ? kl_case_shape_count(c)
             : metric_rows && json_object_is_type(metric_rows, json_type_array)
                 ? json_object_array_length(metric_rows)
                 : 0;
  const char *med = command ? "median" : "median_us",
             *lo_key = command ? "ci_low" : "ci_low_us",
             *hi_key = command ? "ci_high" : "ci_high_us";
  if (!(run->shapes = kl__calloc(n ? n : 1, sizeof(rp_shape))))
    return kl__error_oom();
  run->nshapes = n;
  for (size_t k = 0; k < n; k++) {
    rp_shape *s = &run->shapes[k];
    json_object *row =
        command ? json_object_array_get_idx(metric_rows, k) : NULL;
    const char *name =
        command ? kl__json_text(row, "name") : kl_case_shape_name(c, k);
    if (!(s->name = kl__strdup(name ? name : "?"))) return kl__error_oom();
    if (command) {
      const char *better = kl__json_text(row, "better");
      s->better = better && strcmp(better, "higher") == 0 ? "higher" : "lower";
    } else {
      kl_case_roofline(&s->bytes, &s->flops, c, k);
    }
    json_object *b = shape_of(base_report, s->name);
    s->has_base = kl__json_number(b, med, &s->base_us) &&
                  kl__json_number(b, lo_key, &s->base_lo) &&
                  kl__json_number(b, hi_key, &s->base_hi);
    if (nchain == 0) continue;
    /* chain[0] is the best's report: its candidate times are the best's */
    json_object *top = shape_of(chain[0], s->name);
    s->has_best = kl__json_number(top, med, &s->best_us) &&
                  kl__json_number(top, lo_key, &s->best_lo) &&
                  kl__json_number(top, hi_key, &s->best_hi);
    double logsum = 0, var = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < nchain; i++) {
      json_object *sh = shape_of(chain[i], s->name);
      double sp, lo, hi;
      ok = kl__json_number(sh, "speedup", &sp) &&
           kl__json_pair(sh, "speedup_ci", &lo, &hi) && sp > 0 && lo > 0 &&
           hi > 0;
      if (ok) {
        double half = (log(hi) - log(lo)) / 2;
        logsum += log(sp);
        var += half * half;
      }
    }
    if (ok) {
      s->has_speedup = true;
      s->speedup = exp(logsum);
      s->lo = exp(logsum - sqrt(var));
      s->hi = exp(logsum + sqrt(var));
    }
  }
  return 0;
}

/* The kernels of a launch that ran several: "name 12.3 µs memory; ...". */
static char *parts_text(const kl_profile *p) {
  kl_buf b = KL_BUF_INIT;
  for (size_t i = 0; i < kl_profile_part_count(p); i++) {
    const kl_profile *k = kl_profile_part(p, i);
    double us = kl_profile_time_us(k);
    kl__buf_printf(&b, "%s%s", i ? "; " : "",
                   kl_profile_name(k) ? kl_profile_name(k) : "?");
    if (!isnan(us)) kl__buf_printf(&b, " %.2f µs", us);
    kl__buf_printf(&b, " %s", kl_bottleneck_name(kl_profile_bottleneck(k)));
  }
  return kl__buf_detach(&b);
}

/* Peaks and bottlenecks per shape from a profile.json. */
static int gather_profile(rp_run *run, json_object *profile, bool after) {
  if (!profile) return 0;
  kl_profile_list *l = NULL;
  const char *text =
      json_object_to_json_string_ext(profile, JSON_C_TO_STRING_PLAIN);
  if (!text || kl_profile_list_from_json(&l, text, "profile.json") < 0)
    return 0; /* a profile that does not read leaves the columns empty */
  for (size_t i = 0; i < kl_profile_list_count(l); i++) {
    const char *name = kl_profile_list_name(l, i);
    const kl_profile *p = kl_profile_list_get(l, i);
    for (size_t k = 0; name && k < run->nshapes; k++) {
      rp_shape *s = &run->shapes[k];
      if (strcmp(s->name, name) != 0) continue;
      double v;
      if (s->peak_gbs <= 0 && kl_profile_value(&v, p, "peak_bandwidth") == 0)
        s->peak_gbs = v;
      if (s->peak_gflops <= 0 &&
          kl_profile_value(&v, p, "peak_flops_fp32") == 0)
        s->peak_gflops = v;
      char **dst = after ? &s->bottleneck_after : &s->bottleneck_before;
      char **parts = after ? &s->kernels_after : &s->kernels_before;
      if ((!*dst && !(*dst = kl__strdup(
                          kl_bottleneck_name(kl_profile_bottleneck(p))))) ||
          (!*parts && kl_profile_part_count(p) > 0 &&
           !(*parts = parts_text(p)))) {
        kl_profile_list_free(l);
        return kl__error_oom();
      }
    }
  }
  kl_profile_list_free(l);
  return 0;
}

/* The fired rules of a rules.json, merged by id with the shapes listed.
 * A run writes [{"shape", "diagnosis": {...}}]; kl rules --json writes
 * {"shapes": [{"shape", "fired", ...}]}: both are read. */
static int gather_findings(rp_finding **out, size_t *nout, json_object *rules) {
  size_t cap = *nout; /* at least what the list holds */
  json_object *shapes = rules;
  if (rules && json_object_is_type(rules, json_type_object) &&
      !json_object_object_get_ex(rules, "shapes", &shapes))
    return 0;
  if (!shapes || !json_object_is_type(shapes, json_type_array)) return 0;
  for (size_t i = 0; i < json_object_array_length(shapes); i++) {
    json_object *sh = json_object_array_get_idx(shapes, i), *fired, *diag;
    const char *shape = kl__json_text(sh, "shape");
    if (json_object_object_get_ex(sh, "diagnosis", &diag)) sh = diag;
    if (!json_object_object_get_ex(sh, "fired", &fired) ||
        !json_object_is_type(fired, json_type_array))
      continue;
    for (size_t j = 0; j < json_object_array_length(fired); j++) {
      json_object *f = json_object_array_get_idx(fired, j);
      const char *id = kl__json_text(f, "id");
      if (!id) continue;
      rp_finding *hit = NULL;
      for (size_t k = 0; k < *nout && !hit; k++)
        if (strcmp((*out)[k].id, id) == 0) hit = &(*out)[k];
      if (!hit) {
        if (!kl__array_reserve(out, &cap, *nout + 1, sizeof(**out)))
          return kl__error_oom();
        hit = &(*out)[(*nout)++];
        memset(hit, 0, sizeof(*hit));
        int rc = dup_or_null(&hit->id, id);
        rc =
            rc ? rc : dup_or_null(&hit->severity, kl__json_text(f, "severity"));
        rc = rc ? rc : dup_or_null(&hit->finding, kl__json_text(f, "finding"));
        rc = rc ? rc : dup_or_null(&hit->action, kl__json_text(f, "action"));
        rc = rc ? rc : dup_or_null(&hit->shapes, "");
        if (rc < 0) return rc;
      }
      if (shape) {
        char *joined = NULL;
        if (asprintf(&joined, "%s%s%s", hit->shapes, hit->shapes[0] ? ", " : "",
                     shape) < 0)
          return kl__error_oom();
        char *mine = kl__strdup(joined);
        free(joined);
        if (!mine) return kl__error_oom();
        kl__free(hit->shapes);
        hit->shapes = mine;
      }
    }
  }
  return 0;
}

/* The relative path from directory `from` to directory `to` (both made
 * absolute), ending in '/'; "" when they are the same. */
static char *relative_dir(const char *from, const char *to) {
  char a[PATH_MAX], b[PATH_MAX];
  if (!realpath(from, a) || !realpath(to, b)) return NULL;
  size_t common = 0, i = 0;
  for (; a[i] && a[i] == b[i]; i++)
    if (a[i] == '/') common = i;
  if (!a[i] && (!b[i] || b[i] == '/'))
    common = i;
  else if (!b[i] && a[i] == '/')
    common = i;
  kl_buf r = KL_BUF_INIT;
  kl__buf_puts(&r, "");
  for (const char *p = a + common; *p; p++)
    if (*p == '/') kl__buf_puts(&r, "../");
  const char *rest = b + common;
  while (*rest == '/')
    rest++;
  if (*rest) kl__buf_printf(&r, "%s/", rest);
  return kl__buf_detach(&r); /* NULL when a write failed */
}

/* The run to report: the one named, or the latest (run ids sort by their
 * start). Every run has its folder under runs/ from its first moment, so
 * the folder listing is enough: no ledger needs reading here. */
static int pick_run(char **out, const kl_case *c, const char *want) {
  *out = NULL;
  char **names = NULL;
  size_t n = 0;
  int rc = kl__runs_list(&names, &n, kl_case_dir(c));
  if (rc < 0) return rc;
  const char *hit = !want && n ? names[n - 1] : NULL;
  for (size_t i = 0; want && i < n; i++)
    if (strcmp(names[i], want) == 0) hit = names[i];
  if (!hit && want)
    rc = kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                   "%s: no run '%s' in this case (kl history lists them)",
                   kl_case_dir(c), want);
  else if (!hit)
    rc = kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                   "%s: no runs yet (kl run makes one)", kl_case_dir(c));
  else if (!(*out = kl__strdup(hit)))
    rc = kl__error_oom();
  kl__names_free(names, n);
  return rc;
}

/* How the run was started and how its last session ended. */
static int collect_run_files(rp_run *run, const kl_case *c) {
  char *rundir = NULL;
  run_files f;
  memset(&f, 0, sizeof(f));
  int rc;
  if ((rc = kl__run_dir(&rundir, kl_case_dir(c), run->id)) < 0 ||
      (rc = read_run_files(&f, rundir)) < 0 ||
      (rc = kl__summary_read(rundir, &run->stop_reason, &run->webhook_status,
                             &run->has_summary)) < 0)
    goto done;
  char when[32];
  run->started = f.started;
  time_text(when, sizeof(when), run->started);
  run->proposer = f.proposer;
  run->strategy = f.strategy;
  f.proposer = f.strategy = NULL;
  rc = dup_or_null(&run->started_text, when);
done:
  kl__free(f.proposer);
  kl__free(f.strategy);
  kl__free(rundir);
  return rc;
}

/* One file of an iteration's evidence read into the run by `gather`
 * (NULL: none recorded). */
static int with_json(rp_run *run, const kl_case *c, const rp_iter *it,
                     const char *name,
                     int (*gather)(rp_run *run, json_object *j, bool best),
                     bool best) {
  json_object *j = NULL;
  int rc = iter_json(&j, c, it, name);
  if (rc == 0) rc = gather(run, j, best);
  json_object_put(j);
  return rc;
}

static int gather_before(rp_run *run, json_object *rules, bool best) {
  (void)best;
  return gather_findings(&run->before, &run->nbefore, rules);
}

static int gather_after(rp_run *run, json_object *rules, bool best) {
  (void)best;
  return gather_findings(&run->after, &run->nafter, rules);
}

/* The baseline's and the best's evidence: per-shape times along the
 * chain from the best back to the baseline, profiles and findings. */
static int collect_evidence(rp_run *run, const kl_case *c) {
  rp_iter *base = run->niters ? &run->iters[0] : NULL;
  rp_iter *best = run->best >= 0 ? &run->iters[run->best] : NULL;
  json_object *chain[64] = {0}, *base_report = NULL;
  size_t nchain = 0;
  int rc = 0;
  if (base && base->iteration == 0 &&
      (rc = iter_json(&base_report, c, base, "report.json")) < 0)
    goto done;
  /* walk from the best to the baseline through the parents */
  for (rp_iter *it = best;
       it && it->iteration > 0 && nchain < KL_ARRAY_SIZE(chain);
       it = iter_by_id(run, it->parent)) {
    if ((rc = iter_json(&chain[nchain], c, it, "report.json")) < 0) goto done;
    if (!chain[nchain]) break;
    nchain++;
  }
  bool other = best && best != base;
  if ((rc = gather_shapes(run, c, chain, nchain, base_report)) < 0 ||
      (rc = with_json(run, c, base, "profile.json", gather_profile, false)) <
          0 ||
      (other && (rc = with_json(run, c, best, "profile.json", gather_profile,
                                true)) < 0) ||
      (rc = with_json(run, c, base, "rules.json", gather_before, false)) < 0)
    goto done;
  if (other) rc = with_json(run, c, best, "rules.json", gather_after, true);
done:
  for (size_t i = 0; i < nchain; i++)
    json_object_put(chain[i]);
  json_object_put(base_report);
  return rc;
}

int kl__rp_collect(rp_run *run, const kl_case *c, const char *run_id,
                   const char *links_from) {
  memset(run, 0, sizeof(*run));
  run->best = -1;
  collect cl = {run, 0};
  const char *from = links_from ? links_from : kl_case_dir(c);
  int rc;
  if ((rc = pick_run(&run->id, c, run_id)) < 0 ||
      (rc = dup_or_null(&run->case_name, kl_case_name(c))) < 0 ||
      (rc = dup_or_null(&run->backend, kl_backend_name(kl_case_backend(c)))) <
          0 ||
      (rc = kl__solutions_read(kl_case_dir(c), iter_line, &cl)) < 0 ||
      (rc = collect_run_files(run, c)) < 0)
    goto fail;
  if (!(run->links = relative_dir(from, kl_case_dir(c))) &&
      !(run->links = kl__strdup(""))) {
    rc = kl__error_oom();
    goto fail;
  }
  if ((rc = collect_evidence(run, c)) < 0) goto fail;
  return 0;
fail:
  kl__rp_dispose(run);
  return rc;
}

static void findings_free(rp_finding *f, size_t n) {
  for (size_t i = 0; i < n; i++) {
    kl__free(f[i].id);
    kl__free(f[i].severity);
    kl__free(f[i].finding);
    kl__free(f[i].action);
    kl__free(f[i].shapes);
  }
  kl__free(f);
}

void kl__rp_dispose(rp_run *run) {
  for (size_t i = 0; i < run->niters; i++) {
    rp_iter *it = &run->iters[i];
    kl__free(it->id);
    kl__free(it->parent);
    kl__free(it->proposer);
    kl__free(it->verdict);
    kl__free(it->reason);
    kl__free(it->gate);
    kl__free(it->memo);
    kl__free(it->dir);
    kl__free(it->config);
    kl__free(it->vb_method);
    kl__free(it->how);
  }
  kl__free(run->iters);
  for (size_t k = 0; k < run->nshapes; k++) {
    kl__free(run->shapes[k].name);
    kl__free(run->shapes[k].bottleneck_before);
    kl__free(run->shapes[k].bottleneck_after);
    kl__free(run->shapes[k].kernels_before);
    kl__free(run->shapes[k].kernels_after);
  }
  kl__free(run->shapes);
  findings_free(run->before, run->nbefore);
  findings_free(run->after, run->nafter);
  kl__free(run->case_name);
  kl__free(run->backend);
  kl__free(run->id);
  kl__free(run->proposer);
  kl__free(run->strategy);
  kl__free(run->stop_reason);
  kl__free(run->device);
  kl__free(run->started_text);
  kl__free(run->links);
  kl__free(run->webhook_status);
  memset(run, 0, sizeof(*run));
}

int kl_history_report(kl_buf *out, const kl_case *c,
                      const kl_history_report_options *given) {
  kl_history_report_options full;
  int taken = kl__history_report_options_take(&full, given);
  if (taken < 0) return taken;
  const kl_history_report_options *o = &full;
  if (!out || !c ||
      (o->format && strcmp(o->format, "html") && strcmp(o->format, "md")))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_history_report: format is \"html\" or \"md\"");
  rp_run run;
  int rc = kl__rp_collect(&run, c, o->run, o->links_from);
  if (rc < 0) return rc;
  kl_buf b = KL_BUF_INIT;
  rc = o->format && strcmp(o->format, "md") == 0 ? kl__rp_render_md(&b, &run)
                                                 : kl__rp_render_html(&b, &run);
  kl__rp_dispose(&run);
  if (rc == 0) kl__buf_give(out, &b);
  kl_buf_dispose(&b);
  return rc;
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t history_report_options_sizes[] = {
    0, sizeof(kl_history_report_options)};

KL__OPTIONS_FUNCTIONS(kl_history_report_options, kl_history_report_options_init,
                      kl__history_report_options_take,
                      KL_HISTORY_REPORT_OPTIONS_INIT,
                      history_report_options_sizes)
