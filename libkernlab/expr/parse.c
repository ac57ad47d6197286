/* Scanner and parser of the expression language.
 *
 * A hand-written scanner produces tokens carrying line and column; a
 * precedence-climbing parser (Lua's `subexpr`, with a {left, right} priority
 * per binary operator) builds an AST in an arena owned by the kl_expr.
 * Function names and arities are checked here; names of values are collected
 * so callers can resolve them before evaluating. Errors point at the column
 * of the offending token, with the source line and a caret. */
#include <stddef.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr_internal.h"

const kl_expr_func kl__expr_funcs[] = {
    {"min", 2, -1},  {"max", 2, -1}, {"abs", 1, 1},   {"ceil_div", 2, 2},
    {"floor", 1, 1}, {"ceil", 1, 1}, {"round", 1, 1}, {"sqrt", 1, 1},
    {"log2", 1, 1},  {"exp", 1, 1},  {"log", 1, 1},   {"pow", 2, 2},
    {"clamp", 3, 3}, {"if", 3, 3},
};
const size_t kl__expr_nfuncs = KL_ARRAY_SIZE(kl__expr_funcs);

/* ---- arena --------------------------------------------------------------- */

static void *arena_alloc(kl_expr *e, size_t n) {
  n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
  arena_chunk *c = e->arena;
  if (!c || c->size - c->used < n) {
    size_t size = n > 4096 ? n : 4096;
    c = kl__malloc(sizeof(*c) + size);
    if (!c) return NULL;
    c->size = size;
    c->used = 0;
    c->next = e->arena;
    e->arena = c;
  }
  void *p = (char *)c->data + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}

/* ---- scanner ------------------------------------------------------------- */

typedef enum tok_kind {
  T_EOF,
  T_NUM,
  T_NAME,
  T_LPAREN,
  T_RPAREN,
  T_COMMA,
  T_OR,
  T_AND,
  T_NOT,
  T_EQ,
  T_NE,
  T_LT,
  T_LE,
  T_GT,
  T_GE,
  T_PLUS,
  T_MINUS,
  T_STAR,
  T_SLASH,
  T_DSLASH,
  T_PERCENT,
  T_DSTAR,
  T_ERROR
} tok_kind;

typedef struct token {
  tok_kind kind;
  const char *start;
  size_t len;
  int line, column;
  kl_value num;
} token;

typedef struct parser {
  kl_expr *e;
  const char *p; /* scan position */
  int line;
  const char *line_start;
  token tok; /* current token */
  int depth;
  int failed;
  bool any_function; /* accept calls to names outside the table */
} parser;

static int perror_at(parser *ps, const token *t, const char *fmt, ...)
    KL_PRINTF(3, 4);

static int perror_at(parser *ps, const token *t, const char *fmt, ...) {
  if (ps->failed) return KL_EINVALID;
  ps->failed = 1;
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  return kl__expr_error_at(ps->e, t->line, t->column, "%s", text);
}

static int is_name_start(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static int is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}

