/* What a kernel's source says its type names mean, and which local headers
 * it needs, without a compiler.
 *
 * The source is walked as the preprocessor would walk it: `#include "x"`
 * (a file beside the including one) is followed once, `#define` and
 * `#undef` are tracked, and `#if`, `#ifdef`, `#ifndef`, `#elif`, `#else`
 * and `#endif` pick the lines that count. A condition is the C
 * preprocessor's integer expression over `defined(NAME)`, numbers and
 * macros with a number as value (any other name is 0, as in C), with
 * ! ~ * / % + - << >> < > <= >= == != & ^ | && || and parentheses; one it
 * cannot evaluate is an error naming its line, because picking a branch by
 * guess would make a case from code nvcc never compiled. In the lines that
 * count, `typedef T NAME;` and `using NAME = T;` make NAME an alias of T,
 * and `struct NAME { ... }` (or `typedef struct { ... } NAME;`, or class)
 * gives NAME's members, for a struct the kernel takes by value.
 * The macros the program was built with (-D) start the defined set.
 *
 * Used by kl case from-observation: a parameter typed `floatX` (llm.c's
 * typedef of float in a local common.h) becomes f32, and the local headers
 * are copied into the case beside its kernel. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "observe_internal.h"

typedef struct alias {
  char *name, *type;
} alias;

typedef struct macro {
  char *name, *value;
} macro;

struct kl__src_types {
  alias *aliases;
  size_t naliases, acap;
  alias *structs; /* name, and the text between its braces */
  size_t nstructs, scap;
  macro *macros;
  size_t nmacros, mcap;
  char **files; /* every file read, source first, as given or joined */
  size_t nfiles, fcap;
  char **includes; /* local headers, relative to the source's folder */
  size_t nincludes, icap;
  char *root;              /* the source's folder */
  const char *const *dirs; /* the program's include folders (-I) */
  bool dir_used[64];       /* which of them an #include was found in */
};

void kl__src_types_free(kl__src_types *t) {
  if (!t) return;
  for (size_t i = 0; i < t->naliases; i++) {
    kl__free(t->aliases[i].name);
    kl__free(t->aliases[i].type);
  }
  for (size_t i = 0; i < t->nmacros; i++) {
    kl__free(t->macros[i].name);
    kl__free(t->macros[i].value);
  }
  kl__names_free(t->files, t->nfiles);
  kl__names_free(t->includes, t->nincludes);
  for (size_t i = 0; i < t->nstructs; i++) {
    kl__free(t->structs[i].name);
    kl__free(t->structs[i].type);
  }
  kl__free(t->structs);
  kl__free(t->aliases);
  kl__free(t->macros);
  kl__free(t->root);
  kl__free(t);
}

static macro *find_macro(kl__src_types *t, const char *name, size_t n) {
  for (size_t i = 0; i < t->nmacros; i++)
    if (strlen(t->macros[i].name) == n &&
        strncmp(t->macros[i].name, name, n) == 0)
      return &t->macros[i];
  return NULL;
}

static int define(kl__src_types *t, const char *name, size_t n,
                  const char *value, size_t vn) {
  macro *m = find_macro(t, name, n);
  if (!m) {
    if (KL__GROW(t->macros, t->mcap, t->nmacros + 1) < 0) return KL_ENOMEM;
    m = &t->macros[t->nmacros];
    if (!(m->name = kl__strndup(name, n))) return kl__error_oom();
    m->value = NULL;
    t->nmacros++;
  }
  kl__free(m->value);
  return (m->value = kl__strndup(value, vn)) ? 0 : kl__error_oom();
}

static void undefine(kl__src_types *t, const char *name, size_t n) {
  macro *m = find_macro(t, name, n);
  if (!m) return;
  kl__free(m->name);
  kl__free(m->value);
  *m = t->macros[--t->nmacros];
}

/* ---- #if expressions: recursive descent over one line ------------------- */

