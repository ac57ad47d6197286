/* The loop: the baseline, then batches of candidates.
 *
 * One batch: propose up to `batch` candidates -> record each proposal ->
 * the executor compiles, checks and compares each with the best of the
 * moment (kl_bench_compare's path, which applies the integrity gates:
 * docs/integrity.md), on as many GPUs or machines as it has
 * (docs/executors.md) -> in iteration order, decide (decide.c); a
 * candidate faster than that best while a later best was accepted in its
 * batch is compared again with it -> profile and diagnose an acceptance ->
 * write its files, then its solutions line (the commit point: an
 * iteration without it is done again on resume), then its benchmark rows
 * and memory line. The state moves only by applying the solution just
 * written (kl__run_state_apply), as a resume applies those it reads. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../bench/bench_internal.h"
#include "../case/case_view.h"
#include "run_internal.h"

/* ---- one measurement -------------------------------------------------------
 */

static kl_bench_options bench_options(const kl_run *r, int iteration) {
  kl_bench_options b = KL_BENCH_OPTIONS_INIT;
  b.check_seeds = r->o.check_seeds;
  b.seed = kl__derive_seed(r->seed, (uint64_t)iteration);
  /* every candidate checked on the run's seeds: the oracle's outputs are
   * made once in a worker kept for the run (timing's seeds stay fresh) */
  b.check_seed = kl__derive_seed(r->seed, UINT64_C(0x636865636b));
  b.time = r->o.time;
  b.timeout_ms = r->o.timeout_ms;
  b.compile = r->o.compile;
  b.worker_path = r->o.worker_path;
  b.device = r->o.device;
  return b;
}

/* Relay the bench's phases of an evaluation to the run's events, as steps
 * of `phase` (the live view shows them). */
static void relay_steps(kl_bench_options *o, kl__run_step *s, kl_run *r,
                        int iteration, const char *phase, const char *proposer,
                        const char *what) {
  s->r = r;
  s->iteration = iteration;
  s->phase = phase;
  s->proposer = proposer;
  s->what = what;
  o->on_phase = kl__run_relay_step;
  o->phase_payload = s;
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
  if (rc == 0) rc = kl__executor_evaluate(r->ex, r->c, ev, n, dir.ptr, ledger);
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
  if (!r->o.profile) return "standard";
  return r->o.profile[0] ? r->o.profile : NULL;
}

/* Shape i's diagnosis, as one entry of rules.json. */
static int diagnosis_json(kl_buf *rules, const kl_rules *rs,
                          const kl_profile_list *list, size_t i) {
  kl_diagnosis *d = NULL;
  kl_buf dj = KL_BUF_INIT;
  int rc;
  if ((rc = kl_rules_evaluate(&d, rs, kl_profile_list_get(list, i))) < 0 ||
      (rc = kl_diagnosis_json(&dj, d)) < 0)
    goto done;
  kl__buf_printf(rules, "%s{\"shape\":", i ? "," : "");
  kl__buf_json_string(rules, kl_profile_list_name(list, i));
  kl__buf_puts(rules, ",\"diagnosis\":");
  kl__buf_put(rules, dj.ptr, dj.size);
  kl__buf_putc(rules, '}');
  rc = kl__buf_status(rules);
done:
  kl_buf_dispose(&dj);
  kl_diagnosis_free(d);
  return rc;
}

/* Profile a kernel and diagnose it; the report's JSON goes to
 * profile.json, the diagnoses to rules.json, the profiles into *list. A
 * failure to profile is recorded, not fatal: the run goes on without. */
static int profile_and_diagnose(kl_run *r, const char *dir, int iteration,
                                const char *source, char *const *config,
                                kl_profile_list **list) {
  const char *set = profile_set(r);
  if (!set) return 0;
  kl__run_emit(r, iteration, "profile", NULL, NULL, KL_OUTCOME_BASELINE, NULL,
               0);
  kl_bench_options b = bench_options(r, iteration + 500000);
  kl__run_step step;
  relay_steps(&b, &step, r, iteration, "profile", NULL, NULL);
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
  if (rc == 0) rc = ev.rc;
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
    return kl__iteration_write(dir, "profile.json", note);
  }
  if ((rc = kl_report_json(&js, rep)) < 0 ||
      (rc = kl__buf_putc(&js, '\n')) < 0 ||
      (rc = kl__iteration_write(dir, "profile.json", js.ptr)) < 0)
    goto done;
  kl_profile_list *l = NULL;
  if (kl_profile_list_from_json(&l, js.ptr, "profile.json") < 0) {
    kl_error_clear(); /* no profile values here (no counters) */
  } else {
    kl_profile_list_free(*list);
    *list = l;
  }
  kl__buf_puts(&rules, "[");
  for (size_t i = 0; r->o.rules && *list && i < kl_profile_list_count(*list);
       i++)
    if ((rc = diagnosis_json(&rules, r->o.rules, *list, i)) < 0) goto done;
  kl__buf_puts(&rules, "]\n");
  if ((rc = kl__buf_status(&rules)) == 0)
    rc = kl__iteration_write(dir, "rules.json", rules.ptr);
