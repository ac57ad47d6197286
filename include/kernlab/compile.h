/** @file kernlab/compile.h  Compile harness plugins through a cache.
 *
 * The cache is content-addressed: the key is a SHA-256 of the generated
 * source, the compiler's path and `--version` banner, the flags and defines,
 * and the target. A key compiles once; later requests, from any process,
 * get the cached shared object (or the cached compiler errors). The cache
 * folder is $KERNLAB_CACHE_DIR, else $XDG_CACHE_HOME/kernlab, else
 * ~/.cache/kernlab.
 */
#ifndef KERNLAB_COMPILE_H
#define KERNLAB_COMPILE_H

#include "common.h"
#include "case.h"

KL_BEGIN_DECLS

typedef struct kl_artifact kl_artifact; /* opaque */

#define KL_COMPILE_OPTIONS_VERSION 1
typedef struct kl_compile_options {
  unsigned version;           /**< KL_COMPILE_OPTIONS_VERSION */
  const char *cache_dir;      /**< NULL: the default cache folder */
  const char *compiler;       /**< NULL: the case's, else $CC, else "cc" */
  const char *flags;          /**< NULL: the case's, else "-O3 -march=native" */
  const char *const *defines; /**< "NAME=VALUE" (tunables), NULL-ended */
  int timeout_ms;             /**< compiler time limit, 0: 120 s */
  const char *candidate_name; /**< name in diagnostics (default: kernel file) */
} kl_compile_options;
#define KL_COMPILE_OPTIONS_INIT                                                \
  { KL_COMPILE_OPTIONS_VERSION, NULL, NULL, NULL, NULL, 0, NULL }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_COMPILE_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int)
kl_compile_options_init(kl_compile_options *opts, unsigned version);

/** Generate the plugin harness of `c` around `candidate` (NULL: the
 *  baseline) and compile it, or take it from the cache. A compiler error is
 *  not a failure of this call: *out is set with kl_artifact_ok() == 0 and
 *  the log. @return 0, KL_ENOTFOUND (no compiler), KL_EUNSUPPORTED, KL_EIO,
 *  KL_ENOMEM. */
KL_EXTERN(int)
kl_compile_plugin(kl_artifact **out, const kl_case *c, const char *candidate,
                  const kl_compile_options *opts);
KL_EXTERN(void) kl_artifact_free(kl_artifact *a);
/** 1 when the candidate compiled. */
KL_EXTERN(int) kl_artifact_ok(const kl_artifact *a);
/** 1 when the result came from the cache. */
KL_EXTERN(int) kl_artifact_cached(const kl_artifact *a);
/** The shared object (NULL when it did not compile). */
KL_EXTERN(const char *) kl_artifact_path(const kl_artifact *a);
/** The cache key (64 hex digits). */
KL_EXTERN(const char *) kl_artifact_key(const kl_artifact *a);
/** The compiler's output (may be empty). */
KL_EXTERN(const char *) kl_artifact_log(const kl_artifact *a);
/** The first error line of the log ("kernel.c:12:5: error: …"), or NULL. */
KL_EXTERN(const char *) kl_artifact_first_error(const kl_artifact *a);
/** Seconds the compiler ran (0 when cached). */
KL_EXTERN(double) kl_artifact_seconds(const kl_artifact *a);

/** The cache folder in use for `opts` (created if needed). */
KL_EXTERN(int)
kl_compile_cache_dir(kl_buf *out, const kl_compile_options *opts);

KL_END_DECLS

#endif /* KERNLAB_COMPILE_H */
