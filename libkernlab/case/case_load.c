/* kl_case_load: read case.yaml, validate it, evaluate it for every shape.
 *
 * How it works: the YAML becomes a position-keeping tree (yaml_tree.c); one
 * function per section walks its part of the tree, records what it can and
 * adds a located diagnostic for everything wrong, then carries on, so that
 * a user sees every error of the file at once. Once the sections are read,
 * each shape is evaluated: its own values, then the scalar params, then
 * buffer counts, launch geometry and roofline. An expression that fails for
 * a shape is reported once (at its first failing shape). The case is only
 * returned when no diagnostic was recorded. */
#define _GNU_SOURCE /* realpath */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../expr/expr_internal.h"
#include "case_internal.h"
#include "../core/yaml_tree.h"

#define CASE_FORMAT_VERSION 1

typedef struct loader {
  kl_case *c;
  const char *path; /* case.yaml as named in messages */
  const char *text; /* its contents, for snippets */
  kl__diag_list diags;
  bool params_broken; /* a param could not be read: skip evaluation */
  bool backend_ok;    /* backend was read: backend-specific checks apply */
} loader;

/* ---- diagnostics --------------------------------------------------------- */

static void err_at(loader *ld, int line, int column, const char *fmt, ...)
    KL_PRINTF(4, 5);
static void err(loader *ld, const ynode *n, const char *fmt, ...)
    KL_PRINTF(3, 4);

static void err_atv(loader *ld, int line, int column, const char *fmt,
                    va_list ap) {
  char *snippet = kl__snippet(ld->text, line, column);
  kl__diag_addv(&ld->diags, KL_EINVALID, KL_DOMAIN_CASE, ld->path, line,
                column, snippet, fmt, ap);
  kl__free(snippet);
}

static void err_at(loader *ld, int line, int column, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  err_atv(ld, line, column, fmt, ap);
  va_end(ap);
}

static void err(loader *ld, const ynode *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  err_atv(ld, n->line, n->column, fmt, ap);
  va_end(ap);
}

/* Move the thread's last error (from the expression language) into the
 * list, optionally with a suffix. */
static void take_last_error(loader *ld, const char *suffix) {
  const kl_error *e = kl_error_last();
  if (!e)
    return;
  if (e->code == KL_ENOMEM) {
    ld->diags.oom = true;
    return;
  }
  /* Show the line of the case file rather than the bare expression. */
  char *snippet = NULL;
  if (e->path && strcmp(e->path, ld->path) == 0)
    snippet = kl__snippet(ld->text, e->line, e->column);
  kl__diag_add(&ld->diags, e->code, e->domain, e->path, e->line, e->column,
               snippet ? snippet : e->snippet, "%s%s", e->text,
               suffix ? suffix : "");
  kl__free(snippet);
}

static bool has_errors(const loader *ld) {
  return ld->diags.count > 0 || ld->diags.oom;
}

/* ---- tree helpers -------------------------------------------------------- */

static const ynode *map_get(const ynode *map, const char *key) {
  if (!map || map->kind != YNODE_MAP)
    return NULL;
  for (size_t i = 0; i < map->count; i++)
    if (strcmp(map->pairs[i].key->value, key) == 0)
      return map->pairs[i].value;
  return NULL;
}

static bool want(loader *ld, const ynode *n, ynode_kind kind,
                 const char *what) {
  if (n->kind == kind)
    return true;
  const char *wanted = kind == YNODE_MAP   ? "a mapping"
                       : kind == YNODE_SEQ ? "a list"
                                           : "a single value";
  err(ld, n, "%s must be %s, not %s", what, wanted, kl_yaml__kind_name(n));
  return false;
}

/* A plain value cut at a comma inside [...] or {...} looks like this. */
static bool looks_cut_by_comma(const ynode *n) {
  if (n->kind != YNODE_SCALAR || !n->in_flow || n->quoted)
    return false;
  int depth = 0;
  for (const char *p = n->value; *p; p++)
    depth += (*p == '(') - (*p == ')');
  return depth != 0;
}

static const char comma_hint[] =
    " (inside [...] or {...} a comma ends a plain value: quote the "
    "expression)";

static void check_keys(loader *ld, const ynode *map, const char *const *keys,
                       size_t nkeys, const char *where) {
  for (size_t i = 0; i < map->count; i++) {
    const ynode *k = map->pairs[i].key;
    bool known = false;
    for (size_t j = 0; j < nkeys && !known; j++)
      known = strcmp(k->value, keys[j]) == 0;
    if (known)
      continue;
    const char *hint = kl__suggest(k->value, keys, nkeys);
    if (looks_cut_by_comma(k))
      err(ld, k, "unknown key '%s' in %s%s", k->value, where, comma_hint);
    else if (hint)
      err(ld, k, "unknown key '%s' in %s; did you mean '%s'?", k->value,
          where, hint);
    else
      err(ld, k, "unknown key '%s' in %s", k->value, where);
  }
}

static void require(loader *ld, const ynode *map, const char *key,
                    const char *where) {
  if (!map_get(map, key))
    err(ld, map, "%s is missing required key '%s'", where, key);
}

/* A scalar's text, or NULL (with a diagnostic) when it is not a scalar or
 * is empty. */
static const char *scalar(loader *ld, const ynode *n, const char *what) {
  if (!want(ld, n, YNODE_SCALAR, what))
    return NULL;
  if (!n->value[0]) {
    err(ld, n, "%s is empty", what);
    return NULL;
  }
  return n->value;
}

static char *dup_or_oom(loader *ld, const char *s) {
  char *p = kl__strdup(s);
  if (!p)
    ld->diags.oom = true;
  return p;
}

static kl_expr *compile_ex(loader *ld, const ynode *n, const char *what,
                           bool any_function) {
  const char *text = scalar(ld, n, what);
  if (!text)
    return NULL;
  kl_expr_options opts = KL_EXPR_OPTIONS_INIT;
  opts.path = ld->path;
  opts.line = n->exact ? n->vline : n->line;
  opts.column = n->exact ? n->vcolumn : n->column;
  kl_expr *e;
  if (kl_expr__compile(&e, text, &opts, any_function) < 0) {
    take_last_error(ld, looks_cut_by_comma(n) ? comma_hint : NULL);
    return NULL;
  }
  return e;
}

