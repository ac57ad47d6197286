/* kl_run_optimize: set a run up (options, the proposer and its strategy,
 * the executor, a new run's records or a resumed run's state), run the
 * loop (loop.c) until a budget or the proposer stops it, and say how it
 * ended (summary.json, kl_run_json). Also the run's accessors and kl best.
 * See kernlab/run.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../case/case_view.h"
#include "../core/sandbox.h"
#include "../llm/llm_internal.h"
#include "run_internal.h"

void kl_run_free(kl_run *r) {
  if (!r) return;
  kl__case_unlock(&r->lock_fd);
  kl__free(r->id);
  kl__free(r->dir);
  kl__free(r->case_dir);
  kl__free(r->stop_reason);
  kl__free(r->stop_detail);
  kl__run_state_dispose(&r->st);
  kl_profile_list_free(r->best_profiles);
  kl_profile_list_free(r->base_profiles);
  kl_llm_free(r->llm);
  kl__free(r->memory_text);
  kl__free(r->devlog_text);
  kl_knowledge_free(r->knowledge);
  kl__free(r->replay_dir);
  kl__free(r->env_json);
  for (size_t i = 0; i < r->ninflight; i++)
    kl__free(r->inflight[i]);
  kl__free(r->inflight);
  if (r->own_ex) kl_executor_free(r->ex);
  kl__free(r);
}

const char *kl_run_id(const kl_run *r) {
  return r->id;
}
const char *kl_run_dir(const kl_run *r) {
  return r->dir;
}
const char *kl_run_stop_reason(const kl_run *r) {
  return r->stop_reason ? r->stop_reason : "running";
}
const char *kl_run_stop_detail(const kl_run *r) {
  return r->stop_detail;
}
int kl_run_iterations(const kl_run *r) {
  return r->st.done;
}
int kl_run_outcome_count(const kl_run *r, kl_outcome o) {
  return (unsigned)o < KL_OUTCOME_COUNT ? r->st.counts[o] : 0;
}
kl_speedup kl_run_best_speedup(const kl_run *r) {
  return r->st.best_vs_base;
}
const char *kl_run_best_id(const kl_run *r) {
  return r->st.best_id;
}

static bool has_tunables(const kl_case *c, const char *source) {
  return kl_case_tunable_count(c) > 0 || (source && strstr(source, "@tunable"));
}

/* The proposer and strategy, and what each needs. */
static int choose_proposer(kl_run *r) {
  const kl_run_options *o = &r->o;
  bool llm_set = o->llm && o->llm->provider && o->llm->provider[0];
  char recorded[16];
  snprintf(recorded, sizeof(recorded), "%s", r->proposer);
  const char *want =
      o->proposer && strcmp(o->proposer, "auto") != 0 ? o->proposer : NULL;
  if (!want && recorded[0]) want = recorded; /* a resumed run keeps its own */
  if (!want && o->replay) want = "replay";
  if (!want && o->propose) want = "custom";
  if (!want)
    want = llm_set                                 ? "llm"
           : has_tunables(r->c, r->st.best_source) ? "tune"
                                                   : NULL;
  if (!want)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "case '%s' has no tunables and no language model is "
                     "configured: set llm.provider (and a key in the "
                     "environment) in ~/.config/kernlab/config.yaml or the "
                     "case's llm: section, or KL_LLM_PROVIDER; or give the "
                     "case tunables",
                     kl_case_name(r->c));
  if (strcmp(want, "llm") && strcmp(want, "tune") && strcmp(want, "replay") &&
      strcmp(want, "custom") && strcmp(want, "agent"))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "unknown proposer '%s' (llm, tune, replay, agent, "
                     "custom or auto)",
                     want);
  if (strcmp(want, "custom") == 0 && !o->propose)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "the custom proposer needs a propose function");
  snprintf(r->proposer, sizeof(r->proposer), "%s", want);
  if (strcmp(want, "llm") == 0 && !llm_set)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "the llm proposer needs a provider: set llm.provider in "
                     "the user config or the case, or KL_LLM_PROVIDER");
  if (strcmp(want, "tune") == 0 && !has_tunables(r->c, r->st.best_source))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "case '%s' has no tunables to search: add `tunables: "
                     "{ NAME: [v1, v2] }` to case.yaml, or a line "
                     "`// @tunable NAME: v1, v2` to the kernel "
                     "(docs/case-format.md)",
                     kl_case_name(r->c));
  char recorded_st[16];
  snprintf(recorded_st, sizeof(recorded_st), "%s", r->strategy);
  const char *st = o->strategy && strcmp(o->strategy, "auto") != 0 ? o->strategy
                   : recorded_st[0]                                ? recorded_st
                                                                   : NULL;
  if (st && strcmp(st, "exhaustive") && strcmp(st, "random") &&
      strcmp(st, "bandit"))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "unknown tune strategy '%s' (exhaustive, random, bandit "
                     "or auto)",
                     st);
  if (!st) {
    size_t total = 1;
    for (size_t i = 0; i < kl_case_tunable_count(r->c) && total <= 32; i++)
      total *= kl_case_tunable_value_count(r->c, i);
    st = total <= 32 ? "exhaustive" : "bandit";
  }
  snprintf(r->strategy, sizeof(r->strategy), "%s", st);
  if (strcmp(want, "replay") == 0 && !r->replay_dir) {
    if (!o->replay)
      return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                       "the replay proposer needs a run to replay");
    r->replay_dir = strchr(o->replay, '/') ? kl__strdup(o->replay) : NULL;
    if (!r->replay_dir) {
      kl_buf b = KL_BUF_INIT;
      if (kl__buf_printf(&b, "%s/runs/%s", r->case_dir, o->replay) < 0)
        return kl__error_oom();
      r->replay_dir = kl__buf_detach(&b);
    }
    if (!r->replay_dir) return kl__error_oom();
    if (!kl__is_dir(r->replay_dir))
      return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "%s: no such run to replay",
                       r->replay_dir);
  }
  return 0;
}

