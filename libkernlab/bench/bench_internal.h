/* The bench's report and the split of a bench into building (compile
 * here) and executing (load and run in a worker, here or on another
 * machine): what the executors (libkernlab/exec) and the report's JSON
 * reader share with bench.c. */
#ifndef KL_BENCH_INTERNAL_H
#define KL_BENCH_INTERNAL_H

#include <json-c/json.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "../core/gpu_usage.h"
#include "../core/internal.h"
#include "kernlab/bench.h"
#include "kernlab/worker.h"

typedef struct shape_entry {
  kl_shape_result res;
  char stop_reason[32];
  char tracing[12]; /* the CUPTI records that timed it (kl_samples.tracing) */
  char graph_tracing[12]; /* --launch both: those of its graph pass */
  /* the calibration (kl_samples'): the offset subtracted, the probe on its
   * records, the probe's true duration (us; all 0: none asked); the
   * offsets are kl_shape_result's calibration_us, graph_calibration_us */
  double calibration[3], graph_calibration[3];
  char *name; /* owned: a report outlives its case */
  kl_profile *profile;
  const char *better; /* a command case's metric: "higher" or "lower" */
  /* the trivial outputs of the check's first seed (scaled): relative L2
   * error (-1: does not apply) and elements the tolerance rejects */
  char scale_param[64];
  double trivial_rel[4];
  uint64_t trivial_rejected[4], scale_elements;
  double ref_rms;
  char decision_reason[320]; /* res.decision_reason points here */
} shape_entry;

/* Where a bench's wall time went, in ms (NaN: the phase did not run).
 * oracle and settle are parts of checks: making the oracle's outputs (or
 * proving kept ones unchanged) and the work-after-return pause. setup,
 * sampling, placements and verify are parts of timing: the requests'
 * instances made (or taken from the pool) and prepared, the samplers' own
 * wall (rounds and flushes), the placement sets made between windows
 * (fresh inputs each), the stale-outputs gate after it; the rest of
 * timing is warm-up and replies. */
typedef struct kl__report_phases {
  double total, build, worker, load, checks, oracle, settle, profile, timing,
      setup, sampling, placements, verify, gates, other;
} kl__report_phases;

#define KL__REPORT_PHASES_NONE                                                 \
  { NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN }
/* The phases as JSON (`"phases_ms": {...}`, null where one did not run),
 * and read back. */
int kl__report_phases_json(kl_buf *b, const kl__report_phases *ph);

void kl__report_phases_read(kl__report_phases *ph, json_object *o);
/* A shape's (or its graph pass's) calibration as JSON (`,"calibration":
 * {...}`, nothing where none was asked), and read back. */
void kl__report_calibration_json(kl_buf *b, const double cal[3]);
void kl__report_calibration_read(double cal[3], json_object *shape);

struct kl_report {
  char *case_name, *candidate_name;
  bool compare;
  kl_verdict verdict;
  char *reason;
  const char *gate; /* static string, CHEAT only */
  char *compile_log;
  int cold;
  int launch;         /* KL_LAUNCH_STREAM, KL_LAUNCH_GRAPH or KL_LAUNCH_BOTH
                         (timed from the stream, then again from a CUDA
                         graph: res.graph_*) */
  bool has_candidate; /* the subject is a candidate, not the case's kernel */
  double min_gain_pct;
  kl_objective objective;
  uint64_t base_seed; /* the seeds derive from it (0: not known, a report
                         read back from JSON) */
  uint64_t *seeds;
  size_t nseeds;
  shape_entry *shapes;
  size_t nshapes;
  bool has_objective;
  kl_speedup objective_speedup;
  bool baseline_cached, candidate_cached;
  double compile_seconds;
  int worker_restarts;
  int worker_served; /* evaluations its worker served before this one */
  int oracle_kept;   /* seed checks that compared with the oracle's outputs
                        kept by the worker from an earlier check */
  bool has_device;
  kl_device_info device;
  char timer[16];
  char sandbox[192];  /* the worker's sandbox (JSON object), or empty */
  char gates_off[64]; /* KERNLAB_GATES_OFF as the worker saw it, or empty */
  /* python cases: what kl-pyworker noticed of each side's calls (JSON
   * objects: warm-up, allocations, autotuner configs), or NULL */
  char *notes_baseline, *notes_candidate;
  kl__report_phases phases; /* where the wall time went */
  bool command;             /* a command case: rows are metrics */
  kl_backend backend;
  unsigned gates; /* KL__GATE_* bits: the gates this evaluation applied */
  kl__gpu_usage gpu_before, gpu_after; /* NVML around the timing */
};

