/* The knowledge base as loaded: its search path, every entry of it, and
 * the two questions a person asks of it (search and show).
 *
 * The search path is, in order: the folders of $KERNLAB_KNOWLEDGE
 * (':'-separated), the nearest folder named `knowledge` at or above the
 * case's folder (or the current directory when there is no case), and the
 * installed starter set, <share>/knowledge. Each folder holds
 * optimizations/, anti-patterns/ and languages/, each of *.md entries;
 * an id seen before is left out (the first folder wins), so a project
 * can amend an installed entry by writing one with the same id. */
#define _GNU_SOURCE /* realpath, strcasecmp */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "knowledge_internal.h"

static const char *const kinds[] = {"optimization", "anti-pattern", "language"};

const char *kl__kn_case_language(const kl_case *c) {
  switch (kl_case_backend(c)) {
  case KL_BACKEND_CUDA:
    return "cuda";
  case KL_BACKEND_PYTHON:
    return "python";
  case KL_BACKEND_COMMAND:
    return "command";
  default:
    return "c";
  }
}

bool kl__kn_word_of(const char *name, const char *word) {
  size_t n = strlen(word);
  if (!name || n == 0) return false;
  for (const char *p = name; *p;) {
    size_t len = strcspn(p, "_-. ");
    if (len == n && strncasecmp(p, word, n) == 0) return true;
    p += len;
    if (*p) p++;
  }
  return false;
}

/* ---- the search path -------------------------------------------------------
 */

static int push(char ***v, size_t *n, char *dir) {
  if (!dir) return kl__error_oom();
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*v)[i], dir) == 0) {
      kl__free(dir);
      return 0;
    }
  char **g = kl__realloc(*v, (*n + 2) * sizeof(**v));
  if (!g) {
    kl__free(dir);
    return kl__error_oom();
  }
  *v = g;
  g[(*n)++] = dir;
  g[*n] = NULL;
  return 0;
}

/* The nearest `knowledge` folder at or above `from`, or NULL. */
static char *project_dir(const char *from) {
  char *at = realpath(from, NULL);
  while (at) {
    char *k = kl__path_join(at, "knowledge");
    if (!k || kl__is_dir(k)) {
      free(at);
      return k;
    }
    kl__free(k);
    char *slash = strrchr(at, '/');
    if (!slash || slash == at) break;
    *slash = '\0';
  }
  free(at);
  return NULL;
}

int kl__kn_search_path(char ***dirs, const kl_case *c) {
  char **v = NULL;
  size_t n = 0;
  int rc = 0;
  const char *env = getenv("KERNLAB_KNOWLEDGE");
  for (const char *p = env; rc == 0 && p && *p;) {
    size_t len = strcspn(p, ":");
    if (len) rc = push(&v, &n, kl__strndup(p, len));
    p += len + (p[len] ? 1 : 0);
  }
  char *proj = project_dir(c ? kl_case_dir(c) : ".");
  if (rc == 0 && proj)
    rc = push(&v, &n, proj);
  else
    kl__free(proj);
  const char *share = kl_share_dir();
  if (rc == 0 && share) rc = push(&v, &n, kl__path_join(share, "knowledge"));
  if (rc == 0 && !v && !(v = kl__calloc(1, sizeof(*v)))) rc = kl__error_oom();
  if (rc < 0) {
    kl__strv_free(v);
    return rc;
  }
  *dirs = v;
  return 0;
}

/* ---- loading ---------------------------------------------------------------
 */

void kl_knowledge_free(kl_knowledge *k) {
  if (!k) return;
  for (size_t i = 0; i < k->n; i++)
    kl__kn_entry_dispose(&k->v[i]);
  kl__free(k->v);
  kl__strv_free(k->dirs);
  kl__free(k->found);
  kl__free(k);
}

static bool known(const kl_knowledge *k, const char *id) {
  for (size_t i = 0; i < k->n; i++)
    if (strcmp(k->v[i].id, id) == 0) return true;
  return false;
}

static int load_kind(kl_knowledge *k, const char *dir, const char *kind) {
  char *sub = kl__path_join(dir, kl__kn_kind_dir(kind));
  char **names = NULL;
  size_t n = 0;
  int rc = sub ? 0 : kl__error_oom();
  if (rc == 0 && kl__is_dir(sub))
    rc = kl__list_dir(&names, &n, sub, ".md", "a knowledge folder");
  for (size_t i = 0; rc == 0 && i < n; i++) {
    char *path = kl__path_join(sub, names[i]);
    kl_buf t = KL_BUF_INIT;
    kn_entry e;
    memset(&e, 0, sizeof(e));
    if (!path) rc = kl__error_oom();
    if (rc == 0) rc = kl__read_file(&t, path);
    if (rc == 0) rc = kl__kn_entry_parse(&e, path, kind, t.ptr ? t.ptr : "");
    if (rc == 0 && !known(k, e.id)) {
      if (KL__GROW(k->v, k->cap, k->n + 1) < 0) {
        rc = KL_ENOMEM;
      } else {
        k->v[k->n++] = e;
        memset(&e, 0, sizeof(e));
      }
    }
    kl__kn_entry_dispose(&e);
    kl_buf_dispose(&t);
    kl__free(path);
  }
  kl__names_free(names, n);
  kl__free(sub);
  return rc;
}