typedef struct cond {
  kl__src_types *t;
  const char *p;
  bool bad;
} cond;

static void skip_space(cond *c) {
  while (*c->p == ' ' || *c->p == '\t')
    c->p++;
}

static bool take(cond *c, const char *op) {
  skip_space(c);
  size_t n = strlen(op);
  if (strncmp(c->p, op, n) != 0) return false;
  if (n == 1) { /* '<' is not '<<' or '<=', '&' not '&&', '!' not '!=' */
    char a = op[0], b = c->p[1];
    if ((a == '<' || a == '>') && (b == a || b == '=')) return false;
    if ((a == '&' || a == '|') && b == a) return false;
    if (a == '!' && b == '=') return false;
  }
  c->p += n;
  return true;
}

static long long cond_or(cond *c);

static long long cond_primary(cond *c) {
  skip_space(c);
  if (take(c, "(")) {
    long long v = cond_or(c);
    if (!take(c, ")")) c->bad = true;
    return v;
  }
  if (take(c, "!")) return !cond_primary(c);
  if (take(c, "~")) return ~cond_primary(c);
  if (take(c, "-")) return -cond_primary(c);
  if (take(c, "+")) return cond_primary(c);
  if (isdigit((unsigned char)*c->p)) {
    char *end;
    long long v = strtoll(c->p, &end, 0);
    while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L')
      end++;
    c->p = end;
    return v;
  }
  if (kl__c_ident_char(*c->p)) {
    const char *s = c->p;
    while (kl__c_ident_char(*c->p))
      c->p++;
    size_t n = (size_t)(c->p - s);
    if (n == 7 && strncmp(s, "defined", 7) == 0) {
      bool paren = take(c, "(");
      skip_space(c);
      const char *ns = c->p;
      while (kl__c_ident_char(*c->p))
        c->p++;
      size_t nn = (size_t)(c->p - ns);
      if (nn == 0 || (paren && !take(c, ")"))) c->bad = true;
      return find_macro(c->t, ns, nn) != NULL;
    }
    macro *m = find_macro(c->t, s, n);
    if (!m) return 0; /* an unknown name is 0, as in C */
    char *end;
    const char *v = m->value;
    while (*v == ' ' || *v == '\t')
      v++;
    long long x = strtoll(v, &end, 0);
    while (*end == ' ' || *end == '\t')
      end++;
    if (end == v || *end) c->bad = true; /* a macro that is not a number */
    return x;
  }
  c->bad = true;
  return 0;
}

static long long cond_mul(cond *c) {
  long long v = cond_primary(c);
  for (;;) {
    if (take(c, "*"))
      v *= cond_primary(c);
    else if (take(c, "/") || take(c, "%")) {
      bool div = c->p[-1] == '/';
      long long r = cond_primary(c);
      if (r == 0)
        c->bad = true;
      else
        v = div ? v / r : v % r;
    } else
      return v;
  }
}

static long long cond_add(cond *c) {
  long long v = cond_mul(c);
  for (;;) {
    if (take(c, "+"))
      v += cond_mul(c);
    else if (take(c, "-"))
      v -= cond_mul(c);
    else
      return v;
  }
}

static long long cond_shift(cond *c) {
  long long v = cond_add(c);
  for (;;) {
    if (take(c, "<<"))
      v = (long long)((unsigned long long)v << (cond_add(c) & 63));
    else if (take(c, ">>"))
      v >>= cond_add(c) & 63;
    else
      return v;
  }
}

static long long cond_rel(cond *c) {
  long long v = cond_shift(c);
  for (;;) {
    if (take(c, "<="))
      v = v <= cond_shift(c);
    else if (take(c, ">="))
      v = v >= cond_shift(c);
    else if (take(c, "<"))
      v = v < cond_shift(c);
    else if (take(c, ">"))
      v = v > cond_shift(c);
    else
      return v;
  }
}

