/* The loop's state and the files of the run module:
 *   setup.c    kl_run_optimize: options, the proposer, the executor, a new
 *              or resumed run's records, then the loop; the summary
 *   loop.c     the baseline and the batches of candidates, recorded
 *   decide.c   what a comparison decides (no worker needed: tested alone)
 *   propose.c  the proposers: llm, tune, replay, agent, custom
 *   agent.c    the outside agent's side of the agent proposer
 *   keys.c     what identifies a candidate (its hash and settings)
 *   events.c   progress events and webhook messages
 *   env.c      the environment a run records
 * Dependencies run one way: setup -> loop -> propose, decide, keys, events,
 * env; the records module (libkernlab/records) owns every file written. */
#ifndef KL_RUN_INTERNAL_H
#define KL_RUN_INTERNAL_H

#include "../core/internal.h"
#include "../exec/exec_internal.h"
#include "../records/records.h"
#include "kernlab/knowledge.h"
#include "kernlab/prompt.h"
#include "kernlab/run.h"

/* What a proposer hands the loop. */
typedef struct proposal {
  const char *proposer; /* "llm", "tune", "replay", "agent", "custom" */
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
  /* what the records say (records/state.c): progress, the best, attempts */
  kl__run_state st;
  int next_iteration; /* what the proposer sees (a batch's k-th) */
  char *stop_reason, *stop_detail;
  kl_profile_list *best_profiles; /* NULL: the baseline's (base_profiles) */
  kl_profile_list *base_profiles; /* the baseline's, for prompts */
  /* spending: earlier sessions' and this session's */
  double wall_before_s, t0_ms, worker_s, usd;
  uint64_t tokens_in, tokens_out;
  char **inflight; /* keys proposed in this batch, not yet recorded:
                      the tuner does not propose them twice */
  size_t ninflight, cap_inflight;
  /* where candidates are evaluated */
  kl_executor *ex;
  bool own_ex; /* made here (the default local one) */
  int batch;   /* proposals evaluated together */
  /* proposers */
  kl_llm *llm;
  char *memory_text;       /* earlier runs' memory, for the prompt */
  char *devlog_text;       /* the tail of devlog.md, for the prompt */
  kl_knowledge *knowledge; /* the knowledge base, for Prior art */
  char *replay_dir;
  char *env_json;     /* environment record, JSON object */
  char kernel_ext[8]; /* "cu" or "c" */
  int lock_fd;        /* the case's lock (records), -1 when none */
  /* notifications of this session */
  int wh_attempted, wh_sent;
  char wh_status[320];
};

/* ---- loop.c ---- */
/* Iteration 0: check, time, profile and diagnose the baseline; record. */
int kl__run_baseline(kl_run *r);
/* One batch of proposals, evaluated, decided and recorded in order. */
int kl__run_batch(kl_run *r);

/* ---- decide.c ---- */
/* Seconds of wall time spent on the run, earlier sessions included. */
double kl__run_spent_wall_s(const kl_run *r);
/* The first budget the run has reached ("iterations", "patience",
 * "wall_time", "worker_time", "usd", "stopped"), or NULL. */
const char *kl__run_budget_reached(const kl_run *r);
/* What a candidate's report decides against the best it was compared
 * with: *outcome, *gate (static, CHEAT only), *reason (owned), and for a
 * timed one its speedup; an acceptance's speedup over the baseline chains
 * parent_vs_base with it. */
typedef struct kl__decision {
  kl_outcome outcome;
  const char *gate;
  char *reason;
  bool timed;
  kl_speedup vs_parent, vs_base;
} kl__decision;
int kl__decide(kl__decision *d, const kl_report *rep, kl_speedup parent_vs_base,
               double min_gain_pct);
/* Combine the best's interval against the baseline with a new step's, on
 * the log scale, as independent errors. */
kl_speedup kl__chain(kl_speedup a, kl_speedup b);

/* ---- keys.c ---- */
/* SHA-256 of a kernel, 64 hex digits. */
void kl__run_source_hash(const char *source, char hex[65]);
/* What was tried: the kernel hash's first 16 digits, '|', the settings. */
char *kl__run_key(const char *hash, char *const *config);

/* ---- events.c ---- */
/* Where a bench's phases are relayed to the run's events (an evaluation's
 * kl_bench_options.phase_payload; it lives as long as the evaluation). */
typedef struct kl__run_step {
  kl_run *r;
  int iteration;
  const char *phase, *proposer, *what;
} kl__run_step;
void kl__run_relay_step(const char *step, void *payload);
void kl__run_emit(kl_run *r, int iteration, const char *phase,
                  const char *proposer, const char *what, kl_outcome o,
                  const char *reason, double speedup);
/* A webhook message; a failure is never the run's. */
void kl__run_notify(kl_run *r, const char *event, int iteration,
                    const char *detail);

/* ---- env.c ---- */
/* The environment record (GPU, driver, toolkit, host, sandbox), once. */
int kl__run_environment(kl_run *r, const kl_report *rep);

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

/* The taker of this module's options struct (KL__OPTIONS_FUNCTIONS,
 * beside its init function): a caller's struct, whatever its version,
 * over this library's defaults. */
int kl__run_options_take(kl_run_options *full, const kl_run_options *given);

#endif /* KL_RUN_INTERNAL_H */
