/** @file kernlab/observe.h  Observe a real program's launches, turn them
 *  into a case, and export a winning kernel back into the program.
 *
 * kl_observe runs an unmodified program with kernlab's CUPTI injection
 * library (CUDA_INJECTION64_PATH) and writes an observation file: every
 * launch of the matching kernels with its grid, block, dynamic shared
 * memory, argument bytes (read with the kernel's parameter layout) and GPU
 * duration, plus every kernel's total GPU time (docs/observe.md).
 *
 * Representative configurations: launches are bucketed by kernel, launch
 * geometry and the bytes of their scalar arguments; a bucket whose spread
 * is wide (p95/p25 above split_ratio) is split into fast and slow halves;
 * buckets are ranked by their share of the kernel's GPU time and the first
 * K covering `share` are kept. kl_case_from_observation writes a case whose
 * shapes are those configurations, and kl_export writes a case's best
 * kernel back into the program's source, keeping it only when the
 * re-observed program spends less time in the kernel.
 */
#ifndef KERNLAB_OBSERVE_H
#define KERNLAB_OBSERVE_H

#include "case.h"
#include "common.h"

KL_BEGIN_DECLS

typedef struct kl_observation kl_observation; /* opaque */

#define KL_OBSERVE_OPTIONS_VERSION 1
typedef struct kl_observe_options {
  unsigned version;     /**< KL_OBSERVE_OPTIONS_VERSION */
  const char *output;   /**< the observation file to write (required) */
  const char *kernel;   /**< POSIX extended regex over kernel names
                             (mangled or demangled); NULL: every kernel */
  int64_t max_launches; /**< launches recorded in full; 0: 100000 */
  int64_t max_bytes;    /**< bytes of launch records; 0: 64 MiB */
  const char *cwd;      /**< the program's working folder; NULL: ours */
  int capture_output;   /**< nonzero: the program's output is captured
                             (kl_observation_program_output), not shown */
} kl_observe_options;
#define KL_OBSERVE_OPTIONS_INIT                                                \
  { KL_OBSERVE_OPTIONS_VERSION, NULL, NULL, 0, 0, NULL, 0 }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_OBSERVE_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int)
kl_observe_options_init(kl_observe_options *opts, unsigned version);

/** Run argv (argv[0] looked up in PATH) under the injection library and
 *  write opts->output (replaced through a temp name). A program that fails
 *  is still observed: see kl_observation_exit_code. @return 0,
 *  KL_EINVALID (options), KL_ENOTFOUND (no such program), KL_EUNSUPPORTED
 *  (built without CUPTI: no injection library), KL_EIO, KL_ENOMEM */
KL_EXTERN(int)
kl_observe(kl_observation **out, const char *const *argv,
           const kl_observe_options *opts);

/** Read an observation file. @return 0, KL_ENOTFOUND, KL_EIO, KL_EINVALID
 *  ("path:line:column: message") */
KL_EXTERN(int) kl_observation_load(kl_observation **out, const char *path);
KL_EXTERN(void) kl_observation_free(kl_observation *o); /* NULL: no-op */

/** The program's exit status; -1 when a signal ended it. */
KL_EXTERN(int) kl_observation_exit_code(const kl_observation *o);
/** Its output when opts->capture_output was set, else "". */
KL_EXTERN(const char *) kl_observation_program_output(const kl_observation *o);
/** Launches recorded in full. */
KL_EXTERN(size_t) kl_observation_launch_count(const kl_observation *o);
/** GPU time (µs) and launches of the kernels whose name (mangled or
 *  demangled) matches `name` exactly or, failing that, as a regex; over
 *  every launch, recorded in full or not. @return 0, KL_ENOTFOUND (no such
 *  kernel ran), KL_EINVALID (bad regex) */
KL_EXTERN(int)
kl_observation_kernel_time(double *us, int64_t *launches,
                           const kl_observation *o, const char *name);

