/* The in-memory case: what kl_case_load builds. Everything per shape is
 * evaluated at load. Only case/ sees it: the modules above read a case
 * through kernlab/case.h, case_view.h (the records a code generator
 * walks, a command case's kernel) and case_section.h (the sections other
 * modules own). */
#ifndef KL_CASE_INTERNAL_H
#define KL_CASE_INTERNAL_H

#include "../core/internal.h"
#include "case_section.h"
#include "case_view.h"
#include "kernlab/case.h"

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

/* kl_case_load: every registered owner checks its section. */
void kl__case_check_sections(const kl_case *c, kl__diag_list *diags);

/* The takers of this module's options structs (KL__OPTIONS_FUNCTIONS,
 * beside each init function): a caller's struct, whatever its version,
 * over this library's defaults. */
int kl__case_options_take(kl_case_options *full, const kl_case_options *given);
int kl__case_new_options_take(kl_case_new_options *full,
                              const kl_case_new_options *given);

#endif /* KL_CASE_INTERNAL_H */
