/* A YAML document as a small tree with 1-based positions (libyaml marks are
 * 0-based), built from libyaml's event stream. Only what case and rule
 * files need: scalars, sequences, mappings with scalar keys, no aliases. */
#ifndef KL_YAML_TREE_H
#define KL_YAML_TREE_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"

typedef enum ynode_kind { YNODE_SCALAR, YNODE_SEQ, YNODE_MAP } ynode_kind;

typedef struct ynode ynode;
typedef struct ypair {
  ynode *key; /* always a scalar */
  ynode *value;
} ypair;

struct ynode {
  ynode_kind kind;
  int line, column;   /* where the node starts (the quote, for quoted) */
  int vline, vcolumn; /* where a scalar's text starts */
  bool exact;         /* vline/vcolumn map each character one to one */
  bool quoted;        /* scalar was quoted or a block scalar */
  bool block;         /* a block scalar (| or >): text starts a line below */
  bool in_flow;       /* inside a [...] or {...} collection */
  char *value;        /* scalar text */
  ynode **items;      /* sequence */
  ypair *pairs;       /* mapping, in file order */
  size_t count;       /* items or pairs */
};

/* Parse `text`. Syntax errors and duplicate keys go to `diags`; the result
 * is NULL when the document could not be read at all (or was empty). */
ynode *kl__yaml_parse(const char *text, size_t len, const char *path,
                      kl__diag_list *diags);
void kl__yaml_free(ynode *n);
/* The file position of byte `offset` of a scalar's text: exact for plain,
 * quoted (without escapes) and block scalars, folded lines included;
 * the node's own position where the text cannot be followed. */
void kl__yaml_locate(const ynode *n, const char *file_text, size_t offset,
                     int *line, int *column);
/* Name of a node kind for messages: "a mapping", "a list", "a scalar". */
const char *kl__yaml_kind_name(const ynode *n);

/* The user's config file (core/user_config.c): calls fn with the value of
 * its `section` key (when there is one) and reports every diagnostic fn
 * and the file's own checks added. 0 also when there is no file. */
typedef void (*kl__config_section_fn)(const ynode *value, const char *path,
                                      const char *file_text,
                                      kl__diag_list *diags, void *payload);
int kl__user_config_section(const char *section, kl__config_section_fn fn,
                            void *payload);

#endif /* KL_YAML_TREE_H */
