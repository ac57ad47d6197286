/* `kl webhook test`: one message to the configured webhook, and what came
 * back. The URL is a secret and is never printed. */
#include <string.h>

#include "cli.h"
#include "opt.h"

int cmd_webhook(int argc, char **argv) {
  const char *path = NULL, *url = NULL, *format = NULL;
  if (argc < 2 || strcmp(argv[1], "test") != 0)
    return cli_usage_error("webhook", "the only action is 'test'");
  const cli_opt spec[] = {
      CLI_STRING("--url", NULL, CLI_VALUE_REQUIRED, &url),
      CLI_STRING("--format", NULL, CLI_VALUE_REQUIRED, &format),
      CLI_ARG("case", &path),
  };
  int i = 2, st = cli_parse("webhook", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (st != EXIT_OK) return st;
  kl_case *c = NULL;
  kl_webhook *w = NULL;
  int status = EXIT_OK;
  if (path && kl_case_load(&c, path, NULL) < 0) return cli_fail();
  if (url ? kl_webhook_create(&w, url, format) < 0
          : kl_webhook_load(&w, c) < 0) {
    status = cli_fail();
    goto done;
  }
  if (!w) {
    cli_error("no webhook configured: set KL_WEBHOOK_URL (and "
              "KL_WEBHOOK_FORMAT), or webhook: {url: ..., format: ...} in "
              "the case or the user config file");
    status = EXIT_BAD_INPUT;
    goto done;
  }
  if (format && !url) {
    cli_error("--format goes with --url (KL_WEBHOOK_FORMAT changes the "
              "configured one's)");
    status = EXIT_BAD_INPUT;
    goto done;
  }
  kl_webhook_message m = {"test", c ? kl_case_name(c) : NULL, NULL, 0, 0, 0, 0,
                          NULL};
  long http = 0;
  if (kl_webhook_send(w, &m, &http) < 0) {
    cli_print_error(kl_error_last());
    status = EXIT_FAILED;
  } else {
    printf("sent to %s (%s, from %s): HTTP %ld\n", kl_webhook_redacted(w),
           kl_webhook_format(w), kl_webhook_source(w), http);
  }
done:
  kl_webhook_free(w);
  kl_case_free(c);
  return status;
}
