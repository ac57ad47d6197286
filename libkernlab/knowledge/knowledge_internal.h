/* The knowledge base inside the library: one entry per markdown file
 * (entry.c reads and writes the format), the loaded set and its search
 * path (base.c), the prompt's section (prior_art.c), and entries made
 * from a run's records (add.c). */
#ifndef KL_KNOWLEDGE_INTERNAL_H
#define KL_KNOWLEDGE_INTERNAL_H

#include <stdbool.h>

#include "../core/internal.h"
#include "kernlab/knowledge.h"

/* One entry, as its file says. Strings owned; NULL when absent. */
typedef struct kn_entry {
  char *path; /* the file */
  char *kind; /* "optimization", "anti-pattern", "language": its folder */
  char *id, *title, *operator_name, *language, *card;
  char **rules; /* NULL-ended, never NULL once parsed */
  /* evidence */
  char *ev_case, *ev_shapes, *ev_run; /* shapes: ", "-joined */
  bool has_speedup, has_iter;
  double ev_speedup;
  long ev_iter;
  char *body; /* the markdown after the front matter */
} kn_entry;

struct kl_knowledge {
  kn_entry *v;
  size_t n, cap;
  char **dirs; /* the search path, in order */
  bool *found; /* whether each folder exists */
  size_t ndirs;
};

/* Parse a file's text into *e (path and kind given). A front matter
 * that does not read: KL_EINVALID "path:line:column: message". */
int kl__kn_entry_parse(kn_entry *e, const char *path, const char *kind,
                       const char *text);
void kl__kn_entry_dispose(kn_entry *e);
/* An entry's file text: front matter (the fields set) and body; the one
 * writer of the format (kl__kn_entry_parse reads it back the same). */
int kl__kn_entry_format(kl_buf *out, const kn_entry *e);
/* The folder of a kind ("optimization" -> "optimizations") or NULL. */
const char *kl__kn_kind_dir(const char *kind);

/* The search path of case c (NULL: from the current directory); *dirs
 * owned (kl__strv_free), NULL-ended. */
int kl__kn_search_path(char ***dirs, const kl_case *c);
/* The language a case's kernels are written in: "cuda", "c", "python",
 * "command". */
const char *kl__kn_case_language(const kl_case *c);
/* An entry's evidence in words, appended to b ("case (shapes) xN on
 * card run R iter I"). */
int kl__kn_evidence_text(kl_buf *b, const kn_entry *e);
/* Whether `word` (any case) is one of the words of `name` (split at '_',
 * '-', '.', ' '). */
bool kl__kn_word_of(const char *name, const char *word);

#endif /* KL_KNOWLEDGE_INTERNAL_H */
