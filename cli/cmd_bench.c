/* `kl bench` and `kl compare`: check, then time; for compare, interleave
 * with the baseline and decide. Exit 3 when the candidate is rejected. On
 * a terminal a status line says which phase runs (rewritten in place,
 * cleared at the end). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"

static void show_phase(const char *phase, void *payload) {
  fprintf(stderr, "\r\033[K  kl %s: %s ...", (const char *)payload, phase);
  fflush(stderr);
}

/* A command case: a row per metric, its values and, comparing, the
 * improvement ratio (above 1: the candidate is better). */
static void print_metrics(const kl_report *r, bool compare) {
  printf("%-16s %-6s %12s %25s %6s  %s\n", "metric", "better",
         compare ? "baseline" : "median",
         compare ? "candidate [95% CI]" : "95% CI", "runs",
         compare ? "improvement [95% CI] decision" : "stop");
  for (size_t i = 0; i < kl_report_shape_count(r); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    kl_report_shape(&s, r, i);
    const char *better = kl_report_shape_better(r, i);
    if (!s.timed) {
      printf("%-16s %-6s %12s\n", s.name, better, "-");
      continue;
    }
    char ci[64];
    if (compare) {
      snprintf(ci, sizeof(ci), "%.4g [%.4g, %.4g]", s.time.median,
               s.time.ci_low, s.time.ci_high);
      printf("%-16s %-6s %12.4g %25s %6zu  %.3f [%.3f, %.3f] %s\n", s.name,
             better, s.baseline.median, ci, s.time.n, s.speedup.speedup,
             s.speedup.ci_low, s.speedup.ci_high,
             s.speedup.decision == KL_DECISION_FASTER   ? "better"
             : s.speedup.decision == KL_DECISION_SLOWER ? "worse"
                                                        : "same");
    } else {
      snprintf(ci, sizeof(ci), "[%.4g, %.4g]", s.time.ci_low, s.time.ci_high);
      printf("%-16s %-6s %12.4g %25s %6zu  %s\n", s.name, better, s.time.median,
             ci, s.time.n, s.stop_reason);
    }
  }
}

/* One shape's row of the CUDA and host tables: its name, whether it was
 * correct (NULL: no such column), the first value (the baseline's median
 * comparing, else the median), the interval, the samples, then `tail`. */
static void print_row(const char *name, const char *ok, double first,
                      const kl_summary *t, bool compare, const char *tail) {
  char ci[64];
  if (compare)
    snprintf(ci, sizeof(ci), "%.4g [%.4g, %.4g]", t->median, t->ci_low,
             t->ci_high);
  else
    snprintf(ci, sizeof(ci), "[%.4g, %.4g]", t->ci_low, t->ci_high);
  printf("%-10s ", name);
  if (ok) printf("%-8s ", ok);
  printf("%12.4g %25s %8zu  %s\n", first, ci, t->n, tail);
}

static void speedup_text(char *out, size_t len, const kl_speedup *sp) {
  snprintf(out, len, "%.3f [%.3f, %.3f] %s", sp->speedup, sp->ci_low,
           sp->ci_high, kl_decision_name(sp->decision));
}

/* --launch both: each shape's times from a CUDA graph's replays beside the
 * stream's, which decided; a decision the two launches disagree on is named,
 * since its gain (or loss) is in the host's launch overhead. */
