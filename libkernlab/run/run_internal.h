/* The loop's state, shared by the loop (run.c), the proposers (propose.c)
 * and the records (records.c). */
#ifndef KL_RUN_INTERNAL_H
#define KL_RUN_INTERNAL_H

#include "../core/internal.h"
#include "../core/ledger.h"
#include "../exec/exec_internal.h"
#include "kernlab/prompt.h"
#include "kernlab/run.h"

/* One earlier attempt of this run, as the prompt and the tuner see it. */
typedef struct run_attempt {
  int iteration;
  kl_outcome outcome;
  char *memo, *reason;
  char *key;      /* source hash and configuration: what was tried */
  double speedup; /* against the best before it; 0 when not timed */
  double log_vs_base; /* log speedup against the baseline, when timed */
  char **config;  /* NULL-ended */
} run_attempt;

/* What a proposer hands the loop. */
typedef struct proposal {
  const char *proposer; /* "llm", "tune", "replay", "custom" */
  char *source;         /* NULL: the best's source */
  char **config;        /* NULL-ended, owned; NULL: the best's */
  char *memo;
  char *prompt, *reply; /* llm and replayed replies */
  char *invalid;        /* why the reply was turned down: INVALID_REPLY */
  double usd;
  uint64_t tokens_in, tokens_out;
} proposal;

struct kl_run {
  const kl_case *c;
  kl_run_options o;
  char *id, *dir, *case_dir;
  uint64_t seed;
  char proposer[16], strategy[16];
  int64_t max_iterations, patience;
  /* progress */
  int next_iteration, done, since_accept;
  int counts[KL_OUTCOME_COUNT];
  char *stop_reason, *stop_detail;
  /* the best so far */
  char *best_id;
  int best_iteration;
  char *best_source;   /* the kernel text (the baseline's at first) */
  char **best_config;  /* NULL-ended, may be empty */
  kl_speedup best_vs_base;
  kl_profile_list *best_profiles; /* NULL: the baseline's (base_profiles) */
  kl_profile_list *base_profiles; /* the baseline's, for prompts */
  /* spending */
  double wall_before_s, t0_ms, worker_s, usd;
  uint64_t tokens_in, tokens_out;
  /* attempts of this run */
  run_attempt *attempts;
  size_t nattempts;
  char *baseline_key;    /* iteration 0's, never proposed again */
  char **inflight;       /* keys proposed in this batch, not yet recorded:
                            the tuner does not propose them twice */
  size_t ninflight;
  /* where candidates are evaluated */
  kl_executor *ex;
  bool own_ex;           /* made here (the default local one) */
  int batch;             /* proposals evaluated together */
  /* proposers */
  kl_llm *llm;
  char *memory_text;     /* earlier runs' memory, for the prompt */
  char **queue_configs;  /* tune configurations queued behind an LLM
                            candidate that declared tunables: '\n'-joined
                            settings, one entry per configuration */
  size_t nqueue, queue_at;
  char *replay_dir;
  int replay_at;
  char *env_json;        /* environment record, JSON object */
  char kernel_ext[8];    /* "cu" or "c" */
  int lock_fd;           /* the case's lock (records.c), -1 when none */
  /* notifications of this session */
  int wh_attempted, wh_sent;
  char wh_status[320];
};

/* ---- records.c ---- */
int kl__run_record_start(kl_run *r);             /* new run: id, folders */
int kl__run_record_resume(kl_run *r, const char *id);
/* One run per case folder at a time: an advisory lock on CASE/.kl-run.lock
 * (the kernel drops it when the process dies, so a killed run leaves no
 * stale lock). KL_EBUSY naming the run that holds it. */
int kl__run_lock(kl_run *r);
/* Say in the lock file which run holds it (once the id is known). */
void kl__run_lock_name(kl_run *r);
void kl__run_unlock(kl_run *r);
int kl__run_iter_dir(char **out, kl_run *r, int iteration);
int kl__run_write(const char *dir, const char *name, const char *text);
int kl__run_environment(kl_run *r, const kl_report *rep);
char *kl__run_config_text(char *const *config, const char *sep);
/* SHA-256 of a kernel, 64 hex digits. */
void kl__run_source_hash(const char *source, char hex[65]);
/* What was tried: the kernel hash's first 16 digits, '|', the settings. */
char *kl__run_key(const char *hash, char *const *config);
int kl__run_memory_load(kl_run *r);
/* A JSON array of "NAME=VALUE" strings as a NULL-ended list (empty when
 * arr is not an array); NULL only when out of memory. */
char **kl__run_config_from_json(json_object *arr);
int kl__run_best_kernel_text(kl_buf *out, const char *source,
                             char *const *config);
/* An iteration's rows of benchmark.csv (one per timed shape of rep, but
 * those `have` names: '\n'-ended shape names, or NULL) and its line of
 * memory.jsonl. */
int kl__run_benchmark_rows(kl_run *r, int n, const char *id, kl_outcome o,
                           const kl_report *rep, const char *have);
int kl__run_memory_line(kl_run *r, int n, const char *proposer,
                        const char *memo, kl_outcome o, bool timed,
                        double speedup, const char *reason);

/* ---- propose.c ---- */
/* 0 with *p filled, 1 when the proposer has nothing left, 2 when the
 * model's provider failed (the error is set), 3 when a custom proposer
 * failed (the error is set), < 0 an error. */
int kl__run_propose(kl_run *r, proposal *p);
void kl__run_proposal_dispose(proposal *p);
/* `given` completed to every tunable of the space of `source` (the case's
 * and the kernel's own), unset ones at their current value. */
int kl__run_full_config(char ***out, const kl_case *c, const char *source,
                        char *const *given);

#endif /* KL_RUN_INTERNAL_H */