static kl_expr *compile(loader *ld, const ynode *n, const char *what) {
  return compile_ex(ld, n, what, false);
}

/* A number written as a constant expression ("1e-6", "16*1024"). */
static bool constant(loader *ld, const ynode *n, const char *what,
                     kl_value *out) {
  kl_expr *e = compile(ld, n, what);
  if (!e)
    return false;
  bool ok = true;
  if (kl_expr_name_count(e) > 0) {
    err(ld, n, "%s must be a number, not an expression over '%s'", what,
        kl_expr_name(e, 0));
    ok = false;
  } else if (kl_expr_eval(out, e, NULL) < 0) {
    take_last_error(ld, NULL);
    ok = false;
  }
  kl_expr_free(e);
  return ok;
}

static bool whole_number(loader *ld, const ynode *n, const char *what,
                         int64_t min, int64_t *out) {
  kl_value v;
  if (!constant(ld, n, what, &v))
    return false;
  if (!v.is_int && (v.f != floor(v.f) || fabs(v.f) > 9e15)) {
    err(ld, n, "%s must be a whole number, not %g", what, v.f);
    return false;
  }
  int64_t i = v.is_int ? v.i : (int64_t)v.f;
  if (i < min) {
    err(ld, n, "%s must be at least %lld, not %lld", what, (long long)min,
        (long long)i);
    return false;
  }
  *out = i;
  return true;
}

static bool real_number(loader *ld, const ynode *n, const char *what,
                        double min, double *out) {
  kl_value v;
  if (!constant(ld, n, what, &v))
    return false;
  if (v.f < min) {
    err(ld, n, "%s must be at least %g, not %g", what, min, v.f);
    return false;
  }
  *out = v.f;
  return true;
}

/* A path inside the case folder: relative, no "..", an existing file. */
static char *case_file(loader *ld, const ynode *n, const char *what) {
  const char *rel = scalar(ld, n, what);
  if (!rel)
    return NULL;
  if (rel[0] == '/') {
    err(ld, n, "%s must be a path inside the case folder, not an absolute "
               "path", what);
    return NULL;
  }
  for (const char *p = rel; *p;) {
    size_t len = strcspn(p, "/");
    if (len == 2 && p[0] == '.' && p[1] == '.') {
      err(ld, n, "%s must stay inside the case folder ('..' is not allowed)",
          what);
      return NULL;
    }
    p += len;
    while (*p == '/')
      p++;
  }
  char *full = kl__path_join(ld->c->dir, rel);
  if (!full) {
    ld->diags.oom = true;
    return NULL;
  }
  if (!kl__is_file(full)) {
    err(ld, n, "%s '%s' is not a file in the case folder", what, rel);
    kl__free(full);
    return NULL;
  }
  /* a link may point anywhere: where it leads must be inside too */
  char *real = realpath(full, NULL), *real_dir = realpath(ld->c->dir, NULL);
  size_t nd = real_dir ? strlen(real_dir) : 0;
  if (real && real_dir &&
      !(strncmp(real, real_dir, nd) == 0 && real[nd] == '/')) {
    err(ld, n, "%s '%s' is a link that leads out of the case folder", what,
        rel);
    kl__free(full);
    full = NULL;
  }
  free(real);
  free(real_dir);
  return full;
}

/* ---- sections ------------------------------------------------------------ */

static const char *const top_keys[] = {
    "kernlab", "name",      "description", "backend",   "target",
    "kernel",  "params",    "shapes",      "reference", "roofline",
    "objective", "tunables", "budget",     "program",   "rules",
    "llm",     "webhook"};

