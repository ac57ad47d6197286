/* `kl harness CASE [--candidate FILE] [--standalone|--plugin] [-o FILE]`:
 * write the generated harness source. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_harness(int argc, char **argv) {
  const char *path = NULL, *candidate_path = NULL, *output = NULL;
  kl_harness_options opts = KL_HARNESS_OPTIONS_INIT;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--standalone") == 0)
      opts.form = KL_HARNESS_STANDALONE;
    else if (strcmp(a, "--plugin") == 0)
      opts.form = KL_HARNESS_PLUGIN;
    else if (strcmp(a, "--candidate") == 0 || strcmp(a, "-o") == 0) {
      if (i + 1 >= argc)
        return cli_usage_error("harness", "%s needs a value", a);
      *(a[1] == 'o' ? &output : &candidate_path) = argv[++i];
    } else if (cli_positional("harness", "case", &path, a) != EXIT_OK)
      return EXIT_BAD_INPUT;
  }
  if (!path) return cli_usage_error("harness", "no case given");
  kl_case *c = NULL;
  char *candidate = NULL;
  kl_buf src = KL_BUF_INIT;
  int status = EXIT_OK;
  if (kl_case_load(&c, path, NULL) < 0) {
    status = cli_fail();
    goto done;
  }
  if (candidate_path) {
    int rc = cli_read_file(&candidate, candidate_path);
    if (rc) {
      status = rc;
      goto done;
    }
    const char *slash = strrchr(candidate_path, '/');
    opts.candidate_name = slash ? slash + 1 : candidate_path;
  }
  if (kl_harness_generate(&src, c, candidate, &opts) < 0) {
    status = cli_fail();
    goto done;
  }
  FILE *f = output && strcmp(output, "-") ? fopen(output, "w") : stdout;
  if (!f) {
    status = cli_path_status(errno, true);
    cli_error("%s: cannot write: %m", output);
    goto done;
  }
  if (fwrite(src.ptr, 1, src.size, f) != src.size ||
      (f != stdout && fclose(f))) {
    cli_error("%s: write failed", output ? output : "stdout");
    status = EXIT_FAILED;
  }
done:
  free(candidate);
  kl_buf_dispose(&src);
  kl_case_free(c);
  return status;
}
