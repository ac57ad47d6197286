/* Output helpers shared by the verbs: errors, colour, JSON strings. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

bool cli_color(FILE *f) {
  const char *no = getenv("NO_COLOR");
  if (no && no[0]) return false;
  const char *term = getenv("TERM");
  if (term && strcmp(term, "dumb") == 0) return false;
  return isatty(fileno(f));
}

void cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("kl: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void cli_print_error(const kl_error *e) {
  bool color = cli_color(stderr);
  if (e->path && e->line > 0) {
    /* GNU style: the location leads, so editors can jump to it. */
    size_t loc = strlen(e->message) - strlen(e->text);
    fprintf(stderr, "%s%.*s%s%s%s%s\n", color ? "\033[1m" : "", (int)loc,
            e->message, color ? "\033[0m" : "", color ? "\033[31m" : "",
            e->text, color ? "\033[0m" : "");
  } else {
    fprintf(stderr, "kl: %s\n", e->message);
  }
  if (e->snippet) fprintf(stderr, "%s\n", e->snippet);
}

int cli_exit_status(int code) {
  switch (code) {
  case KL_OK:
    return EXIT_OK;
  case KL_EINVALID:
  case KL_ENOTFOUND:
  case KL_EEXISTS:
    return EXIT_BAD_INPUT;
  case KL_EREJECTED:
  case KL_ECRASHED:
  case KL_ETIMEOUT:
    return EXIT_REJECTED;
  default:
    return EXIT_FAILED;
  }
}

int cli_path_status(int err, bool mid_work) {
  switch (err) {
  case ENOENT:
  case EISDIR:
  case ENOTDIR:
  case ELOOP:
  case ENAMETOOLONG:
    return EXIT_BAD_INPUT;
  case EACCES:
  case EPERM:
  case EROFS:
    return mid_work ? EXIT_FAILED : EXIT_BAD_INPUT;
  default:
    return EXIT_FAILED;
  }
}

int cli_fail(void) {
  const kl_error *e = kl_error_last();
  if (!e) {
    cli_error("failed with no error recorded");
    return EXIT_FAILED;
  }
  cli_print_error(e);
  return cli_exit_status(e->code);
}

void cli_json_string(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(out, "\\%c", *p);
    else if (*p == '\n')
      fputs("\\n", out);
    else if (*p == '\t')
      fputs("\\t", out);
    else if (*p < 0x20)
      fprintf(out, "\\u%04x", *p);
    else
      fputc(*p, out);
  }
  fputc('"', out);
}

void cli_format_bytes(char *buf, size_t n, double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    u++;
  }
  if (u == 0)
    snprintf(buf, n, "%.0f B", bytes);
  else
    snprintf(buf, n, "%.1f %s", bytes, units[u]);
}

/* The verbs, for the usage line of a usage error: main hands them over
 * (output.c never reaches for main's table). */
static const cli_verb *verbs;
static size_t nverbs;

void cli_set_verbs(const cli_verb *v, size_t n) {
  verbs = v;
  nverbs = n;
}

int cli_usage_error(const char *verb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("kl: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  for (size_t i = 0; i < nverbs; i++)
    if (strcmp(verbs[i].name, verb) == 0)
      fprintf(stderr, "\nusage: %s (see kl help %s)", verbs[i].usage, verb);
  fputc('\n', stderr);
  return EXIT_BAD_INPUT;
}

/* Read a whole file; prints the error and returns the exit status. */
int cli_read_file(char **out, const char *path) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    int status = cli_path_status(errno, false);
    cli_error("%s: cannot read: %s", path, strerror(errno));
    return status;
  }
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
    n += got;
    if (cap - n - 1 == 0) {
      char *more = realloc(buf, cap * 2);
      if (!more) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = more;
      cap *= 2;
    }
  }
  int failed = ferror(f);
  fclose(f);
  if (!buf || failed) {
    free(buf);
    cli_error("%s: %s", path,
              failed ? "read failed (is it a folder?)" : "out of memory");
    return failed ? EXIT_BAD_INPUT : EXIT_FAILED;
  }
  buf[n] = '\0';
  *out = buf;
  return 0;
}
