/* What the prompt assembly (prompt.c) takes from reply parsing (reply.c). */
#ifndef KL_PROMPT_INTERNAL_H
#define KL_PROMPT_INTERNAL_H

#include "../core/internal.h"
#include "kernlab/prompt.h"

/* The baseline's declaration of the entry point, comments dropped and
 * white space collapsed: `extern "C" __global__ void f(float *out, int n)`.
 * KL_EINVALID when the baseline does not define it. */
int kl__entry_signature(char **out, const kl_case *c);
/* The parameters a launcher of the case takes before its context: the
 * entry's, white space collapsed, a template's type parameters bound as
 * the first shape's instantiation binds them (`float *out, int n`).
 * KL_EINVALID when the baseline does not define the entry. */
int kl__launcher_params(char **out, const kl_case *c);

/* Python source (python_source.c). The parameters of the last top-level
 * `def NAME(...)` in src, white space collapsed and comments dropped; *out
 * NULL when src defines none. */
int kl__py_def_params(char **out, const char *src, const char *name);
/* Does src define `class NAME` at the top level? */
bool kl__py_defines_class(const char *src, const char *name);
/* How many positional arguments such parameters accept: at least
 * *required, at most *most (SIZE_MAX with *args); `self` not counted. */
int kl__py_arity(const char *params, size_t *required, size_t *most);
/* The kernel languages src imports at top level, as a list for people
 * ("Triton, PyTorch"), appended to out; "plain Python" when none. */
int kl__py_dsls(kl_buf *out, const char *src);
/* The kernel languages src imports at top level, as bits. */
enum {
  KL__PY_TRITON = 1u << 0,
  KL__PY_CUTE = 1u << 1,   /* CuTe DSL: cutlass */
  KL__PY_CUTILE = 1u << 2, /* cuTile: cuda.tile */
  KL__PY_CUPY = 1u << 3,
  KL__PY_CPP_EXTENSION = 1u << 4, /* torch.utils.cpp_extension */
  KL__PY_NUMBA = 1u << 5,
  KL__PY_TORCH = 1u << 6,
  KL__PY_NUMPY = 1u << 7
};
unsigned kl__py_languages(const char *src);

/* The guide to kernel languages (languages.c): which gives which control,
 * then the idioms of those src imports; appended to out. */
int kl__py_language_guide(kl_buf *out, const char *src);

/* The taker of this module's options struct (KL__OPTIONS_FUNCTIONS,
 * beside its init function): a caller's struct, whatever its version,
 * over this library's defaults. */
int kl__prompt_inputs_take(kl_prompt_inputs *full,
                           const kl_prompt_inputs *given);

#endif /* KL_PROMPT_INTERNAL_H */
