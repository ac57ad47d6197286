/** @file kernlab/case.h  Load, validate and stamp cases.
 *
 * A case is one optimization target: a kernel, its signature, the shapes it
 * runs at, a correctness oracle and an objective, described by a folder with
 * a case.yaml (see docs/case-format.md). kl_case_load validates everything
 * that can be checked without a device and evaluates every expression for
 * every shape, so a loaded case is known to be consistent. A loaded case is
 * immutable and may be shared between threads.
 */
#ifndef KERNLAB_CASE_H
#define KERNLAB_CASE_H

#include "common.h"
#include "expr.h"

KL_BEGIN_DECLS

typedef struct kl_case kl_case; /* opaque */

typedef enum kl_backend {
  KL_BACKEND_HOST = 0,    /**< C kernels compiled with the system compiler */
  KL_BACKEND_CUDA = 1,    /**< CUDA kernels compiled with nvcc */
  KL_BACKEND_COMMAND = 2, /**< reserved: an external build/run command */
  KL_BACKEND_PYTHON = 3   /**< a Python module's forward (kl-pyworker) */
} kl_backend;

typedef enum kl_dtype {
  KL_DTYPE_F64 = 0,
  KL_DTYPE_F32,
  KL_DTYPE_F16,
  KL_DTYPE_BF16,
  KL_DTYPE_I64,
  KL_DTYPE_I32,
  KL_DTYPE_I16,
  KL_DTYPE_I8,
  KL_DTYPE_U64,
  KL_DTYPE_U32,
  KL_DTYPE_U16,
  KL_DTYPE_U8,
  KL_DTYPE_COUNT_
} kl_dtype;
/** "f32"; NULL for an out-of-range value. */
KL_EXTERN(const char *) kl_dtype_name(kl_dtype t);
/** Size of one element in bytes; 0 for an out-of-range value. */
KL_EXTERN(size_t) kl_dtype_size(kl_dtype t);
/** Parse "f32"; KL_EINVALID when unknown. */
KL_EXTERN(int) kl_dtype_parse(kl_dtype *out, const char *name);
/** Nonzero for f64, f32, f16, bf16. */
KL_EXTERN(int) kl_dtype_is_float(kl_dtype t);

typedef enum kl_role {
  KL_ROLE_SCALAR = 0, /**< passed by value */
  KL_ROLE_INPUT,      /**< read only; initialised from `init` */
  KL_ROLE_OUTPUT,     /**< written only; poisoned before each launch */
  KL_ROLE_INOUT,      /**< initialised from `init`, then checked */
  KL_ROLE_SCRATCH     /**< the kernel's workspace: poisoned before each
                           launch, never checked (a candidate may leave it
                           alone) */
} kl_role;
KL_EXTERN(const char *) kl_role_name(kl_role r);

/** How an input buffer is filled (seeded, so reproducible). */
typedef enum kl_init_kind {
  KL_INIT_NONE = 0, /**< outputs: poisoned, not initialised */
  KL_INIT_NORMAL,   /**< normal(mean = a, sd = b); default normal(0, 1) */
  KL_INIT_UNIFORM,  /**< uniform over [a, b); default [0, 1) */
  KL_INIT_CONSTANT, /**< every element a (zeros and ones are this) */
  KL_INIT_ARANGE,   /**< element k is a + k * b (default 0, 1) */
  KL_INIT_RANDINT   /**< integers uniform over [a, b] */
} kl_init_kind;

/** One parameter of the kernel signature. Strings are borrowed from the
 *  case and live as long as it does. */
typedef struct kl_param_info {
  size_t size; /**< KL_PARAM_INFO_INIT sets it; nothing is written past it */
  const char *name;
  kl_dtype dtype;
  int is_pointer;
  kl_role role;          /**< KL_ROLE_SCALAR exactly when !is_pointer */
  const char *count;     /**< element count expression (pointers) */
  const char *value;     /**< scalar value expression, NULL when every
                              shape gives the value under the param's name */
  kl_init_kind init;     /**< inputs and inouts */
  double init_a, init_b; /**< the distribution's arguments */
  const char *init_text; /**< as written, e.g. "uniform(-1, 1)" */
  /** A field of a struct the kernel takes by value: the struct's C name
   *  (`LayerNormParams`); the field is named ARG.FIELD. NULL for a param
   *  that is an argument of its own. */
  const char *struct_type;
} kl_param_info;
#define KL_PARAM_INFO_INIT KL_SIZED_INIT(kl_param_info)