static void scan_number(parser *ps, token *t) {
  const char *s = ps->p;
  const char *q = s;
  int is_float = 0;
  while (*q >= '0' && *q <= '9')
    q++;
  if (*q == '.' && q[1] >= '0' && q[1] <= '9') {
    is_float = 1;
    q++;
    while (*q >= '0' && *q <= '9')
      q++;
  } else if (*q == '.' && !is_name_start(q[1])) {
    is_float = 1; /* "1." */
    q++;
  }
  if (*q == 'e' || *q == 'E') {
    const char *r = q + 1;
    if (*r == '+' || *r == '-') r++;
    if (*r >= '0' && *r <= '9') {
      is_float = 1;
      while (*r >= '0' && *r <= '9')
        r++;
      q = r;
    }
  }
  t->len = (size_t)(q - s);
  if (is_name_char(*q)) {
    t->kind = T_ERROR;
    while (is_name_char(*q))
      q++;
    t->len = (size_t)(q - s);
    ps->p = q;
    perror_at(ps, t, "malformed number '%.*s'", (int)t->len, s);
    return;
  }
  char buf[64];
  if (t->len >= sizeof(buf)) {
    t->kind = T_ERROR;
    ps->p = q;
    perror_at(ps, t, "number too long");
    return;
  }
  memcpy(buf, s, t->len);
  buf[t->len] = '\0';
  errno = 0;
  if (is_float) {
    t->num.is_int = 0;
    t->num.f = strtod(buf, NULL);
    if (errno == ERANGE && !isfinite(t->num.f)) {
      t->kind = T_ERROR;
      ps->p = q;
      perror_at(ps, t, "number '%s' is out of range", buf);
      return;
    }
  } else {
    long long v = strtoll(buf, NULL, 10);
    if (errno == ERANGE) {
      t->kind = T_ERROR;
      ps->p = q;
      perror_at(ps, t, "integer '%s' does not fit in 64 bits", buf);
      return;
    }
    t->num.is_int = 1;
    t->num.i = v;
    t->num.f = (double)v;
  }
  t->kind = T_NUM;
  ps->p = q;
}

static void next(parser *ps) {
  token *t = &ps->tok;
  for (;;) {
    char c = *ps->p;
    if (c == ' ' || c == '\t' || c == '\r') {
      ps->p++;
    } else if (c == '\n') {
      ps->p++;
      ps->line++;
      ps->line_start = ps->p;
    } else {
      break;
    }
  }
  memset(t, 0, sizeof(*t));
  t->start = ps->p;
  t->line = ps->line;
  t->column = (int)(ps->p - ps->line_start) + 1;
  const char *s = ps->p;
  char c = *s;
  if (c == '\0') {
    t->kind = T_EOF;
    return;
  }
  if ((c >= '0' && c <= '9') || (c == '.' && s[1] >= '0' && s[1] <= '9')) {
    scan_number(ps, t);
    return;
  }
  if (is_name_start(c)) {
    const char *q = s + 1;
    /* '.' joins name parts: dram__bytes.sum */
    while (is_name_char(*q) || (*q == '.' && is_name_start(q[1])))
      q++;
    t->len = (size_t)(q - s);
    ps->p = q;
    t->kind = T_NAME;
    if (t->len == 3 && memcmp(s, "and", 3) == 0)
      t->kind = T_AND;
    else if (t->len == 2 && memcmp(s, "or", 2) == 0)
      t->kind = T_OR;
    else if (t->len == 3 && memcmp(s, "not", 3) == 0)
      t->kind = T_NOT;
    return;
  }
  struct {
    const char *text;
    tok_kind kind;
  } ops[] = {
      {"**", T_DSTAR},  {"//", T_DSLASH}, {"==", T_EQ},    {"!=", T_NE},
      {"<=", T_LE},     {">=", T_GE},     {"<", T_LT},     {">", T_GT},
      {"+", T_PLUS},    {"-", T_MINUS},   {"*", T_STAR},   {"/", T_SLASH},
      {"%", T_PERCENT}, {"(", T_LPAREN},  {")", T_RPAREN}, {",", T_COMMA}};
  for (size_t i = 0; i < KL_ARRAY_SIZE(ops); i++) {
    size_t n = strlen(ops[i].text);
    if (strncmp(s, ops[i].text, n) == 0) {
      t->kind = ops[i].kind;
      t->len = n;
      ps->p += n;
      return;
    }
  }
  t->kind = T_ERROR;
  t->len = 1;
  ps->p++;
  if (c == '&' && s[1] == '&')
    perror_at(ps, t, "unexpected '&&'; use 'and'");
  else if (c == '|' && s[1] == '|')
    perror_at(ps, t, "unexpected '||'; use 'or'");
  else if (c == '!')
    perror_at(ps, t, "unexpected '!'; use 'not'");
  else if (c == '=')
    perror_at(ps, t, "unexpected '='; use '==' to compare");
  else if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f)
    perror_at(ps, t, "unexpected character (byte 0x%02x)", (unsigned char)c);
  else
    perror_at(ps, t, "unexpected character '%c'", c);
}

