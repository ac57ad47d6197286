/* The expression AST, shared by the parser, the evaluator and the case
 * loader (which reads `init: uniform(-1, 1)` as a call node). */
#ifndef KL_EXPR_INTERNAL_H
#define KL_EXPR_INTERNAL_H

#include "../core/internal.h"
#include "kernlab/expr.h"

typedef enum node_kind {
  NODE_NUM,
  NODE_NAME,
  NODE_CALL,
  NODE_NEG,
  NODE_NOT,
  NODE_BINARY
} node_kind;

typedef enum binop {
  OP_OR,
  OP_AND,
  OP_EQ,
  OP_NE,
  OP_LT,
  OP_LE,
  OP_GT,
  OP_GE,
  OP_ADD,
  OP_SUB,
  OP_MUL,
  OP_DIV,
  OP_IDIV,
  OP_MOD,
  OP_POW
} binop;

typedef struct kl_expr_node kl_expr_node;
struct kl_expr_node {
  node_kind kind;
  int line, column; /* position inside the source, 1-based */
  kl_value num;     /* NODE_NUM */
  const char *name; /* NODE_NAME, NODE_CALL */
  int func;         /* NODE_CALL: index into the function table, or -1 */
  binop op;         /* NODE_BINARY */
  kl_expr_node *left, *right; /* operands (unary: left) */
  kl_expr_node **args;
  size_t nargs;
};

/* Arena chunk: every node and string of an expression lives in its arena. */
typedef struct arena_chunk {
  struct arena_chunk *next;
  size_t used, size;
  max_align_t data[];
} arena_chunk;

struct kl_expr {
  char *src;
  char *path;
  int base_line, base_column;
  kl_expr_node *root;
  arena_chunk *arena;
  const char **names; /* distinct NAME identifiers, first use first */
  size_t nnames, cap_names;
};

/* kl_expr_compile; with any_function, calls to names outside the function
 * table parse (func = -1) so callers can read call syntax of their own, as
 * the case loader does for `init: uniform(-1, 1)`. Evaluating such a call
 * is an error. */
int kl__expr_compile(kl_expr **out, const char *src,
                     const kl_expr_options *opts, bool any_function);
/* The root node, for callers that inspect the tree. */
const kl_expr_node *kl__expr_root(const kl_expr *e);
/* Evaluate one node of e's tree (a rule's main comparison, say). */
int kl__expr_eval_node(kl_value *out, const kl_expr *e, const kl_expr_node *n,
                       const kl_vars *vars);
/* Record an error located at a node's position (absolute in the file). */
int kl__expr_error_at(const kl_expr *e, int line, int column, const char *fmt,
                      ...) KL_PRINTF(4, 5);
/* File position of a position inside the expression. */
void kl__expr_position(const kl_expr *e, int line, int column, int *out_line,
                       int *out_column);

/* Function table. */
typedef struct kl_expr_func {
  const char *name;
  int min_args, max_args; /* max -1: any number */
} kl_expr_func;
extern const kl_expr_func kl__expr_funcs[];
extern const size_t kl__expr_nfuncs;

/* The taker of this module's options struct (KL__OPTIONS_FUNCTIONS,
 * beside its init function): a caller's struct, whatever its version,
 * over this library's defaults. */
int kl__expr_options_take(kl_expr_options *full, const kl_expr_options *given);

#endif /* KL_EXPR_INTERNAL_H */
