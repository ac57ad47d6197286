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

/* The executor options of `kl run`: 1 when `a` was one (its value
 * consumed), 0 when not, or an exit status (> 1) for a bad value. */
typedef struct exec_args {
  kl_executor_options eo;
  const char *ssh[MAX_PASSED + 1], *sbatch[MAX_PASSED + 1];
  size_t nssh, nsbatch;
  char self[4096];
} exec_args;

static int executor_arg(exec_args *x, const char *a, const char *val, int *i) {
  static const char *const names[] = {
      "--executor",   "--devices",   "--host", "--ssh-option",    "--remote-kl",
      "--remote-dir", "--partition", "--gpus", "--sbatch-option", "--retries"};
  bool known = false;
  for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
    known |= strcmp(a, names[k]) == 0;
  if (!known) return 0;
  if (!val || !val[0]) return cli_usage_error("run", "%s needs a value", a);
  (*i)++;
  kl_executor_options *eo = &x->eo;
  if (strcmp(a, "--executor") == 0)
    eo->kind = val;
  else if (strcmp(a, "--devices") == 0)
    eo->devices = val;
  else if (strcmp(a, "--host") == 0)
    eo->host = val;
  else if (strcmp(a, "--remote-kl") == 0)
    eo->remote_kl = val;
  else if (strcmp(a, "--remote-dir") == 0)
    eo->remote_dir = val;
  else if (strcmp(a, "--partition") == 0)
    eo->partition = val;
  else if (strcmp(a, "--ssh-option") == 0 ||
           strcmp(a, "--sbatch-option") == 0) {
    bool ssh = a[2] == 's' && a[3] == 's';
    size_t *n = ssh ? &x->nssh : &x->nsbatch;
    if (*n == MAX_PASSED)
      return cli_usage_error("run", "at most %d %s", MAX_PASSED, a);
    (ssh ? x->ssh : x->sbatch)[(*n)++] = val;
    (ssh ? x->ssh : x->sbatch)[*n] = NULL;
    if (ssh)
      eo->ssh_options = x->ssh;
    else
      eo->sbatch_options = x->sbatch;
  } else {
    char *end;
    long v = strtol(val, &end, 10);
    if (*end || v < 0 || v > 64)
      return cli_usage_error("run",
                             "%s wants a whole number from 0 to 64, "
                             "not '%s'",
                             a, val);
    if (strcmp(a, "--gpus") == 0)
      eo->gpus = (int)v;
    else
      eo->retries = (int)v;
  }
  return 1;
}

