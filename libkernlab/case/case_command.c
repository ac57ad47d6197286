/* The sections of a `backend: command` case: a benchmark that already
 * exists (a script, a server's own benchmark) is run as a program and its
 * metrics read from the JSON object it prints last.
 *
 *   kernel:
 *     source: baseline.py          # the baseline candidate file
 *     command: [python3, bench.py, "{candidate}"]   # argv, no shell
 *     build: [make, "SRC={candidate}"]              # optional, per candidate
 *     timeout_s: 120                                # per run
 *     time_cap_s: 60                                # all the runs
 *     network: loopback    # optional: a loopback of its own (a server and
 *                          # its benchmark inside); default none
 *   metrics:
 *     - { name: tokens_per_s, better: higher }
 *     - { name: p50_ms, better: lower, weight: 0.5 }
 *
 * `backend: serving` is such a case written for a model server: kernel.server
 * (argv, {candidate} as in command) starts the server, `serving:` says the
 * workload, and the command is kernlab's own
 *   {kl} serve-bench http://127.0.0.1:PORT [workload] --json
 *        --ready-timeout S --start -- <kernel.server>
 * run with a loopback of its own, so the server and the benchmark meet
 * inside the sandbox; metrics default to tokens_per_s (higher) and
 * ttft_ms.median (lower, weight 0.5), any field of kl serve-bench --json.
 *
 * There are no params, shapes or reference: the command is the
 * measurement and its own check. Each metric is a row of the report
 * (libkernlab/bench/command.c), the objective their weighted geometric
 * mean. */
#include <stdio.h>
#include <string.h>

#include "loader.h"

static char **read_argv(loader *ld, const ynode *n, const char *what,
                        size_t *count) {
  *count = 0;
  if (!kl__ld_want(ld, n, YNODE_SEQ, what)) return NULL;
  if (n->count == 0) {
    kl__ld_err(ld, n, "%s needs at least the program to run", what);
    return NULL;
  }
  char **argv = kl__calloc(n->count + 1, sizeof(char *));
  if (!argv) {
    ld->diags.oom = true;
    return NULL;
  }
  for (size_t i = 0; i < n->count; i++) {
    const char *s = kl__ld_scalar(ld, n->items[i], what);
    argv[i] = s ? kl__ld_dup_or_oom(ld, s) : NULL;
    if (!argv[i]) argv[i] = kl__ld_dup_or_oom(ld, "");
  }
  *count = n->count;
  return argv;
}

static void read_command_kernel(loader *ld, const ynode *k) {
  kl_case *c = ld->c;
  static const char *const keys[] = {"source",    "command",    "build",
                                     "timeout_s", "time_cap_s", "network"};
  static const char *const serving_keys[] = {"source", "server", "build",
                                             "timeout_s", "time_cap_s"};
  if (c->serving)
    kl__ld_check_keys(ld, k, serving_keys, KL_ARRAY_SIZE(serving_keys),
                      "kernel");
  else
    kl__ld_check_keys(ld, k, keys, KL_ARRAY_SIZE(keys), "kernel");
  kl__ld_require(ld, k, "source", "kernel");
  kl__ld_require(ld, k, c->serving ? "server" : "command", "kernel");
  const ynode *n;
  if ((n = kl__ld_map_get(k, "source")))
    c->kernel_path = kl__ld_case_file(ld, n, "kernel.source");
  if (!c->serving && (n = kl__ld_map_get(k, "command")))
    c->command = read_argv(ld, n, "kernel.command", &c->ncommand);
  if (c->serving && (n = kl__ld_map_get(k, "server")))
    c->server = read_argv(ld, n, "kernel.server", &c->nserver);
  if ((n = kl__ld_map_get(k, "build")))
    c->build = read_argv(ld, n, "kernel.build", &c->nbuild);
  c->command_timeout_s = 120;
  if ((n = kl__ld_map_get(k, "timeout_s")))
    kl__ld_real_number(ld, n, "kernel.timeout_s", 0.001, &c->command_timeout_s);
  c->command_time_cap_s = 60;
  if ((n = kl__ld_map_get(k, "time_cap_s")))
    kl__ld_real_number(ld, n, "kernel.time_cap_s", 0, &c->command_time_cap_s);
  const char *net;
  if ((n = kl__ld_map_get(k, "network")) &&
      (net = kl__ld_scalar(ld, n, "kernel.network"))) {
    if (strcmp(net, "loopback") == 0)
      c->command_loopback = true;
    else if (strcmp(net, "none") != 0)
      kl__ld_err(ld, n,
                 "kernel.network is none or loopback (a loopback of the "
                 "command's own: a server and its benchmark inside), not "
                 "'%s'",
                 net);
  }
}

