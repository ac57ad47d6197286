/* Build a position-keeping tree from libyaml's event stream.
 *
 * Case validation wants every error at once, so this layer reports what it
 * can (a syntax error stops libyaml; duplicate keys and aliases do not) and
 * leaves the meaning of the document to the case loader. */
#include <string.h>
#include <yaml.h>

#include "yaml_tree.h"

typedef struct builder {
  yaml_parser_t parser;
  const char *path;
  const char *text; /* for the caret snippet of a syntax error */
  kl__diag_list *diags;
  int flow_depth;
  bool failed; /* syntax error or out of memory: stop */
} builder;

static void syntax_error(builder *b) {
  const yaml_parser_t *p = &b->parser;
  int line = (int)p->problem_mark.line + 1;
  int col = (int)p->problem_mark.column + 1;
  char *snippet = kl__snippet(b->text, line, col);
  if (p->error == YAML_MEMORY_ERROR) {
    b->diags->oom = true;
  } else if (p->context) {
    kl__diag_add(b->diags, KL_EINVALID, KL_DOMAIN_YAML, b->path, line, col,
                 snippet, "YAML: %s %s", p->problem ? p->problem : "error",
                 p->context);
  } else {
    kl__diag_add(b->diags, KL_EINVALID, KL_DOMAIN_YAML, b->path, line, col,
                 snippet, "YAML: %s", p->problem ? p->problem : "syntax error");
  }
  kl__free(snippet);
  b->failed = true;
}

static bool next_event(builder *b, yaml_event_t *ev) {
  if (!yaml_parser_parse(&b->parser, ev)) {
    syntax_error(b);
    return false;
  }
  return true;
}

static ynode *new_node(builder *b, ynode_kind kind, const yaml_event_t *ev) {
  ynode *n = kl__calloc(1, sizeof(*n));
  if (!n) {
    b->diags->oom = true;
    b->failed = true;
    return NULL;
  }
  n->kind = kind;
  n->line = (int)ev->start_mark.line + 1;
  n->column = (int)ev->start_mark.column + 1;
  n->in_flow = b->flow_depth > 0;
  return n;
}

static ynode *build(builder *b, yaml_event_t *ev);

static ynode *build_scalar(builder *b, yaml_event_t *ev) {
  ynode *n = new_node(b, YNODE_SCALAR, ev);
  if (!n) return NULL;
  n->value =
      kl__strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
  if (!n->value) {
    kl__free(n);
    b->diags->oom = true;
    b->failed = true;
    return NULL;
  }
  yaml_scalar_style_t st = ev->data.scalar.style;
  bool one_line = ev->start_mark.line == ev->end_mark.line;
  n->vline = n->line;
  n->vcolumn = n->column;
  n->quoted = st != YAML_PLAIN_SCALAR_STYLE;
  n->block = st == YAML_LITERAL_SCALAR_STYLE || st == YAML_FOLDED_SCALAR_STYLE;
  if (st == YAML_PLAIN_SCALAR_STYLE) {
    n->exact = one_line;
  } else if (st == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
             st == YAML_DOUBLE_QUOTED_SCALAR_STYLE) {
    n->vcolumn++;
    n->exact =
        one_line && !memchr(ev->data.scalar.value,
                            st == YAML_SINGLE_QUOTED_SCALAR_STYLE ? '\'' : '\\',
                            ev->data.scalar.length);
  }
  return n;
}

static bool blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

void kl__yaml_locate(const ynode *n, const char *text, size_t offset, int *line,
                     int *column) {
  *line = n->vline;
  *column = n->vcolumn;
  if (!text || n->kind != YNODE_SCALAR || offset > strlen(n->value)) return;
  const char *p = text;
  int l = 1, c = 1;
  while (l < n->vline && p && (p = strchr(p, '\n')))
    p++, l++;
  if (!p) return;
  if (n->block) { /* the text starts below the | or > line */
    if (!(p = strchr(p, '\n'))) return;
    p++, l++;
  } else {
    for (; c < n->vcolumn && *p && *p != '\n'; c++)
      p++;
  }
  /* Walk file and value together; the file may hold more white space
   * (indentation, the line breaks a folded scalar turned into spaces). */
  const char *v = n->value;
  for (size_t i = 0;; i++) {
    if (i == offset && !v[i]) break; /* just past the last character */
    while (*p && *p != v[i] && (blank(*p) || *p == '\n')) {
      if (*p++ == '\n')
        l++, c = 1;
      else
        c++;
    }
    if (i == offset) break;
    if (!*p || *p != v[i]) return; /* an escape or a fold we cannot follow */
    if (*p++ == '\n')
      l++, c = 1;
    else
      c++;
  }
  *line = l;
  *column = c;
}

static ynode *build_seq(builder *b, yaml_event_t *start) {
  ynode *n = new_node(b, YNODE_SEQ, start);
  if (!n) return NULL;
  bool flow = start->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
  b->flow_depth += flow;
  size_t cap = 0;
  for (;;) {
    yaml_event_t ev;
    if (!next_event(b, &ev)) break;
    if (ev.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&ev);
      break;
    }
    ynode *item = build(b, &ev);
    yaml_event_delete(&ev);
    if (!item) break;
    if (!kl__array_reserve(&n->items, &cap, n->count + 1, sizeof(*n->items))) {
      kl__yaml_free(item);
      b->diags->oom = true;
      b->failed = true;
      break;
    }
    n->items[n->count++] = item;
  }
  b->flow_depth -= flow;
  return n;
}

