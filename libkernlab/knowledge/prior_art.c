/* The prompt's "Prior art": the knowledge entries that bear on this case
 * now, each with its evidence, within a size.
 *
 * An entry bears on the case when its language is none or the case's and
 * it names a rule that fired, names the case's operator (one of the words
 * of the case's name) or was measured on the case itself, or is a note on
 * the case's language. The score orders them: a fired rule counts most
 * (three per rule), then the same case (two), then the operator (one);
 * ties go to optimizations, then anti-patterns, then language notes, then
 * by id. Each goes in whole or not at all: its title, kind, rules and
 * evidence on one line, then the first paragraph of its body. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "knowledge_internal.h"

typedef struct scored {
  const kn_entry *e;
  int score, kind;
} scored;

static int kind_rank(const char *kind) {
  return strcmp(kind, "optimization") == 0   ? 0
         : strcmp(kind, "anti-pattern") == 0 ? 1
                                             : 2;
}

static int by_score(const void *a, const void *b) {
  const scored *x = a, *y = b;
  if (x->score != y->score) return y->score - x->score;
  if (x->kind != y->kind) return x->kind - y->kind;
  return strcmp(x->e->id, y->e->id);
}

static int score(const kn_entry *e, const kl_case *c, const char *lang,
                 const char *const *fired, size_t nfired) {
  if (e->language && strcasecmp(e->language, lang) != 0) return 0;
  int s = 0;
  for (size_t i = 0; e->rules[i]; i++)
    for (size_t j = 0; j < nfired; j++)
      if (fired[j] && strcmp(e->rules[i], fired[j]) == 0) s += 3;
  if (e->ev_case && strcmp(e->ev_case, kl_case_name(c)) == 0) s += 2;
  if (e->operator_name && (strcasecmp(e->operator_name, kl_case_name(c)) == 0 ||
                           kl__kn_word_of(kl_case_name(c), e->operator_name)))
    s += 1;
  if (s == 0 && strcmp(e->kind, "language") == 0 && e->language) s = 1;
  return s;
}

/* One entry as the prompt shows it. */
static int render(kl_buf *b, const kn_entry *e) {
  kl__buf_printf(b, "- [%s] %s (%s", e->kind, e->title, e->id);
  for (size_t i = 0; e->rules[i]; i++)
    kl__buf_printf(b, "%s%s", i ? ", " : "; rules: ", e->rules[i]);
  if (e->language) kl__buf_printf(b, "; %s", e->language);
  kl__buf_putc(b, ')');
  if (e->ev_case || e->has_speedup || e->ev_run) {
    kl__buf_puts(b, "\n  Evidence: ");
    kl__kn_evidence_text(b, e);
  }
  /* the body's first paragraph, on indented lines */
  const char *p = e->body ? e->body : "", *end = strstr(p, "\n\n");
  size_t n = end ? (size_t)(end - p) : strlen(p);
  if (n > 600) n = 600;
  while (n > 0 && p[n - 1] == '\n')
    n--;
  if (n) kl__buf_puts(b, "\n  ");
  for (size_t i = 0; i < n; i++)
    if (p[i] == '\n')
      kl__buf_puts(b, "\n  ");
    else
      kl__buf_putc(b, p[i]);
  if (n == 600 && n < strlen(p)) kl__buf_puts(b, " [...]");
  kl__buf_putc(b, '\n');
  return kl__buf_status(b);
}

int kl_knowledge_prior_art(kl_buf *out, const kl_knowledge *k, const kl_case *c,
                           const char *const *fired, size_t nfired,
                           size_t max_chars) {
  if (!out || !k || !c)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_knowledge_prior_art: a knowledge base and a case");
  scored *v = k->n ? kl__calloc(k->n, sizeof(*v)) : NULL;
  if (k->n && !v) return kl__error_oom();
  size_t n = 0;
  const char *lang = kl__kn_case_language(c);
  for (size_t i = 0; i < k->n; i++) {
    int s = score(&k->v[i], c, lang, fired, nfired);
    if (s > 0) v[n++] = (scored){&k->v[i], s, kind_rank(k->v[i].kind)};
  }
  if (n) qsort(v, n, sizeof(*v), by_score);
  kl_buf b = KL_BUF_INIT;
  int rc = 0;
  size_t shown = 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    kl_buf one = KL_BUF_INIT;
    if ((rc = render(&one, v[i].e)) == 0 && b.size + one.size <= max_chars) {
      kl__buf_put(&b, one.ptr, one.size);
      shown++;
    }
    kl_buf_dispose(&one);
  }
  if (rc == 0 && shown < n)
    kl__buf_printf(&b,
                   "(%zu more matching entries left out: kl knowledge "
                   "search lists them)\n",
                   n - shown);
  kl__free(v);
  if (rc == 0 && (rc = kl__buf_status(&b)) == 0) kl__buf_give(out, &b);
  kl_buf_dispose(&b);
  return rc;
}
