/* `kl propose CASE`: an outside agent's side of `kl run --proposer agent`.
 * --candidate FILE puts a kernel into the case's inbox (kl_agent_propose),
 * --stop tells the run no more will come, --verdict NAME asks what the run
 * decided for an earlier proposal; --wait S waits up to S seconds for that
 * verdict (after --candidate too). The run decides and records; this only
 * hands over and reads back. Exit 0 when put, or decided ACCEPTED or
 * REJECTED; 3 when decided against the candidate (INCORRECT, CRASHED,
 * TIMEOUT, COMPILE_ERROR, CHEAT); 1 when not decided within --wait. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static int print_verdict(const kl_case *c, const char *name, int wait_s,
                         bool json) {
  kl_buf b = KL_BUF_INIT;
  int rc = kl_agent_verdict(&b, c, name, wait_s * 1000);
  if (rc == KL_ETIMEOUT) {
    cli_print_error(kl_error_last());
    if (json) {
      printf("{\"name\":");
      cli_json_string(stdout, name);
      printf(",\"verdict\":null,\"pending\":");
      cli_json_string(stdout, kl_error_last()->message);
      printf("}\n");
    }
    return EXIT_FAILED;
  }
  if (rc < 0) return cli_fail();
  const char *v = strstr(b.ptr, "\"verdict\":\"");
  v = v ? v + strlen("\"verdict\":\"") : "";
  bool kept =
      strncmp(v, "ACCEPTED\"", 9) == 0 || strncmp(v, "REJECTED\"", 9) == 0;
  if (json) {
    printf("%s\n", b.ptr);
  } else {
    printf("%s: %.*s\n", name, (int)strcspn(v, "\""), v);
  }
  kl_buf_dispose(&b);
  return kept ? EXIT_OK : EXIT_REJECTED;
}

/* --wait S (opt.h's cli_opt_fn) */
static int wait_arg(const char *verb, const char *opt, const char *val,
                    void *target) {
  (void)opt;
  char *end = NULL;
  errno = 0;
  long v = strtol(val, &end, 10);
  if (errno || *end || v < 0 || v > 86400)
    return cli_usage_error(verb,
                           "--wait takes seconds from 0 to 86400, "
                           "not '%s'",
                           val);
  *(int *)target = (int)v;
  return EXIT_OK;
}

int cmd_propose(int argc, char **argv) {
  const char *path = NULL, *candidate = NULL, *memo = NULL, *verdict = NULL;
  bool json = false, stop = false;
  int wait_s = -1;
  const cli_opt spec[] = {
      CLI_FLAG("--json", &json),
      CLI_FLAG("--stop", &stop),
      CLI_STRING("--candidate", NULL, CLI_VALUE_REQUIRED, &candidate),
      CLI_STRING("--memo", NULL, CLI_VALUE_REQUIRED, &memo),
      CLI_STRING("--verdict", NULL, CLI_VALUE_REQUIRED, &verdict),
      CLI_CALL("--wait", CLI_VALUE_REQUIRED, wait_arg, &wait_s),
      CLI_ARG("case", &path),
  };
  int i = 1, st = cli_parse("propose", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (st != EXIT_OK) return st;
  if (!path) return cli_usage_error("propose", "no case given");
  if (!!candidate + stop + !!verdict != 1)
    return cli_usage_error("propose",
                           "give one of --candidate FILE, --stop, --verdict "
                           "NAME");
  kl_case *c = NULL;
  char *source = NULL;
  kl_buf name = KL_BUF_INIT;
  int status = EXIT_OK;
  if (kl_case_load(&c, path, NULL) < 0) {
    status = cli_fail();
    goto done;
  }
  if (stop) {
    if (kl_agent_stop(c) < 0)
      status = cli_fail();
    else if (json)
      printf("{\"stop\":true}\n");
    else
      printf("the agent run of %s stops at its next proposal\n",
             kl_case_name(c));
    goto done;
  }
  if (verdict) {
    status = print_verdict(c, verdict, wait_s < 0 ? 0 : wait_s, json);
    goto done;
  }
  if ((status = cli_read_file(&source, candidate)) != EXIT_OK) goto done;
  if (kl_agent_propose(&name, c, source, memo) < 0) {
    status = cli_fail();
    goto done;
  }
  if (wait_s >= 0) {
    status = print_verdict(c, name.ptr, wait_s, json);
  } else if (json) {
    printf("{\"name\":");
    cli_json_string(stdout, name.ptr);
    printf(",\"verdict\":null}\n");
  } else {
    printf("%s\n", name.ptr);
  }
done:
  kl_buf_dispose(&name);
  free(source);
  kl_case_free(c);
  return status;
}
