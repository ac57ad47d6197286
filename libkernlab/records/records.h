/* What kl run records, and the only code that writes or reads it.
 *
 * One owner per on-disk format: every record type has one writer and one
 * reader here, each record carries its schema version ("v"; a record
 * without one is version 1), and every write goes through io.c, behind a
 * fault point (fault.c) so a test can stop a run at any write.
 *
 *   CASE/solutions.jsonl   one line per iteration: the commit point
 *   CASE/benchmark.csv     one row per timed shape of an iteration
 *   CASE/memory.jsonl      what was tried and how it ended, for prompts
 *   CASE/export.jsonl      kl export's steps
 *   CASE/devlog.md         one entry per accepted version, for people
 *   CASE/.kl-run.lock      held while a run records (one run per case)
 *   RUN/run.json           how the run was started
 *   RUN/summary.json       how its last session ended (kl_run_json)
 *   RUN/executor.jsonl     batches an executor evaluated
 *   RUN/iter_NNN/          an iteration's files (verdict.json and others)
 *   RUN/llm/               the model exchanges, NNNN.prompt/reply.txt
 *   CASE/agent/inbox/      candidates for `kl run --proposer agent`
 *   RUN/agent/             those taken, by iteration (inbox.c)
 *
 * state.c folds solutions into a run's state (kl__run_state): the live
 * loop applies each record it commits, a resume applies each record it
 * reads, with one function. */
#ifndef KL_RECORDS_H
#define KL_RECORDS_H

#include <json-c/json.h>

#include "../core/internal.h"
#include "kernlab/bench.h"
#include "kernlab/run.h"

/* ---- io.c: every record write, each behind a fault point ------------------
 */

/* Append `line` (no newline; one is added) to the ledger at `path`,
 * creating it with `header` as its first line when new (NULL: none): one
 * write(), fsync'd; a torn tail left by a killed writer is cut back to the
 * last complete line first. KL_EIO with the path and the reason. */
int kl__ledger_append(const char *path, const char *line, const char *header);
/* Call fn for each complete JSON line of `path` (1-based line numbers); a
 * missing file has no lines, a torn tail is no line. A complete line that
 * does not parse is KL_EINVALID "path:line:column: message"; fn's
 * negative return stops the reading and is returned. */
typedef int (*kl__ledger_fn)(json_object *rec, int line, void *payload);
int kl__ledger_read(const char *path, kl__ledger_fn fn, void *payload);
/* A new file (KL_EEXISTS when there is one), fsync'd; a file replaced
 * whole through a temporary name and rename(); a folder; a rename. */
int kl__record_new_file(const char *path, const char *data, size_t n);
int kl__record_replace(const char *path, const char *data, size_t n);
int kl__record_mkdir(const char *path);
int kl__record_rename(const char *from, const char *to);

/* ---- inbox.c: the agent proposer's inbox ----------------------------------
 */
/* Put a candidate (and its one-line memo, may be NULL) into
 * CASE/agent/inbox/ as <stamp>-<sha256><ext>; *name gets that name. */
int kl__inbox_put(kl_buf *name, const char *case_dir, const char *source,
                  const char *memo, const char *ext);
/* CASE/agent/inbox/STOP: the next take says 1 (no more proposals). */
int kl__inbox_stop(const char *case_dir);
/* The proposal for `iteration` of the run in run_dir: the one it took
 * before (RUN/agent/NNN-*), else the inbox's first, moved there. 0 with
 * *source (and *memo, or NULL) allocated; 1 when the inbox says STOP (it
 * is taken too); 2 when there is nothing yet; or an error. */
int kl__inbox_take(char **source, char **memo, const char *case_dir,
                   const char *run_dir, int iteration);
/* Which run and iteration took the candidate named `name`: 0 with *run
 * allocated, 2 when none has yet. */
int kl__inbox_taken_by(char **run, int *iteration, const char *case_dir,
                       const char *name);

/* ---- fault.c: the fault points (tests only) ---------------------------------
 */
enum { KL__FAULT_NONE, KL__FAULT_FAIL, KL__FAULT_TORN };
/* A record write is about to happen: NONE to go on; FAIL: fail it (errno
 * EIO); TORN: write half, then kl__fault_die(). Always NONE but in the test
 * build (KL_FAULT_INJECTION). */
int kl__fault_point(const char *op, const char *path);
void kl__fault_die(void);

/* ---- outcome.c
 * ----------------------------------------------------------------- */
/* The outcome a recorded verdict names; KL_OUTCOME_REJECTED for an
 * unknown one, -1 (as int) through kl__outcome_index for none. */
kl_outcome kl__outcome_from_name(const char *name);
int kl__outcome_index(const char *name);