static void read_header(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *n;
  if ((n = map_get(root, "kernlab"))) {
    int64_t v;
    if (whole_number(ld, n, "kernlab (the case format version)", 1, &v) &&
        v != CASE_FORMAT_VERSION)
      err(ld, n, "unsupported case format version %lld (this kernlab reads "
                 "%d)", (long long)v, CASE_FORMAT_VERSION);
  }
  if ((n = map_get(root, "name"))) {
    const char *name = scalar(ld, n, "name");
    bool ok = name != NULL;
    for (const char *p = name; ok && *p; p++)
      ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
           (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.';
    if (name && !ok)
      err(ld, n, "name '%s' may hold only letters, digits, '_', '-' and '.'",
          name);
    else if (name)
      c->name = dup_or_oom(ld, name);
  }
  if ((n = map_get(root, "description")) &&
      scalar(ld, n, "description"))
    c->description = dup_or_oom(ld, n->value);
  if ((n = map_get(root, "backend"))) {
    const char *b = scalar(ld, n, "backend");
    if (!b)
      ;
    else if (strcmp(b, "host") == 0)
      c->backend = KL_BACKEND_HOST, ld->backend_ok = true;
    else if (strcmp(b, "cuda") == 0)
      c->backend = KL_BACKEND_CUDA, ld->backend_ok = true;
    else if (strcmp(b, "command") == 0)
      err(ld, n, "backend 'command' is reserved and not implemented yet; use "
                 "'host' or 'cuda'");
    else
      err(ld, n, "unknown backend '%s' (expected host or cuda)", b);
  }
}

static void read_target(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *t = map_get(root, "target");
  if (!t) {
    if (c->backend == KL_BACKEND_CUDA && ld->backend_ok)
      err(ld, root, "cuda cases need 'target: { arch: sm_XX }'");
    return;
  }
  if (!want(ld, t, YNODE_MAP, "target"))
    return;
  static const char *const keys[] = {"arch", "compiler", "flags"};
  check_keys(ld, t, keys, KL_ARRAY_SIZE(keys), "target");
  const ynode *n;
  if ((n = map_get(t, "arch"))) {
    const char *arch = scalar(ld, n, "target.arch");
    if (arch && c->backend == KL_BACKEND_HOST && ld->backend_ok) {
      err(ld, n, "target.arch applies to cuda cases; host cases take "
                 "target.flags");
    } else if (arch) {
      bool ok = strncmp(arch, "sm_", 3) == 0 && arch[3] >= '1' &&
                arch[3] <= '9';
      for (const char *p = arch + 3; ok && *p; p++)
        ok = (*p >= '0' && *p <= '9') || (p[1] == '\0' && (*p == 'a' ||
                                                           *p == 'f'));
      if (!ok)
        err(ld, n, "target.arch '%s' is not an architecture like sm_90", arch);
      else
        c->arch = dup_or_oom(ld, arch);
    }
  } else if (c->backend == KL_BACKEND_CUDA && ld->backend_ok) {
    err(ld, t, "target is missing required key 'arch' (e.g. sm_90)");
  }
  if ((n = map_get(t, "compiler")) && scalar(ld, n, "target.compiler"))
    c->compiler = dup_or_oom(ld, n->value);
  if ((n = map_get(t, "flags"))) {
    kl_buf flags = KL_BUF_INIT;
    if (n->kind == YNODE_SCALAR) {
      kl__buf_puts(&flags, n->value);
    } else if (want(ld, n, YNODE_SEQ, "target.flags")) {
      for (size_t i = 0; i < n->count; i++) {
        const char *f = scalar(ld, n->items[i], "a compiler flag");
        if (f && (flags.size == 0 || kl__buf_putc(&flags, ' ') == 0))
          kl__buf_puts(&flags, f);
      }
    }
    if (flags.size)
      c->flags = kl__buf_detach(&flags);
    kl_buf_dispose(&flags);
  }
}

static void read_launch(loader *ld, const ynode *launch) {
  kl_case *c = ld->c;
  if (!want(ld, launch, YNODE_MAP, "kernel.launch"))
    return;
  static const char *const keys[] = {"grid", "block", "shared_bytes"};
  check_keys(ld, launch, keys, KL_ARRAY_SIZE(keys), "kernel.launch");
  require(ld, launch, "grid", "kernel.launch");
  require(ld, launch, "block", "kernel.launch");
  const char *names[2] = {"grid", "block"};
  kl_expr **dst[2] = {c->grid, c->block};
  for (int g = 0; g < 2; g++) {
    const ynode *n = map_get(launch, names[g]);
    if (!n)
      continue;
    char what[64];
    snprintf(what, sizeof(what), "kernel.launch.%s", names[g]);
    if (n->kind == YNODE_SCALAR) {
      dst[g][0] = compile(ld, n, what);
    } else if (want(ld, n, YNODE_SEQ, what)) {
      if (n->count < 1 || n->count > 3) {
        err(ld, n, "%s must have 1 to 3 dimensions, not %zu%s", what,
            n->count, n->count > 3 ? comma_hint : "");
        continue;
      }
      for (size_t d = 0; d < n->count; d++)
        dst[g][d] = compile(ld, n->items[d], what);
    }
  }
  const ynode *n = map_get(launch, "shared_bytes");
  if (n)
    c->shared_bytes = compile(ld, n, "kernel.launch.shared_bytes");
  c->has_launch = true;
}

static void read_kernel(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *k = map_get(root, "kernel");
  if (!k || !want(ld, k, YNODE_MAP, "kernel"))
    return;
  static const char *const keys[] = {"source", "entry", "launch"};
  check_keys(ld, k, keys, KL_ARRAY_SIZE(keys), "kernel");
  require(ld, k, "source", "kernel");
  require(ld, k, "entry", "kernel");
  const ynode *n;
  if ((n = map_get(k, "source")))
    c->kernel_path = case_file(ld, n, "kernel.source");
  if ((n = map_get(k, "entry"))) {
    const char *entry = scalar(ld, n, "kernel.entry");
    if (entry && !kl__is_ident(entry))
      err(ld, n, "kernel.entry '%s' is not a C function name", entry);
    else if (entry)
      c->entry = dup_or_oom(ld, entry);
  }
  n = map_get(k, "launch");
  if (!ld->backend_ok)
    return; /* whether a launch belongs here depends on the backend */
  if (c->backend == KL_BACKEND_CUDA && !n)
    err(ld, k, "cuda cases need kernel.launch (grid and block)");
  else if (c->backend == KL_BACKEND_HOST && n)
    err(ld, n, "kernel.launch applies to cuda cases only; a host kernel is "
               "called once per launch");
  else if (n)
    read_launch(ld, n);
}

/* "f32*", "bf16 *", "i32" */
static bool parse_type(loader *ld, const ynode *n, case_param *p) {
  const char *t = scalar(ld, n, "type");
  if (!t)
    return false;
  char base[32];
  size_t len = strcspn(t, " *");
  const char *rest = t + len;
  while (*rest == ' ')
    rest++;
  p->is_pointer = *rest == '*';
  if (p->is_pointer)
    rest++;
  while (*rest == ' ')
    rest++;
  if (len == 0 || len >= sizeof(base) || *rest) {
    err(ld, n, "type '%s' is not a dtype or a dtype pointer like f32*", t);
    return false;
  }
  memcpy(base, t, len);
  base[len] = '\0';
  if (kl_dtype_parse(&p->dtype, base) == 0)
    return true;
  static const struct {
    const char *c_name, *dtype;
  } aliases[] = {{"float", "f32"},   {"double", "f64"}, {"half", "f16"},
                 {"__half", "f16"},  {"bfloat16", "bf16"},
                 {"__nv_bfloat16", "bf16"}, {"int", "i32"},
                 {"int32_t", "i32"}, {"int64_t", "i64"}, {"long", "i64"},
                 {"short", "i16"},   {"char", "i8"},    {"int8_t", "i8"},
                 {"uint8_t", "u8"},  {"uint32_t", "u32"},
                 {"unsigned", "u32"}, {"uint64_t", "u64"},
                 {"size_t", "u64"}};
  for (size_t i = 0; i < KL_ARRAY_SIZE(aliases); i++)
    if (strcmp(base, aliases[i].c_name) == 0) {
      err(ld, n, "unknown dtype '%s'; did you mean '%s%s'?", base,
          aliases[i].dtype, p->is_pointer ? "*" : "");
      return false;
    }
  err(ld, n, "unknown dtype '%s' (expected f64 f32 f16 bf16 i64 i32 i16 i8 "
             "u64 u32 u16 u8)", base);
  return false;
}

static void parse_init(loader *ld, const ynode *n, case_param *p) {
  kl_expr *e = compile_ex(ld, n, "init", true);
  if (!e)
    return;
  const kl_expr_node *r = kl_expr__root(e);
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
    if (strcmp(fname, dists[i].name) == 0)
      di = (int)i;
  /* Function names of the expression language (min, max…) parse as calls;
   * distribution names that are not functions parse as names. */
  if (r->kind == NODE_CALL && di < 0)
    fname = NULL;
  if (di < 0) {
    err(ld, n, "unknown init '%s' (expected normal, uniform, zeros, ones, "
               "constant(v), arange, randint(lo, hi))", n->value);
    kl_expr_free(e);
    return;
  }
  size_t nargs = r->kind == NODE_CALL ? r->nargs : 0;
  bool bad = false;
  double args[2] = {dists[di].a, dists[di].b};
  if (nargs != 0 && (int)nargs != dists[di].nargs) {
    err(ld, n, "init '%s' takes %d arguments, not %zu", dists[di].name,
        dists[di].nargs, nargs);
    bad = true;
  } else if (nargs == 0 && dists[di].nargs == 1) {
    err(ld, n, "init 'constant' needs its value: constant(v)");
    bad = true;
  }
  for (size_t i = 0; !bad && i < nargs; i++) {
    kl_value v;
    /* Arguments are constants: no names are set. */
    kl_expr tmp = *e;
    tmp.root = r->args[i];
    if (kl_expr_eval(&v, &tmp, NULL) < 0) {
      take_last_error(ld, NULL);
      bad = true;
    } else {
      args[i] = v.f;
    }
  }
  if (!bad && dists[di].kind == KL_INIT_UNIFORM && !(args[0] < args[1])) {
    err(ld, n, "init uniform(a, b) needs a < b");
    bad = true;
  }
  if (!bad && dists[di].kind == KL_INIT_NORMAL && !(args[1] > 0)) {
    err(ld, n, "init normal(mean, sd) needs sd > 0");
    bad = true;
  }
  if (!bad && dists[di].kind == KL_INIT_RANDINT &&
      (args[0] != floor(args[0]) || args[1] != floor(args[1]) ||
       args[0] > args[1])) {
    err(ld, n, "init randint(lo, hi) needs whole numbers with lo <= hi");
    bad = true;
  }
  if (!bad) {
    p->init = dists[di].kind;
    p->init_a = args[0];
    p->init_b = args[1];
    p->init_text = dup_or_oom(ld, n->value);
  }
  kl_expr_free(e);
}

static void default_init(loader *ld, case_param *p) {
  if (kl_dtype_is_float(p->dtype)) {
    p->init = KL_INIT_UNIFORM;
    p->init_a = -1;
    p->init_b = 1;
    p->init_text = dup_or_oom(ld, "uniform(-1, 1)");
  } else {
    p->init = KL_INIT_RANDINT;
    p->init_a = 0;
    p->init_b = p->dtype == KL_DTYPE_I8 ? 100 : 1000;
    p->init_text =
        dup_or_oom(ld, p->dtype == KL_DTYPE_I8 ? "randint(0, 100)"
                                               : "randint(0, 1000)");
  }
}

static void read_param(loader *ld, const ynode *n, case_param *p) {
  static const char *const keys[] = {"name", "type",  "role",
                                     "count", "init", "value"};
  p->line = n->line;
  p->column = n->column;
  check_keys(ld, n, keys, KL_ARRAY_SIZE(keys), "a param");
  require(ld, n, "name", "a param");
  require(ld, n, "type", "a param");
  const ynode *v;
  if ((v = map_get(n, "name"))) {
    const char *name = scalar(ld, v, "param name");
    if (name && !kl__is_ident(name))
      err(ld, v, "param name '%s' is not a C identifier", name);
    else if (name)
      p->name = dup_or_oom(ld, name);
  }
  const ynode *type = map_get(n, "type");
  bool typed = type && parse_type(ld, type, p);
  if (!typed || !p->name)
    ld->params_broken = true;
  const ynode *role = map_get(n, "role");
  const ynode *count = map_get(n, "count");
  const ynode *init = map_get(n, "init");
  const ynode *value = map_get(n, "value");
  if (!typed)
    return;
  if (!p->is_pointer) {
    p->role = KL_ROLE_SCALAR;
    if (role && !(role->kind == YNODE_SCALAR &&
                  strcmp(role->value, "scalar") == 0))
      err(ld, role, "role applies to buffers; '%s' is passed by value",
          p->name ? p->name : "this param");
    if (count)
      err(ld, count, "count applies to buffers; '%s' is passed by value",
          p->name ? p->name : "this param");
    if (init)
      err(ld, init, "init applies to buffers; a scalar takes 'value'");
    if (value)
      p->value = compile(ld, value, "value");
    return;
  }
  if (value)
    err(ld, value, "value applies to scalars; a buffer takes 'init'");
  if (!role) {
    err(ld, n, "buffer param '%s' needs a role (input, output or inout)",
        p->name ? p->name : "?");
  } else if (scalar(ld, role, "role")) {
    if (strcmp(role->value, "input") == 0)
      p->role = KL_ROLE_INPUT;
    else if (strcmp(role->value, "output") == 0)
      p->role = KL_ROLE_OUTPUT;
    else if (strcmp(role->value, "inout") == 0)
      p->role = KL_ROLE_INOUT;
    else
      err(ld, role, "unknown role '%s' (expected input, output or inout)",
          role->value);
  }
  if (!count)
    err(ld, n, "buffer param '%s' needs a count (an element count "
               "expression)", p->name ? p->name : "?");
  else
    p->count = compile(ld, count, "count");
  if (p->role == KL_ROLE_OUTPUT && init)
    err(ld, init, "outputs are poisoned before each launch, not "
                  "initialised; use role inout to start from values");
  else if (init)
    parse_init(ld, init, p);
  else if (p->role != KL_ROLE_OUTPUT)
    default_init(ld, p);
}

static void read_params(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *ps = map_get(root, "params");
  if (!ps || !want(ld, ps, YNODE_SEQ, "params"))
    return;
  if (ps->count == 0) {
    err(ld, ps, "params is empty: list the kernel's arguments in order");
    return;
  }
  c->params = kl__calloc(ps->count, sizeof(*c->params));
  if (!c->params) {
    ld->diags.oom = true;
    return;
  }
  for (size_t i = 0; i < ps->count; i++) {
    const ynode *n = ps->items[i];
    if (!want(ld, n, YNODE_MAP, "a param")) {
      ld->params_broken = true;
      continue;
    }
    case_param *p = &c->params[c->nparams++];
    read_param(ld, n, p);
    for (size_t j = 0; p->name && j + 1 < c->nparams; j++)
      if (c->params[j].name && strcmp(c->params[j].name, p->name) == 0) {
        const ynode *name = map_get(n, "name");
        err(ld, name, "duplicate param '%s' (first at line %d)", p->name,
            c->params[j].line);
        break;
      }
  }
}

static bool is_param_name(const kl_case *c, const char *name, bool pointer) {
  for (size_t i = 0; i < c->nparams; i++)
    if (c->params[i].name && strcmp(c->params[i].name, name) == 0 &&
        c->params[i].is_pointer == pointer)
      return true;
  return false;
}

static void read_shape(loader *ld, const ynode *n, case_shape *s) {
  kl_case *c = ld->c;
  s->line = n->line;
  s->column = n->column;
  s->weight = 1;
  if (kl_vars_create(&s->vars) < 0) {
    ld->diags.oom = true;
    return;
  }
  const ynode *name = map_get(n, "name");
  if (!name)
    err(ld, n, "a shape is missing required key 'name'");
  else if (scalar(ld, name, "shape name"))
    s->name = dup_or_oom(ld, name->value);
  for (size_t i = 0; i < n->count; i++) {
    const ynode *k = n->pairs[i].key, *v = n->pairs[i].value;
    if (strcmp(k->value, "name") == 0)
      continue;
    if (strcmp(k->value, "weight") == 0) {
      if (real_number(ld, v, "weight", 0, &s->weight) && s->weight <= 0)
        err(ld, v, "weight must be greater than 0");
      continue;
    }
    if (!kl__is_ident(k->value)) {
      err(ld, k, "shape value '%s' is not a name usable in expressions%s",
          k->value, looks_cut_by_comma(k) ? comma_hint : "");
      continue;
    }
    if (is_param_name(c, k->value, true)) {
      err(ld, k, "shape value '%s' has the name of a buffer param",
          k->value);
      continue;
    }
    /* A value may use the shape's earlier values: n: 1024*1024, m: 2*n */
    kl_expr *e = compile(ld, v, "a shape value");
    if (!e)
      continue;
    kl_value val;
    if (kl_expr_eval(&val, e, s->vars) < 0)
      take_last_error(ld, NULL);
    else if (kl_vars_set(s->vars, k->value, &val) < 0)
      ld->diags.oom = true;
    kl_expr_free(e);
  }
}

static void read_shapes(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *ss = map_get(root, "shapes");
  if (!ss || !want(ld, ss, YNODE_SEQ, "shapes"))
    return;
  if (ss->count == 0) {
    err(ld, ss, "shapes is empty: give at least one shape to run at");
    return;
  }
  c->shapes = kl__calloc(ss->count, sizeof(*c->shapes));
  if (!c->shapes) {
    ld->diags.oom = true;
    return;
  }
  for (size_t i = 0; i < ss->count; i++) {
    const ynode *n = ss->items[i];
    if (!want(ld, n, YNODE_MAP, "a shape"))
      continue;
    case_shape *s = &c->shapes[c->nshapes++];
    read_shape(ld, n, s);
    for (size_t j = 0; s->name && j + 1 < c->nshapes; j++)
      if (c->shapes[j].name && strcmp(c->shapes[j].name, s->name) == 0) {
        err(ld, map_get(n, "name"), "duplicate shape '%s' (first at line %d)",
            s->name, c->shapes[j].line);
        break;
      }
  }
}

static double default_tolerance(const kl_case *c) {
  double tol = 0;
  for (size_t i = 0; i < c->nparams; i++) {
    const case_param *p = &c->params[i];
    if (!p->is_pointer || p->role == KL_ROLE_INPUT)
      continue;
    double t = 0;
    switch (p->dtype) {
    case KL_DTYPE_F64: t = 1e-9; break;
    case KL_DTYPE_F32: t = 1e-4; break;
    case KL_DTYPE_F16: t = 1e-2; break;
    case KL_DTYPE_BF16: t = 2e-2; break;
    default: t = 0; break;
    }
    if (t > tol)
      tol = t;
  }
  return tol;
}

static void read_reference(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  c->ref.kind = KL_REFERENCE_BASELINE;
  c->ref.atol = c->ref.rtol = default_tolerance(c);
  const ynode *r = map_get(root, "reference");
  if (!r || !want(ld, r, YNODE_MAP, "reference"))
    return;
  static const char *const keys[] = {"kind", "source", "function", "atol",
                                     "rtol"};
  check_keys(ld, r, keys, KL_ARRAY_SIZE(keys), "reference");
  const ynode *n;
  if ((n = map_get(r, "kind")) && scalar(ld, n, "reference.kind")) {
    if (strcmp(n->value, "host") == 0)
      c->ref.kind = KL_REFERENCE_HOST;
    else if (strcmp(n->value, "baseline") != 0)
      err(ld, n, "unknown reference kind '%s' (expected baseline or host)",
          n->value);
  }
  const ynode *src = map_get(r, "source"), *fn = map_get(r, "function");
  if (c->ref.kind == KL_REFERENCE_HOST) {
    if (!src)
      err(ld, r, "a host reference needs 'source' (a C file in the case)");
    else
      c->ref_source = case_file(ld, src, "reference.source");
    if (!fn)
      err(ld, r, "a host reference needs 'function' (its C name)");
    else if (scalar(ld, fn, "reference.function") && !kl__is_ident(fn->value))
      err(ld, fn, "reference.function '%s' is not a C function name",
          fn->value);
    else if (fn->kind == YNODE_SCALAR && fn->value[0])
      c->ref_function = dup_or_oom(ld, fn->value);
  } else {
    if (src)
      err(ld, src, "reference.source applies to kind: host");
    if (fn)
      err(ld, fn, "reference.function applies to kind: host");
  }
  if ((n = map_get(r, "atol")))
    real_number(ld, n, "reference.atol", 0, &c->ref.atol);
  if ((n = map_get(r, "rtol")))
    real_number(ld, n, "reference.rtol", 0, &c->ref.rtol);
  c->ref.source = c->ref_source;
  c->ref.function = c->ref_function;
}

static void read_rest(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *n;
  if ((n = map_get(root, "roofline")) && want(ld, n, YNODE_MAP, "roofline")) {
    static const char *const keys[] = {"bytes", "flops"};
    check_keys(ld, n, keys, KL_ARRAY_SIZE(keys), "roofline");
    const ynode *b = map_get(n, "bytes"), *f = map_get(n, "flops");
    if (!b && !f)
      err(ld, n, "roofline needs bytes, flops or both");
    if (b)
      c->roof_bytes = compile(ld, b, "roofline.bytes");
    if (f)
      c->roof_flops = compile(ld, f, "roofline.flops");
  }
  c->objective = KL_OBJECTIVE_GEOMEAN_SPEEDUP;
  if ((n = map_get(root, "objective")) && scalar(ld, n, "objective")) {
    if (strcmp(n->value, "total_time") == 0)
      c->objective = KL_OBJECTIVE_TOTAL_TIME;
    else if (strcmp(n->value, "geomean_speedup") != 0)
      err(ld, n, "unknown objective '%s' (expected geomean_speedup or "
                 "total_time)", n->value);
  }
  c->budget.iterations = 10;
  c->budget.patience = 4;
  c->budget.min_gain_pct = 2.0;
  if ((n = map_get(root, "budget")) && want(ld, n, YNODE_MAP, "budget")) {
    static const char *const keys[] = {"iterations", "patience",
                                       "min_gain_pct"};
    check_keys(ld, n, keys, KL_ARRAY_SIZE(keys), "budget");
    const ynode *v;
    if ((v = map_get(n, "iterations")))
      whole_number(ld, v, "budget.iterations", 1, &c->budget.iterations);
    if ((v = map_get(n, "patience")))
      whole_number(ld, v, "budget.patience", 1, &c->budget.patience);
    if ((v = map_get(n, "min_gain_pct")))
      real_number(ld, v, "budget.min_gain_pct", 0, &c->budget.min_gain_pct);
  }
  if ((n = map_get(root, "program"))) {
    c->program_path = case_file(ld, n, "program");
  } else {
    char *p = kl__path_join(c->dir, "program.md");
    if (p && kl__is_file(p))
      c->program_path = p;
    else
      kl__free(p);
  }
}

/* rules: a file or a list of files in the case folder */
static void read_rule_files(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *n = map_get(root, "rules");
  if (!n)
    return;
  const ynode *const *items = n->kind == YNODE_SEQ ? (const ynode *const *)n->items
                                                   : &n;
  size_t count = n->kind == YNODE_SEQ ? n->count : 1;
  if (!(c->rule_files = kl__calloc(count ? count : 1, sizeof(char *)))) {
    ld->diags.oom = true;
    return;
  }
  for (size_t i = 0; i < count; i++) {
    char *path = case_file(ld, items[i], "rules");
    if (path)
      c->rule_files[c->nrule_files++] = path;
  }
}

static void read_tunables(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *t = map_get(root, "tunables");
  if (!t || !want(ld, t, YNODE_MAP, "tunables"))
    return;
  c->tunables = kl__calloc(t->count ? t->count : 1, sizeof(*c->tunables));
  if (!c->tunables) {
    ld->diags.oom = true;
    return;
  }
  for (size_t i = 0; i < t->count; i++) {
    const ynode *k = t->pairs[i].key, *v = t->pairs[i].value;
    if (!kl__is_ident(k->value)) {
      err(ld, k, "tunable '%s' is not a C identifier (it becomes a -D "
                 "define)", k->value);
      continue;
    }
    if (!want(ld, v, YNODE_SEQ, "a tunable's values"))
      continue;
    if (v->count == 0) {
      err(ld, v, "tunable '%s' has no values", k->value);
      continue;
    }
    case_tunable *tu = &c->tunables[c->ntunables];
    tu->name = dup_or_oom(ld, k->value);
    tu->values = kl__calloc(v->count, sizeof(*tu->values));
    if (!tu->name || !tu->values) {
      kl__free(tu->name);
      kl__free(tu->values);
      tu->name = NULL;
      tu->values = NULL;
      ld->diags.oom = true;
      continue;
    }
    c->ntunables++;
    for (size_t j = 0; j < v->count; j++) {
      const char *s = scalar(ld, v->items[j], "a tunable value");
      if (!s)
        continue;
      bool dup = false;
      for (size_t q = 0; q < tu->nvalues && !dup; q++)
        dup = strcmp(tu->values[q], s) == 0;
      if (dup)
        err(ld, v->items[j], "tunable '%s' lists '%s' twice", k->value, s);
      else if ((tu->values[tu->nvalues] = dup_or_oom(ld, s)))
        tu->nvalues++;
    }
  }
}

/* A configuration's values for the declared tunables. A value outside the
 * declared list is allowed (a search may refine it), and so is a name the
 * case does not declare (a candidate's own define); an assignment that is
 * not NAME=VALUE with NAME a C identifier is the caller's error. */
static int configure_tunables(kl_case *c, const char *const *assign) {
  for (size_t a = 0; assign && assign[a]; a++) {
    const char *eq = strchr(assign[a], '=');
    char name[128] = "";
    if (eq && eq > assign[a] && (size_t)(eq - assign[a]) < sizeof(name))
      memcpy(name, assign[a], (size_t)(eq - assign[a]));
    if (!eq || !kl__is_ident(name) || !eq[1])
      return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                       "tunable setting '%s' is not NAME=VALUE", assign[a]);
    for (size_t i = 0; i < c->ntunables; i++) {
      case_tunable *t = &c->tunables[i];
      if (strlen(t->name) != (size_t)(eq - assign[a]) ||
          strncmp(t->name, assign[a], (size_t)(eq - assign[a])) != 0)
        continue;
      kl__free(t->chosen);
      if (!(t->chosen = kl__strdup(eq + 1)))
        return kl__error_oom();
    }
  }
  return 0;
}