static long long cond_eq(cond *c) {
  long long v = cond_rel(c);
  for (;;) {
    if (take(c, "=="))
      v = v == cond_rel(c);
    else if (take(c, "!="))
      v = v != cond_rel(c);
    else
      return v;
  }
}

static long long cond_bits(cond *c) {
  long long v = cond_eq(c);
  for (;;) {
    if (take(c, "&"))
      v &= cond_eq(c);
    else if (take(c, "^"))
      v ^= cond_eq(c);
    else if (take(c, "|"))
      v |= cond_eq(c);
    else
      return v;
  }
}

static long long cond_and(cond *c) {
  long long v = cond_bits(c);
  while (take(c, "&&")) {
    long long r = cond_bits(c);
    v = v && r;
  }
  return v;
}

static long long cond_or(cond *c) {
  long long v = cond_and(c);
  while (take(c, "||")) {
    long long r = cond_and(c);
    v = v || r;
  }
  return v;
}

/* ---- walking the files ----------------------------------------------------
 */

#define MAX_DEPTH 64

typedef struct walk {
  kl__src_types *t;
  const char *path;
  int line;
} walk;

/* One (name, text) pair appended to a list: an alias and its type, or a
 * struct and its members; the text trimmed. */
static int add_pair(alias **v, size_t *n, size_t *cap, const char *name,
                    size_t nn, const char *text, size_t tn) {
  while (tn && isspace((unsigned char)text[tn - 1]))
    tn--;
  while (tn && isspace((unsigned char)*text))
    text++, tn--;
  if (!nn || !tn) return 0;
  if (KL__GROW(*v, *cap, *n + 1) < 0) return KL_ENOMEM;
  alias *a = &(*v)[*n];
  a->name = kl__strndup(name, nn);
  a->type = kl__strndup(text, tn);
  if (!a->name || !a->type) {
    kl__free(a->name);
    kl__free(a->type);
    return kl__error_oom();
  }
  (*n)++;
  return 0;
}

static int add_alias(kl__src_types *t, const char *name, size_t n,
                     const char *type, size_t tn) {
  return add_pair(&t->aliases, &t->naliases, &t->acap, name, n, type, tn);
}

/* typedef and using declarations in code that counts (comments blank). */
static int scan_aliases(kl__src_types *t, const char *code) {
  for (const char *p = code; *p; p++) {
    if (p > code && kl__c_ident_char(p[-1])) continue;
    bool td = strncmp(p, "typedef", 7) == 0 && !kl__c_ident_char(p[7]);
    bool us = strncmp(p, "using", 5) == 0 && !kl__c_ident_char(p[5]);
    if (!td && !us) continue;
    const char *s = p + (td ? 7 : 5), *semi = strchr(s, ';');
    if (!semi) break;
    size_t n = (size_t)(semi - s);
    if (memchr(s, '{', n) || memchr(s, '(', n)) continue; /* not a name */
    int rc = 0;
    if (td) { /* typedef T NAME; the last identifier is the name */
      const char *e = semi;
      while (e > s && isspace((unsigned char)e[-1]))
        e--;
      const char *b = e;
      while (b > s && kl__c_ident_char(b[-1]))
        b--;
      rc = add_alias(t, b, (size_t)(e - b), s, (size_t)(b - s));
    } else { /* using NAME = T; */
      const char *eq = memchr(s, '=', n);
      if (!eq) continue;
      const char *b = s;
      while (b < eq && isspace((unsigned char)*b))
        b++;
      const char *e = b;
      while (e < eq && kl__c_ident_char(*e))
        e++;
      rc = add_alias(t, b, (size_t)(e - b), eq + 1, (size_t)(semi - eq - 1));
    }
    if (rc < 0) return rc;
    p = semi;
  }
  return 0;
}

static int add_struct(kl__src_types *t, const char *name, size_t n,
                      const char *body, size_t bn) {
  return add_pair(&t->structs, &t->nstructs, &t->scap, name, n, body, bn);
}

