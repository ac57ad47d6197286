/* `kl run CASE`: the optimization loop, with a live view; `kl best CASE`:
 * the best kernel recorded so far.
 *
 * The live view prints one line per finished iteration (verdict, speedup
 * against the best, best against the baseline, budget left); on a terminal
 * a status line shows what is running now (down to the evaluation's step:
 * build, worker, load, checks, timing, profile) and is rewritten in place. With
 * --json only the summary document goes to stdout. Ctrl-C stops the run
 * after the current step; `--resume RUN` continues it. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"

#define MAX_FILES 32
#define MAX_PASSED 32 /* --ssh-option, --sbatch-option */

static volatile int stop_flag;
static void on_sigint(int sig) {
  (void)sig;
  stop_flag = 1;
}

typedef struct view {
  bool tty, quiet, events;
} view;

static void live(const kl_run_event *e, void *payload) {
  view *v = payload;
  if (v->events) cli_events_run(e);
  if (v->quiet) return;
  if (strcmp(e->phase, "done") != 0) {
    char phase[40];
    snprintf(phase, sizeof(phase), "%s%s%s", e->phase, e->step ? ": " : "",
             e->step ? e->step : "");
    if (v->tty)
      fprintf(stderr, "\r\033[K  iter %3d  %-8s %-17s %.50s", e->iteration,
              e->proposer ? e->proposer : "", phase, e->what ? e->what : "");
    return;
  }
  if (v->tty) fputs("\r\033[K", stderr);
  char sp[32] = "";
  if (e->speedup > 0) snprintf(sp, sizeof(sp), "x%.3f", e->speedup);
  printf("iter %3d  %-8s %-13s %-9s best x%-7.3f left %3d  %6.1fs  %.60s\n",
         e->iteration, e->proposer ? e->proposer : "",
         kl_outcome_name(e->outcome), sp, e->best_speedup, e->iterations_left,
         e->wall_s, e->what ? e->what : "");
  if (e->reason && e->outcome != KL_OUTCOME_ACCEPTED &&
      e->outcome != KL_OUTCOME_BASELINE)
    printf("          %.150s\n", e->reason);
  fflush(stdout);
}

static int number(double *out, const char *verb, const char *opt,
                  const char *val) {
  char *end;
  double d = strtod(val, &end);
  if (*end || d < 0)
    return cli_usage_error(verb, "%s wants a number >= 0, not '%s'", opt, val);
  *out = d;
  return EXIT_OK;
}

/* The options' meanings (opt.h's cli_opt_fn): --iterations, --patience */
static int count_arg(const char *verb, const char *opt, const char *val,
                     void *target) {
  double d = 0;
  int st = number(&d, verb, opt, val);
  if (st == EXIT_OK) *(int64_t *)target = (int64_t)d;
  return st;
}

/* --max-wall, --max-worker-seconds, --max-usd */
static int real_arg(const char *verb, const char *opt, const char *val,
                    void *target) {
  return number(target, verb, opt, val);
}

/* --time-cap, --timeout */
static int ms_arg(const char *verb, const char *opt, const char *val,
                  void *target) {
  double d = 0;
  int st = number(&d, verb, opt, val);
  if (st == EXIT_OK) *(int *)target = (int)d;
  return st;
}

static int batch_arg(const char *verb, const char *opt, const char *val,
                     void *target) {
  double d = 0;
  int st = number(&d, verb, opt, val);
  if (st != EXIT_OK) return st;
  if (d < 1 || d > 1024 || d != (int)d)
    return cli_usage_error(verb,
                           "--batch wants a whole number from "
                           "1 to 1024, not '%s'",
                           val);
  *(int *)target = (int)d;
  return EXIT_OK;
}

