/* The case evaluated for every shape: its own values, the scalar params,
 * buffer counts, launch geometry and roofline. An expression that fails
 * for a shape is reported once (at its first failing shape), and not at
 * all when it fails only for naming a scalar the shape gives no value for
 * (that is reported instead). */
#define _GNU_SOURCE /* realpath */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

/* An expression that failed for one shape is reported once. */
typedef struct evaluation {
  const void **reported; /* expressions or params already reported */
  size_t nreported, cap;
  /* the scalars the shape being evaluated gives no value for (reported
   * once each): an expression that fails only for naming one of them is
   * not reported again as an unknown name */
  const case_param **missing;
  size_t nmissing, mcap;
} evaluation;

/* Whether the last error is an unknown name that the shape's missing
 * scalars already account for. */
static bool follows_missing(const evaluation *ev) {
  const kl_error *e = kl_error_last();
  for (size_t i = 0; e && e->text && i < ev->nmissing; i++) {
    const char *name = ev->missing[i]->name;
    size_t n = strlen(name);
    if (strncmp(e->text, "unknown name '", 14) == 0 &&
        strncmp(e->text + 14, name, n) == 0 &&
        strcmp(e->text + 14 + n, "'") == 0)
      return true;
  }
  return false;
}

static bool already_reported(loader *ld, evaluation *ev, const void *e) {
  for (size_t i = 0; i < ev->nreported; i++)
    if (ev->reported[i] == e) return true;
  if (KL__GROW(ev->reported, ev->cap, ev->nreported + 1) < 0) {
    ld->diags.oom = true;
    return true;
  }
  ev->reported[ev->nreported++] = e;
  return false;
}

/* Evaluate e for shape s; on failure report once (with the shape named). */
static bool eval_for(loader *ld, evaluation *ev, const kl_expr *e,
                     const case_shape *s, kl_value *out) {
  if (kl_expr_eval(out, e, s->vars) == 0) return true;
  if (follows_missing(ev)) {
    kl_error_clear();
    return false;
  }
  if (!already_reported(ld, ev, e)) {
    char suffix[160];
    snprintf(suffix, sizeof(suffix), " (shape '%s')", s->name ? s->name : "?");
    kl__ld_take_last_error(ld, suffix);
  }
  return false;
}

/* Report a value problem at the expression's own position, once. */
static void value_error(loader *ld, evaluation *ev, const kl_expr *e,
                        const char *fmt, ...) KL_PRINTF(4, 5);

static void value_error(loader *ld, evaluation *ev, const kl_expr *e,
                        const char *fmt, ...) {
  if (already_reported(ld, ev, e)) return;
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  kl__expr_error_at(e, 1, 1, "%s", text);
  kl__ld_take_last_error(ld, NULL);
}

static bool as_count(const kl_value *v, int64_t *out) {
  if (v->is_int) {
    *out = v->i;
    return true;
  }
  if (v->f != floor(v->f) || fabs(v->f) > 9e18) return false;
  *out = (int64_t)v->f;
  return true;
}

static void eval_scalars(loader *ld, evaluation *ev, case_shape *s) {
  kl_case *c = ld->c;
  for (size_t p = 0; p < c->nparams; p++) {
    case_param *pa = &c->params[p];
    if (pa->is_pointer || !pa->name) continue;
    kl_value v;
    if (kl_vars_get(&v, s->vars, pa->name) == 0) {
      /* the shape gives it */
    } else if (pa->value) {
      if (!eval_for(ld, ev, pa->value, s, &v)) continue;
    } else {
      kl__ld_err_at(
          ld, s->line, s->column,
          "shape '%s' gives no value for scalar param '%s' (add '%s: …' "
          "to the shape or 'value:' to the param)",
          s->name ? s->name : "?", pa->name, pa->name);
      if (KL__GROW(ev->missing, ev->mcap, ev->nmissing + 1) < 0)
        ld->diags.oom = true;
      else
        ev->missing[ev->nmissing++] = pa;
      continue;
    }
    if (!kl_dtype_is_float(pa->dtype)) {
      int64_t i;
      if (!as_count(&v, &i)) {
        if (!already_reported(ld, ev, pa))
          kl__ld_err_at(
              ld, pa->line, pa->column,
              "scalar '%s' is %s but its value %g for shape '%s' is not a "
              "whole number",
              pa->name, kl_dtype_name(pa->dtype), v.f, s->name ? s->name : "?");
        continue;
      }
      int bits = (int)kl_dtype_size(pa->dtype) * 8;
      bool is_unsigned = pa->dtype >= KL_DTYPE_U64;
      bool fits = is_unsigned ? (i >= 0 && (bits == 64 || i < (1LL << bits)))
                              : (bits == 64 || (i >= -(1LL << (bits - 1)) &&
                                                i < (1LL << (bits - 1))));
      if (!fits) {
        if (!already_reported(ld, ev, pa))
          kl__ld_err_at(ld, pa->line, pa->column,
                        "scalar '%s' (%s) cannot hold %lld (shape '%s')",
                        pa->name, kl_dtype_name(pa->dtype), (long long)i,
                        s->name ? s->name : "?");
        continue;
      }
      v.is_int = 1;
      v.i = i;
      v.f = (double)i;
    } else if (v.is_int) {
      v.is_int = 0;
    }
    s->scalars[p] = v;
    if (kl_vars_set(s->vars, pa->name, &v) < 0) ld->diags.oom = true;
  }
}