#define KL_CONFIGS_OPTIONS_VERSION 1
typedef struct kl_configs_options {
  unsigned version;   /**< KL_CONFIGS_OPTIONS_VERSION */
  const char *kernel; /**< which kernel (as for kl_observation_kernel_time);
                           NULL: the recorded kernel with the most time */
  double share;       /**< target share of the kernel's time; 0: 0.9 */
  int max_configs;    /**< at most this many (K); 0: 8 */
  double split_ratio; /**< p95/p25 above which a bucket splits; 0: 1.5 */
} kl_configs_options;
#define KL_CONFIGS_OPTIONS_INIT                                                \
  { KL_CONFIGS_OPTIONS_VERSION, NULL, 0, 0, 0 }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_CONFIGS_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int)
kl_configs_options_init(kl_configs_options *opts, unsigned version);

/** The kernels by GPU time and the chosen kernel's representative
 *  configurations with the share they cover (and the share K = 3, 5, 7
 *  would cover). `format`: "text" or "json" (docs/observe.md).
 *  @return 0, KL_ENOTFOUND (no such kernel recorded), KL_EINVALID */
KL_EXTERN(int)
kl_observation_summary(kl_buf *out, const kl_observation *o,
                       const kl_configs_options *opts, const char *format);

/** Read the parameters of every observed kernel that `source` (a C or
 *  CUDA file) defines: the summary then shows each scalar by its
 *  parameter's name, a float or double (also through a typedef or using
 *  alias in the source or its local headers) as one. Kernels it does not
 *  define keep argN. @return 0 (even when it defines none), KL_EIO,
 *  KL_ENOMEM */
KL_EXTERN(int)
kl_observation_read_source(kl_observation *o, const char *source);

#define KL_CASE_FROM_OBSERVATION_OPTIONS_VERSION 3
typedef struct kl_case_from_observation_options {
  unsigned version;           /**< KL_CASE_FROM_OBSERVATION_OPTIONS_VERSION */
  const char *source;         /**< the kernel's source file (required) */
  const char *entry;          /**< the kernel's function name (required) */
  const char *dir;            /**< the case folder to create (required) */
  kl_configs_options configs; /**< kernel: NULL picks the one named entry */
  /* version 2 */
  /** The program's build defines ("NAME" or "NAME=VALUE", NULL-ended):
   *  they pick the source's #if branches and become the case's -D flags. */
  const char *const *defines;
  /** Type names stated by the user ("floatX=f32", NULL-ended), over the
   *  typedefs and using aliases found in the source and its headers. */
  const char *const *types;
  /* version 3 */
  /** The program's include folders (its -I, NULL-ended): a header an
   *  #include of the source or its local headers finds in one (CUTLASS,
   *  CuTe) makes that folder one of the case's target.include. */
  const char *const *include_dirs;
} kl_case_from_observation_options;
#define KL_CASE_FROM_OBSERVATION_OPTIONS_INIT                                  \
  {                                                                            \
    KL_CASE_FROM_OBSERVATION_OPTIONS_VERSION, NULL, NULL, NULL,                \
        KL_CONFIGS_OPTIONS_INIT, NULL, NULL, NULL                              \
  }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_CASE_FROM_OBSERVATION_OPTIONS_VERSION when built against this header)
 * and nothing past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int)
kl_case_from_observation_options_init(kl_case_from_observation_options *opts,
                                      unsigned version);

/** Write a case (dir/case.yaml, dir/kernel.cu, dir/program.md) whose
 *  shapes are the entry's representative configurations: scalars and
 *  launch geometry exact, buffers sized from the observed allocations as
 *  count expressions marked for the user to confirm. The case is then
 *  loaded and its launch geometry compared with the observation's for
 *  every shape. `report` (may be NULL) gets what was chosen and what to
 *  confirm. @return 0, KL_EEXISTS (dir exists), KL_ENOTFOUND (no launches
 *  of entry), KL_EINVALID (the source's signature disagrees with the
 *  observed arguments, or the cross-check failed), KL_EIO */
KL_EXTERN(int)
kl_case_from_observation(kl_buf *report, const kl_observation *o,
                         const kl_case_from_observation_options *opts);