/* The GPU's idleness around the timing (gpu_idle.c): NVML's reading of the
 * report's device before the first sample (after = false) or after the
 * last; whether either saw foreign work; the report JSON's "gpu_usage"
 * (nothing when neither reading is known) and its reading back. */
void kl__gpu_idle_read(kl_report *r, kl_worker *w, bool after);
bool kl__gpu_idle_foreign(const kl_report *r);
void kl__gpu_idle_json(kl_buf *b, const kl_report *r);
void kl__gpu_idle_from_json(kl_report *r, json_object *doc);

/* The gates an evaluation can apply (report.gates), named as a verdict's
 * gate is, but "tolerance": the elementwise atol + rtol test. */
enum {
  KL__GATE_TOLERANCE = 1 << 0,
  KL__GATE_WORK_AFTER_RETURN = 1 << 1,
  KL__GATE_LAUNCH_CONTRACT = 1 << 2,
  KL__GATE_TRIVIAL_OUTPUT = 1 << 3,
  KL__GATE_STALE_OUTPUTS = 1 << 4,
  KL__GATE_TIMED_WORK = 1 << 5,
  KL__GATE_ROOFLINE = 1 << 6,
  KL__GATE_VARIED_INPUTS = 1 << 7, /* with stale_outputs: inputs changed
                                      before every timed sample */
  KL__GATES = 8
};
/* Gate bit i's name (evidence.c). */
const char *kl__gate_name(int i);
/* The JSON pieces the report and the run's evidence both write
 * (evidence.c): `,"blocks":{...}` of a compared shape, `,"machine":{...}`
 * of a timed one (nothing when the load is unknown), and the names of the
 * gates in `gates` as a JSON array. */
void kl__json_blocks(kl_buf *b, const kl_shape_result *s);
void kl__json_machine(kl_buf *b, const kl_shape_result *s);
void kl__json_gates(kl_buf *b, unsigned gates);

/* Shape e's decision explained (decision.c): its blocks, the time cap's
 * stretch and the machine's load from the samples, into e->res and
 * e->decision_reason; the speedup must be in e->res already. */
int kl__shape_decision(shape_entry *e, const kl_samples *s,
                       double min_gain_pct);

/* How the report's numbers were obtained, for a run's record of an
 * iteration (evidence.c): the seeds and shapes checked, each timed
 * shape's comparison, the gates applied, the timer, card and clock; one
 * JSON object (docs/json.md, "measurement"). */
int kl__report_evidence_json(kl_buf *b, const kl_report *r);

/* The path's verdicts (bench.c): a rejection with its one-line reason
 * (returns 0: a verdict, not an error of the call), and a worker that died
 * or hung doing `what` at `shape` (CRASHED or TIMEOUT; another failure is
 * returned as the error it is). */
int kl__bench_reject(kl_report *r, kl_verdict v, const char *fmt, ...)
    KL_PRINTF(3, 4);
int kl__bench_worker_failure(kl_report *r, int rc, const char *shape,
                             const char *what);
/* The gates besides the check's tolerance (gates.c): the scale gate over a
 * shape's check results (after they all passed), and the roofline gate
 * over every timed shape's median. 0 (a verdict may have been set), or an
 * error of kernlab. */
int kl__bench_scale_gate(kl_report *r, const kl_case *c,
                         const kl_check_result *res, shape_entry *e);
int kl__bench_roofline_gate(kl_report *r, const kl_case *c, kl_worker *w,
                            int cold);

/* kl bench and kl compare of a backend: command case (command.c). */
int kl__command_bench(kl_report **out, const kl_case *c,
                      const kl_bench_options *o, bool compare);

