/* One knowledge entry's file: a front matter between two `---` lines,
 * then a markdown body. The one reader (kl__kn_entry_parse) and the one
 * writer (kl__kn_entry_format) of the format.
 *
 * The front matter is YAML read by core's tree (1-based positions), so a
 * mistake is reported where it is: the tree's lines are counted from the
 * line after the opening `---`, and one is added to make them the
 * file's. Known keys only (a typo is an error, not a silently ignored
 * field): id and title are required; rules is a list of rule ids; shapes
 * a list or one name; speedup a number; iter a whole number. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/yaml_tree.h"
#include "knowledge_internal.h"

const char *kl__kn_kind_dir(const char *kind) {
  if (!kind) return NULL;
  if (strcmp(kind, "optimization") == 0) return "optimizations";
  if (strcmp(kind, "anti-pattern") == 0) return "anti-patterns";
  if (strcmp(kind, "language") == 0) return "languages";
  return NULL;
}

void kl__kn_entry_dispose(kn_entry *e) {
  char **f[] = {&e->path,          &e->kind,     &e->id,   &e->title,
                &e->operator_name, &e->language, &e->card, &e->ev_case,
                &e->ev_shapes,     &e->ev_run,   &e->body};
  for (size_t i = 0; i < KL_ARRAY_SIZE(f); i++)
    kl__free(*f[i]);
  kl__strv_free(e->rules);
  memset(e, 0, sizeof(*e));
}

/* ---- reading ---------------------------------------------------------------
 */

typedef struct reader {
  const char *path, *text; /* the file, for positions and snippets */
  int first;               /* the file's line of the front matter's first */
  kl__diag_list diags;
  kn_entry *e;
} reader;

static void err(reader *r, const ynode *n, const char *fmt, const char *a) {
  int line = n ? n->line + r->first - 1 : 1, col = n ? n->column : 1;
  char *snip = kl__snippet(r->text, line, col);
  kl__diag_add(&r->diags, KL_EINVALID, KL_DOMAIN_NONE, r->path, line, col, snip,
               fmt, a);
  kl__free(snip);
}

/* A scalar's text, copied; an error for anything else. */
static void scalar(reader *r, char **dst, const ypair *p) {
  if (p->value->kind != YNODE_SCALAR) {
    err(r, p->value, "'%s' wants a single value, not a list or mapping",
        p->key->value);
    return;
  }
  kl__free(*dst);
  if (!(*dst = kl__strdup(p->value->value))) r->diags.oom = true;
}

/* A list of scalars (or one scalar) as a NULL-ended list. */
static char **list(reader *r, const ypair *p) {
  const ynode *v = p->value;
  size_t n = v->kind == YNODE_SEQ ? v->count : 1;
  char **out = kl__calloc(n + 1, sizeof(*out));
  if (!out) {
    r->diags.oom = true;
    return NULL;
  }
  if (v->kind == YNODE_MAP) {
    err(r, v, "'%s' is a list of names, not a mapping", p->key->value);
    return out;
  }
  for (size_t i = 0; i < n; i++) {
    const ynode *it = v->kind == YNODE_SEQ ? v->items[i] : v;
    if (it->kind != YNODE_SCALAR) {
      err(r, it, "'%s' is a list of names", p->key->value);
      break;
    }
    if (!(out[i] = kl__strdup(it->value))) {
      r->diags.oom = true;
      break;
    }
  }
  return out;
}

static bool number(reader *r, double *out, const ypair *p) {
  char *end = NULL;
  const char *s = p->value->kind == YNODE_SCALAR ? p->value->value : "";
  errno = 0;
  *out = strtod(s, &end);
  if (!*s || *end || errno) {
    err(r, p->value, "'%s' wants a number", p->key->value);
    return false;
  }
  return true;
}

