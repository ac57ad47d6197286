/* `kl new NAME [--template T] [--dir DIR] [--json]`: stamp a case. */
#include <string.h>

#include "cli.h"
#include "opt.h"

int cmd_new(int argc, char **argv) {
  kl_case_new_options opts = KL_CASE_NEW_OPTIONS_INIT;
  const char *name = NULL;
  bool json = false;
  const cli_opt spec[] = {
      CLI_FLAG("--json", &json),
      CLI_STRING("--template", NULL, CLI_VALUE_WORD, &opts.template_name),
      CLI_STRING("--dir", NULL, CLI_VALUE_WORD, &opts.dir),
      CLI_STRING("--template=", NULL, CLI_VALUE_GLUED, &opts.template_name),
      CLI_STRING("--dir=", NULL, CLI_VALUE_GLUED, &opts.dir),
      CLI_ARG("name", &name),
  };
  int i = 1, st = cli_parse("new", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (st != EXIT_OK) return st;
  if (!name) return cli_usage_error("new", "no case name given");
  kl_buf path = KL_BUF_INIT;
  if (kl_case_new(&path, name, &opts) < 0) return cli_fail();
  const char *tname = opts.template_name ? opts.template_name : "host";
  if (json) {
    printf("{\"path\":");
    cli_json_string(stdout, path.ptr);
    printf(",\"template\":");
    cli_json_string(stdout, tname);
    printf("}\n");
  } else {
    printf("created %s from template %s\nnext: edit it, then kl check %s\n",
           path.ptr, tname, path.ptr);
  }
  kl_buf_dispose(&path);
  return EXIT_OK;
}
