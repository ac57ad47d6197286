/* Evaluating a rule set against a profile.
 *
 * Each rule reads the names in its `when`; they are looked up in the
 * profile (catalog, Nsight Compute and raw CUPTI names alike). A rule with
 * a name the profile lacks is "not evaluated (missing: ...)", and one whose
 * expression fails (a division by zero) is not evaluated with the error:
 * neither is ever counted as passed. A rule that fires gets its templates
 * filled in and a margin: how far past its threshold the first comparison
 * of `when` that holds is, |a - b| / max(|a|, |b|), so findings of one
 * severity can be ranked and the prompt can take the top few skills. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../expr/expr_internal.h"
#include "rules_internal.h"

typedef struct fired {
  char *id, *group, *finding, *action, *skill;
  kl_severity severity;
  double margin;
  size_t order;
} fired;

typedef struct unevaluated {
  char *id, *missing, *reason;
} unevaluated;

struct kl_diagnosis {
  kl_bottleneck bottleneck;
  char *verdict;
  fired *fired;
  size_t nfired, cap_fired;
  unevaluated *uneval;
  size_t nuneval, cap_uneval;
  char **passed;
  size_t npassed, cap_passed;
};

const char *kl_severity_name(kl_severity s) {
  switch (s) {
  case KL_SEVERITY_HIGH:
    return "high";
  case KL_SEVERITY_MEDIUM:
    return "medium";
  case KL_SEVERITY_LOW:
    return "low";
  }
  return "unknown";
}

void kl_diagnosis_free(kl_diagnosis *d) {
  if (!d) return;
  for (size_t i = 0; i < d->nfired; i++) {
    fired *f = &d->fired[i];
    kl__free(f->id);
    kl__free(f->group);
    kl__free(f->finding);
    kl__free(f->action);
    kl__free(f->skill);
  }
  for (size_t i = 0; i < d->nuneval; i++) {
    kl__free(d->uneval[i].id);
    kl__free(d->uneval[i].missing);
    kl__free(d->uneval[i].reason);
  }
  for (size_t i = 0; i < d->npassed; i++)
    kl__free(d->passed[i]);
  kl__free(d->fired);
  kl__free(d->uneval);
  kl__free(d->passed);
  kl__free(d->verdict);
  kl__free(d);
}

/* Put every name of e the profile has into vars; list the others. */
static int lookup(kl_vars *vars, kl_buf *missing, const kl_expr *e,
                  const kl_profile *p) {
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < kl_expr_name_count(e); i++) {
    const char *name = kl_expr_name(e, i);
    double v;
    if (kl_profile_value(&v, p, name) == 0)
      rc = kl_vars_set_float(vars, name, v);
    else if (missing) /* the names are distinct */
      rc = kl__buf_printf(missing, "%s%s", missing->size ? ", " : "", name);
  }
  return rc;
}

static bool is_comparison(const kl_expr_node *n) {
  return n->kind == NODE_BINARY && n->op >= OP_EQ && n->op <= OP_GE;
}

/* The margin of the first comparison (in reading order) that holds. */
static bool margin_of(double *m, const kl_expr *e, const kl_expr_node *n,
                      const kl_vars *vars) {
  if (!n) return false;
  kl_value t, a, b;
  if (is_comparison(n) && kl_expr__eval_node(&t, e, n, vars) == 0 && t.f != 0 &&
      kl_expr__eval_node(&a, e, n->left, vars) == 0 &&
      kl_expr__eval_node(&b, e, n->right, vars) == 0) {
    double scale = fmax(fabs(a.f), fabs(b.f));
    *m = scale > 0 ? fabs(a.f - b.f) / scale : 0;
    return true;
  }
  if (margin_of(m, e, n->left, vars) || margin_of(m, e, n->right, vars))
    return true;
  for (size_t i = 0; i < n->nargs; i++)
    if (margin_of(m, e, n->args[i], vars)) return true;
  return false;
}

static char *render(const kl__template *t, const kl_vars *vars, int *rc) {
  if (*rc < 0) return NULL;
  kl_buf b = KL_BUF_INIT;
  char *s = NULL;
  if ((*rc = kl__template_render(&b, t, vars)) == 0 &&
      !(s = kl__buf_detach(&b)))
    *rc = kl__error_oom();
  kl_buf_dispose(&b);
  return s;
}