/* ---- evaluation per shape ------------------------------------------------ */

/* An expression that failed for one shape is reported once. */
typedef struct evaluation {
  const void **reported; /* expressions or params already reported */
  size_t nreported, cap;
} evaluation;

static bool already_reported(loader *ld, evaluation *ev, const void *e) {
  for (size_t i = 0; i < ev->nreported; i++)
    if (ev->reported[i] == e)
      return true;
  if (ev->nreported == ev->cap) {
    size_t cap = ev->cap ? ev->cap * 2 : 16;
    const void **r = kl__realloc(ev->reported, cap * sizeof(*r));
    if (!r) {
      ld->diags.oom = true;
      return true;
    }
    ev->reported = r;
    ev->cap = cap;
  }
  ev->reported[ev->nreported++] = e;
  return false;
}

/* Evaluate e for shape s; on failure report once (with the shape named). */
static bool eval_for(loader *ld, evaluation *ev, const kl_expr *e,
                     const case_shape *s, kl_value *out) {
  if (kl_expr_eval(out, e, s->vars) == 0)
    return true;
  if (!already_reported(ld, ev, e)) {
    char suffix[160];
    snprintf(suffix, sizeof(suffix), " (shape '%s')",
             s->name ? s->name : "?");
    take_last_error(ld, suffix);
  }
  return false;
}