/* A replay measures with the recorded run's seed, so its checks see the
 * same inputs, unless the caller chose one. */
static int recorded_seed(const kl__run_meta *m, void *payload) {
  kl_run *r = payload;
  if (m->seed) r->seed = m->seed;
  return 0;
}

static void replay_seed(kl_run *r) {
  if (r->o.seed || !r->replay_dir) return;
  kl__run_meta_read(r->replay_dir, recorded_seed, r); /* none: a fresh seed */
  kl_error_clear();
}

/* ---- the memory of earlier runs
 * ------------------------------------------------ */

/* Past this many characters the memory goes to the prompt compacted: every
 * accepted idea with its gain, then counts per verdict and the most recent
 * rejected ideas. The compaction is written to memory.summary.md. */
#define MEMORY_BUDGET 6000
/* The devlog's newest entries, in characters (its section: 800 tokens). */
#define DEVLOG_BUDGET 3200

typedef struct memory_acc {
  const char *run;
  kl_buf full, accepted, recent;
  int counts[KL_OUTCOME_COUNT];
  int entries;
} memory_acc;

static int memory_line(const kl__memory_line *l, void *payload) {
  memory_acc *m = payload;
  if (l->run && m->run && strcmp(l->run, m->run) == 0)
    return 0; /* this run's attempts go in as attempts */
  if (!l->memo) return 0;
  const char *verdict = kl_outcome_name(l->outcome);
  double sp = l->timed ? l->speedup : 0;
  m->counts[l->outcome]++;
  m->entries++;
  kl__buf_printf(&m->full, "- %s: %s", verdict, l->memo);
  if (sp > 0) kl__buf_printf(&m->full, " (x%.3f)", sp);
  kl__buf_putc(&m->full, '\n');
  if (l->outcome == KL_OUTCOME_ACCEPTED) {
    kl__buf_printf(&m->accepted, "- ACCEPTED: %s (x%.3f)\n", l->memo, sp);
  } else {
    /* keep the last 20 non-accepted lines */
    kl__buf_printf(&m->recent, "- %s: %s\n", verdict, l->memo);
    size_t lines = 0;
    for (size_t i = 0; i < m->recent.size; i++)
      lines += m->recent.ptr[i] == '\n';
    if (lines > 20) {
      char *nl = strchr(m->recent.ptr, '\n');
      size_t cut = (size_t)(nl - m->recent.ptr) + 1;
      memmove(m->recent.ptr, m->recent.ptr + cut, m->recent.size - cut + 1);
      m->recent.size -= cut;
    }
  }
  int rc = kl__buf_status(&m->full);
  if (rc == 0 && (rc = kl__buf_status(&m->accepted)) == 0)
    rc = kl__buf_status(&m->recent);
  return rc;
}