/** Launch geometry of one shape (CUDA cases). */
typedef struct kl_launch {
  int64_t grid[3];
  int64_t block[3];
  int64_t shared_bytes;
} kl_launch;

typedef enum kl_reference_kind {
  KL_REFERENCE_BASELINE = 0, /**< the baseline kernel's outputs */
  KL_REFERENCE_HOST = 1      /**< a host C function with the same signature */
} kl_reference_kind;

typedef struct kl_reference_info {
  size_t
      size; /**< KL_REFERENCE_INFO_INIT sets it; nothing is written past it */
  kl_reference_kind kind;
  const char *source;   /**< path of the host reference (KL_REFERENCE_HOST) */
  const char *function; /**< its function name */
  double atol, rtol;    /**< |got - want| <= atol + rtol * |want| */
  /* Added after the first release (an older caller's size stops before it
   * and still works). */
  double trivial_margin; /**< an output's relative L2 error must be this
                              many times below that of the closest trivial
                              output (zeros, row means, rolled, transposed;
                              docs/integrity.md); 0: not judged. Default
                              100 */
} kl_reference_info;
#define KL_REFERENCE_INFO_INIT KL_SIZED_INIT(kl_reference_info)

typedef enum kl_objective {
  KL_OBJECTIVE_GEOMEAN_SPEEDUP = 0, /**< weighted geometric mean of speedups */
  KL_OBJECTIVE_TOTAL_TIME = 1       /**< weighted sum of median times */
} kl_objective;
KL_EXTERN(const char *) kl_objective_name(kl_objective o);

typedef struct kl_budget {
  size_t size;        /**< KL_BUDGET_INIT sets it; nothing is written past it */
  int64_t iterations; /**< candidates per run */
  int64_t patience;   /**< iterations without an acceptance before stopping */
  double min_gain_pct; /**< smallest gain worth accepting, in percent */
} kl_budget;
#define KL_BUDGET_INIT KL_SIZED_INIT(kl_budget)

#define KL_CASE_OPTIONS_VERSION 2
typedef struct kl_case_options {
  unsigned version;   /**< KL_CASE_OPTIONS_VERSION */
  kl_diag_fn on_diag; /**< called for every error, sorted by position */
  void *payload;      /**< passed to on_diag */
  /** Version 2: a configuration, "NAME=VALUE" entries, NULL-ended. A
   *  declared tunable named here takes this value instead of its first one:
   *  launch geometry and roofline are evaluated with it and the harness
   *  defaults to it. Names the case does not declare are left to the
   *  caller (they are plain -D defines of the candidate). NULL: none. */
  const char *const *tunables;
} kl_case_options;
#define KL_CASE_OPTIONS_INIT                                                   \
  { KL_CASE_OPTIONS_VERSION, NULL, NULL, NULL }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_CASE_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int) kl_case_options_init(kl_case_options *opts, unsigned version);

/** Load a case folder or its case.yaml. Every error of the file is passed to
 *  opts->on_diag (when set); kl_error_last() holds the first, with the count
 *  of the others. *out is NULL on error.
 *  @return 0, KL_ENOTFOUND (no such folder or file), KL_EINVALID, KL_EIO,
 *  KL_ENOMEM. */
KL_EXTERN(int)
kl_case_load(kl_case **out, const char *path, const kl_case_options *opts);
KL_EXTERN(void) kl_case_free(kl_case *c); /* NULL is a no-op */

KL_EXTERN(const char *) kl_case_name(const kl_case *c);
KL_EXTERN(const char *) kl_case_dir(const kl_case *c);  /**< the folder */
KL_EXTERN(const char *) kl_case_path(const kl_case *c); /**< its case.yaml */
KL_EXTERN(kl_backend) kl_case_backend(const kl_case *c);
KL_EXTERN(const char *) kl_backend_name(kl_backend b);
/** Target architecture ("sm_90"); NULL when the case names none. */
KL_EXTERN(const char *) kl_case_arch(const kl_case *c);
/** Compiler the case asks for, NULL for the default. */
KL_EXTERN(const char *) kl_case_compiler(const kl_case *c);
/** target.flags: the compiler flags that replace the defaults ("-O3
 *  -lineinfo" for nvcc, "-O3 -march=native" for cc), space separated;
 *  NULL when the case names none. */
