/* `kl knowledge add | search | show | path`: the knowledge base, files a
 * person can read and edit (docs/knowledge.md). Each sub-verb reads its
 * options, loads what it needs through the public API and prints. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

/* The options every sub-verb may take; each uses its own. */
typedef struct kopts {
  const char *case_path, *from, *to, *id, *title, *op, *language, *rule, *card,
      *kind;
  char terms[1024];
  bool json;
} kopts;

/* A word (opt.h's cli_opt_fn): a term for search, else the sub-verb's one
 * word (the id for show, the case for add). */
typedef struct words {
  kopts *o;
  const char **word; /* NULL: search terms */
  const char *sub;
} words;

static int word_arg(const char *verb, const char *opt, const char *a,
                    void *target) {
  (void)opt;
  words *w = target;
  kopts *o = w->o;
  if (a[0] == '-') return cli_usage_error(verb, "unknown option '%s'", a);
  if (w->word) {
    if (*w->word) return cli_usage_error(verb, "one %s only", w->sub);
    *w->word = a;
    return EXIT_OK;
  }
  size_t n = strlen(o->terms);
  if (n + strlen(a) + 2 > sizeof(o->terms))
    return cli_usage_error(verb, "too many search terms");
  snprintf(o->terms + n, sizeof(o->terms) - n, "%s%s", n ? " " : "", a);
  return EXIT_OK;
}

/* Read argv from index 2 on. */
static int parse(kopts *o, const char **word, int argc, char **argv) {
  words w = {o, word, argv[1]};
  const cli_opt spec[] = {
      CLI_FLAG("--json", &o->json),
      CLI_STRING("--case", NULL, CLI_VALUE_WORD, &o->case_path),
      CLI_STRING("--from", NULL, CLI_VALUE_WORD, &o->from),
      CLI_STRING("--to", NULL, CLI_VALUE_WORD, &o->to),
      CLI_STRING("--id", NULL, CLI_VALUE_WORD, &o->id),
      CLI_STRING("--title", NULL, CLI_VALUE_WORD, &o->title),
      CLI_STRING("--operator", NULL, CLI_VALUE_WORD, &o->op),
      CLI_STRING("--language", NULL, CLI_VALUE_WORD, &o->language),
      CLI_STRING("--rule", NULL, CLI_VALUE_WORD, &o->rule),
      CLI_STRING("--card", NULL, CLI_VALUE_WORD, &o->card),
      CLI_STRING("--kind", NULL, CLI_VALUE_WORD, &o->kind),
      CLI_WORDS(word_arg, &w),
  };
  int i = 2;
  return cli_parse("knowledge", spec, CLI_NOPTS(spec), argc, argv, &i);
}

static int print_or_fail(int rc, kl_buf *out) {
  int status = rc < 0 ? cli_fail() : EXIT_OK;
  if (rc == 0) fwrite(out->ptr, 1, out->size, stdout);
  kl_buf_dispose(out);
  return status;
}

static int add(int argc, char **argv) {
  kopts o = {0};
  const char *case_path = NULL;
  if (parse(&o, &case_path, argc, argv) != EXIT_OK) return EXIT_BAD_INPUT;
  if (!case_path) case_path = o.case_path;
  if (!case_path) return cli_usage_error("knowledge", "add: no case given");
  if (!o.from)
    return cli_usage_error("knowledge", "add: --from RUN/ITER is required");
  kl_case *c = NULL;
  kl_buf path = KL_BUF_INIT;
  kl_knowledge_add_options ao;
  kl_knowledge_add_options_init(&ao, KL_KNOWLEDGE_ADD_OPTIONS_VERSION);
  ao.from = o.from;
  ao.dir = o.to;
  ao.id = o.id;
  ao.title = o.title;
  ao.operator_name = o.op;
  ao.language = o.language;
  int rc = kl_case_load(&c, case_path, NULL);
  if (rc == 0) rc = kl_knowledge_add(&path, c, &ao);
  int status = rc < 0 ? cli_fail() : EXIT_OK;
  if (rc == 0 && o.json) {
    fputs("{\"path\":", stdout);
    cli_json_string(stdout, path.ptr);
    fputs("}\n", stdout);
  } else if (rc == 0) {
    printf("%s\n", path.ptr);
  }
  kl_buf_dispose(&path);
  kl_case_free(c);
  return status;
}

/* The knowledge of --case's project, or of the current directory's. */
static int load(kl_knowledge **k, const char *case_path) {
  kl_case *c = NULL;
  int rc = case_path ? kl_case_load(&c, case_path, NULL) : 0;
  if (rc == 0) rc = kl_knowledge_load(k, c);
  kl_case_free(c);
  return rc;
}

static int search(int argc, char **argv) {
  kopts o = {0};
  if (parse(&o, NULL, argc, argv) != EXIT_OK) return EXIT_BAD_INPUT;
  kl_knowledge *k = NULL;
  kl_buf out = KL_BUF_INIT;
  kl_knowledge_query q = {
      o.terms[0] ? o.terms : NULL, o.rule, o.op, o.language, o.card, o.kind};
  int rc = load(&k, o.case_path);
  if (rc == 0) rc = kl_knowledge_search(&out, k, &q, o.json ? "json" : "text");
  kl_knowledge_free(k);
  return print_or_fail(rc, &out);
}

static int show(int argc, char **argv) {
  kopts o = {0};
  const char *id = NULL;
  if (parse(&o, &id, argc, argv) != EXIT_OK) return EXIT_BAD_INPUT;
  if (!id) return cli_usage_error("knowledge", "show: no id given");
  kl_knowledge *k = NULL;
  kl_buf out = KL_BUF_INIT;
  int rc = load(&k, o.case_path);
  if (rc == 0) rc = kl_knowledge_show(&out, k, id, o.json ? "json" : "text");
  kl_knowledge_free(k);
  return print_or_fail(rc, &out);
}

static int path(int argc, char **argv) {
  kopts o = {0};
  if (parse(&o, NULL, argc, argv) != EXIT_OK) return EXIT_BAD_INPUT;
  if (o.terms[0]) return cli_usage_error("knowledge", "path takes no words");
  kl_knowledge *k = NULL;
  kl_buf out = KL_BUF_INIT;
  int rc = load(&k, o.case_path);
  if (rc == 0) rc = kl_knowledge_path(&out, k);
  kl_knowledge_free(k);
  return print_or_fail(rc, &out);
}

int cmd_knowledge(int argc, char **argv) {
  if (argc < 2)
    return cli_usage_error("knowledge", "add, search, show or path");
  const char *sub = argv[1];
  if (strcmp(sub, "add") == 0) return add(argc, argv);
  if (strcmp(sub, "search") == 0) return search(argc, argv);
  if (strcmp(sub, "show") == 0) return show(argc, argv);
  if (strcmp(sub, "path") == 0) return path(argc, argv);
  return cli_usage_error("knowledge", "unknown '%s': add, search, show or path",
                         sub);
}