static void eval_counts(loader *ld, evaluation *ev, case_shape *s) {
  kl_case *c = ld->c;
  for (size_t p = 0; p < c->nparams; p++) {
    case_param *pa = &c->params[p];
    kl_value v;
    if (!pa->is_pointer || !pa->count || !eval_for(ld, ev, pa->count, s, &v))
      continue;
    int64_t n;
    if (!as_count(&v, &n))
      value_error(ld, ev, pa->count,
                  "count of '%s' is %g for shape '%s', not a whole number",
                  pa->name ? pa->name : "?", v.f, s->name ? s->name : "?");
    else if (n <= 0)
      value_error(ld, ev, pa->count,
                  "count of '%s' is %lld for shape '%s'; "
                  "it must be at least 1",
                  pa->name ? pa->name : "?", (long long)n,
                  s->name ? s->name : "?");
    else if (n > INT64_MAX / 8)
      value_error(ld, ev, pa->count, "count of '%s' is too large (%lld)",
                  pa->name ? pa->name : "?", (long long)n);
    else
      s->elements[p] = n;
  }
}

static void eval_launch(loader *ld, evaluation *ev, case_shape *s) {
  kl_case *c = ld->c;
  static const int64_t grid_max[3] = {2147483647, 65535, 65535};
  static const int64_t block_max[3] = {1024, 1024, 64};
  for (int g = 0; g < 2; g++) {
    kl_expr *const *exprs = g ? c->block : c->grid;
    int64_t *dst = g ? s->launch.block : s->launch.grid;
    const int64_t *max = g ? block_max : grid_max;
    for (int d = 0; d < 3; d++) {
      dst[d] = 1;
      kl_value v;
      int64_t n;
      if (!exprs[d] || !eval_for(ld, ev, exprs[d], s, &v)) continue;
      if (!as_count(&v, &n) || n < 1 || n > max[d])
        value_error(ld, ev, exprs[d],
                    "%s.%c is %g for shape '%s'; it must "
                    "be a whole number from 1 to %lld",
                    g ? "block" : "grid", "xyz"[d], v.f,
                    s->name ? s->name : "?", (long long)max[d]);
      else
        dst[d] = n;
    }
  }
  int64_t threads =
      s->launch.block[0] * s->launch.block[1] * s->launch.block[2];
  if (threads > 1024 && c->block[0])
    value_error(ld, ev, c->block[0],
                "a block of %lld threads for shape "
                "'%s' exceeds the 1024 a CUDA block can hold",
                (long long)threads, s->name ? s->name : "?");
  kl_value v;
  int64_t n;
  if (c->shared_bytes && eval_for(ld, ev, c->shared_bytes, s, &v)) {
    if (!as_count(&v, &n) || n < 0)
      value_error(ld, ev, c->shared_bytes,
                  "shared_bytes is %g for shape "
                  "'%s'; it must be a whole number >= 0",
                  v.f, s->name ? s->name : "?");
    else
      s->launch.shared_bytes = n;
  }
}

static void eval_roofline(loader *ld, evaluation *ev, case_shape *s) {
  kl_case *c = ld->c;
  kl_expr *exprs[2] = {c->roof_bytes, c->roof_flops};
  double *dst[2] = {&s->roof_bytes, &s->roof_flops};
  for (int i = 0; i < 2; i++) {
    kl_value v;
    if (!exprs[i] || !eval_for(ld, ev, exprs[i], s, &v)) continue;
    if (v.f < 0)
      value_error(ld, ev, exprs[i],
                  "roofline.%s is negative (%g) for shape "
                  "'%s'",
                  i ? "flops" : "bytes", v.f, s->name ? s->name : "?");
    else
      *dst[i] = v.f;
  }
}

/* Numeric tunables are visible to expressions at their current value (the
 * first one, the baseline's, unless a configuration chose another), so
 * launch geometry can follow a BLOCK define. A shape value of the same
 * name wins. */
static void expose_tunables(loader *ld, case_shape *s) {
  kl_case *c = ld->c;
  for (size_t i = 0; i < c->ntunables; i++) {
    kl_value v;
    const case_tunable *t = &c->tunables[i];
    const char *value = kl_case_tunable_current(c, i);
    if (!value || kl_vars_get(&v, s->vars, t->name) == 0) continue;
    int rc = kl_expr_eval_string(&v, value);
    if (rc == KL_ENOMEM) {
      ld->diags.oom = true;
      return;
    }
    if (rc < 0) {
      kl_error_clear(); /* not a number: only a -D define */
      continue;
    }
    if (kl_vars_set(s->vars, t->name, &v) < 0) ld->diags.oom = true;
  }
}

void kl__ld_evaluate(loader *ld) {
  kl_case *c = ld->c;
  evaluation ev = {0};
  for (size_t i = 0; i < c->nshapes && !ld->diags.oom; i++) {
    case_shape *s = &c->shapes[i];
    if (!s->vars) continue;
    s->elements = kl__calloc(c->nparams ? c->nparams : 1, sizeof(int64_t));
    s->scalars = kl__calloc(c->nparams ? c->nparams : 1, sizeof(kl_value));
    if (!s->elements || !s->scalars) {
      ld->diags.oom = true;
      break;
    }
    expose_tunables(ld, s);
    ev.nmissing = 0;
    eval_scalars(ld, &ev, s);
    eval_counts(ld, &ev, s);
    if (c->has_launch) eval_launch(ld, &ev, s);
    eval_roofline(ld, &ev, s);
  }
  kl__free(ev.reported);
  kl__free(ev.missing);
}