/* ---- solutions.c: CASE/solutions.jsonl
 * ------------------------------------------- */

typedef struct kl__cost {
  double wall_s, worker_s, usd;
  uint64_t tokens_in, tokens_out;
} kl__cost;

/* One iteration's line. Strings are borrowed: the writer's caller owns
 * them; a reader's callback sees them for its duration only. */
typedef struct kl__solution {
  const char *id, *parent, *run, *case_name, *proposer;
  int iteration;
  const char *source_sha256, *key;
  char *const *config; /* NULL-ended settings "NAME=VALUE" */
  kl_outcome outcome;
  const char *reason, *gate, *memo;
  bool timed;             /* compared with its parent */
  kl_speedup vs_parent;   /* speedup and interval, when timed */
  double log_vs_baseline; /* when timed */
  bool has_vs_baseline;   /* baseline and acceptances */
  kl_speedup vs_baseline;
  const char *method; /* of vs_baseline: "direct" or "chained" */
  /* the evidence, in the iteration's folder */
  const char *dir;    /* runs/<run>/iter_NNN, relative to the case */
  const char *kernel; /* kernel.cu or kernel.c */
  bool diff, prompt, reply, compile_log, profile;
  const char *environment, *ran_on; /* JSON objects as text, or NULL */
  /* how the verdict's numbers were obtained (the bench's evidence: checks,
   * comparison, gates, card and clock), a JSON object as text; NULL for an
   * untimed line (and lines written before it was kept) */
  const char *measurement;
  bool rechecked;
  kl__cost cost;
  long long time;
} kl__solution;

int kl__solution_write(const char *case_dir, const kl__solution *s);
/* Every complete line, in order, parsed; config allocated for the call. */
typedef int (*kl__solution_fn)(const kl__solution *s, int line, void *payload);
int kl__solutions_read(const char *case_dir, kl__solution_fn fn, void *payload);
/* The accepted solution with the largest speedup over its baseline, any
 * run: fn gets it, its kernel as recorded (read from its folder) and its
 * line as JSON text, all borrowed for the call. KL_ENOTFOUND when there is
 * none. */
typedef int (*kl__best_fn)(const kl__solution *s, const char *source,
                           const char *line_json, void *payload);
int kl__solution_best(const char *case_dir, const char *case_name,
                      kl__best_fn fn, void *payload);
/* A kernel with its settings written in front as #defines; with defines
 * false (a command case's file, whose settings go by environment) the
 * source alone. */
int kl__kernel_with_settings(kl_buf *out, const char *source,
                             char *const *config, bool defines);
/* A JSON array of "NAME=VALUE" strings as a NULL-ended list (empty when
 * arr is not an array); NULL only when out of memory. */
char **kl__config_from_json(json_object *arr);
/* A NULL-ended list of settings as a JSON array (nonzero: out of memory). */
int kl__config_json(kl_buf *b, char *const *config);

/* ---- ledgers.c: benchmark.csv, memory.jsonl, executor.jsonl, export.jsonl
 * ------ */

/* An iteration's rows: one per timed shape of rep, but those `have`
 * names ('\n'-ended shape names, or NULL). */
int kl__benchmark_rows_write(const char *case_dir, const char *run, int n,
                             const char *id, kl_outcome o, const kl_report *rep,
                             const char *have);
/* The shape names (each '\n'-ended, appended to *shapes) of the rows
 * already there for (run, iteration). */
int kl__benchmark_rows_of(kl_buf *shapes, const char *case_dir, const char *run,
                          int n);

/* One row of benchmark.csv, its strings borrowed for the callback. */
typedef struct kl__benchmark_row {
  const char *run;
  int iteration;
  const char *id, *shape, *verdict;
  double median_us;
  bool compared;      /* timed against another kernel (its parent) */
  kl_speedup speedup; /* against that kernel, when compared */
} kl__benchmark_row;
typedef int (*kl__benchmark_fn)(const kl__benchmark_row *r, void *payload);
int kl__benchmark_read(const char *case_dir, kl__benchmark_fn fn,
                       void *payload);

typedef struct kl__memory_line {
  const char *case_name, *run;
  int iteration;
  const char *proposer, *memo;
  kl_outcome outcome;
  bool timed;
  double speedup;
  const char *reason;
} kl__memory_line;
int kl__memory_write(const char *case_dir, const kl__memory_line *m);
typedef int (*kl__memory_fn)(const kl__memory_line *m, void *payload);
int kl__memory_read(const char *case_dir, kl__memory_fn fn, void *payload);
/* CASE/memory.summary.md: the memory, compacted, as prompts get it. */
int kl__memory_summary_write(const char *case_dir, const char *text);

