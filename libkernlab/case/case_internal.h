/* The in-memory case: what kl_case_load builds and every later module
 * (harness, bench, run) reads. Everything per shape is evaluated at load. */
#ifndef KL_CASE_INTERNAL_H
#define KL_CASE_INTERNAL_H

#include "../core/internal.h"
#include "kernlab/case.h"

typedef struct case_param {
  char *name;
  kl_dtype dtype;
  bool is_pointer;
  kl_role role;
  kl_expr *count;  /* pointers */
  kl_expr *value;  /* scalars, NULL when shapes give the value */
  kl_init_kind init;
  double init_a, init_b;
  char *init_text;
  int line, column;
} case_param;

typedef struct case_shape {
  char *name;
  double weight;
  kl_vars *vars;      /* the shape's keys, then every scalar param */
  int64_t *elements;  /* per param; 0 for scalars */
  kl_value *scalars;  /* per param; scalars only */
  kl_launch launch;
  double roof_bytes, roof_flops;
  int line, column;
} case_shape;

typedef struct case_tunable {
  char *name;
  char **values;
  size_t nvalues;
  char *chosen; /* the configuration's value, or NULL: values[0] */
} case_tunable;

struct kl_case {
  char *dir, *path, *name, *description;
  kl_backend backend;
  char *arch, *compiler, *flags;
  char *kernel_path, *entry, *program_path;
  case_param *params;
  size_t nparams;
  case_shape *shapes;
  size_t nshapes;
  bool has_launch;
  kl_expr *grid[3], *block[3], *shared_bytes;
  kl_expr *roof_bytes, *roof_flops;
  kl_reference_info ref;
  char *ref_source, *ref_function;
  kl_objective objective;
  kl_budget budget;
  case_tunable *tunables;
  size_t ntunables;
  char **rule_files; /* the case's own rule files, in order */
  size_t nrule_files;
  struct kl_llm_settings *llm; /* the llm: section, or NULL */
  struct kl__webhook_settings *webhook; /* the webhook: section, or NULL */
};

#endif /* KL_CASE_INTERNAL_H */