static int memory_load(kl_run *r) {
  memory_acc m;
  memset(&m, 0, sizeof(m));
  m.run = r->id;
  int rc = kl__memory_read(r->case_dir, memory_line, &m);
  if (rc == 0 && m.entries > 0) {
    if (m.full.size <= MEMORY_BUDGET) {
      r->memory_text = kl__buf_detach(&m.full);
    } else {
      kl_buf s = KL_BUF_INIT;
      kl__buf_printf(&s, "(compacted from %d attempts)\n", m.entries);
      kl__buf_puts(&s, m.accepted.ptr ? m.accepted.ptr : "");
      kl__buf_puts(&s, "counts:");
      for (int o = 1; o < KL_OUTCOME_COUNT; o++)
        if (m.counts[o])
          kl__buf_printf(&s, " %s %d", kl_outcome_name((kl_outcome)o),
                         m.counts[o]);
      kl__buf_puts(&s, "\nmost recent without acceptance:\n");
      kl__buf_puts(&s, m.recent.ptr ? m.recent.ptr : "");
      if ((rc = kl__buf_status(&s)) == 0) {
        if (kl__memory_summary_write(r->case_dir, s.ptr) < 0)
          kl_error_clear(); /* the summary file is a convenience */
        r->memory_text = kl__buf_detach(&s);
      }
      kl_buf_dispose(&s);
    }
  }
  kl_buf_dispose(&m.full);
  kl_buf_dispose(&m.accepted);
  kl_buf_dispose(&m.recent);
  return rc;
}

/* ---- a resumed run, a new run
 * ------------------------------------------------------ */

/* A run samples one way throughout: a resumed run takes its sampling
 * settings from run.json. A caller's setting that is neither the default
 * (not given) nor the recorded one is an error, not ignored. A run.json
 * from before they were recorded leaves the caller's. */
static int resumed_sampling(kl_run *r, const kl__run_meta *m) {
  if (m->sampling_bad)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s/run.json: %s%s is not what kernlab writes there, so "
                     "the run cannot be resumed as it sampled",
                     r->dir,
                     strncmp(m->sampling_bad, "sampling", 8) ? "sampling." : "",
                     m->sampling_bad);
  if (!m->has_sampling) return 0;
  kl_time_options def = KL_TIME_OPTIONS_INIT, *given = &r->o.time;
  const kl_time_options *rec = &m->sampling;
#define KL_CHANGED(f) (given->f != def.f && given->f != rec->f)
  char how[64] = "";
  if (KL_CHANGED(cold))
    snprintf(how, sizeof(how), "%s", given->cold ? "cold" : "hot");
  else if (KL_CHANGED(time_cap_ms))
    snprintf(how, sizeof(how), "with a %d ms time cap", given->time_cap_ms);
  else if (KL_CHANGED(warmup) || KL_CHANGED(min_samples) ||
           KL_CHANGED(max_samples) || KL_CHANGED(target_rel_ci) ||
           KL_CHANGED(block_rounds))
    snprintf(how, sizeof(how), "with other sampling settings");
