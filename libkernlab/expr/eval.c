/* Tree-walking evaluator of the expression language, and kl_vars.
 *
 * Integers stay integers through + - * // % ** and the integer-valued
 * functions; overflow is an error rather than a wrapped value, because a
 * wrapped buffer size is worse than no buffer. Any float operand makes the
 * result a float; `/` always gives a float. Errors are located at the
 * operator or function that failed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "expr_internal.h"

/* ---- vars ---------------------------------------------------------------- */

typedef struct var {
  char *name;
  kl_value value;
} var;

struct kl_vars {
  var *items;
  size_t count, cap;
};

int kl_vars_create(kl_vars **out) {
  *out = kl__calloc(1, sizeof(**out));
  return *out ? 0 : kl__error_oom();
}

void kl_vars_free(kl_vars *v) {
  if (!v) return;
  for (size_t i = 0; i < v->count; i++)
    kl__free(v->items[i].name);
  kl__free(v->items);
  kl__free(v);
}

static var *vars_find(const kl_vars *v, const char *name) {
  if (!v) return NULL;
  for (size_t i = 0; i < v->count; i++)
    if (strcmp(v->items[i].name, name) == 0) return &v->items[i];
  return NULL;
}

int kl_vars_set(kl_vars *v, const char *name, const kl_value *value) {
  var *slot = vars_find(v, name);
  if (slot) {
    slot->value = *value;
    return 0;
  }
  if (KL__GROW(v->items, v->cap, v->count + 1) < 0) return KL_ENOMEM;
  char *copy = kl__strdup(name);
  if (!copy) return kl__error_oom();
  v->items[v->count].name = copy;
  v->items[v->count].value = *value;
  v->count++;
  return 0;
}

int kl_vars_set_int(kl_vars *v, const char *name, int64_t value) {
  kl_value x = {1, value, (double)value};
  return kl_vars_set(v, name, &x);
}

int kl_vars_set_float(kl_vars *v, const char *name, double value) {
  kl_value x = {0, 0, value};
  return kl_vars_set(v, name, &x);
}

int kl_vars_get(kl_value *out, const kl_vars *v, const char *name) {
  var *slot = vars_find(v, name);
  if (!slot) return KL_ENOTFOUND;
  *out = slot->value;
  return 0;
}

size_t kl_vars_count(const kl_vars *v) {
  return v ? v->count : 0;
}

const char *kl_vars_name(const kl_vars *v, size_t i) {
  return v && i < v->count ? v->items[i].name : NULL;
}

/* ---- evaluation ---------------------------------------------------------- */

typedef struct evaluator {
  const kl_expr *e;
  const kl_vars *vars;
} evaluator;

static kl_value make_int(int64_t i) {
  kl_value v = {1, i, (double)i};
  return v;
}

static kl_value make_float(double f) {
  kl_value v = {0, 0, f};
  return v;
}

static int fail(evaluator *ev, const kl_expr_node *n, const char *fmt, ...)
    KL_PRINTF(3, 4);

static int fail(evaluator *ev, const kl_expr_node *n, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  return kl__expr_error_at(ev->e, n->line, n->column, "%s", text);
}

static int finite_or_fail(evaluator *ev, const kl_expr_node *n, double f,
                          kl_value *out) {
  if (!isfinite(f)) return fail(ev, n, "result is not a finite number");
  *out = make_float(f);
  return 0;
}

