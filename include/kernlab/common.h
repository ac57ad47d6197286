/** @file kernlab/common.h  Export macros, version, init, error model, kl_buf.
 *
 * Every other public header includes this one. It holds the pieces the whole
 * API shares: how symbols are exported, the version contract, the error
 * codes and the per-thread last error, and the byte buffer handed to callers.
 */
#ifndef KERNLAB_COMMON_H
#define KERNLAB_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define KL_BEGIN_DECLS extern "C" {
#define KL_END_DECLS }
#else
#define KL_BEGIN_DECLS
#define KL_END_DECLS
#endif

/** Declares a public function: default visibility, everything else hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define KL_EXTERN(type) __attribute__((visibility("default"))) type
#else
#define KL_EXTERN(type) type
#endif

KL_BEGIN_DECLS

/* ---- version ------------------------------------------------------------ */

#define KL_VERSION_MAJOR 0
#define KL_VERSION_MINOR 1
#define KL_VERSION_PATCH 0
#define KL_VERSION "0.1.0"
/** 0xMMmmpp: one byte each for major, minor, patch. */
#define KL_VERSION_NUMBER                                                      \
  ((KL_VERSION_MAJOR << 16) | (KL_VERSION_MINOR << 8) | KL_VERSION_PATCH)
/** True when the headers are at least version maj.min.patch. */
#define KL_VERSION_CHECK(maj, min, patch)                                      \
  (KL_VERSION_NUMBER >= (((maj) << 16) | ((min) << 8) | (patch)))

/** The version of the library actually loaded (compare with
 *  KL_VERSION_NUMBER to catch a header/library mismatch). */
KL_EXTERN(unsigned) kl_version_number(void);
/** "0.1.0"; static storage. */
KL_EXTERN(const char *) kl_version_string(void);

/** The binary interface: raised only when a program built against older
 *  headers could no longer run with this library (an exported function
 *  removed or changed, a struct changed other than by the growth rules
 *  below). It is the shared library's SOVERSION (libkernlab.so.1).
 *
 *  How structs grow without raising it (docs/architecture.md):
 *  - options structs start with `unsigned version`; a new field goes at the
 *    end and raises that struct's KL_X_OPTIONS_VERSION. kl_x_options_init
 *    (opts, version) writes only what that version knows, and the library
 *    reads a caller's struct only as far as its version says.
 *  - result structs the caller allocates start with `size_t size` (their
 *    _INIT macro sets it); the library writes no byte past it.
 *  - kl_value, kl_summary, kl_speedup and kl_launch are plain values and
 *    never grow: a new field means a new type. */
#define KL_ABI_VERSION 1
/** A result struct's initializer: its size set, every other field zero
 *  (C++ before C++20 gets a positional one, which -Wextra flags there). */
#ifdef __cplusplus
#define KL_SIZED_INIT(type)                                                    \
  { sizeof(type) }
#else
#define KL_SIZED_INIT(type)                                                    \
  { .size = sizeof(type) }
#endif
/** KL_ABI_VERSION of the library actually loaded. */
KL_EXTERN(unsigned) kl_abi_version(void);

/** Optional parts compiled into the library (bit mask of kl_feature). */
typedef enum kl_feature {
  KL_FEATURE_CUDA = 1 << 0,  /**< CUDA backend (toolkit found at build) */
  KL_FEATURE_CUPTI = 1 << 1, /**< CUPTI timing and profiling */
  KL_FEATURE_HTTP = 1 << 2   /**< libcurl transport for LLM providers */
} kl_feature;
KL_EXTERN(unsigned) kl_features(void);

/* ---- init --------------------------------------------------------------- */

/** Reference-counted global set-up. Call once per user of the library (it is
 *  safe to nest); returns the new count (>= 1) or a negative KL_E* code.
 *  Loading and checking cases needs no init; the worker and CUPTI do. */
KL_EXTERN(int) kl_init(void);
/** Drops one reference; the last one releases global state. Returns the
 *  remaining count, or KL_EINVALID when called more often than kl_init. */
KL_EXTERN(int) kl_shutdown(void);

/* ---- errors ------------------------------------------------------------- */

/** Return codes: 0 is success, errors are negative. Append-only: a code is
 *  never renumbered or reused. */
