/* The case loader's parts (see case_load.c): the loader every section
 * reader records into, and the helpers they share (case_read.c), the
 * section readers (case_sections.c), the evaluation per shape
 * (case_eval.c). Internal to the case module. */
#ifndef KL_CASE_LOADER_H
#define KL_CASE_LOADER_H

#include <stdarg.h>

#include "../core/yaml_tree.h"
#include "../expr/expr_internal.h"
#include "case_internal.h"

#define CASE_FORMAT_VERSION 1

typedef struct loader {
  kl_case *c;
  const char *path; /* case.yaml as named in messages */
  const char *text; /* its contents, for snippets */
  kl__diag_list diags;
  bool params_broken; /* a param could not be read: skip evaluation */
  bool backend_ok;    /* backend was read: backend-specific checks apply */
} loader;

/* ---- case_read.c: diagnostics and the tree ---- */
void kl__ld_err_atv(loader *ld, int line, int column, const char *fmt,
                    va_list ap);
void kl__ld_err_at(loader *ld, int line, int column, const char *fmt, ...)
    KL_PRINTF(4, 5);
void kl__ld_err(loader *ld, const ynode *n, const char *fmt, ...)
    KL_PRINTF(3, 4);
/* Move the thread's last error (from the expression language) into the
 * list, optionally with a suffix. */
void kl__ld_take_last_error(loader *ld, const char *suffix);
bool kl__ld_has_errors(const loader *ld);
const ynode *kl__ld_map_get(const ynode *map, const char *key);
/* Is n of `kind`? Otherwise an error naming what was wanted. */
bool kl__ld_want(loader *ld, const ynode *n, ynode_kind kind, const char *what);
bool kl__ld_looks_cut_by_comma(const ynode *n);
/* What to add to a message about a value a comma may have cut. */
extern const char kl__ld_comma_hint[];
/* Every key of map among keys[] (a close one suggested), else an error. */
void kl__ld_check_keys(loader *ld, const ynode *map, const char *const *keys,
                       size_t nkeys, const char *what);
void kl__ld_require(loader *ld, const ynode *map, const char *key,
                    const char *what);
/* A scalar's text, or NULL with an error. */
const char *kl__ld_scalar(loader *ld, const ynode *n, const char *what);
char *kl__ld_dup_or_oom(loader *ld, const char *s);
/* An expression compiled against the case's names (any_function: calls
 * of any name allowed, for rule-like uses). */
kl_expr *kl__ld_compile_ex(loader *ld, const ynode *n, const char *what,
                           bool any_function);
kl_expr *kl__ld_compile(loader *ld, const ynode *n, const char *what);
bool kl__ld_constant(loader *ld, const ynode *n, const char *what,
                     kl_value *out);
bool kl__ld_whole_number(loader *ld, const ynode *n, const char *what,
                         int64_t min, int64_t *out);
bool kl__ld_real_number(loader *ld, const ynode *n, const char *what,
                        double min, double *out);
/* A file of the case folder named by n (relative, inside the folder). */
char *kl__ld_case_file(loader *ld, const ynode *n, const char *what);

/* ---- case_sections.c (params: case_params.c): one reader per section ---- */
void kl__ld_read_header(loader *ld, const ynode *root);
void kl__ld_read_target(loader *ld, const ynode *root);
void kl__ld_read_kernel(loader *ld, const ynode *root);
void kl__ld_read_params(loader *ld, const ynode *root);
void kl__ld_read_shapes(loader *ld, const ynode *root);
void kl__ld_read_reference(loader *ld, const ynode *root);
void kl__ld_read_rest(loader *ld, const ynode *root);
void kl__ld_read_rule_files(loader *ld, const ynode *root);
void kl__ld_read_tunables(loader *ld, const ynode *root);
/* ---- case_timing.c: how the kernel is timed (timing.launch) ---- */
void kl__ld_read_timing(loader *ld, const ynode *root);
/* ---- case_command.c: a backend: command case's kernel and metrics ---- */
void kl__ld_read_command(loader *ld, const ynode *root);
/* A configuration's values for the declared tunables (NAME=VALUE). */
int kl__ld_configure_tunables(kl_case *c, const char *const *assign);

/* ---- case_eval.c ---- */
/* Every shape: its values, the scalar params, buffer counts, launch
 * geometry and roofline; an expression failing for a shape is reported
 * once. */
void kl__ld_evaluate(loader *ld);

#endif /* KL_CASE_LOADER_H */
