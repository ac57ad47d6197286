/* The case's `params:` section: the kernel's signature in order, each
 * parameter's type (a scalar, a pointer, a struct passed by value and its
 * fields), role, element count and how its inputs are made (`init`), read
 * as case_sections.c reads the other sections: every error located, the
 * reading carried on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

/* "f32*", "bf16 *", "i32" */
static bool parse_type(loader *ld, const ynode *n, case_param *p) {
  const char *t = kl__ld_scalar(ld, n, "type");
  if (!t) return false;
  char base[32];
  size_t len = strcspn(t, " *");
  const char *rest = t + len;
  while (*rest == ' ')
    rest++;
  p->is_pointer = *rest == '*';
  if (p->is_pointer) rest++;
  while (*rest == ' ')
    rest++;
  if (len == 0 || len >= sizeof(base) || *rest) {
    kl__ld_err(ld, n, "type '%s' is not a dtype or a dtype pointer like f32*",
               t);
    return false;
  }
  memcpy(base, t, len);
  base[len] = '\0';
  if (kl_dtype_parse(&p->dtype, base) == 0) return true;
  static const struct {
    const char *c_name, *dtype;
  } aliases[] = {
      {"float", "f32"},    {"double", "f64"},    {"half", "f16"},
      {"__half", "f16"},   {"bfloat16", "bf16"}, {"__nv_bfloat16", "bf16"},
      {"int", "i32"},      {"int32_t", "i32"},   {"int64_t", "i64"},
      {"long", "i64"},     {"short", "i16"},     {"char", "i8"},
      {"int8_t", "i8"},    {"uint8_t", "u8"},    {"uint32_t", "u32"},
      {"unsigned", "u32"}, {"uint64_t", "u64"},  {"size_t", "u64"}};
  for (size_t i = 0; i < KL_ARRAY_SIZE(aliases); i++)
    if (strcmp(base, aliases[i].c_name) == 0) {
      kl__ld_err(ld, n, "unknown dtype '%s'; did you mean '%s%s'?", base,
                 aliases[i].dtype, p->is_pointer ? "*" : "");
      return false;
    }
  kl__ld_err(ld, n,
             "unknown dtype '%s' (expected f64 f32 f16 bf16 i64 i32 i16 i8 "
             "u64 u32 u16 u8)",
             base);
  return false;
}

static void parse_init(loader *ld, const ynode *n, case_param *p) {
  kl_expr *e = kl__ld_compile_ex(ld, n, "init", true);
  if (!e) return;
  const kl_expr_node *r = kl__expr_root(e);
  const char *fname = r->kind == NODE_NAME   ? r->name
                      : r->kind == NODE_CALL ? r->name
                                             : NULL;
  static const struct {
    const char *name;
    kl_init_kind kind;
    int nargs; /* accepted argument counts: 0 or 2 (or 1 for constant) */
    double a, b;
  } dists[] = {
      {"normal", KL_INIT_NORMAL, 2, 0, 1},
      {"uniform", KL_INIT_UNIFORM, 2, 0, 1},
      {"zeros", KL_INIT_CONSTANT, 0, 0, 0},
      {"ones", KL_INIT_CONSTANT, 0, 1, 0},
      {"constant", KL_INIT_CONSTANT, 1, 0, 0},
      {"arange", KL_INIT_ARANGE, 2, 0, 1},
      {"randint", KL_INIT_RANDINT, 2, 0, 100},
  };
  int di = -1;
  for (size_t i = 0; fname && i < KL_ARRAY_SIZE(dists); i++)
    if (strcmp(fname, dists[i].name) == 0) di = (int)i;
  /* Function names of the expression language (min, max…) parse as calls;
   * distribution names that are not functions parse as names. */
  if (r->kind == NODE_CALL && di < 0) fname = NULL;
  if (di < 0) {
    kl__ld_err(ld, n,
               "unknown init '%s' (expected normal, uniform, zeros, ones, "
               "constant(v), arange, randint(lo, hi))",
               n->value);
    kl_expr_free(e);
    return;
  }
  size_t nargs = r->kind == NODE_CALL ? r->nargs : 0;
  bool bad = false;
  double args[2] = {dists[di].a, dists[di].b};
  if (nargs != 0 && (int)nargs != dists[di].nargs) {
    kl__ld_err(ld, n, "init '%s' takes %d arguments, not %zu", dists[di].name,
               dists[di].nargs, nargs);
    bad = true;
  } else if (nargs == 0 && dists[di].nargs == 1) {
    kl__ld_err(ld, n, "init 'constant' needs its value: constant(v)");
    bad = true;
  }
  for (size_t i = 0; !bad && i < nargs; i++) {
    kl_value v;
    /* Arguments are constants: no names are set. */
    kl_expr tmp = *e;
    tmp.root = r->args[i];
    if (kl_expr_eval(&v, &tmp, NULL) < 0) {
      kl__ld_take_last_error(ld, NULL);
      bad = true;
    } else {
      args[i] = v.f;
    }
  }
  if (!bad && dists[di].kind == KL_INIT_UNIFORM && !(args[0] < args[1])) {
    kl__ld_err(ld, n, "init uniform(a, b) needs a < b");
    bad = true;
  }
  if (!bad && dists[di].kind == KL_INIT_NORMAL && !(args[1] > 0)) {
    kl__ld_err(ld, n, "init normal(mean, sd) needs sd > 0");
    bad = true;
  }
  if (!bad && dists[di].kind == KL_INIT_RANDINT &&
      (args[0] != floor(args[0]) || args[1] != floor(args[1]) ||
       args[0] > args[1])) {
    kl__ld_err(ld, n, "init randint(lo, hi) needs whole numbers with lo <= hi");
    bad = true;
  }
  if (!bad) {
    p->init = dists[di].kind;
    p->init_a = args[0];
    p->init_b = args[1];
    p->init_text = kl__ld_dup_or_oom(ld, n->value);
  }
  kl_expr_free(e);
}