/* --gpus, --retries */
static int slots_arg(const char *verb, const char *opt, const char *val,
                     void *target) {
  char *end;
  long v = strtol(val, &end, 10);
  if (*end || v < 0 || v > 64)
    return cli_usage_error(verb,
                           "%s wants a whole number from 0 to 64, "
                           "not '%s'",
                           opt, val);
  *(int *)target = (int)v;
  return EXIT_OK;
}

static int no_profile(const char *verb, const char *opt, const char *val,
                      void *target) {
  (void)verb, (void)opt, (void)val;
  *(const char **)target = "";
  return EXIT_OK;
}

static void print_summary(const kl_run *r, const kl_case *c) {
  kl_speedup b = kl_run_best_speedup(r);
  printf("\nrun %s: %d iterations, stopped by %s\n", kl_run_id(r),
         kl_run_iterations(r), kl_run_stop_reason(r));
  printf("verdicts:");
  for (int o = 1; o < KL_OUTCOME_COUNT; o++)
    if (kl_run_outcome_count(r, (kl_outcome)o))
      printf(" %s %d", kl_outcome_name((kl_outcome)o),
             kl_run_outcome_count(r, (kl_outcome)o));
  printf("\n");
  if (b.speedup > 1 && kl_run_best_id(r) &&
      kl_run_outcome_count(r, KL_OUTCOME_ACCEPTED) > 0)
    printf("best: %s, x%.3f [%.3f, %.3f] against the baseline (%s)\n",
           kl_run_best_id(r), b.speedup, b.ci_low, b.ci_high,
           kl_objective_name(kl_case_objective(c)));
  else
    printf("best: the baseline (nothing faster was accepted)\n");
  printf("records: %s (solutions.jsonl, benchmark.csv, memory.jsonl in %s)\n",
         kl_run_dir(r), kl_case_dir(c));
}