KL_EXTERN(const char *) kl_case_flags(const kl_case *c);
/** target.libs: the libraries a kernel links besides the defaults, each
 *  a name ("cublas": -lcublas) or a library file's absolute path. */
KL_EXTERN(size_t) kl_case_lib_count(const kl_case *c);
KL_EXTERN(const char *) kl_case_lib(const kl_case *c, size_t i);
/** target.include: folders searched for headers before the defaults (the
 *  case's own folder), absolute. */
KL_EXTERN(size_t) kl_case_include_count(const kl_case *c);
KL_EXTERN(const char *) kl_case_include(const kl_case *c, size_t i);
/** Path of the baseline kernel source (case folder joined). */
KL_EXTERN(const char *) kl_case_kernel_path(const kl_case *c);
/** The kernel's function name as the case spells it: maybe qualified
 *  ("ns::kern"), maybe with template arguments ("kern<float, 128>"). */
KL_EXTERN(const char *) kl_case_entry(const kl_case *c);
/** A command case (backend: command) for people: its baseline file, the
 *  command and build with their timeout, and the metrics ("metrics
 *  tokens_per_s (higher), p50_ms (lower, weight 0.5)"), a line each,
 *  appended to out. Nothing for other backends. */
KL_EXTERN(int) kl_case_command_describe(kl_buf *out, const kl_case *c);
/** A python case's kernel.device: "cuda" (torch tensors, the CUPTI timer)
 *  or "host" (buffers, the host timer); NULL for other backends. */
KL_EXTERN(const char *) kl_case_python_device(const kl_case *c);
/** 1 when the case's code runs on a CUDA device: a cuda case, or a python
 *  case whose kernel.device is cuda; 0 on the host. */
KL_EXTERN(int) kl_case_on_gpu(const kl_case *c);
/** Path of program.md, or NULL when the case has no brief. */
KL_EXTERN(const char *) kl_case_program_path(const kl_case *c);
/** The case's own rule files (`rules:`), added on top of the defaults by
 *  kl rules; paths inside the case folder, checked to exist at load. */
KL_EXTERN(size_t) kl_case_rule_file_count(const kl_case *c);
KL_EXTERN(const char *) kl_case_rule_file(const kl_case *c, size_t i);
KL_EXTERN(kl_objective) kl_case_objective(const kl_case *c);
KL_EXTERN(int) kl_case_budget(kl_budget *out, const kl_case *c);
KL_EXTERN(int) kl_case_reference(kl_reference_info *out, const kl_case *c);

KL_EXTERN(size_t) kl_case_param_count(const kl_case *c);
/** @return 0 or KL_EINVALID for an index out of range. */
KL_EXTERN(int)
kl_case_param(kl_param_info *out, const kl_case *c, size_t index);

KL_EXTERN(size_t) kl_case_shape_count(const kl_case *c);
KL_EXTERN(const char *) kl_case_shape_name(const kl_case *c, size_t shape);
/** The kernel a shape launches: its own instantiation of a template entry
 *  (the shape's `entry:`), else kl_case_entry. NULL when out of range. */
KL_EXTERN(const char *) kl_case_shape_entry(const kl_case *c, size_t shape);
/** timing.launch: how the kernel is timed (KL_LAUNCH_STREAM, the default,
 *  or KL_LAUNCH_GRAPH: replayed from a CUDA graph, as its program runs it;
 *  kernlab/common.h). */
KL_EXTERN(int) kl_case_timing_launch(const kl_case *c);
KL_EXTERN(double) kl_case_shape_weight(const kl_case *c, size_t shape);
/** Index of the shape called `name`, or KL_ENOTFOUND. */
KL_EXTERN(int) kl_case_shape_find(const kl_case *c, const char *name);
/** Every value a shape defines: its own keys, then each scalar param.
 *  The caller frees *out with kl_vars_free. */
