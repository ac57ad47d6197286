/* kl_run_optimize: the loop (see kernlab/run.h).
 *
 * One batch: propose up to `batch` candidates -> record each proposal ->
 * the executor compiles, checks and compares each with the best of the
 * moment (kl_bench_compare's path, which applies the integrity gates:
 * docs/integrity.md), on as many GPUs or machines as it has
 * (docs/executors.md) -> in iteration order, decide; a candidate faster
 * than that best while a later best was accepted in its batch is compared
 * again with it -> profile and diagnose an acceptance -> write verdict and
 * report, then the solutions.jsonl line (the commit point: an iteration
 * without it is done again on resume), then its benchmark rows and memory
 * line (a resume completes those of the last committed iteration).
 * Budgets are checked before each proposal. */
#define _GNU_SOURCE
#include <errno.h>
#include <unistd.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../case/case_internal.h"
#include "run_internal.h"

const char *kl_outcome_name(kl_outcome o) {
  static const char *const names[KL_OUTCOME_COUNT] = {
      "BASELINE", "ACCEPTED", "REJECTED",      "INCORRECT",    "CRASHED",
      "TIMEOUT",  "COMPILE_ERROR", "INVALID_REPLY", "CHEAT"};
  return (unsigned)o < KL_OUTCOME_COUNT ? names[o] : "?";
}

void kl_run_options_init(kl_run_options *opts) {
  kl_run_options init = KL_RUN_OPTIONS_INIT;
  *opts = init;
}

void kl_run_free(kl_run *r) {
  if (!r)
    return;
  kl__run_unlock(r);
  kl__free(r->id);
  kl__free(r->dir);
  kl__free(r->case_dir);
  kl__free(r->stop_reason);
  kl__free(r->stop_detail);
  kl__free(r->best_id);
  kl__free(r->best_source);
  kl__strv_free(r->best_config);
  kl_profile_list_free(r->best_profiles);
  kl_profile_list_free(r->base_profiles);
  for (size_t i = 0; i < r->nattempts; i++) {
    kl__free(r->attempts[i].memo);
    kl__free(r->attempts[i].reason);
    kl__free(r->attempts[i].key);
    kl__strv_free(r->attempts[i].config);
  }
  kl__free(r->attempts);
  kl_llm_free(r->llm);
  kl__free(r->memory_text);
  kl__free(r->replay_dir);
  kl__free(r->env_json);
  kl__free(r->baseline_key);
  for (size_t i = 0; i < r->ninflight; i++)
    kl__free(r->inflight[i]);
  kl__free(r->inflight);
  if (r->own_ex)
    kl_executor_free(r->ex);
  kl__free(r);
}

const char *kl_run_id(const kl_run *r) { return r->id; }
const char *kl_run_dir(const kl_run *r) { return r->dir; }
const char *kl_run_stop_reason(const kl_run *r) {
  return r->stop_reason ? r->stop_reason : "running";
}
const char *kl_run_stop_detail(const kl_run *r) { return r->stop_detail; }
int kl_run_iterations(const kl_run *r) { return r->done; }
int kl_run_outcome_count(const kl_run *r, kl_outcome o) {
  return (unsigned)o < KL_OUTCOME_COUNT ? r->counts[o] : 0;
}
kl_speedup kl_run_best_speedup(const kl_run *r) { return r->best_vs_base; }
const char *kl_run_best_id(const kl_run *r) { return r->best_id; }

static double spent_wall_s(const kl_run *r) {
  return r->wall_before_s + (kl__now_ms() - r->t0_ms) / 1000.0;
}

static void emit(kl_run *r, int iteration, const char *phase,
                 const char *proposer, const char *what, kl_outcome o,
                 const char *reason, double speedup) {
  if (!r->o.on_event)
    return;
  kl_run_event e;
  memset(&e, 0, sizeof(e));
  e.run = r->id;
  e.iteration = iteration;
  e.phase = phase;
  e.proposer = proposer;
  e.what = what;
  e.outcome = o;
  e.reason = reason;
  e.speedup = speedup;
  e.best_speedup = r->best_vs_base.speedup;
  e.iterations_left = (int)(r->max_iterations - r->done);
  e.wall_s = spent_wall_s(r);
  e.worker_s = r->worker_s;
  e.usd = r->usd;
  r->o.on_event(&e, r->o.payload);
}

/* A webhook message; what happened is kept for the summary, and a failure
 * is never the run's. */
static void notify(kl_run *r, const char *event, int iteration,
                   const char *detail) {
  if (!r->o.webhook || r->o.no_webhook)
    return;
  kl_webhook_message m = {event, r->c->name, r->id, iteration,
                          r->best_vs_base.speedup, r->best_vs_base.ci_low,
                          r->best_vs_base.ci_high, detail};
  if (strcmp(event, "run_start") == 0)
    m.speedup = m.ci_low = m.ci_high = 0;
  long status = 0;
  r->wh_attempted++;
  if (kl_webhook_send(r->o.webhook, &m, &status) == 0) {
    r->wh_sent++;
    snprintf(r->wh_status, sizeof(r->wh_status), "sent (HTTP %ld)", status);
  } else {
    const kl_error *e = kl_error_last();
    snprintf(r->wh_status, sizeof(r->wh_status), "failed: %s",
             e && e->message ? e->message : "no answer");
  }
}

static int json_config(kl_buf *b, char *const *config) {
  int rc = kl__buf_putc(b, '[');
  for (size_t i = 0; config && config[i]; i++) {
    rc |= i ? kl__buf_putc(b, ',') : 0;
    rc |= kl__buf_json_string(b, config[i]);
  }
  return rc | kl__buf_putc(b, ']');
}

/* ---- one measurement ------------------------------------------------------- */

static kl_bench_options bench_options(const kl_run *r, int iteration) {
  kl_bench_options b = KL_BENCH_OPTIONS_INIT;
  b.check_seeds = r->o.check_seeds;
  b.seed = kl__derive_seed(r->seed, (uint64_t)iteration);
  b.time = r->o.time;
  b.timeout_ms = r->o.timeout_ms;
  b.compile = r->o.compile;
  b.worker_path = r->o.worker_path;
  b.device = r->o.device;
  return b;
}

/* Evaluate ev[0..n) through the run's executor (a remote one writes the
 * batch under runs/<id>/batches/<name>). The seconds they took count as
 * worker time. < 0: the executor gave up (the error says why); an
 * evaluation kernlab itself could not do has its own rc < 0. */
static int evaluate(kl_run *r, kl__eval *ev, size_t n, const char *name) {
  kl_buf dir = KL_BUF_INIT;
  char *ledger = kl__path_join(r->dir, "executor.jsonl");
  int rc = ledger && kl__buf_printf(&dir, "%s/batches/%s", r->dir, name) == 0
               ? 0
               : kl__error_oom();
  if (rc == 0)
    rc = kl__executor_evaluate(r->ex, r->c, ev, n, dir.ptr, ledger);
  for (size_t i = 0; i < n; i++)
    r->worker_s += ev[i].seconds;
  kl_buf_dispose(&dir);
  kl__free(ledger);
  return rc;
}

/* An evaluation kernlab could not do, as the run's error. */
static int eval_error(const kl__eval *e) {
  return kl__error(e->rc, KL_DOMAIN_NONE, "%s",
                   e->error ? e->error : "the evaluation failed");
}

static const char *profile_set(const kl_run *r) {
  if (!r->o.profile)
    return "standard";
  return r->o.profile[0] ? r->o.profile : NULL;
}

/* Profile a kernel and diagnose it; the report's JSON goes to
 * profile.json, the diagnoses to rules.json, the profiles into *list. A
 * failure to profile is recorded, not fatal: the run goes on without. */