int cmd_run(int argc, char **argv) {
  const char *path = NULL, *rule_files[MAX_FILES + 1];
  bool json = false, events = false;
  kl_run_options o = KL_RUN_OPTIONS_INIT;
  kl_executor_options eo;
  kl_executor_options_init(&eo, KL_EXECUTOR_OPTIONS_VERSION);
  const char *ssh_args[MAX_PASSED + 1], *sbatch_args[MAX_PASSED + 1];
  cli_list rules = {rule_files, 0, MAX_FILES, NULL},
           ssh = {ssh_args, 0, MAX_PASSED, NULL},
           sbatch = {sbatch_args, 0, MAX_PASSED, NULL};
  const cli_opt opts[] = {
      CLI_FLAG("--json", &json),
      CLI_FLAG("--json-events", &events),
      CLI_STRING("--proposer", NULL, CLI_VALUE_REQUIRED, &o.proposer),
      CLI_STRING("--strategy", NULL, CLI_VALUE_REQUIRED, &o.strategy),
      CLI_CALL("--iterations", CLI_VALUE_REQUIRED, count_arg, &o.iterations),
      CLI_CALL("--patience", CLI_VALUE_REQUIRED, count_arg, &o.patience),
      CLI_CALL("--max-wall", CLI_VALUE_REQUIRED, real_arg, &o.max_wall_s),
      CLI_CALL("--max-worker-seconds", CLI_VALUE_REQUIRED, real_arg,
               &o.max_worker_s),
      CLI_CALL("--max-usd", CLI_VALUE_REQUIRED, real_arg, &o.max_usd),
      CLI_STRING("--resume", NULL, CLI_VALUE_REQUIRED, &o.resume),
      CLI_STRING("--replay", NULL, CLI_VALUE_REQUIRED, &o.replay),
      CLI_CALL("--seed", CLI_VALUE_REQUIRED, cli_seed_arg, &o.seed),
      CLI_LIST("--rules", NULL, CLI_VALUE_REQUIRED, &rules),
      CLI_STRING("--profile", NULL, CLI_VALUE_REQUIRED, &o.profile),
      CLI_CALL("--no-profile", CLI_VALUE_NONE, no_profile, &o.profile),
      CLI_CALL("--time-cap", CLI_VALUE_REQUIRED, ms_arg, &o.time.time_cap_ms),
      CLI_SET("--hot", &o.time.cold, 0),
      CLI_CALL("--timeout", CLI_VALUE_REQUIRED, ms_arg, &o.timeout_ms),
      CLI_SET("--no-webhook", &o.no_webhook, 1),
      /* where candidates are evaluated */
      CLI_CALL("--batch", CLI_VALUE_REQUIRED, batch_arg, &o.batch),
      CLI_STRING("--executor", NULL, CLI_VALUE_REQUIRED, &eo.kind),
      CLI_STRING("--devices", NULL, CLI_VALUE_REQUIRED, &eo.devices),
      CLI_SET("--fresh-worker", &eo.fresh_workers, 1),
      CLI_STRING("--host", NULL, CLI_VALUE_REQUIRED, &eo.host),
      CLI_LIST("--ssh-option", NULL, CLI_VALUE_REQUIRED, &ssh),
      CLI_STRING("--remote-kl", NULL, CLI_VALUE_REQUIRED, &eo.remote_kl),
      CLI_STRING("--remote-dir", NULL, CLI_VALUE_REQUIRED, &eo.remote_dir),
      CLI_STRING("--partition", NULL, CLI_VALUE_REQUIRED, &eo.partition),
      CLI_CALL("--gpus", CLI_VALUE_REQUIRED, slots_arg, &eo.gpus),
      CLI_LIST("--sbatch-option", NULL, CLI_VALUE_REQUIRED, &sbatch),
      CLI_CALL("--retries", CLI_VALUE_REQUIRED, slots_arg, &eo.retries),
      CLI_ARG("case", &path),
  };
  int i = 1, st = cli_parse("run", opts, CLI_NOPTS(opts), argc, argv, &i);
  if (st != EXIT_OK) return st;
  if (ssh.n) eo.ssh_options = ssh_args;
  if (sbatch.n) eo.sbatch_options = sbatch_args;
  if (!path) return cli_usage_error("run", "no case given");
  kl_case *c = NULL;
  kl_rules *rs = NULL;
  kl_llm_settings *ls = NULL;
  kl_webhook *wh = NULL;
  kl_executor *ex = NULL;
  kl_run *r = NULL;
  kl_buf out = KL_BUF_INIT;
  int status = EXIT_OK;
  kl_llm_price *prices = NULL;
  char self[4096];
  if (kl_case_load(&c, path, NULL) < 0) {
    status = cli_fail();
    goto done;
  }
  if ((status = cli_exit_status(cli_load_rules(
           &rs, c, rule_files, rules.n, NULL, 0, NULL, NULL))) != EXIT_OK)
    goto done;
  if (kl_llm_settings_load(&ls, c) < 0 || kl_webhook_load(&wh, c) < 0) {
    status = cli_fail();
    goto done;
  }
  o.webhook = wh;
  /* a Slurm job runs this very kl unless told otherwise: the run's folder
   * is on a shared filesystem, and so, as a rule, is kernlab */
  if (eo.kind && strcmp(eo.kind, "slurm") == 0 && !eo.remote_kl) {
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len > 0) {
      self[len] = 0;
      eo.remote_kl = self;
    }
  }
  if (kl_executor_create(&ex, &eo) < 0) {
    status = cli_fail();
    goto done;
  }
  o.executor = ex;
  kl_llm_config lc = KL_LLM_CONFIG_INIT;
  kl_llm_settings_apply(ls, &lc);
  size_t np = kl_llm_settings_price_count(ls);
  if (np && !(prices = calloc(np, sizeof(*prices)))) {
    cli_error("out of memory");
    status = EXIT_FAILED;
    goto done;
  }
  for (size_t i = 0; i < np; i++)
    prices[i] = *kl_llm_settings_price(ls, i);
  o.llm = &lc;
  o.prices = prices;
  o.nprices = np;
  o.rules = rs;
  view v = {isatty(STDERR_FILENO) && !json && !events, json, events};
  if (events) cli_events_begin();
  o.on_event = live;
  o.payload = &v;
  o.stop = &stop_flag;
  struct sigaction sa, old;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, &old);
  int rc = kl_run_optimize(&r, c, &o);
  sigaction(SIGINT, &old, NULL);
  if (v.tty) fputs("\r\033[K", stderr);
  if (rc < 0) {
    status = cli_fail();
    goto done;
  }
  if (json) {
    if (kl_run_json(&out, r) < 0) {
      status = cli_fail();
      goto done;
    }
    printf("%s\n", out.ptr);
  } else {
    print_summary(r, c);
  }
  if (kl_run_stop_detail(r)) {
    cli_error("the run stopped: %s (resume it with --resume %s)",
              kl_run_stop_detail(r), kl_run_id(r));
    status = EXIT_FAILED;
  }