/* A line of RUN/executor.jsonl (ledger NULL: nothing is written). */
int kl__executor_line_write(const char *ledger, const char *executor,
                            const char *batch, int attempt, const char *state,
                            const char *job, const char *detail);

/* A line of CASE/export.jsonl: {"v", "export", "case", "time", "step",
 * ...the fields of `rest`}; rest is consumed. */
int kl__export_line_write(const char *ledger, const char *export_id,
                          const char *case_name, const char *step,
                          json_object *rest);

/* ---- devlog.c: CASE/devlog.md, one entry per accepted version
 * ---------------------------------------------------------------------- */

/* The entry of an accepted version, from its solutions line alone (a
 * markdown block that starts with "\n## <id>: "). */
int kl__devlog_entry(kl_buf *out, const kl__solution *s);
/* Append s's entry (the file made with its header when new). */
int kl__devlog_append(const char *case_dir, const kl__solution *s);
/* The whole file (nothing when there is none). */
int kl__devlog_read(kl_buf *out, const char *case_dir);
/* Whether the entry of version `id` is there. */
int kl__devlog_has(bool *has, const char *case_dir, const char *id);
/* The newest whole entries that fit in max_chars, a line first saying
 * older ones were left out (nothing when there is no file or no entry
 * fits). */
int kl__devlog_tail(kl_buf *out, const char *case_dir, size_t max_chars);

/* ---- runs.c, iteration.c: a run's folder, its files, the case's lock
 * ------------- */

/* How a run was started (run.json). Strings borrowed, as above. */
typedef struct kl__run_meta {
  const char *run, *case_name;
  uint64_t seed;
  const char *proposer, *strategy;
  long long iterations, patience;
  double min_gain_pct, max_wall_s, max_worker_s, max_usd;
  long long started;
  const char *sandbox; /* JSON object as text */
  int batch;
  const char *executor, *replay; /* replay may be NULL */
  /* how the run samples: the settings of kl_time_options (cold, warmup,
   * min/max_samples, target_rel_ci, time_cap_ms, block_rounds), which a
   * resumed run keeps; has_sampling 0: a run.json from before they were
   * recorded */
  int has_sampling;
  kl_time_options sampling;
  /* read: the sampling field that is not what the writer writes (a resume
   * refuses it; other readers need not care), else NULL */
  const char *sampling_bad;
} kl__run_meta;

/* A new run of the case: a fresh id (UTC time and four random hex
 * digits), its folder made whole or not at all (built as runs/.ID.new
 * with its run.json, then renamed into place). *dir and *id are owned.
 * meta->run is filled in here. */
int kl__run_create(char **dir, char **id, const char *case_dir,
                   kl__run_meta *meta);
/* A run's run.json, parsed; fn sees it borrowed. KL_EINVALID when the run
 * does not exist or its run.json does not read. */
typedef int (*kl__run_meta_fn)(const kl__run_meta *m, void *payload);
int kl__run_meta_read(const char *run_dir, kl__run_meta_fn fn, void *payload);
/* runs/<id> of the case when id names one (no '/', not . or ..). */
int kl__run_dir(char **out, const char *case_dir, const char *id);
/* The runs of a case (their ids, oldest first); kl__names_free. */
int kl__runs_list(char ***ids, size_t *n, const char *case_dir);

/* An iteration's folder, new: one left by a killed attempt at the same
 * iteration is set aside first (iter_NNN.aborted-K). */
int kl__iteration_dir(char **out, const char *run_dir, int iteration);
/* A new file of an iteration (or of any record folder). */
int kl__iteration_write(const char *dir, const char *name, const char *text);
/* An iteration's file as text (KL_ENOTFOUND when absent). */
int kl__iteration_read(kl_buf *out, const char *run_dir, int iteration,
                       const char *name);
/* A JSON file `name` of the record folder `dir` (an iteration's, a run's),
 * parsed: *out NULL when the file is not there; KL_EINVALID with the
 * path when it does not parse. */
int kl__record_json_read(json_object **out, const char *dir, const char *name);

/* The ids of the rules that fired on an iteration (its rules.json, at any
 * shape), each once; an iteration without one has none. NULL-ended,
 * kl__strv_free. */
int kl__iteration_fired(char ***ids, const char *run_dir, int iteration);

/* An iteration's verdict.json: its outcome and the status of every gate. */
typedef struct kl__verdict {
  int iteration;
  kl_outcome outcome;
  const char *reason, *gate, *memo, *parent;
  bool device;   /* a GPU case: CUPTI sees every stream */
  bool roofline; /* the case gives roofline bytes */
  bool reply;    /* a model's reply was parsed */
  bool timed;
  kl_speedup vs_parent;
  double min_gain_pct;
  bool rechecked;
  const char *ran_on; /* JSON object as text, or NULL */
} kl__verdict;
int kl__verdict_write(const char *dir, const kl__verdict *v);