/* The plugins of one bench, by path (owned), and what compiling them
 * cost. against is NULL when the compare is against the oracle's plugin
 * (the case's kernel); candidate is NULL for a bench of the baseline.
 * warnings: what the compiler said of the kernel under test (the
 * candidate's, else the baseline's) though it compiled, NULL if nothing;
 * the report carries it as its compile_log. */
typedef struct kl__bench_plugins {
  char *oracle, *against, *candidate, *warnings;
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
/* A worker kept between evaluations (the local executor keeps one per
 * device for a run): started by the first evaluation that needs it, its
 * plugins loaded once by path, so that later evaluations pay neither the
 * process, the CUDA context, the profiler's initialisation nor a Python
 * worker's imports again. It is kept only after an evaluation whose every
 * check passed and in which it never restarted: after anything else (a
 * crash, a timeout, wrong outputs, a gate, an error of kernlab) it is
 * ended, and the next evaluation starts a fresh one, so that no candidate
 * that misbehaved leaves anything behind for the next. The fresh one is
 * started at once, in a thread of its own, loads the case's baseline (a
 * Python case: imports torch and the case's module) and makes its CUDA
 * context while the caller records, asks the model and compiles; the next
 * evaluation waits for it only if it is not ready yet. Zeroed memory is an
 * empty one. */
typedef struct kl__kept_worker {
  kl_worker *w;      /* its plugins: kl__worker_plugin_paths */
  char *worker_path; /* the program it runs ("" for the default) */
  int device;
  int served; /* evaluations it finished */
  /* the replacement being started (kept.c): its thread, its process id
   * once it runs, and whether it is no longer wanted */
  pthread_t spare;
  bool spare_running;
  _Atomic int spare_pid, spare_abandon;
  kl_worker_options spare_opts; /* also the last evaluation's timeout */
  char *spare_base;             /* the baseline it is to load */
  bool once; /* a bench of its own (kl__bench_in): started ahead of the
                build, ended by its caller after the one evaluation */
} kl__kept_worker;
/* End k's worker (if any) and forget its plugins. */
void kl__kept_worker_end(kl__kept_worker *k);
/* k's worker for an evaluation under wopts (started now if k has none, or
 * if it runs another program or on another device). */
int kl__kept_worker_take(kl_worker **w, kl__kept_worker *k,
                         const kl_worker_options *wopts);
/* The plugin at path in k's worker: its id, loaded now if it is new. */
int kl__kept_worker_load(int *id, kl__kept_worker *k, const char *path);
/* After an evaluation: keep the worker if it was clean (every check
 * passed, no restart, no error), else end it and start its replacement. */
void kl__kept_worker_after(kl__kept_worker *k, bool clean);
/* Start k's worker under wopts now and have it make the device's context
 * while the caller does something else (compiles), without waiting for
 * it; the next take uses it. If it cannot start, take tries again and says
 * why. */
void kl__kept_worker_start(kl__kept_worker *k, const kl_worker_options *wopts);

/* The rest of kl_bench_run / kl_bench_compare, with plugins already
 * built (here or elsewhere, for this case); in keep's worker when keep is
 * not NULL (else in a worker of its own). */
int kl__bench_execute(kl_report **out, const kl_case *c,
                      const kl_bench_options *o, bool compare,
                      const kl__bench_plugins *p, kl__kept_worker *keep);
/* kl_bench_run (compare false) or kl_bench_compare, through keep's worker
 * (NULL: a worker of its own). */
int kl__bench_in(kl_report **out, const kl_case *c, const kl_bench_options *o,
                 bool compare, kl__kept_worker *keep);

/* The sandbox the report's candidates ran in (a JSON object), or NULL. */
const char *kl__report_sandbox(const kl_report *r);

/* A report back from its kl_report_json document (an executor's result
 * from another machine); `where` names it in errors. */
int kl__report_from_json(kl_report **out, json_object *doc, const char *where);

/* The taker of this module's options struct (KL__OPTIONS_FUNCTIONS,
 * beside its init function): a caller's struct, whatever its version,
 * over this library's defaults. */
int kl__bench_options_take(kl_bench_options *full,
                           const kl_bench_options *given);

#endif /* KL_BENCH_INTERNAL_H */