typedef enum kl_error_code {
  KL_OK = 0,
  KL_ERROR = -1,        /**< generic failure */
  KL_ENOMEM = -2,       /**< out of memory */
  KL_EINVALID = -3,     /**< bad input: case, expression, argument */
  KL_ENOTFOUND = -4,    /**< a file, name or template does not exist */
  KL_EIO = -5,          /**< reading or writing failed */
  KL_EBUSY = -6,        /**< a process-wide resource is taken */
  KL_EUSER = -7,        /**< a callback asked to stop */
  KL_EUNSUPPORTED = -8, /**< not compiled in, or not possible here */
  KL_EEXISTS = -9,      /**< would overwrite something that exists */
  KL_ENODEVICE = -10,   /**< no usable device */
  KL_ETIMEOUT = -11,    /**< a request ran past its limit */
  KL_ECRASHED = -12,    /**< a child process died */
  KL_EREJECTED = -13    /**< a candidate was rejected (see its verdict) */
} kl_error_code;

/** Where an error came from. Append-only. */
typedef enum kl_error_domain {
  KL_DOMAIN_NONE = 0,
  KL_DOMAIN_OS,   /**< a system call; errno is in sys_errno */
  KL_DOMAIN_EXPR, /**< the expression language */
  KL_DOMAIN_CASE, /**< case.yaml and the files it names */
  KL_DOMAIN_YAML, /**< YAML syntax */
  KL_DOMAIN_CLI,  /**< command-line usage */
  KL_DOMAIN_TEMPLATE
} kl_error_domain;

/** One error. All strings are owned by the library. */
typedef struct kl_error {
  int code;            /**< a kl_error_code */
  int domain;          /**< a kl_error_domain */
  const char *message; /**< one line, "path:line:column: text" when located */
  const char *text;    /**< the message without its location prefix */
  const char *path;    /**< file, or NULL */
  int line;            /**< 1-based, 0 when unknown */
  int column;          /**< 1-based, 0 when unknown */
  const char *snippet; /**< the offending source line and a caret line
                            ("  a + * b\n      ^"), or NULL */
  int sys_errno;       /**< errno for KL_DOMAIN_OS, else 0 */
} kl_error;

/** The last error raised on this thread, or NULL if none. The pointer stays
 *  valid until the next failing call on this thread. */
KL_EXTERN(const kl_error *) kl_error_last(void);
/** Forget the last error of this thread. */
KL_EXTERN(void) kl_error_clear(void);
/** A short constant description of a code ("invalid input"). */
KL_EXTERN(const char *) kl_strerror(int code);

/** Receives each diagnostic of an operation that reports many (the case
 *  loader reports every error of a file). Return nonzero to stop early. */
typedef int (*kl_diag_fn)(const kl_error *err, void *payload);

/* ---- bytes handed to the caller ----------------------------------------- */

/** A growable buffer. `ptr` is NUL-terminated whenever size > 0. Release it
 *  with kl_buf_dispose, never free(). */
typedef struct kl_buf {
  char *ptr;
  size_t size;
  size_t reserved;
} kl_buf;
#define KL_BUF_INIT                                                            \
  { NULL, 0, 0 }

/** Frees the contents and resets the buffer to KL_BUF_INIT. NULL-safe. */
KL_EXTERN(void) kl_buf_dispose(kl_buf *buf);
/** Replace the contents with a copy of n bytes of data (NUL-terminated),
 *  for callbacks that hand text back to the library (kl_propose_fn).
 *  @return 0 or KL_ENOMEM (the buffer unchanged). */
KL_EXTERN(int) kl_buf_set(kl_buf *buf, const char *data, size_t n);

/** How a timed sample launches (kl_worker_time_launch,
 *  kl_bench_options.launch; a run follows the case): as the plugin does, on its
 * stream, or replayed from a CUDA graph captured once per instance, as a
 * program under CUDA graphs runs it (CUDA-C plugins only; a launcher that
 * cannot be captured, say one that launches on the legacy default stream, is
 * refused, saying why). KL_LAUNCH_CASE: as the case's `timing.launch` says
 * (stream when it is silent). KL_LAUNCH_BOTH (kl_bench_options only, not a
 * case's key nor a worker's request): each shape timed as launched on the
 * stream, which decides, and again from a CUDA graph, reported beside it
 * (kl_shape_result's graph_*), so that a decision owed to host launch
 * overhead shows. */
#define KL_LAUNCH_CASE (-1)
#define KL_LAUNCH_STREAM 0
#define KL_LAUNCH_GRAPH 1
#define KL_LAUNCH_BOTH 2
/** "stream", "graph", "both"; NULL for another value. */
KL_EXTERN(const char *) kl_launch_name(int launch);
/** KL_LAUNCH_STREAM, KL_LAUNCH_GRAPH or KL_LAUNCH_BOTH for its name; -2 for
 *  another (never KL_LAUNCH_CASE). */
KL_EXTERN(int) kl_launch_parse(const char *name);

KL_END_DECLS

#endif /* KERNLAB_COMMON_H */
