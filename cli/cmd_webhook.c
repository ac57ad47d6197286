/* `kl webhook test`: one message to the configured webhook, and what came
 * back. The URL is a secret and is never printed. */
#include <string.h>

#include "cli.h"

int cmd_webhook(int argc, char **argv) {
  const char *path = NULL, *url = NULL, *format = NULL;
  if (argc < 2 || strcmp(argv[1], "test") != 0)
    return cli_usage_error("webhook", "the only action is 'test'");
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--url") == 0 || strcmp(a, "--format") == 0) {
      if (!val || !val[0])
        return cli_usage_error("webhook", "%s needs a value", a);
      i++;
      if (strcmp(a, "--url") == 0)
        url = val;
      else
        format = val;
    } else if (cli_positional("webhook", "case", &path, a) != EXIT_OK) {
      return EXIT_BAD_INPUT;
    }
  }
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