static int profile_and_diagnose(kl_run *r, const char *dir, int iteration,
                                const char *source, char *const *config,
                                kl_profile_list **list) {
  const char *set = profile_set(r);
  if (!set)
    return 0;
  emit(r, iteration, "profile", NULL, NULL, KL_OUTCOME_BASELINE, NULL, 0);
  kl_bench_options b = bench_options(r, iteration + 500000);
  b.profile = set;
  b.candidate = source;
  b.candidate_config = (const char *const *)config;
  b.time.min_samples = 3;
  b.time.time_cap_ms = 200;
  kl_buf js = KL_BUF_INIT, rules = KL_BUF_INIT;
  kl__eval ev;
  memset(&ev, 0, sizeof(ev));
  ev.o = b;
  char name[48];
  snprintf(name, sizeof(name), "iter_%03d_profile", iteration);
  int rc = evaluate(r, &ev, 1, name);
  if (rc == 0)
    rc = ev.rc;
  kl_report *rep = ev.report;
  ev.report = NULL;
  kl__eval_dispose(&ev);
  if (rc < 0 || kl_report_verdict(rep) != KL_VERDICT_OK) {
    char note[512];
    snprintf(note, sizeof(note), "{\"profiled\":false,\"why\":\"%s\"}\n",
             rc < 0 ? "the profile run failed"
                    : kl_verdict_name(kl_report_verdict(rep)));
    kl_error_clear();
    kl_report_free(rep);
    return kl__run_write(dir, "profile.json", note);
  }
  if ((rc = kl_report_json(&js, rep)) < 0 ||
      (rc = kl__buf_putc(&js, '\n')) < 0 ||
      (rc = kl__run_write(dir, "profile.json", js.ptr)) < 0)
    goto done;
  kl_profile_list *l = NULL;
  if (kl_profile_list_from_json(&l, js.ptr, "profile.json") < 0) {
    kl_error_clear(); /* no profile values here (no counters) */
  } else {
    kl_profile_list_free(*list);
    *list = l;
  }
  rc = kl__buf_puts(&rules, "[");
  for (size_t i = 0; rc == 0 && r->o.rules && *list &&
                     i < kl_profile_list_count(*list);
       i++) {
    kl_diagnosis *d = NULL;
    kl_buf dj = KL_BUF_INIT;
    if ((rc = kl_rules_evaluate(&d, r->o.rules,
                                kl_profile_list_get(*list, i))) == 0 &&
        (rc = kl_diagnosis_json(&dj, d)) == 0) {
      rc = kl__buf_printf(&rules, "%s{\"shape\":", i ? "," : "");
      rc |= kl__buf_json_string(&rules, kl_profile_list_name(*list, i));
      rc |= kl__buf_puts(&rules, ",\"diagnosis\":");
      rc |= kl__buf_put(&rules, dj.ptr, dj.size);
      rc |= kl__buf_putc(&rules, '}');
      if (rc)
        rc = kl__error_oom();
    }
    kl_buf_dispose(&dj);
    kl_diagnosis_free(d);
  }
  if (rc == 0 && (rc = kl__buf_puts(&rules, "]\n")) == 0)
    rc = kl__run_write(dir, "rules.json", rules.ptr);
done:
  kl_buf_dispose(&js);
  kl_buf_dispose(&rules);
  kl_report_free(rep);
  return rc;
}

static kl_outcome outcome_of(kl_verdict v) {
  switch (v) {
  case KL_VERDICT_INCORRECT: return KL_OUTCOME_INCORRECT;
  case KL_VERDICT_CRASHED: return KL_OUTCOME_CRASHED;
  case KL_VERDICT_TIMEOUT: return KL_OUTCOME_TIMEOUT;
  case KL_VERDICT_COMPILE_ERROR: return KL_OUTCOME_COMPILE_ERROR;
  case KL_VERDICT_CHEAT: return KL_OUTCOME_CHEAT;
  default: return KL_OUTCOME_REJECTED;
  }
}

/* ---- records of one iteration ---------------------------------------------- */

typedef struct iteration {
  int n;
  char *dir;
  const char *proposer;
  char *source;  /* what was measured */
  char **config;
  char *memo, *reason;
  const char *gate;
  kl_outcome outcome;
  kl_speedup vs_parent;   /* timed only */
  bool timed;
  kl_speedup vs_base;     /* accepted and baseline */
  char *parent_id;        /* the best it was compared with (NULL: none) */
  kl_speedup parent_vs_base; /* that best against the baseline */
  char *where;            /* JSON: where it was evaluated */
  bool rechecked;         /* compared again with a best accepted in its
                             batch */
  double t0_ms;           /* when the iteration began */
  double wall_s, worker_s, usd;
  uint64_t tokens_in, tokens_out;
  bool has_prompt, has_reply, has_diff, has_compile_log, profiled;
} iteration;

static void iteration_dispose(iteration *it) {
  kl__free(it->parent_id);
  kl__free(it->where);
  kl__free(it->dir);
  kl__free(it->source);
  kl__strv_free(it->config);
  kl__free(it->memo);
  kl__free(it->reason);
}

static int write_benchmark(kl_run *r, const iteration *it,
                           const kl_report *rep, const char *id) {
  return kl__run_benchmark_rows(r, it->n, id, it->outcome, rep, NULL);
}

/* Append the record built in *b (rc: whether building it ran out of
 * memory) to the case's ledger `name`; *b is disposed. */
static int append_record(const kl_run *r, const char *name, kl_buf *b,
                         int rc) {
  char *path = rc ? NULL : kl__path_join(r->case_dir, name);
  rc = path ? kl__ledger_append(path, b->ptr, NULL) : kl__error_oom();
  kl__free(path);
  kl_buf_dispose(b);
  return rc;
}

/* The solutions.jsonl line: the iteration's commit point. */
static int write_solution(kl_run *r, const iteration *it, const char *id,
                          const char *parent, const char *hash,
                          const char *key) {
  kl_buf b = KL_BUF_INIT;
  int rc = kl__buf_puts(&b, "{\"id\":");
  rc |= kl__buf_json_string(&b, id);
  rc |= kl__buf_puts(&b, ",\"parent\":");
  rc |= kl__buf_json_string(&b, parent);
  rc |= kl__buf_puts(&b, ",\"run\":");
  rc |= kl__buf_json_string(&b, r->id);
  rc |= kl__buf_puts(&b, ",\"case\":");
  rc |= kl__buf_json_string(&b, r->c->name);
  rc |= kl__buf_printf(&b, ",\"iteration\":%d,\"proposer\":\"%s\","
                           "\"source_sha256\":\"%s\",\"key\":",
                       it->n, it->proposer, hash);
  rc |= kl__buf_json_string(&b, key);
  rc |= kl__buf_puts(&b, ",\"config\":");
  rc |= json_config(&b, it->config);
  rc |= kl__buf_printf(&b, ",\"verdict\":\"%s\",\"reason\":",
                       kl_outcome_name(it->outcome));
  rc |= kl__buf_json_string(&b, it->reason);
  rc |= kl__buf_puts(&b, ",\"gate\":");
  rc |= kl__buf_json_string(&b, it->gate);
  if (it->timed)
    rc |= kl__buf_printf(&b,
                         ",\"speedup\":%.6g,\"speedup_ci\":[%.6g,%.6g],"
                         "\"log_vs_baseline\":%.6g",
                         it->vs_parent.speedup, it->vs_parent.ci_low,
                         it->vs_parent.ci_high,
                         log(it->vs_parent.speedup *
                             it->parent_vs_base.speedup));
  else
    rc |= kl__buf_puts(&b, ",\"speedup\":null,\"speedup_ci\":null");
  if (it->outcome == KL_OUTCOME_ACCEPTED || it->outcome == KL_OUTCOME_BASELINE)
    rc |= kl__buf_printf(&b,
                         ",\"vs_baseline\":{\"speedup\":%.6g,\"ci\":[%.6g,"
                         "%.6g],\"method\":\"%s\"}",
                         it->vs_base.speedup, it->vs_base.ci_low,
                         it->vs_base.ci_high,
                         r->best_iteration == 0 ? "direct" : "chained");
  rc |= kl__buf_puts(&b, ",\"memo\":");
  rc |= kl__buf_json_string(&b, it->memo);
  kl_buf ev = KL_BUF_INIT;
  rc |= kl__buf_printf(&ev, "runs/%s/iter_%03d", r->id, it->n);
  rc |= kl__buf_puts(&b, ",\"evidence\":{\"dir\":");
  rc |= kl__buf_json_string(&b, ev.ptr ? ev.ptr : "");
  rc |= kl__buf_printf(&b, ",\"kernel\":\"kernel.%s\"", r->kernel_ext);
  if (it->has_diff)
    rc |= kl__buf_puts(&b, ",\"diff\":\"kernel.diff\"");
  if (it->has_prompt)
    rc |= kl__buf_puts(&b, ",\"prompt\":\"prompt.txt\"");
  if (it->has_reply)
    rc |= kl__buf_puts(&b, ",\"reply\":\"reply.txt\"");
  if (it->has_compile_log)
    rc |= kl__buf_puts(&b, ",\"compile_log\":\"compile.log\"");
  if (it->profiled)
    rc |= kl__buf_puts(&b, ",\"profile\":\"profile.json\","
                           "\"rules\":\"rules.json\"");
  rc |= kl__buf_puts(&b, ",\"verdict\":\"verdict.json\",\"report\":"
                         "\"report.json\"}");
  kl_buf_dispose(&ev);
  rc |= kl__buf_puts(&b, ",\"environment\":");
  rc |= kl__buf_puts(&b, r->env_json ? r->env_json : "null");
  rc |= kl__buf_puts(&b, ",\"ran_on\":");
  rc |= kl__buf_puts(&b, it->where ? it->where : "null");
  rc |= kl__buf_printf(&b, ",\"rechecked\":%s",
                       it->rechecked ? "true" : "false");
  rc |= kl__buf_printf(&b,
                       ",\"cost\":{\"wall_s\":%.3f,\"worker_s\":%.3f,"
                       "\"usd\":%.6f,\"tokens_in\":%llu,\"tokens_out\":%llu},"
                       "\"time\":%lld}",
                       it->wall_s, it->worker_s, it->usd,
                       (unsigned long long)it->tokens_in,
                       (unsigned long long)it->tokens_out,
                       (long long)time(NULL));
  return append_record(r, "solutions.jsonl", &b, rc);
}

