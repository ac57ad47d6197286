/* The bench's report and the split of a bench into building (compile
 * here) and executing (load and run in a worker, here or on another
 * machine): what the executors (libkernlab/exec) and the report's JSON
 * reader share with bench.c. */
#ifndef KL_BENCH_INTERNAL_H
#define KL_BENCH_INTERNAL_H

#include <json-c/json.h>
#include <math.h>

#include "../core/internal.h"
#include "kernlab/bench.h"

typedef struct shape_entry {
  kl_shape_result res;
  char stop_reason[32];
  char *name; /* owned: a report outlives its case */
  kl_profile *profile;
  const char *better; /* a command case's metric: "higher" or "lower" */
} shape_entry;

/* Where a bench's wall time went, in ms (NaN: the phase did not run).
 * sampling is the part of timing the samplers report as their own wall
 * (rounds and flushes); the rest of timing is instance pools, inputs and
 * placements. */
typedef struct kl__report_phases {
  double total, build, worker, load, checks, profile, timing, sampling, gates,
      other;
} kl__report_phases;

#define KL__REPORT_PHASES_NONE                                                 \
  { NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN }
/* The phases as JSON (`"phases_ms": {...}`, null where one did not run),
 * and read back. */
int kl__report_phases_json(kl_buf *b, const kl__report_phases *ph);
void kl__report_phases_read(kl__report_phases *ph, json_object *o);

struct kl_report {
  char *case_name, *candidate_name;
  bool compare;
  kl_verdict verdict;
  char *reason;
  const char *gate; /* static string, CHEAT only */
  char *compile_log;
  int cold;
  double min_gain_pct;
  kl_objective objective;
  uint64_t *seeds;
  size_t nseeds;
  shape_entry *shapes;
  size_t nshapes;
  bool has_objective;
  kl_speedup objective_speedup;
  bool baseline_cached, candidate_cached;
  double compile_seconds;
  int worker_restarts;
  bool has_device;
  kl_device_info device;
  char timer[16];
  char sandbox[192]; /* the worker's sandbox (JSON object), or empty */
  /* python cases: what kl-pyworker noticed of each side's calls (JSON
   * objects: warm-up, allocations, autotuner configs), or NULL */
  char *notes_baseline, *notes_candidate;
  kl__report_phases phases; /* where the wall time went */
  bool command;             /* a command case: rows are metrics */
};

/* kl bench and kl compare of a backend: command case (command.c). */
int kl__command_bench(kl_report **out, const kl_case *c,
                      const kl_bench_options *o, bool compare);

/* The plugins of one bench, by path (owned), and what compiling them
 * cost. against is NULL when the compare is against the oracle's plugin
 * (the case's kernel); candidate is NULL for a bench of the baseline. */
typedef struct kl__bench_plugins {
  char *oracle, *against, *candidate;
  double compile_seconds;
  bool oracle_cached, candidate_cached;
} kl__bench_plugins;
void kl__bench_plugins_dispose(kl__bench_plugins *p);

/* Both take a current, whole kl_bench_options (KL_BENCH_OPTIONS_INIT or
 * kl__bench_options_take), never a caller's struct of another version.
 *
 * Compile every plugin `o` needs. A candidate that does not compile is
 * not an error: *failed is then its report (COMPILE_ERROR) and p empty. */
int kl__bench_build(kl__bench_plugins *p, kl_report **failed, const kl_case *c,
                    const kl_bench_options *o, bool compare);
/* The rest of kl_bench_run / kl_bench_compare, with plugins already
 * built (here or elsewhere, for this case). */
int kl__bench_execute(kl_report **out, const kl_case *c,
                      const kl_bench_options *o, bool compare,
                      const kl__bench_plugins *p);

/* The sandbox the report's candidates ran in (a JSON object), or NULL. */
const char *kl__report_sandbox(const kl_report *r);

/* A report back from its kl_report_json document (an executor's result
 * from another machine); `where` names it in errors. */
int kl__report_from_json(kl_report **out, json_object *doc, const char *where);

#endif /* KL_BENCH_INTERNAL_H */