static int add_fired(kl_diagnosis *d, const rule *r, const kl_vars *vars,
                     size_t order) {
  if (KL__GROW(d->fired, d->cap_fired, d->nfired + 1) < 0) return KL_ENOMEM;
  fired *f = memset(&d->fired[d->nfired++], 0, sizeof(*f));
  f->severity = r->severity;
  f->order = order;
  f->margin = 0;
  margin_of(&f->margin, r->when, kl_expr__root(r->when), vars);
  kl_error_clear();
  int rc = 0;
  f->finding = render(r->finding, vars, &rc);
  f->action = render(r->action, vars, &rc);
  if (rc == 0 &&
      (!(f->id = kl__strdup(r->id)) || !(f->group = kl__strdup(r->group)) ||
       (r->skill && !(f->skill = kl__strdup(r->skill)))))
    rc = kl__error_oom();
  return rc;
}

static int add_unevaluated(kl_diagnosis *d, const rule *r, kl_buf *missing,
                           const char *error) {
  if (KL__GROW(d->uneval, d->cap_uneval, d->nuneval + 1) < 0) return KL_ENOMEM;
  unevaluated *u = memset(&d->uneval[d->nuneval++], 0, sizeof(*u));
  kl_buf reason = KL_BUF_INIT;
  int rc = missing->size ? kl__buf_printf(&reason, "missing: %s", missing->ptr)
                         : kl__buf_printf(&reason, "when: %s", error);
  if (rc < 0 || !(u->id = kl__strdup(r->id)) ||
      (missing->size && !(u->missing = kl__buf_detach(missing)))) {
    kl_buf_dispose(&reason);
    return kl__error_oom();
  }
  u->reason = kl__buf_detach(&reason);
  return u->reason ? 0 : kl__error_oom();
}

static int evaluate_rule(kl_diagnosis *d, const rule *r, const kl_profile *p,
                         size_t order) {
  kl_vars *vars = NULL;
  kl_buf missing = KL_BUF_INIT;
  kl_value v;
  int rc;
  if ((rc = kl_vars_create(&vars)) < 0 ||
      (rc = lookup(vars, &missing, r->when, p)) < 0)
    goto done;
  /* the templates' values print as n/a when absent */
  const kl__template *ts[2] = {r->finding, r->action};
  for (int t = 0; t < 2; t++)
    for (size_t i = 0; i < ts[t]->count; i++)
      if (ts[t]->parts[i].expr &&
          (rc = lookup(vars, NULL, ts[t]->parts[i].expr, p)) < 0)
        goto done;
  if (missing.size) {
    rc = add_unevaluated(d, r, &missing, NULL);
  } else if (kl_expr_eval(&v, r->when, vars) < 0) {
    char text[600];
    snprintf(text, sizeof(text), "%s", kl_error_last()->text);
    kl_error_clear();
    rc = add_unevaluated(d, r, &missing, text);
  } else if (v.f != 0) {
    rc = add_fired(d, r, vars, order);
  } else if ((rc = KL__GROW(d->passed, d->cap_passed, d->npassed + 1)) == 0) {
    if ((d->passed[d->npassed] = kl__strdup(r->id)))
      d->npassed++;
    else
      rc = kl__error_oom();
  }
done:
  kl_buf_dispose(&missing);
  kl_vars_free(vars);
  return rc;
}

static int by_rank(const void *pa, const void *pb) {
  const fired *a = pa, *b = pb;
  if (a->severity != b->severity) return a->severity > b->severity ? -1 : 1;
  if (a->margin != b->margin) return a->margin > b->margin ? -1 : 1;
  return a->order < b->order ? -1 : a->order > b->order;
}

int kl_rules_evaluate(kl_diagnosis **out, const kl_rules *rs,
                      const kl_profile *p) {
  *out = NULL;
  kl_diagnosis *d = kl__calloc(1, sizeof(*d));
  if (!d) return kl__error_oom();
  d->bottleneck = kl_profile_bottleneck(p);
  const char *verdict = kl_profile_verdict(p);
  int rc = verdict && !(d->verdict = kl__strdup(verdict)) ? kl__error_oom() : 0;
  for (size_t i = 0; rc == 0 && i < rs->nrules; i++)
    rc = evaluate_rule(d, &rs->rules[i], p, i);
  if (rc < 0) {
    kl_diagnosis_free(d);
    return rc;
  }
  if (d->nfired > 1) qsort(d->fired, d->nfired, sizeof(*d->fired), by_rank);
  *out = d;
  return 0;
}

/* ---- reading
 * -------------------------------------------------------------------- */

kl_bottleneck kl_diagnosis_bottleneck(const kl_diagnosis *d) {
  return d->bottleneck;
}
const char *kl_diagnosis_verdict(const kl_diagnosis *d) {
  return d->verdict;
}
size_t kl_diagnosis_fired_count(const kl_diagnosis *d) {
  return d->nfired;
}
size_t kl_diagnosis_unevaluated_count(const kl_diagnosis *d) {
  return d->nuneval;
}
size_t kl_diagnosis_passed_count(const kl_diagnosis *d) {
  return d->npassed;
}