static void print_graph(const kl_report *r, bool compare) {
  printf("from a CUDA graph (the same shapes replayed; the stream above "
         "decides):\n");
  printf("%-10s %12s %25s %8s  %s\n", "shape",
         compare ? "baseline_us" : "median_us",
         compare ? "candidate_us [95% CI]" : "95% CI", "samples",
         compare ? "speedup [95% CI] decision" : "stream/graph");
  for (size_t i = 0; i < kl_report_shape_count(r); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    if (kl_report_shape(&s, r, i) < 0 || !s.graph_timed) continue;
    const kl_summary *g = &s.graph_time;
    char tail[96];
    if (compare)
      speedup_text(tail, sizeof(tail), &s.graph_speedup);
    else
      snprintf(tail, sizeof(tail), "%.3f",
               g->median > 0 ? s.time.median / g->median : 0.0);
    print_row(s.name, NULL, compare ? s.graph_baseline.median : g->median, g,
              compare, tail);
  }
  for (size_t i = 0; compare && i < kl_report_shape_count(r); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    if (kl_report_shape(&s, r, i) < 0 || !s.graph_timed ||
        s.speedup.decision == s.graph_speedup.decision)
      continue;
    printf("%s: %s from the stream but %s from a CUDA graph: the stream's "
           "decision may rest on host launch overhead, which a program under "
           "CUDA graphs does not pay (the intervals say how sure each is)\n",
           s.name, kl_decision_name(s.speedup.decision),
           kl_decision_name(s.graph_speedup.decision));
  }
}

/* The shapes whose CUPTI records say something about their times
 * (docs/integrity.md): timed on concurrent-kernel records (kernels ran
 * instrumented, which costs many-block kernels that read memory more than
 * few-block ones), or a candidate's two streams serialised by kernel
 * records (its overlap not counted). */
static void print_tracing(const kl_report *r) {
  for (size_t i = 0; i < kl_report_shape_count(r); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    if (kl_report_shape(&s, r, i) < 0) continue;
    bool stream = s.tracing && strcmp(s.tracing, "concurrent") == 0;
    bool graph = s.graph_tracing && strcmp(s.graph_tracing, "concurrent") == 0;
    if (stream || graph)
      printf("%s: timed%s on CUPTI's concurrent-kernel records (the "
             "baseline's launch used two streams, or a graph of kernels that "
             "kernel records cannot time), which instrument every kernel and "
             "slow many-block kernels that read memory: a gain from cutting "
             "blocks may read larger than it is\n",
             s.name,
             stream && graph ? ""
             : stream        ? " from the stream"
                             : " from the graph");
    if ((s.tracing && strcmp(s.tracing, "serialised") == 0) ||
        (s.graph_tracing && strcmp(s.graph_tracing, "serialised") == 0))
      printf("%s: the candidate's launch ran work on two streams, which "
             "CUPTI's kernel records serialise: its overlap is not counted "
             "(KERNLAB_TRACE=concurrent counts it, with every kernel "
             "instrumented)\n",
             s.name);
  }
}

/* What the samples of a CUDA report were less: the kernel records' fixed
 * part on this device (docs/json.md, "Calibration"), one line. */
static void print_calibration(const kl_report *r) {
  double lo = 0, hi = 0;
  for (size_t i = 0; i < kl_report_shape_count(r); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    if (kl_report_shape(&s, r, i) < 0) continue;
    double v[2] = {s.calibration_us, s.graph_calibration_us};
    for (int k = 0; k < 2; k++)
      if (v[k] > 0) {
        if (lo == 0 || v[k] < lo) lo = v[k];
        if (v[k] > hi) hi = v[k];
      }
  }
  if (hi == 0) return;
  char range[48];
  if (hi - lo < 0.005)
    snprintf(range, sizeof(range), "%.2f", hi);
  else
    snprintf(range, sizeof(range), "%.2f-%.2f", lo, hi);
  printf("timer: kernel records less their fixed part, %s us a sample on "
         "this device (KERNLAB_CALIBRATE=0: as the records read)\n",
         range);
}

