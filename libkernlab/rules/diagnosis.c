/* Evaluating a rule set against a profile.
 *
 * Each rule reads the names in its `when`; they are looked up in the
 * profile (catalog, Nsight Compute and raw CUPTI names alike). A rule with
 * a name the profile lacks is decided on what is present when it can be
 * (`interval`: the condition holds, or fails, whatever the missing values
 * are; a finding says which it did without), else it is "not evaluated
 * (missing: ...)", and one whose
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
  char *without;   /* the missing names it fired without, or NULL */
  char *stand_ins; /* "name: source; ..." of values from stand-ins */
  kl_severity severity;
  double margin;
  size_t order;
} fired;

typedef struct advice {
  kl_ncu_advice a; /* strings owned */
  char *agrees;    /* the fired rule naming the same problem, or NULL */
  char *covers;    /* else the not-evaluated rule naming it, or NULL */
} advice;

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
  advice *advice; /* Nsight Compute's rule results, ranked as the profile's */
  size_t nadvice;
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

static void advice_dispose(advice *v) {
  kl__free((char *)v->a.rule);
  kl__free((char *)v->a.type);
  kl__free((char *)v->a.section);
  kl__free((char *)v->a.text);
  kl__free((char *)v->a.speedup_type);
  kl__free(v->agrees);
  kl__free(v->covers);
}

