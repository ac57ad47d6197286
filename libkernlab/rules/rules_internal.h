/* The rule set in memory, shared by the loader (rule_file.c), the
 * templates (template.c), the skills (skills.c) and evaluation
 * (diagnosis.c). */
#ifndef KL_RULES_INTERNAL_H
#define KL_RULES_INTERNAL_H

#include "../core/internal.h"
#include "kernlab/expr.h"
#include "kernlab/rules.h"

/* ---- templates ------------------------------------------------------------
 */

/* "text {expr:spec} text": literal pieces and placeholders. */
typedef struct tpl_part {
  char *text;    /* a literal piece, or NULL for a placeholder */
  kl_expr *expr; /* the placeholder's expression */
  char spec[16]; /* its format: [width][.precision][f|e|g|d|%], or "" */
  size_t offset; /* where the piece starts in the template's text */
} tpl_part;

typedef struct kl__template {
  tpl_part *parts;
  size_t count, cap;
} kl__template;

/* A template syntax error: the byte of the template's text it points at. */
typedef struct tpl_error {
  size_t offset;
  char message[512];
} tpl_error;

/* Compile `src`. On a syntax error returns KL_EINVALID with *err filled
 * (no thread error is set); KL_ENOMEM otherwise. */
int kl__template_compile(kl__template **out, const char *src, tpl_error *err);
void kl__template_free(kl__template *t);
/* Append the template with its values; a value that cannot be computed
 * prints as "n/a". */
int kl__template_render(kl_buf *out, const kl__template *t,
                        const kl_vars *vars);
/* Offset of relative position (line, column) inside `src`. */
size_t kl__text_offset(const char *src, int line, int column);

/* ---- rules and skills
 * --------------------------------------------------------- */

typedef struct rule {
  char *id, *when_src, *finding_src, *action_src, *skill, *group, *path;
  int line;
  kl_severity severity;
  bool is_default;
  kl_expr *when;
  kl__template *finding, *action;
} rule;

typedef struct skill {
  char *id, *path, *signal, *text;
} skill;

struct kl_rules {
  rule *rules;
  size_t nrules, cap_rules;
  skill *skills;
  size_t nskills, cap_skills;
  kl_diag_fn on_diag;
  void *payload;
};

/* The id among `fired` (kernlab's fired rules) that names the problem ncu's
 * rule result `a` names, or NULL (ncu_advice.c). */
const char *kl__ncu_advice_agrees(const kl_ncu_advice *a,
                                  const char *const *fired, size_t nfired);

void kl__skill_clear(skill *s);
const skill *kl__skill_find(const kl_rules *rs, const char *id);

/* The taker of this module's options struct (KL__OPTIONS_FUNCTIONS,
 * beside its init function): a caller's struct, whatever its version,
 * over this library's defaults. */
int kl__rules_options_take(kl_rules_options *full,
                           const kl_rules_options *given);

#endif /* KL_RULES_INTERNAL_H */
