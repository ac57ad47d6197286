/* CUDA measurement benchmark (not a test): kernlab's numbers for the
 * targets of ../shared/docs/measurement.md, on a 20 us and a 5 us float
 * copy and an empty kernel (bench/cases). bench/run_gpu.sh prints the
 * anchors (CUDA events, an nvbench-style loop, triton's do_bench, ncu)
 * measured in the same run next to these.
 * usage: bench_cuda SOURCE_DIR [--quick]   (JSON lines on stdout, a table
 * on stderr) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernlab/kernlab.h"
#include "support/slurp.h"

#define CHECK(x)                                                               \
  do {                                                                         \
    if ((x) < 0) {                                                             \
      fprintf(stderr, "bench_cuda: %s: %s\n", #x, kl_error_last()->message);   \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int load(kl_worker *w, const kl_case *c, const char *src) {
  kl_artifact *a;
  CHECK(kl_compile_plugin(&a, c, src, NULL));
  if (!kl_artifact_ok(a)) {
    fprintf(stderr, "bench_cuda: compile failed: %s\n", kl_artifact_log(a));
    exit(1);
  }
  int id;
  CHECK(kl_worker_load(&id, w, kl_artifact_path(a)));
  kl_artifact_free(a);
  return id;
}

typedef struct one {
  double median, rel_ci, wall_ms, wall_per_sample, flush_us, mhz;
  size_t n, throttled;
  double request_ms; /* the whole request, as the client saw it */
  kl_time_costs costs;
} one;

static one measure(kl_worker *w, int id, int shape, int cold, int cap_ms) {
  kl_time_options t = KL_TIME_OPTIONS_INIT;
  t.cold = cold;
  if (cap_ms) t.time_cap_ms = cap_ms;
  kl_samples s = KL_SAMPLES_INIT;
  double t0 = now_ms();
  CHECK(kl_worker_time(&s, w, &id, 1, shape, &t));
  double request_ms = now_ms() - t0;
  kl_summary sum;
  kl_stats_summarize(&sum, s.us[0], s.n);
  one o = {sum.median, sum.rel_ci, s.wall_ms, s.wall_ms * 1000.0 / s.n,
           s.flush_us, 0,          s.n,       0,
           request_ms, s.costs};
  if (s.mhz[0]) {
    kl_summary clk;
    kl_stats_summarize(&clk, s.mhz[0], s.n);
    o.mhz = clk.median;
    for (size_t i = 0; i < s.n; i++)
      if (s.mhz[0][i] < 0.97 * clk.median) {
        if (!o.throttled)
          fprintf(stderr, "  sample %zu of %zu: SM %.0f MHz (median %.0f)\n", i,
                  s.n, s.mhz[0][i], clk.median);
        o.throttled++;
      }
  }
  kl_samples_dispose(&s);
  return o;
}

/* Where one measurement's time went: the request, phase by phase, and per
 * sample what the device did (its idle time is the span less the work). */
static void costs_line(const char *label, const char *mode, const one *o) {
  const kl_time_costs *c = &o->costs;
  double n = o->n ? (double)o->n : 1;
  double idle = c->dev_span_us - c->dev_restore_us - c->dev_flush_us -
                c->dev_probe_us - c->dev_timed_us;
  fprintf(stderr,
          "%-6s %s request %.2f ms (%zu samples, %zu windows): setup %.2f, "
          "warm-up %.2f, placements %.2f, queue %.2f, wait %.2f, collect "
          "%.2f, verify %.2f ms; a sample on the device: restore %.2f, flush "
          "%.2f, probe %.2f, timed %.2f, idle %.2f us (span %.2f us; idle "
          "before restore %.2f, flush %.2f, probe %.2f, timed work %.2f); "
          "outside the device's span: %.2f us a sample\n",
          label, mode, o->request_ms, o->n, c->dev_windows, c->setup_ms,
          c->warmup_ms, c->place_ms, c->queue_ms, c->wait_ms, c->collect_ms,
          c->verify_ms, c->dev_restore_us / n, c->dev_flush_us / n,
          c->dev_probe_us / n, c->dev_timed_us / n, idle / n,
          c->dev_span_us / n, c->dev_idle_before_restore_us / n,
          c->dev_idle_before_flush_us / n, c->dev_idle_before_probe_us / n,
          c->dev_idle_before_work_us / n,
          (o->wall_ms * 1000.0 - c->dev_span_us) / n);
  printf("{\"bench\":\"cuda_costs\",\"size\":\"%s\",\"mode\":\"%s\","
         "\"request_ms\":%.3f,\"samples\":%zu,\"windows\":%zu,"
         "\"setup_ms\":%.3f,\"warmup_ms\":%.3f,\"place_ms\":%.3f,"
         "\"queue_ms\":%.3f,\"wait_ms\":%.3f,\"collect_ms\":%.3f,"
         "\"verify_ms\":%.3f,\"restore_us\":%.3f,\"flush_us\":%.3f,"
         "\"probe_us\":%.3f,\"timed_us\":%.3f,\"idle_us\":%.3f,"
         "\"span_us\":%.3f}\n",
         label, mode, o->request_ms, o->n, c->dev_windows, c->setup_ms,
         c->warmup_ms, c->place_ms, c->queue_ms, c->wait_ms, c->collect_ms,
         c->verify_ms, c->dev_restore_us / n, c->dev_flush_us / n,
         c->dev_probe_us / n, c->dev_timed_us / n, idle / n,
         c->dev_span_us / n);
}