void kl_diagnosis_free(kl_diagnosis *d) {
  if (!d) return;
  for (size_t i = 0; i < d->nadvice; i++)
    advice_dispose(&d->advice[i]);
  kl__free(d->advice);
  for (size_t i = 0; i < d->nfired; i++) {
    fired *f = &d->fired[i];
    kl__free(f->id);
    kl__free(f->group);
    kl__free(f->finding);
    kl__free(f->action);
    kl__free(f->without);
    kl__free(f->stand_ins);
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
  if (is_comparison(n) && kl__expr_eval_node(&t, e, n, vars) == 0 && t.f != 0 &&
      kl__expr_eval_node(&a, e, n->left, vars) == 0 &&
      kl__expr_eval_node(&b, e, n->right, vars) == 0) {
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

/* ---- deciding on what is present ---------------------------------------- */

/* The values n can take over every value of the names the profile lacks,
 * as an interval [lo, hi] (a truth is [0,0], [1,1] or [0,1]). A subtree
 * whose names are all present is evaluated exactly; a missing name is
 * anything; max and min, negation, + - * and the comparisons, and, or and
 * not narrow it; anything else over a missing name is anything. So a rule
 * whose condition holds (or fails) whatever the missing values are is
 * decided without them: max(dram, l2) >= 60 with DRAM at 91%. */
static void interval(double *lo, double *hi, const kl_expr *e,
                     const kl_expr_node *n, const kl_vars *vars) {
  kl_value v;
  if (kl__expr_eval_node(&v, e, n, vars) == 0) {
    *lo = *hi = v.f;
    return;
  }
  kl_error_clear();
  *lo = -INFINITY, *hi = INFINITY;
  double a0, a1, b0, b1;
  switch (n->kind) {
  case NODE_NEG:
    interval(&a0, &a1, e, n->left, vars);
    *lo = -a1, *hi = -a0;
    return;
  case NODE_NOT:
    interval(&a0, &a1, e, n->left, vars);
    *lo = a0 == 0 && a1 == 0 ? 1 : 0; /* known false: true */
    *hi = (a0 > 0 || a1 < 0) ? 0 : 1; /* known true: false */
    return;
  case NODE_CALL: {
    bool mx = strcmp(n->name, "max") == 0, mn = strcmp(n->name, "min") == 0;
    if ((!mx && !mn) || n->nargs == 0) return;
    *lo = mx ? -INFINITY : INFINITY, *hi = *lo;
    for (size_t i = 0; i < n->nargs; i++) {
      interval(&a0, &a1, e, n->args[i], vars);
      *lo = mx ? fmax(*lo, a0) : fmin(*lo, a0);
      *hi = mx ? fmax(*hi, a1) : fmin(*hi, a1);
    }
    return;
  }
  case NODE_BINARY:
    break;
  default:
    return;
  }
  interval(&a0, &a1, e, n->left, vars);
  interval(&b0, &b1, e, n->right, vars);
  bool at = a0 > 0 || a1 < 0, af = a0 == 0 && a1 == 0;
  bool bt = b0 > 0 || b1 < 0, bf = b0 == 0 && b1 == 0;
  switch (n->op) {
  case OP_AND:
    *lo = at && bt, *hi = !(af || bf);
    return;
  case OP_OR:
    *lo = at || bt, *hi = !(af && bf);
    return;
  case OP_LT:
  case OP_GT:
  case OP_LE:
  case OP_GE: {
    bool gt = n->op == OP_GT || n->op == OP_GE,
         strict = n->op == OP_LT || n->op == OP_GT;
    double l0 = gt ? a0 : b0, l1 = gt ? a1 : b1; /* l > r (or >=) */
    double r0 = gt ? b0 : a0, r1 = gt ? b1 : a1;
    bool yes = strict ? l0 > r1 : l0 >= r1, no = strict ? l1 <= r0 : l1 < r0;
    *lo = yes, *hi = !no;
    return;
  }
  case OP_ADD:
    *lo = a0 + b0, *hi = a1 + b1;
    break;
  case OP_SUB:
    *lo = a0 - b1, *hi = a1 - b0;
    break;
  case OP_MUL: {
    double p[4] = {a0 * b0, a0 * b1, a1 * b0, a1 * b1};
    *lo = fmin(fmin(p[0], p[1]), fmin(p[2], p[3]));
    *hi = fmax(fmax(p[0], p[1]), fmax(p[2], p[3]));
    break;
  }
  default:
    return;
  }
  if (isnan(*lo) || isnan(*hi)) *lo = -INFINITY, *hi = INFINITY;
}

/* 1: the condition holds whatever the missing values are; 0: it fails
 * whatever they are; -1: they decide. */
static int decided(const kl_expr *e, const kl_vars *vars) {
  double lo, hi;
  interval(&lo, &hi, e, kl__expr_root(e), vars);
  kl_error_clear();
  return lo > 0 || hi < 0 ? 1 : lo == 0 && hi == 0 ? 0 : -1;
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
  margin_of(&f->margin, r->when, kl__expr_root(r->when), vars);
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

/* "name: source; ..." for the values of e the profile took from a stand-in
 * (an ncu export's nearest metric), each name once. */
static int stand_ins_of(kl_buf *out, const kl_expr *e, const kl_profile *p) {
  for (size_t i = 0; i < kl_expr_name_count(e); i++) {
    const char *name = kl_expr_name(e, i),
               *source = kl_profile_stand_in(p, name);
    if (!source) continue;
    char key[160];
    snprintf(key, sizeof(key), "%s: ", name);
    if (out->ptr && strstr(out->ptr, key)) continue;
    kl__buf_printf(out, "%s%s%s", out->size ? "; " : "", key, source);
  }
  return kl__buf_status(out);
}

/* The stand-ins a fired rule read, in `when` or its texts. */
static int note_stand_ins(fired *f, const rule *r, const kl_profile *p) {
  kl_buf b = KL_BUF_INIT;
  const kl__template *ts[2] = {r->finding, r->action};
  int rc = stand_ins_of(&b, r->when, p);
  for (int t = 0; rc == 0 && t < 2; t++)
    for (size_t i = 0; rc == 0 && i < ts[t]->count; i++)
      if (ts[t]->parts[i].expr) rc = stand_ins_of(&b, ts[t]->parts[i].expr, p);
  if (rc == 0 && b.size && !(f->stand_ins = kl__buf_detach(&b)))
    rc = kl__error_oom();
  kl_buf_dispose(&b);
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
  int known = missing.size ? decided(r->when, vars) : -1;
  size_t nfired = d->nfired;
  if (missing.size && known == 1) { /* fires without the missing values */
    if ((rc = add_fired(d, r, vars, order)) == 0 &&
        !(d->fired[d->nfired - 1].without = kl__buf_detach(&missing)))
      rc = kl__error_oom();
  } else if (missing.size && known == 0) {
    if ((rc = KL__GROW(d->passed, d->cap_passed, d->npassed + 1)) == 0) {
      if ((d->passed[d->npassed] = kl__strdup(r->id)))
        d->npassed++;
      else
        rc = kl__error_oom();
    }
  } else if (missing.size) {
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
  if (rc == 0 && d->nfired > nfired)
    rc = note_stand_ins(&d->fired[d->nfired - 1], r, p);
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

/* Nsight Compute's own advice on the profile, each with the fired rule
 * that agrees with it, or else the rule that names the same problem but
 * could not be evaluated on these metrics (a details page lacks the
 * coalescing counters ncu's own rule read). */
static int add_advice(kl_diagnosis *d, const kl_profile *p) {
  size_t n = kl_profile_advice_count(p);
  if (n == 0) return 0;
  const char **ids = kl__calloc(d->nfired ? d->nfired : 1, sizeof(*ids)),
             **unev = kl__calloc(d->nuneval ? d->nuneval : 1, sizeof(*unev));
  if (!ids || !unev || !(d->advice = kl__calloc(n, sizeof(*d->advice)))) {
    kl__free(ids);
    kl__free(unev);
    return kl__error_oom();
  }
  for (size_t i = 0; i < d->nfired; i++)
    ids[i] = d->fired[i].id;
  for (size_t i = 0; i < d->nuneval; i++)
    unev[i] = d->uneval[i].id;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    const kl_ncu_advice *a = kl_profile_advice(p, i);
    advice *v = &d->advice[d->nadvice++];
    const char *agrees = kl__ncu_advice_agrees(a, ids, d->nfired);
    const char *covers =
        agrees ? NULL : kl__ncu_advice_agrees(a, unev, d->nuneval);
    if (covers && !(v->covers = kl__strdup(covers))) rc = kl__error_oom();
    v->a.speedup_pct = a->speedup_pct;
    if (!(v->a.rule = kl__strdup(a->rule)) ||
        !(v->a.type = kl__strdup(a->type)) ||
        !(v->a.section = kl__strdup(a->section)) ||
        !(v->a.text = kl__strdup(a->text)) ||
        !(v->a.speedup_type = kl__strdup(a->speedup_type)) ||
        (agrees && !(v->agrees = kl__strdup(agrees))))
      rc = kl__error_oom();
  }
  kl__free(ids);
  kl__free(unev);
  return rc;
}

size_t kl_diagnosis_advice_count(const kl_diagnosis *d) {
  return d->nadvice;
}

const kl_ncu_advice *kl_diagnosis_advice(const kl_diagnosis *d, size_t i,
                                         const char **agrees,
                                         const char **covers) {
  if (i >= d->nadvice) return NULL;
  if (agrees) *agrees = d->advice[i].agrees;
  if (covers) *covers = d->advice[i].covers;
  return &d->advice[i].a;
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
  if ((rc = add_advice(d, p)) < 0) {
    kl_diagnosis_free(d);
    return rc;
  }
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
  out->without = f->without;
  out->stand_ins = f->stand_ins;
  return kl__result_give(into, &full, sizeof(full),
                         KL__SIZE_THROUGH(kl_finding, stand_ins), "kl_finding");
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
  return kl__result_give(into, &full, sizeof(full),
                         KL__SIZE_THROUGH(kl_unevaluated, reason),
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
    kl__buf_printf(&b, ",\"margin\":%.4g", f->margin);
    if (f->without) {
      kl__buf_puts(&b, ",\"decided_without\":");
      json_names(&b, f->without);
    }
    if (f->stand_ins) {
      kl__buf_puts(&b, ",\"stand_ins\":");
      kl__buf_json_string(&b, f->stand_ins);
    }
    kl__buf_putc(&b, '}');
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
  kl__buf_putc(&b, ']');
  if (d->nadvice) kl__buf_puts(&b, ",\"ncu_advice\":[");
  for (size_t i = 0; i < d->nadvice; i++) {
    const advice *v = &d->advice[i];
    kl__buf_puts(&b, i ? ",{\"rule\":" : "{\"rule\":");
    kl__buf_json_string(&b, v->a.rule);
    kl__buf_puts(&b, ",\"type\":");
    kl__buf_json_string(&b, v->a.type);
    kl__buf_puts(&b, ",\"section\":");
    kl__buf_json_string(&b, v->a.section);
    kl__buf_puts(&b, ",\"text\":");
    kl__buf_json_string(&b, v->a.text);
    if (isnan(v->a.speedup_pct)) {
      kl__buf_puts(&b, ",\"speedup_pct\":null");
    } else {
      kl__buf_printf(
          &b, ",\"speedup_pct\":%.4g,\"speedup_type\":", v->a.speedup_pct);
      kl__buf_json_string(&b, v->a.speedup_type);
    }
    kl__buf_puts(&b, ",\"agrees\":");
    kl__buf_json_string(&b, v->agrees); /* null when none */
    if (v->covers) {
      kl__buf_puts(&b, ",\"names_not_evaluated\":");
      kl__buf_json_string(&b, v->covers);
    }
    kl__buf_putc(&b, '}');
  }
  kl__buf_puts(&b, d->nadvice ? "]}" : "}");
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}
