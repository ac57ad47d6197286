/** @file kernlab/bench.h  Check and time a candidate; compare it with the
 *  baseline.
 *
 * The path every candidate takes: compile (cached) -> check on fresh seeds
 * in the worker (at least 3 per shape) -> time -> verdict. A candidate is
 * timed only after it passed every check. kl_bench_run times one kernel per
 * shape; kl_bench_compare interleaves baseline and candidate samples and
 * decides faster / slower / same per shape and for the case's objective.
 */
#ifndef KERNLAB_BENCH_H
#define KERNLAB_BENCH_H

#include "common.h"
#include "case.h"
#include "compile.h"
#include "profile.h"
#include "stats.h"
#include "worker.h"

KL_BEGIN_DECLS

typedef enum kl_verdict {
  KL_VERDICT_OK = 0,        /**< correct everywhere; timed */
  KL_VERDICT_INCORRECT,     /**< wrong values, unwritten outputs, or inputs
                                 written */
  KL_VERDICT_CRASHED,       /**< the worker died running it */
  KL_VERDICT_TIMEOUT,       /**< a request ran past its limit */
  KL_VERDICT_COMPILE_ERROR, /**< it did not compile */
  KL_VERDICT_CHEAT,         /**< an integrity gate caught it (see
                                 kl_report_gate) */
  KL_VERDICT_INVALID_OUTPUT /**< a command case's command printed no JSON
                                 object with its metrics */
} kl_verdict;
/** "OK", "INCORRECT", "CRASHED", "TIMEOUT", "COMPILE_ERROR", "CHEAT",
 *  "INVALID_OUTPUT". */
KL_EXTERN(const char *) kl_verdict_name(kl_verdict v);

/** Called as a bench enters each phase ("build", "worker", "load",
 *  "checks", "profile", "timing", "gates"), for a live view. */
typedef void (*kl_bench_phase_fn)(const char *phase, void *payload);

#define KL_BENCH_OPTIONS_VERSION 6
typedef struct kl_bench_options {
  unsigned version;           /**< KL_BENCH_OPTIONS_VERSION */
  const char *candidate;      /**< kernel source text; NULL: the baseline */
  const char *candidate_name; /**< its name in diagnostics and reports */
  const char *shape;          /**< one shape by name; NULL: every shape */
  int check_seeds;            /**< seeds per shape, at least 3 (default 3) */
  uint64_t seed;              /**< 0: fresh random seeds; else seeds derived
                                   from this one (reproducible) */
  kl_time_options time;       /**< sampling: cold/hot, stopping rule */
  int timeout_ms;             /**< per worker request; 0: 60 s */
  const kl_compile_options *compile; /**< NULL: defaults */
  const char *worker_path; /**< NULL: found as kl_worker_create does */
  int device;              /**< CUDA device index; -1: for a GPU case the
                                idlest of several GPUs (KL_DEVICE_IDLEST,
                                kernlab/worker.h), else the default */
  const char *profile;     /**< after timing, profile each shape with
                                this set: "quick", "standard", or names
                                separated by commas (kernlab/profile.h);
                                NULL: no profile */
  /* version 2 */
  const char *against;                 /**< compare: the source of the side the
                                            candidate is compared with (the current
                                            best, say); NULL: the case's kernel. The
                                            oracle stays the case's reference or its
                                            unconfigured baseline. */
  const char *const *against_config;   /**< its tunable settings,
                                   "NAME=VALUE", NULL-ended; NULL: none */
  const char *const *candidate_config; /**< the candidate's (or, with no
                                   candidate, the benched baseline's) */
  /* version 3 */
  kl_bench_phase_fn on_phase; /**< NULL: none */
  void *phase_payload;
  /* version 4 */
  uint64_t check_seed; /**< 0: the checks' seeds derive from `seed`; else
                            from this one alone, whatever `seed` is: a run
                            gives every evaluation the same, so that a
                            worker kept for the run makes the oracle's
                            outputs once per seed and shape */
  /* version 5 */
  int checks_only; /**< check every shape and stop: nothing is profiled or
                        timed (kl check's tolerance probe) */
  /* version 6 */
  int launch; /**< how a timed sample launches (kernlab/worker.h):
                   KL_LAUNCH_CASE (default: the case's timing.launch),
                   KL_LAUNCH_STREAM, KL_LAUNCH_GRAPH, or KL_LAUNCH_BOTH:
                   stream decides, a graph's replay is timed beside it
                   (kl_shape_result.graph_timed) */
} kl_bench_options;
#define KL_BENCH_OPTIONS_INIT                                                  \
  {                                                                            \
    KL_BENCH_OPTIONS_VERSION, NULL, NULL, NULL, 3, 0, KL_TIME_OPTIONS_INIT, 0, \
        NULL, NULL, -1, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0,              \
        KL_LAUNCH_CASE                                                         \
  }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_BENCH_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int) kl_bench_options_init(kl_bench_options *opts, unsigned version);

typedef struct kl_report kl_report; /* opaque */

