/* `kl report CASE` and `kl history CASE`: what a case's records say.
 * Both only read. A report written with -o replaces the file through a
 * temporary name, so a reader never sees half a page. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

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

int cmd_report(int argc, char **argv) {
  const char *path = NULL, *output = NULL;
  kl_history_report_options o = KL_HISTORY_REPORT_OPTIONS_INIT;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--run") == 0 || strcmp(a, "--format") == 0 ||
        strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
      if (!val || !val[0])
        return cli_usage_error("report", "%s needs a value", a);
      i++;
      if (strcmp(a, "--run") == 0)
        o.run = val;
      else if (strcmp(a, "--format") == 0) {
        if (strcmp(val, "md") && strcmp(val, "html"))
          return cli_usage_error("report", "--format is md or html, not '%s'",
                                 val);
        o.format = val;
      } else
        output = val;
    } else if (cli_positional("report", "case", &path, a) != EXIT_OK) {
      return EXIT_BAD_INPUT;
    }
  }
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

int cmd_history(int argc, char **argv) {
  const char *path = NULL, *run = NULL, *view = NULL;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--lineage") == 0 || strcmp(a, "--attempts") == 0 ||
               strcmp(a, "--improvements") == 0) {
      if (view && strcmp(view, a + 2) != 0)
        return cli_usage_error("history", "%s and --%s: give one view", a,
                               view);
      view = a + 2;
    } else if (strcmp(a, "--run") == 0) {
      if (++i >= argc) return cli_usage_error("history", "--run needs a value");
      run = argv[i];
    } else if (cli_positional("history", "case", &path, a) != EXIT_OK) {
      return EXIT_BAD_INPUT;
    }
  }
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