static ynode *build_map(builder *b, yaml_event_t *start) {
  ynode *n = new_node(b, YNODE_MAP, start);
  if (!n) return NULL;
  bool flow = start->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
  b->flow_depth += flow;
  size_t cap = 0;
  for (;;) {
    yaml_event_t ev;
    if (!next_event(b, &ev)) break;
    if (ev.type == YAML_MAPPING_END_EVENT) {
      yaml_event_delete(&ev);
      break;
    }
    ynode *key = build(b, &ev);
    yaml_event_delete(&ev);
    if (!key) break;
    if (!next_event(b, &ev)) {
      kl__yaml_free(key);
      break;
    }
    ynode *value = build(b, &ev);
    yaml_event_delete(&ev);
    if (!value) {
      kl__yaml_free(key);
      break;
    }
    if (key->kind != YNODE_SCALAR) {
      kl__diag_add(b->diags, KL_EINVALID, KL_DOMAIN_YAML, b->path, key->line,
                   key->column, NULL, "a key must be a plain name, not %s",
                   kl__yaml_kind_name(key));
      kl__yaml_free(key);
      kl__yaml_free(value);
      continue;
    }
    bool dup = false;
    for (size_t i = 0; i < n->count; i++) {
      if (strcmp(n->pairs[i].key->value, key->value) == 0) {
        kl__diag_add(b->diags, KL_EINVALID, KL_DOMAIN_CASE, b->path, key->line,
                     key->column, NULL, "duplicate key '%s' (first at line %d)",
                     key->value, n->pairs[i].key->line);
        dup = true;
        break;
      }
    }
    if (dup) {
      kl__yaml_free(key);
      kl__yaml_free(value);
      continue;
    }
    if (!kl__array_reserve(&n->pairs, &cap, n->count + 1, sizeof(*n->pairs))) {
      kl__yaml_free(key);
      kl__yaml_free(value);
      b->diags->oom = true;
      b->failed = true;
      break;
    }
    n->pairs[n->count].key = key;
    n->pairs[n->count].value = value;
    n->count++;
  }
  b->flow_depth -= flow;
  return n;
}

static ynode *build(builder *b, yaml_event_t *ev) {
  if (b->failed) return NULL;
  switch (ev->type) {
  case YAML_SCALAR_EVENT:
    return build_scalar(b, ev);
  case YAML_SEQUENCE_START_EVENT:
    return build_seq(b, ev);
  case YAML_MAPPING_START_EVENT:
    return build_map(b, ev);
  case YAML_ALIAS_EVENT: {
    kl__diag_add(b->diags, KL_EINVALID, KL_DOMAIN_YAML, b->path,
                 (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
                 NULL, "YAML aliases (*name) are not supported in cases");
    /* Keep going with an empty scalar so other errors are still found. */
    ynode *n = new_node(b, YNODE_SCALAR, ev);
    if (n && !(n->value = kl__strdup(""))) {
      kl__free(n);
      n = NULL;
      b->diags->oom = true;
      b->failed = true;
    }
    return n;
  }
  default:
    kl__diag_add(b->diags, KL_EINVALID, KL_DOMAIN_YAML, b->path,
                 (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
                 NULL, "YAML: unexpected event");
    b->failed = true;
    return NULL;
  }
}

ynode *kl__yaml_parse(const char *text, size_t len, const char *path,
                      kl__diag_list *diags) {
  builder b = {0};
  b.path = path;
  b.text = text;
  b.diags = diags;
  if (!yaml_parser_initialize(&b.parser)) {
    diags->oom = true;
    return NULL;
  }
  yaml_parser_set_input_string(&b.parser, (const unsigned char *)text, len);
  ynode *root = NULL;
  yaml_event_t ev;
  /* stream start, document start, root node, document end, stream end */
  while (!b.failed && next_event(&b, &ev)) {
    yaml_event_type_t type = ev.type;
    if (type == YAML_STREAM_END_EVENT) {
      yaml_event_delete(&ev);
      break;
    }
    if (type == YAML_DOCUMENT_START_EVENT && root) {
      kl__diag_add(diags, KL_EINVALID, KL_DOMAIN_YAML, path,
                   (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
                   NULL, "a case file holds one YAML document, not several");
      yaml_event_delete(&ev);
      break;
    }
    if (type == YAML_SCALAR_EVENT || type == YAML_SEQUENCE_START_EVENT ||
        type == YAML_MAPPING_START_EVENT || type == YAML_ALIAS_EVENT)
      root = build(&b, &ev);
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&b.parser);
  if (b.failed) {
    kl__yaml_free(root);
    return NULL;
  }
  return root;
}

void kl__yaml_free(ynode *n) {
  if (!n) return;
  for (size_t i = 0; n->kind == YNODE_SEQ && i < n->count; i++)
    kl__yaml_free(n->items[i]);
  for (size_t i = 0; n->kind == YNODE_MAP && i < n->count; i++) {
    kl__yaml_free(n->pairs[i].key);
    kl__yaml_free(n->pairs[i].value);
  }
  kl__free(n->items);
  kl__free(n->pairs);
  kl__free(n->value);
  kl__free(n);
}

const char *kl__yaml_kind_name(const ynode *n) {
  switch (n->kind) {
  case YNODE_SCALAR:
    return "a scalar";
  case YNODE_SEQ:
    return "a list";
  case YNODE_MAP:
    return "a mapping";
  }
  return "a node";
}