static int write_memory(kl_run *r, const iteration *it) {
  return kl__run_memory_line(r, it->n, it->proposer, it->memo, it->outcome,
                             it->timed, it->vs_parent.speedup, it->reason);
}

static int write_verdict(const iteration *it, const kl_run *r) {
  kl_buf b = KL_BUF_INIT;
  int rc = kl__buf_printf(&b, "{\"iteration\":%d,\"verdict\":\"%s\",\"reason\":",
                          it->n, kl_outcome_name(it->outcome));
  rc |= kl__buf_json_string(&b, it->reason);
  rc |= kl__buf_puts(&b, ",\"gate\":");
  rc |= kl__buf_json_string(&b, it->gate);
  rc |= kl__buf_puts(&b, ",\"gates\":{\"poison\":\"applied\",\"inputs_written\":"
                         "\"applied\",\"fresh_seeds\":\"applied\","
                         "\"other_streams\":\"");
  rc |= kl__buf_puts(&b, r->c->backend == KL_BACKEND_CUDA
                             ? "applied (CUPTI sees every stream)"
                             : "not applicable (host)");
  rc |= kl__buf_puts(&b, "\",\"work_after_return\":\"applied\","
                         "\"stale_outputs\":\"applied\","
                         "\"faster_than_roofline\":\"");
  double bytes = 0;
  rc |= kl__buf_puts(&b, kl_case_roofline(&bytes, NULL, r->c, 0) == 0 &&
                                 bytes > 0
                             ? "applied"
                             : "not applicable: the case gives no roofline "
                               "bytes");
  rc |= kl__buf_puts(&b, "\",\"elisions_and_stubs\":\"");
  rc |= kl__buf_puts(&b, it->has_reply ? "applied (reply parser)"
                                       : "not applicable (no reply)");
  rc |= kl__buf_puts(&b, "\"}");
  if (it->timed)
    rc |= kl__buf_printf(&b, ",\"speedup\":%.6g,\"speedup_ci\":[%.6g,%.6g],"
                             "\"min_gain_pct\":%g",
                         it->vs_parent.speedup, it->vs_parent.ci_low,
                         it->vs_parent.ci_high, r->c->budget.min_gain_pct);
  rc |= kl__buf_puts(&b, ",\"memo\":");
  rc |= kl__buf_json_string(&b, it->memo);
  rc |= kl__buf_puts(&b, ",\"parent\":");
  rc |= kl__buf_json_string(&b, it->parent_id);
  rc |= kl__buf_printf(&b, ",\"rechecked\":%s,\"ran_on\":",
                       it->rechecked ? "true" : "false");
  rc |= kl__buf_puts(&b, it->where ? it->where : "null");
  rc |= kl__buf_puts(&b, "}\n");
  if (rc) {
    kl_buf_dispose(&b);
    return kl__error_oom();
  }
  rc = kl__run_write(it->dir, "verdict.json", b.ptr);
  kl_buf_dispose(&b);
  return rc;
}

/* diff -u of the two kernels as built (settings written in front). */
static int write_diff(kl_run *r, iteration *it) {
  kl_buf a = KL_BUF_INIT, b = KL_BUF_INIT;
  int rc = kl__run_best_kernel_text(&a, r->best_source, r->best_config);
  if (rc == 0)
    rc = kl__run_best_kernel_text(&b, it->source, it->config);
  char *pa = NULL, *pb = NULL;
  if (rc == 0) {
    kl_buf x = KL_BUF_INIT, y = KL_BUF_INIT;
    rc = kl__buf_printf(&x, "%s/.parent.%s", it->dir, r->kernel_ext) |
         kl__buf_printf(&y, "%s/.candidate.%s", it->dir, r->kernel_ext);
    pa = kl__buf_detach(&x);
    pb = kl__buf_detach(&y);
    if (rc || !pa || !pb)
      rc = kl__error_oom();
  }
  if (rc == 0 && (rc = kl__write_new_file(pa, a.ptr, a.size)) == 0 &&
      (rc = kl__write_new_file(pb, b.ptr, b.size)) == 0) {
    kl_buf la = KL_BUF_INIT, lb = KL_BUF_INIT;
    kl__buf_printf(&la, "--label=%s (parent)", r->best_id ? r->best_id : "");
    kl__buf_printf(&lb, "--label=iter_%03d", it->n);
    const char *argv[] = {"diff", "-u", la.ptr, lb.ptr, pa, pb, NULL};
    kl__run_result res;
    memset(&res, 0, sizeof(res));
    if (la.ptr && lb.ptr && kl__run(&res, argv, NULL, 20000, 8 << 20) == 0 &&
        res.exit_code <= 1) {
      rc = kl__run_write(it->dir, "kernel.diff",
                         res.output.ptr ? res.output.ptr : "");
      it->has_diff = rc == 0;
    } else {
      kl_error_clear(); /* no diff program: the kernels are both kept */
    }
    kl_buf_dispose(&res.output);
    kl_buf_dispose(&la);
    kl_buf_dispose(&lb);
  }
  if (pa)
    remove(pa);
  if (pb)
    remove(pb);
  kl__free(pa);
  kl__free(pb);
  kl_buf_dispose(&a);
  kl_buf_dispose(&b);
  return rc;
}

/* Combine the best's interval against the baseline with a new step's, on
 * the log scale, as independent errors. */
static kl_speedup chain(kl_speedup a, kl_speedup b) {
  kl_speedup out = a;
  out.speedup = a.speedup * b.speedup;
  double la = log(a.speedup), lb = log(b.speedup);
  double lo = hypot(la - log(a.ci_low), lb - log(b.ci_low));
  double hi = hypot(log(a.ci_high) - la, log(b.ci_high) - lb);
  out.ci_low = out.speedup * exp(-lo);
  out.ci_high = out.speedup * exp(hi);
  out.decision = out.ci_low > 1 ? KL_DECISION_FASTER
                 : out.ci_high < 1 ? KL_DECISION_SLOWER
                                   : KL_DECISION_SAME;
  return out;
}

