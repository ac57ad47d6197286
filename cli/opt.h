/* A verb's options as a table (libgit2's cli_opt_spec is the model): each
 * entry names an option, says whether it takes a value and where that goes;
 * one entry without a name takes the words that are no option. cli_parse
 * walks argv over the table, so finding an option, taking its value and
 * the usage errors for a missing one are written once (opt.c), and a verb
 * only says what its options mean. */
#ifndef KL_CLI_OPT_H
#define KL_CLI_OPT_H

#include <stdbool.h>
#include <stddef.h>

/* What an option does with itself and its value. */
typedef enum cli_opt_type {
  CLI_OPT_FLAG,   /* *(bool *)target = true */
  CLI_OPT_INT,    /* *(int *)target = n */
  CLI_OPT_STRING, /* *(const char **)target = the value */
  CLI_OPT_LIST,   /* the value appended to the cli_list at target */
  CLI_OPT_CALL,   /* fn(verb, the option as given, the value, target) */
  CLI_OPT_STOP,   /* cli_parse stops at it and leaves the rest to the verb */
  CLI_OPT_ARG     /* (no name) a word that matches no option: fn's, or
                   * else the verb's one positional (cli_positional, what) */
} cli_opt_type;

/* Where an option's value comes from. */
typedef enum cli_opt_value {
  CLI_VALUE_NONE,     /* it takes none (a CALL gets NULL) */
  CLI_VALUE_REQUIRED, /* the next word, not empty: else "OPT needs a value" */
  CLI_VALUE_WORD,     /* the next word, empty or not: else "needs a value" */
  CLI_VALUE_OPTIONAL, /* the next word, NULL at the end: the CALL judges */
  CLI_VALUE_GLUED     /* the option's name is a prefix and the value the
                       * rest of the word ("-DNAME", "--dir=DIR") */
} cli_opt_value;

/* An option's meaning: EXIT_OK, or the exit status of the usage error it
 * printed. opt is the option as given (an alias, say); for a word, NULL. */
typedef int (*cli_opt_fn)(const char *verb, const char *opt, const char *val,
                          void *target);

typedef struct cli_opt {
  const char *name;  /* "--shape"; NULL for CLI_OPT_ARG */
  const char *alias; /* "-o", or NULL */
  cli_opt_type type;
  cli_opt_value value;
  void *target;
  cli_opt_fn fn;     /* CLI_OPT_CALL, and a CLI_OPT_ARG of its own */
  int n;             /* CLI_OPT_INT's value */
  const char *needs; /* "OPT needs ...": "a value" unless said ("a file") */
  const char *what;  /* CLI_OPT_ARG: "case" in "one case at a time" */
} cli_opt;

/* The target of a CLI_OPT_LIST: room for max items and a NULL after them,
 * kept NULL-terminated. One too many is a usage error, "at most MAX OPT"
 * and then `suffix` (NULL: nothing). */
typedef struct cli_list {
  const char **items;
  size_t n, max;
  const char *suffix;
} cli_list;

/* The entries, each checking its target's type. */
static inline void *cli__bool(bool *p) {
  return p;
}
static inline void *cli__int(int *p) {
  return p;
}
static inline void *cli__str(const char **p) {
  return p;
}
static inline void *cli__list(cli_list *p) {
  return p;
}
#define CLI_FLAG(name, p)                                                      \
  {                                                                            \
    (name), NULL, CLI_OPT_FLAG, CLI_VALUE_NONE, cli__bool(p), NULL, 0, NULL,   \
        NULL                                                                   \
  }
#define CLI_SET(name, p, v)                                                    \
  {                                                                            \
    (name), NULL, CLI_OPT_INT, CLI_VALUE_NONE, cli__int(p), NULL, (v), NULL,   \
        NULL                                                                   \
  }
/* how: CLI_VALUE_REQUIRED, _WORD or _GLUED */
#define CLI_STRING(name, alias, how, p)                                        \
  { (name), (alias), CLI_OPT_STRING, (how), cli__str(p), NULL, 0, NULL, NULL }
#define CLI_LIST(name, alias, how, p)                                          \
  { (name), (alias), CLI_OPT_LIST, (how), cli__list(p), NULL, 0, NULL, NULL }
#define CLI_CALL(name, how, fn, p)                                             \
  { (name), NULL, CLI_OPT_CALL, (how), (p), (fn), 0, NULL, NULL }
#define CLI_STOP(name)                                                         \
  { (name), NULL, CLI_OPT_STOP, CLI_VALUE_NONE, NULL, NULL, 0, NULL, NULL }
/* the verb's one positional: cli_positional(verb, what, p, word) */
#define CLI_ARG(what, p)                                                       \
  {                                                                            \
    NULL, NULL, CLI_OPT_ARG, CLI_VALUE_NONE, cli__str(p), NULL, 0, NULL,       \
        (what)                                                                 \
  }
/* the words that are no option, each to fn (opt NULL, val the word) */
#define CLI_WORDS(fn, p)                                                       \
  { NULL, NULL, CLI_OPT_ARG, CLI_VALUE_NONE, (p), (fn), 0, NULL, NULL }
#define CLI_NOPTS(t) (sizeof(t) / sizeof((t)[0]))

/* Reads argv[*i], argv[*i + 1], ... up to argc over the n options: each
 * option in turn does what its entry says, each word that is none goes
 * to the CLI_OPT_ARG entry (a word that looks like an option is then
 * "unknown option"). Stops at the first usage error, returning its exit
 * status (printed), or at a CLI_OPT_STOP option (*i is its index) or the
 * end (*i is argc), returning EXIT_OK. */
int cli_parse(const char *verb, const cli_opt *opts, size_t n, int argc,
              char **argv, int *i);

/* A verb's one positional argument (`what`: "case", "name", ...): a word
 * that looks like an option is unknown, a second one is refused; either is
 * printed as a usage error. Returns EXIT_OK (*slot set) or EXIT_BAD_INPUT. */
int cli_positional(const char *verb, const char *what, const char **slot,
                   const char *arg);

/* --seed's value (a cli_opt_fn; target a uint64_t): a whole number from 1
 * to 2^64 - 1, digits only, or a usage error. */
int cli_seed_arg(const char *verb, const char *opt, const char *val,
                 void *target);

#endif /* KL_CLI_OPT_H */