/** Check then time the candidate (or the baseline) at every shape.
 *  A rejected candidate is not an error of this call: it returns 0 and the
 *  report's verdict says why. @return 0, KL_ENOTFOUND (no compiler or
 *  worker), KL_EUNSUPPORTED, KL_EINVALID (no such shape), KL_EIO,
 *  KL_ENOMEM. */
KL_EXTERN(int)
kl_bench_run(kl_report **out, const kl_case *c, const kl_bench_options *opts);
/** Check the candidate, then time it interleaved with the baseline and
 *  decide, per shape and for the objective. opts->candidate or
 * opts->candidate_config is required. */
KL_EXTERN(int)
kl_bench_compare(kl_report **out, const kl_case *c,
                 const kl_bench_options *opts);
KL_EXTERN(void) kl_report_free(kl_report *r);

KL_EXTERN(kl_verdict) kl_report_verdict(const kl_report *r);
/** The GPU's idleness around the timing, for people: NVML's reading of
 *  the device before and after (utilisation, memory in use, other
 *  processes) and a warning line when another process used it; nothing
 *  when NVML could not read it. @return 0 or KL_ENOMEM. */
KL_EXTERN(int) kl_report_gpu_usage_text(kl_buf *out, const kl_report *r);
/** One of those readings (after = 0: before the timing; 1: after it):
 *  utilisation in percent, MiB in use, and compute processes other than
 *  the worker (-1: unknown). @return 1, or 0 when NVML did not read it. */
KL_EXTERN(int)
kl_report_gpu_reading(const kl_report *r, int after, double *util_pct,
                      double *mem_used_mib, int *others);
/** The seed the report's seeds derive from: kl_bench_options.seed, or the
 *  fresh one drawn when that was 0. Given back as seed, it repeats the
 *  checks' inputs (and timing's, with the same time options). 0 for a
 *  report read back from JSON. */
KL_EXTERN(uint64_t) kl_report_seed(const kl_report *r);
/** How its samples launched: KL_LAUNCH_STREAM, KL_LAUNCH_GRAPH, or
 *  KL_LAUNCH_BOTH (the time, speedup and decision are the stream's; each
 *  timed shape also has graph_time, and comparing graph_speedup). */
KL_EXTERN(int) kl_report_launch(const kl_report *r);
/** Why the candidate was rejected (one line), or NULL when it was not. */
KL_EXTERN(const char *) kl_report_reason(const kl_report *r);
/** The integrity gate that caught the candidate when the verdict is CHEAT,
 *  else NULL: "work_after_return" (its outputs changed after launch and
 *  sync had returned, or a host kernel left threads running: work no timer
 *  of the call sees), "stale_outputs" (after timing, its outputs were not
 *  those of the inputs it was last given), "faster_than_roofline" (its time
 *  implies moving the case's roofline bytes faster than this machine
 *  copies memory: work skipped or hidden). docs/integrity.md. */
KL_EXTERN(const char *) kl_report_gate(const kl_report *r);
/** The compiler's output when the verdict is COMPILE_ERROR, else NULL. */
KL_EXTERN(const char *) kl_report_compile_log(const kl_report *r);
/** A python case's notes on one side's calls (candidate 0: the baseline
 *  or the best it was compared with; 1: the candidate), as the text of a
 *  JSON object: "shapes" (each shape's first_call_ms and second_call_ms:
 *  JIT compilation and autotuning happen in the first, untimed; on the
 *  GPU the allocations, allocated_bytes and device_mallocs of one call
 *  after it), "autotuned" (each Triton autotuner's kernel and chosen
 *  config) and "jit_kernels" (compiled variants per kernel). NULL when
 *  there are none (other backends). */
KL_EXTERN(const char *)
kl_report_python_notes(const kl_report *r, int candidate);
/** The same notes for people, a line per side and shape, appended to out
 *  (nothing when there are none). */
KL_EXTERN(int) kl_report_python_notes_text(kl_buf *out, const kl_report *r);

/** Where the bench's wall time went, one line for people ("wall 6.53 s:
 *  build 0.22, worker 0.00, load 0.00, checks 1.68, timing 4.59 (sampling
 *  4.22), gates 0.00, other 0.04"), appended to out; nothing when unknown. The
 * JSON report has the same as "phases_ms" (docs/json.md). */
KL_EXTERN(int) kl_report_phases_text(kl_buf *out, const kl_report *r);

