/* A loaded case as the modules above case read it (harness, compile,
 * bench, run): what kernlab/case.h's accessors do not give, borrowed from
 * the case and living as long as it does. These are the records a code
 * generator walks (each param, each argument of the kernel, each shape
 * with its values evaluated at load), a command case's kernel, and the
 * limit the compiler sizes its argv by. The case itself (struct kl_case in
 * case_internal.h) and its loader stay inside case/. */
#ifndef KL_CASE_VIEW_H
#define KL_CASE_VIEW_H

#include "../core/internal.h"
#include "kernlab/case.h"
#include "kernlab/expr.h"

/* target.libs and target.include: at most this many of each */
#define KL__CASE_MAX_LINK 32

typedef struct case_param {
  char *name;
  kl_dtype dtype;
  bool is_pointer;
  kl_role role;
  kl_expr *count; /* pointers */
  kl_expr *value; /* scalars, NULL when shapes give the value */
  kl_init_kind init;
  double init_a, init_b;
  char *init_text;
  int line, column;
} case_param;

/* One argument of the kernel: a param, or a struct passed by value whose
 * fields are the params [first, first + count), each named ARG.FIELD (the
 * C expression that reads it in a function given ARG). */
typedef struct case_arg {
  char *name;
  char *struct_type; /* the struct's C spelling; NULL for a plain param */
  size_t first, count;
  int line, column;
} case_arg;

typedef struct case_shape {
  char *name;
  char *entry; /* this shape's instantiation of the entry, or NULL */
  double weight;
  kl_vars *vars;     /* the shape's keys, then every scalar param */
  int64_t *elements; /* per param; 0 for scalars */
  kl_value *scalars; /* per param; scalars only */
  kl_launch launch;
  double roof_bytes, roof_flops;
  int line, column;
} case_shape;

/* Every param, kl_case_param_count(c) of them: each buffer and scalar, a
 * struct's fields too. */
const case_param *kl__case_params(const kl_case *c);
/* The kernel's arguments, in order, kl__case_arg_count(c) of them. */
const case_arg *kl__case_args(const kl_case *c);
size_t kl__case_arg_count(const kl_case *c);
/* Every shape, kl_case_shape_count(c) of them. */
const case_shape *kl__case_shapes(const kl_case *c);
/* The case's reference (its source and function: a host reference's) and
 * budget, as kl_case_reference and kl_case_budget give them, borrowed. */
const kl_reference_info *kl__case_reference(const kl_case *c);
const kl_budget *kl__case_budget(const kl_case *c);

/* A command case's metric: a field of the JSON its command prints. */
typedef struct case_metric {
  char *name;
  bool higher; /* better: higher (else lower) */
  double weight;
} case_metric;

/* A backend: command case's kernel (case_command.c). */
typedef struct kl__case_command {
  char *const *command, *const *build; /* argv, NULL-ended; build may be
                                          NULL */
  size_t ncommand, nbuild;
  double timeout_s, time_cap_s;
  bool loopback; /* kernel.network: loopback */
  const case_metric *metrics;
  size_t nmetrics;
} kl__case_command;
void kl__case_command_of(kl__case_command *out, const kl_case *c);

#endif /* KL_CASE_VIEW_H */
