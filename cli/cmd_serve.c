/* `kl serve-bench URL`: a serving benchmark against an OpenAI-compatible
 * server (kernlab/serve.h). Exit 0 when every request finished, 1 when
 * some failed (the result, with what the others measured, is printed
 * either way), 2 for bad usage.
 *
 * `--start -- ARGV...` starts the server first (its own process group,
 * its output to our stderr), waits until URL's port accepts a connection
 * (--ready-timeout S, default 60; a server that exits first is an error),
 * benchmarks it and stops it (SIGTERM, then SIGKILL): what a `backend:
 * serving` case runs once per measurement, inside its sandbox. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"
#include "kernlab/serve.h"

/* URL's host and port ("http://127.0.0.1:8000/v1" -> 127.0.0.1, 8000). */
static bool host_port(const char *url, char *host, size_t cap, char *port,
                      size_t pcap) {
  const char *p = strstr(url, "://");
  p = p ? p + 3 : url;
  size_t n = strcspn(p, ":/");
  if (n == 0 || n >= cap) return false;
  memcpy(host, p, n);
  host[n] = '\0';
  if (p[n] != ':') {
    snprintf(port, pcap, "%s", strncmp(url, "https", 5) == 0 ? "443" : "80");
    return true;
  }
  size_t m = strspn(p + n + 1, "0123456789");
  if (m == 0 || m >= pcap) return false;
  memcpy(port, p + n + 1, m);
  port[m] = '\0';
  return true;
}

static bool accepts(const char *host, const char *port) {
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, port, &hints, &res) != 0) return false;
  bool ok = false;
  for (struct addrinfo *a = res; a && !ok; a = a->ai_next) {
    int s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (s < 0) continue;
    ok = connect(s, a->ai_addr, a->ai_addrlen) == 0;
    close(s);
  }
  freeaddrinfo(res);
  return ok;
}

static void stop(pid_t pid) {
  int st;
  kill(-pid, SIGTERM);
  for (int i = 0; i < 50; i++) { /* 5 s to go */
    if (waitpid(pid, &st, WNOHANG) == pid) return;
    nanosleep(&(struct timespec){0, 100000000}, NULL);
  }
  kill(-pid, SIGKILL);
  waitpid(pid, &st, 0);
}

/* Start argv and wait for url's port; the server's pid, or -1 (said). */
static pid_t start_server(char **argv, const char *url, int ready_s) {
  char host[256], port[16];
  if (!host_port(url, host, sizeof host, port, sizeof port)) {
    cli_error("serve-bench: cannot tell the host and port of '%s'", url);
    return -1;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    cli_error("serve-bench: fork: %s", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(STDERR_FILENO, STDOUT_FILENO); /* our stdout is the result's */
    execvp(argv[0], argv);
    fprintf(stderr, "kl: serve-bench: cannot run '%s': %s\n", argv[0],
            strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  for (int i = 0; i < ready_s * 20; i++) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      cli_error("serve-bench: the server exited (%s %d) before %s:%s "
                "accepted a connection",
                WIFEXITED(st) ? "status" : "signal",
                WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), host, port);
      return -1;
    }
    if (accepts(host, port)) return pid;
    nanosleep(&(struct timespec){0, 50000000}, NULL);
  }
  cli_error("serve-bench: %s:%s accepted no connection within %d s", host, port,
            ready_s);
  stop(pid);
  return -1;
}

static int whole(const char *verb, const char *opt, const char *val, int *out) {
  char *end;
  long v = val ? strtol(val, &end, 10) : -1;
  if (!val || *end || v < 1 || v > 100000000)
    return cli_usage_error(verb, "%s wants a whole number from 1", opt);
  *out = (int)v;
  return EXIT_OK;
}

/* The options' meanings (opt.h's cli_opt_fn): --requests and the others
 * that count */
static int whole_arg(const char *verb, const char *opt, const char *val,
                     void *target) {
  return whole(verb, opt, val, target);
}

/* --model, --api-key-env, --prompts: the next word. Given last, with no
 * word after it, the option is reported unknown (as it always was). */
static int name_arg(const char *verb, const char *opt, const char *val,
                    void *target) {
  if (!val) return cli_usage_error(verb, "unknown option '%s'", opt);
  *(const char **)target = val;
  return EXIT_OK;
}

int cmd_serve_bench(int argc, char **argv) {
  kl_serve_options o = KL_SERVE_OPTIONS_INIT;
  bool json = false;
  int ready_s = 60;
  char **server = NULL;
  const cli_opt spec[] = {
      CLI_STOP("--start"), /* the rest is the server's argv */
      CLI_CALL("--ready-timeout", CLI_VALUE_OPTIONAL, whole_arg, &ready_s),
      CLI_FLAG("--json", &json),
      CLI_SET("--chat", &o.chat, 1),
      CLI_CALL("--model", CLI_VALUE_OPTIONAL, name_arg, &o.model),
      CLI_CALL("--api-key-env", CLI_VALUE_OPTIONAL, name_arg, &o.api_key_env),
      CLI_CALL("--prompts", CLI_VALUE_OPTIONAL, name_arg, &o.prompts),
      CLI_CALL("--requests", CLI_VALUE_OPTIONAL, whole_arg, &o.requests),
      CLI_CALL("--concurrency", CLI_VALUE_OPTIONAL, whole_arg, &o.concurrency),
      CLI_CALL("--prompt-tokens", CLI_VALUE_OPTIONAL, whole_arg,
               &o.prompt_tokens),
      CLI_CALL("--max-tokens", CLI_VALUE_OPTIONAL, whole_arg, &o.max_tokens),
      CLI_CALL("--timeout-ms", CLI_VALUE_OPTIONAL, whole_arg, &o.timeout_ms),
      CLI_CALL("--seed", CLI_VALUE_OPTIONAL, cli_seed_arg, &o.seed),
      CLI_ARG("URL", &o.url),
  };
  int i = 1,
      status = cli_parse("serve-bench", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (status != EXIT_OK) return status;
  if (i < argc) { /* --start */
    if (i + 2 >= argc || strcmp(argv[i + 1], "--") != 0)
      return cli_usage_error("serve-bench",
                             "--start wants -- and the server's command");
    server = argv + i + 2;
  }
  if (!o.url) return cli_usage_error("serve-bench", "needs the server's URL");
  pid_t pid = server ? start_server(server, o.url, ready_s) : 0;
  if (pid < 0) return EXIT_FAILED;
  kl_serve_result *r = NULL;
  int brc = kl_serve_bench(&r, &o);
  if (pid > 0) stop(pid);
  if (brc < 0) return cli_fail();
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