done:
  kl_buf_dispose(&out);
  free(prices);
  kl_run_free(r);
  kl_llm_settings_free(ls);
  kl_webhook_free(wh);
  kl_executor_free(ex);
  kl_rules_free(rs);
  kl_case_free(c);
  return status;
}

/* `kl evaluate DIR`: run a batch folder an ssh or slurm executor wrote
 * (on the machine with the GPUs). */
int cmd_evaluate(int argc, char **argv) {
  const char *dir = NULL, *devices = NULL;
  const cli_opt opts[] = {
      CLI_STRING("--devices", NULL, CLI_VALUE_REQUIRED, &devices),
      CLI_ARG("batch folder", &dir),
  };
  int i = 1, st = cli_parse("evaluate", opts, CLI_NOPTS(opts), argc, argv, &i);
  if (st != EXIT_OK) return st;
  if (!dir) return cli_usage_error("evaluate", "no batch folder given");
  if (kl_evaluate_dir(dir, devices, NULL) < 0) return cli_fail();
  return EXIT_OK;
}

int cmd_best(int argc, char **argv) {
  const char *path = NULL, *output = NULL;
  bool json = false, dispatch = false;
  const cli_opt opts[] = {
      CLI_FLAG("--dispatch", &dispatch),
      {"--output", "-o", CLI_OPT_STRING, CLI_VALUE_REQUIRED, cli__str(&output),
       NULL, 0, "a file", NULL},
      CLI_FLAG("--json", &json),
      CLI_ARG("case", &path),
  };
  int i = 1, st = cli_parse("best", opts, CLI_NOPTS(opts), argc, argv, &i);
  if (st != EXIT_OK) return st;
  if (!path) return cli_usage_error("best", "no case given");
  kl_case *c = NULL;
  kl_buf src = KL_BUF_INIT, info = KL_BUF_INIT;
  int status = EXIT_OK;
  if (kl_case_load(&c, path, NULL) < 0 ||
      (dispatch ? kl_best_dispatch(&src, &info, c)
                : kl_run_best_kernel(&src, &info, c)) < 0) {
    status = cli_fail();
    goto done;
  }
  if (output) {
    FILE *f = fopen(output, "wx");
    if (!f) {
      cli_error("%s: cannot create (it may exist already: kl best never "
                "overwrites)",
                output);
      status = EXIT_FAILED;
      goto done;
    }
    bool ok = fwrite(src.ptr, 1, src.size, f) == src.size;
    if (fclose(f) != 0 || !ok) {
      cli_error("%s: cannot write", output);
      remove(output);
      status = EXIT_FAILED;
      goto done;
    }
  }
  if (json)
    printf("%s\n", info.ptr);
  else if (!output)
    fputs(src.ptr, stdout);
  else
    fprintf(stderr, "kl: wrote %s\n", output);
done:
  kl_buf_dispose(&src);
  kl_buf_dispose(&info);
  kl_case_free(c);
  return status;
}