static void print_text(const kl_report *r, bool compare, bool cold) {
  bool command = kl_report_shape_count(r) && kl_report_shape_better(r, 0);
  if (command)
    print_metrics(r, compare);
  else
    printf("%-10s %-8s %12s %25s %8s  %s\n", "shape", "correct",
           compare ? "baseline_us" : "median_us",
           compare ? "candidate_us [95% CI]" : "95% CI", "samples",
           compare ? "speedup [95% CI] decision" : "stop");
  for (size_t i = 0; !command && i < kl_report_shape_count(r); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    kl_report_shape(&s, r, i);
    const char *ok = !s.checked ? "-" : s.correct ? "yes" : "NO";
    if (!s.timed) {
      printf("%-10s %-8s %12s\n", s.name, ok, "-");
      continue;
    }
    char tail[96];
    if (compare)
      speedup_text(tail, sizeof(tail), &s.speedup);
    else
      snprintf(tail, sizeof(tail), "%s", s.stop_reason);
    print_row(s.name, ok, compare ? s.baseline.median : s.time.median, &s.time,
              compare, tail);
  }
  for (size_t i = 0; compare && !command && i < kl_report_shape_count(r); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    if (kl_report_shape(&s, r, i) == 0 && s.decision_reason)
      printf("%s: %s\n", s.name, s.decision_reason);
  }
  print_tracing(r);
  print_calibration(r);
  if (!command && kl_report_launch(r) == KL_LAUNCH_BOTH)
    print_graph(r, compare);
  kl_speedup obj;
  if (kl_report_objective(&obj, r) == 0)
    printf("objective: %.3f [%.3f, %.3f] %s\n", obj.speedup, obj.ci_low,
           obj.ci_high, kl_decision_name(obj.decision));
  kl_buf notes = KL_BUF_INIT;
  if (kl_report_python_notes_text(&notes, r) == 0 && notes.size)
    fputs(notes.ptr, stdout);
  kl_buf_dispose(&notes);
  if (kl_report_phases_text(&notes, r) == 0 && notes.size)
    fputs(notes.ptr, stdout);
  kl_buf_dispose(&notes);
  kl_device_info dev = KL_DEVICE_INFO_INIT;
  if (kl_report_device(&dev, r) == 0)
    printf("device %s (%d SMs, max SM clock %.0f MHz)\n", dev.name, dev.sms,
           dev.max_sm_clock_mhz);
  kl_buf idle = KL_BUF_INIT;
  if (kl_report_gpu_usage_text(&idle, r) == 0 && idle.ptr)
    fputs(idle.ptr, stdout);
  kl_buf_dispose(&idle);
  if (command)
    printf("the case's command measured it; verdict %s\n",
           kl_verdict_name(kl_report_verdict(r)));
  else
    printf("%s%s, times in microseconds; verdict %s\n",
           cold ? "cold caches" : "hot caches",
           kl_report_launch(r) == KL_LAUNCH_GRAPH
               ? ", each sample a CUDA graph's replay"
           : kl_report_launch(r) == KL_LAUNCH_BOTH
               ? ", timed as launched on the stream and from a CUDA graph"
               : "",
           kl_verdict_name(kl_report_verdict(r)));
}

/* --time-cap-ms, --timeout-ms, --device: a whole number, above 0
 * unless zero_ok */
static int whole(unsigned long long *out, const char *verb, const char *opt,
                 const char *val, bool zero_ok) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(val, &end, 10);
  if (errno || !end || *end || end == val || (v == 0 && !zero_ok) ||
      val[0] == '-' || (zero_ok && v > 1024))
    return cli_usage_error(verb, "%s takes a %s whole number, not '%s'", opt,
                           zero_ok ? "non-negative" : "positive", val);
  *out = v;
  return EXIT_OK;
}

/* The options' meanings (opt.h's cli_opt_fn). */
static int device_arg(const char *verb, const char *opt, const char *val,
                      void *target) {
  unsigned long long v = 0;
  int st = whole(&v, verb, opt, val, true);
  if (st == EXIT_OK) *(int *)target = (int)v;
  return st;
}

static int time_cap_arg(const char *verb, const char *opt, const char *val,
                        void *target) {
  unsigned long long v = 0;
  int st = whole(&v, verb, opt, val, false);
  if (st == EXIT_OK) *(int *)target = v > 3600000 ? 3600000 : (int)v;
  return st;
}

static int timeout_arg(const char *verb, const char *opt, const char *val,
                       void *target) {
  unsigned long long v = 0;
  int st = whole(&v, verb, opt, val, false);
  if (st == EXIT_OK) *(int *)target = v > 86400000 ? 86400000 : (int)v;
  return st;
}

static int launch_arg(const char *verb, const char *opt, const char *val,
                      void *target) {
  (void)opt;
  if ((*(int *)target = kl_launch_parse(val)) < 0)
    return cli_usage_error(
        verb, "--launch takes stream, graph or both, not '%s'", val);
  return EXIT_OK;
}

