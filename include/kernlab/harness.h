/** @file kernlab/harness.h  Generate a case's harness source.
 *
 * One deterministic generator emits, from a case and a candidate kernel, a
 * source file with a KERNEL SECTION (the candidate, verbatim, with #line so
 * compiler messages carry the candidate's own line numbers) and a frozen
 * HARNESS SECTION (buffers, seeded inputs, poisoned outputs, the launch per
 * shape, the check against the oracle). Two forms:
 *  - standalone: `cc -O2 harness.c -lm && ./a.out` checks every shape on
 *    three seeds and prints one JSON line per shape with simple timings;
 *  - plugin: the same code built as a shared object exporting the ABI of
 *    kernlab/plugin.h, which kernlab's worker loads.
 * The same case and candidate always give the same bytes.
 */
#ifndef KERNLAB_HARNESS_H
#define KERNLAB_HARNESS_H

#include "common.h"
#include "case.h"

KL_BEGIN_DECLS

typedef enum kl_harness_form {
  KL_HARNESS_STANDALONE = 0,
  KL_HARNESS_PLUGIN = 1
} kl_harness_form;

#define KL_HARNESS_OPTIONS_VERSION 2
typedef struct kl_harness_options {
  unsigned version; /**< KL_HARNESS_OPTIONS_VERSION */
  kl_harness_form form;
  /** Name compiler messages give the candidate (default: the name of the
   *  case's kernel file). */
  const char *candidate_name;
  /** The file the harness goes to, as the build line of its first comment
   *  names it (default harness.c, or harness.cu for CUDA; a path keeps
   *  only its last part). Version 2. */
  const char *file_name;
} kl_harness_options;
#define KL_HARNESS_OPTIONS_INIT                                                \
  { KL_HARNESS_OPTIONS_VERSION, KL_HARNESS_STANDALONE, NULL, NULL }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_HARNESS_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int)
kl_harness_options_init(kl_harness_options *opts, unsigned version);

/** Generate the harness of `c` around `candidate` (kernel source text; NULL
 *  for the case's baseline). The source goes to `out`.
 *  @return 0, KL_EIO (a case file could not be read), KL_EUNSUPPORTED (a
 *  backend or type the generator does not handle yet), KL_ENOMEM. */
KL_EXTERN(int)
kl_harness_generate(kl_buf *out, const kl_case *c, const char *candidate,
                    const kl_harness_options *opts);

KL_END_DECLS

#endif /* KERNLAB_HARNESS_H */