/* Write what every iteration leaves behind, then commit it (the
 * solutions.jsonl line) and update the run's state. */
static int finish(kl_run *r, iteration *it, const kl_report *rep) {
  char id[96];
  snprintf(id, sizeof(id), "%s/%03d", r->id, it->n);
  char hash[65];
  kl__run_source_hash(it->source, hash);
  char *key = kl__run_key(hash, it->config);
  kl_buf name = KL_BUF_INIT, js = KL_BUF_INIT;
  int rc = key ? 0 : kl__error_oom();
  it->wall_s = (kl__now_ms() - it->t0_ms) / 1000.0;
  if (rc == 0 && kl__buf_printf(&name, "kernel.%s", r->kernel_ext) < 0)
    rc = kl__error_oom();
  if (rc == 0)
    rc = kl__run_write(it->dir, name.ptr, it->source);
  if (rc == 0 && rep) {
    if ((rc = kl_report_json(&js, rep)) == 0 &&
        (rc = kl__buf_putc(&js, '\n')) == 0)
      rc = kl__run_write(it->dir, "report.json", js.ptr);
    if (rc == 0 && kl_report_compile_log(rep) &&
        kl_report_verdict(rep) == KL_VERDICT_COMPILE_ERROR) {
      rc = kl__run_write(it->dir, "compile.log", kl_report_compile_log(rep));
      it->has_compile_log = rc == 0;
    }
  }
  if (rc == 0)
    rc = write_verdict(it, r);
  if (rc == 0)
    rc = write_solution(r, it, id, it->parent_id, hash, key);
  /* committed: the iteration counts from here; its benchmark rows and
   * memory line follow (a resume completes them: records.c) */
  if (rc == 0 && rep)
    rc = write_benchmark(r, it, rep, id);
  if (rc == 0 && it->n == 0) {
    kl__free(r->baseline_key);
    r->baseline_key = key;
    key = NULL;
  }
  if (rc == 0 && it->n > 0)
    rc = write_memory(r, it);
  if (rc == 0 && it->n > 0) {
    run_attempt *na =
        kl__realloc(r->attempts, (r->nattempts + 1) * sizeof(*na));
    if (!na) {
      rc = kl__error_oom();
    } else {
      r->attempts = na;
      run_attempt *a = &r->attempts[r->nattempts++];
      memset(a, 0, sizeof(*a));
      a->iteration = it->n;
      a->outcome = it->outcome;
      a->memo = it->memo ? kl__strdup(it->memo) : NULL;
      a->reason = it->reason ? kl__strdup(it->reason) : NULL;
      a->key = key;
      key = NULL;
      a->speedup = it->timed ? it->vs_parent.speedup : 0;
      a->log_vs_base = it->timed ? log(it->vs_parent.speedup *
                                       it->parent_vs_base.speedup)
                                 : 0;
      a->config = kl__strv_dup((const char *const *)it->config);
    }
    r->counts[it->outcome]++;
    r->done++;
    r->since_accept = it->outcome == KL_OUTCOME_ACCEPTED ? 0
                                                          : r->since_accept + 1;
  }
  if (rc == 0 &&
      (it->outcome == KL_OUTCOME_ACCEPTED || it->outcome == KL_OUTCOME_BASELINE)) {
    kl__free(r->best_id);
    kl__free(r->best_source);
    kl__strv_free(r->best_config);
    r->best_id = kl__strdup(id);
    r->best_source = it->source;
    r->best_config = it->config;
    it->source = NULL;
    it->config = NULL;
    r->best_iteration = it->n;
    r->best_vs_base = it->vs_base;
    if (!r->best_id)
      rc = kl__error_oom();
  }
  kl__free(key);
  kl_buf_dispose(&name);
  kl_buf_dispose(&js);
  return rc;
}

static int read_baseline_source(kl_run *r) {
  kl_buf b = KL_BUF_INIT;
  int rc = kl__read_file(&b, r->c->kernel_path);
  if (rc < 0)
    return rc;
  r->best_source = kl__buf_detach(&b);
  return r->best_source ? 0 : kl__error_oom();
}

static int do_baseline(kl_run *r) {
  iteration it;
  memset(&it, 0, sizeof(it));
  it.proposer = "baseline";
  it.outcome = KL_OUTCOME_BASELINE;
  it.t0_ms = kl__now_ms();
  it.vs_base.speedup = it.vs_base.ci_low = it.vs_base.ci_high = 1;
  emit(r, 0, "measure", "baseline", "the case's kernel", KL_OUTCOME_BASELINE,
       NULL, 0);
  kl_report *rep = NULL;
  int rc = kl__run_iter_dir(&it.dir, r, 0);
  if (rc == 0 && !(it.source = kl__strdup(r->best_source)))
    rc = kl__error_oom();
  if (rc == 0)
    rc = kl__run_full_config(&it.config, r->c, r->best_source, NULL);
  if (rc < 0)
    goto done;
  kl__eval ev;
  memset(&ev, 0, sizeof(ev));
  ev.o = bench_options(r, 0);
  ev.o.candidate_config = (const char *const *)it.config;
  rc = evaluate(r, &ev, 1, "iter_000");
  it.worker_s = ev.seconds;
  if (rc == 0 && ev.rc < 0)
    rc = eval_error(&ev);
  rep = ev.report;
  ev.report = NULL;
  it.where = ev.where;
  ev.where = NULL;
  kl__eval_dispose(&ev);
  if (rc < 0)
    goto done;
  if (kl_report_verdict(rep) != KL_VERDICT_OK) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                   "the baseline of case '%s' failed: %s: %s", r->c->name,
                   kl_verdict_name(kl_report_verdict(rep)),
                   kl_report_reason(rep) ? kl_report_reason(rep) : "");
    goto done;
  }
  if ((rc = kl__run_environment(r, rep)) < 0)
    goto done;
  double p0 = kl__now_ms();
  rc = profile_and_diagnose(r, it.dir, 0, it.source, it.config,
                            &r->base_profiles);
  it.worker_s += (kl__now_ms() - p0) / 1000.0;
  it.profiled = r->base_profiles != NULL;
  if (rc == 0)
    rc = finish(r, &it, rep);
  if (rc == 0)
    emit(r, 0, "done", "baseline", "the case's kernel", KL_OUTCOME_BASELINE,
         NULL, 1);
done:
  kl_report_free(rep);
  iteration_dispose(&it);
  return rc;
}

/* ---- a candidate ------------------------------------------------------------ */

static int write_proposal(const kl_run *r, iteration *it, const proposal *p) {
  kl_buf b = KL_BUF_INIT;
  int rc = kl__buf_printf(&b, "{\"iteration\":%d,\"proposer\":\"%s\",\"parent\":",
                          it->n, p->proposer);
  rc |= kl__buf_json_string(&b, r->best_id);
  rc |= kl__buf_puts(&b, ",\"memo\":");
  rc |= kl__buf_json_string(&b, p->memo);
  rc |= kl__buf_puts(&b, ",\"config\":");
  rc |= json_config(&b, it->config);
  rc |= kl__buf_puts(&b, ",\"invalid\":");
  rc |= kl__buf_json_string(&b, p->invalid);
  rc |= kl__buf_puts(&b, "}\n");
  if (rc) {
    kl_buf_dispose(&b);
    return kl__error_oom();
  }
  rc = kl__run_write(it->dir, "proposal.json", b.ptr);
  kl_buf_dispose(&b);
  if (rc == 0 && p->prompt && (rc = kl__run_write(it->dir, "prompt.txt",
                                                  p->prompt)) == 0)
    it->has_prompt = true;
  if (rc == 0 && p->reply &&
      (rc = kl__run_write(it->dir, "reply.txt", p->reply)) == 0)
    it->has_reply = true;
  return rc;
}