/* An iteration's proposal.json, and its prompt.txt and reply.txt when the
 * proposal has them. */
typedef struct kl__proposal_file {
  int iteration;
  const char *proposer, *parent, *memo, *invalid;
  char *const *config;
  const char *prompt, *reply; /* NULL: none */
} kl__proposal_file;
int kl__proposal_write(const char *dir, const kl__proposal_file *p);
/* What an iteration of a recorded run proposed, for the replay proposer:
 * proposal.json's memo and configuration (a JSON array; owned), and the
 * candidate as it came: the model's reply.txt when there is one, else the
 * kernel file it measured (kernel.EXT). 1 when the run has no such
 * iteration; 0; or an error with the file's path. kl__recorded_dispose
 * frees it. */
typedef struct kl__recorded_proposal {
  char *memo, *reply, *kernel;
  json_object *config;
} kl__recorded_proposal;
int kl__recorded_proposal_read(kl__recorded_proposal *out, const char *run_dir,
                               int iteration, const char *kernel_ext);
void kl__recorded_dispose(kl__recorded_proposal *p);

/* summary.json: how this session of the run ended (kl_run_json's text,
 * which starts with "v": KL__SUMMARY_VERSION). */
#define KL__SUMMARY_VERSION 1
int kl__summary_write(const char *run_dir, const char *json);
/* The fields of summary.json that readers use (NULL when absent), and
 * whether the run has a summary.json at all (*found; may be NULL): a run
 * whose last session was killed has none. */
int kl__summary_read(const char *run_dir, char **stop_reason,
                     char **webhook_status, bool *found);

/* One run per case folder: an advisory lock on CASE/.kl-run.lock, dropped
 * by the kernel when the process dies. KL_EBUSY naming the run that holds
 * it. *fd is -1 after an unlock. */
int kl__case_lock(int *fd, const char *case_dir, const char *case_name);
void kl__case_lock_name(int fd, const char *run);
void kl__case_unlock(int *fd);

/* ---- state.c: a run's state, folded from its solutions
 * -------------------------- */

/* One earlier attempt of this run, as the prompt and the tuner see it. */
typedef struct kl__attempt {
  int iteration;
  kl_outcome outcome;
  char *memo, *reason;
  char *key;          /* source hash and configuration: what was tried */
  double speedup;     /* against the best before it; 0 when not timed */
  double log_vs_base; /* log speedup against the baseline, when timed */
  char **config;      /* NULL-ended */
} kl__attempt;

typedef struct kl__run_state {
  int next_iteration; /* the next to commit */
  int done;           /* committed iterations past the baseline */
  int since_accept;
  int counts[KL_OUTCOME_COUNT];
  char *best_id;
  int best_iteration;
  char *best_source;  /* the best kernel's text */
  char **best_config; /* NULL-ended */
  kl_speedup best_vs_base;
  char *baseline_key;
  kl__attempt *attempts;
  size_t nattempts, cap_attempts;
  kl__cost recorded; /* the committed iterations' costs */
} kl__run_state;

/* A state with no iteration: the best is the baseline at x1. */
void kl__run_state_init(kl__run_state *st);
void kl__run_state_dispose(kl__run_state *st);
/* Fold one committed solution into the state. `source` is its kernel's
 * text: needed (and copied) for the baseline and an acceptance, which
 * become the best. KL_EINVALID when it is not the next iteration. */
int kl__run_state_apply(kl__run_state *st, const kl__solution *s,
                        const char *source);
/* A run's state from its records: every solution of the run applied in
 * order, each best's kernel read from its folder; then the records that
 * follow the last commit (its benchmark rows and memory line) completed
 * when a stopped run left them unwritten. */
int kl__run_state_load(kl__run_state *st, const char *case_dir,
                       const char *run_dir, const char *run_id,
                       const char *case_name);

/* ---- llm_recording.c: RUN/llm/, the model exchanges ---------------------
 */

/* The reply after the *replayed-th into *reply (prompts left without a
 * reply are stepped over); *replayed becomes its number. KL_ENOTFOUND when
 * the recording has no more. */
int kl__llm_recording_next(kl_buf *reply, const char *dir, int *replayed);
/* One exchange at the next free number after *recorded (never over an
 * earlier one); *recorded becomes it. */
int kl__llm_recording_write(const char *dir, int *recorded, const char *system,
                            const char *user, const kl_buf *reply);

#endif /* KL_RECORDS_H */