KL_EXTERN(int)
kl_case_shape_vars(kl_vars **out, const kl_case *c, size_t shape);
/** Element count of a pointer param at a shape (evaluated at load). */
KL_EXTERN(int)
kl_case_param_elements(int64_t *out, const kl_case *c, size_t param,
                       size_t shape);
/** Value of a scalar param at a shape. */
KL_EXTERN(int)
kl_case_scalar_value(kl_value *out, const kl_case *c, size_t param,
                     size_t shape);
/** Launch geometry at a shape; KL_EUNSUPPORTED for host cases. */
KL_EXTERN(int) kl_case_launch(kl_launch *out, const kl_case *c, size_t shape);
/** Roofline bytes and flops at a shape; KL_ENOTFOUND when the case has no
 *  roofline (either out pointer may be NULL; a missing half reads 0). */
KL_EXTERN(int)
kl_case_roofline(double *bytes, double *flops, const kl_case *c, size_t shape);
/** Bytes of every buffer of a shape together. */
KL_EXTERN(int64_t) kl_case_buffer_bytes(const kl_case *c, size_t shape);

KL_EXTERN(size_t) kl_case_tunable_count(const kl_case *c);
KL_EXTERN(const char *) kl_case_tunable_name(const kl_case *c, size_t i);
KL_EXTERN(size_t) kl_case_tunable_value_count(const kl_case *c, size_t i);
/** The value tunable i has in this configuration: its first value, or the
 *  one kl_case_options.tunables chose. */
KL_EXTERN(const char *) kl_case_tunable_current(const kl_case *c, size_t i);
/** The j-th value of tunable i, as written ("128"). */
KL_EXTERN(const char *)
kl_case_tunable_value(const kl_case *c, size_t i, size_t j);

/** The whole evaluated case as one JSON object (stable field names, see
 *  docs/case-format.md). */
KL_EXTERN(int) kl_case_describe_json(kl_buf *out, const kl_case *c);

/* ---- stamping new cases -------------------------------------------------- */

#define KL_CASE_NEW_OPTIONS_VERSION 1
typedef struct kl_case_new_options {
  unsigned version;          /**< KL_CASE_NEW_OPTIONS_VERSION */
  const char *template_name; /**< "host" (default) or "cuda", or a folder */
  const char *dir;           /**< parent folder, default "." */
} kl_case_new_options;
#define KL_CASE_NEW_OPTIONS_INIT                                               \
  { KL_CASE_NEW_OPTIONS_VERSION, NULL, NULL }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_CASE_NEW_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int)
kl_case_new_options_init(kl_case_new_options *opts, unsigned version);

/** Create the folder dir/name from a template in the share folder; every
 *  `{{name}}` in the template files is replaced with `name`. The path of
 *  the new folder goes to `out_path` (may be NULL).
 *  @return 0, KL_EINVALID (bad name), KL_EEXISTS (the folder exists),
 *  KL_ENOTFOUND (no such template), KL_EIO. */
KL_EXTERN(int)
kl_case_new(kl_buf *out_path, const char *name,
            const kl_case_new_options *opts);

/** Make the case folder `dir` (which must not exist) from a KernelBench
 *  problem file: a `Model` nn.Module, `get_inputs()`, `get_init_inputs()`
 *  and the module constants they read. The problem is read by python3's
 *  ast, never run. The folder gets problem.py (unchanged), ops.py (the
 *  contract: Model is the baseline and oracle, a candidate defines
 *  ModelNew or forward), case.yaml (the constants are the shape's values)
 *  and program.md; a line per file written goes to `report`.
 *  @return 0, KL_EEXISTS, KL_EINVALID (not a KernelBench problem: a
 *  one-line error at its line and column), KL_ENOTFOUND (no python3), KL_EIO.
 */
KL_EXTERN(int)
kl_case_from_kernelbench(kl_buf *report, const char *problem, const char *dir);

/** The folder kernlab's data (templates, later rules and skills) is read
 *  from: $KERNLAB_SHARE_DIR, else `../share/kernlab` next to the loaded
 *  library, else the installed prefix, else the source tree. */
KL_EXTERN(const char *) kl_share_dir(void);

KL_END_DECLS

#endif /* KERNLAB_CASE_H */