/* A float that is a whole number and fits becomes an integer. */
static int to_int(evaluator *ev, const kl_expr_node *n, double f,
                  kl_value *out) {
  if (!(f >= -9.2233720368547758e18 && f < 9.2233720368547758e18))
    return fail(ev, n, "result %g does not fit in a 64-bit integer", f);
  *out = make_int((int64_t)f);
  return 0;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

/* The remainder with the divisor's sign (a - b*floor(a/b)), computed from
 * C's truncating % so that no intermediate can overflow: b*floor(a/b) can
 * fall below INT64_MIN when a is near it. b is neither 0 nor -1. */
static int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

static int eval(evaluator *ev, const kl_expr_node *n, kl_value *out);

static int binary(evaluator *ev, const kl_expr_node *n, kl_value a, kl_value b,
                  kl_value *out) {
  int ints = a.is_int && b.is_int;
  int64_t r;
  switch (n->op) {
  case OP_EQ:
    *out = make_int(ints ? a.i == b.i : a.f == b.f);
    return 0;
  case OP_NE:
    *out = make_int(ints ? a.i != b.i : a.f != b.f);
    return 0;
  case OP_LT:
    *out = make_int(ints ? a.i < b.i : a.f < b.f);
    return 0;
  case OP_LE:
    *out = make_int(ints ? a.i <= b.i : a.f <= b.f);
    return 0;
  case OP_GT:
    *out = make_int(ints ? a.i > b.i : a.f > b.f);
    return 0;
  case OP_GE:
    *out = make_int(ints ? a.i >= b.i : a.f >= b.f);
    return 0;
  case OP_ADD:
    if (!ints) return finite_or_fail(ev, n, a.f + b.f, out);
    if (__builtin_add_overflow(a.i, b.i, &r))
      return fail(ev, n, "integer overflow in '+'");
    *out = make_int(r);
    return 0;
  case OP_SUB:
    if (!ints) return finite_or_fail(ev, n, a.f - b.f, out);
    if (__builtin_sub_overflow(a.i, b.i, &r))
      return fail(ev, n, "integer overflow in '-'");
    *out = make_int(r);
    return 0;
  case OP_MUL:
    if (!ints) return finite_or_fail(ev, n, a.f * b.f, out);
    if (__builtin_mul_overflow(a.i, b.i, &r))
      return fail(ev, n, "integer overflow in '*'");
    *out = make_int(r);
    return 0;
  case OP_DIV:
    if (b.f == 0) return fail(ev, n, "division by zero");
    return finite_or_fail(ev, n, a.f / b.f, out);
  case OP_IDIV:
    if (b.f == 0) return fail(ev, n, "division by zero");
    if (!ints) return finite_or_fail(ev, n, floor(a.f / b.f), out);
    if (a.i == INT64_MIN && b.i == -1)
      return fail(ev, n, "integer overflow in '//'");
    *out = make_int(floor_div(a.i, b.i));
    return 0;
  case OP_MOD:
    if (b.f == 0) return fail(ev, n, "modulo by zero");
    if (!ints) return finite_or_fail(ev, n, a.f - b.f * floor(a.f / b.f), out);
    if (b.i == -1) {
      *out = make_int(0);
      return 0;
    }
    *out = make_int(floor_mod(a.i, b.i));
    return 0;
  case OP_POW:
    if (ints && b.i >= 0) {
      int64_t acc = 1, base = a.i, e = b.i;
      while (e > 0) {
        if ((e & 1) && __builtin_mul_overflow(acc, base, &acc))
          return fail(ev, n, "integer overflow in '**'");
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base))
          return fail(ev, n, "integer overflow in '**'");
      }
      *out = make_int(acc);
      return 0;
    }
    if (a.f == 0 && b.f < 0) return fail(ev, n, "zero to a negative power");
    return finite_or_fail(ev, n, pow(a.f, b.f), out);
  case OP_AND:
  case OP_OR:
    break; /* handled with short circuit in eval() */
  }
  return fail(ev, n, "internal error: unknown operator");
}