static const char *budget_reached(const kl_run *r);

/* An iteration from a proposal: its folder, what it measures, its
 * proposal.json and diff against the best it will be compared with. */
static int prepare(kl_run *r, iteration *it, const proposal *p, int n) {
  memset(it, 0, sizeof(*it));
  it->n = n;
  it->proposer = p->proposer;
  it->t0_ms = kl__now_ms();
  it->usd = p->usd;
  it->tokens_in = p->tokens_in;
  it->tokens_out = p->tokens_out;
  r->usd += p->usd;
  r->tokens_in += p->tokens_in;
  r->tokens_out += p->tokens_out;
  it->parent_vs_base = r->best_vs_base;
  int rc = kl__run_iter_dir(&it->dir, r, it->n);
  if (rc < 0)
    return rc;
  it->source = kl__strdup(p->source ? p->source : r->best_source);
  it->memo = p->memo ? kl__strdup(p->memo) : NULL;
  it->parent_id = kl__strdup(r->best_id);
  if (!it->source || (p->memo && !it->memo) || !it->parent_id)
    return kl__error_oom();
  if ((rc = kl__run_full_config(&it->config, r->c, it->source,
                                p->config ? p->config : r->best_config)) < 0 ||
      (rc = write_proposal(r, it, p)) < 0)
    return rc;
  if (p->invalid) {
    it->outcome = KL_OUTCOME_INVALID_REPLY;
    it->gate = strstr(p->invalid, "elision") || strstr(p->invalid, "stub")
                   ? "elisions_and_stubs" : NULL;
    return (it->reason = kl__strdup(p->invalid)) ? 0 : kl__error_oom();
  }
  return write_diff(r, it);
}

/* The comparison of it with the current best, as an evaluation. */
static void compare_eval(kl__eval *ev, const kl_run *r, const iteration *it,
                         char *cname, size_t cap) {
  memset(ev, 0, sizeof(*ev));
  ev->compare = true;
  ev->o = bench_options(r, it->n);
  ev->o.against = r->best_source;
  ev->o.against_config = (const char *const *)r->best_config;
  ev->o.candidate = it->source;
  ev->o.candidate_config = (const char *const *)it->config;
  snprintf(cname, cap, "iter_%03d.%s", it->n, r->kernel_ext);
  ev->o.candidate_name = cname;
}