/* Report a value problem at the expression's own position, once. */
static void value_error(loader *ld, evaluation *ev, const kl_expr *e,
                        const char *fmt, ...) KL_PRINTF(4, 5);

static void value_error(loader *ld, evaluation *ev, const kl_expr *e,
                        const char *fmt, ...) {
  if (already_reported(ld, ev, e))
    return;
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  kl_expr__error_at(e, 1, 1, "%s", text);
  take_last_error(ld, NULL);
}

static bool as_count(const kl_value *v, int64_t *out) {
  if (v->is_int) {
    *out = v->i;
    return true;
  }
  if (v->f != floor(v->f) || fabs(v->f) > 9e18)
    return false;
  *out = (int64_t)v->f;
  return true;
}

static void eval_scalars(loader *ld, evaluation *ev, case_shape *s) {
  kl_case *c = ld->c;
  for (size_t p = 0; p < c->nparams; p++) {
    case_param *pa = &c->params[p];
    if (pa->is_pointer || !pa->name)
      continue;
    kl_value v;
    if (kl_vars_get(&v, s->vars, pa->name) == 0) {
      /* the shape gives it */
    } else if (pa->value) {
      if (!eval_for(ld, ev, pa->value, s, &v))
        continue;
    } else {
      err_at(ld, s->line, s->column,
             "shape '%s' gives no value for scalar param '%s' (add '%s: …' "
             "to the shape or 'value:' to the param)",
             s->name ? s->name : "?", pa->name, pa->name);
      continue;
    }
    if (!kl_dtype_is_float(pa->dtype)) {
      int64_t i;
      if (!as_count(&v, &i)) {
        if (!already_reported(ld, ev, pa))
          err_at(ld, pa->line, pa->column,
               "scalar '%s' is %s but its value %g for shape '%s' is not a "
               "whole number", pa->name, kl_dtype_name(pa->dtype), v.f,
               s->name ? s->name : "?");
        continue;
      }
      int bits = (int)kl_dtype_size(pa->dtype) * 8;
      bool is_unsigned = pa->dtype >= KL_DTYPE_U64;
      bool fits = is_unsigned ? (i >= 0 && (bits == 64 || i < (1LL << bits)))
                              : (bits == 64 || (i >= -(1LL << (bits - 1)) &&
                                                i < (1LL << (bits - 1))));
      if (!fits) {
        if (!already_reported(ld, ev, pa))
          err_at(ld, pa->line, pa->column,
               "scalar '%s' (%s) cannot hold %lld (shape '%s')", pa->name,
               kl_dtype_name(pa->dtype), (long long)i,
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
    if (kl_vars_set(s->vars, pa->name, &v) < 0)
      ld->diags.oom = true;
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
      value_error(ld, ev, pa->count, "count of '%s' is %lld for shape '%s'; "
                  "it must be at least 1", pa->name ? pa->name : "?",
                  (long long)n, s->name ? s->name : "?");
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
      if (!exprs[d] || !eval_for(ld, ev, exprs[d], s, &v))
        continue;
      if (!as_count(&v, &n) || n < 1 || n > max[d])
        value_error(ld, ev, exprs[d], "%s.%c is %g for shape '%s'; it must "
                    "be a whole number from 1 to %lld", g ? "block" : "grid",
                    "xyz"[d], v.f, s->name ? s->name : "?",
                    (long long)max[d]);
      else
        dst[d] = n;
    }
  }
  int64_t threads = s->launch.block[0] * s->launch.block[1] *
                    s->launch.block[2];
  if (threads > 1024 && c->block[0])
    value_error(ld, ev, c->block[0], "a block of %lld threads for shape "
                "'%s' exceeds the 1024 a CUDA block can hold",
                (long long)threads, s->name ? s->name : "?");
  kl_value v;
  int64_t n;
  if (c->shared_bytes && eval_for(ld, ev, c->shared_bytes, s, &v)) {
    if (!as_count(&v, &n) || n < 0)
      value_error(ld, ev, c->shared_bytes, "shared_bytes is %g for shape "
                  "'%s'; it must be a whole number >= 0", v.f,
                  s->name ? s->name : "?");
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
    if (!exprs[i] || !eval_for(ld, ev, exprs[i], s, &v))
      continue;
    if (v.f < 0)
      value_error(ld, ev, exprs[i], "roofline.%s is negative (%g) for shape "
                  "'%s'", i ? "flops" : "bytes", v.f,
                  s->name ? s->name : "?");
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
    if (!value || kl_vars_get(&v, s->vars, t->name) == 0)
      continue;
    int rc = kl_expr_eval_string(&v, value);
    if (rc == KL_ENOMEM) {
      ld->diags.oom = true;
      return;
    }
    if (rc < 0) {
      kl_error_clear(); /* not a number: only a -D define */
      continue;
    }
    if (kl_vars_set(s->vars, t->name, &v) < 0)
      ld->diags.oom = true;
  }
}

static void evaluate(loader *ld) {
  kl_case *c = ld->c;
  evaluation ev = {0};
  for (size_t i = 0; i < c->nshapes && !ld->diags.oom; i++) {
    case_shape *s = &c->shapes[i];
    if (!s->vars)
      continue;
    s->elements = kl__calloc(c->nparams ? c->nparams : 1, sizeof(int64_t));
    s->scalars = kl__calloc(c->nparams ? c->nparams : 1, sizeof(kl_value));
    if (!s->elements || !s->scalars) {
      ld->diags.oom = true;
      break;
    }
    expose_tunables(ld, s);
    eval_scalars(ld, &ev, s);
    eval_counts(ld, &ev, s);
    if (c->has_launch)
      eval_launch(ld, &ev, s);
    eval_roofline(ld, &ev, s);
  }
  kl__free(ev.reported);
}

/* ---- entry point --------------------------------------------------------- */

static int resolve_paths(kl_case *c, const char *path) {
  if (kl__is_dir(path)) {
    c->dir = kl__strdup(path);
    c->path = kl__path_join(path, "case.yaml");
  } else {
    c->dir = kl__path_dir(path);
    c->path = kl__strdup(path);
  }
  if (!c->dir || !c->path)
    return kl__error_oom();
  /* Trim a trailing slash so messages read "cases/x/case.yaml". */
  size_t n = strlen(c->dir);
  while (n > 1 && c->dir[n - 1] == '/')
    c->dir[--n] = '\0';
  if (n > 1 && kl__is_dir(path)) {
    kl__free(c->path);
    if (!(c->path = kl__path_join(c->dir, "case.yaml")))
      return kl__error_oom();
  }
  if (!kl__is_file(c->path)) {
    if (kl__is_dir(path))
      return kl__error(KL_ENOTFOUND, KL_DOMAIN_CASE,
                       "%s: no case.yaml in this folder", path);
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_CASE,
                     "%s: no such case folder or file", path);
  }
  return 0;
}

int kl_case_load(kl_case **out, const char *path,
                 const kl_case_options *opts) {
  *out = NULL;
  if (!path || !*path)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE, "no case path given");
  kl_case *c = kl__calloc(1, sizeof(*c));
  if (!c)
    return kl__error_oom();
  int rc = resolve_paths(c, path);
  if (rc < 0) {
    kl_case_free(c);
    return rc;
  }
  kl_buf text = KL_BUF_INIT;
  if ((rc = kl__read_file(&text, c->path)) < 0) {
    kl_case_free(c);
    return rc;
  }
  loader ld = {0};
  ld.c = c;
  ld.path = c->path;
  ld.text = text.ptr ? text.ptr : "";
  ynode *root = kl_yaml__parse(text.ptr ? text.ptr : "", text.size, c->path,
                               &ld.diags);
  if (!root && !has_errors(&ld))
    err_at(&ld, 1, 1, "the case file is empty");
  else if (root && want(&ld, root, YNODE_MAP, "a case file")) {
    check_keys(&ld, root, top_keys, KL_ARRAY_SIZE(top_keys), "the case");
    static const char *const required[] = {"kernlab", "name",   "backend",
                                           "kernel",  "params", "shapes"};
    for (size_t i = 0; i < KL_ARRAY_SIZE(required); i++)
      if (!map_get(root, required[i]))
        err_at(&ld, 1, 1, "missing required key '%s'", required[i]);
    read_header(&ld, root);
    read_target(&ld, root);
    read_kernel(&ld, root);
    read_params(&ld, root);
    read_shapes(&ld, root);
    read_reference(&ld, root);
    read_rest(&ld, root);
    read_rule_files(&ld, root);
    read_tunables(&ld, root);
    if (!has_errors(&ld) && opts && opts->version >= 2 &&
        (rc = configure_tunables(c, opts->tunables)) < 0) {
      kl_yaml__free(root);
      kl_buf_dispose(&text);
      kl__diag_clear(&ld.diags);
      kl_case_free(c);
      return rc;
    }
    /* Evaluating over a signature that could not be read would only
     * repeat its errors as unknown names. */
    if (!ld.diags.oom && !ld.params_broken)
      evaluate(&ld);
  }
  /* the sections other modules own: kept as written, checked by them */
  c->yaml = root;
  c->yaml_text = kl__buf_detach(&text);
  if (root && root->kind == YNODE_MAP)
    kl__case_check_sections(c, &ld.diags);
  if (has_errors(&ld)) {
    rc = kl__diag_report(&ld.diags, opts ? opts->on_diag : NULL,
                         opts ? opts->payload : NULL);
    kl__diag_clear(&ld.diags);
    kl_case_free(c);
    return rc;
  }
  kl__diag_clear(&ld.diags);
  *out = c;
  return 0;
}