int kl_diagnosis_fired(kl_finding *into, const kl_diagnosis *d, size_t i) {
  if (i >= d->nfired)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no finding %zu (of %zu)", i,
                     d->nfired);
  kl_finding full = {0};
  kl_finding *out = &full;
  const fired *f = &d->fired[i];
  out->id = f->id;
  out->severity = f->severity;
  out->group = f->group;
  out->finding = f->finding;
  out->action = f->action;
  out->skill = f->skill;
  out->margin = f->margin;
  return kl__result_give(into, &full, sizeof(full), sizeof(kl_finding),
                         "kl_finding");
}

int kl_diagnosis_unevaluated(kl_unevaluated *into, const kl_diagnosis *d,
                             size_t i) {
  if (i >= d->nuneval)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "no unevaluated rule %zu (of %zu)", i, d->nuneval);
  kl_unevaluated full = {0};
  kl_unevaluated *out = &full;
  out->id = d->uneval[i].id;
  out->missing = d->uneval[i].missing;
  out->reason = d->uneval[i].reason;
  return kl__result_give(into, &full, sizeof(full), sizeof(kl_unevaluated),
                         "kl_unevaluated");
}

int kl_diagnosis_skills(kl_buf *out, const kl_diagnosis *d, const kl_rules *rs,
                        size_t max) {
  kl_buf b = KL_BUF_INIT;
  const char *taken[64];
  size_t n = 0;
  kl__buf_puts(&b, "");
  for (size_t i = 0; i < d->nfired && n < max && n < 64; i++) {
    const skill *s = kl__skill_find(rs, d->fired[i].skill);
    bool dup = false;
    for (size_t j = 0; s && j < n; j++)
      dup |= strcmp(taken[j], s->id) == 0;
    if (!s || dup) continue;
    taken[n++] = s->id;
    kl__buf_printf(&b, "%s%s", b.size ? "\n" : "", s->text);
    if (s->text[0] && s->text[strlen(s->text) - 1] != '\n')
      kl__buf_putc(&b, '\n');
  }
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}

/* "a, b" as ["a","b"] */
static int json_names(kl_buf *b, const char *list) {
  kl__buf_putc(b, '[');
  for (const char *p = list; p && *p;) {
    size_t n = strcspn(p, ",");
    kl__buf_puts(b, p == list ? "" : ",");
    kl__buf_json_string_n(b, p, n);
    p += n;
    p += strspn(p, ", ");
  }
  kl__buf_putc(b, ']');
  return kl__buf_status(b);
}

int kl_diagnosis_json(kl_buf *out, const kl_diagnosis *d) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_printf(&b, "{\"bottleneck\":\"%s\",\"verdict\":",
                 kl_bottleneck_name(d->bottleneck));
  kl__buf_json_string(&b, d->verdict);
  kl__buf_puts(&b, ",\"fired\":[");
  for (size_t i = 0; i < d->nfired; i++) {
    const fired *f = &d->fired[i];
    kl__buf_puts(&b, i ? ",{\"id\":" : "{\"id\":");
    kl__buf_json_string(&b, f->id);
    kl__buf_printf(
        &b, ",\"severity\":\"%s\",\"group\":", kl_severity_name(f->severity));
    kl__buf_json_string(&b, f->group);
    kl__buf_puts(&b, ",\"finding\":");
    kl__buf_json_string(&b, f->finding);
    kl__buf_puts(&b, ",\"action\":");
    kl__buf_json_string(&b, f->action);
    kl__buf_puts(&b, ",\"skill\":");
    kl__buf_json_string(&b, f->skill);
    kl__buf_printf(&b, ",\"margin\":%.4g}", f->margin);
  }
  kl__buf_puts(&b, "],\"not_evaluated\":[");
  for (size_t i = 0; i < d->nuneval; i++) {
    const unevaluated *u = &d->uneval[i];
    kl__buf_puts(&b, i ? ",{\"id\":" : "{\"id\":");
    kl__buf_json_string(&b, u->id);
    kl__buf_puts(&b, ",\"missing\":");
    json_names(&b, u->missing);
    kl__buf_puts(&b, ",\"reason\":");
    kl__buf_json_string(&b, u->reason);
    kl__buf_putc(&b, '}');
  }
  kl__buf_puts(&b, "],\"passed\":[");
  for (size_t i = 0; i < d->npassed; i++) {
    kl__buf_puts(&b, i ? "," : "");
    kl__buf_json_string(&b, d->passed[i]);
  }
  kl__buf_puts(&b, "]}");
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}
