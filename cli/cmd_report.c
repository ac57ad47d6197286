/* `kl report CASE` and `kl history CASE`: what a case's records say.
 * Both only read. A report written with -o replaces the file through a
 * temporary name, so a reader never sees half a page. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"

/* The folder a report file will be in, for its relative links. */
static char *dir_of(const char *file) {
  const char *slash = strrchr(file, '/');
  if (!slash) return strdup(".");
  if (slash == file) return strdup("/");
  return strndup(file, (size_t)(slash - file));
}

static int write_replacing(const char *path, const kl_buf *text) {
  size_t n = strlen(path) + 16;
  char *tmp = malloc(n);
  if (!tmp) {
    cli_error("out of memory");
    return EXIT_FAILED;
  }
  snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wx");
  bool ok = f && fwrite(text->ptr, 1, text->size, f) == text->size;
  ok = f && fclose(f) == 0 && ok;
  if (ok && rename(tmp, path) != 0) ok = false;
  if (!ok) {
    cli_error("%s: cannot write the report", path);
    unlink(tmp);
  }
  free(tmp);
  return ok ? EXIT_OK : EXIT_FAILED;
}

/* --format md|html (opt.h's cli_opt_fn) */
static int format_arg(const char *verb, const char *opt, const char *val,
                      void *target) {
  (void)opt;
  if (strcmp(val, "md") && strcmp(val, "html"))
    return cli_usage_error(verb, "--format is md or html, not '%s'", val);
  *(const char **)target = val;
  return EXIT_OK;
}

int cmd_report(int argc, char **argv) {
  const char *path = NULL, *output = NULL;
  kl_history_report_options o = KL_HISTORY_REPORT_OPTIONS_INIT;
  const cli_opt spec[] = {
      CLI_STRING("--run", NULL, CLI_VALUE_REQUIRED, &o.run),
      CLI_CALL("--format", CLI_VALUE_REQUIRED, format_arg, &o.format),
      CLI_STRING("--output", "-o", CLI_VALUE_REQUIRED, &output),
      CLI_ARG("case", &path),
  };
  int i = 1, st = cli_parse("report", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (st != EXIT_OK) return st;
  if (!path) return cli_usage_error("report", "no case given");
  if (!o.format) { /* html for a file (but x.md), markdown for a terminal */
    size_t n = output ? strlen(output) : 0;
    o.format = output && !(n > 3 && strcmp(output + n - 3, ".md") == 0) ? "html"
                                                                        : "md";
  }
  kl_case *c = NULL;
  kl_buf out = KL_BUF_INIT;
  char *links = output ? dir_of(output) : NULL;
  int status = EXIT_OK;
  if (output && !links) {
    cli_error("out of memory");
    return EXIT_FAILED;
  }
  char cwd[4096];
  o.links_from = links ? links : getcwd(cwd, sizeof(cwd));
  if (kl_case_load(&c, path, NULL) < 0 || kl_history_report(&out, c, &o) < 0)
    status = cli_fail();
  else if (output)
    status = write_replacing(output, &out);
  else
    fwrite(out.ptr, 1, out.size, stdout);
  if (status == EXIT_OK && output) fprintf(stderr, "kl: wrote %s\n", output);
  kl_buf_dispose(&out);
  kl_case_free(c);
  free(links);
  return status;
}

/* --lineage, --attempts, --improvements: the view, one of them (opt.h's
 * cli_opt_fn) */
static int view_arg(const char *verb, const char *opt, const char *val,
                    void *target) {
  (void)val;
  const char **view = target;
  if (*view && strcmp(*view, opt + 2) != 0)
    return cli_usage_error(verb, "%s and --%s: give one view", opt, *view);
  *view = opt + 2;
  return EXIT_OK;
}

int cmd_history(int argc, char **argv) {
  const char *path = NULL, *run = NULL, *view = NULL;
  bool json = false;
  const cli_opt spec[] = {
      CLI_FLAG("--json", &json),
      CLI_CALL("--lineage", CLI_VALUE_NONE, view_arg, &view),
      CLI_CALL("--attempts", CLI_VALUE_NONE, view_arg, &view),
      CLI_CALL("--improvements", CLI_VALUE_NONE, view_arg, &view),
      CLI_STRING("--run", NULL, CLI_VALUE_WORD, &run),
      CLI_ARG("case", &path),
  };
  int i = 1, st = cli_parse("history", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (st != EXIT_OK) return st;
  if (!path) return cli_usage_error("history", "no case given");
  if (run && !view)
    return cli_usage_error("history",
                           "--run goes with --lineage, --attempts or "
                           "--improvements");
  kl_case *c = NULL;
  kl_buf out = KL_BUF_INIT;
  int status = EXIT_OK;
  const char *format = json ? "json" : "text";
  int rc = kl_case_load(&c, path, NULL);
  if (rc == 0)
    rc = !view ? kl_history(&out, c, format)
         : strcmp(view, "lineage") == 0
             ? kl_history_lineage(&out, c, run, format)
             : kl_history_ledger(&out, c, view, run, format);
  if (rc < 0)
    status = cli_fail();
  else
    fwrite(out.ptr, 1, out.size, stdout);
  kl_buf_dispose(&out);
  kl_case_free(c);
  return status;
}