static void evidence(reader *r, const ynode *m) {
  kn_entry *e = r->e;
  if (m->kind != YNODE_MAP) {
    err(r, m, "'%s' is a mapping of case, shapes, speedup, run, iter",
        "evidence");
    return;
  }
  for (size_t i = 0; i < m->count; i++) {
    const ypair *p = &m->pairs[i];
    const char *k = p->key->value;
    double d;
    if (strcmp(k, "case") == 0) {
      scalar(r, &e->ev_case, p);
    } else if (strcmp(k, "run") == 0) {
      scalar(r, &e->ev_run, p);
    } else if (strcmp(k, "shapes") == 0) {
      char **v = list(r, p);
      kl__free(e->ev_shapes);
      e->ev_shapes = v ? kl__strv_join(v, ", ") : NULL;
      if (v && !e->ev_shapes) r->diags.oom = true;
      kl__strv_free(v);
    } else if (strcmp(k, "speedup") == 0) {
      if ((e->has_speedup = number(r, &d, p))) e->ev_speedup = d;
    } else if (strcmp(k, "iter") == 0) {
      if (!number(r, &d, p)) continue;
      if (d < 0 || d > 1e9 || d != (double)(long)d) {
        err(r, p->value, "'%s' wants a whole number", k);
        continue;
      }
      e->has_iter = true;
      e->ev_iter = (long)d;
    } else {
      err(r, p->key,
          "unknown key '%s' in evidence (case, shapes, speedup, run, iter)", k);
    }
  }
}

static void fields(reader *r, const ynode *root) {
  kn_entry *e = r->e;
  const ynode *id = NULL;
  for (size_t i = 0; i < root->count; i++) {
    const ypair *p = &root->pairs[i];
    const char *k = p->key->value;
    if (strcmp(k, "id") == 0) {
      scalar(r, &e->id, p);
      id = p->value;
    } else if (strcmp(k, "title") == 0) {
      scalar(r, &e->title, p);
    } else if (strcmp(k, "operator") == 0) {
      scalar(r, &e->operator_name, p);
    } else if (strcmp(k, "language") == 0) {
      scalar(r, &e->language, p);
    } else if (strcmp(k, "card") == 0) {
      scalar(r, &e->card, p);
    } else if (strcmp(k, "rules") == 0) {
      kl__strv_free(e->rules);
      e->rules = list(r, p);
    } else if (strcmp(k, "evidence") == 0) {
      evidence(r, p->value);
    } else {
      err(r, p->key,
          "unknown key '%s' (id, title, rules, operator, language, card, "
          "evidence)",
          k);
    }
  }
  if (!e->id) err(r, root, "the front matter has no '%s'", "id");
  if (!e->title) err(r, root, "the front matter has no '%s'", "title");
  for (const char *s = e->id; s && *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("._-", *s)) {
      err(r, id, "id '%s' may hold only letters, digits, '.', '_', '-'", e->id);
      break;
    }
}

/* The line that closes the front matter: its start, or NULL. */
static const char *closing(const char *s) {
  for (const char *p = s; p && *p;
       p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, "---", 3) == 0 &&
        (p[3] == '\n' || p[3] == '\0' || (p[3] == '\r' && p[4] == '\n')))
      return p;
  return NULL;
}

int kl__kn_entry_parse(kn_entry *e, const char *path, const char *kind,
                       const char *text) {
  memset(e, 0, sizeof(*e));
  reader r = {path, text, 2, {0}, e};
  if (!(e->path = kl__strdup(path)) || !(e->kind = kl__strdup(kind)))
    return kl__error_oom();
  if (strncmp(text, "---\n", 4) != 0 && strncmp(text, "---\r\n", 5) != 0)
    return kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, path, 1, 1, NULL,
                        "a knowledge entry starts with a front matter: a "
                        "'---' line, the fields, another '---' line");
  const char *start = strchr(text, '\n') + 1, *end = closing(start);
  if (!end) {
    int lines = 1;
    for (const char *p = text; *p; p++)
      lines += *p == '\n';
    return kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, path, lines, 1, NULL,
                        "the front matter opened on line 1 is never closed "
                        "(a '---' line)");
  }
  ynode *root = kl__yaml_parse(start, (size_t)(end - start), path, &r.diags);
  /* the tree's positions are relative to the front matter's first line */
  for (size_t i = 0; i < r.diags.count; i++)
    if (r.diags.items[i].e.line > 0) r.diags.items[i].e.line += r.first - 1;
  if (!root && r.diags.count == 0 && !r.diags.oom)
    err(&r, NULL, "the front matter is empty: it needs at least %s",
        "id and title");
  else if (root && root->kind != YNODE_MAP)
    err(&r, root, "the front matter is a mapping of fields, not %s",
        kl__yaml_kind_name(root));
  else if (root)
    fields(&r, root);
  kl__yaml_free(root);
  if (!e->rules && !(e->rules = kl__calloc(1, sizeof(char *))))
    r.diags.oom = true;
  const char *body = strchr(end, '\n');
  body = body ? body + 1 : end + strlen(end);
  while (*body == '\n')
    body++;
  if (!(e->body = kl__strdup(body))) r.diags.oom = true;
  int rc = kl__diag_report(&r.diags, NULL, NULL);
  kl__diag_clear(&r.diags);
  return rc;
}

