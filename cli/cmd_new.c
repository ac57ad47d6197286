/* `kl new NAME [--template T] [--dir DIR] [--json]`: stamp a case. */
#include <string.h>

#include "cli.h"

int cmd_new(int argc, char **argv) {
  kl_case_new_options opts = KL_CASE_NEW_OPTIONS_INIT;
  const char *name = NULL;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--template") == 0 || strcmp(a, "--dir") == 0) {
      if (i + 1 >= argc) return cli_usage_error("new", "%s needs a value", a);
      if (a[2] == 't')
        opts.template_name = argv[++i];
      else
        opts.dir = argv[++i];
    } else if (strncmp(a, "--template=", 11) == 0) {
      opts.template_name = a + 11;
    } else if (strncmp(a, "--dir=", 6) == 0) {
      opts.dir = a + 6;
    } else if (cli_positional("new", "name", &name, a) != EXIT_OK) {
      return EXIT_BAD_INPUT;
    }
  }
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