static void default_init(loader *ld, case_param *p) {
  if (kl_dtype_is_float(p->dtype)) {
    p->init = KL_INIT_UNIFORM;
    p->init_a = -1;
    p->init_b = 1;
    p->init_text = kl__ld_dup_or_oom(ld, "uniform(-1, 1)");
  } else {
    p->init = KL_INIT_RANDINT;
    p->init_a = 0;
    p->init_b = p->dtype == KL_DTYPE_I8 ? 100 : 1000;
    p->init_text = kl__ld_dup_or_oom(
        ld, p->dtype == KL_DTYPE_I8 ? "randint(0, 100)" : "randint(0, 1000)");
  }
}

/* One buffer or scalar: a param of the kernel, or a field of a struct
 * argument `of` (then named OF.NAME). */
static void read_param(loader *ld, const ynode *n, case_param *p,
                       const char *of) {
  static const char *const keys[] = {"name", "type",  "role",  "count",
                                     "init", "value", "fields"};
  p->line = n->line;
  p->column = n->column;
  /* `fields` belongs to a struct argument, which read_arg handles */
  kl__ld_check_keys(ld, n, keys, KL_ARRAY_SIZE(keys) - 1,
                    of ? "a field" : "a param");
  kl__ld_require(ld, n, "name", of ? "a field" : "a param");
  kl__ld_require(ld, n, "type", of ? "a field" : "a param");
  const ynode *v;
  if ((v = kl__ld_map_get(n, "name"))) {
    const char *name = kl__ld_scalar(ld, v, "param name");
    if (name && !kl__is_ident(name)) {
      kl__ld_err(ld, v, "%s name '%s' is not a C identifier",
                 of ? "field" : "param", name);
    } else if (name && of) {
      size_t size = strlen(of) + strlen(name) + 2;
      char *full = kl__malloc(size);
      if (!full)
        ld->diags.oom = true;
      else
        snprintf(full, size, "%s.%s", of, name);
      p->name = full;
    } else if (name) {
      p->name = kl__ld_dup_or_oom(ld, name);
    }
  }
  const ynode *type = kl__ld_map_get(n, "type");
  bool typed = type && parse_type(ld, type, p);
  if (!typed || !p->name) ld->params_broken = true;
  const ynode *role = kl__ld_map_get(n, "role");
  const ynode *count = kl__ld_map_get(n, "count");
  const ynode *init = kl__ld_map_get(n, "init");
  const ynode *value = kl__ld_map_get(n, "value");
  if (!typed) return;
  if (!p->is_pointer) {
    p->role = KL_ROLE_SCALAR;
    if (role &&
        !(role->kind == YNODE_SCALAR && strcmp(role->value, "scalar") == 0))
      kl__ld_err(ld, role, "role applies to buffers; '%s' is passed by value",
                 p->name ? p->name : "this param");
    if (count)
      kl__ld_err(ld, count, "count applies to buffers; '%s' is passed by value",
                 p->name ? p->name : "this param");
    if (init)
      kl__ld_err(ld, init, "init applies to buffers; a scalar takes 'value'");
    if (value) p->value = kl__ld_compile(ld, value, "value");
    return;
  }
  if (value)
    kl__ld_err(ld, value, "value applies to scalars; a buffer takes 'init'");
  if (!role) {
    kl__ld_err(ld, n,
               "buffer param '%s' needs a role (input, output, inout or "
               "scratch)",
               p->name ? p->name : "?");
  } else if (kl__ld_scalar(ld, role, "role")) {
    if (strcmp(role->value, "input") == 0)
      p->role = KL_ROLE_INPUT;
    else if (strcmp(role->value, "output") == 0)
      p->role = KL_ROLE_OUTPUT;
    else if (strcmp(role->value, "inout") == 0)
      p->role = KL_ROLE_INOUT;
    else if (strcmp(role->value, "scratch") == 0)
      p->role = KL_ROLE_SCRATCH;
    else
      kl__ld_err(ld, role,
                 "unknown role '%s' (expected input, output, inout or "
                 "scratch)",
                 role->value);
  }
  /* a python case's module makes its tensors: a count is optional */
  bool python = ld->backend_ok && ld->c->backend == KL_BACKEND_PYTHON;
  if (python && p->role == KL_ROLE_SCRATCH)
    kl__ld_err(ld, role,
               "role scratch applies to host and cuda cases: a python "
               "case's forward allocates its own workspace");
  if (!count && !python)
    kl__ld_err(ld, n,
               "buffer param '%s' needs a count (an element count "
               "expression)",
               p->name ? p->name : "?");
  else if (count)
    p->count = kl__ld_compile(ld, count, "count");
  bool poisoned = p->role == KL_ROLE_OUTPUT || p->role == KL_ROLE_SCRATCH;
  if (poisoned && init)
    kl__ld_err(ld, init,
               "%s are poisoned before each launch, not "
               "initialised; use role inout to start from values",
               p->role == KL_ROLE_OUTPUT ? "outputs" : "scratch buffers");
  else if (init)
    parse_init(ld, init, p);
  else if (!poisoned)
    default_init(ld, p);
}