/* ---- writing ---------------------------------------------------------------
 */

/* A YAML scalar, quoted when plain text could be misread. */
/* A line break YAML knows beyond \n and \r: U+0085, U+2028, U+2029. */
static bool yaml_break(const char *p) {
  const unsigned char *u = (const unsigned char *)p;
  return (u[0] == 0xc2 && u[1] == 0x85) ||
         (u[0] == 0xe2 && u[1] == 0x80 && (u[2] == 0xa8 || u[2] == 0xa9));
}

static void yaml_value(kl_buf *b, const char *s) {
  bool plain = *s && !isspace((unsigned char)s[0]) &&
               !isspace((unsigned char)s[strlen(s) - 1]) &&
               !strchr("-?:,[]{}#&*!|>'\"%@`", s[0]);
  /* flow indicators anywhere: a list item's "d]" ends it; and a ':'
   * before a blank, the end or (libyaml, in a flow sequence) one of
   * ",?[]{}": "09:?8Z" in shapes: [...] failed to read back (fuzzed) */
  for (const char *p = s; plain && *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f || yaml_break(p) ||
        (*p == ':' && (!p[1] || strchr(" ,?[]{}", p[1]))) ||
        (*p == '#' && p > s && p[-1] == ' ') || strchr(",[]{}", *p))
      plain = false;
  if (plain) {
    kl__buf_puts(b, s);
    return;
  }
  kl__buf_putc(b, '"');
  for (const char *p = s; *p; p++)
    if (*p == '"' || *p == '\\')
      kl__buf_printf(b, "\\%c", *p);
    else if (*p == '\n')
      kl__buf_puts(b, "\\n");
    else if ((unsigned char)*p < 0x20 || *p == 0x7f) /* CR, tab, ... */
      kl__buf_printf(b, "\\x%02x", (unsigned char)*p);
    else if (yaml_break(p)) { /* NEL, LS, PS: YAML folds them as breaks */
      bool nel = (unsigned char)p[0] == 0xc2;
      kl__buf_printf(b, "\\u%s",
                     nel                           ? "0085"
                     : (unsigned char)p[2] == 0xa8 ? "2028"
                                                   : "2029");
      p += nel ? 1 : 2; /* the loop steps past the last byte */
    } else
      kl__buf_putc(b, *p);
  kl__buf_putc(b, '"');
}

static void field(kl_buf *b, const char *indent, const char *k, const char *v) {
  if (!v) return;
  kl__buf_printf(b, "%s%s: ", indent, k);
  yaml_value(b, v);
  kl__buf_putc(b, '\n');
}

int kl__kn_entry_format(kl_buf *out, const kn_entry *e) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "---\n");
  field(&b, "", "id", e->id);
  field(&b, "", "title", e->title);
  kl__buf_puts(&b, "rules: [");
  for (size_t i = 0; e->rules && e->rules[i]; i++) {
    kl__buf_puts(&b, i ? ", " : "");
    yaml_value(&b, e->rules[i]);
  }
  kl__buf_puts(&b, "]\n");
  field(&b, "", "operator", e->operator_name);
  field(&b, "", "language", e->language);
  field(&b, "", "card", e->card);
  if (e->ev_case || e->ev_shapes || e->has_speedup || e->ev_run ||
      e->has_iter) {
    kl__buf_puts(&b, "evidence:\n");
    field(&b, "  ", "case", e->ev_case);
    if (e->ev_shapes) { /* kept joined by ", ": each one quoted as needed */
      kl__buf_puts(&b, "  shapes: [");
      for (const char *p = e->ev_shapes; *p;) {
        const char *end = strstr(p, ", ");
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char *one = kl__strndup(p, n);
        if (!one) {
          kl_buf_dispose(&b);
          return kl__error_oom();
        }
        if (p != e->ev_shapes) kl__buf_puts(&b, ", ");
        yaml_value(&b, one);
        kl__free(one);
        p += n + (end ? 2 : 0);
      }
      kl__buf_puts(&b, "]\n");
    }
    if (e->has_speedup) kl__buf_printf(&b, "  speedup: %.4g\n", e->ev_speedup);
    field(&b, "  ", "run", e->ev_run);
    if (e->has_iter) kl__buf_printf(&b, "  iter: %ld\n", e->ev_iter);
  }
  kl__buf_puts(&b, "---\n\n");
  kl__buf_puts(&b, e->body ? e->body : "");
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}
