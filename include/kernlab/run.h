/** @file kernlab/run.h  The optimization loop: propose, check, measure,
 *  decide, record, repeat.
 *
 * Iteration 0 is the baseline: checked, timed, profiled, diagnosed. Every
 * later iteration takes one proposal (a rewritten kernel from a language
 * model, a configuration of the tunables, or a recorded proposal replayed),
 * compiles it, checks it on fresh seeds, compares it with the current best
 * (interleaved A/B in one worker), applies the integrity gates, and decides:
 *   ACCEPTED       faster: the objective's 95% interval lies above 1 and the
 *                  gain is at least the case's min_gain_pct;
 *   REJECTED       correct but not faster (same or slower);
 *   INCORRECT, CRASHED, TIMEOUT, COMPILE_ERROR   as kl_bench decides;
 *   INVALID_REPLY  the model's reply carried no usable kernel;
 *   CHEAT          an integrity gate caught it (the record names the gate).
 * The run stops at the first budget reached (iterations, patience, wall
 * time, worker seconds, dollars) or when the proposer has nothing left, and
 * says which.
 *
 * Records, in the case folder, append-only, one fsync'd line per record:
 * runs/<run>/iter_NNN/ (kernel, diff against its parent, prompt and reply,
 * verdict.json, measurements, metrics, fired rules), solutions.jsonl,
 * benchmark.csv, memory.jsonl. A run killed at any instant resumes with
 * kl_run_options.resume without repeating or losing an iteration: an
 * iteration counts once its solutions.jsonl line is written.
 *
 * Threads: a kl_run is used by one thread at a time. Its callbacks run on
 * the thread that called into the run (`propose`, the "propose" and "done"
 * events), except the evaluation's steps (`on_event` with `step` set) of a
 * batch the local executor spreads over several devices: those come from
 * the executor's threads, possibly at the same time, so a callback that
 * keeps state must lock.
 */
#ifndef KERNLAB_RUN_H
#define KERNLAB_RUN_H

#include "bench.h"
#include "case.h"
#include "common.h"
#include "executor.h"
#include "llm.h"
#include "rules.h"
#include "webhook.h"

KL_BEGIN_DECLS

/** What happened to one proposal. */
typedef enum kl_outcome {
  KL_OUTCOME_BASELINE = 0, /**< iteration 0 */
  KL_OUTCOME_ACCEPTED,
  KL_OUTCOME_REJECTED,
  KL_OUTCOME_INCORRECT,
  KL_OUTCOME_CRASHED,
  KL_OUTCOME_TIMEOUT,
  KL_OUTCOME_COMPILE_ERROR,
  KL_OUTCOME_INVALID_REPLY,
  KL_OUTCOME_CHEAT
} kl_outcome;
#define KL_OUTCOME_COUNT 9
/** "BASELINE", "ACCEPTED", "REJECTED", ... */
KL_EXTERN(const char *) kl_outcome_name(kl_outcome o);

/** Something the live view shows. */
typedef struct kl_run_event {
  const char *run; /**< the run id */
  int iteration;
  const char *phase;            /**< "propose", "measure", "profile", "done" */
  const char *proposer;         /**< "baseline", "llm", "tune", "replay" */
  const char *what;             /**< the memo or configuration being tried */
  kl_outcome outcome;           /**< "done" only */
  const char *reason;           /**< "done": why, when rejected */
  double speedup;               /**< "done": against the best before it; 0 */
  double best_speedup;          /**< the best so far against the baseline */
  int iterations_left;          /**< of the iteration budget */
  double wall_s, worker_s, usd; /**< spent so far */
  /** "measure" and "profile": the step of the evaluation running now
   *  ("build", "worker", "load", "checks", "timing", "profile", "gates":
   *  kl_bench_phase_fn's
   *  names); NULL as the phase begins and for a remote executor's
   *  evaluations. */
  const char *step;
} kl_run_event;
typedef void (*kl_run_event_fn)(const kl_run_event *e, void *payload);

/** A proposer of the caller's own (a search, a script, another model
 *  client): given the current best kernel's source and the iteration,
 *  fill `source` with a complete kernel (the case's entry point and
 *  signature) and `memo` (may stay empty) with one line saying what was
 *  tried. Return 0 for a proposal, 1 when there is nothing left to try
 *  (the run stops: "exhausted"), negative to stop the run with
 *  "proposer_error" (the kl_error_last message, if any, as the detail).
 *  Results come back through on_event ("done"). */
typedef int (*kl_propose_fn)(kl_buf *source, kl_buf *memo,
                             const char *best_source, int iteration,
                             void *payload);

