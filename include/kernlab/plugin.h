/** @file kernlab/plugin.h  The harness plugin ABI (version 1).
 *
 * A plugin is a shared object exporting `kl_plugin_v1`, which returns a
 * table describing one case (its shapes and params) and the functions the
 * worker drives: create an instance for a shape, prepare seeded inputs and
 * poisoned outputs, launch the kernel, read and check outputs, destroy.
 * kernlab generates plugins from cases (`kl harness --plugin`); a kernel
 * that needs its own host code can be wrapped by a hand-written plugin
 * against this header. The header depends on nothing but <stdint.h>, so
 * generated standalone harnesses embed it verbatim.
 *
 * Rules: every function returns 0 on success and a nonzero value on
 * failure, with a message from last_error(). Instances are independent and
 * used by one thread. Buffers are host memory for the host backend.
 */
#ifndef KERNLAB_PLUGIN_H
#define KERNLAB_PLUGIN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KL_PLUGIN_ABI_VERSION 1
/** The exported entry point's name, for dlsym. */
#define KL_PLUGIN_SYMBOL "kl_plugin_v1"

/** Roles, as in kernlab/case.h (kl_role). */
#define KL_PLUGIN_ROLE_SCALAR 0
#define KL_PLUGIN_ROLE_INPUT 1
#define KL_PLUGIN_ROLE_OUTPUT 2
#define KL_PLUGIN_ROLE_INOUT 3
/** A workspace: allocated and poisoned like an output, never checked,
 *  read or compared (check() and scale() refuse it). */
#define KL_PLUGIN_ROLE_SCRATCH 4

/** reference() returns this when the case's oracle is the baseline. */
#define KL_PLUGIN_NO_REFERENCE 1

/** What check() found for one output buffer. */
typedef struct kl_plugin_check {
  uint64_t elements;   /**< compared */
  uint64_t mismatches; /**< outside atol + rtol * |want| (unwritten included) */
  uint64_t unwritten;  /**< still holding the poison pattern */
  uint64_t nonfinite;  /**< NaN or Inf where the oracle is finite */
  double max_abs_err;  /**< over elements where both values are finite */
  int64_t first_bad;   /**< index of the first mismatch, -1 when none */
} kl_plugin_check;

/** Trivial outputs scale() measures, in this order. */
#define KL_PLUGIN_TRIVIAL_ZEROS 0      /**< all zeros */
#define KL_PLUGIN_TRIVIAL_MEAN 1       /**< each row's mean of the oracle's */
#define KL_PLUGIN_TRIVIAL_ROLLED 2     /**< the oracle's rows rolled by half */
#define KL_PLUGIN_TRIVIAL_TRANSPOSED 3 /**< the oracle's, transposed */
#define KL_PLUGIN_NTRIVIAL 4

/** How far an output is from the oracle's, beside how far trivial outputs
 *  made from the oracle's own are (scale()): a tolerance borrowed from
 *  elsewhere may accept a wrong answer where the outputs are small, but a
 *  right answer is always far closer to the oracle than any of these.
 *  The output is read as `rows` rows of n / rows elements (the leading
 *  axis, which the plugin knows); sums run over the elements whose oracle
 *  value is finite, in double. */
typedef struct kl_plugin_scale {
  uint32_t struct_size; /**< in: sizeof(kl_plugin_scale) of the caller */
  uint32_t reserved;
  uint64_t rows;    /**< out: the leading axis the plugin read the output
                         with (a generated plugin: the first factor of the
                         case's count, `rows*cols`; Python: the tensor's first
                         dimension); 1: one row */
  uint64_t counted; /**< elements whose oracle value is finite */
  double err_sq;    /**< sum of (out - want)^2 where out is finite too */
  double ref_sq;    /**< sum of want^2 */
  /** sum of (t - want)^2 for each trivial output t (KL_PLUGIN_TRIVIAL_*):
   *  zeros; the mean of want's row (of the whole output when it is one
   *  row or its rows are single elements); want rolled by rows / 2 rows
   *  along the leading axis; want transposed (rows x cols read as cols x
   *  rows). -1 where t does not apply (one row: no roll, no transpose; one
   *  element: no mean). */
  double trivial_sq[KL_PLUGIN_NTRIVIAL];
  /** elements of t outside atol + rtol * |want| (what the elementwise
   *  tolerance would reject); 0 where t does not apply */
  uint64_t trivial_bad[KL_PLUGIN_NTRIVIAL];
  double max_ulp; /**< largest |out - want| in units in the last place of
                       want in the output's dtype */
} kl_plugin_scale;

/** A device kernel's launch at one shape and what bounds its occupancy:
 *  the kernel's attributes (cudaFuncGetAttributes), the occupancy API's
 *  answer (cudaOccupancyMaxActiveBlocksPerMultiprocessor) and the device's
 *  limits, for the profiler's theoretical occupancy and waves. */