/** Progress lines of kl_export ("backup: ...", "verify: ok"). */
typedef void (*kl_export_step_fn)(const char *line, void *payload);

#define KL_EXPORT_OPTIONS_VERSION 4
typedef struct kl_export_options {
  unsigned version;           /**< KL_EXPORT_OPTIONS_VERSION */
  const char *to;             /**< the program's source file (required) */
  const char *const *verify;  /**< build and check command (argv, run
                                   without a shell); NULL: none */
  const char *const *observe; /**< the program to observe (argv); NULL:
                                   the change is kept after verify */
  const char *cwd;            /**< where both run; NULL: here */
  int repeat;                 /**< observations on each side; 0: 3 */
  int timeout_s;              /**< per command; 0: 600 */
  kl_export_step_fn on_step;
  void *payload;
  /* version 2 */
  /** A kernel section to export instead of the best (e.g. a dispatcher
   *  from kl best --dispatch); NULL: the best. */
  const char *kernel;
  /* version 3 */
  /** Instead of observing, a benchmark of the program (argv, no shell):
   *  it prints a JSON object last on stdout, and `metric` (a dotted path:
   *  "tokens_per_s", "ttft_ms.median") is what must get better, by the
   *  case's min_gain_pct, between `repeat` runs before and after, e.g. a
   *  model server's tokens/s measured by kl serve-bench. NULL: none. */
  const char *const *measure;
  const char *metric; /**< required with measure */
  int higher;         /**< 1: higher is better (default), 0: lower */
  /* version 4 */
  /** The kernel's speedup on the case and its interval (kl compare's
   *  geomean), for the forecast when the kernel is given as a file; the
   *  best's own is read from the records. 0: unknown (no forecast). */
  double speedup, speedup_low, speedup_high;
} kl_export_options;
#define KL_EXPORT_OPTIONS_INIT                                                 \
  {                                                                            \
    KL_EXPORT_OPTIONS_VERSION, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL, \
        NULL, NULL, 1, 0, 0, 0                                                 \
  }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_EXPORT_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int)
kl_export_options_init(kl_export_options *opts, unsigned version);

/** Export the case's best kernel (kl best) into opts->to: back the file
 *  up, replace the entry's definition (or the lines between `// kl:begin`
 *  and `// kl:end`) with the best's, run verify, observe the program
 *  before and after, and keep the change only when the kernel's total GPU
 *  time went down by at least the case's min_gain_pct; otherwise restore
 *  the file (and rebuild with verify). Every step is appended to the case's
 *  export.jsonl; `summary` (may be NULL) gets the export's JSON record.
 *  A kernel section that owns its launch (kernlab_launch, kernlab/plugin.h)
 *  goes in whole, after a definition of kl_launch_ctx and a context maker
 *  for the program (its scratch regions kept for the process), and every
 *  `entry<<<grid, block, smem, stream>>>(args)` in the file becomes
 *  `kernlab_launch(args, kl_export_ctx(stream))`; the time compared is then
 *  every kernel's GPU time in the program, since the launcher's kernels
 *  have names of their own. A section keeping the entry's name has its
 *  kernel renamed kl_export_NAME (when the file launches it), so that the
 *  observation shows which build ran. After the change the export must be
 *  engaged: the section's kernels launched where the entry was (the entry
 *  no more, theirs as often), else it is rolled back ("not_engaged"). The
 *  forecast (the kernel's speedup on the case through the entry's share
 *  of the program's GPU time, Amdahl) is printed beside what was measured.
 *  @return 0 (kept), KL_EREJECTED (rolled back: not faster, not engaged,
 *  or verify failed), KL_ENOTFOUND (no best, no target, or no entry in it),
 *  KL_EINVALID, KL_EIO */
KL_EXTERN(int)
kl_export(kl_buf *summary, const kl_case *c, const kl_export_options *opts);

KL_END_DECLS

#endif /* KERNLAB_OBSERVE_H */