/** One shape's results. Times are microseconds. */
typedef struct kl_shape_result {
  size_t size; /**< KL_SHAPE_RESULT_INIT sets it; nothing is written past it */
  const char *name;
  int checked; /**< the check ran */
  int correct;
  uint64_t mismatches, unwritten, nonfinite, inputs_written;
  double max_abs_err;
  int timed;               /**< samples were taken */
  kl_summary time;         /**< the candidate (or the benched kernel) */
  kl_summary baseline;     /**< compare only */
  kl_speedup speedup;      /**< compare only */
  const char *stop_reason; /**< why sampling stopped */
  double wall_ms;          /**< sampling wall time */
  double sm_clock_mhz;     /**< device: median SM clock over the samples */
  size_t throttled;        /**< device: samples taken under 97% of that
                                clock, left out of the statistics */
  /* Added after the first release (an older caller's size stops before
   * them and still works): the output's scale over the check's seeds
   * (docs/integrity.md), where measured (scaled). */
  int scaled;
  double rel_l2;       /**< the largest relative L2 error over the seeds */
  double trivial_rel;  /**< the best trivial output's, on that seed */
  const char *trivial; /**< which trivial output that was ("zeros", ...) */
  double max_ulp;      /**< the largest error in units in the last place */
  /* Added after the second release: how a compare's decision was reached
   * (docs/json.md, "decision"). */
  size_t blocks;        /**< units the interval came from (blocks, or
                             placements when blocks reuse them) */
  size_t blocks_faster; /**< units that read the candidate faster */
  size_t blocks_slower; /**< and slower */
  int stretched;        /**< the time cap was stretched: blocks disagreed */
  double others_cpus;   /**< other processes' CPU use while timing, in CPUs'
                             worth (0: idle or unknown) */
  double cpus;          /**< CPUs online (0: unknown) */
  double loadavg;       /**< 1-minute load average after timing */
  const char *decision_reason; /**< compare: the decision in words, with the
                                    blocks and the machine's load */
  /* Added after the third release: under KL_LAUNCH_BOTH, the same shape
   * timed again in the same worker, each sample a CUDA graph's replay. */
  int graph_timed;
  kl_summary graph_time;     /**< the candidate (or the benched kernel) */
  kl_summary graph_baseline; /**< compare only */
  kl_speedup graph_speedup;  /**< compare only; its decision is reported,
                                  the stream's decides */
  /* Added after the fourth release: the CUPTI records a CUDA shape was
   * timed with, "kernel" (kernels serialised, their code untouched),
   * "concurrent" (the baseline's launch on two streams, or a graph of
   * several kernels: kernels overlap, every one instrumented) or
   * "serialised" (kernel records; the candidate's launch on two streams,
   * its overlap not counted); NULL where not known (host, command and
   * older reports). */
  const char *tracing;
  const char *graph_tracing; /**< the same for the graph pass */
  /* Added after the fifth release: on kernel records, what was subtracted
   * from every sample, the records' fixed part on this device
   * (kl_samples.calibration_us); 0: the records' spans as they are. */
  double calibration_us;
  double graph_calibration_us; /**< the same for the graph pass */
} kl_shape_result;
#define KL_SHAPE_RESULT_INIT KL_SIZED_INIT(kl_shape_result)

KL_EXTERN(size_t) kl_report_shape_count(const kl_report *r);
/** NULL when row i is a kernel time in microseconds (lower is better);
 *  for a command case, whose rows are its metrics, "higher" or "lower":
 *  the row's summaries are the metric's values and its speedup the
 *  improvement ratio (above 1: the candidate is better). */
KL_EXTERN(const char *) kl_report_shape_better(const kl_report *r, size_t i);
KL_EXTERN(int)
kl_report_shape(kl_shape_result *out, const kl_report *r, size_t i);
/** What a trivial output made from the oracle's would score at shape i
 *  (the check's first seed): its relative L2 error, and how many of its
 *  elements the case's elementwise tolerance rejects. */
typedef struct kl_trivial_info {
  size_t size; /**< KL_TRIVIAL_INFO_INIT sets it; nothing is written past it */
  const char *name;   /**< "zeros", "mean", "rolled", "transposed" */
  const char *output; /**< the output param it stands for */
  double rel_l2;      /**< |trivial - oracle| / |oracle| */
  uint64_t rejected;  /**< elements outside atol + rtol * |oracle| */
  uint64_t elements;  /**< elements compared */
  double ref_rms;     /**< the oracle's root mean square over the output */
} kl_trivial_info;
#define KL_TRIVIAL_INFO_INIT KL_SIZED_INIT(kl_trivial_info)
/** Trivial output `which` (KL_TRIVIAL_*, kernlab/worker.h) at shape i;
 *  KL_ENOTFOUND where it was not measured or does not apply. */
KL_EXTERN(int)
kl_report_shape_trivial(kl_trivial_info *out, const kl_report *r, size_t i,
                        int which);

/** The device the report was measured on (device cases); KL_ENOTFOUND for
 *  host cases. */
KL_EXTERN(int) kl_report_device(kl_device_info *out, const kl_report *r);
/** The objective over the shapes (compare only); KL_ENOTFOUND otherwise. */
KL_EXTERN(int) kl_report_objective(kl_speedup *out, const kl_report *r);

/** Shape i's profile (kl_bench_options.profile), or NULL when none was
 *  taken. It lives as long as the report. A profile without values (no
 *  counters here) says why in kl_profile_note. */
KL_EXTERN(const kl_profile *) kl_report_profile(const kl_report *r, size_t i);

/** The report as one JSON document (field names documented in
 *  docs/json.md and stable). */
KL_EXTERN(int) kl_report_json(kl_buf *out, const kl_report *r);

KL_END_DECLS

#endif /* KERNLAB_BENCH_H */