#undef KL_CHANGED
  if (how[0])
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "run %s samples %s with a %d ms time cap (its run.json) "
                     "and keeps that when resumed: it cannot be resumed %s; "
                     "start a new run to sample otherwise",
                     m->run ? m->run : "?", rec->cold ? "cold" : "hot",
                     rec->time_cap_ms, how);
  given->cold = rec->cold;
  given->warmup = rec->warmup;
  given->min_samples = rec->min_samples;
  given->max_samples = rec->max_samples;
  given->target_rel_ci = rec->target_rel_ci;
  given->time_cap_ms = rec->time_cap_ms;
  given->block_rounds = rec->block_rounds;
  return 0;
}

/* The run's settings from its run.json, unless the caller gives new ones
 * (sampling: resumed_sampling). */
static int resumed_settings(const kl__run_meta *m, void *payload) {
  kl_run *r = payload;
  int rc = resumed_sampling(r, m);
  if (rc < 0) return rc;
  if (m->seed) r->seed = m->seed;
  if (m->proposer)
    snprintf(r->proposer, sizeof(r->proposer), "%s", m->proposer);
  if (m->strategy)
    snprintf(r->strategy, sizeof(r->strategy), "%s", m->strategy);
  if (!r->o.iterations && m->iterations > 0) r->max_iterations = m->iterations;
  if (!r->batch && m->batch > 0) r->batch = m->batch;
  if (!r->o.patience && m->patience > 0) r->patience = m->patience;
  if (!r->o.max_wall_s) r->o.max_wall_s = m->max_wall_s;
  if (!r->o.max_worker_s) r->o.max_worker_s = m->max_worker_s;
  if (!r->o.max_usd) r->o.max_usd = m->max_usd;
  if (!r->replay_dir && m->replay && !(r->replay_dir = kl__strdup(m->replay)))
    return kl__error_oom();
  return 0;
}

static int resume(kl_run *r, const char *id) {
  int rc = kl__run_dir(&r->dir, r->case_dir, id);
  if (rc < 0) return rc;
  if (!kl__is_dir(r->dir))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s: no such run of case '%s'", r->dir,
                     kl_case_name(r->c));
  if (!(r->id = kl__strdup(id))) return kl__error_oom();
  if ((rc = kl__run_meta_read(r->dir, resumed_settings, r)) < 0) return rc;
  rc = kl__run_state_load(&r->st, r->case_dir, r->dir, r->id,
                          kl_case_name(r->c));
  if (rc < 0) return rc;
  /* this session's spending starts from what the records say */
  r->wall_before_s = r->st.recorded.wall_s;
  r->worker_s = r->st.recorded.worker_s;
  r->usd = r->st.recorded.usd;
  r->tokens_in = r->st.recorded.tokens_in;
  r->tokens_out = r->st.recorded.tokens_out;
  r->next_iteration = r->st.next_iteration;
  return 0;
}

static int start_records(kl_run *r) {
  kl__run_meta m = {NULL,
                    kl_case_name(r->c),
                    r->seed,
                    r->proposer,
                    r->strategy,
                    (long long)r->max_iterations,
                    (long long)r->patience,
                    kl__case_budget(r->c)->min_gain_pct,
                    r->o.max_wall_s,
                    r->o.max_worker_s,
                    r->o.max_usd,
                    (long long)time(NULL),
                    kl__sandbox_summary(),
                    r->batch,
                    kl_executor_describe(r->ex),
                    r->replay_dir,
                    1,
                    r->o.time,
                    NULL};
  return kl__run_create(&r->dir, &r->id, r->case_dir, &m);
}

/* The profiles an iteration recorded (profile.json), or NULL when it has
 * none that parse (no counters, not profiled). */
