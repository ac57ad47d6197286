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
 * There are no params, shapes or reference: the command is the
 * measurement and its own check. Each metric is a row of the report
 * (libkernlab/bench/command.c), the objective their weighted geometric
 * mean. */
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
  kl__ld_check_keys(ld, k, keys, KL_ARRAY_SIZE(keys), "kernel");
  kl__ld_require(ld, k, "source", "kernel");
  kl__ld_require(ld, k, "command", "kernel");
  const ynode *n;
  if ((n = kl__ld_map_get(k, "source")))
    c->kernel_path = kl__ld_case_file(ld, n, "kernel.source");
  if ((n = kl__ld_map_get(k, "command")))
    c->command = read_argv(ld, n, "kernel.command", &c->ncommand);
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

void kl__ld_read_command(loader *ld, const ynode *root) {
  static const char *const keys[] = {
      "kernlab", "name",    "description", "backend", "kernel",  "metrics",
      "budget",  "program", "tunables",    "llm",     "webhook", "objective"};
  kl__ld_check_keys(ld, root, keys, KL_ARRAY_SIZE(keys), "a command case");
  static const char *const required[] = {"kernlab", "name", "kernel"};
  for (size_t i = 0; i < KL_ARRAY_SIZE(required); i++)
    if (!kl__ld_map_get(root, required[i]))
      kl__ld_err_at(ld, 1, 1, "missing required key '%s'", required[i]);
  const ynode *n;
  if (!(n = kl__ld_map_get(root, "metrics")))
    kl__ld_err_at(ld, 1, 1,
                  "missing required key 'metrics' (a command "
                  "case names the JSON fields it reads)");
  else
    read_metrics(ld, n);
  if ((n = kl__ld_map_get(root, "kernel")) &&
      kl__ld_want(ld, n, YNODE_MAP, "kernel"))
    read_command_kernel(ld, n);
}
