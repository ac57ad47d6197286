/* A run's state, folded from its solutions.
 *
 * One function, kl__run_state_apply, turns a committed iteration into the
 * state the loop decides with: the next iteration, the counts and the
 * patience, the best (its kernel, settings and speedup over the baseline),
 * the attempts the prompt and the tuner see, and the recorded costs. The
 * live loop applies each solution it has just written; a resume applies
 * each one it reads back; so a resumed run continues from exactly the
 * state an uninterrupted one had.
 *
 * A commit is its solutions line; the benchmark rows and the memory line
 * that follow it may be missing when the run was stopped in between: a
 * load completes them from the iteration's report.json and its line. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../bench/bench_internal.h"
#include "../core/json.h"
#include "records.h"

void kl__run_state_init(kl__run_state *st) {
  memset(st, 0, sizeof(*st));
  st->best_vs_base.speedup = st->best_vs_base.ci_low =
      st->best_vs_base.ci_high = 1;
}

static void attempt_dispose(kl__attempt *a) {
  kl__free(a->memo);
  kl__free(a->reason);
  kl__free(a->key);
  kl__strv_free(a->config);
}

void kl__run_state_dispose(kl__run_state *st) {
  if (!st) return;
  kl__free(st->best_id);
  kl__free(st->best_source);
  kl__strv_free(st->best_config);
  kl__free(st->baseline_key);
  for (size_t i = 0; i < st->nattempts; i++)
    attempt_dispose(&st->attempts[i]);
  kl__free(st->attempts);
  kl__run_state_init(st);
}

static kl_decision decision_of(const kl_speedup *s) {
  return s->ci_low > 1    ? KL_DECISION_FASTER
         : s->ci_high < 1 ? KL_DECISION_SLOWER
                          : KL_DECISION_SAME;
}

/* A copy of a string that may be NULL; false when the copy failed. */
static bool dup_into(char **dst, const char *s) {
  *dst = s ? kl__strdup(s) : NULL;
  return !s || *dst;
}

int kl__run_state_apply(kl__run_state *st, const kl__solution *s,
                        const char *source) {
  if (s->iteration != st->next_iteration)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "solutions.jsonl: run %s jumps from iteration %d to %d",
                     s->run ? s->run : "?", st->next_iteration - 1,
                     s->iteration);
  bool best = s->iteration == 0 || s->outcome == KL_OUTCOME_ACCEPTED;
  if (best && !source)
    return kl__error(
        KL_EIO, KL_DOMAIN_NONE, "%s: the kernel of a recorded %s is missing",
        s->dir ? s->dir : "?", s->iteration == 0 ? "baseline" : "acceptance");
  /* everything that can fail first: the state moves whole or not at all */
  char *id = NULL, *src = NULL, **config = NULL, *key = NULL;
  kl__attempt a;
  memset(&a, 0, sizeof(a));
  bool ok = dup_into(&key, s->key);
  if (ok && best)
    ok = dup_into(&id, s->id ? s->id : "") && dup_into(&src, source) &&
         (config = kl__strv_dup((const char *const *)s->config));
  if (ok && s->iteration > 0)
    ok = dup_into(&a.memo, s->memo) && dup_into(&a.reason, s->reason) &&
         (a.config = kl__strv_dup((const char *const *)s->config)) &&
         KL__GROW(st->attempts, st->cap_attempts, st->nattempts + 1) == 0;
  if (!ok) {
    kl__free(id);
    kl__free(src);
    kl__strv_free(config);
    kl__free(key);
    attempt_dispose(&a);
    return kl__error_oom();
  }
  st->next_iteration++;
  st->recorded.wall_s += s->cost.wall_s;
  st->recorded.worker_s += s->cost.worker_s;
  st->recorded.usd += s->cost.usd;
  st->recorded.tokens_in += s->cost.tokens_in;
  st->recorded.tokens_out += s->cost.tokens_out;
  if (best) {
    kl__free(st->best_id);
    kl__free(st->best_source);
    kl__strv_free(st->best_config);
    st->best_id = id;
    st->best_source = src;
    st->best_config = config;
    st->best_iteration = s->iteration;
    if (s->has_vs_baseline) {
      st->best_vs_base = s->vs_baseline;
      st->best_vs_base.decision = decision_of(&s->vs_baseline);
    }
  }
  if (s->iteration == 0) {
    kl__free(st->baseline_key);
    st->baseline_key = key;
    return 0;
  }
  st->counts[s->outcome]++;
  st->done++;
  st->since_accept =
      s->outcome == KL_OUTCOME_ACCEPTED ? 0 : st->since_accept + 1;
  a.iteration = s->iteration;
  a.outcome = s->outcome;
  a.key = key;
  a.speedup = s->timed ? s->vs_parent.speedup : 0;
  a.log_vs_base = s->timed ? s->log_vs_baseline : 0;
  st->attempts[st->nattempts++] = a;
  return 0;
}

/* ---- loading
 * ----------------------------------------------------------------------- */