static int bench_or_compare(int argc, char **argv, bool compare) {
  const char *verb = compare ? "compare" : "bench";
  const char *path = NULL, *candidate_path = NULL;
  bool json = false, events = false;
  kl_bench_options opts = KL_BENCH_OPTIONS_INIT;
  const cli_opt spec[] = {
      CLI_FLAG("--json", &json),
      CLI_FLAG("--json-events", &events),
      CLI_SET("--hot", &opts.time.cold, 0),
      CLI_CALL("--launch", CLI_VALUE_WORD, launch_arg, &opts.launch),
      CLI_STRING("--candidate", NULL, CLI_VALUE_WORD, &candidate_path),
      CLI_STRING("--shape", NULL, CLI_VALUE_WORD, &opts.shape),
      CLI_CALL("--seed", CLI_VALUE_WORD, cli_seed_arg, &opts.seed),
      CLI_CALL("--time-cap-ms", CLI_VALUE_WORD, time_cap_arg,
               &opts.time.time_cap_ms),
      CLI_CALL("--timeout-ms", CLI_VALUE_WORD, timeout_arg, &opts.timeout_ms),
      CLI_CALL("--device", CLI_VALUE_WORD, device_arg, &opts.device),
      CLI_ARG("case", &path),
  };
  int i = 1, st = cli_parse(verb, spec, CLI_NOPTS(spec), argc, argv, &i);
  if (st != EXIT_OK) return st;
  if (!path) return cli_usage_error(verb, "no case given");
  if (compare && !candidate_path)
    return cli_usage_error(verb, "compare needs --candidate FILE");
  kl_case *c = NULL;
  char *candidate = NULL;
  kl_report *r = NULL;
  int status = EXIT_OK;
  if (kl_case_load(&c, path, NULL) < 0) {
    status = cli_fail();
    goto done;
  }
  if (candidate_path) {
    if ((status = cli_read_file(&candidate, candidate_path)) != 0) goto done;
    const char *slash = strrchr(candidate_path, '/');
    opts.candidate = candidate;
    opts.candidate_name = slash ? slash + 1 : candidate_path;
  }
  bool live = !json && !events && isatty(STDERR_FILENO);
  if (events) {
    cli_events_begin();
    opts.on_phase = cli_events_phase;
    opts.phase_payload = (void *)verb;
  } else if (live) {
    opts.on_phase = show_phase;
    opts.phase_payload = (void *)verb;
  }
  int rc =
      compare ? kl_bench_compare(&r, c, &opts) : kl_bench_run(&r, c, &opts);
  if (live) fputs("\r\033[K", stderr);
  if (rc < 0) {
    status = cli_fail();
    goto done;
  }
  if (events) cli_events_report(verb, r, compare);
  if (json) {
    kl_buf b = KL_BUF_INIT;
    if (kl_report_json(&b, r) < 0) {
      status = cli_fail();
      goto done;
    }
    printf("%s\n", b.ptr);
    kl_buf_dispose(&b);
  } else {
    print_text(r, compare, opts.time.cold);
  }
  const char *log = kl_report_compile_log(r);
  if (kl_report_verdict(r) != KL_VERDICT_OK) {
    /* kl bench of the case alone: its own kernel is what failed */
    cli_error("%s rejected: %s: %s", candidate ? "candidate" : "baseline",
              kl_verdict_name(kl_report_verdict(r)), kl_report_reason(r));
    if (log && !json) fprintf(stderr, "%s", log);
    status = EXIT_REJECTED;
  } else if (log && !json) { /* warnings: it built, but a user wants them */
    fprintf(stderr, "kl: the compiler warned (the build went through):\n%s",
            log);
  }
done:
  kl_report_free(r);
  free(candidate);
  kl_case_free(c);
  return status;
}

int cmd_bench(int argc, char **argv) {
  return bench_or_compare(argc, argv, false);
}

int cmd_compare(int argc, char **argv) {
  return bench_or_compare(argc, argv, true);
}
