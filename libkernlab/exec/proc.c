/* The programs the remote backends run: a command with input and its own
 * words on failure, tar, and quoting a word for a shell. */
#include <string.h>

#include "exec_internal.h"

int kl__exec_run(kl__run_result *res, const char *const *argv,
                 const char *input, size_t input_len, int timeout_ms,
                 size_t max_output) {
  kl_buf errors = KL_BUF_INIT;
  kl__run_extras io = {input, input_len, &errors, NULL, false, NULL};
  int rc = kl__run_io(res, argv, NULL, timeout_ms, max_output, &io);
  if (rc == 0 && res->exit_code != 0) {
    kl_buf_dispose(&res->output); /* its own words instead */
    res->output = errors;
    memset(&errors, 0, sizeof(errors));
  }
  kl_buf_dispose(&errors);
  return rc;
}

int kl__exec_tar(kl__run_result *res, const char *const *argv,
                 const char *input, size_t input_len) {
  int rc = kl__exec_run(res, argv, input, input_len, 120000, 512u << 20);
  if (rc == 0 && res->exit_code != 0)
    rc = kl__error(KL_EIO, KL_DOMAIN_OS, "tar failed (exit %d): %s",
                   res->exit_code, res->output.ptr ? res->output.ptr : "");
  return rc;
}

int kl__sh_quote(kl_buf *b, const char *word) {
  kl__buf_putc(b, '\'');
  for (const char *p = word; *p; p++)
    if (*p == '\'')
      kl__buf_puts(b, "'\\''");
    else
      kl__buf_putc(b, *p);
  kl__buf_putc(b, '\'');
  return kl__buf_status(b);
}
