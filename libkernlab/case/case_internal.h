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

typedef struct case_tunable {
  char *name;
  char **values;
  size_t nvalues;
  char *chosen; /* the configuration's value, or NULL: values[0] */
} case_tunable;

/* A command case's metric: a field of the JSON its command prints. */
typedef struct case_metric {
  char *name;
  bool higher; /* better: higher (else lower) */
  double weight;
} case_metric;

#define KL__CASE_MAX_LINK 32

struct kl_case {
  char *dir, *path, *name, *description;
  kl_backend backend;
  char *arch, *compiler, *flags;
  /* target.libs: "-lNAME" words and library paths, linked after the
   * defaults; target.include: folders (absolute), -I before the defaults;
   * KL__CASE_MAX_LINK of each at most */
  char **libs, **includes;
  size_t nlibs, nincludes;
  char *kernel_path, *entry, *program_path;
  bool python_host;   /* python cases: kernel.device is host */
  case_param *params; /* every buffer and scalar, a struct's fields too */
  size_t nparams;
  case_arg *args; /* the kernel's arguments, in order */
  size_t nargs;
  case_shape *shapes;
  size_t nshapes;
  bool has_launch;
  kl_expr *grid[3], *block[3], *shared_bytes;
  kl_expr *roof_bytes, *roof_flops;
  kl_reference_info ref;
  char *ref_source, *ref_function;
  kl_objective objective;
  kl_budget budget;
  int launch; /* timing.launch: KL_LAUNCH_STREAM or KL_LAUNCH_GRAPH */
  case_tunable *tunables;
  size_t ntunables;
  /* backend: command (case_command.c) */
  char **command, **build; /* argv, NULL-ended; build may be NULL */
  size_t ncommand, nbuild;
  double command_timeout_s, command_time_cap_s;
  bool command_loopback; /* kernel.network: loopback */
  char **server;         /* backend: serving: kernel.server (argv) */
  size_t nserver;
  bool serving; /* backend: serving: the command is kl serve-bench
                   --start -- kernel.server (case_command.c) */
  case_metric *metrics;
  size_t nmetrics;
  char **rule_files; /* the case's own rule files, in order */
  size_t nrule_files;
  /* the file as read: sections other modules own (llm:, webhook:) are
   * theirs to read (kl__case_section) */
  struct ynode *yaml;
  char *yaml_text;
};

/* Sections of case.yaml that another module owns and reads (llm:,
 * webhook:): the case keeps them as written. A module that owns one
 * registers a checker when the library loads (a constructor), and
 * kl_case_load then reports that section's mistakes with the case's own;
 * the case never calls into its owners. */
typedef void (*kl__case_section_fn)(const struct ynode *value, const char *path,
                                    const char *file_text,
                                    kl__diag_list *diags);
void kl__case_section_checker(const char *name, kl__case_section_fn fn);
/* The section `name` of c (NULL when it has none), and where it was read:
 * the file's path and text, for located messages. */
const struct ynode *kl__case_section(const kl_case *c, const char *name,
                                     const char **path, const char **text);
/* kl_case_load: every registered owner checks its section. */
void kl__case_check_sections(const kl_case *c, kl__diag_list *diags);

#endif /* KL_CASE_INTERNAL_H */