static void read_metrics(loader *ld, const ynode *m) {
  kl_case *c = ld->c;
  if (!kl__ld_want(ld, m, YNODE_SEQ, "metrics")) return;
  if (m->count == 0 || m->count > 64) {
    kl__ld_err(ld, m, "metrics: one to 64 of the command's JSON fields");
    return;
  }
  if (!(c->metrics = kl__calloc(m->count, sizeof(*c->metrics)))) {
    ld->diags.oom = true;
    return;
  }
  for (size_t i = 0; i < m->count; i++) {
    const ynode *e = m->items[i];
    if (!kl__ld_want(ld, e, YNODE_MAP, "a metric")) continue;
    static const char *const keys[] = {"name", "better", "weight"};
    kl__ld_check_keys(ld, e, keys, KL_ARRAY_SIZE(keys), "a metric");
    kl__ld_require(ld, e, "name", "a metric");
    kl__ld_require(ld, e, "better", "a metric");
    case_metric *cm = &c->metrics[c->nmetrics++];
    cm->weight = 1;
    const ynode *n;
    if ((n = kl__ld_map_get(e, "name")) && kl__ld_scalar(ld, n, "name")) {
      for (size_t j = 0; j + 1 < c->nmetrics; j++)
        if (c->metrics[j].name && strcmp(c->metrics[j].name, n->value) == 0)
          kl__ld_err(ld, n, "metric '%s' is listed twice", n->value);
      cm->name = kl__ld_dup_or_oom(ld, n->value);
    }
    if ((n = kl__ld_map_get(e, "better")) && kl__ld_scalar(ld, n, "better")) {
      if (strcmp(n->value, "higher") == 0)
        cm->higher = true;
      else if (strcmp(n->value, "lower") != 0)
        kl__ld_err(ld, n, "better is 'higher' or 'lower', not '%s'", n->value);
    }
    if ((n = kl__ld_map_get(e, "weight")))
      kl__ld_real_number(ld, n, "weight", 0, &cm->weight);
  }
}

static void put_argv(kl_buf *b, const char *label, char *const *argv,
                     size_t n) {
  kl__buf_printf(b, "%-9s", label);
  for (size_t i = 0; i < n; i++)
    kl__buf_printf(b, " %s", argv[i]);
}

int kl_case_command_describe(kl_buf *out, const kl_case *c) {
  if (!out || !c || c->backend != KL_BACKEND_COMMAND) return 0;
  kl__buf_printf(out, "baseline  %s\n", c->kernel_path);
  if (c->serving) {
    put_argv(out, "server", c->server, c->nserver);
    kl__buf_puts(out, "\n");
  }
  put_argv(out, "command", c->command, c->ncommand);
  kl__buf_printf(out, " (each run within %g s, all within %g s)\n",
                 c->command_timeout_s, c->command_time_cap_s);
  if (c->command_loopback)
    kl__buf_puts(out, "network   a loopback of its own (127.0.0.1 inside the "
                      "sandbox; nothing else reachable)\n");
  if (c->build) {
    put_argv(out, "build", c->build, c->nbuild);
    kl__buf_puts(out, "\n");
  }
  kl__buf_puts(out, "metrics  ");
  for (size_t i = 0; i < c->nmetrics; i++) {
    kl__buf_printf(out, "%s %s (%s", i ? "," : "", c->metrics[i].name,
                   c->metrics[i].higher ? "higher" : "lower");
    if (c->metrics[i].weight != 1)
      kl__buf_printf(out, ", weight %g", c->metrics[i].weight);
    kl__buf_puts(out, ")");
  }
  return kl__buf_puts(out, "\n");
}

/* The workload of a serving case, as kl serve-bench's options. */
typedef struct workload {
  int64_t port, requests, concurrency, prompt_tokens, max_tokens, ready_s;
  const char *model;
  bool chat;
} workload;

static void read_workload(loader *ld, const ynode *m, workload *w) {
  static const char *const keys[] = {
      "port",       "requests", "concurrency", "prompt_tokens",
      "max_tokens", "model",    "chat",        "ready_timeout_s"};
  if (!kl__ld_want(ld, m, YNODE_MAP, "serving")) return;
  kl__ld_check_keys(ld, m, keys, KL_ARRAY_SIZE(keys), "serving");
  struct {
    const char *key;
    int64_t *out, min;
  } ints[] = {{"port", &w->port, 1},
              {"requests", &w->requests, 1},
              {"concurrency", &w->concurrency, 1},
              {"prompt_tokens", &w->prompt_tokens, 1},
              {"max_tokens", &w->max_tokens, 1},
              {"ready_timeout_s", &w->ready_s, 1}};
  const ynode *n;
  for (size_t i = 0; i < KL_ARRAY_SIZE(ints); i++)
    if ((n = kl__ld_map_get(m, ints[i].key))) {
      char what[48];
      snprintf(what, sizeof what, "serving.%s", ints[i].key);
      kl__ld_whole_number(ld, n, what, ints[i].min, ints[i].out);
    }
  if (w->port > 65535)
    kl__ld_err(ld, kl__ld_map_get(m, "port"), "serving.port is at most 65535");
  if ((n = kl__ld_map_get(m, "model")))
    w->model = kl__ld_scalar(ld, n, "serving.model");
  const char *chat;
  if ((n = kl__ld_map_get(m, "chat")) &&
      (chat = kl__ld_scalar(ld, n, "serving.chat"))) {
    if (strcmp(chat, "true") == 0)
      w->chat = true;
    else if (strcmp(chat, "false") != 0)
      kl__ld_err(ld, n, "serving.chat is true or false, not '%s'", chat);
  }
}

