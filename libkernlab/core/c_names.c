/* The names a C or CUDA text defines at its top level (functions, types,
 * tags, namespaces, variables) and the macros it #defines, read from its
 * blanked text by its braces and semicolons, without a compiler. Used to
 * put two kernel sections in one translation unit: kl best --dispatch
 * renames each variant's names, a standalone harness its embedded
 * baseline's. A name defined inside a brace block (a function's local, a
 * namespace's member) is not top-level; a namespace is, so renaming it
 * renames everything in it. */
#include <ctype.h>
#include <string.h>

#include "internal.h"

static const char *const keywords[] = {"const",
                                       "static",
                                       "inline",
                                       "extern",
                                       "void",
                                       "int",
                                       "float",
                                       "double",
                                       "char",
                                       "long",
                                       "short",
                                       "unsigned",
                                       "signed",
                                       "struct",
                                       "union",
                                       "enum",
                                       "typedef",
                                       "using",
                                       "namespace",
                                       "template",
                                       "typename",
                                       "class",
                                       "return",
                                       "__global__",
                                       "__device__",
                                       "__host__",
                                       "__shared__",
                                       "__constant__",
                                       "__forceinline__",
                                       "volatile",
                                       "auto",
                                       "bool",
                                       "operator",
                                       "main",
                                       "kernlab_launch_ctx"};

static bool is_keyword(const char *w, size_t n) {
  for (size_t i = 0; i < KL_ARRAY_SIZE(keywords); i++)
    if (strlen(keywords[i]) == n && strncmp(keywords[i], w, n) == 0)
      return true;
  return false;
}

static int add_name(kl__c_names *ns, const char *w, size_t n) {
  if (n == 0 || is_keyword(w, n) || !(isalpha((unsigned char)*w) || *w == '_'))
    return 0;
  for (size_t i = 0; i < ns->n; i++)
    if (strlen(ns->v[i]) == n && strncmp(ns->v[i], w, n) == 0) return 0;
  if (KL__GROW(ns->v, ns->cap, ns->n + 1) < 0) return KL_ENOMEM;
  return (ns->v[ns->n++] = kl__strndup(w, n)) ? 0 : kl__error_oom();
}

/* The identifier ending just before `end` (skipping spaces), or NULL. */
static const char *ident_before(const char *start, const char *end, size_t *n) {
  const char *b = kl__c_ident_before(start, end, n);
  return *n ? b : NULL;
}

/* One top-level declaration `head` (up to its '{' or ';'; `body` says a
 * brace block followed). */
static int declared(kl__c_names *ns, const char *head, size_t len, bool body) {
  while (len && isspace((unsigned char)*head))
    head++, len--;
  if (!len || *head == '#') return 0;
  const char *end = head + len;
  /* a template's parameter list is not the declaration: `template <int
   * B = 128> __global__ void k(...)` declares k */
  if (len > 8 && strncmp(head, "template", 8) == 0 &&
      !kl__c_ident_char(head[8])) {
    const char *q = head + 8;
    while (q < end && isspace((unsigned char)*q))
      q++;
    for (int angle = 0; q < end; q++) {
      angle += (*q == '<') - (*q == '>');
      if (angle == 0 && *q == '>') break;
    }
    if (q >= end) return 0;
    return declared(ns, q + 1, (size_t)(end - q - 1), body);
  }
  size_t n;
  const char *w;
  /* tags: struct X, union X, enum X, class X, namespace X */
  static const char *const tags[] = {"struct", "union", "enum", "class",
                                     "namespace"};
  for (size_t t = 0; t < KL_ARRAY_SIZE(tags); t++) {
    size_t tl = strlen(tags[t]);
    for (const char *q = head; q + tl < end; q++) {
      if ((q > head && kl__c_ident_char(q[-1])) || strncmp(q, tags[t], tl) ||
          kl__c_ident_char(q[tl]))
        continue;
      const char *a = q + tl;
      while (a < end && isspace((unsigned char)*a))
        a++;
      const char *b = a;
      while (b < end && kl__c_ident_char(*b))
        b++;
      int rc = add_name(ns, a, (size_t)(b - a));
      if (rc < 0) return rc;
    }
  }
  if (strncmp(head, "using", 5) == 0 && !kl__c_ident_char(head[5])) {
    const char *eq = memchr(head, '=', len);
    if (eq && (w = ident_before(head + 5, eq, &n))) return add_name(ns, w, n);
    return 0;
  }
  const char *eq = memchr(head, '=', len);
  const char *paren = memchr(head, '(', len);
  if (paren && (!eq || paren < eq) &&
      !(strncmp(head, "typedef", 7) == 0 && !kl__c_ident_char(head[7]))) {
    /* a function: the name before its last top-level parameter list */
    const char *last = NULL;
    int depth = 0;
    for (const char *q = head; q < end; q++) {
      if (*q == '(' && depth++ == 0) last = q;
      if (*q == ')') depth--;
    }
    if (body && last && (w = ident_before(head, last, &n)))
      return add_name(ns, w, n);
    return 0; /* a declaration of something defined elsewhere */
  }
  /* a variable or a typedef: the name before '=', '[' or the end */
  const char *stop = eq ? eq : end;
  const char *br = memchr(head, '[', (size_t)(stop - head));
  if (br) stop = br;
  if ((w = ident_before(head, stop, &n))) return add_name(ns, w, n);
  return 0;
}

/* The top-level names of blanked code, and its #define'd macros. */
int kl__c_top_level_names(kl__c_names *ns, kl__c_names *macros,
                          const char *code) {
  int rc = 0;
  const char *head = code;
  int depth = 0;
  for (const char *p = code; rc == 0 && *p; p++) {
    if ((p == code || p[-1] == '\n') && depth == 0) {
      const char *s = p;
      while (*s == ' ' || *s == '\t')
        s++;
      if (*s == '#') { /* a directive: its macro, then skip the line(s) */
        const char *d = s + 1;
        while (*d == ' ' || *d == '\t')
          d++;
        if (strncmp(d, "define", 6) == 0 && isspace((unsigned char)d[6])) {
          d += 6;
          while (*d == ' ' || *d == '\t')
            d++;
          const char *e = d;
          while (kl__c_ident_char(*e))
            e++;
          rc = add_name(macros, d, (size_t)(e - d));
        }
        while (*p && !(*p == '\n' && p[-1] != '\\'))
          p++;
        head = p + (*p != '\0');
        if (!*p) break;
        continue;
      }
    }
    if (*p == '{') {
      if (depth++ == 0) {
        const char *eq = memchr(head, '=', (size_t)(p - head));
        if (!eq) rc = declared(ns, head, (size_t)(p - head), true);
      }
    } else if (*p == '}') {
      if (--depth == 0) {
        /* `} name;` after a struct: typedef names and variables */
        const char *q = p + 1;
        while (*q && isspace((unsigned char)*q))
          q++;
        if (*q != ';' && kl__c_ident_char(*q)) {
          const char *semi = strchr(q, ';');
          if (semi && !memchr(q, '{', (size_t)(semi - q)))
            rc = declared(ns, q, (size_t)(semi - q), false);
        }
        head = p + 1;
      }
      if (depth < 0) depth = 0;
    } else if (*p == ';' && depth == 0) {
      /* an initialised variable ends here too: its head holds '=' */
      rc = declared(ns, head, (size_t)(p - head), false);
      head = p + 1;
    }
  }
  return rc;
}

void kl__c_names_dispose(kl__c_names *ns) {
  kl__names_free(ns->v, ns->n);
  ns->v = NULL;
  ns->n = ns->cap = 0;
}