/* The verdict of a comparison's report. */
static int decide(kl_run *r, iteration *it, const kl_report *rep) {
  kl__free(it->reason);
  it->reason = NULL;
  it->timed = false;
  if (kl_report_verdict(rep) != KL_VERDICT_OK) {
    it->outcome = outcome_of(kl_report_verdict(rep));
    it->gate = kl_report_gate(rep);
    it->reason = kl__strdup(kl_report_reason(rep) ? kl_report_reason(rep) : "");
    return it->reason ? 0 : kl__error_oom();
  }
  if (kl_report_objective(&it->vs_parent, rep) < 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no objective was computed");
  it->timed = true;
  kl_buf reason = KL_BUF_INIT;
  if (it->vs_parent.decision == KL_DECISION_FASTER) {
    it->outcome = KL_OUTCOME_ACCEPTED;
    it->vs_base = chain(it->parent_vs_base, it->vs_parent);
    kl__buf_printf(&reason, "x%.3f [%.3f, %.3f] against the best, at least "
                            "%g%% and the interval above 1",
                   it->vs_parent.speedup, it->vs_parent.ci_low,
                   it->vs_parent.ci_high, r->c->budget.min_gain_pct);
  } else {
    it->outcome = KL_OUTCOME_REJECTED;
    kl__buf_printf(&reason, "%s: x%.3f [%.3f, %.3f] against the best "
                            "(needs the interval above 1 and at least %g%%)",
                   it->vs_parent.decision == KL_DECISION_SLOWER ? "slower"
                                                                : "not faster",
                   it->vs_parent.speedup, it->vs_parent.ci_low,
                   it->vs_parent.ci_high, r->c->budget.min_gain_pct);
  }
  it->reason = kl__buf_detach(&reason);
  return it->reason ? 0 : kl__error_oom();
}

/* Take an evaluation's report and where it ran into the iteration. */
static kl_report *take(iteration *it, kl__eval *ev) {
  kl_report *rep = ev->report;
  ev->report = NULL;
  kl__free(it->where);
  it->where = ev->where;
  ev->where = NULL;
  it->worker_s += ev->seconds;
  return rep;
}

/* Decide a measured iteration; one faster than its parent while a later
 * best was accepted in the same batch is compared again with that best
 * (on one GPU) and decided on that. *gave_up: the executor gave up on the
 * second comparison. */
static int settle(kl_run *r, iteration *it, kl_report **rep, bool *gave_up) {
  int rc = decide(r, it, *rep);
  if (rc < 0 || it->outcome != KL_OUTCOME_ACCEPTED ||
      strcmp(it->parent_id, r->best_id) == 0)
    return rc;
  kl__free(it->parent_id);
  if (!(it->parent_id = kl__strdup(r->best_id)))
    return kl__error_oom();
  it->parent_vs_base = r->best_vs_base;
  it->rechecked = true;
  kl__eval ev;
  char cname[32], name[48];
  compare_eval(&ev, r, it, cname, sizeof(cname));
  snprintf(name, sizeof(name), "iter_%03d_recheck", it->n);
  emit(r, it->n, "measure", it->proposer, it->memo, KL_OUTCOME_BASELINE,
       "against a best accepted in its batch", 0);
  if ((rc = evaluate(r, &ev, 1, name)) < 0) {
    *gave_up = true;
  } else if (ev.rc < 0) {
    rc = eval_error(&ev);
  } else {
    kl_report_free(*rep);
    *rep = take(it, &ev);
    rc = decide(r, it, *rep);
  }
  kl__eval_dispose(&ev);
  return rc;
}

/* After the verdict: profile an acceptance, record, tell. */
static int conclude(kl_run *r, iteration *it, const kl_report *rep) {
  int rc = 0;
  if (it->outcome == KL_OUTCOME_ACCEPTED) {
    kl_profile_list *l = NULL;
    double w0 = r->worker_s;
    rc = profile_and_diagnose(r, it->dir, it->n, it->source, it->config, &l);
    it->worker_s += r->worker_s - w0;
    if (l) {
      it->profiled = true;
      kl_profile_list_free(r->best_profiles);
      r->best_profiles = l;
    }
    if (rc < 0)
      return rc;
  }
  rc = finish(r, it, rep);
  if (rc == 0)
    emit(r, it->n, "done", it->proposer, it->memo, it->outcome, it->reason,
         it->timed ? it->vs_parent.speedup : 0);
  if (rc == 0 && it->outcome == KL_OUTCOME_ACCEPTED)
    notify(r, "accepted", it->n, it->memo);
  return rc;
}

/* The key a proposal will be recorded under, held while its batch is out
 * so the tuner does not propose it twice. */
static int hold_key(kl_run *r, const proposal *p) {
  const char *src = p->source ? p->source : r->best_source;
  char **cfg = NULL;
  int rc = kl__run_full_config(&cfg, r->c, src,
                               p->config ? p->config : r->best_config);
  char hash[65];
  kl__run_source_hash(src, hash);
  char *key = rc == 0 ? kl__run_key(hash, cfg) : NULL;
  char **grown = key ? kl__realloc(r->inflight,
                                   (r->ninflight + 1) * sizeof(char *))
                     : NULL;
  kl__strv_free(cfg);
  if (rc < 0 || !grown) {
    kl__free(key);
    return rc < 0 ? rc : kl__error_oom();
  }
  r->inflight = grown;
  r->inflight[r->ninflight++] = key;
  return 0;
}

static void release_keys(kl_run *r) {
  for (size_t i = 0; i < r->ninflight; i++)
    kl__free(r->inflight[i]);
  r->ninflight = 0;
}

static void set_stop(kl_run *r, const char *reason, const char *fallback) {
  const kl_error *e = kl_error_last();
  kl__free(r->stop_reason);
  kl__free(r->stop_detail);
  r->stop_reason = kl__strdup(reason);
  r->stop_detail = fallback ? kl__strdup(e && e->message ? e->message
                                                         : fallback)
                            : NULL;
}

/* One batch: up to r->batch proposals, evaluated together against the
 * best of the moment, then decided and recorded in iteration order.
 * Proposals past a stop (the proposer ran out or failed) are not made;
 * those made are still measured and recorded. */
static int run_batch(kl_run *r) {
  int64_t left = r->max_iterations - r->done;
  size_t want = (size_t)(r->batch > 0 ? r->batch : 1);
  if ((int64_t)want > left)
    want = (size_t)left;
  proposal *ps = kl__calloc(want, sizeof(*ps));
  iteration *its = kl__calloc(want, sizeof(*its));
  kl__eval *evs = kl__calloc(want, sizeof(*evs));
  size_t *at = kl__calloc(want, sizeof(*at)); /* iteration -> evaluation */
  char (*cnames)[32] = kl__calloc(want, sizeof(*cnames));
  if (!ps || !its || !evs || !at || !cnames) {
    kl__free(ps);
    kl__free(its);
    kl__free(evs);
    kl__free(at);
    kl__free(cnames);
    return kl__error_oom();
  }
  int base = r->next_iteration, rc = 0, prc = 0;
  size_t n = 0, nev = 0, committed = 0;
  while (n < want && rc == 0) {
    if (n > 0 && budget_reached(r))
      break;
    r->next_iteration = base + (int)n; /* what the proposer sees */
    emit(r, r->next_iteration, "propose", r->proposer, NULL,
         KL_OUTCOME_BASELINE, NULL, 0);
    prc = kl__run_propose(r, &ps[n]);
    if (prc != 0) {
      kl__run_proposal_dispose(&ps[n]); /* what a failed proposal got */
      if (prc < 0)
        rc = prc;
      break;
    }
    rc = hold_key(r, &ps[n++]);
  }
  if (prc == 1 || prc == 2 || prc == 3)
    set_stop(r, prc == 1 ? "exhausted" : prc == 2 ? "llm_error"
                                                   : "proposer_error",
             prc == 1 ? NULL : prc == 2 ? "the provider failed"
                                        : "the proposer failed");
  for (size_t k = 0; rc == 0 && k < n; k++) {
    if ((rc = prepare(r, &its[k], &ps[k], base + (int)k)) < 0)
      break;
    at[k] = SIZE_MAX;
    if (its[k].outcome == KL_OUTCOME_INVALID_REPLY)
      continue;
    compare_eval(&evs[nev], r, &its[k], cnames[k], sizeof(cnames[k]));
    emit(r, its[k].n, "measure", its[k].proposer, its[k].memo,
         KL_OUTCOME_BASELINE, NULL, 0);
    at[k] = nev++;
  }
  bool gave_up = false;
  if (rc == 0 && nev > 0) {
    char name[48];
    if (n == 1)
      snprintf(name, sizeof(name), "iter_%03d", base);
    else
      snprintf(name, sizeof(name), "iter_%03d-%03d", base, base + (int)n - 1);
    gave_up = evaluate(r, evs, nev, name) < 0;
    if (gave_up)
      set_stop(r, "executor_error", "the executor gave up");
  }
  /* decide and record in order. A batch the executor gave up on is
   * recorded not at all, even where results came back: its decisions hang
   * together (a recheck follows an acceptance), and --resume proposes it
   * again whole, so the records come out as an uninterrupted run's. */
  for (size_t k = 0; rc == 0 && !gave_up && k < n; k++) {
    iteration *it = &its[k];
    kl_report *rep = NULL;
    if (at[k] != SIZE_MAX) {
      kl__eval *ev = &evs[at[k]];
      if (ev->rc == 0 && !ev->report)
        ev->rc = KL_EIO, ev->error = kl__strdup("the executor gave no result");
      if (ev->rc < 0) {
        rc = eval_error(ev);
        break;
      }
      rep = take(it, ev);
      bool again_gave_up = false;
      rc = settle(r, it, &rep, &again_gave_up);
      if (again_gave_up) {
        set_stop(r, "executor_error", "the executor gave up");
        rc = 0;
        kl_report_free(rep);
        break;
      }
    }
    if (rc == 0)
      rc = conclude(r, it, rep);
    kl_report_free(rep);
    if (rc == 0)
      committed++;
  }
  r->next_iteration = base + (int)committed;
  release_keys(r);
  for (size_t k = 0; k < n; k++) {
    kl__run_proposal_dispose(&ps[k]);
    iteration_dispose(&its[k]);
  }
  for (size_t k = 0; k < nev; k++)
    kl__eval_dispose(&evs[k]);
  kl__free(ps);
  kl__free(its);
  kl__free(evs);
  kl__free(at);
  kl__free(cnames);
  if (rc == 0 && n == 0 && !r->stop_reason)
    rc = kl__error_oom(); /* nothing proposed and no reason: cannot be */
  return rc;
}

/* ---- the loop ----------------------------------------------------------------- */

static const char *budget_reached(const kl_run *r) {
  if (r->o.stop && *r->o.stop)
    return "stopped";
  if (r->done >= r->max_iterations)
    return "iterations";
  if (r->patience > 0 && r->since_accept >= r->patience)
    return "patience";
  if (r->o.max_wall_s > 0 && spent_wall_s(r) >= r->o.max_wall_s)
    return "wall_time";
  if (r->o.max_worker_s > 0 && r->worker_s >= r->o.max_worker_s)
    return "worker_time";
  if (r->o.max_usd > 0 && r->usd >= r->o.max_usd)
    return "usd";
  return NULL;
}

static bool has_tunables(const kl_case *c, const char *source) {
  return c->ntunables > 0 || (source && strstr(source, "@tunable"));
}

/* The proposer and strategy, and what each needs. */
static int choose_proposer(kl_run *r) {
  const kl_run_options *o = &r->o;
  bool llm_set = o->llm && o->llm->provider && o->llm->provider[0];
  char recorded[16];
  snprintf(recorded, sizeof(recorded), "%s", r->proposer);
  const char *want = o->proposer && strcmp(o->proposer, "auto") != 0
                         ? o->proposer : NULL;
  if (!want && recorded[0])
    want = recorded; /* a resumed run keeps its own */
  if (!want && o->replay)
    want = "replay";
  if (!want && o->propose)
    want = "custom";
  if (!want)
    want = llm_set ? "llm" : has_tunables(r->c, r->best_source) ? "tune" : NULL;
  if (!want)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "case '%s' has no tunables and no language model is "
                     "configured: set llm.provider (and a key in the "
                     "environment) in ~/.config/kernlab/config.yaml or the "
                     "case's llm: section, or KL_LLM_PROVIDER; or give the "
                     "case tunables",
                     r->c->name);
  if (strcmp(want, "llm") && strcmp(want, "tune") && strcmp(want, "replay") &&
      strcmp(want, "custom"))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "unknown proposer '%s' (llm, tune, replay, custom or "
                     "auto)",
                     want);
  if (strcmp(want, "custom") == 0 && !o->propose)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "the custom proposer needs a propose function");
  snprintf(r->proposer, sizeof(r->proposer), "%s", want);
  if (strcmp(want, "llm") == 0 && !llm_set)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "the llm proposer needs a provider: set llm.provider in "
                     "the user config or the case, or KL_LLM_PROVIDER");
  if (strcmp(want, "tune") == 0 && !has_tunables(r->c, r->best_source))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "case '%s' has no tunables to search", r->c->name);
  char recorded_st[16];
  snprintf(recorded_st, sizeof(recorded_st), "%s", r->strategy);
  const char *st = o->strategy && strcmp(o->strategy, "auto") != 0
                       ? o->strategy : recorded_st[0] ? recorded_st : NULL;
  if (st && strcmp(st, "exhaustive") && strcmp(st, "random") &&
      strcmp(st, "bandit"))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "unknown tune strategy '%s' (exhaustive, random, bandit "
                     "or auto)", st);
  if (!st) {
    size_t total = 1;
    for (size_t i = 0; i < r->c->ntunables && total <= 32; i++)
      total *= r->c->tunables[i].nvalues;
    st = total <= 32 ? "exhaustive" : "bandit";
  }
  snprintf(r->strategy, sizeof(r->strategy), "%s", st);
  if (strcmp(want, "replay") == 0 && !r->replay_dir) {
    if (!o->replay)
      return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                       "the replay proposer needs a run to replay");
    r->replay_dir = strchr(o->replay, '/')
                        ? kl__strdup(o->replay)
                        : NULL;
    if (!r->replay_dir) {
      kl_buf b = KL_BUF_INIT;
      if (kl__buf_printf(&b, "%s/runs/%s", r->case_dir, o->replay) < 0)
        return kl__error_oom();
      r->replay_dir = kl__buf_detach(&b);
    }
    if (!r->replay_dir)
      return kl__error_oom();
    if (!kl__is_dir(r->replay_dir))
      return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                       "%s: no such run to replay", r->replay_dir);
  }
  return 0;
}

