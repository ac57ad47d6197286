/* `kl serve-bench URL`: a serving benchmark against an OpenAI-compatible
 * server (kernlab/serve.h). Exit 0 when every request finished, 1 when
 * some failed (the result, with what the others measured, is printed
 * either way), 2 for bad usage. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kernlab/serve.h"

static int whole(const char *verb, const char *opt, const char *val, int *out) {
  char *end;
  long v = val ? strtol(val, &end, 10) : -1;
  if (!val || *end || v < 1 || v > 100000000)
    return cli_usage_error(verb, "%s wants a whole number from 1", opt);
  *out = (int)v;
  return EXIT_OK;
}

int cmd_serve_bench(int argc, char **argv) {
  kl_serve_options o = KL_SERVE_OPTIONS_INIT;
  bool json = false;
  int status = EXIT_OK;
  for (int i = 1; i < argc && status == EXIT_OK; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    int seed = 0;
    if (strcmp(a, "--json") == 0)
      json = true;
    else if (strcmp(a, "--chat") == 0)
      o.chat = 1;
    else if (strcmp(a, "--model") == 0 && val)
      o.model = val, i++;
    else if (strcmp(a, "--api-key-env") == 0 && val)
      o.api_key_env = val, i++;
    else if (strcmp(a, "--requests") == 0)
      status = whole("serve-bench", a, val, &o.requests), i++;
    else if (strcmp(a, "--concurrency") == 0)
      status = whole("serve-bench", a, val, &o.concurrency), i++;
    else if (strcmp(a, "--prompt-tokens") == 0)
      status = whole("serve-bench", a, val, &o.prompt_tokens), i++;
    else if (strcmp(a, "--max-tokens") == 0)
      status = whole("serve-bench", a, val, &o.max_tokens), i++;
    else if (strcmp(a, "--timeout-ms") == 0)
      status = whole("serve-bench", a, val, &o.timeout_ms), i++;
    else if (strcmp(a, "--seed") == 0) {
      status = whole("serve-bench", a, val, &seed), i++;
      o.seed = (uint64_t)seed;
    } else if (cli_positional("serve-bench", "URL", &o.url, a) != EXIT_OK)
      status = EXIT_BAD_INPUT;
  }
  if (status != EXIT_OK) return status;
  if (!o.url) return cli_usage_error("serve-bench", "needs the server's URL");
  kl_serve_result *r = NULL;
  if (kl_serve_bench(&r, &o) < 0) return cli_fail();
  kl_buf b = KL_BUF_INIT;
  int rc = json ? kl_serve_result_json(&b, r) : kl_serve_result_text(&b, r);
  if (rc == 0) fputs(b.ptr, stdout);
  kl_buf_dispose(&b);
  if (kl_serve_result_errors(r))
    cli_error("%d of %d requests failed: %s", kl_serve_result_errors(r),
              kl_serve_result_errors(r) + kl_serve_result_ok(r),
              kl_serve_result_error(r));
  status = rc < 0                      ? cli_fail()
           : kl_serve_result_errors(r) ? EXIT_FAILED
                                       : EXIT_OK;
  kl_serve_result_free(r);
  return status;
}