/* ---- parser -------------------------------------------------------------- */

static const struct {
  tok_kind tok;
  binop op;
  int left, right;
} binops[] = {
    {T_OR, OP_OR, 1, 1},       {T_AND, OP_AND, 2, 2},
    {T_EQ, OP_EQ, 3, 3},       {T_NE, OP_NE, 3, 3},
    {T_LT, OP_LT, 3, 3},       {T_LE, OP_LE, 3, 3},
    {T_GT, OP_GT, 3, 3},       {T_GE, OP_GE, 3, 3},
    {T_PLUS, OP_ADD, 4, 4},    {T_MINUS, OP_SUB, 4, 4},
    {T_STAR, OP_MUL, 5, 5},    {T_SLASH, OP_DIV, 5, 5},
    {T_DSLASH, OP_IDIV, 5, 5}, {T_PERCENT, OP_MOD, 5, 5},
    {T_DSTAR, OP_POW, 7, 6}, /* right associative, above unary minus */
};
#define UNARY_PRIORITY 6
#define NOT_PRIORITY 2 /* `not a == b` is `not (a == b)` */
#define MAX_DEPTH 200

static kl_expr_node *subexpr(parser *ps, int limit);

static kl_expr_node *new_node(parser *ps, node_kind kind, const token *at) {
  kl_expr_node *n = arena_alloc(ps->e, sizeof(*n));
  if (!n) {
    if (!ps->failed) kl__error_oom();
    ps->failed = 1;
    return NULL;
  }
  n->kind = kind;
  n->line = at->line;
  n->column = at->column;
  return n;
}

static const char *tok_text(const token *t) {
  switch (t->kind) {
  case T_EOF:
    return "end of expression";
  case T_COMMA:
    return "','";
  case T_RPAREN:
    return "')'";
  default:
    return NULL;
  }
}

static int unexpected(parser *ps, const char *wanted) {
  const token *t = &ps->tok;
  const char *what = tok_text(t);
  if (what) return perror_at(ps, t, "expected %s, found %s", wanted, what);
  return perror_at(ps, t, "expected %s, found '%.*s'", wanted, (int)t->len,
                   t->start);
}

static int add_name(parser *ps, const char *name) {
  kl_expr *e = ps->e;
  for (size_t i = 0; i < e->nnames; i++)
    if (strcmp(e->names[i], name) == 0) return 0;
  if (KL__GROW(e->names, e->cap_names, e->nnames + 1) < 0) {
    ps->failed = 1;
    return KL_ENOMEM;
  }
  e->names[e->nnames++] = name;
  return 0;
}

static kl_expr_node *call(parser *ps, const token *name_tok, char *name) {
  int fi = -1;
  for (size_t i = 0; i < kl__expr_nfuncs; i++)
    if (strcmp(kl__expr_funcs[i].name, name) == 0) fi = (int)i;
  if (fi < 0 && !ps->any_function) {
    const char *names[32];
    for (size_t i = 0; i < kl__expr_nfuncs; i++)
      names[i] = kl__expr_funcs[i].name;
    const char *hint = kl__suggest(name, names, kl__expr_nfuncs);
    if (hint)
      perror_at(ps, name_tok, "unknown function '%s'; did you mean '%s'?", name,
                hint);
    else
      perror_at(ps, name_tok, "unknown function '%s'", name);
    return NULL;
  }
  kl_expr_node *n = new_node(ps, NODE_CALL, name_tok);
  if (!n) return NULL;
  n->name = name;
  n->func = fi;
  next(ps); /* '(' */
  kl_expr_node *args[16];
  size_t nargs = 0;
  if (ps->tok.kind != T_RPAREN) {
    for (;;) {
      if (nargs == KL_ARRAY_SIZE(args)) {
        perror_at(ps, &ps->tok, "too many arguments to '%s'", name);
        return NULL;
      }
      kl_expr_node *a = subexpr(ps, 0);
      if (!a) return NULL;
      args[nargs++] = a;
      if (ps->tok.kind == T_COMMA) {
        next(ps);
        continue;
      }
      if (ps->tok.kind != T_RPAREN) {
        unexpected(ps, "',' or ')'");
        return NULL;
      }
      break;
    }
  }
  next(ps); /* ')' */
  const kl_expr_func *f = fi >= 0 ? &kl__expr_funcs[fi] : NULL;
  if (f && ((int)nargs < f->min_args ||
            (f->max_args >= 0 && (int)nargs > f->max_args))) {
    if (f->max_args < 0)
      perror_at(ps, name_tok, "'%s' takes at least %d arguments, not %zu", name,
                f->min_args, nargs);
    else if (f->min_args == f->max_args)
      perror_at(ps, name_tok, "'%s' takes %d argument%s, not %zu", name,
                f->min_args, f->min_args == 1 ? "" : "s", nargs);
    return NULL;
  }
  n->args = arena_alloc(ps->e, nargs * sizeof(*n->args));
  if (!n->args) {
    ps->failed = 1;
    kl__error_oom();
    return NULL;
  }
  memcpy(n->args, args, nargs * sizeof(*args));
  n->nargs = nargs;
  return n;
}