/* A replay measures with the recorded run's seed, so its checks see the
 * same inputs, unless the caller chose one. */
static void replay_seed(kl_run *r) {
  if (r->o.seed || !r->replay_dir)
    return;
  char *path = kl__path_join(r->replay_dir, "run.json");
  kl_buf b = KL_BUF_INIT;
  if (path && kl__read_file(&b, path) == 0) {
    json_object *m = json_tokener_parse(b.ptr ? b.ptr : ""), *v;
    if (m && json_object_object_get_ex(m, "seed", &v))
      r->seed = (uint64_t)json_object_get_int64(v);
    json_object_put(m);
  }
  kl_error_clear();
  kl__free(path);
  kl_buf_dispose(&b);
}

/* The profiles an iteration recorded (profile.json), or NULL when it has
 * none that parse (no counters, not profiled). */
static kl_profile_list *recorded_profiles(const kl_run *r, int n) {
  kl_buf path = KL_BUF_INIT, js = KL_BUF_INIT;
  kl_profile_list *l = NULL;
  if (kl__buf_printf(&path, "%s/iter_%03d/profile.json", r->dir, n) == 0 &&
      kl__read_file(&js, path.ptr) == 0)
    kl_profile_list_from_json(&l, js.ptr, path.ptr);
  kl_error_clear();
  kl_buf_dispose(&path);
  kl_buf_dispose(&js);
  return l;
}

static int start_llm(kl_run *r) {
  if (strcmp(r->proposer, "llm") != 0)
    return 0;
  kl_llm_config cfg = *r->o.llm;
  char *rec = kl__path_join(r->dir, "llm");
  if (!rec)
    return kl__error_oom();
  cfg.record_dir = rec;
  int rc = kl_llm_create(&r->llm, &cfg);
  kl__free(rec);
  for (size_t i = 0; rc == 0 && i < r->o.nprices; i++)
    rc = kl_llm_set_price(r->llm, &r->o.prices[i]);
  if (rc == 0)
    rc = kl__run_memory_load(r);
  return rc;
}

/* summary.json: how this session of the run ended (replaced by the next
 * session's). */
static int write_summary(kl_run *r) {
  kl_buf b = KL_BUF_INIT;
  int rc = kl_run_json(&b, r);
  char *path = rc == 0 ? kl__path_join(r->dir, "summary.json") : NULL;
  if (rc == 0 && !path)
    rc = kl__error_oom();
  if (rc == 0)
    rc = kl__write_file_atomic(path, b.ptr, b.size);
  kl__free(path);
  kl_buf_dispose(&b);
  return rc;
}

/* The executor: the caller's, or this host's one GPU (`device`, or the
 * default one), as before executors. A local one learns its devices now,
 * so the batch size is known before the run records it. */
static int start_executor(kl_run *r) {
  if (r->o.executor) {
    r->ex = r->o.executor;
  } else {
    int rc = kl__executor_one_device(&r->ex, r->o.worker_path, r->o.device);
    if (rc < 0)
      return rc;
    r->own_ex = true;
  }
  return kl__executor_devices(r->ex, r->c);
}

/* A run records into the case folder: one it cannot write to is bad input,
 * found before any work rather than after the baseline was measured. */
static int check_writable(const char *dir) {
  static const char *const parts[] = {".", "runs", "solutions.jsonl",
                                      "benchmark.csv", "memory.jsonl"};
  for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
    char *p = kl__path_join(dir, parts[i]);
    if (!p)
      return kl__error_oom();
    int rc = 0;
    if (access(p, F_OK) == 0 && access(p, W_OK) != 0)
      rc = kl__error(KL_EINVALID, KL_DOMAIN_OS,
                     "%s: cannot record a run here: %s", i ? p : dir,
                     strerror(errno));
    kl__free(p);
    if (rc < 0)
      return rc;
  }
  return 0;
}