done:
  kl_buf_dispose(&js);
  kl_buf_dispose(&rules);
  kl_report_free(rep);
  return rc;
}

/* ---- records of one iteration ----------------------------------------------
 */

typedef struct iteration {
  int n;
  char *dir;
  const char *proposer;
  char *source; /* what was measured */
  char **config;
  char *memo, *reason;
  const char *gate;
  kl_outcome outcome;
  kl_speedup vs_parent; /* timed only */
  bool timed;
  kl_speedup vs_base;        /* accepted and baseline */
  char *parent_id;           /* the best it was compared with (NULL: none) */
  kl_speedup parent_vs_base; /* that best against the baseline */
  char *where;               /* JSON: where it was evaluated */
  bool rechecked;            /* compared again with a best accepted in its
                                batch */
  double t0_ms;              /* when the iteration began */
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

static int write_verdict(const kl_run *r, const iteration *it) {
  double bytes = 0;
  kl__verdict v = {it->n,
                   it->outcome,
                   it->reason,
                   it->gate,
                   it->memo,
                   it->parent_id,
                   kl_case_on_gpu(r->c),
                   kl_case_roofline(&bytes, NULL, r->c, 0) == 0 && bytes > 0,
                   it->has_reply,
                   it->timed,
                   it->vs_parent,
                   kl__case_budget(r->c)->min_gain_pct,
                   it->rechecked,
                   it->where};
  kl_error_clear(); /* a case without roofline bytes is no error here */
  return kl__verdict_write(it->dir, &v);
}

/* diff -u of two files, labelled; a missing diff program is no error. */
static int diff_files(kl_run *r, iteration *it, const char *pa,
                      const char *pb) {
  kl_buf la = KL_BUF_INIT, lb = KL_BUF_INIT;
  kl__run_result res;
  memset(&res, 0, sizeof(res));
  kl__buf_printf(&la, "--label=%s (parent)",
                 r->st.best_id ? r->st.best_id : "");
  kl__buf_printf(&lb, "--label=iter_%03d", it->n);
  int rc;
  if ((rc = kl__buf_status(&la)) < 0 || (rc = kl__buf_status(&lb)) < 0)
    goto done;
  const char *argv[] = {"diff", "-u", la.ptr, lb.ptr, pa, pb, NULL};
  if (kl__run(&res, argv, NULL, 20000, 8 << 20) < 0 || res.exit_code > 1) {
    kl_error_clear(); /* no diff program: the kernels are both kept */
    goto done;
  }
  rc = kl__iteration_write(it->dir, "kernel.diff",
                           res.output.ptr ? res.output.ptr : "");
  it->has_diff = rc == 0;
done:
  kl_buf_dispose(&res.output);
  kl_buf_dispose(&la);
  kl_buf_dispose(&lb);
  return rc;
}

/* diff -u of the two kernels as built (settings written in front). */
static int write_diff(kl_run *r, iteration *it) {
  kl_buf a = KL_BUF_INIT, b = KL_BUF_INIT, x = KL_BUF_INIT, y = KL_BUF_INIT;
  char *pa = NULL, *pb = NULL;
  int rc;
  kl__buf_printf(&x, "%s/.parent.%s", it->dir, r->kernel_ext);
  kl__buf_printf(&y, "%s/.candidate.%s", it->dir, r->kernel_ext);
  bool defines = kl_case_backend(r->c) != KL_BACKEND_COMMAND;
  if ((rc = kl__kernel_with_settings(&a, r->st.best_source, r->st.best_config,
                                     defines)) < 0 ||
      (rc = kl__kernel_with_settings(&b, it->source, it->config, defines)) < 0)
    goto done;
  pa = kl__buf_detach(&x); /* NULL when a write failed */
  pb = kl__buf_detach(&y);
  if (!pa || !pb) {
    rc = KL_ENOMEM;
    goto done;
  }
  if ((rc = kl__write_new_file(pa, a.ptr, a.size)) < 0 ||
      (rc = kl__write_new_file(pb, b.ptr, b.size)) < 0)
    goto done;
  rc = diff_files(r, it, pa, pb);
done:
  if (pa) remove(pa);
  if (pb) remove(pb);
  kl__free(pa);
  kl__free(pb);
  kl_buf_dispose(&a);
  kl_buf_dispose(&b);
  kl_buf_dispose(&x);
  kl_buf_dispose(&y);
  return rc;
}

/* The kernel as it was measured, its report and compile log. */
static int write_evidence(iteration *it, const kl_report *rep,
                          const char *kernel_name) {
  kl_buf js = KL_BUF_INIT;
  int rc;
  if ((rc = kl__iteration_write(it->dir, kernel_name, it->source)) < 0 || !rep)
    goto done;
  if ((rc = kl_report_json(&js, rep)) < 0 ||
      (rc = kl__buf_putc(&js, '\n')) < 0 ||
      (rc = kl__iteration_write(it->dir, "report.json", js.ptr)) < 0)
    goto done;
  if (kl_report_compile_log(rep) &&
      kl_report_verdict(rep) == KL_VERDICT_COMPILE_ERROR) {
    rc =
        kl__iteration_write(it->dir, "compile.log", kl_report_compile_log(rep));
    it->has_compile_log = rc == 0;
  }
done:
  kl_buf_dispose(&js);
  return rc;
}

/* Write what every iteration leaves behind, then commit it (the
 * solutions.jsonl line), fold it into the run's state, and write the
 * records that follow a commit (benchmark rows, memory line, and the
 * devlog entry of an acceptance). */
static int finish(kl_run *r, iteration *it, const kl_report *rep) {
  char id[96];
  snprintf(id, sizeof(id), "%s/%03d", r->id, it->n);
  char hash[65];
  kl__run_source_hash(it->source, hash);
  char *key = kl__run_key(hash, it->config);
  kl_buf name = KL_BUF_INIT, dir = KL_BUF_INIT, measurement = KL_BUF_INIT;
  it->wall_s = (kl__now_ms() - it->t0_ms) / 1000.0;
  kl__buf_printf(&name, "kernel.%s", r->kernel_ext);
  kl__buf_printf(&dir, "runs/%s/iter_%03d", r->id, it->n);
  int rc = key ? 0 : kl__error_oom();
  if (rc < 0 || (rc = kl__buf_status(&name)) < 0 ||
      (rc = kl__buf_status(&dir)) < 0 ||
      (rc = write_evidence(it, rep, name.ptr)) < 0 ||
      (rc = write_verdict(r, it)) < 0)
    goto done;
  bool best =
      it->outcome == KL_OUTCOME_ACCEPTED || it->outcome == KL_OUTCOME_BASELINE;
  if (rep && kl_report_verdict(rep) == KL_VERDICT_OK &&
      (rc = kl__report_evidence_json(&measurement, rep)) < 0)
    goto done;
  kl__solution s = {
      .id = id,
      .parent = it->parent_id,
      .run = r->id,
      .case_name = kl_case_name(r->c),
      .proposer = it->proposer,
      .iteration = it->n,
      .source_sha256 = hash,
      .key = key,
      .config = it->config,
      .outcome = it->outcome,
      .reason = it->reason,
      .gate = it->gate,
      .memo = it->memo,
      .timed = it->timed,
      .vs_parent = it->vs_parent,
      .log_vs_baseline =
          it->timed ? log(it->vs_parent.speedup * it->parent_vs_base.speedup)
                    : 0,
      .has_vs_baseline = best,
      .vs_baseline = it->vs_base,
      .method = r->st.best_iteration == 0 ? "direct" : "chained",
      .dir = dir.ptr,
      .kernel = name.ptr,
      .diff = it->has_diff,
      .prompt = it->has_prompt,
      .reply = it->has_reply,
      .compile_log = it->has_compile_log,
      .profile = it->profiled,
      .environment = r->env_json,
      .ran_on = it->where,
      .measurement = measurement.size ? measurement.ptr : NULL,
      .rechecked = it->rechecked,
      .cost = {it->wall_s, it->worker_s, it->usd, it->tokens_in,
               it->tokens_out},
      .time = (long long)time(NULL)};
  /* the commit: from its line on, the iteration counts */
  if ((rc = kl__solution_write(r->case_dir, &s)) < 0 ||
      (rc = kl__run_state_apply(&r->st, &s, it->source)) < 0 ||
      (rep && (rc = kl__benchmark_rows_write(r->case_dir, r->id, it->n, id,
                                             it->outcome, rep, NULL)) < 0) ||
      it->n == 0)
    goto done;
  kl__memory_line m = {
      kl_case_name(r->c), r->id,       it->n,     it->proposer,
      it->memo,           it->outcome, it->timed, it->vs_parent.speedup,
      it->reason};
  if ((rc = kl__memory_write(r->case_dir, &m)) == 0 &&
      it->outcome == KL_OUTCOME_ACCEPTED)
    rc = kl__devlog_append(r->case_dir, &s);
done:
  kl__free(key);
  kl_buf_dispose(&name);
  kl_buf_dispose(&dir);
  kl_buf_dispose(&measurement);
  return rc;
}

int kl__run_baseline(kl_run *r) {
  iteration it;
  memset(&it, 0, sizeof(it));
  it.proposer = "baseline";
  it.outcome = KL_OUTCOME_BASELINE;
  it.t0_ms = kl__now_ms();
  it.vs_base.speedup = it.vs_base.ci_low = it.vs_base.ci_high = 1;
  kl__run_emit(r, 0, "measure", "baseline", "the case's kernel",
               KL_OUTCOME_BASELINE, NULL, 0);
  kl_report *rep = NULL;
  int rc;
  if ((rc = kl__iteration_dir(&it.dir, r->dir, 0)) < 0) goto done;
  if (!(it.source = kl__strdup(r->st.best_source))) {
    rc = kl__error_oom();
    goto done;
  }
  if ((rc = kl__run_full_config(&it.config, r->c, r->st.best_source, NULL)) < 0)
    goto done;
  kl__eval ev;
  memset(&ev, 0, sizeof(ev));
  ev.o = bench_options(r, 0);
  ev.o.candidate_config = (const char *const *)it.config;
  kl__run_step step;
  relay_steps(&ev.o, &step, r, 0, "measure", "baseline", "the case's kernel");
  if ((rc = evaluate(r, &ev, 1, "iter_000")) == 0 && ev.rc < 0)
    rc = eval_error(&ev);
  it.worker_s = ev.seconds;
  rep = ev.report;
  ev.report = NULL;
  it.where = ev.where;
  ev.where = NULL;
  kl__eval_dispose(&ev);
  if (rc < 0) goto done;
  if (kl_report_verdict(rep) != KL_VERDICT_OK) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                   "the baseline of case '%s' failed: %s: %s",
                   kl_case_name(r->c), kl_verdict_name(kl_report_verdict(rep)),
                   kl_report_reason(rep) ? kl_report_reason(rep) : "");
    goto done;
  }
  if ((rc = kl__run_environment(r, rep)) < 0) goto done;
  double p0 = kl__now_ms();
  rc = profile_and_diagnose(r, it.dir, 0, it.source, it.config,
                            &r->base_profiles);
  it.worker_s += (kl__now_ms() - p0) / 1000.0;
  it.profiled = r->base_profiles != NULL;
  if (rc < 0 || (rc = finish(r, &it, rep)) < 0) goto done;
  kl__run_emit(r, 0, "done", "baseline", "the case's kernel",
               KL_OUTCOME_BASELINE, NULL, 1);