static kl_expr_node *primary(parser *ps) {
  token t = ps->tok;
  switch (t.kind) {
  case T_NUM: {
    kl_expr_node *n = new_node(ps, NODE_NUM, &t);
    if (n) n->num = t.num;
    next(ps);
    return n;
  }
  case T_NAME: {
    char *name = arena_alloc(ps->e, t.len + 1);
    if (!name) {
      ps->failed = 1;
      kl__error_oom();
      return NULL;
    }
    memcpy(name, t.start, t.len);
    next(ps);
    if (ps->tok.kind == T_LPAREN) return call(ps, &t, name);
    kl_expr_node *n = new_node(ps, NODE_NAME, &t);
    if (!n || add_name(ps, name) < 0) return NULL;
    n->name = name;
    return n;
  }
  case T_LPAREN: {
    next(ps);
    kl_expr_node *n = subexpr(ps, 0);
    if (!n) return NULL;
    if (ps->tok.kind != T_RPAREN) {
      if (ps->tok.kind == T_EOF)
        perror_at(ps, &t, "unclosed '('");
      else
        unexpected(ps, "')'");
      return NULL;
    }
    next(ps);
    return n;
  }
  case T_ERROR:
    return NULL; /* already reported */
  default:
    unexpected(ps, "a number, a name or '('");
    return NULL;
  }
}

static int binop_index(tok_kind k) {
  for (size_t i = 0; i < KL_ARRAY_SIZE(binops); i++)
    if (binops[i].tok == k) return (int)i;
  return -1;
}

static kl_expr_node *subexpr(parser *ps, int limit) {
  if (++ps->depth > MAX_DEPTH) {
    perror_at(ps, &ps->tok, "expression nested too deeply");
    return NULL;
  }
  kl_expr_node *left;
  token t = ps->tok;
  if (t.kind == T_MINUS || t.kind == T_PLUS || t.kind == T_NOT) {
    next(ps);
    kl_expr_node *operand =
        subexpr(ps, t.kind == T_NOT ? NOT_PRIORITY : UNARY_PRIORITY);
    if (!operand) return NULL;
    if (t.kind == T_PLUS) {
      left = operand;
    } else {
      left = new_node(ps, t.kind == T_NOT ? NODE_NOT : NODE_NEG, &t);
      if (!left) return NULL;
      left->left = operand;
    }
  } else {
    left = primary(ps);
    if (!left) return NULL;
  }
  for (;;) {
    int bi = binop_index(ps->tok.kind);
    if (bi < 0 || binops[bi].left <= limit) break;
    token op = ps->tok;
    next(ps);
    kl_expr_node *right = subexpr(ps, binops[bi].right);
    if (!right) return NULL;
    kl_expr_node *n = new_node(ps, NODE_BINARY, &op);
    if (!n) return NULL;
    n->op = binops[bi].op;
    n->left = left;
    n->right = right;
    left = n;
  }
  ps->depth--;
  return left;
}