static kl_profile_list *recorded_profiles(const kl_run *r, int n) {
  kl_buf js = KL_BUF_INIT;
  kl_profile_list *l = NULL;
  if (kl__iteration_read(&js, r->dir, n, "profile.json") == 0)
    kl_profile_list_from_json(&l, js.ptr, "profile.json");
  kl_error_clear();
  kl_buf_dispose(&js);
  return l;
}

static int start_llm(kl_run *r) {
  if (strcmp(r->proposer, "llm") != 0) return 0;
  kl_llm_config cfg;
  int rc = kl__llm_config_take(&cfg, r->o.llm);
  if (rc < 0) return rc;
  char *rec = kl__path_join(r->dir, "llm");
  if (!rec) return kl__error_oom();
  cfg.record_dir = rec;
  rc = kl_llm_create(&r->llm, &cfg);
  kl__free(rec);
  for (size_t i = 0; rc == 0 && i < r->o.nprices; i++)
    rc = kl_llm_set_price(r->llm, &r->o.prices[i]);
  if (rc == 0) rc = memory_load(r);
  /* what the prompt shows besides: the devlog's newest entries, and the
   * knowledge base (a front matter that does not read stops the run here,
   * located, before anything is spent) */
  kl_buf dl = KL_BUF_INIT;
  if (rc == 0 && (rc = kl__devlog_tail(&dl, r->case_dir, DEVLOG_BUDGET)) == 0 &&
      dl.size && !(r->devlog_text = kl__buf_detach(&dl)))
    rc = kl__error_oom();
  kl_buf_dispose(&dl);
  if (rc == 0) rc = kl_knowledge_load(&r->knowledge, r->c);
  return rc;
}

/* summary.json: how this session of the run ended (replaced by the next
 * session's). */
static int write_summary(kl_run *r) {
  kl_buf b = KL_BUF_INIT;
  int rc = kl_run_json(&b, r);
  if (rc == 0) rc = kl__summary_write(r->dir, b.ptr);
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
    if (rc < 0) return rc;
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
    if (!p) return kl__error_oom();
    int rc = 0;
    if (access(p, F_OK) == 0 && access(p, W_OK) != 0)
      rc = kl__error(KL_EINVALID, KL_DOMAIN_OS,
                     "%s: cannot record a run here: %s", i ? p : dir,
                     strerror(errno));
    kl__free(p);
    if (rc < 0) return rc;
  }
  return 0;
}

static int read_baseline_source(kl_run *r) {
  kl_buf b = KL_BUF_INIT;
  int rc = kl__read_file(&b, kl_case_kernel_path(r->c));
  if (rc < 0) return rc;
  r->st.best_source = kl__buf_detach(&b);
  return r->st.best_source ? 0 : kl__error_oom();
}

/* Everything before the first measurement: the case's lock, the executor,
 * a resumed run's state or a new run's records, the proposer, the model. */
static int set_up(kl_run *r) {
  int rc;
  if ((rc = read_baseline_source(r)) < 0 ||
      (rc = check_writable(r->case_dir)) < 0 ||
      (rc = kl__case_lock(&r->lock_fd, r->case_dir, kl_case_name(r->c))) < 0 ||
      (rc = start_executor(r)) < 0)
    return rc;
  r->batch = r->o.batch;
  if (r->o.resume && (rc = resume(r, r->o.resume)) < 0) return rc;
  if (r->batch <= 0)
    r->batch = kl_executor_slots(r->ex) > 0 ? kl_executor_slots(r->ex) : 1;
  if ((rc = choose_proposer(r)) < 0) return rc;
  if (!r->o.resume) {
    r->seed = r->o.seed;
    replay_seed(r);
    if (!r->seed) r->seed = kl__fresh_seed();
    if ((rc = start_records(r)) < 0) return rc;
  }
  kl__case_lock_name(r->lock_fd, r->id);
  return start_llm(r);
}

/* A new run measures its baseline; a resumed one reads the environment
 * again and the profiles the gate and the prompts need. */