int kl_knowledge_load(kl_knowledge **out, const kl_case *c) {
  if (!out)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "kl_knowledge_load: no out");
  *out = NULL;
  kl_knowledge *k = kl__calloc(1, sizeof(*k));
  if (!k) return kl__error_oom();
  int rc = kl__kn_search_path(&k->dirs, c);
  while (rc == 0 && k->dirs[k->ndirs])
    k->ndirs++;
  if (rc == 0 && !(k->found = kl__calloc(k->ndirs + 1, sizeof(bool))))
    rc = kl__error_oom();
  for (size_t d = 0; rc == 0 && d < k->ndirs; d++) {
    k->found[d] = kl__is_dir(k->dirs[d]);
    for (size_t i = 0; rc == 0 && k->found[d] && i < KL_ARRAY_SIZE(kinds); i++)
      rc = load_kind(k, k->dirs[d], kinds[i]);
  }
  if (rc < 0) {
    kl_knowledge_free(k);
    return rc;
  }
  *out = k;
  return 0;
}

int kl_knowledge_path(kl_buf *out, const kl_knowledge *k) {
  if (!out || !k)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_knowledge_path: a buffer and a knowledge base");
  kl_buf b = KL_BUF_INIT;
  for (size_t i = 0; i < k->ndirs; i++)
    kl__buf_printf(&b, "%s\t%s\n", k->dirs[i],
                   k->found[i] ? "found" : "absent");
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}

/* ---- search and show -------------------------------------------------------
 */

static bool has_ci(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (const char *p = hay; p && *p; p++)
    if (strncasecmp(p, needle, n) == 0) return true;
  return false;
}

static bool eq_ci(const char *a, const char *b) {
  return a && b && strcasecmp(a, b) == 0;
}

/* Every word of terms somewhere in the entry. */
static bool has_terms(const kn_entry *e, const char *terms) {
  for (const char *p = terms; p && *p;) {
    while (isspace((unsigned char)*p))
      p++;
    size_t len = 0;
    while (p[len] && !isspace((unsigned char)p[len]))
      len++;
    if (!len) break;
    char *w = kl__strndup(p, len);
    bool in = w && (has_ci(e->id, w) || has_ci(e->title, w) ||
                    has_ci(e->operator_name, w) || has_ci(e->language, w) ||
                    has_ci(e->card, w) || has_ci(e->ev_case, w) ||
                    has_ci(e->ev_shapes, w) || has_ci(e->body, w));
    for (size_t i = 0; w && !in && e->rules[i]; i++)
      in = has_ci(e->rules[i], w);
    kl__free(w);
    if (!in) return false;
    p += len;
  }
  return true;
}

static bool matches(const kn_entry *e, const kl_knowledge_query *q) {
  if (!q) return true;
  bool rule = !q->rule;
  for (size_t i = 0; !rule && e->rules[i]; i++)
    rule = eq_ci(e->rules[i], q->rule);
  return rule && has_terms(e, q->terms) &&
         (!q->operator_name || eq_ci(e->operator_name, q->operator_name)) &&
         (!q->language || eq_ci(e->language, q->language)) &&
         (!q->card || has_ci(e->card, q->card)) &&
         (!q->kind || eq_ci(e->kind, q->kind));
}

/* One entry's evidence in words ("host_matmul (n128, n192) x8.189 on
 * CARD from RUN iter 1"); nothing when it has none. */
static void evidence_text(kl_buf *b, const kn_entry *e) {
  const char *sep = "";
  if (e->ev_case) {
    kl__buf_puts(b, e->ev_case);
    sep = " ";
  }
  if (e->ev_shapes) {
    kl__buf_printf(b, "%s(%s)", sep, e->ev_shapes);
    sep = " ";
  }
  if (e->has_speedup) {
    kl__buf_printf(b, "%sx%.4g", sep, e->ev_speedup);
    sep = " ";
  }
  if (e->card) {
    kl__buf_printf(b, "%son %s", sep, e->card);
    sep = " ";
  }
  if (e->ev_run) kl__buf_printf(b, "%sfrom %s", sep, e->ev_run);
  if (e->has_iter) kl__buf_printf(b, " iter %ld", e->ev_iter);
}