static void size_bench(kl_worker *w, int id, int shape, const char *label,
                       int repeats) {
  /* T1: repeatability of the cold median; T3: wall per sample */
  double meds[64], walls[64], mean = 0, var = 0;
  one first = {0};
  size_t throttled = 0;
  for (int r = 0; r < repeats; r++) {
    one o = measure(w, id, shape, 1, 0);
    if (r == 0) first = o;
    meds[r] = o.median;
    walls[r] = o.wall_ms;
    throttled += o.throttled;
  }
  for (int r = 0; r < repeats; r++)
    mean += meds[r] / repeats;
  for (int r = 0; r < repeats; r++)
    var += (meds[r] - mean) * (meds[r] - mean) / (repeats - 1);
  kl_summary ms, ws;
  kl_stats_summarize(&ms, meds, (size_t)repeats);
  kl_stats_summarize(&ws, walls, (size_t)repeats);
  one hot = measure(w, id, shape, 0, 0);
  one quick = measure(w, id, shape, 1, 50); /* T6: 50 ms of sampling */
  double rsd = 100 * sqrt(var) / mean;
  costs_line(label, "cold", &first);
  costs_line(label, "hot", &hot);
  fprintf(stderr,
          "%-6s cold median %8.3f us, rsd(%d) %.3f%%, %5.1f ms/measurement; "
          "cold sample wall %.2f us = kernel + flush %.2f + %.2f us; hot "
          "sample wall %.2f us (kernel %.3f); 50 ms: +-%.3f%% after %zu "
          "samples; SM %.0f MHz, %zu throttled\n",
          label, ms.median, repeats, rsd, ws.median, first.wall_per_sample,
          first.flush_us, first.wall_per_sample - first.median - first.flush_us,
          hot.wall_per_sample, hot.median, 100 * quick.rel_ci, quick.n,
          first.mhz, throttled);
  printf("{\"bench\":\"cuda_timer\",\"size\":\"%s\",\"cold_median_us\":%.4f,"
         "\"rsd_pct\":%.4f,\"repeats\":%d,\"wall_per_measurement_ms\":%.2f,"
         "\"cold_sample_wall_us\":%.3f,\"flush_us\":%.3f,"
         "\"hot_median_us\":%.4f,\"hot_sample_wall_us\":%.3f,"
         "\"ci50ms_rel_pct\":%.4f,\"ci50ms_samples\":%zu,\"sm_mhz\":%.0f,"
         "\"throttled\":%zu}\n",
         label, ms.median, rsd, repeats, ws.median, first.wall_per_sample,
         first.flush_us, hot.median, hot.wall_per_sample, 100 * quick.rel_ci,
         quick.n, first.mhz, throttled);
}

/* T7: A/A false "different" and a real ~1% change. Both decisions are
 * made from the same samples twice: with no practical threshold (the
 * statistics alone, where a 95% interval misses about 5% of the time by
 * construction) and with a 0.5% threshold (what a user sets to detect 1%). */