int kl_run_optimize(kl_run **out, const kl_case *c,
                    const kl_run_options *opts) {
  *out = NULL;
  kl_run_options defaults = KL_RUN_OPTIONS_INIT;
  kl_run *r = kl__calloc(1, sizeof(*r));
  if (!r)
    return kl__error_oom();
  r->lock_fd = -1;
  r->c = c;
  r->o = defaults;
  if (opts) /* an older caller's struct ends before the newer fields */
    memcpy(&r->o, opts, opts->version >= 3   ? sizeof(*opts)
                        : opts->version == 2 ? offsetof(kl_run_options,
                                                        executor)
                                             : offsetof(kl_run_options,
                                                        webhook));
  snprintf(r->wh_status, sizeof(r->wh_status), "%s",
           !r->o.webhook     ? "not configured"
           : r->o.no_webhook ? "disabled by --no-webhook"
                             : "nothing sent yet");
  r->t0_ms = kl__now_ms();
  r->case_dir = kl__strdup(c->dir);
  const char *ext = strrchr(c->kernel_path, '.');
  snprintf(r->kernel_ext, sizeof(r->kernel_ext), "%s",
           ext && strlen(ext) < sizeof(r->kernel_ext) ? ext + 1 : "c");
  r->max_iterations = r->o.iterations > 0 ? r->o.iterations
                      : c->budget.iterations > 0 ? c->budget.iterations
                                                 : 10;
  r->patience = r->o.patience > 0 ? r->o.patience
                : c->budget.patience > 0 ? c->budget.patience
                                         : 4;
  r->best_vs_base.speedup = r->best_vs_base.ci_low = r->best_vs_base.ci_high = 1;
  int rc = r->case_dir ? read_baseline_source(r) : kl__error_oom();
  if (rc == 0)
    rc = check_writable(r->case_dir);
  if (rc == 0)
    rc = kl__run_lock(r);
  if (rc == 0)
    rc = start_executor(r);
  r->batch = r->o.batch;
  if (rc == 0 && r->o.resume)
    rc = kl__run_record_resume(r, r->o.resume);
  if (rc == 0 && r->batch <= 0)
    r->batch = kl_executor_slots(r->ex) > 0 ? kl_executor_slots(r->ex) : 1;
  if (rc == 0)
    rc = choose_proposer(r);
  if (rc == 0 && !r->o.resume) {
    r->seed = r->o.seed;
    replay_seed(r);
    if (!r->seed)
      r->seed = kl__derive_seed((uint64_t)time(NULL) ^
                                    (uint64_t)(r->t0_ms * 1000),
                                (uint64_t)(uintptr_t)r);
    rc = kl__run_record_start(r);
  }
  if (rc == 0)
    kl__run_lock_name(r);
  if (rc == 0)
    rc = start_llm(r);
  if (rc == 0)
    notify(r, "run_start", r->next_iteration, r->proposer);
  if (rc == 0 && r->next_iteration == 0) {
    if ((rc = do_baseline(r)) == 0)
      r->next_iteration = 1;
  } else if (rc == 0) {
    /* resumed: the environment again; the baseline's profile for the gate */
    rc = kl__run_environment(r, NULL);
    if (rc == 0)
      r->base_profiles = recorded_profiles(r, 0);
    if (rc == 0 && r->best_iteration > 0)
      r->best_profiles = recorded_profiles(r, r->best_iteration);
  }
  while (rc == 0 && !r->stop_reason) {
    const char *stop = budget_reached(r);
    if (stop) {
      r->stop_reason = kl__strdup(stop);
      break;
    }
    rc = run_batch(r);
  }
  if (rc == 0 && !r->stop_reason)
    rc = kl__error_oom();
  if (rc == 0) {
    notify(r, "run_end", r->done, r->stop_reason);
    rc = write_summary(r);
  }
  kl__run_unlock(r);
  if (rc < 0) {
    kl_run_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* ---- the summary ---------------------------------------------------------------- */

int kl_run_json(kl_buf *out, const kl_run *r) {
  kl_buf b = KL_BUF_INIT;
  int rc = kl__buf_puts(&b, "{\"run\":");
  rc |= kl__buf_json_string(&b, r->id);
  rc |= kl__buf_puts(&b, ",\"case\":");
  rc |= kl__buf_json_string(&b, r->c->name);
  rc |= kl__buf_puts(&b, ",\"dir\":");
  rc |= kl__buf_json_string(&b, r->dir);
  rc |= kl__buf_printf(&b, ",\"proposer\":\"%s\"", r->proposer);
  if (strcmp(r->proposer, "tune") == 0)
    rc |= kl__buf_printf(&b, ",\"strategy\":\"%s\"", r->strategy);
  rc |= kl__buf_printf(&b, ",\"seed\":%llu,\"iterations\":%d,\"verdicts\":{",
                       (unsigned long long)r->seed, r->done);
  for (int o = 1; o < KL_OUTCOME_COUNT; o++)
    rc |= kl__buf_printf(&b, "%s\"%s\":%d", o > 1 ? "," : "",
                         kl_outcome_name((kl_outcome)o), r->counts[o]);
  rc |= kl__buf_puts(&b, "},\"best\":");
  rc |= kl__buf_json_string(&b, r->best_id);
  rc |= kl__buf_printf(&b,
                       ",\"best_iteration\":%d,\"best_speedup\":{\"speedup\":"
                       "%.6g,\"ci\":[%.6g,%.6g],\"method\":\"%s\"}",
                       r->best_iteration, r->best_vs_base.speedup,
                       r->best_vs_base.ci_low, r->best_vs_base.ci_high,
                       r->best_iteration == 0 ? "baseline"
                       : r->nattempts && r->counts[KL_OUTCOME_ACCEPTED] == 1
                           ? "direct"
                           : "chained");
  rc |= kl__buf_puts(&b, ",\"stop_reason\":");
  rc |= kl__buf_json_string(&b, kl_run_stop_reason(r));
  rc |= kl__buf_puts(&b, ",\"stop_detail\":");
  rc |= kl__buf_json_string(&b, r->stop_detail);
  rc |= kl__buf_printf(
      &b,
      ",\"budget\":{\"iterations\":{\"used\":%d,\"limit\":%lld},"
      "\"patience\":{\"since_accept\":%d,\"limit\":%lld},"
      "\"wall_s\":{\"used\":%.3f,\"limit\":%g},"
      "\"worker_s\":{\"used\":%.3f,\"limit\":%g},"
      "\"usd\":{\"used\":%.6f,\"limit\":%g},"
      "\"tokens\":{\"input\":%llu,\"output\":%llu}}",
      r->done, (long long)r->max_iterations, r->since_accept,
      (long long)r->patience, spent_wall_s(r), r->o.max_wall_s, r->worker_s,
      r->o.max_worker_s, r->usd, r->o.max_usd,
      (unsigned long long)r->tokens_in, (unsigned long long)r->tokens_out);
  rc |= kl__buf_printf(
      &b,
      ",\"webhook_enabled_by_config\":%s,\"webhook_disabled_by_flag\":%s,"
      "\"webhook_expected\":%s,\"webhook_attempted\":%d,"
      "\"webhook_sent\":%d,\"webhook_status\":",
      r->o.webhook ? "true" : "false", r->o.no_webhook ? "true" : "false",
      r->o.webhook && !r->o.no_webhook ? "true" : "false", r->wh_attempted,
      r->wh_sent);
  rc |= kl__buf_json_string(&b, r->wh_status);
  rc |= kl__buf_putc(&b, '}');
  if (rc) {
    kl_buf_dispose(&b);
    return kl__error_oom();
  }
  kl_buf_dispose(out);
  *out = b;
  return 0;
}

/* ---- kl best ---------------------------------------------------------------------- */

typedef struct best_acc {
  double log_best;
  char *line_json;
  char *dir, *kernel;
  char **config;
} best_acc;

static int best_line(json_object *rec, int line, void *payload) {
  (void)line;
  best_acc *a = payload;
  json_object *v, *vb;
  if (!json_object_object_get_ex(rec, "verdict", &v) ||
      strcmp(json_object_get_string(v), "ACCEPTED") != 0 ||
      !json_object_object_get_ex(rec, "vs_baseline", &vb) ||
      !json_object_object_get_ex(vb, "speedup", &v))
    return 0;
  double lb = log(json_object_get_double(v));
  if (a->line_json && lb <= a->log_best)
    return 0;
  json_object *ev, *d, *k, *cfg;
  if (!json_object_object_get_ex(rec, "evidence", &ev) ||
      !json_object_object_get_ex(ev, "dir", &d) ||
      !json_object_object_get_ex(ev, "kernel", &k))
    return 0;
  kl__free(a->line_json);
  kl__free(a->dir);
  kl__free(a->kernel);
  kl__strv_free(a->config);
  a->log_best = lb;
  a->line_json = kl__strdup(json_object_to_json_string_ext(
      rec, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  a->dir = kl__strdup(json_object_get_string(d));
  a->kernel = kl__strdup(json_object_get_string(k));
  a->config = kl__run_config_from_json(
      json_object_object_get_ex(rec, "config", &cfg) ? cfg : NULL);
  return a->line_json && a->dir && a->kernel && a->config ? 0
                                                          : kl__error_oom();
}

int kl_run_best_kernel(kl_buf *source, kl_buf *info, const kl_case *c) {
  best_acc a;
  memset(&a, 0, sizeof(a));
  char *path = kl__path_join(c->dir, "solutions.jsonl");
  int rc = path ? kl__ledger_read(path, best_line, &a) : kl__error_oom();
  kl__free(path);
  if (rc == 0 && !a.line_json)
    rc = kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                   "case '%s' has no accepted candidate yet (run kl run)",
                   c->name);
  kl_buf text = KL_BUF_INIT, kp = KL_BUF_INIT;
  if (rc == 0 && kl__buf_printf(&kp, "%s/%s/%s", c->dir, a.dir, a.kernel) < 0)
    rc = kl__error_oom();
  if (rc == 0)
    rc = kl__read_file(&text, kp.ptr);
  if (rc == 0) {
    kl_buf out = KL_BUF_INIT;
    rc = kl__run_best_kernel_text(&out, text.ptr ? text.ptr : "", a.config);
    if (rc == 0) {
      kl_buf_dispose(source);
      *source = out;
    } else
      kl_buf_dispose(&out);
  }
  if (rc == 0 && info) {
    kl_buf_dispose(info);
    if (kl__buf_puts(info, a.line_json) < 0)
      rc = kl__error_oom();
  }
  kl_buf_dispose(&text);
  kl_buf_dispose(&kp);
  kl__free(a.line_json);
  kl__free(a.dir);
  kl__free(a.kernel);
  kl__strv_free(a.config);
  return rc;
}