int kl__kn_evidence_text(kl_buf *b, const kn_entry *e) {
  evidence_text(b, e);
  return kl__buf_status(b);
}

static void entry_json(kl_buf *b, const kn_entry *e, bool body) {
  kl__buf_puts(b, "{\"id\":");
  kl__buf_json_string(b, e->id);
  kl__buf_puts(b, ",\"kind\":");
  kl__buf_json_string(b, e->kind);
  kl__buf_puts(b, ",\"title\":");
  kl__buf_json_string(b, e->title);
  kl__buf_puts(b, ",\"rules\":[");
  for (size_t i = 0; e->rules[i]; i++) {
    kl__buf_puts(b, i ? "," : "");
    kl__buf_json_string(b, e->rules[i]);
  }
  kl__buf_puts(b, "],\"operator\":");
  kl__buf_json_string(b, e->operator_name);
  kl__buf_puts(b, ",\"language\":");
  kl__buf_json_string(b, e->language);
  kl__buf_puts(b, ",\"card\":");
  kl__buf_json_string(b, e->card);
  kl__buf_puts(b, ",\"evidence\":{\"case\":");
  kl__buf_json_string(b, e->ev_case);
  kl__buf_puts(b, ",\"shapes\":");
  kl__buf_json_string(b, e->ev_shapes);
  if (e->has_speedup)
    kl__buf_printf(b, ",\"speedup\":%.6g", e->ev_speedup);
  else
    kl__buf_puts(b, ",\"speedup\":null");
  kl__buf_puts(b, ",\"run\":");
  kl__buf_json_string(b, e->ev_run);
  if (e->has_iter)
    kl__buf_printf(b, ",\"iter\":%ld}", e->ev_iter);
  else
    kl__buf_puts(b, ",\"iter\":null}");
  kl__buf_puts(b, ",\"path\":");
  kl__buf_json_string(b, e->path);
  if (body) {
    kl__buf_puts(b, ",\"body\":");
    kl__buf_json_string(b, e->body);
  }
  kl__buf_putc(b, '}');
}

static bool format_ok(const char *format, bool *json) {
  *json = format && strcmp(format, "json") == 0;
  return !format || *json || strcmp(format, "text") == 0;
}

int kl_knowledge_search(kl_buf *out, const kl_knowledge *k,
                        const kl_knowledge_query *q, const char *format) {
  bool json;
  if (!out || !k || !format_ok(format, &json) ||
      (q && q->kind && !kl__kn_kind_dir(q->kind)))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_knowledge_search: format is \"text\" or \"json\"; "
                     "kind is optimization, anti-pattern or language");
  kl_buf b = KL_BUF_INIT;
  size_t hits = 0;
  if (json) kl__buf_puts(&b, "{\"entries\":[");
  for (size_t i = 0; i < k->n; i++) {
    const kn_entry *e = &k->v[i];
    if (!matches(e, q)) continue;
    if (json) {
      kl__buf_puts(&b, hits ? "," : "");
      entry_json(&b, e, false);
    } else {
      kl__buf_printf(&b, "%-12s %s: %s", e->kind, e->id, e->title);
      if (e->ev_case || e->has_speedup) {
        kl__buf_puts(&b, " [");
        evidence_text(&b, e);
        kl__buf_putc(&b, ']');
      }
      kl__buf_putc(&b, '\n');
    }
    hits++;
  }
  if (json)
    kl__buf_puts(&b, "]}\n");
  else if (!hits)
    kl__buf_puts(&b, "(no entry matches)\n");
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}

int kl_knowledge_show(kl_buf *out, const kl_knowledge *k, const char *id,
                      const char *format) {
  bool json;
  if (!out || !k || !id || !format_ok(format, &json))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_knowledge_show: an id, and format \"text\" or "
                     "\"json\"");
  for (size_t i = 0; i < k->n; i++) {
    const kn_entry *e = &k->v[i];
    if (strcmp(e->id, id) != 0) continue;
    kl_buf b = KL_BUF_INIT;
    if (json) {
      entry_json(&b, e, true);
      kl__buf_putc(&b, '\n');
    } else {
      kl_buf file = KL_BUF_INIT; /* as written, comments and all */
      kl__buf_printf(&b, "# %s\n", e->path);
      int rc = kl__read_file(&file, e->path);
      if (rc < 0) {
        kl_buf_dispose(&b);
        return rc;
      }
      kl__buf_puts(&b, file.ptr ? file.ptr : "");
      kl_buf_dispose(&file);
    }
    int rc = kl__buf_status(&b);
    if (rc == 0) kl__buf_give(out, &b);
    return rc;
  }
  return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                   "no knowledge entry '%s' (kl knowledge search lists them)",
                   id);
}
