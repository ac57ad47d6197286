/** @file kernlab/expr.h  The small expression language of cases and rules.
 *
 * Grammar (lowest precedence first):
 *   expr    := or
 *   or      := and ('or' and)*
 *   and     := not ('and' not)*
 *   not     := 'not' not | cmp
 *   cmp     := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
 *   sum     := term (('+'|'-') term)*
 *   term    := unary (('*'|'/'|'//'|'%') unary)*
 *   unary   := '-' unary | '+' unary | power
 *   power   := atom ('**' unary)?
 *   atom    := NUMBER | NAME | NAME '(' args ')' | '(' expr ')'
 * Values are 64-bit integers or doubles. `/` always divides as real numbers;
 * `//` is floor division and `%` the matching modulo on integers. Integer
 * overflow and division by zero are errors, never wrapped values.
 * Comparisons and `and`/`or`/`not` give the integers 0 and 1.
 * Names may contain `.` and `__` (`dram__bytes.sum`).
 * Functions: min max (two or more arguments), abs, ceil_div, floor, ceil,
 * round, sqrt, log2, exp, log, pow, clamp(x, lo, hi), if(c, a, b).
 */
#ifndef KERNLAB_EXPR_H
#define KERNLAB_EXPR_H

#include "common.h"

KL_BEGIN_DECLS

/** A value: an integer or a double. */
typedef struct kl_value {
  int is_int;
  int64_t i; /**< valid when is_int */
  double f;  /**< always valid: the value as a double */
} kl_value;

/** A compiled expression (immutable; may be shared between threads). */
typedef struct kl_expr kl_expr;

/** A set of named values to evaluate against. */
typedef struct kl_vars kl_vars;

#define KL_EXPR_OPTIONS_VERSION 1
/** Where an expression's text sits, so errors point into the real file. */
typedef struct kl_expr_options {
  unsigned version; /**< KL_EXPR_OPTIONS_VERSION */
  const char *path; /**< file named in errors, NULL for "<expr>" */
  int line;         /**< 1-based line of the first character (default 1) */
  int column;       /**< 1-based column of the first character (default 1) */
} kl_expr_options;
#define KL_EXPR_OPTIONS_INIT                                                   \
  { KL_EXPR_OPTIONS_VERSION, NULL, 1, 1 }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_EXPR_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int) kl_expr_options_init(kl_expr_options *opts, unsigned version);

/** Compile `src`. *out is NULL on error.
 *  @return 0, KL_EINVALID (syntax; located in kl_error_last(), with a caret
 *  snippet), KL_ENOMEM. */
KL_EXTERN(int)
kl_expr_compile(kl_expr **out, const char *src, const kl_expr_options *opts);
KL_EXTERN(void) kl_expr_free(kl_expr *e);
/** The source text as given. */
KL_EXTERN(const char *) kl_expr_source(const kl_expr *e);
/** The distinct names the expression reads (function names excluded), in
 *  order of first use. */
KL_EXTERN(size_t) kl_expr_name_count(const kl_expr *e);
KL_EXTERN(const char *) kl_expr_name(const kl_expr *e, size_t i);
/** True when the expression is a single number with no names. */
KL_EXTERN(int) kl_expr_is_constant(const kl_expr *e);

/** Evaluate. A name missing from `vars` (which may be NULL) is an error.
 *  @return 0, KL_EINVALID (unknown name, division by zero, overflow, a
 *  function's domain; located at the offending column). */
KL_EXTERN(int)
kl_expr_eval(kl_value *out, const kl_expr *e, const kl_vars *vars);

/** Compile and evaluate in one step, with no names allowed. */
KL_EXTERN(int) kl_expr_eval_string(kl_value *out, const char *src);

KL_EXTERN(int) kl_vars_create(kl_vars **out);
KL_EXTERN(void) kl_vars_free(kl_vars *v);
/** Set (or replace) a value. The name is copied. */
KL_EXTERN(int) kl_vars_set_int(kl_vars *v, const char *name, int64_t value);
KL_EXTERN(int) kl_vars_set_float(kl_vars *v, const char *name, double value);
KL_EXTERN(int) kl_vars_set(kl_vars *v, const char *name, const kl_value *value);
/** Look a value up; KL_ENOTFOUND when absent. */
KL_EXTERN(int)
kl_vars_get(kl_value *out, const kl_vars *v, const char *name);
KL_EXTERN(size_t) kl_vars_count(const kl_vars *v);
/** Name of the i-th value in insertion order; borrowed. */
KL_EXTERN(const char *) kl_vars_name(const kl_vars *v, size_t i);

KL_END_DECLS

#endif /* KERNLAB_EXPR_H */