done:
  kl_report_free(rep);
  iteration_dispose(&it);
  return rc;
}

/* ---- a candidate ------------------------------------------------------------
 */

static int write_proposal(const kl_run *r, iteration *it, const proposal *p) {
  kl__proposal_file f = {it->n,      p->proposer, r->st.best_id, p->memo,
                         p->invalid, it->config,  p->prompt,     p->reply};
  int rc = kl__proposal_write(it->dir, &f);
  it->has_prompt = rc == 0 && p->prompt;
  it->has_reply = rc == 0 && p->reply;
  return rc;
}

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
  it->parent_vs_base = r->st.best_vs_base;
  int rc = kl__iteration_dir(&it->dir, r->dir, it->n);
  if (rc < 0) return rc;
  it->source = kl__strdup(p->source ? p->source : r->st.best_source);
  it->memo = p->memo ? kl__strdup(p->memo) : NULL;
  it->parent_id = kl__strdup(r->st.best_id);
  if (!it->source || (p->memo && !it->memo) || !it->parent_id)
    return kl__error_oom();
  if ((rc = kl__run_full_config(&it->config, r->c, it->source,
                                p->config ? p->config : r->st.best_config)) <
          0 ||
      (rc = write_proposal(r, it, p)) < 0)
    return rc;
  if (p->invalid) {
    it->outcome = KL_OUTCOME_INVALID_REPLY;
    it->gate = strstr(p->invalid, "elision") || strstr(p->invalid, "stub")
                   ? "elisions_and_stubs"
                   : NULL;
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
  ev->o.against = r->st.best_source;
  ev->o.against_config = (const char *const *)r->st.best_config;
  ev->o.candidate = it->source;
  ev->o.candidate_config = (const char *const *)it->config;
  snprintf(cname, cap, "iter_%03d.%s", it->n, r->kernel_ext);
  ev->o.candidate_name = cname;
}

