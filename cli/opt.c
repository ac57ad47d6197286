/* cli_parse: argv read over a verb's table of options (opt.h).
 *
 * Each word is looked up in the table, the first entry that matches
 * winning (so an exact "-I" placed before a glued "-I" takes "-I DIR" and
 * the glued one "-IDIR"); its value, if it takes one, is the next word or
 * the rest of a glued word. The usage errors every verb shares are made
 * here: a missing value ("--shape needs a value"), one list item too many,
 * an unknown option, a second positional. What a value means (a number in
 * range, one of a few words) is the verb's, in a CLI_OPT_CALL; a seed,
 * which several verbs take, is cli_seed_arg's. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static const cli_opt *find(const cli_opt *opts, size_t n, const char *a) {
  for (size_t k = 0; k < n; k++) {
    const cli_opt *o = &opts[k];
    if (!o->name) continue;
    if (o->value == CLI_VALUE_GLUED
            ? strncmp(a, o->name, strlen(o->name)) == 0
            : strcmp(a, o->name) == 0 || (o->alias && strcmp(a, o->alias) == 0))
      return o;
  }
  return NULL;
}

/* The option's value into *val (NULL when it takes none). */
static int value(const char *verb, const cli_opt *o, const char *a, int argc,
                 char **argv, int i, const char **val) {
  const char *next = i + 1 < argc ? argv[i + 1] : NULL;
  *val = NULL;
  switch (o->value) {
  case CLI_VALUE_NONE:
    return EXIT_OK;
  case CLI_VALUE_GLUED:
    *val = a + strlen(o->name);
    return EXIT_OK;
  case CLI_VALUE_OPTIONAL:
    *val = next;
    return EXIT_OK;
  case CLI_VALUE_REQUIRED:
  case CLI_VALUE_WORD:
    if (!next || (o->value == CLI_VALUE_REQUIRED && !next[0]))
      return cli_usage_error(verb, "%s needs %s", a,
                             o->needs ? o->needs : "a value");
    *val = next;
    return EXIT_OK;
  }
  return EXIT_OK;
}

static int apply(const char *verb, const cli_opt *o, const char *a,
                 const char *val) {
  switch (o->type) {
  case CLI_OPT_FLAG:
    *(bool *)o->target = true;
    return EXIT_OK;
  case CLI_OPT_INT:
    *(int *)o->target = o->n;
    return EXIT_OK;
  case CLI_OPT_STRING:
    *(const char **)o->target = val;
    return EXIT_OK;
  case CLI_OPT_LIST: {
    cli_list *l = o->target;
    if (l->n >= l->max)
      return cli_usage_error(verb, "at most %zu %s%s", l->max, a,
                             l->suffix ? l->suffix : "");
    l->items[l->n++] = val;
    l->items[l->n] = NULL;
    return EXIT_OK;
  }
  case CLI_OPT_CALL:
    return o->fn(verb, a, val, o->target);
  case CLI_OPT_STOP:
  case CLI_OPT_ARG:
    break;
  }
  return EXIT_OK;
}

/* A word that is no option, to the table's CLI_OPT_ARG. */
static int word(const char *verb, const cli_opt *opts, size_t n,
                const char *a) {
  for (size_t k = 0; k < n; k++)
    if (opts[k].type == CLI_OPT_ARG)
      return opts[k].fn ? opts[k].fn(verb, NULL, a, opts[k].target)
                        : cli_positional(verb, opts[k].what,
                                         (const char **)opts[k].target, a);
  return cli_usage_error(
      verb, a[0] == '-' && a[1] ? "unknown option '%s'" : "unexpected '%s'", a);
}

int cli_parse(const char *verb, const cli_opt *opts, size_t n, int argc,
              char **argv, int *i) {
  for (; *i < argc; (*i)++) {
    const char *a = argv[*i], *val;
    const cli_opt *o = find(opts, n, a);
    int st;
    if (!o) {
      if ((st = word(verb, opts, n, a)) != EXIT_OK) return st;
      continue;
    }
    if (o->type == CLI_OPT_STOP) return EXIT_OK;
    if ((st = value(verb, o, a, argc, argv, *i, &val)) != EXIT_OK ||
        (st = apply(verb, o, a, val)) != EXIT_OK)
      return st;
    if (val && o->value != CLI_VALUE_GLUED) (*i)++;
  }
  return EXIT_OK;
}

int cli_positional(const char *verb, const char *what, const char **slot,
                   const char *arg) {
  if (arg[0] == '-' && arg[1])
    return cli_usage_error(verb, "unknown option '%s'", arg);
  if (*slot) return cli_usage_error(verb, "one %s at a time", what);
  *slot = arg;
  return EXIT_OK;
}

int cli_seed_arg(const char *verb, const char *opt, const char *val,
                 void *target) {
  if (!val)
    return cli_usage_error(verb, "%s takes a positive whole number", opt);
  /* digits only: strtoull alone would take a sign, blanks and "0x" */
  bool digits = *val != '\0';
  for (const char *c = val; digits && *c; c++)
    digits = *c >= '0' && *c <= '9';
  errno = 0;
  unsigned long long v = digits ? strtoull(val, NULL, 10) : 0;
  if (!digits || errno || v == 0)
    return cli_usage_error(verb,
                           "%s takes a positive whole number (below 2^64), "
                           "not '%s'",
                           opt, val);
  *(uint64_t *)target = (uint64_t)v;
  return EXIT_OK;
}