#define KL_RUN_OPTIONS_VERSION 3
typedef struct kl_run_options {
  unsigned version;           /**< KL_RUN_OPTIONS_VERSION */
  const char *proposer;       /**< "llm", "tune", "replay", "agent" (an
                                   outside agent's candidates from the
                                   case's inbox: kl_agent_propose),
                                   "custom"; NULL or
                                   "auto": custom when `propose` is set, else
                                   llm when one is configured (llm->provider
                                   set), else tune when the case has tunables */
  const char *strategy;       /**< tune: "exhaustive" (in order), "random" (a
                                   seeded draw), "bandit" (each tunable value
                                   scored by the mean log speedup of the
                                   configurations measured with it, plus an
                                   exploration bonus); NULL or "auto":
                                   exhaustive for spaces of at most 32
                                   configurations, else bandit */
  const char *replay;         /**< replay: the run id (or folder) whose
                                   proposals are replayed, in order */
  const char *resume;         /**< continue this run id; NULL: a new run */
  int64_t iterations;         /**< candidates in the run (resume: the run's
                                   total); 0: the case's budget */
  int64_t patience;           /**< 0: the case's budget */
  double max_wall_s;          /**< 0: no limit */
  double max_worker_s;        /**< seconds spent in the worker (checks, timing,
                                   profiles: the GPU's time on CUDA cases);
                                   0: no limit */
  double max_usd;             /**< LLM dollars; 0: no limit */
  uint64_t seed;              /**< 0: a fresh one (recorded, so a replay can
                                   reuse it) */
  const kl_llm_config *llm;   /**< the llm proposer's provider; the run
                                   records every exchange under its folder
                                   (llm/, which the "replay" provider reads) */
  const kl_llm_price *prices; /**< added to the provider's price table */
  size_t nprices;
  const kl_rules *rules; /**< diagnosis of the baseline and of each
                              accepted candidate; NULL: none */
  const char *profile;   /**< metric set for those profiles; NULL:
                              "standard"; "" : no profiles */
  kl_time_options time;  /**< sampling of every comparison; a resumed run
                              samples as its run.json says, and a setting
                              here that is neither the default nor that is
                              an error (KL_EINVALID); one equal to the
                              default counts as not given */
  int check_seeds;       /**< per shape; 0: 3 */
  int timeout_ms;        /**< per worker request; 0: 60 s */
  const kl_compile_options *compile;
  const char *worker_path;
  int device;               /**< -1: the default */
  kl_run_event_fn on_event; /**< the live view; NULL: none */
  void *payload;
  volatile int *stop; /**< set nonzero (say from SIGINT) to stop
                           after the current step; resumable */
  /* version 2 */
  const kl_webhook *webhook; /**< notified at the run's start, at each
                                  acceptance and at its end (see
                                  kl_webhook_load); NULL: none */
  int no_webhook;            /**< the user turned a configured webhook
                                  off (--no-webhook): nothing is sent,
                                  and the records say why */
  kl_propose_fn propose;     /**< the "custom" proposer */
  void *propose_payload;
  /* version 3 */
  kl_executor *executor; /**< where candidates are evaluated
                              (kernlab/executor.h); NULL: this host,
                              on `device` (or the default GPU) */
  int batch;             /**< proposals evaluated together, each
                              against the best when the batch began;
                              in iteration order, one faster than
                              that is compared again, on one GPU,
                              with a best accepted since. What is
                              recorded depends on the batch, not on
                              the executor. 0: the executor's slots
                              (resume: the run's) */
} kl_run_options;
#define KL_RUN_OPTIONS_INIT                                                    \
  {                                                                            \
    KL_RUN_OPTIONS_VERSION, NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0, 0, NULL,    \
        NULL, 0, NULL, NULL, KL_TIME_OPTIONS_INIT, 0, 0, NULL, NULL, -1, NULL, \
        NULL, NULL, NULL, 0, NULL, NULL, NULL, 0                               \
  }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_RUN_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int) kl_run_options_init(kl_run_options *opts, unsigned version);

typedef struct kl_run kl_run; /* opaque: a finished (or stopped) run */

/** Run the loop on `c` until a budget or the proposer ends it. A proposal
 *  that fails is a verdict, not an error: the call fails only for
 *  kernlab's own failures (no compiler or worker, a baseline that does not
 *  compile or check, records that cannot be written: KL_EIO, with nothing
 *  recorded lost) or bad options (KL_EINVALID: no proposer available, a
 *  resume of an unknown run). */
