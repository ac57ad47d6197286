/* `kl harness CASE [--candidate FILE] [--standalone|--plugin] [-o FILE]`:
 * write the generated harness source. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

int cmd_harness(int argc, char **argv) {
  const char *path = NULL, *candidate_path = NULL, *output = NULL;
  kl_harness_options opts = KL_HARNESS_OPTIONS_INIT;
  int form = opts.form;
  const cli_opt spec[] = {
      CLI_SET("--standalone", &form, KL_HARNESS_STANDALONE),
      CLI_SET("--plugin", &form, KL_HARNESS_PLUGIN),
      CLI_STRING("--candidate", NULL, CLI_VALUE_WORD, &candidate_path),
      CLI_STRING("-o", NULL, CLI_VALUE_WORD, &output),
      CLI_ARG("case", &path),
  };
  int i = 1, st = cli_parse("harness", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (st != EXIT_OK) return st;
  opts.form = (kl_harness_form)form;
  if (output && strcmp(output, "-")) opts.file_name = output; /* its line */
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
