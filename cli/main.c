/* kl: the command-line frontend of libkernlab.
 *
 * `kl <verb> [options]`. Each verb lives in its own file and calls only the
 * public API; this file dispatches and holds the verb table. */
#include <string.h>

#include "cli.h"

const cli_verb cli_verbs[] = {
    {"check", cmd_check, "validate a case and summarise it",
     "kl check CASE [--json]",
     "CASE is a case folder or its case.yaml. Prints the kernel, the params,\n"
     "every shape with its evaluated sizes and launch geometry, and exits 0;\n"
     "or prints every error as path:line:column: message and exits 2.\n"
     "\n"
     "  --json   one JSON document on stdout: {\"ok\": true, \"case\": {...}}\n"
     "           or {\"ok\": false, \"errors\": [...]}\n"},
    {"new", cmd_new, "stamp a new case folder from a template",
     "kl new NAME [--template host|cuda|DIR] [--dir DIR] [--json]",
     "Creates DIR/NAME (DIR defaults to the current folder) from a template\n"
     "in kernlab's share folder; `kl check DIR/NAME` accepts it as is.\n"
     "Never overwrites: an existing folder is an error (exit 2).\n"
     "\n"
     "  --template T  host (default): a C kernel run on the CPU;\n"
     "                cuda: a CUDA kernel; or a path to a template folder\n"
     "  --dir DIR     where to create the case\n"
     "  --json        print {\"path\": ..., \"template\": ...}\n"},
    {"help", cmd_help, "show help for kl or a verb", "kl help [VERB]", ""},
};
const size_t cli_nverbs = sizeof(cli_verbs) / sizeof(cli_verbs[0]);

static const cli_verb *find_verb(const char *name) {
  for (size_t i = 0; i < cli_nverbs; i++)
    if (strcmp(cli_verbs[i].name, name) == 0)
      return &cli_verbs[i];
  return NULL;
}

int main(int argc, char **argv) {
  if (kl_version_number() != KL_VERSION_NUMBER) {
    cli_error("library version %s does not match kl %s",
              kl_version_string(), KL_VERSION);
    return EXIT_FAILED;
  }
  if (argc < 2)
    return cmd_help(1, argv);
  const char *verb = argv[1];
  if (strcmp(verb, "--version") == 0 || strcmp(verb, "-V") == 0) {
    printf("kl %s\n", kl_version_string());
    return EXIT_OK;
  }
  if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0)
    return cmd_help(1, argv);
  const cli_verb *v = find_verb(verb);
  if (!v) {
    const char *best = NULL;
    size_t best_len = 0;
    /* A cheap "did you mean": the verb sharing the longest prefix. */
    for (size_t i = 0; i < cli_nverbs; i++) {
      size_t n = 0;
      while (verb[n] && verb[n] == cli_verbs[i].name[n])
        n++;
      if (n > best_len) {
        best_len = n;
        best = cli_verbs[i].name;
      }
    }
    if (best && best_len >= 2)
      cli_error("unknown command '%s'; did you mean '%s'? (see kl help)",
                verb, best);
    else
      cli_error("unknown command '%s' (see kl help)", verb);
    return EXIT_BAD_INPUT;
  }
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      cli_help_verb(stdout, v->name);
      return EXIT_OK;
    }
  return v->run(argc - 1, argv + 1);
}
