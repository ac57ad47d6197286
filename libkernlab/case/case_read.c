/* The case loader's toolkit: located diagnostics (the line of the file
 * and a caret), and small readers over the YAML tree every section reader
 * uses (keys, scalars, numbers, expressions, the case's own files). */
#define _GNU_SOURCE /* realpath */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

void kl__ld_err_atv(loader *ld, int line, int column, const char *fmt,
                    va_list ap) {
  char *snippet = kl__snippet(ld->text, line, column);
  kl__diag_addv(&ld->diags, KL_EINVALID, KL_DOMAIN_CASE, ld->path, line, column,
                snippet, fmt, ap);
  kl__free(snippet);
}

void kl__ld_err_at(loader *ld, int line, int column, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl__ld_err_atv(ld, line, column, fmt, ap);
  va_end(ap);
}

void kl__ld_err(loader *ld, const ynode *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl__ld_err_atv(ld, n->line, n->column, fmt, ap);
  va_end(ap);
}

/* Move the thread's last error (from the expression language) into the
 * list, optionally with a suffix. */
void kl__ld_take_last_error(loader *ld, const char *suffix) {
  const kl_error *e = kl_error_last();
  if (!e) return;
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

bool kl__ld_has_errors(const loader *ld) {
  return ld->diags.count > 0 || ld->diags.oom;
}

/* ---- tree helpers -------------------------------------------------------- */

const ynode *kl__ld_map_get(const ynode *map, const char *key) {
  if (!map || map->kind != YNODE_MAP) return NULL;
  for (size_t i = 0; i < map->count; i++)
    if (strcmp(map->pairs[i].key->value, key) == 0) return map->pairs[i].value;
  return NULL;
}

bool kl__ld_want(loader *ld, const ynode *n, ynode_kind kind,
                 const char *what) {
  if (n->kind == kind) return true;
  const char *wanted = kind == YNODE_MAP   ? "a mapping"
                       : kind == YNODE_SEQ ? "a list"
                                           : "a single value";
  kl__ld_err(ld, n, "%s must be %s, not %s", what, wanted,
             kl__yaml_kind_name(n));
  return false;
}

/* A plain value cut at a comma inside [...] or {...} looks like this. */
bool kl__ld_looks_cut_by_comma(const ynode *n) {
  if (n->kind != YNODE_SCALAR || !n->in_flow || n->quoted) return false;
  int depth = 0;
  for (const char *p = n->value; *p; p++)
    depth += (*p == '(') - (*p == ')');
  return depth != 0;
}

const char kl__ld_comma_hint[] =
    " (inside [...] or {...} a comma ends a plain value: quote the "
    "expression)";

void kl__ld_check_keys(loader *ld, const ynode *map, const char *const *keys,
                       size_t nkeys, const char *where) {
  for (size_t i = 0; i < map->count; i++) {
    const ynode *k = map->pairs[i].key;
    bool known = false;
    for (size_t j = 0; j < nkeys && !known; j++)
      known = strcmp(k->value, keys[j]) == 0;
    if (known) continue;
    const char *hint = kl__suggest(k->value, keys, nkeys);
    if (kl__ld_looks_cut_by_comma(k))
      kl__ld_err(ld, k, "unknown key '%s' in %s%s", k->value, where,
                 kl__ld_comma_hint);
    else if (hint)
      kl__ld_err(ld, k, "unknown key '%s' in %s; did you mean '%s'?", k->value,
                 where, hint);
    else
      kl__ld_err(ld, k, "unknown key '%s' in %s", k->value, where);
  }
}

void kl__ld_require(loader *ld, const ynode *map, const char *key,
                    const char *where) {
  if (!kl__ld_map_get(map, key))
    kl__ld_err(ld, map, "%s is missing required key '%s'", where, key);
}

/* A scalar's text, or NULL (with a diagnostic) when it is not a scalar or
 * is empty. */
const char *kl__ld_scalar(loader *ld, const ynode *n, const char *what) {
  if (!kl__ld_want(ld, n, YNODE_SCALAR, what)) return NULL;
  if (!n->value[0]) {
    kl__ld_err(ld, n, "%s is empty", what);
    return NULL;
  }
  return n->value;
}

char *kl__ld_dup_or_oom(loader *ld, const char *s) {
  char *p = kl__strdup(s);
  if (!p) ld->diags.oom = true;
  return p;
}

kl_expr *kl__ld_compile_ex(loader *ld, const ynode *n, const char *what,
                           bool any_function) {
  const char *text = kl__ld_scalar(ld, n, what);
  if (!text) return NULL;
  kl_expr_options opts = KL_EXPR_OPTIONS_INIT;
  opts.path = ld->path;
  opts.line = n->exact ? n->vline : n->line;
  opts.column = n->exact ? n->vcolumn : n->column;
  kl_expr *e;
  if (kl__expr_compile(&e, text, &opts, any_function) < 0) {
    kl__ld_take_last_error(ld, kl__ld_looks_cut_by_comma(n) ? kl__ld_comma_hint
                                                            : NULL);
    return NULL;
  }
  return e;
}

kl_expr *kl__ld_compile(loader *ld, const ynode *n, const char *what) {
  return kl__ld_compile_ex(ld, n, what, false);
}

/* A number written as a constant expression ("1e-6", "16*1024"). */
bool kl__ld_constant(loader *ld, const ynode *n, const char *what,
                     kl_value *out) {
  kl_expr *e = kl__ld_compile(ld, n, what);
  if (!e) return false;
  bool ok = true;
  if (kl_expr_name_count(e) > 0) {
    kl__ld_err(ld, n, "%s must be a number, not an expression over '%s'", what,
               kl_expr_name(e, 0));
    ok = false;
  } else if (kl_expr_eval(out, e, NULL) < 0) {
    kl__ld_take_last_error(ld, NULL);
    ok = false;
  }
  kl_expr_free(e);
  return ok;
}

bool kl__ld_whole_number(loader *ld, const ynode *n, const char *what,
                         int64_t min, int64_t *out) {
  kl_value v;
  if (!kl__ld_constant(ld, n, what, &v)) return false;
  if (!v.is_int && (v.f != floor(v.f) || fabs(v.f) > 9e15)) {
    kl__ld_err(ld, n, "%s must be a whole number, not %g", what, v.f);
    return false;
  }
  int64_t i = v.is_int ? v.i : (int64_t)v.f;
  if (i < min) {
    kl__ld_err(ld, n, "%s must be at least %lld, not %lld", what,
               (long long)min, (long long)i);
    return false;
  }
  *out = i;
  return true;
}

bool kl__ld_real_number(loader *ld, const ynode *n, const char *what,
                        double min, double *out) {
  kl_value v;
  if (!kl__ld_constant(ld, n, what, &v)) return false;
  if (v.f < min) {
    kl__ld_err(ld, n, "%s must be at least %g, not %g", what, min, v.f);
    return false;
  }
  *out = v.f;
  return true;
}

/* A path inside the case folder: relative, no "..", an existing file. */
char *kl__ld_case_file(loader *ld, const ynode *n, const char *what) {
  const char *rel = kl__ld_scalar(ld, n, what);
  if (!rel) return NULL;
  if (rel[0] == '/') {
    kl__ld_err(ld, n,
               "%s must be a path inside the case folder, not an absolute "
               "path",
               what);
    return NULL;
  }
  for (const char *p = rel; *p;) {
    size_t len = strcspn(p, "/");
    if (len == 2 && p[0] == '.' && p[1] == '.') {
      kl__ld_err(ld, n,
                 "%s must stay inside the case folder ('..' is not allowed)",
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
    kl__ld_err(ld, n, "%s '%s' is not a file in the case folder", what, rel);
    kl__free(full);
    return NULL;
  }
  /* a link may point anywhere: where it leads must be inside too */
  char *real = realpath(full, NULL), *real_dir = realpath(ld->c->dir, NULL);
  size_t nd = real_dir ? strlen(real_dir) : 0;
  if (real && real_dir &&
      !(strncmp(real, real_dir, nd) == 0 && real[nd] == '/')) {
    kl__ld_err(ld, n, "%s '%s' is a link that leads out of the case folder",
               what, rel);
    kl__free(full);
    full = NULL;
  }
  free(real);
  free(real_dir);
  return full;
}