static bool keyword_at(const char *code, const char *p, const char *kw) {
  size_t n = strlen(kw);
  return (p == code || !kl__c_ident_char(p[-1])) && strncmp(p, kw, n) == 0 &&
         !kl__c_ident_char(p[n]);
}

/* struct and class definitions in code that counts: `struct TAG [final]
 * [: bases] { ... }`, and a typedef's name after the '}'. */
static int scan_structs(kl__src_types *t, const char *code) {
  for (const char *p = code; *p; p++) {
    bool st = keyword_at(code, p, "struct"), cl = keyword_at(code, p, "class");
    if (!st && !cl) continue;
    const char *q = p + (st ? 6 : 5);
    while (isspace((unsigned char)*q))
      q++;
    const char *tag = q;
    while (kl__c_ident_char(*q))
      q++;
    size_t tag_len = (size_t)(q - tag);
    while (*q && !strchr("{;()=,<>", *q))
      q++; /* final, bases */
    if (*q != '{') continue;
    const char *open = q;
    int depth = 0;
    for (; *q; q++) {
      depth += (*q == '{') - (*q == '}');
      if (depth == 0) break;
    }
    if (!*q) break;
    int rc = add_struct(t, tag, tag_len, open + 1, (size_t)(q - open - 1));
    /* typedef struct [TAG] { ... } NAME; */
    const char *b = p;
    while (b > code && isspace((unsigned char)b[-1]))
      b--;
    const char *n = q + 1;
    while (isspace((unsigned char)*n))
      n++;
    const char *e = n;
    while (kl__c_ident_char(*e))
      e++;
    const char *semi = e;
    while (isspace((unsigned char)*semi))
      semi++;
    if (rc == 0 && b - code >= 7 && keyword_at(code, b - 7, "typedef") &&
        e > n && *semi == ';')
      rc = add_struct(t, n, (size_t)(e - n), open + 1, (size_t)(q - open - 1));
    if (rc < 0) return rc;
    p = q;
  }
  return 0;
}

static int walk_file(kl__src_types *t, const char *path, const char *rel,
                     int depth);