int cmd_run(int argc, char **argv) {
  const char *path = NULL, *rule_files[MAX_FILES];
  size_t nrules = 0;
  bool json = false, events = false;
  kl_run_options o = KL_RUN_OPTIONS_INIT;
  exec_args x;
  memset(&x, 0, sizeof(x));
  kl_executor_options_init(&x.eo, KL_EXECUTOR_OPTIONS_VERSION);
  double d = 0;
  int st;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    if ((st = executor_arg(&x, a, val, &i)) > 1) return st;
    if (st == 1) continue;
    bool takes = strcmp(a, "--proposer") == 0 || strcmp(a, "--strategy") == 0 ||
                 strcmp(a, "--iterations") == 0 ||
                 strcmp(a, "--patience") == 0 || strcmp(a, "--max-wall") == 0 ||
                 strcmp(a, "--max-worker-seconds") == 0 ||
                 strcmp(a, "--max-usd") == 0 || strcmp(a, "--seed") == 0 ||
                 strcmp(a, "--resume") == 0 || strcmp(a, "--replay") == 0 ||
                 strcmp(a, "--rules") == 0 || strcmp(a, "--profile") == 0 ||
                 strcmp(a, "--time-cap") == 0 || strcmp(a, "--timeout") == 0 ||
                 strcmp(a, "--batch") == 0;
    if (strcmp(a, "--json") == 0) {
      json = true;
      continue;
    }
    if (strcmp(a, "--json-events") == 0) {
      events = true;
      continue;
    }
    if (strcmp(a, "--no-profile") == 0) {
      o.profile = "";
      continue;
    }
    if (strcmp(a, "--no-webhook") == 0) {
      o.no_webhook = 1;
      continue;
    }
    if (strcmp(a, "--fresh-worker") == 0) {
      x.eo.fresh_workers = 1;
      continue;
    }
    if (takes) {
      if (!val || !val[0]) return cli_usage_error("run", "%s needs a value", a);
      i++;
      if (strcmp(a, "--proposer") == 0)
        o.proposer = val;
      else if (strcmp(a, "--strategy") == 0)
        o.strategy = val;
      else if (strcmp(a, "--resume") == 0)
        o.resume = val;
      else if (strcmp(a, "--replay") == 0)
        o.replay = val;
      else if (strcmp(a, "--profile") == 0)
        o.profile = val;
      else if (strcmp(a, "--rules") == 0) {
        if (nrules == MAX_FILES)
          return cli_usage_error("run", "at most %d --rules", MAX_FILES);
        rule_files[nrules++] = val;
      } else {
        if ((st = number(&d, "run", a, val)) != EXIT_OK) return st;
        if (strcmp(a, "--iterations") == 0)
          o.iterations = (int64_t)d;
        else if (strcmp(a, "--patience") == 0)
          o.patience = (int64_t)d;
        else if (strcmp(a, "--max-wall") == 0)
          o.max_wall_s = d;
        else if (strcmp(a, "--max-worker-seconds") == 0)
          o.max_worker_s = d;
        else if (strcmp(a, "--max-usd") == 0)
          o.max_usd = d;
        else if (strcmp(a, "--seed") == 0)
          o.seed = (uint64_t)strtoull(val, NULL, 10);
        else if (strcmp(a, "--timeout") == 0)
          o.timeout_ms = (int)d;
        else if (strcmp(a, "--batch") == 0) {
          if (d < 1 || d > 1024 || d != (int)d)
            return cli_usage_error("run",
                                   "--batch wants a whole number from "
                                   "1 to 1024, not '%s'",
                                   val);
          o.batch = (int)d;
        } else
          o.time.time_cap_ms = (int)d;
      }
    } else if (cli_positional("run", "case", &path, a) != EXIT_OK) {
      return EXIT_BAD_INPUT;
    }
  }
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
  if (kl_case_load(&c, path, NULL) < 0) {
    status = cli_fail();
    goto done;
  }
  if ((status = cli_exit_status(cli_load_rules(&rs, c, rule_files, nrules, NULL,
                                               0, NULL, NULL))) != EXIT_OK)
    goto done;
  if (kl_llm_settings_load(&ls, c) < 0 || kl_webhook_load(&wh, c) < 0) {
    status = cli_fail();
    goto done;
  }
  o.webhook = wh;
  /* a Slurm job runs this very kl unless told otherwise: the run's folder
   * is on a shared filesystem, and so, as a rule, is kernlab */
  if (x.eo.kind && strcmp(x.eo.kind, "slurm") == 0 && !x.eo.remote_kl) {
    ssize_t len = readlink("/proc/self/exe", x.self, sizeof(x.self) - 1);
    if (len > 0) {
      x.self[len] = 0;
      x.eo.remote_kl = x.self;
    }
  }
  if (kl_executor_create(&ex, &x.eo) < 0) {
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
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--devices") == 0) {
      if (i + 1 >= argc || !argv[i + 1][0])
        return cli_usage_error("evaluate", "--devices needs a value");
      devices = argv[++i];
    } else if (cli_positional("evaluate", "batch folder", &dir, argv[i]) !=
               EXIT_OK) {
      return EXIT_BAD_INPUT;
    }
  }
  if (!dir) return cli_usage_error("evaluate", "no batch folder given");
  if (kl_evaluate_dir(dir, devices, NULL) < 0) return cli_fail();
  return EXIT_OK;
}

int cmd_best(int argc, char **argv) {
  const char *path = NULL, *output = NULL;
  bool json = false, dispatch = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--dispatch") == 0) {
      dispatch = true;
    } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
      if (i + 1 >= argc || !argv[i + 1][0])
        return cli_usage_error("best", "%s needs a file", a);
      output = argv[++i];
    } else if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (cli_positional("best", "case", &path, a) != EXIT_OK) {
      return EXIT_BAD_INPUT;
    }
  }
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
