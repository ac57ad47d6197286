/* A kernel's signature read from its source (signature.c), for
 * kl_case_from_observation (case_from.c): its arguments and their params,
 * a struct passed by value standing for its fields. */
#ifndef KL_OBSERVE_SIGNATURE_H
#define KL_OBSERVE_SIGNATURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "observe_internal.h"

typedef struct sig_param {
  char name[64];  /* a struct's field: ARG.FIELD */
  char type[128]; /* as written, const and all */
  kl_dtype dtype;
  bool pointer, is_const;
  size_t arg;  /* the argument it is, or whose field it is */
  uint32_t at; /* a field's offset in its struct */
} sig_param;

/* One argument of the kernel: a param, or a struct passed by value whose
 * fields are params [first, first + count). */
typedef struct sig_arg {
  char name[64];
  char type[128]; /* a struct's name as the source spells it */
  bool is_struct;
  size_t first, count;
  uint32_t size; /* a struct's, by the C layout rules */
} sig_arg;

typedef struct signature {
  sig_param *ps;
  size_t np, pcap;
  sig_arg *as;
  size_t na, acap;
} signature;

void kl__sig_dispose(signature *g);
/* The 1-based line of text's byte `off`. */
int kl__sig_line_of(const char *text, size_t off);
/* What a type name means: a number type kernlab knows, through the types
 * the user stated ("floatX=f32") and the source's typedefs and aliases;
 * *stars its pointer levels. false when it is none. */
bool kl__sig_resolve_type(const char *base, kl_dtype *dt, int *stars,
                          bool *is_const, const kl__src_types *st,
                          const char *const *types);
/* Split "const float *__restrict__ x, int n, Params p" into the kernel's
 * arguments and their params (a struct's fields each one); `types` binds
 * template type parameters (NULL: none). Errors at path:line. */
int kl__sig_parse(signature *g, const char *params, const char *path, int line,
                  const kl__src_types *st, const char *const *types);

#endif /* KL_OBSERVE_SIGNATURE_H */
