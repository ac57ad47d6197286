/** @file kernlab/knowledge.h  The knowledge base: findings that carry
 *  across cases, kept as markdown files a person can read and edit.
 *
 * An entry is one file, `<dir>/optimizations/<id>.md` (what worked),
 * `<dir>/anti-patterns/<id>.md` (what failed) or `<dir>/languages/<id>.md`
 * (notes on a kernel language), that starts with a small front matter
 * between two `---` lines: id, title, rules (rule ids), operator,
 * language, card, and evidence (case, shapes, speedup, run, iter); the
 * body is free markdown. docs/knowledge.md has the format and the search
 * path: the folders of $KERNLAB_KNOWLEDGE (':'-separated), then the
 * nearest `knowledge/` folder at or above the case's folder (or the
 * current directory), then the installed starter set
 * (<share>/kernlab/knowledge). An id found twice is the first one's.
 */
#ifndef KERNLAB_KNOWLEDGE_H
#define KERNLAB_KNOWLEDGE_H

#include "case.h"
#include "common.h"

KL_BEGIN_DECLS

typedef struct kl_knowledge kl_knowledge; /* opaque: the loaded entries */

/** Load every entry of the search path (`c` may be NULL: the project
 *  folder is then looked for from the current directory). A front matter
 *  that does not read is KL_EINVALID "path:line:column: message".
 *  @return 0, KL_EINVALID, KL_EIO, KL_ENOMEM */
KL_EXTERN(int) kl_knowledge_load(kl_knowledge **out, const kl_case *c);
KL_EXTERN(void) kl_knowledge_free(kl_knowledge *k); /* NULL is a no-op */

/** The folders searched, in order, one per line, each followed by a tab
 *  and "found" or "absent". @return 0, KL_ENOMEM */
KL_EXTERN(int) kl_knowledge_path(kl_buf *out, const kl_knowledge *k);

/** What to look for; every field set must match (NULL: any). */
typedef struct kl_knowledge_query {
  const char *terms;         /**< words, all present (any case) in the entry's
                                  id, title, fields or body */
  const char *rule;          /**< a rule id the entry names */
  const char *operator_name; /**< the entry's operator (exactly, any case) */
  const char *language;      /**< the entry's language (exactly, any case) */
  const char *card;          /**< part of the entry's card (any case) */
  const char *kind; /**< "optimization", "anti-pattern" or "language" */
} kl_knowledge_query;

/** The entries that match, by id: "text" (one line each: kind, id,
 *  title, evidence) or "json" (`{"entries": [...]}`, docs/json.md).
 *  @return 0, KL_EINVALID (bad format or kind) */
KL_EXTERN(int)
kl_knowledge_search(kl_buf *out, const kl_knowledge *k,
                    const kl_knowledge_query *q, const char *format);

/** One entry: "text" (its file as written, after a line naming the file)
 *  or "json" (its fields and body). @return 0, KL_ENOTFOUND, KL_EINVALID */
KL_EXTERN(int)
kl_knowledge_show(kl_buf *out, const kl_knowledge *k, const char *id,
                  const char *format);

/** The prompt's "Prior art": the entries whose language is none or the
 *  case's and that name one of the fired rules, the case's operator (a
 *  word of its name) or the case itself, or are notes on its language;
 *  each with its evidence and the start of its body, best matches first,
 *  at most max_chars (whole entries). Empty when none match.
 *  @return 0, KL_ENOMEM */
KL_EXTERN(int)
kl_knowledge_prior_art(kl_buf *out, const kl_knowledge *k, const kl_case *c,
                       const char *const *fired, size_t nfired,
                       size_t max_chars);

#define KL_KNOWLEDGE_ADD_OPTIONS_VERSION 1
typedef struct kl_knowledge_add_options {
  unsigned version;          /**< KL_KNOWLEDGE_ADD_OPTIONS_VERSION */
  const char *from;          /**< "RUN/ITER" of the case's records (required) */
  const char *dir;           /**< the knowledge folder to write into; NULL: the
                                  first of $KERNLAB_KNOWLEDGE, else the project's
                                  knowledge/ (made beside the case's folder) */
  const char *id;            /**< NULL: made from the case and the memo */
  const char *title;         /**< NULL: the memo */
  const char *operator_name; /**< NULL: the case's name */
  const char *language;      /**< NULL: the case's (cuda, c, python, command) */
} kl_knowledge_add_options;
#define KL_KNOWLEDGE_ADD_OPTIONS_INIT                                          \
  { KL_KNOWLEDGE_ADD_OPTIONS_VERSION, NULL, NULL, NULL, NULL, NULL, NULL }
/** Fill *opts with the defaults its `version` knows and nothing past
 *  them. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int)
kl_knowledge_add_options_init(kl_knowledge_add_options *opts, unsigned version);

/** Make an entry from one recorded iteration of the case: an accepted
 *  version becomes an optimization, a rejected one (any verdict but
 *  ACCEPTED and BASELINE) an anti-pattern; its rules are those that fired
 *  on its parent, its evidence the case, shapes, speedup against the
 *  parent, card, run and iteration, its body the memo, the verdict's
 *  reason and the diff against the parent. *path gets the new file's
 *  path. @return 0, KL_ENOTFOUND (no such iteration), KL_EINVALID (a
 *  baseline, a bad `from`), KL_EEXISTS (an entry with that id is
 *  there), KL_EIO */
KL_EXTERN(int)
kl_knowledge_add(kl_buf *path, const kl_case *c,
                 const kl_knowledge_add_options *opts);

KL_END_DECLS

#endif /* KERNLAB_KNOWLEDGE_H */