/* The verdict of a comparison's report. */
static int decide(kl_run *r, iteration *it, const kl_report *rep) {
  kl__decision d;
  int rc = kl__decide(&d, rep, it->parent_vs_base,
                      kl__case_budget(r->c)->min_gain_pct);
  kl__free(it->reason);
  it->reason = d.reason;
  if (rc < 0) return rc;
  it->outcome = d.outcome;
  it->gate = d.gate;
  it->timed = d.timed;
  if (d.timed) it->vs_parent = d.vs_parent;
  if (d.outcome == KL_OUTCOME_ACCEPTED) it->vs_base = d.vs_base;
  return 0;
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
      strcmp(it->parent_id, r->st.best_id) == 0)
    return rc;
  kl__free(it->parent_id);
  if (!(it->parent_id = kl__strdup(r->st.best_id))) return kl__error_oom();
  it->parent_vs_base = r->st.best_vs_base;
  it->rechecked = true;
  kl__eval ev;
  char cname[32], name[48];
  compare_eval(&ev, r, it, cname, sizeof(cname));
  kl__run_step step;
  relay_steps(&ev.o, &step, r, it->n, "measure", it->proposer, it->memo);
  snprintf(name, sizeof(name), "iter_%03d_recheck", it->n);
  kl__run_emit(r, it->n, "measure", it->proposer, it->memo, KL_OUTCOME_BASELINE,
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
    if (rc < 0) return rc;
  }
  if ((rc = finish(r, it, rep)) < 0) return rc;
  kl__run_emit(r, it->n, "done", it->proposer, it->memo, it->outcome,
               it->reason, it->timed ? it->vs_parent.speedup : 0);
  if (it->outcome == KL_OUTCOME_ACCEPTED)
    kl__run_notify(r, "accepted", it->n, it->memo);
  return 0;
}