static int start(kl_run *r) {
  int rc;
  if (r->st.next_iteration == 0) {
    if ((rc = kl__run_baseline(r)) == 0)
      r->next_iteration = r->st.next_iteration;
    return rc;
  }
  if ((rc = kl__run_environment(r, NULL)) < 0) return rc;
  r->base_profiles = recorded_profiles(r, 0);
  if (r->st.best_iteration > 0)
    r->best_profiles = recorded_profiles(r, r->st.best_iteration);
  return 0;
}

int kl_run_optimize(kl_run **out, const kl_case *c,
                    const kl_run_options *opts) {
  *out = NULL;
  kl_run *r = kl__calloc(1, sizeof(*r));
  if (!r) return kl__error_oom();
  r->lock_fd = -1;
  r->c = c;
  int rc = kl__run_options_take(&r->o, opts);
  if (rc < 0) {
    kl__free(r);
    return rc;
  }
  snprintf(r->wh_status, sizeof(r->wh_status), "%s",
           !r->o.webhook     ? "not configured"
           : r->o.no_webhook ? "disabled by --no-webhook"
                             : "nothing sent yet");
  r->t0_ms = kl__now_ms();
  const char *ext = strrchr(kl_case_kernel_path(c), '.');
  snprintf(r->kernel_ext, sizeof(r->kernel_ext), "%s",
           ext && strlen(ext) < sizeof(r->kernel_ext) ? ext + 1 : "c");
  r->max_iterations = r->o.iterations > 0 ? r->o.iterations
                      : kl__case_budget(c)->iterations > 0
                          ? kl__case_budget(c)->iterations
                          : 10;
  r->patience = r->o.patience > 0 ? r->o.patience
                : kl__case_budget(c)->patience > 0
                    ? kl__case_budget(c)->patience
                    : 4;
  kl__run_state_init(&r->st);
  if (!(r->case_dir = kl__strdup(kl_case_dir(c)))) {
    rc = kl__error_oom();
    goto fail;
  }
  if ((rc = set_up(r)) < 0) goto fail;
  kl__run_notify(r, "run_start", r->next_iteration, r->proposer);
  if ((rc = start(r)) < 0) goto fail;
  while (!r->stop_reason) {
    const char *stop = kl__run_budget_reached(r);
    if (stop) {
      if (!(r->stop_reason = kl__strdup(stop))) {
        rc = kl__error_oom();
        goto fail;
      }
      break;
    }
    if ((rc = kl__run_batch(r)) < 0) goto fail;
  }
  kl__run_notify(r, "run_end", r->st.done, r->stop_reason);
  if ((rc = write_summary(r)) < 0) goto fail;
  kl__case_unlock(&r->lock_fd);
  *out = r;
  return 0;
fail:
  kl__case_unlock(&r->lock_fd);
  kl_run_free(r);
  return rc;
}

/* ---- the summary
 * ---------------------------------------------------------------- */

