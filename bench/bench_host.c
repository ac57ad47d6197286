/* Host-backend measurement benchmark (not a test).
 *
 * For each host case and shape it prints, from measurements in this run:
 *   - wall time per cold sample over the kernel's median time (the cost of
 *     honesty: the read-only cache flush between samples) and the same for
 *     hot samples;
 *   - the relative spread (sd / mean) of the median over 10 independent
 *     measurements with the default stopping rule, and the median number of
 *     samples those took;
 *   - the time to a decision of kl compare, A/A (baseline against itself)
 *     and A/B (host_matmul's blocked candidate), checks included.
 * usage: bench_host SOURCE_DIR [--quick]   (JSON lines on stdout, a table on
 * stderr). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernlab/kernlab.h"
#include "support/slurp.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define CHECK(x)                                                               \
  do {                                                                         \
    if ((x) < 0) {                                                             \
      fprintf(stderr, "bench_host: %s: %s\n", #x, kl_error_last()->message);   \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static void measure_shape(kl_worker *w, int id, const kl_case *c, int shape,
                          int repeats) {
  const char *name = kl_case_shape_name(c, (size_t)shape);
  double wall_per_kernel[2] = {0, 0};
  for (int hot = 0; hot < 2; hot++) {
    kl_time_options t = KL_TIME_OPTIONS_INIT;
    t.cold = !hot;
    kl_samples s = KL_SAMPLES_INIT;
    CHECK(kl_worker_time(&s, w, &id, 1, shape, &t));
    kl_summary sum;
    kl_stats_summarize(&sum, s.us[0], s.n);
    wall_per_kernel[hot] = s.wall_ms * 1000.0 / (double)s.n / sum.median;
    kl_samples_dispose(&s);
  }
  double medians[16], samples[16];
  for (int r = 0; r < repeats; r++) {
    kl_time_options t = KL_TIME_OPTIONS_INIT;
    kl_samples s = KL_SAMPLES_INIT;
    CHECK(kl_worker_time(&s, w, &id, 1, shape, &t));
    kl_summary sum;
    kl_stats_summarize(&sum, s.us[0], s.n);
    medians[r] = sum.median;
    samples[r] = (double)s.n;
    kl_samples_dispose(&s);
  }
  double mean = 0, var = 0;
  for (int r = 0; r < repeats; r++)
    mean += medians[r] / repeats;
  for (int r = 0; r < repeats; r++)
    var += (medians[r] - mean) * (medians[r] - mean) / (repeats - 1);
  kl_summary ns;
  kl_stats_summarize(&ns, samples, (size_t)repeats);
  double rsd = sqrt(var) / mean * 100.0;
  fprintf(stderr, "%-12s %-6s %10.1f %10.2f %9.2f %9.2f%% %8.0f\n",
          kl_case_name(c), name, mean, wall_per_kernel[0], wall_per_kernel[1],
          rsd, ns.median);
  printf("{\"bench\":\"host_repeatability\",\"case\":\"%s\",\"shape\":\"%s\","
         "\"median_us\":%.3f,\"cold_wall_per_kernel\":%.3f,"
         "\"hot_wall_per_kernel\":%.3f,\"median_rsd_pct\":%.3f,"
         "\"repeats\":%d,\"samples_per_measurement\":%.0f}\n",
         kl_case_name(c), name, mean, wall_per_kernel[0], wall_per_kernel[1],
         rsd, repeats, ns.median);
}

static void decision_time(const kl_case *c, const char *candidate_path,
                          const char *shape, const char *label) {
  char *cand = kl_test_slurp(candidate_path);
  if (!cand) {
    fprintf(stderr, "bench_host: cannot read %s\n", candidate_path);
    exit(1);
  }
  kl_bench_options o = KL_BENCH_OPTIONS_INIT;
  o.candidate = cand;
  o.shape = shape;
  kl_report *r;
  kl_report_free(NULL);
  /* once to fill the compile cache, then timed */
  CHECK(kl_bench_compare(&r, c, &o));
  kl_report_free(r);
  double t0 = now_s();
  CHECK(kl_bench_compare(&r, c, &o));
  double secs = now_s() - t0;
  kl_shape_result s = KL_SHAPE_RESULT_INIT;
  kl_report_shape(&s, r, 0);
  fprintf(stderr, "%-28s %-6s %8.2f s  %6.3f [%.3f, %.3f] %s after %zu pairs\n",
          label, shape, secs, s.speedup.speedup, s.speedup.ci_low,
          s.speedup.ci_high, kl_decision_name(s.speedup.decision), s.time.n);
  printf("{\"bench\":\"host_decision\",\"label\":\"%s\",\"case\":\"%s\","
         "\"shape\":\"%s\",\"seconds\":%.3f,\"speedup\":%.4f,"
         "\"speedup_ci\":[%.4f,%.4f],\"decision\":\"%s\",\"pairs\":%zu}\n",
         label, kl_case_name(c), shape, secs, s.speedup.speedup,
         s.speedup.ci_low, s.speedup.ci_high,
         kl_decision_name(s.speedup.decision), s.time.n);
  kl_report_free(r);
  free(cand);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_host SOURCE_DIR [--quick]\n");
    return 2;
  }
  int quick = argc > 2 && strcmp(argv[2], "--quick") == 0;
  char path[1024];
  const char *cases[] = {"host_saxpy", "host_matmul"};
  fprintf(stderr, "%-12s %-6s %10s %10s %9s %10s %8s\n", "case", "shape",
          "median_us", "wall/cold", "wall/hot", "rsd(10)", "samples");
  for (int k = 0; k < 2; k++) {
    snprintf(path, sizeof(path), "%s/cases/%s", argv[1], cases[k]);
    kl_case *c;
    CHECK(kl_case_load(&c, path, NULL));
    kl_artifact *a;
    CHECK(kl_compile_plugin(&a, c, NULL, NULL));
    kl_worker *w;
    CHECK(kl_worker_create(&w, NULL));
    int id;
    CHECK(kl_worker_load(&id, w, kl_artifact_path(a)));
    for (size_t s = 0; s < kl_case_shape_count(c); s++) {
      /* the naive 1024 matmul takes 4-5 s a sample: ten measurements of it
       * would take minutes and say nothing the smaller shapes do not */
      if (strcmp(kl_case_shape_name(c, s), "n1024") == 0) continue;
      measure_shape(w, id, c, (int)s, quick ? 3 : 10);
    }
    kl_worker_free(w);
    kl_artifact_free(a);
    kl_case_free(c);
  }
  fprintf(stderr, "\n%-28s %-6s %10s  %s\n", "decision", "shape", "wall",
          "speedup [95% CI] decision");
  kl_case *saxpy, *matmul;
  snprintf(path, sizeof(path), "%s/cases/host_saxpy", argv[1]);
  CHECK(kl_case_load(&saxpy, path, NULL));
  snprintf(path, sizeof(path), "%s/cases/host_matmul", argv[1]);
  CHECK(kl_case_load(&matmul, path, NULL));
  snprintf(path, sizeof(path), "%s/cases/host_saxpy/kernel.c", argv[1]);
  decision_time(saxpy, path, "1M", "A/A saxpy (same)");
  snprintf(path, sizeof(path), "%s/cases/host_matmul/kernel.c", argv[1]);
  decision_time(matmul, path, "n256", "A/A matmul (same)");
  snprintf(path, sizeof(path), "%s/cases/host_matmul/candidates/ikj_blocked.c",
           argv[1]);
  decision_time(matmul, path, "n256", "A/B matmul blocked (faster)");
  kl_case_free(saxpy);
  kl_case_free(matmul);
  return 0;
}