/* The key a proposal will be recorded under, held while its batch is out
 * so the tuner does not propose it twice. */
static int hold_key(kl_run *r, const proposal *p) {
  const char *src = p->source ? p->source : r->st.best_source;
  char **cfg = NULL;
  int rc = kl__run_full_config(&cfg, r->c, src,
                               p->config ? p->config : r->st.best_config);
  char hash[65];
  kl__run_source_hash(src, hash);
  char *key = rc == 0 ? kl__run_key(hash, cfg) : NULL;
  if (rc == 0)
    rc = key ? KL__GROW(r->inflight, r->cap_inflight, r->ninflight + 1)
             : kl__error_oom();
  kl__strv_free(cfg);
  if (rc < 0) {
    kl__free(key);
    return rc;
  }
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
  r->stop_detail =
      fallback ? kl__strdup(e && e->message ? e->message : fallback) : NULL;
}

/* One batch: up to r->batch proposals, evaluated together against the
 * best of the moment, then decided and recorded in iteration order.
 * Proposals past a stop (the proposer ran out or failed) are not made;
 * those made are still measured and recorded. */
int kl__run_batch(kl_run *r) {
  int64_t left = r->max_iterations - r->st.done;
  size_t want = (size_t)(r->batch > 0 ? r->batch : 1);
  if ((int64_t)want > left) want = (size_t)left;
  proposal *ps = kl__calloc(want, sizeof(*ps));
  iteration *its = kl__calloc(want, sizeof(*its));
  kl__eval *evs = kl__calloc(want, sizeof(*evs));
  kl__run_step *steps = kl__calloc(want, sizeof(*steps));
  size_t *at = kl__calloc(want, sizeof(*at)); /* iteration -> evaluation */
  char(*cnames)[32] = kl__calloc(want, sizeof(*cnames));
  int base = r->st.next_iteration, rc = 0, prc = 0;
  size_t n = 0, nev = 0;
  if (!ps || !its || !evs || !steps || !at || !cnames) {
    rc = kl__error_oom();
    goto done;
  }
  while (n < want) {
    if (n > 0 && kl__run_budget_reached(r)) break;
    r->next_iteration = base + (int)n; /* what the proposer sees */
    kl__run_emit(r, r->next_iteration, "propose", r->proposer, NULL,
                 KL_OUTCOME_BASELINE, NULL, 0);
    if ((prc = kl__run_propose(r, &ps[n])) != 0) {
      kl__run_proposal_dispose(&ps[n]); /* what a failed proposal got */
      break;
    }
    if ((rc = hold_key(r, &ps[n++])) < 0) goto done;
  }
  if (prc < 0) {
    rc = prc;
    goto done;
  }
  if (prc == 4) /* the agent proposer waited past a budget, or a stop */
    set_stop(r,
             kl__run_budget_reached(r) ? kl__run_budget_reached(r) : "stopped",
             NULL);
  if (prc == 1 || prc == 2 || prc == 3)
    set_stop(r,
             prc == 1   ? "exhausted"
             : prc == 2 ? "llm_error"
                        : "proposer_error",
             prc == 1   ? NULL
             : prc == 2 ? "the provider failed"
                        : "the proposer failed");
  for (size_t k = 0; k < n; k++) {
    if ((rc = prepare(r, &its[k], &ps[k], base + (int)k)) < 0) goto done;
    at[k] = SIZE_MAX;
    if (its[k].outcome == KL_OUTCOME_INVALID_REPLY) continue;
    compare_eval(&evs[nev], r, &its[k], cnames[k], sizeof(cnames[k]));
    relay_steps(&evs[nev].o, &steps[nev], r, its[k].n, "measure",
                its[k].proposer, its[k].memo);
    kl__run_emit(r, its[k].n, "measure", its[k].proposer, its[k].memo,
                 KL_OUTCOME_BASELINE, NULL, 0);
    at[k] = nev++;
  }
  bool gave_up = false;
  if (nev > 0) {
    char name[48];
    if (n == 1)
      snprintf(name, sizeof(name), "iter_%03d", base);
    else
      snprintf(name, sizeof(name), "iter_%03d-%03d", base, base + (int)n - 1);
    gave_up = evaluate(r, evs, nev, name) < 0;
    if (gave_up) set_stop(r, "executor_error", "the executor gave up");
  }
  /* decide and record in order. A batch the executor gave up on is
   * recorded not at all, even where results came back: its decisions hang
   * together (a recheck follows an acceptance), and --resume proposes it
   * again whole, so the records come out as an uninterrupted run's. */
  for (size_t k = 0; !gave_up && k < n; k++) {
    iteration *it = &its[k];
    kl_report *rep = NULL;
    if (at[k] != SIZE_MAX) {
      kl__eval *ev = &evs[at[k]];
      if (ev->rc == 0 && !ev->report)
        ev->rc = KL_EIO, ev->error = kl__strdup("the executor gave no result");
      if (ev->rc < 0) {
        rc = eval_error(ev);
        goto done;
      }
      rep = take(it, ev);
      bool again_gave_up = false;
      int settled = settle(r, it, &rep, &again_gave_up);
      if (again_gave_up) {
        set_stop(r, "executor_error", "the executor gave up");
        kl_report_free(rep);
        break;
      }
      if (settled < 0) {
        rc = settled;
        kl_report_free(rep);
        goto done;
      }
    }
    rc = conclude(r, it, rep);
    kl_report_free(rep);
    if (rc < 0) goto done;
  }
  if (n == 0 && !r->stop_reason)
    rc = kl__error_oom(); /* nothing proposed and no reason: cannot be */
done:
  r->next_iteration = r->st.next_iteration;
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
  kl__free(steps);
  kl__free(at);
  kl__free(cnames);
  return rc;
}