KL_EXTERN(int)
kl_run_optimize(kl_run **out, const kl_case *c, const kl_run_options *opts);
KL_EXTERN(void) kl_run_free(kl_run *r);

KL_EXTERN(const char *) kl_run_id(const kl_run *r);
/** The run's folder (<case>/runs/<id>). */
KL_EXTERN(const char *) kl_run_dir(const kl_run *r);
/** Why it stopped: "iterations", "patience", "wall_time", "worker_time",
 *  "usd", "exhausted" (the proposer has nothing left), "stopped" (the stop
 *  flag), "executor_error" (an ssh host or Slurm gave no results after
 *  the executor's retries: the records are whole and the run resumes),
 * "llm_error" (the provider failed after its retries: the records are whole and
 * the run resumes), "proposer_error" (a custom proposer returned an error). */
KL_EXTERN(const char *) kl_run_stop_reason(const kl_run *r);
/** For "llm_error" and "proposer_error": the one-line error; else NULL. */
KL_EXTERN(const char *) kl_run_stop_detail(const kl_run *r);
/** Candidate iterations done (the baseline not counted). */
KL_EXTERN(int) kl_run_iterations(const kl_run *r);
KL_EXTERN(int) kl_run_outcome_count(const kl_run *r, kl_outcome o);
/** The best against the baseline (1 with a zero-width interval when
 *  nothing was accepted), and its solution id. */
KL_EXTERN(kl_speedup) kl_run_best_speedup(const kl_run *r);
KL_EXTERN(const char *) kl_run_best_id(const kl_run *r);
/** The summary as one JSON document (fields in docs/json.md), webhook
 *  status included. The same document is written to the run's folder as
 *  summary.json whenever a session of the run ends. */
KL_EXTERN(int) kl_run_json(kl_buf *out, const kl_run *r);

/** The best kernel recorded for the case over every run: its source with
 *  its tunable settings written in as #defines, and (info, may be NULL)
 *  its solutions.jsonl record. @return 0, KL_ENOTFOUND (nothing accepted
 *  yet), KL_EIO, KL_EINVALID (a ledger line that does not parse: located). */
KL_EXTERN(int)
kl_run_best_kernel(kl_buf *source, kl_buf *info, const kl_case *c);

/** The best recorded candidate for each shape as one kernel section (a
 *  dispatcher: kernlab_launch picks a variant by the shape's scalar values;
 *  kernlab/plugin.h) in *source, and (evidence, may be NULL) a JSON object:
 *  per shape the variant's id, run, iteration and its speedup over the
 *  baseline chained through the recorded comparisons, with the interval.
 *  A shape takes the baseline unless a candidate's chained interval lies
 *  above 1 with at least the case's min_gain_pct. Measure the dispatcher
 *  with a direct comparison (kl compare); the chained numbers only choose.
 *  @return 0, KL_ENOTFOUND (no run yet), KL_EIO, KL_EINVALID. */
KL_EXTERN(int)
kl_best_dispatch(kl_buf *source, kl_buf *evidence, const kl_case *c);

/** The agent proposer (`kl run --proposer agent`): an outside agent hands
 *  candidates to the case's inbox (CASE/agent/inbox/) and the run takes
 *  them in the order they came, one per iteration, waiting for the next
 *  until one comes, a budget is reached or the run is stopped; a STOP
 *  (kl_agent_stop) ends the run as "exhausted". The run checks, decides
 *  and records each as it does any proposal. Put a candidate (and a
 *  one-line memo, may be NULL) into the inbox; *name gets its name there.
 *  @return 0, KL_EINVALID, KL_EIO. */
KL_EXTERN(int)
kl_agent_propose(kl_buf *name, const kl_case *c, const char *source,
                 const char *memo);
/** Tell the agent run of case c that no more proposals will come: the next
 *  it waits for ends it ("exhausted"). @return 0, KL_EIO. */
KL_EXTERN(int) kl_agent_stop(const kl_case *c);
/** The verdict the run recorded for the proposal `name`, as a JSON object
 *  ({"name", "id", "run", "iteration", "verdict", "reason", "gate",
 *  "memo", "parent", "vs_parent", "vs_baseline", "dir"}), waiting up to
 *  timeout_ms for it (0: look once). @return 0, KL_ETIMEOUT (not decided
 *  yet: the message says whether a run took it), KL_EINVALID, KL_EIO. */
KL_EXTERN(int)
kl_agent_verdict(kl_buf *out, const kl_case *c, const char *name,
                 int timeout_ms);

KL_END_DECLS

#endif /* KERNLAB_RUN_H */