int kl_run_json(kl_buf *out, const kl_run *r) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_printf(&b, "{\"v\":%d,\"run\":", KL__SUMMARY_VERSION);
  kl__buf_json_string(&b, r->id);
  kl__buf_puts(&b, ",\"case\":");
  kl__buf_json_string(&b, kl_case_name(r->c));
  kl__buf_puts(&b, ",\"dir\":");
  kl__buf_json_string(&b, r->dir);
  kl__buf_printf(&b, ",\"proposer\":\"%s\"", r->proposer);
  if (strcmp(r->proposer, "tune") == 0)
    kl__buf_printf(&b, ",\"strategy\":\"%s\"", r->strategy);
  kl__buf_printf(&b, ",\"seed\":%llu,\"iterations\":%d,\"verdicts\":{",
                 (unsigned long long)r->seed, r->st.done);
  for (int o = 1; o < KL_OUTCOME_COUNT; o++)
    kl__buf_printf(&b, "%s\"%s\":%d", o > 1 ? "," : "",
                   kl_outcome_name((kl_outcome)o), r->st.counts[o]);
  kl__buf_puts(&b, "},\"best\":");
  kl__buf_json_string(&b, r->st.best_id);
  kl__buf_printf(&b,
                 ",\"best_iteration\":%d,\"best_speedup\":{\"speedup\":"
                 "%.6g,\"ci\":[%.6g,%.6g],\"method\":\"%s\"}",
                 r->st.best_iteration, r->st.best_vs_base.speedup,
                 r->st.best_vs_base.ci_low, r->st.best_vs_base.ci_high,
                 r->st.best_iteration == 0 ? "baseline"
                 : r->st.nattempts && r->st.counts[KL_OUTCOME_ACCEPTED] == 1
                     ? "direct"
                     : "chained");
  kl__buf_puts(&b, ",\"stop_reason\":");
  kl__buf_json_string(&b, kl_run_stop_reason(r));
  kl__buf_puts(&b, ",\"stop_detail\":");
  kl__buf_json_string(&b, r->stop_detail);
  kl__buf_printf(&b,
                 ",\"budget\":{\"iterations\":{\"used\":%d,\"limit\":%lld},"
                 "\"patience\":{\"since_accept\":%d,\"limit\":%lld},"
                 "\"wall_s\":{\"used\":%.3f,\"limit\":%g},"
                 "\"worker_s\":{\"used\":%.3f,\"limit\":%g},"
                 "\"usd\":{\"used\":%.6f,\"limit\":%g},"
                 "\"tokens\":{\"input\":%llu,\"output\":%llu}}",
                 r->st.done, (long long)r->max_iterations, r->st.since_accept,
                 (long long)r->patience, kl__run_spent_wall_s(r),
                 r->o.max_wall_s, r->worker_s, r->o.max_worker_s, r->usd,
                 r->o.max_usd, (unsigned long long)r->tokens_in,
                 (unsigned long long)r->tokens_out);
  kl__buf_printf(
      &b,
      ",\"webhook_enabled_by_config\":%s,\"webhook_disabled_by_flag\":%s,"
      "\"webhook_expected\":%s,\"webhook_attempted\":%d,"
      "\"webhook_sent\":%d,\"webhook_status\":",
      r->o.webhook ? "true" : "false", r->o.no_webhook ? "true" : "false",
      r->o.webhook && !r->o.no_webhook ? "true" : "false", r->wh_attempted,
      r->wh_sent);
  kl__buf_json_string(&b, r->wh_status);
  kl__buf_putc(&b, '}');
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}

/* ---- kl best
 * ---------------------------------------------------------------------- */

typedef struct best_out {
  kl_buf *source, *info;
  const kl_case *c;
} best_out;

static int best_text(const kl__solution *s, const char *source,
                     const char *line_json, void *payload) {
  best_out *o = payload;
  kl_buf text = KL_BUF_INIT;
  int rc = kl__kernel_with_settings(
      &text, source, s->config, kl_case_backend(o->c) != KL_BACKEND_COMMAND);
  if (rc < 0) goto done;
  if (o->info) {
    kl_buf_dispose(o->info);
    if ((rc = kl__buf_puts(o->info, line_json)) < 0) goto done;
  }
  kl__buf_give(o->source, &text);
done:
  kl_buf_dispose(&text);
  return rc;
}

int kl_run_best_kernel(kl_buf *source, kl_buf *info, const kl_case *c) {
  best_out o = {source, info, c};
  return kl__solution_best(kl_case_dir(c), kl_case_name(c), best_text, &o);
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t run_options_sizes[] = {0, offsetof(kl_run_options, webhook),
                                           offsetof(kl_run_options, executor),
                                           sizeof(kl_run_options)};

KL__OPTIONS_FUNCTIONS(kl_run_options, kl_run_options_init, kl__run_options_take,
                      KL_RUN_OPTIONS_INIT, run_options_sizes)