/* One directive line (without its '#'), in a region that counts or not. */
static int directive(walk *w, const char *d, bool *stack, int *taken, int *sp,
                     bool active, const char *rel) {
  kl__src_types *t = w->t;
  while (*d == ' ' || *d == '\t')
    d++;
  const char *word = d;
  while (kl__c_ident_char(*d))
    d++;
  size_t wn = (size_t)(d - word);
#define IS(s) (wn == strlen(s) && strncmp(word, s, wn) == 0)
  bool outer = *sp == 0 || stack[*sp - 1];
  if (IS("if") || IS("ifdef") || IS("ifndef") || IS("elif")) {
    bool elif = IS("elif");
    if (elif && *sp == 0)
      return kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, w->path, w->line, 1,
                          NULL, "#elif without #if");
    bool parent = elif ? (*sp < 2 || stack[*sp - 2]) : outer;
    long long v = 0;
    if (parent && !(elif && taken[*sp - 1])) {
      cond c = {t, d, false};
      if (IS("if") || elif) {
        v = cond_or(&c);
        skip_space(&c);
        if (*c.p) c.bad = true;
      } else {
        skip_space(&c);
        const char *ns = c.p;
        while (kl__c_ident_char(*c.p))
          c.p++;
        v = find_macro(t, ns, (size_t)(c.p - ns)) != NULL;
        if (c.p == ns) c.bad = true;
        if (IS("ifndef")) v = !v;
      }
      if (c.bad)
        return kl__error_at(
            KL_EINVALID, KL_DOMAIN_CASE, w->path, w->line, 1, NULL,
            "cannot evaluate this #%.*s without a compiler: give the "
            "program's build defines (--define NAME[=VALUE]) or the types "
            "(--type NAME=DTYPE)",
            (int)wn, word);
    }
    if (elif) {
      bool now = parent && !taken[*sp - 1] && v;
      stack[*sp - 1] = now;
      taken[*sp - 1] |= now;
    } else {
      if (*sp >= MAX_DEPTH)
        return kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, w->path, w->line, 1,
                            NULL, "#if nested too deep");
      stack[*sp] = parent && v;
      taken[*sp] = stack[*sp];
      (*sp)++;
    }
  } else if (IS("else")) {
    if (*sp == 0)
      return kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, w->path, w->line, 1,
                          NULL, "#else without #if");
    bool parent = *sp < 2 || stack[*sp - 2];
    stack[*sp - 1] = parent && !taken[*sp - 1];
    taken[*sp - 1] = true;
  } else if (IS("endif")) {
    if (*sp == 0)
      return kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, w->path, w->line, 1,
                          NULL, "#endif without #if");
    (*sp)--;
  } else if (active && IS("define")) {
    while (*d == ' ' || *d == '\t')
      d++;
    const char *ns = d;
    while (kl__c_ident_char(*d))
      d++;
    size_t nn = (size_t)(d - ns);
    if (*d == '(') return nn ? define(t, ns, nn, "", 0) : 0; /* a function */
    return nn ? define(t, ns, nn, d, strlen(d)) : 0;
  } else if (active && IS("undef")) {
    while (*d == ' ' || *d == '\t')
      d++;
    const char *ns = d;
    while (kl__c_ident_char(*d))
      d++;
    undefine(t, ns, (size_t)(d - ns));
  } else if (active && IS("include")) {
    while (*d == ' ' || *d == '\t')
      d++;
    char close = *d == '"' ? '"' : *d == '<' ? '>' : 0;
    const char *e = close ? strchr(d + 1, close) : NULL;
    if (!e) return 0;
    char *name = kl__strndup(d + 1, (size_t)(e - d - 1));
    if (!name) return kl__error_oom();
    int rc = 0;
    bool found = false;
    if (close == '"') { /* a local header: followed, and copied */
      char *dir = kl__path_dir(w->path);
      char *path = dir ? kl__path_join(dir, name) : NULL;
      kl_buf r = KL_BUF_INIT;
      const char *slash = strrchr(rel, '/');
      if (slash) kl__buf_put(&r, rel, (size_t)(slash - rel + 1));
      kl__buf_puts(&r, name);
      rc = path && r.ptr ? 0 : kl__error_oom();
      if (rc == 0 && (found = kl__is_file(path)))
        rc = walk_file(t, path, r.ptr, 1);
      kl_buf_dispose(&r);
      kl__free(path);
      kl__free(dir);
    }
    /* else a header library's (CUTLASS, CuTe) in one of the program's
     * include folders: that folder is the case's too; <system> headers
     * are the compiler's */
    for (size_t i = 0; rc == 0 && !found && t->dirs && t->dirs[i] && i < 64;
         i++) {
      char *path = kl__path_join(t->dirs[i], name);
      if (!path) rc = kl__error_oom();
      if (path && kl__is_file(path)) found = t->dir_used[i] = true;
      kl__free(path);
    }
    kl__free(name);
    return rc;
  }
#undef IS
  return 0;
}