static void decisions(kl_worker *w, int base, int other, int shape,
                      const char *label, int reps) {
  double t0 = now_ms();
  for (int pass = 0; pass < 2; pass++) {
    int hits[2] = {0, 0};
    double ratio_sum = 0;
    for (int r = 0; r < reps; r++) {
      kl_time_options t = KL_TIME_OPTIONS_INIT;
      t.time_cap_ms = 500;
      int ids[2] = {base, pass ? other : base};
      kl_samples s = KL_SAMPLES_INIT;
      CHECK(kl_worker_time(&s, w, ids, 2, shape, &t));
      for (int g = 0; g < 2; g++) {
        kl_speedup sp;
        CHECK(kl_stats_speedup_blocked(&sp, s.us[0], s.us[1], s.n,
                                       s.block_rounds, s.placements,
                                       g ? 0.5 : 0.0));
        if (g == 0) ratio_sum += sp.speedup;
        hits[g] += pass ? sp.decision == KL_DECISION_SLOWER
                        : sp.decision != KL_DECISION_SAME;
      }
      kl_samples_dispose(&s);
    }
    for (int g = 0; g < 2; g++) {
      fprintf(stderr,
              "%-6s %s, min gain %.1f%%: %d of %d %s (mean speedup "
              "%.4f)\n",
              label, pass ? "1% slower candidate" : "A/A", g ? 0.5 : 0.0,
              hits[g], reps, pass ? "detected as slower" : "called different",
              ratio_sum / reps);
      printf("{\"bench\":\"cuda_decision\",\"size\":\"%s\",\"kind\":\"%s\","
             "\"min_gain_pct\":%.1f,\"hits\":%d,\"reps\":%d,"
             "\"mean_speedup\":%.5f}\n",
             label, pass ? "slower_1pct" : "aa", g ? 0.5 : 0.0, hits[g], reps,
             ratio_sum / reps);
    }
  }
  fprintf(stderr, "%-6s decisions took %.1f s\n", label,
          (now_ms() - t0) / 1000.0);
}

/* T2: the spread of the cold median between fresh processes (a new worker
 * per measurement; the plugin comes from the compile cache). */
static void fresh_processes(const kl_case *c, int shape, const char *label,
                            int reps) {
  kl_artifact *a;
  CHECK(kl_compile_plugin(&a, c, NULL, NULL));
  double meds[32], mean = 0, var = 0;
  for (int r = 0; r < reps; r++) {
    kl_worker *w;
    CHECK(kl_worker_create(&w, NULL));
    int id;
    CHECK(kl_worker_load(&id, w, kl_artifact_path(a)));
    meds[r] = measure(w, id, shape, 1, 0).median;
    kl_worker_free(w);
  }
  for (int r = 0; r < reps; r++)
    mean += meds[r] / reps;
  for (int r = 0; r < reps; r++)
    var += (meds[r] - mean) * (meds[r] - mean) / (reps - 1);
  fprintf(stderr,
          "%-6s between %d fresh processes: rsd %.3f%% (mean %.3f us)\n", label,
          reps, 100 * sqrt(var) / mean, mean);
  printf("{\"bench\":\"cuda_fresh_processes\",\"size\":\"%s\",\"reps\":%d,"
         "\"rsd_pct\":%.4f,\"mean_us\":%.4f}\n",
         label, reps, 100 * sqrt(var) / mean, mean);
  kl_artifact_free(a);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_cuda SOURCE_DIR [--quick]\n");
    return 2;
  }
  int quick = argc > 2 && strcmp(argv[2], "--quick") == 0;
  char path[1024];
  kl_worker *w;
  CHECK(kl_worker_create(&w, NULL));
  kl_device_info d = KL_DEVICE_INFO_INIT;
  CHECK(kl_worker_device(&d, w));
  if (d.count == 0) {
    fprintf(stderr, "bench_cuda: no CUDA device: %s\n", d.why);
    return 1;
  }
  fprintf(stderr, "device %s, %d SMs\n", d.name, d.sms);
  kl_case *copy, *empty;
  snprintf(path, sizeof(path), "%s/bench/cases/copy_f32", argv[1]);
  CHECK(kl_case_load(&copy, path, NULL));
  snprintf(path, sizeof(path), "%s/bench/cases/empty", argv[1]);
  CHECK(kl_case_load(&empty, path, NULL));
  snprintf(path, sizeof(path),
           "%s/bench/cases/copy_f32/candidates/slower_1pct.cu", argv[1]);
  char *slower_src = kl_test_slurp(path);
  if (!slower_src) {
    fprintf(stderr, "bench_cuda: cannot read %s\n", path);
    return 1;
  }
  int base = load(w, copy, NULL), slower = load(w, copy, slower_src);
  int e = load(w, empty, NULL);
  one em = measure(w, e, 0, 0, 0);
  fprintf(stderr, "empty  kernel reads %.3f us (hot, CUPTI)\n", em.median);
  printf("{\"bench\":\"cuda_empty\",\"median_us\":%.4f}\n", em.median);
  size_bench(w, base, 0, "20us", quick ? 5 : 30);
  size_bench(w, base, 1, "5us", quick ? 5 : 30);
  decisions(w, base, slower, 0, "20us", quick ? 5 : 20);
  fresh_processes(copy, 0, "20us", quick ? 3 : 10);
  fresh_processes(copy, 1, "5us", quick ? 3 : 10);
  free(slower_src);
  kl_case_free(copy);
  kl_case_free(empty);
  kl_worker_free(w);
  return 0;
}