/* ---- public API ---------------------------------------------------------- */

void kl__expr_position(const kl_expr *e, int line, int column, int *out_line,
                       int *out_column) {
  *out_line = e->base_line + line - 1;
  *out_column = line == 1 ? e->base_column + column - 1 : column;
}

int kl__expr_error_at(const kl_expr *e, int line, int column, const char *fmt,
                      ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  /* The caret snippet shows the expression itself, whatever file holds it. */
  char *snippet = kl__snippet(e->src, line, column);
  int fl, fc;
  kl__expr_position(e, line, column, &fl, &fc);
  kl__error_at(KL_EINVALID, KL_DOMAIN_EXPR, e->path ? e->path : "<expr>", fl,
               fc, snippet, "%s", text);
  kl__free(snippet);
  return KL_EINVALID;
}

int kl_expr_compile(kl_expr **out, const char *src,
                    const kl_expr_options *opts) {
  return kl__expr_compile(out, src, opts, false);
}

int kl__expr_compile(kl_expr **out, const char *src,
                     const kl_expr_options *given, bool any_function) {
  *out = NULL;
  kl_expr_options full;
  int taken = kl__expr_options_take(&full, given);
  if (taken < 0) return taken;
  const kl_expr_options *opts = &full;
  if (!src)
    return kl__error(KL_EINVALID, KL_DOMAIN_EXPR, "no expression given");
  kl_expr *e = kl__calloc(1, sizeof(*e));
  if (!e) return kl__error_oom();
  e->base_line = opts->line > 0 ? opts->line : 1;
  e->base_column = opts->column > 0 ? opts->column : 1;
  e->src = kl__strdup(src);
  e->path = opts->path ? kl__strdup(opts->path) : NULL;
  if (!e->src || (opts->path && !e->path)) {
    kl_expr_free(e);
    return kl__error_oom();
  }
  parser ps = {0};
  ps.e = e;
  ps.p = e->src;
  ps.line = 1;
  ps.line_start = e->src;
  ps.any_function = any_function;
  next(&ps);
  if (!ps.failed && ps.tok.kind == T_EOF) {
    perror_at(&ps, &ps.tok, "empty expression");
  } else if (!ps.failed) {
    e->root = subexpr(&ps, 0);
    if (e->root && ps.tok.kind != T_EOF) {
      if (ps.tok.kind == T_RPAREN)
        perror_at(&ps, &ps.tok, "unmatched ')'");
      else
        unexpected(&ps, "an operator or end of expression");
    }
  }
  if (ps.failed || !e->root) {
    if (!ps.failed && !kl_error_last()) kl__error_oom();
    kl_expr_free(e);
    const kl_error *err = kl_error_last();
    return err ? err->code : KL_EINVALID;
  }
  *out = e;
  return 0;
}

void kl_expr_free(kl_expr *e) {
  if (!e) return;
  for (arena_chunk *c = e->arena; c;) {
    arena_chunk *n = c->next;
    kl__free(c);
    c = n;
  }
  kl__free(e->names);
  kl__free(e->src);
  kl__free(e->path);
  kl__free(e);
}

const char *kl_expr_source(const kl_expr *e) {
  return e->src;
}

size_t kl_expr_name_count(const kl_expr *e) {
  return e->nnames;
}

const char *kl_expr_name(const kl_expr *e, size_t i) {
  return i < e->nnames ? e->names[i] : NULL;
}

int kl_expr_is_constant(const kl_expr *e) {
  const kl_expr_node *n = e->root;
  while (n->kind == NODE_NEG)
    n = n->left;
  return n->kind == NODE_NUM;
}

const kl_expr_node *kl__expr_root(const kl_expr *e) {
  return e->root;
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t expr_options_sizes[] = {0, sizeof(kl_expr_options)};

KL__OPTIONS_FUNCTIONS(kl_expr_options, kl_expr_options_init,
                      kl__expr_options_take, KL_EXPR_OPTIONS_INIT,
                      expr_options_sizes)