typedef struct kl_plugin_kernel_info {
  int64_t grid[3], block[3];
  int64_t dynamic_smem;          /**< bytes per block, as launched */
  int32_t registers;             /**< per thread */
  int32_t static_smem;           /**< bytes per block */
  int32_t local_bytes;           /**< per thread (spills, local arrays) */
  int32_t max_threads_per_block; /**< the kernel's own limit */
  int32_t active_blocks_per_sm;  /**< the occupancy API's answer */
  int32_t sms, warp_size, max_threads_per_sm, max_blocks_per_sm;
  int32_t regs_per_sm, smem_per_sm, reserved_smem_per_block;
} kl_plugin_kernel_info;

/** What a candidate's own launcher gets besides the case's params.
 *
 * A kernel section may define
 *
 *     extern "C" void kernlab_launch(<the case's params, in order>,
 *                                    const kl_launch_ctx *ctx);
 *
 * (C on the host backend, without the extern "C"). The harness then calls
 * it for every launch instead of launching the case's entry with the case's
 * `launch:` geometry. It may launch any number of kernels with any
 * geometry, on ctx->stream or on streams it forks from it and joins back
 * before returning; everything it issues is timed. It must not allocate
 * device memory, synchronise the device or a stream, or copy to or from
 * the host: workspace comes from ctx->scratch. On the host backend it may
 * use threads but must join them before returning. */
typedef struct kl_launch_ctx {
  uint32_t struct_size;   /**< sizeof(kl_launch_ctx) of the harness */
  int32_t shape;          /**< 0-based index of the shape */
  const char *shape_name; /**< the case's name of the shape */
  void *stream; /**< cuda: the cudaStream_t to launch on; host: NULL */
  const void *device_prop; /**< cuda: the device's cudaDeviceProp */
  int32_t device;          /**< cuda: the device ordinal */
  int32_t sms;             /**< cuda: multiprocessors */
  int32_t max_threads_per_block, max_threads_per_sm;
  int32_t smem_per_block_optin; /**< bytes, the opt-in maximum */
  int32_t l2_bytes;
  int32_t cc_major, cc_minor;
  int32_t host_threads; /**< host: hardware threads the launcher may use */
  /** Workspace: the n-th call in a launch returns the n-th region of this
   *  instance, at least `bytes` long, 256-byte aligned, device memory on
   *  cuda. Regions are made (zeroed) in the instance's first launch (a
   *  check or a warm-up, never a timed one) and kept for its life; a later
   *  launch that asks for a new or larger region fails. Their contents
   *  between launches are unspecified. NULL when out of memory. */
  void *(*scratch)(const struct kl_launch_ctx *ctx, uint64_t bytes);
  void *impl; /**< the harness's own */
} kl_launch_ctx;

/** The name of a candidate's own launcher. */
#define KL_LAUNCHER_NAME "kernlab_launch"

