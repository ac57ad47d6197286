/* One reader per section of case.yaml: each walks its part of the tree,
 * records what it can, and adds a located diagnostic for everything wrong,
 * then carries on, so that a user sees every error of the file at once.
 * The params section has a file of its own (case_params.c), as do timing
 * (case_timing.c) and a command case's kernel (case_command.c). */
#define _GNU_SOURCE /* realpath */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

void kl__ld_read_header(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *n;
  if ((n = kl__ld_map_get(root, "kernlab"))) {
    int64_t v;
    if (kl__ld_whole_number(ld, n, "kernlab (the case format version)", 1,
                            &v) &&
        v != CASE_FORMAT_VERSION)
      kl__ld_err(ld, n,
                 "unsupported case format version %lld (this kernlab reads "
                 "%d)",
                 (long long)v, CASE_FORMAT_VERSION);
  }
  if ((n = kl__ld_map_get(root, "name"))) {
    const char *name = kl__ld_scalar(ld, n, "name");
    bool ok = name != NULL;
    for (const char *p = name; ok && *p; p++)
      ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
           (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.';
    if (name && !ok)
      kl__ld_err(ld, n,
                 "name '%s' may hold only letters, digits, '_', '-' and '.'",
                 name);
    else if (name)
      c->name = kl__ld_dup_or_oom(ld, name);
  }
  if ((n = kl__ld_map_get(root, "description")) &&
      kl__ld_scalar(ld, n, "description"))
    c->description = kl__ld_dup_or_oom(ld, n->value);
  if ((n = kl__ld_map_get(root, "backend"))) {
    const char *b = kl__ld_scalar(ld, n, "backend");
    if (!b)
      ;
    else if (strcmp(b, "host") == 0)
      c->backend = KL_BACKEND_HOST, ld->backend_ok = true;
    else if (strcmp(b, "cuda") == 0)
      c->backend = KL_BACKEND_CUDA, ld->backend_ok = true;
    else if (strcmp(b, "python") == 0)
      c->backend = KL_BACKEND_PYTHON, ld->backend_ok = true;
    else if (strcmp(b, "command") == 0)
      c->backend = KL_BACKEND_COMMAND, ld->backend_ok = true;
    else if (strcmp(b, "serving") == 0) /* a command case, written for it */
      c->backend = KL_BACKEND_COMMAND, c->serving = true, ld->backend_ok = true;
    else
      kl__ld_err(ld, n,
                 "unknown backend '%s' (expected host, cuda, python, "
                 "command or serving)",
                 b);
  }
}

/* A path from the case file: absolute, or joined to the case's folder. */
static char *case_relative(loader *ld, const char *p) {
  char *joined = p[0] == '/' ? NULL : kl__path_join(ld->c->dir, p);
  /* from the root: the compiler runs in a folder of its own, where a path
   * relative to kl's working folder (a case given as "gemm") leads nowhere */
  char *out = kl__path_absolute(joined ? joined : p);
  kl__free(joined);
  if (!out) ld->diags.oom = true;
  return out;
}

/* target.libs: [cublas, cublasLt, lib/libhelper.a]: a name is linked as
 * -lNAME (found where the compiler looks: nvcc's own library folder holds
 * cuBLAS), a path (it has a '/' or ends in .so, .so.N or .a) as the file
 * itself, relative to the case's folder or absolute. */
static void read_libs(loader *ld, const ynode *n) {
  kl_case *c = ld->c;
  if (!n || !kl__ld_want(ld, n, YNODE_SEQ, "target.libs")) return;
  if (n->count > KL__CASE_MAX_LINK) {
    kl__ld_err(ld, n, "target.libs: at most %d libraries", KL__CASE_MAX_LINK);
    return;
  }
  if (!(c->libs = kl__calloc(n->count + 1, sizeof(char *)))) {
    ld->diags.oom = true;
    return;
  }
  for (size_t i = 0; i < n->count; i++) {
    const char *v = kl__ld_scalar(ld, n->items[i], "a library");
    if (!v) continue;
    size_t len = strlen(v);
    bool file = strchr(v, '/') || strstr(v, ".so.") ||
                (len > 3 && strcmp(v + len - 3, ".so") == 0) ||
                (len > 2 && strcmp(v + len - 2, ".a") == 0);
    bool name_ok = len > 0 && !file;
    for (const char *q = v; name_ok && *q; q++)
      name_ok = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                (*q >= '0' && *q <= '9') || *q == '_' || *q == '-' ||
                *q == '+' || *q == '.';
    char *lib = NULL;
    if (file) {
      if (!(lib = case_relative(ld, v))) return;
      if (!kl__is_file(lib)) {
        kl__ld_err(ld, n->items[i], "target.libs: '%s' is not a library file",
                   v);
        kl__free(lib);
        continue;
      }
    } else if (!name_ok) {
      kl__ld_err(ld, n->items[i],
                 "target.libs: '%s' is neither a library name (cublas, "
                 "for -lcublas) nor a library file",
                 v);
      continue;
    } else {
      kl_buf w = KL_BUF_INIT;
      kl__buf_printf(&w, "-l%s", v);
      if (!(lib = kl__buf_detach(&w))) {
        ld->diags.oom = true;
        return;
      }
    }
    c->libs[c->nlibs++] = lib;
  }
}

/* target.include: [include, /opt/cutlass/include]: header folders,
 * relative to the case's folder or absolute; each must exist. */
static void read_includes(loader *ld, const ynode *n) {
  kl_case *c = ld->c;
  if (!n || !kl__ld_want(ld, n, YNODE_SEQ, "target.include")) return;
  if (n->count > KL__CASE_MAX_LINK) {
    kl__ld_err(ld, n, "target.include: at most %d folders", KL__CASE_MAX_LINK);
    return;
  }
  if (!(c->includes = kl__calloc(n->count + 1, sizeof(char *)))) {
    ld->diags.oom = true;
    return;
  }
  for (size_t i = 0; i < n->count; i++) {
    const char *v = kl__ld_scalar(ld, n->items[i], "a header folder");
    if (!v) continue;
    char *dir = case_relative(ld, v);
    if (!dir) return;
    if (!kl__is_dir(dir)) {
      kl__ld_err(ld, n->items[i], "target.include: '%s' is not a folder", v);
      kl__free(dir);
      continue;
    }
    c->includes[c->nincludes++] = dir;
  }
}

void kl__ld_read_target(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *t = kl__ld_map_get(root, "target");
  if (!t) {
    if (c->backend == KL_BACKEND_CUDA && ld->backend_ok)
      kl__ld_err(ld, root, "cuda cases need 'target: { arch: sm_XX }'");
    return;
  }
  if (!kl__ld_want(ld, t, YNODE_MAP, "target")) return;
  if (c->backend == KL_BACKEND_PYTHON && ld->backend_ok) {
    kl__ld_err(ld, t,
               "target applies to host and cuda cases; a python case runs "
               "in the interpreter kl-pyworker starts");
    return;
  }
  static const char *const keys[] = {"arch", "compiler", "flags", "libs",
                                     "include"};
  kl__ld_check_keys(ld, t, keys, KL_ARRAY_SIZE(keys), "target");
  const ynode *n;
  if ((n = kl__ld_map_get(t, "arch"))) {
    const char *arch = kl__ld_scalar(ld, n, "target.arch");
    if (arch && c->backend == KL_BACKEND_HOST && ld->backend_ok) {
      kl__ld_err(ld, n,
                 "target.arch applies to cuda cases; host cases take "
                 "target.flags");
    } else if (arch) {
      bool ok =
          strncmp(arch, "sm_", 3) == 0 && arch[3] >= '1' && arch[3] <= '9';
      for (const char *p = arch + 3; ok && *p; p++)
        ok = (*p >= '0' && *p <= '9') ||
             (p[1] == '\0' && (*p == 'a' || *p == 'f'));
      if (!ok)
        kl__ld_err(ld, n, "target.arch '%s' is not an architecture like sm_90",
                   arch);
      else
        c->arch = kl__ld_dup_or_oom(ld, arch);
    }
  } else if (c->backend == KL_BACKEND_CUDA && ld->backend_ok) {
    kl__ld_err(ld, t, "target is missing required key 'arch' (e.g. sm_90)");
  }
  if ((n = kl__ld_map_get(t, "compiler")) &&
      kl__ld_scalar(ld, n, "target.compiler"))
    c->compiler = kl__ld_dup_or_oom(ld, n->value);
  if ((n = kl__ld_map_get(t, "flags"))) {
    kl_buf flags = KL_BUF_INIT;
    if (n->kind == YNODE_SCALAR) {
      kl__buf_puts(&flags, n->value);
    } else if (kl__ld_want(ld, n, YNODE_SEQ, "target.flags")) {
      for (size_t i = 0; i < n->count; i++) {
        const char *f = kl__ld_scalar(ld, n->items[i], "a compiler flag");
        if (f && (flags.size == 0 || kl__buf_putc(&flags, ' ') == 0))
          kl__buf_puts(&flags, f);
      }
    }
    if (flags.size) c->flags = kl__buf_detach(&flags);
    kl_buf_dispose(&flags);
  }
  read_libs(ld, kl__ld_map_get(t, "libs"));
  read_includes(ld, kl__ld_map_get(t, "include"));
}

static void read_launch(loader *ld, const ynode *launch) {
  kl_case *c = ld->c;
  if (!kl__ld_want(ld, launch, YNODE_MAP, "kernel.launch")) return;
  static const char *const keys[] = {"grid", "block", "shared_bytes"};
  kl__ld_check_keys(ld, launch, keys, KL_ARRAY_SIZE(keys), "kernel.launch");
  kl__ld_require(ld, launch, "grid", "kernel.launch");
  kl__ld_require(ld, launch, "block", "kernel.launch");
  const char *names[2] = {"grid", "block"};
  kl_expr **dst[2] = {c->grid, c->block};
  for (int g = 0; g < 2; g++) {
    const ynode *n = kl__ld_map_get(launch, names[g]);
    if (!n) continue;
    char what[64];
    snprintf(what, sizeof(what), "kernel.launch.%s", names[g]);
    if (n->kind == YNODE_SCALAR) {
      dst[g][0] = kl__ld_compile(ld, n, what);
    } else if (kl__ld_want(ld, n, YNODE_SEQ, what)) {
      if (n->count < 1 || n->count > 3) {
        kl__ld_err(ld, n, "%s must have 1 to 3 dimensions, not %zu%s", what,
                   n->count, n->count > 3 ? kl__ld_comma_hint : "");
        continue;
      }
      for (size_t d = 0; d < n->count; d++)
        dst[g][d] = kl__ld_compile(ld, n->items[d], what);
    }
  }
  const ynode *n = kl__ld_map_get(launch, "shared_bytes");
  if (n) c->shared_bytes = kl__ld_compile(ld, n, "kernel.launch.shared_bytes");
  c->has_launch = true;
}

/* A kernel's name as a case spells it (kernel.entry, a shape's entry):
 * a copy, or NULL with the error noted. */
static char *read_entry(loader *ld, const ynode *n, const char *what) {
  const char *entry = kl__ld_scalar(ld, n, what);
  if (entry && !kl__c_entry_valid(entry)) {
    kl__ld_err(ld, n,
               "%s '%s' is not a function name (a C name, maybe "
               "qualified, maybe with template arguments)",
               what, entry);
    return NULL;
  }
  return entry ? kl__ld_dup_or_oom(ld, entry) : NULL;
}

/* kernel: { module: ops.py, device: cuda | host } */
static void read_python_kernel(loader *ld, const ynode *k) {
  kl_case *c = ld->c;
  static const char *const keys[] = {"module", "device"};
  kl__ld_check_keys(ld, k, keys, KL_ARRAY_SIZE(keys), "kernel");
  kl__ld_require(ld, k, "module", "kernel");
  const ynode *n;
  if ((n = kl__ld_map_get(k, "module")))
    c->kernel_path = kl__ld_case_file(ld, n, "kernel.module");
  c->entry = kl__ld_dup_or_oom(ld, "forward");
  if ((n = kl__ld_map_get(k, "device")) &&
      kl__ld_scalar(ld, n, "kernel.device")) {
    if (strcmp(n->value, "host") == 0)
      c->python_host = true;
    else if (strcmp(n->value, "cuda") != 0)
      kl__ld_err(ld, n, "kernel.device '%s' is not cuda or host", n->value);
  }
}

/* The identifier that starts at `at`, after skipping blanks: its bounds
 * in *b, *e; false for none (kl__c_ident_before is its twin). */
static bool ident_after(const char *at, const char **b, const char **e) {
  while (*at == ' ' || *at == '\t')
    at++;
  const char *p = at;
  while (kl__c_ident_char(*p))
    p++;
  *b = at, *e = p;
  return p > at;
}

/* Whether the word [b, e) is a parameter of the function-like #define
 * whose line holds `at` (line starts at `line`). */
static bool macro_param(const char *line, const char *b, const char *e) {
  const char *p = line;
  while (*p == ' ' || *p == '\t')
    p++;
  if (*p++ != '#') return false;
  while (*p == ' ' || *p == '\t')
    p++;
  if (strncmp(p, "define", 6) != 0) return false;
  p += 6;
  while (*p == ' ' || *p == '\t')
    p++;
  while (kl__c_ident_char(*p))
    p++;
  if (*p != '(') return false; /* object-like: no parameters */
  for (p++; *p && *p != ')' && *p != '\n';) {
    while (*p == ' ' || *p == '\t' || *p == ',')
      p++;
    const char *w = p;
    while (kl__c_ident_char(*p))
      p++;
    if (p == w) {
      if (*p == '.') return true; /* __VA_ARGS__: anything */
      break;
    }
    if ((size_t)(p - w) == (size_t)(e - b) &&
        strncmp(w, b, (size_t)(e - b)) == 0)
      return true;
  }
  return false;
}

/* Whether a `##` in `clean` (comments and strings blanked) could make the
 * identifier `name`: a paste of two parameters could make anything; a
 * literal word and a parameter only a name that starts (ends) with the
 * word; two literal words only their join. A paste whose sides are not
 * both words (a `##` at a line's end, in a chain) counts as possible. */
static bool paste_may_make(const char *clean, const char *name) {
  size_t len = strlen(name);
  for (const char *h = strstr(clean, "##"); h; h = strstr(h + 2, "##")) {
    const char *line = h;
    while (line > clean && line[-1] != '\n')
      line--;
    size_t ln;
    const char *lb = kl__c_ident_before(line, h, &ln), *le = lb + ln, *rb, *re;
    if (ln == 0 || !ident_after(h + 2, &rb, &re)) return true;
    bool lp = macro_param(line, lb, le), rp = macro_param(line, rb, re);
    size_t rn = (size_t)(re - rb);
    if (lp && rp) return true;
    if (lp && rn <= len && strncmp(name + len - rn, rb, rn) == 0) return true;
    if (rp && ln <= len && strncmp(name, lb, ln) == 0) return true;
    if (!lp && !rp && ln + rn == len && strncmp(name, lb, ln) == 0 &&
        strncmp(name + ln, rb, rn) == 0)
      return true;
  }
  return false;
}

/* Whether the C or CUDA file `path`, or a local header it includes
 * ("x.h", followed from the including file's folder), names `name` as a
 * whole word outside comments and strings; *pasting: a `##` was seen that
 * could make it (a name the preprocessor makes cannot be looked for).
 * Unreadable files count as naming it: that error is said elsewhere. */
static bool names_it(const char *path, const char *name, int depth,
                     bool *pasting, kl__c_names *defined) {
  kl_buf text = KL_BUF_INIT;
  if (depth > 8 || kl__read_file(&text, path) < 0) {
    kl_buf_dispose(&text);
    return true;
  }
  char *clean = kl__c_blank(text.ptr ? text.ptr : "", text.size, false);
  char *kept = kl__c_blank(text.ptr ? text.ptr : "", text.size, true);
  bool found = !clean || !kept;
  size_t len = strlen(name);
  for (const char *p = clean ? strstr(clean, name) : NULL; p && !found;
       p = strstr(p + 1, name))
    found =
        (p == clean || !kl__c_ident_char(p[-1])) && !kl__c_ident_char(p[len]);
  if (clean && !found && paste_may_make(clean, name)) *pasting = true;
  if (clean && depth == 0) {
    kl__c_names macros = {0};
    kl__c_top_level_names(defined, &macros, clean);
    kl__c_names_dispose(&macros);
  }
  char *dir = kl__path_dir(path);
  for (const char *p = kept; p && dir && !found && *p;) { /* #include "x" */
    size_t n = strcspn(p, "\n"), ilen;
    const char *inc;
    if (kl__c_quoted_include(p, n, &inc, &ilen)) {
      char *rel = kl__strndup(inc, ilen);
      char *file = rel ? kl__path_join(dir, rel) : NULL;
      if (file && kl__is_file(file))
        found = names_it(file, name, depth + 1, pasting, defined);
      kl__free(file);
      kl__free(rel);
    }
    p += n + (p[n] == '\n');
  }
  kl__free(dir);
  kl__free(clean);
  kl__free(kept);
  kl_buf_dispose(&text);
  return found;
}

/* kernel.entry named nowhere in the source (a typo, `saxpyy`) is said
 * here, at its line, with what the source does define, rather than by the
 * loader of the compiled kernel much later. */
static void check_entry_named(loader *ld, const ynode *n) {
  kl_case *c = ld->c;
  if (!c->entry || !c->kernel_path || !kl__is_file(c->kernel_path)) return;
  char *name = kl__c_entry_name(c->entry);
  if (!name) {
    ld->diags.oom = true;
    return;
  }
  bool pasting = false;
  kl__c_names defined = {0};
  if (!names_it(c->kernel_path, name, 0, &pasting, &defined) && !pasting) {
    kl_buf list = KL_BUF_INIT;
    for (size_t i = 0; i < defined.n && i < 8; i++)
      kl__buf_printf(&list, "%s%s", i ? ", " : "", defined.v[i]);
    if (defined.n > 8) kl__buf_puts(&list, ", ...");
    const char *base = strrchr(c->kernel_path, '/');
    kl__ld_err(ld, n, "kernel.entry '%s': %s never names it (it defines: %s)",
               c->entry, base ? base + 1 : c->kernel_path,
               list.ptr ? list.ptr : "nothing");
    kl_buf_dispose(&list);
  }
  kl__c_names_dispose(&defined);
  kl__free(name);
}

void kl__ld_read_kernel(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *k = kl__ld_map_get(root, "kernel");
  if (!k || !kl__ld_want(ld, k, YNODE_MAP, "kernel")) return;
  if (ld->backend_ok && c->backend == KL_BACKEND_PYTHON) {
    read_python_kernel(ld, k);
    return;
  }
  static const char *const keys[] = {"source", "entry", "launch"};
  kl__ld_check_keys(ld, k, keys, KL_ARRAY_SIZE(keys), "kernel");
  kl__ld_require(ld, k, "source", "kernel");
  kl__ld_require(ld, k, "entry", "kernel");
  const ynode *n;
  if ((n = kl__ld_map_get(k, "source")))
    c->kernel_path = kl__ld_case_file(ld, n, "kernel.source");
  if ((n = kl__ld_map_get(k, "entry")))
    c->entry = read_entry(ld, n, "kernel.entry");
  if (n && c->entry && ld->backend_ok &&
      (c->backend == KL_BACKEND_HOST || c->backend == KL_BACKEND_CUDA))
    check_entry_named(ld, n);
  if (ld->backend_ok && c->backend == KL_BACKEND_HOST && c->entry &&
      !kl__is_ident(c->entry))
    kl__ld_err(ld, kl__ld_map_get(k, "entry"),
               "kernel.entry '%s': a host kernel is a C function, named "
               "without qualifier or template arguments",
               c->entry);
  n = kl__ld_map_get(k, "launch");
  if (!ld->backend_ok)
    return; /* whether a launch belongs here depends on the backend */
  if (c->backend == KL_BACKEND_CUDA && !n)
    kl__ld_err(ld, k, "cuda cases need kernel.launch (grid and block)");
  else if (c->backend == KL_BACKEND_HOST && n)
    kl__ld_err(ld, n,
               "kernel.launch applies to cuda cases only; a host kernel is "
               "called once per launch");
  else if (n)
    read_launch(ld, n);
}

static bool is_param_name(const kl_case *c, const char *name, bool pointer) {
  for (size_t i = 0; i < c->nparams; i++)
    if (c->params[i].name && strcmp(c->params[i].name, name) == 0 &&
        c->params[i].is_pointer == pointer)
      return true;
  return false;
}

/* One named value of a shape: `key: expression`. */
static void read_shape_value(loader *ld, case_shape *s, const ynode *k,
                             const ynode *v) {
  kl_case *c = ld->c;
  /* a struct's scalar field is given under its param's name, `p.eps` */
  if (strchr(k->value, '.') && kl__c_ident_char(k->value[0]) &&
      !is_param_name(c, k->value, false)) {
    kl__ld_err(ld, k,
               "shape value '%s' is no scalar field of a struct param (a "
               "field's value is given as PARAM.FIELD)",
               k->value);
    return;
  }
  if (!kl__is_ident(k->value) && !is_param_name(c, k->value, false)) {
    kl__ld_err(ld, k, "shape value '%s' is not a name usable in expressions%s",
               k->value, kl__ld_looks_cut_by_comma(k) ? kl__ld_comma_hint : "");
    return;
  }
  if (is_param_name(c, k->value, true)) {
    kl__ld_err(ld, k, "shape value '%s' has the name of a buffer param",
               k->value);
    return;
  }
  kl_value seen;
  if (kl_vars_get(&seen, s->vars, k->value) == 0) {
    kl__ld_err(ld, k, "shape value '%s' is given twice", k->value);
    return;
  }
  /* A value may use the shape's earlier values: n: 1024*1024, m: 2*n */
  kl_expr *e = kl__ld_compile(ld, v, "a shape value");
  if (!e) return;
  kl_value val;
  if (kl_expr_eval(&val, e, s->vars) < 0)
    kl__ld_take_last_error(ld, NULL);
  else if (kl_vars_set(s->vars, k->value, &val) < 0)
    ld->diags.oom = true;
  kl_expr_free(e);
}

/* A shape: its own keys `name` and `weight`, and its values. Values may
 * also sit under `values:` (a mapping), where every name is a value: that
 * is how a scalar param called `name`, `weight` or `values` gets one. */
static void read_shape(loader *ld, const ynode *n, case_shape *s) {
  s->line = n->line;
  s->column = n->column;
  s->weight = 1;
  if (kl_vars_create(&s->vars) < 0) {
    ld->diags.oom = true;
    return;
  }
  const ynode *name = kl__ld_map_get(n, "name");
  if (!name)
    kl__ld_err(ld, n, "a shape is missing required key 'name'");
  else if (kl__ld_scalar(ld, name, "shape name"))
    s->name = kl__ld_dup_or_oom(ld, name->value);
  for (size_t i = 0; i < n->count; i++) {
    const ynode *k = n->pairs[i].key, *v = n->pairs[i].value;
    if (strcmp(k->value, "name") == 0) continue;
    if (strcmp(k->value, "weight") == 0) {
      if (kl__ld_real_number(ld, v, "weight", 0, &s->weight) && s->weight <= 0)
        kl__ld_err(ld, v, "weight must be greater than 0");
      continue;
    }
    if (strcmp(k->value, "entry") == 0) { /* this shape's instantiation */
      s->entry = read_entry(ld, v, "entry");
      continue;
    }
    if (strcmp(k->value, "values") == 0 && v->kind == YNODE_MAP) {
      for (size_t j = 0; j < v->count; j++)
        read_shape_value(ld, s, v->pairs[j].key, v->pairs[j].value);
      continue;
    }
    read_shape_value(ld, s, k, v);
  }
}

/* A shape's entry instantiates the case's function, no other. */
static void check_shape_entry(loader *ld, const ynode *n, const case_shape *s) {
  if (!s->entry || !ld->c->entry) return;
  if (ld->backend_ok && ld->c->backend != KL_BACKEND_CUDA) {
    kl__ld_err(ld, kl__ld_map_get(n, "entry"),
               "a shape's entry (a template's instantiation) applies to "
               "cuda cases only");
    return;
  }
  char *fn = kl__c_entry_function(ld->c->entry);
  char *own = kl__c_entry_function(s->entry);
  if (!fn || !own)
    ld->diags.oom = true;
  else if (strcmp(own, fn) != 0)
    kl__ld_err(ld, kl__ld_map_get(n, "entry"),
               "entry '%s' is not an instantiation of kernel.entry '%s'",
               s->entry, fn);
  kl__free(fn);
  kl__free(own);
}

void kl__ld_read_shapes(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *ss = kl__ld_map_get(root, "shapes");
  if (!ss || !kl__ld_want(ld, ss, YNODE_SEQ, "shapes")) return;
  if (ss->count == 0) {
    kl__ld_err(ld, ss, "shapes is empty: give at least one shape to run at");
    return;
  }
  c->shapes = kl__calloc(ss->count, sizeof(*c->shapes));
  if (!c->shapes) {
    ld->diags.oom = true;
    return;
  }
  for (size_t i = 0; i < ss->count; i++) {
    const ynode *n = ss->items[i];
    if (!kl__ld_want(ld, n, YNODE_MAP, "a shape")) continue;
    case_shape *s = &c->shapes[c->nshapes++];
    read_shape(ld, n, s);
    check_shape_entry(ld, n, s);
    for (size_t j = 0; s->name && j + 1 < c->nshapes; j++)
      if (c->shapes[j].name && strcmp(c->shapes[j].name, s->name) == 0) {
        kl__ld_err(ld, kl__ld_map_get(n, "name"),
                   "duplicate shape '%s' (first at line %d)", s->name,
                   c->shapes[j].line);
        break;
      }
  }
}

static double default_tolerance(const kl_case *c) {
  double tol = 0;
  for (size_t i = 0; i < c->nparams; i++) {
    const case_param *p = &c->params[i];
    if (!p->is_pointer || p->role == KL_ROLE_INPUT ||
        p->role == KL_ROLE_SCRATCH)
      continue;
    double t = 0;
    switch (p->dtype) {
    case KL_DTYPE_F64:
      t = 1e-9;
      break;
    case KL_DTYPE_F32:
      t = 1e-4;
      break;
    case KL_DTYPE_F16:
      t = 1e-2;
      break;
    case KL_DTYPE_BF16:
      t = 2e-2;
      break;
    default:
      t = 0;
      break;
    }
    if (t > tol) tol = t;
  }
  return tol;
}

void kl__ld_read_reference(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  c->ref.kind = KL_REFERENCE_BASELINE;
  c->ref.atol = c->ref.rtol = default_tolerance(c);
  c->ref.trivial_margin = 100;
  bool python = ld->backend_ok && c->backend == KL_BACKEND_PYTHON;
  if (python) { /* the module's reference(), unless the baseline is */
    c->ref.kind = KL_REFERENCE_HOST;
    c->ref.source = c->kernel_path;
    c->ref.function = "reference";
  }
  const ynode *r = kl__ld_map_get(root, "reference");
  if (!r || !kl__ld_want(ld, r, YNODE_MAP, "reference")) return;
  static const char *const keys[] = {"kind", "source", "function",
                                     "atol", "rtol",   "trivial_margin"};
  kl__ld_check_keys(ld, r, keys, KL_ARRAY_SIZE(keys), "reference");
  const ynode *n;
  if ((n = kl__ld_map_get(r, "kind")) &&
      kl__ld_scalar(ld, n, "reference.kind")) {
    if (strcmp(n->value, "host") == 0)
      c->ref.kind = KL_REFERENCE_HOST;
    else if (strcmp(n->value, "baseline") == 0)
      c->ref.kind = KL_REFERENCE_BASELINE;
    else
      kl__ld_err(ld, n,
                 "unknown reference kind '%s' (expected baseline or host)",
                 n->value);
  }
  const ynode *src = kl__ld_map_get(r, "source"),
              *fn = kl__ld_map_get(r, "function");
  if (python) {
    if (src || fn)
      kl__ld_err(ld, src ? src : fn,
                 "a python case's reference is its module's reference(); "
                 "'source' and 'function' apply to host references of C "
                 "cases");
  } else if (c->ref.kind == KL_REFERENCE_HOST) {
    if (!src)
      kl__ld_err(ld, r,
                 "a host reference needs 'source' (a C file in the case)");
    else
      c->ref_source = kl__ld_case_file(ld, src, "reference.source");
    if (!fn)
      kl__ld_err(ld, r, "a host reference needs 'function' (its C name)");
    else if (kl__ld_scalar(ld, fn, "reference.function") &&
             !kl__is_ident(fn->value))
      kl__ld_err(ld, fn, "reference.function '%s' is not a C function name",
                 fn->value);
    else if (fn->kind == YNODE_SCALAR && fn->value[0])
      c->ref_function = kl__ld_dup_or_oom(ld, fn->value);
  } else {
    if (src) kl__ld_err(ld, src, "reference.source applies to kind: host");
    if (fn) kl__ld_err(ld, fn, "reference.function applies to kind: host");
  }
  if ((n = kl__ld_map_get(r, "atol")))
    kl__ld_real_number(ld, n, "reference.atol", 0, &c->ref.atol);
  if ((n = kl__ld_map_get(r, "rtol")))
    kl__ld_real_number(ld, n, "reference.rtol", 0, &c->ref.rtol);
  if ((n = kl__ld_map_get(r, "trivial_margin")))
    kl__ld_real_number(ld, n, "reference.trivial_margin", 0,
                       &c->ref.trivial_margin);
  if (python) {
    c->ref.source = c->ref.kind == KL_REFERENCE_HOST ? c->kernel_path : NULL;
    c->ref.function = c->ref.kind == KL_REFERENCE_HOST ? "reference" : NULL;
    return;
  }
  c->ref.source = c->ref_source;
  c->ref.function = c->ref_function;
}

void kl__ld_read_rest(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *n;
  if ((n = kl__ld_map_get(root, "roofline")) &&
      kl__ld_want(ld, n, YNODE_MAP, "roofline")) {
    static const char *const keys[] = {"bytes", "flops"};
    kl__ld_check_keys(ld, n, keys, KL_ARRAY_SIZE(keys), "roofline");
    const ynode *b = kl__ld_map_get(n, "bytes"),
                *f = kl__ld_map_get(n, "flops");
    if (!b && !f) kl__ld_err(ld, n, "roofline needs bytes, flops or both");
    if (b) c->roof_bytes = kl__ld_compile(ld, b, "roofline.bytes");
    if (f) c->roof_flops = kl__ld_compile(ld, f, "roofline.flops");
  }
  c->objective = KL_OBJECTIVE_GEOMEAN_SPEEDUP;
  if ((n = kl__ld_map_get(root, "objective")) &&
      kl__ld_scalar(ld, n, "objective")) {
    if (strcmp(n->value, "total_time") == 0)
      c->objective = KL_OBJECTIVE_TOTAL_TIME;
    else if (strcmp(n->value, "geomean_speedup") != 0)
      kl__ld_err(ld, n,
                 "unknown objective '%s' (expected geomean_speedup or "
                 "total_time)",
                 n->value);
  }
  c->budget.iterations = 10;
  c->budget.patience = 4;
  c->budget.min_gain_pct = 2.0;
  if ((n = kl__ld_map_get(root, "budget")) &&
      kl__ld_want(ld, n, YNODE_MAP, "budget")) {
    static const char *const keys[] = {"iterations", "patience",
                                       "min_gain_pct"};
    kl__ld_check_keys(ld, n, keys, KL_ARRAY_SIZE(keys), "budget");
    const ynode *v;
    if ((v = kl__ld_map_get(n, "iterations")))
      kl__ld_whole_number(ld, v, "budget.iterations", 1, &c->budget.iterations);
    if ((v = kl__ld_map_get(n, "patience")))
      kl__ld_whole_number(ld, v, "budget.patience", 1, &c->budget.patience);
    if ((v = kl__ld_map_get(n, "min_gain_pct")))
      kl__ld_real_number(ld, v, "budget.min_gain_pct", 0,
                         &c->budget.min_gain_pct);
  }
  if ((n = kl__ld_map_get(root, "program"))) {
    c->program_path = kl__ld_case_file(ld, n, "program");
  } else {
    char *p = kl__path_join(c->dir, "program.md");
    if (p && kl__is_file(p))
      c->program_path = p;
    else
      kl__free(p);
  }
}

/* rules: a file or a list of files in the case folder */
void kl__ld_read_rule_files(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *n = kl__ld_map_get(root, "rules");
  if (!n) return;
  const ynode *const *items =
      n->kind == YNODE_SEQ ? (const ynode *const *)n->items : &n;
  size_t count = n->kind == YNODE_SEQ ? n->count : 1;
  if (!(c->rule_files = kl__calloc(count ? count : 1, sizeof(char *)))) {
    ld->diags.oom = true;
    return;
  }
  for (size_t i = 0; i < count; i++) {
    char *path = kl__ld_case_file(ld, items[i], "rules");
    if (path) c->rule_files[c->nrule_files++] = path;
  }
}

void kl__ld_read_tunables(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  const ynode *t = kl__ld_map_get(root, "tunables");
  if (!t || !kl__ld_want(ld, t, YNODE_MAP, "tunables")) return;
  c->tunables = kl__calloc(t->count ? t->count : 1, sizeof(*c->tunables));
  if (!c->tunables) {
    ld->diags.oom = true;
    return;
  }
  for (size_t i = 0; i < t->count; i++) {
    const ynode *k = t->pairs[i].key, *v = t->pairs[i].value;
    if (!kl__is_ident(k->value)) {
      kl__ld_err(ld, k,
                 "tunable '%s' is not a C identifier (it becomes a -D "
                 "define)",
                 k->value);
      continue;
    }
    if (!kl__ld_want(ld, v, YNODE_SEQ, "a tunable's values")) continue;
    if (v->count == 0) {
      kl__ld_err(ld, v, "tunable '%s' has no values", k->value);
      continue;
    }
    case_tunable *tu = &c->tunables[c->ntunables];
    tu->name = kl__ld_dup_or_oom(ld, k->value);
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
      const char *s = kl__ld_scalar(ld, v->items[j], "a tunable value");
      if (!s) continue;
      bool dup = false;
      for (size_t q = 0; q < tu->nvalues && !dup; q++)
        dup = strcmp(tu->values[q], s) == 0;
      if (dup)
        kl__ld_err(ld, v->items[j], "tunable '%s' lists '%s' twice", k->value,
                   s);
      else if ((tu->values[tu->nvalues] = kl__ld_dup_or_oom(ld, s)))
        tu->nvalues++;
    }
  }
}

/* A configuration's values for the declared tunables. A value outside the
 * declared list is allowed (a search may refine it), and so is a name the
 * case does not declare (a candidate's own define); an assignment that is
 * not NAME=VALUE with NAME a C identifier is the caller's error. */
int kl__ld_configure_tunables(kl_case *c, const char *const *assign) {
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
      if (!(t->chosen = kl__strdup(eq + 1))) return kl__error_oom();
    }
  }
  return 0;
}