typedef struct load_acc {
  kl__run_state *st;
  const char *run, *run_dir;
  json_object *last_line; /* unused: the last solution is kept below */
  int last_iteration;
  char *last_id, *last_proposer, *last_memo, *last_reason;
  kl_outcome last_outcome;
  bool last_timed;
  double last_speedup;
} load_acc;

static int load_line(const kl__solution *s, int line, void *payload) {
  (void)line;
  load_acc *a = payload;
  if (!s->run || strcmp(s->run, a->run) != 0) return 0;
  kl_buf src = KL_BUF_INIT;
  int rc = 0;
  bool best = s->iteration == 0 || s->outcome == KL_OUTCOME_ACCEPTED;
  if (best && s->kernel &&
      kl__iteration_read(&src, a->run_dir, s->iteration, s->kernel) < 0)
    kl_error_clear(); /* apply says what is missing */
  rc = kl__run_state_apply(a->st, s, best ? src.ptr : NULL);
  kl_buf_dispose(&src);
  if (rc < 0) return rc;
  kl__free(a->last_id);
  kl__free(a->last_proposer);
  kl__free(a->last_memo);
  kl__free(a->last_reason);
  a->last_iteration = s->iteration;
  a->last_outcome = s->outcome;
  a->last_timed = s->timed;
  a->last_speedup = s->vs_parent.speedup;
  if (!dup_into(&a->last_id, s->id) ||
      !dup_into(&a->last_proposer, s->proposer) ||
      !dup_into(&a->last_memo, s->memo) ||
      !dup_into(&a->last_reason, s->reason))
    return kl__error_oom();
  return 0;
}

typedef struct memory_has {
  const char *run;
  int iteration;
  bool found;
} memory_has;

static int memory_line(const kl__memory_line *m, void *payload) {
  memory_has *h = payload;
  if (m->run && strcmp(m->run, h->run) == 0 && m->iteration == h->iteration)
    h->found = true;
  return 0;
}

/* The devlog entry of the accepted version `id`, made from its line. */
typedef struct devlog_fill {
  const char *case_dir, *id;
} devlog_fill;

static int devlog_line(const kl__solution *s, int line, void *payload) {
  (void)line;
  devlog_fill *f = payload;
  if (!s->id || strcmp(s->id, f->id) != 0) return 0;
  return kl__devlog_append(f->case_dir, s);
}

/* The benchmark rows, memory line and devlog entry of the last commit,
 * where missing. */
static int complete_commit(load_acc *a, const char *case_dir,
                           const char *case_name) {
  int n = a->last_iteration;
  kl_buf have = KL_BUF_INIT, text = KL_BUF_INIT;
  json_object *doc = NULL;
  kl_report *rep = NULL;
  memory_has h = {a->run, n, false};
  int rc = kl__benchmark_rows_of(&have, case_dir, a->run, n);
  if (rc < 0) goto done;
  if (kl__iteration_read(&text, a->run_dir, n, "report.json") < 0) {
    kl_error_clear(); /* an iteration without a report has no rows */
  } else if ((rc = kl__json_parse(&doc, text.ptr ? text.ptr : "", "report.json",
                                  "report.json")) < 0 ||
             (rc = kl__report_from_json(&rep, doc, "report.json")) < 0 ||
             (rc = kl__benchmark_rows_write(case_dir, a->run, n, a->last_id,
                                            a->last_outcome, rep,
                                            have.ptr ? have.ptr : "")) < 0) {
    goto done;
  }
  if (n <= 0 || (rc = kl__memory_read(case_dir, memory_line, &h)) < 0 ||
      h.found)
    goto done;
  kl__memory_line m = {case_name,        a->run,          n,
                       a->last_proposer, a->last_memo,    a->last_outcome,
                       a->last_timed,    a->last_speedup, a->last_reason};
  rc = kl__memory_write(case_dir, &m);
done:
  if (rc == 0 && n > 0 && a->last_outcome == KL_OUTCOME_ACCEPTED) {
    bool has = false;
    devlog_fill f = {case_dir, a->last_id};
    if ((rc = kl__devlog_has(&has, case_dir, a->last_id)) == 0 && !has)
      rc = kl__solutions_read(case_dir, devlog_line, &f);
  }
  kl_report_free(rep);
  json_object_put(doc);
  kl_buf_dispose(&have);
  kl_buf_dispose(&text);
  return rc;
}

int kl__run_state_load(kl__run_state *st, const char *case_dir,
                       const char *run_dir, const char *run_id,
                       const char *case_name) {
  load_acc a;
  memset(&a, 0, sizeof(a));
  a.st = st;
  a.run = run_id;
  a.run_dir = run_dir;
  a.last_iteration = -1;
  int rc = kl__solutions_read(case_dir, load_line, &a);
  if (rc == 0 && a.last_iteration >= 0)
    rc = complete_commit(&a, case_dir, case_name);
  kl__free(a.last_id);
  kl__free(a.last_proposer);
  kl__free(a.last_memo);
  kl__free(a.last_reason);
  return rc;
}