typedef struct kl_plugin {
  uint32_t abi_version; /**< KL_PLUGIN_ABI_VERSION */
  uint32_t struct_size; /**< sizeof(kl_plugin) of the plugin's headers */
  const char *case_name;
  const char *entry;   /**< the kernel's function name */
  const char *backend; /**< "host" or "cuda" */
  int32_t nshapes;
  int32_t nparams;
  const char *const *shape_names; /**< nshapes names */
  const char *const *param_names; /**< nparams names */
  const int32_t *param_roles;     /**< KL_PLUGIN_ROLE_* per param */
  const int32_t *param_dtypes;    /**< kl_dtype values per param */
  double atol, rtol;              /**< the case's tolerances */

  /** Allocate the buffers of shape `shape` (0-based). */
  int (*create)(void **inst, int32_t shape);
  /** Fill inputs and inouts from `seed` (reproducible), poison outputs
   *  with pattern `poison` (0 or 1), and keep a pristine copy of every
   *  input and inout. */
  int (*prepare)(void *inst, uint64_t seed, int32_t poison);
  /** Put the inouts and the poisoned outputs back to what prepare() wrote
   *  (between timing samples: a kernel that updates in place then runs on
   *  the same data, and one that skips work while timed leaves poison for
   *  the check after timing to find). */
  int (*restore)(void *inst);
  /** Run the kernel once; for the host backend this returns when done. */
  int (*launch)(void *inst);
  /** Wait for the kernel (a no-op for the host backend). */
  int (*sync)(void *inst);
  /** Compute the case's host reference from the pristine inputs into
   *  want[p] for every output and inout p (want[p] is NULL for the others);
   *  KL_PLUGIN_NO_REFERENCE when the oracle is the baseline. */
  int (*reference)(void *inst, void *const *want);
  /** Bytes of param p's buffer (0 for scalars). */
  uint64_t (*buffer_bytes)(void *inst, int32_t p);
  /** Copy param p's buffer out (`bytes` must equal buffer_bytes). */
  int (*read)(void *inst, int32_t p, void *dst, uint64_t bytes);
  /** Compare output or inout p with `want` (same dtype and size), counting
   *  elements still poisoned as unwritten. */
  int (*check)(void *inst, int32_t p, const void *want,
               kl_plugin_check *result);
  /** 1 when input p still holds what prepare() wrote, 0 when the kernel
   *  wrote to it. */
  int (*input_intact)(void *inst, int32_t p);
  void (*destroy)(void *inst);
  /** The message of the last failure of this instance (or of create when
   *  inst is NULL). */
  const char *(*last_error)(void *inst);

  /* Device plugins (backend "cuda"); NULL in host plugins. All are
   * asynchronous on the instance's stream unless said otherwise. */
  /** Evict the device cache without leaving dirty lines (a kernel named
   *  klh_l2_flush reads a buffer twice the L2 size). */
  int (*flush)(void *inst);
  /** Launch a marker kernel named klh_clock_probe before a sample; with
   *  spin_ns > 0 it also measures the SM clock over that many ns. */
  int (*clock_mark)(void *inst, int spin_ns);
  /** Synchronise, then hand out one SM clock (MHz) per marker launched
   *  since the last call, oldest first (0 where it did not spin): *n of
   *  them, at most max. */
  int (*clock_read)(void *inst, double *mhz, uint64_t max, uint64_t *n);
  /** The stream the instance launches on (a cudaStream_t). */
  void *(*stream)(void *inst);
  /** Launch on another instance's stream from now on, so that two plugins'
   *  samples are ordered one after the other on one stream. */
  int (*set_stream)(void *inst, void *stream);
  /** The case's kernel as this instance launches it (synchronous; NULL
   *  where the plugin cannot say, e.g. several kernels). Added after the
   *  first release of ABI 1: read it only when struct_size covers it. */
  int (*kernel_info)(void *inst, kl_plugin_kernel_info *out);
  /** What the plugin noticed about its own calls so far, as the text of
   *  one JSON object, or NULL (valid until the next call of any function).
   *  The Python worker's plugins report each shape's first calls (wall
   *  time: JIT compilation and autotuning), the allocations a call makes
   *  and the configurations their autotuners chose. May be NULL; added
   *  after kernel_info: read it only when struct_size covers it. */
  const char *(*notes)(void);
  /* Checks on the device, added after notes: read them only when
   * struct_size covers them; NULL where the plugin has none (the worker
   * then reads buffers back and compares on the host). All synchronous. */
  /** Param p's buffer as a device address of the plugin's context (the
   *  device's primary context, which every plugin of a process shares),
   *  NULL for a scalar. */
  void *(*device_buffer)(void *inst, int32_t p);
  /** check() with `want` a device address of the same context (another
   *  instance's device_buffer), compared on the device. */
  int (*check_device)(void *inst, int32_t p, const void *want,
                      kl_plugin_check *result);
  /** Keep a copy of param p's buffer as it is now, for changed_bytes. */
  int (*snapshot)(void *inst, int32_t p);
  /** *n = the bytes of param p's buffer that differ from its snapshot. */
  int (*changed_bytes)(void *inst, int32_t p, uint64_t *n);
  /** flush() and clock_mark() in one launch, before a cold sample: a kernel
   *  named klh_l2_flush_mark flushes, marks where the sample begins and
   *  measures the SM clock while it runs. Added after changed_bytes: read
   *  it only when struct_size covers it; NULL where the plugin has none
   *  (the worker then calls flush and clock_mark). */
  int (*flush_mark)(void *inst);
  /** Fill *out (kl_plugin_scale: out->struct_size set by the caller) for
   *  output or inout p against `want`, a host buffer as
   *  check() takes it, or a device address as check_device() takes it
   *  when want_on_device. Float outputs only (KL_PLUGIN_NO_REFERENCE for
   *  integers: nothing to measure). Synchronous. Added after flush_mark:
   *  read it only when struct_size covers it; NULL where the plugin has
   *  none (the worker then reports no scale). */
  int (*scale)(void *inst, int32_t p, const void *want, int32_t want_on_device,
               kl_plugin_scale *out);
  /** Between timed samples: put back what the last vary() changed, then
   *  (seed != 0) give a few elements of each input and inout drawn at
   *  random new values, at positions drawn from seed, in the buffer and
   *  the pristine copy alike, so that restore() and reference() see them.
   *  What the instance holds after vary(s) depends only on prepare()'s
   *  seed and s; prepare() forgets every change. A kernel that keeps its
   *  last result for inputs it thinks it has seen then hands back a stale
   *  one. A device plugin queues it on its stream, as restore(). Added
   *  after scale: read it only when struct_size covers it; NULL
   *  where the plugin has none (timed samples then repeat their inputs
   *  within a placement block). */
  int (*vary)(void *inst, uint64_t seed);
} kl_plugin;

/** The plugin's one exported function. */
typedef const kl_plugin *(*kl_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* KERNLAB_PLUGIN_H */