/* A struct's C spelling (`LayerNormParams`, `struct params`,
 * `ns::Params<float>`): names, `::`, template arguments; no pointer. */
static bool struct_spelling(const char *t) {
  bool name = false;
  for (const char *q = t; *q; q++) {
    if (kl__c_ident_char(*q))
      name = true;
    else if (!strchr(" :<>,", *q))
      return false;
  }
  return name;
}

/* A struct passed by value: `{ name, type, fields: [params...] }`. Its
 * fields become params named NAME.FIELD, in order. */
static void read_struct_arg(loader *ld, const ynode *n, case_arg *a) {
  kl_case *c = ld->c;
  static const char *const keys[] = {"name", "type", "fields"};
  kl__ld_check_keys(ld, n, keys, KL_ARRAY_SIZE(keys), "a struct param");
  kl__ld_require(ld, n, "name", "a struct param");
  kl__ld_require(ld, n, "type", "a struct param");
  const ynode *v = kl__ld_map_get(n, "name");
  const char *name = v ? kl__ld_scalar(ld, v, "param name") : NULL;
  if (name && !kl__is_ident(name))
    kl__ld_err(ld, v, "param name '%s' is not a C identifier", name);
  else if (name)
    a->name = kl__ld_dup_or_oom(ld, name);
  kl_dtype dt;
  const char *t =
      (v = kl__ld_map_get(n, "type")) ? kl__ld_scalar(ld, v, "type") : NULL;
  if (t && kl_dtype_parse(&dt, t) == 0) {
    kl_error_clear();
    kl__ld_err(ld, v,
               "'%s' has fields, so its type is a struct's C name, "
               "not the dtype '%s'",
               name ? name : "this param", t);
  } else if (t && !struct_spelling(t)) {
    kl_error_clear();
    kl__ld_err(ld, v,
               "type '%s' is not a struct's C name (a struct is passed by "
               "value; a pointer to one is not a case param)",
               t);
  } else if (t) {
    kl_error_clear();
    a->struct_type = kl__ld_dup_or_oom(ld, t);
  }
  const ynode *fs = kl__ld_map_get(n, "fields");
  if (!kl__ld_want(ld, fs, YNODE_SEQ, "fields")) return;
  if (fs->count == 0) {
    kl__ld_err(ld, fs, "fields is empty: list the struct's members in order");
    return;
  }
  a->first = c->nparams;
  for (size_t i = 0; i < fs->count; i++) {
    const ynode *f = fs->items[i];
    if (!kl__ld_want(ld, f, YNODE_MAP, "a field")) {
      ld->params_broken = true;
      continue;
    }
    if (kl__ld_map_get(f, "fields")) {
      kl__ld_err(ld, kl__ld_map_get(f, "fields"),
                 "a field cannot have fields: describe a nested struct's "
                 "members as fields of the outer one");
      ld->params_broken = true;
      continue;
    }
    read_param(ld, f, &c->params[c->nparams++], a->name ? a->name : "?");
  }
  a->count = c->nparams - a->first;
}