static int walk_file(kl__src_types *t, const char *path, const char *rel,
                     int depth) {
  for (size_t i = 0; i < t->nfiles; i++)
    if (strcmp(t->files[i], path) == 0) return 0; /* once per file */
  if (t->nfiles > 256)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                     "%s: more than 256 local headers", path);
  if (KL__GROW(t->files, t->fcap, t->nfiles + 1) < 0 ||
      !(t->files[t->nfiles] = kl__strdup(path)))
    return kl__error_oom();
  t->nfiles++;
  if (depth > 0) {
    if (strncmp(rel, "../", 3) == 0 || strstr(rel, "/../") || rel[0] == '/')
      return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                       "%s: a local header outside the source's folder (%s) "
                       "cannot be copied into the case",
                       path, rel);
    if (KL__GROW(t->includes, t->icap, t->nincludes + 1) < 0 ||
        !(t->includes[t->nincludes] = kl__strdup(rel)))
      return kl__error_oom();
    t->nincludes++;
  }
  kl_buf text = KL_BUF_INIT, code = KL_BUF_INIT;
  int rc = kl__read_file(&text, path);
  char *clean =
      rc == 0 ? kl__c_blank(text.ptr ? text.ptr : "", text.size, true) : NULL;
  if (rc == 0 && !clean) rc = kl__error_oom();
  bool stack[MAX_DEPTH];
  int taken[MAX_DEPTH], sp = 0;
  walk w = {t, path, 0};
  for (const char *p = clean; rc == 0 && p && *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    w.line++;
    const char *s = p;
    while (s < p + n && (*s == ' ' || *s == '\t'))
      s++;
    bool active = sp == 0 || stack[sp - 1];
    if (s < p + n && *s == '#') {
      /* a directive, with its continuation lines joined */
      kl_buf d = KL_BUF_INIT;
      kl__buf_put(&d, s + 1, (size_t)(p + n - s - 1));
      while (d.size && d.ptr[d.size - 1] == '\\' && e) {
        d.ptr[--d.size] = ' ';
        p = e + 1;
        e = strchr(p, '\n');
        n = e ? (size_t)(e - p) : strlen(p);
        kl__buf_put(&d, p, n);
        w.line++;
      }
      if ((rc = kl__buf_status(&d)) == 0)
        rc = directive(&w, d.ptr ? d.ptr : "", stack, taken, &sp, active, rel);
      kl_buf_dispose(&d);
      kl__buf_putc(&code, '\n');
    } else if (active) {
      kl__buf_put(&code, p, n);
      kl__buf_putc(&code, '\n');
    }
    p = e ? e + 1 : p + n;
  }
  if (rc == 0) rc = kl__buf_status(&code);
  if (rc == 0) rc = scan_aliases(t, code.ptr ? code.ptr : "");
  if (rc == 0) rc = scan_structs(t, code.ptr ? code.ptr : "");
  kl__free(clean);
  kl_buf_dispose(&text);
  kl_buf_dispose(&code);
  return rc;
}

int kl__src_types_read(kl__src_types **out, const char *source,
                       const char *const *defines,
                       const char *const *include_dirs) {
  *out = NULL;
  kl__src_types *t = kl__calloc(1, sizeof(*t));
  if (!t) return kl__error_oom();
  t->dirs = include_dirs;
  int rc = 0;
  for (size_t i = 0; rc == 0 && defines && defines[i]; i++) {
    const char *d = defines[i], *eq = strchr(d, '=');
    size_t n = eq ? (size_t)(eq - d) : strlen(d);
    rc = define(t, d, n, eq ? eq + 1 : "1", eq ? strlen(eq + 1) : 1);
  }
  if (rc == 0) rc = walk_file(t, source, "", 0);
  if (rc < 0) {
    kl__src_types_free(t);
    return rc;
  }
  *out = t;
  return 0;
}

const char *kl__src_types_alias(const kl__src_types *t, const char *name) {
  /* the last declaration wins, as a redeclaration must agree anyway */
  for (size_t i = t ? t->naliases : 0; i-- > 0;)
    if (strcmp(t->aliases[i].name, name) == 0) return t->aliases[i].type;
  return NULL;
}

const char *kl__src_types_struct(const kl__src_types *t, const char *name) {
  for (size_t i = t ? t->nstructs : 0; i-- > 0;)
    if (strcmp(t->structs[i].name, name) == 0) return t->structs[i].type;
  return NULL;
}

size_t kl__src_types_include_count(const kl__src_types *t) {
  return t ? t->nincludes : 0;
}

const char *kl__src_types_include(const kl__src_types *t, size_t i) {
  return t && i < t->nincludes ? t->includes[i] : NULL;
}

bool kl__src_types_dir_used(const kl__src_types *t, size_t i) {
  return t && i < 64 && t->dir_used[i];
}