/* argv += one word (a copy); false when out of memory (said). */
static bool push(loader *ld, char ***argv, size_t *n, size_t *cap,
                 const char *word) {
  if (KL__GROW(*argv, *cap, *n + 2) < 0 ||
      !((*argv)[*n] = kl__ld_dup_or_oom(ld, word))) {
    ld->diags.oom = true;
    return false;
  }
  (*argv)[++*n] = NULL;
  return true;
}

/* kernel.command of a serving case: kl serve-bench starting the server. */
static void serving_command(loader *ld, const workload *w) {
  kl_case *c = ld->c;
  char **argv = NULL, num[32], url[64];
  size_t n = 0, cap = 0;
  snprintf(url, sizeof url, "http://127.0.0.1:%lld", (long long)w->port);
  const char *head[] = {"{kl}", "serve-bench", url, "--json"};
  bool ok = true;
  for (size_t i = 0; ok && i < KL_ARRAY_SIZE(head); i++)
    ok = push(ld, &argv, &n, &cap, head[i]);
  struct {
    const char *opt;
    int64_t v;
  } opts[] = {{"--requests", w->requests},
              {"--concurrency", w->concurrency},
              {"--prompt-tokens", w->prompt_tokens},
              {"--max-tokens", w->max_tokens},
              {"--ready-timeout", w->ready_s}};
  for (size_t i = 0; ok && i < KL_ARRAY_SIZE(opts); i++) {
    snprintf(num, sizeof num, "%lld", (long long)opts[i].v);
    ok = push(ld, &argv, &n, &cap, opts[i].opt) &&
         push(ld, &argv, &n, &cap, num);
  }
  if (ok && w->chat) ok = push(ld, &argv, &n, &cap, "--chat");
  if (ok && w->model)
    ok = push(ld, &argv, &n, &cap, "--model") &&
         push(ld, &argv, &n, &cap, w->model);
  if (ok)
    ok =
        push(ld, &argv, &n, &cap, "--start") && push(ld, &argv, &n, &cap, "--");
  for (size_t i = 0; ok && i < c->nserver; i++)
    ok = push(ld, &argv, &n, &cap, c->server[i]);
  c->command = argv;
  c->ncommand = n;
}

/* The default metrics of a serving case. */
static void serving_metrics(loader *ld) {
  kl_case *c = ld->c;
  if (!(c->metrics = kl__calloc(2, sizeof(*c->metrics)))) {
    ld->diags.oom = true;
    return;
  }
  c->metrics[0] =
      (case_metric){kl__ld_dup_or_oom(ld, "tokens_per_s"), true, 1.0};
  c->metrics[1] =
      (case_metric){kl__ld_dup_or_oom(ld, "ttft_ms.median"), false, 0.5};
  c->nmetrics = 2;
}

void kl__ld_read_command(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  static const char *const keys[] = {
      "kernlab", "name",      "description", "backend",  "kernel",
      "metrics", "budget",    "program",     "tunables", "llm",
      "webhook", "objective", "serving"};
  kl__ld_check_keys(ld, root, keys, KL_ARRAY_SIZE(keys) - !c->serving,
                    c->serving ? "a serving case" : "a command case");
  static const char *const required[] = {"kernlab", "name", "kernel"};
  for (size_t i = 0; i < KL_ARRAY_SIZE(required); i++)
    if (!kl__ld_map_get(root, required[i]))
      kl__ld_err_at(ld, 1, 1, "missing required key '%s'", required[i]);
  const ynode *n;
  if ((n = kl__ld_map_get(root, "metrics")))
    read_metrics(ld, n);
  else if (c->serving)
    serving_metrics(ld);
  else
    kl__ld_err_at(ld, 1, 1,
                  "missing required key 'metrics' (a command "
                  "case names the JSON fields it reads)");
  if ((n = kl__ld_map_get(root, "kernel")) &&
      kl__ld_want(ld, n, YNODE_MAP, "kernel"))
    read_command_kernel(ld, n);
  if (c->serving) {
    workload w = {8000, 32, 4, 128, 128, 60, NULL, false};
    if ((n = kl__ld_map_get(root, "serving"))) read_workload(ld, n, &w);
    c->command_loopback = true; /* the server and its client inside */
    if (c->server) serving_command(ld, &w);
  }
}