void kl__ld_read_params(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *ps = kl__ld_map_get(root, "params");
  if (!ps || !kl__ld_want(ld, ps, YNODE_SEQ, "params")) return;
  if (ps->count == 0) {
    kl__ld_err(ld, ps, "params is empty: list the kernel's arguments in order");
    return;
  }
  size_t leaves = 0; /* a struct's fields each take a param */
  for (size_t i = 0; i < ps->count; i++) {
    const ynode *f = ps->items[i]->kind == YNODE_MAP
                         ? kl__ld_map_get(ps->items[i], "fields")
                         : NULL;
    leaves += f && f->kind == YNODE_SEQ && f->count ? f->count : 1;
  }
  c->params = kl__calloc(leaves, sizeof(*c->params));
  c->args = kl__calloc(ps->count, sizeof(*c->args));
  if (!c->params || !c->args) {
    ld->diags.oom = true;
    return;
  }
  for (size_t i = 0; i < ps->count; i++) {
    const ynode *n = ps->items[i];
    if (!kl__ld_want(ld, n, YNODE_MAP, "a param")) {
      ld->params_broken = true;
      continue;
    }
    case_arg *a = &c->args[c->nargs++];
    a->line = n->line;
    a->column = n->column;
    size_t before = c->nparams;
    if (kl__ld_map_get(n, "fields")) {
      read_struct_arg(ld, n, a);
      if (!a->name || !a->struct_type) ld->params_broken = true;
    } else {
      case_param *p = &c->params[c->nparams++];
      read_param(ld, n, p, NULL);
      a->name = p->name ? kl__ld_dup_or_oom(ld, p->name) : NULL;
      a->first = before;
      a->count = 1;
    }
    /* a param's name, or a struct's, or a field's is used once */
    for (size_t j = 0; a->name && j + 1 < c->nargs; j++)
      if (c->args[j].name && strcmp(c->args[j].name, a->name) == 0) {
        kl__ld_err(ld, kl__ld_map_get(n, "name"),
                   "duplicate param '%s' (first at line %d)", a->name,
                   c->args[j].line);
        break;
      }
    for (size_t q = before + 1; a->struct_type && q < c->nparams; q++)
      for (size_t j = before; c->params[q].name && j < q; j++)
        if (c->params[j].name &&
            strcmp(c->params[j].name, c->params[q].name) == 0) {
          kl__ld_err_at(ld, c->params[q].line, c->params[q].column,
                        "duplicate field '%s' (first at line %d)",
                        c->params[q].name, c->params[j].line);
          break;
        }
  }
}