static int call(evaluator *ev, const kl_expr_node *n, kl_value *out) {
  if (n->func < 0) return fail(ev, n, "unknown function '%s'", n->name);
  const char *f = kl__expr_funcs[n->func].name;
  kl_value a[16] = {{0}};
  int rc;
  if (strcmp(f, "if") == 0) { /* lazy: only the chosen branch runs */
    if ((rc = eval(ev, n->args[0], &a[0])) < 0) return rc;
    return eval(ev, n->args[a[0].f != 0 ? 1 : 2], out);
  }
  for (size_t i = 0; i < n->nargs; i++)
    if ((rc = eval(ev, n->args[i], &a[i])) < 0) return rc;
  if (strcmp(f, "min") == 0 || strcmp(f, "max") == 0) {
    int want_max = f[1] == 'a';
    kl_value best = a[0];
    int all_int = a[0].is_int;
    for (size_t i = 1; i < n->nargs; i++) {
      all_int &= a[i].is_int;
      int better = (a[i].is_int && best.is_int)
                       ? (want_max ? a[i].i > best.i : a[i].i < best.i)
                       : (want_max ? a[i].f > best.f : a[i].f < best.f);
      if (better) best = a[i];
    }
    *out = all_int ? best : make_float(best.f);
    return 0;
  }
  if (strcmp(f, "abs") == 0) {
    if (!a[0].is_int) return finite_or_fail(ev, n, fabs(a[0].f), out);
    if (a[0].i == INT64_MIN) return fail(ev, n, "integer overflow in 'abs'");
    *out = make_int(a[0].i < 0 ? -a[0].i : a[0].i);
    return 0;
  }
  if (strcmp(f, "ceil_div") == 0) {
    if (a[1].f == 0) return fail(ev, n, "division by zero in 'ceil_div'");
    if (a[0].is_int && a[1].is_int) {
      if (a[0].i == INT64_MIN || a[1].i == INT64_MIN)
        return fail(ev, n, "integer overflow in 'ceil_div'");
      *out = make_int(-floor_div(-a[0].i, a[1].i));
      return 0;
    }
    return to_int(ev, n, ceil(a[0].f / a[1].f), out);
  }
  if (strcmp(f, "floor") == 0)
    return a[0].is_int ? (*out = a[0], 0) : to_int(ev, n, floor(a[0].f), out);
  if (strcmp(f, "ceil") == 0)
    return a[0].is_int ? (*out = a[0], 0) : to_int(ev, n, ceil(a[0].f), out);
  if (strcmp(f, "round") == 0)
    return a[0].is_int ? (*out = a[0], 0) : to_int(ev, n, round(a[0].f), out);
  if (strcmp(f, "sqrt") == 0) {
    if (a[0].f < 0) return fail(ev, n, "square root of a negative number");
    return finite_or_fail(ev, n, sqrt(a[0].f), out);
  }
  if (strcmp(f, "log2") == 0 || strcmp(f, "log") == 0) {
    if (a[0].f <= 0)
      return fail(ev, n, "logarithm of a number that is not positive");
    return finite_or_fail(ev, n, f[3] == '2' ? log2(a[0].f) : log(a[0].f), out);
  }
  if (strcmp(f, "exp") == 0) return finite_or_fail(ev, n, exp(a[0].f), out);
  if (strcmp(f, "pow") == 0) {
    kl_expr_node as_pow = *n;
    as_pow.op = OP_POW;
    return binary(ev, &as_pow, a[0], a[1], out);
  }
  if (strcmp(f, "clamp") == 0) {
    kl_value x = a[0], lo = a[1], hi = a[2];
    if (lo.f > hi.f) return fail(ev, n, "clamp: low bound above high bound");
    kl_value r = x.f < lo.f ? lo : x.f > hi.f ? hi : x;
    *out = (x.is_int && lo.is_int && hi.is_int) ? r : make_float(r.f);
    return 0;
  }
  return fail(ev, n, "internal error: function '%s' has no implementation", f);
}

static int eval(evaluator *ev, const kl_expr_node *n, kl_value *out) {
  kl_value a, b;
  int rc;
  switch (n->kind) {
  case NODE_NUM:
    *out = n->num;
    return 0;
  case NODE_NAME:
    if (kl_vars_get(out, ev->vars, n->name) == 0) return 0;
    return fail(ev, n, "unknown name '%s'", n->name);
  case NODE_CALL:
    return call(ev, n, out);
  case NODE_NEG:
    if ((rc = eval(ev, n->left, &a)) < 0) return rc;
    if (!a.is_int) {
      *out = make_float(-a.f);
      return 0;
    }
    if (a.i == INT64_MIN) return fail(ev, n, "integer overflow in '-'");
    *out = make_int(-a.i);
    return 0;
  case NODE_NOT:
    if ((rc = eval(ev, n->left, &a)) < 0) return rc;
    *out = make_int(a.f == 0);
    return 0;
  case NODE_BINARY:
    if ((rc = eval(ev, n->left, &a)) < 0) return rc;
    if (n->op == OP_AND || n->op == OP_OR) {
      int truth = a.f != 0;
      if (n->op == OP_AND ? !truth : truth) {
        *out = make_int(truth);
        return 0;
      }
      if ((rc = eval(ev, n->right, &b)) < 0) return rc;
      *out = make_int(b.f != 0);
      return 0;
    }
    if ((rc = eval(ev, n->right, &b)) < 0) return rc;
    return binary(ev, n, a, b, out);
  }
  return fail(ev, n, "internal error: unknown node");
}

int kl_expr_eval(kl_value *out, const kl_expr *e, const kl_vars *vars) {
  evaluator ev = {e, vars};
  kl_value v;
  int rc = eval(&ev, e->root, &v);
  if (rc == 0) *out = v;
  return rc;
}

int kl__expr_eval_node(kl_value *out, const kl_expr *e, const kl_expr_node *n,
                       const kl_vars *vars) {
  evaluator ev = {e, vars};
  return eval(&ev, n, out);
}

int kl_expr_eval_string(kl_value *out, const char *src) {
  kl_expr *e;
  int rc = kl_expr_compile(&e, src, NULL);
  if (rc < 0) return rc;
  rc = kl_expr_eval(out, e, NULL);
  kl_expr_free(e);
  return rc;
}
