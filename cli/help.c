/* `kl help` and `kl help VERB`: the verbs, exit statuses, environment. */
#include <string.h>

#include "cli.h"

bool cli_help_verb(FILE *out, const cli_verb *verbs, size_t nverbs,
                   const char *verb) {
  for (size_t i = 0; i < nverbs; i++) {
    const cli_verb *v = &verbs[i];
    if (strcmp(v->name, verb) != 0) continue;
    fprintf(out, "usage: %s\n\n%s: %s\n", v->usage, v->name, v->summary);
    if (v->help[0]) fprintf(out, "\n%s", v->help);
    return true;
  }
  return false;
}

int cli_help(const cli_verb *verbs, size_t nverbs, int argc, char **argv) {
  if (argc > 2) return cli_usage_error("help", "too many arguments");
  if (argc == 2) {
    if (cli_help_verb(stdout, verbs, nverbs, argv[1])) return EXIT_OK;
    cli_error("no help for '%s': no such command", argv[1]);
    return EXIT_BAD_INPUT;
  }
  unsigned f = kl_features();
  printf("kl %s: a lab for making GPU kernels faster without fooling "
         "yourself\n\nusage: kl <command> [options]\n\ncommands:\n",
         kl_version_string());
  for (size_t i = 0; i < nverbs; i++)
    printf("  %-8s %s\n", verbs[i].name, verbs[i].summary);
  printf("\n"
         "Every command that reports something takes --json: one JSON\n"
         "document on stdout and nothing else there. `kl help COMMAND` or\n"
         "`kl COMMAND --help` shows a command's options; `kl --version`\n"
         "prints the version.\n"
         "\n"
         "exit status:\n"
         "  0  success\n"
         "  1  runtime failure (toolchain, I/O, device)\n"
         "  2  bad input (usage, case, rules; a path that does not exist)\n"
         "  3  candidate rejected (incorrect, crashed, timed out, did not "
         "compile; kl bench\n"
         "     without a candidate: the case's own kernel failed its checks; "
         "one that does\n"
         "     not compile is bad input, 2)\n"
         "\n"
         "environment:\n"
         "  KERNLAB_SHARE_DIR  templates, rules and skills (default: next "
         "to the library)\n"
         "  KERNLAB_CACHE_DIR  compiled candidates (default: "
         "$XDG_CACHE_HOME/kernlab)\n"
         "  KERNLAB_WORKER     the kl-worker program (default: next to the "
         "library)\n"
         "  CC                 the host compiler when the case names none\n"
         "  NO_COLOR           never colour the output\n"
         "\n"
         "built with: cuda %s, cupti %s, http %s\n",
         f & KL_FEATURE_CUDA ? "yes" : "no",
         f & KL_FEATURE_CUPTI ? "yes" : "no",
         f & KL_FEATURE_HTTP ? "yes" : "no");
  return EXIT_OK;
}
