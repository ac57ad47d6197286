/* GPU tests of the profiler (ctest label gpu): the standard set on the
 * bundled cases, judged by what the kernels are known to do, never by
 * times. Each profile is written to $KL_PROFILE_OUT/<case>.<shape>.json
 * when that variable is set, which is how tests/profile/fixtures were
 * recorded. Every test skips where the worker sees no CUDA device. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernlab/kernlab.h"
#include "support/gpu.h"
#include "support/slurp.h"

#define SRC KL_SOURCE_DIR

static bool have_gpu;
static char cache[] = "/tmp/kl-gpu-profile-XXXXXX";
static kl_compile_options copts = KL_COMPILE_OPTIONS_INIT;

static int setup(void **state) {
  (void)state;
  return kl_test_gpu_setup(cache, &copts, &have_gpu);
}

static int teardown(void **state) {
  (void)state;
  return kl_test_gpu_teardown(cache);
}

static void save(const char *case_name, const kl_report *r) {
  const char *dir = getenv("KL_PROFILE_OUT");
  for (size_t i = 0; dir && i < kl_report_shape_count(r); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    kl_report_shape(&s, r, i);
    const kl_profile *p = kl_report_profile(r, i);
    kl_buf b = KL_BUF_INIT;
    if (!p || kl_profile_json(&b, p, 0)) continue;
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.%s.json", dir, case_name, s.name);
    FILE *f = fopen(path, "w");
    if (f) {
      fprintf(f, "%s\n", b.ptr);
      fclose(f);
    }
    kl_buf_dispose(&b);
  }
}

/* Profile a case (or a candidate) at one shape with a set. */
static kl_report *profile(const char *case_name, const char *candidate,
                          const char *shape, const char *set) {
  char path[512];
  snprintf(path, sizeof(path), SRC "/cases/%s", case_name);
  kl_case *c;
  if (kl_case_load(&c, path, NULL)) fail_msg("%s", kl_error_last()->message);
  kl_bench_options o = KL_BENCH_OPTIONS_INIT;
  o.compile = &copts;
  o.shape = shape;
  o.profile = set;
  o.time.time_cap_ms = 300;
  char *src = NULL;
  if (candidate) {
    snprintf(path, sizeof(path), SRC "/cases/%s/candidates/%s", case_name,
             candidate);
    assert_non_null(src = kl_test_slurp(path));
    o.candidate = src;
    o.candidate_name = candidate;
  }
  kl_report *r = NULL;
  if (kl_bench_run(&r, c, &o))
    fail_msg("%s: %s", case_name, kl_error_last()->message);
  assert_int_equal(kl_report_verdict(r), KL_VERDICT_OK);
  save(candidate ? candidate : case_name, r);
  free(src);
  kl_case_free(c);
  return r;
}

static double value(const kl_profile *p, const char *name) {
  double v = NAN;
  if (kl_profile_value(&v, p, name)) fail_msg("no %s in the profile", name);
  print_message("  %s = %g\n", name, v);
  return v;
}

/* A profile's own cost, from its JSON: "key":number, or NAN. */
static double cost(const kl_profile *p, const char *key) {
  kl_buf b = KL_BUF_INIT;
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  double v = NAN;
  if (kl_profile_json(&b, p, 0) == 0) {
    const char *at = strstr(b.ptr, pat);
    if (at && strncmp(at + strlen(pat), "null", 4) != 0)
      v = strtod(at + strlen(pat), NULL);
  }
  kl_buf_dispose(&b);
  return v;
}

static void test_vector_add_memory_bound(void **state) {
  (void)state;
  if (!have_gpu) skip();
  kl_report *r = profile("vector_add", NULL, NULL, "standard");
  for (size_t i = 0; i < kl_report_shape_count(r); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    kl_report_shape(&s, r, i);
    const kl_profile *p = kl_report_profile(r, i);
    assert_non_null(p);
    print_message("%s: %s; init %.1f, setup %.1f, passes %.1f (first %.1f) "
                  "ms\n",
                  s.name, kl_profile_verdict(p), cost(p, "init_ms"),
                  cost(p, "setup_ms"), cost(p, "collect_ms"),
                  cost(p, "first_pass_ms"));
    /* one worker for every shape: the profiler's start-up and priming
     * are the first shape's alone, and every shape reads real counters
     * (a profiler kept enabled between them once read back NaN) */
    assert_true(i == 0 ? cost(p, "init_ms") > 0 : cost(p, "init_ms") == 0);
    assert_true(cost(p, "setup_ms") >= 0 && cost(p, "first_pass_ms") >= 0);
    assert_true(cost(p, "first_pass_ms") <= cost(p, "collect_ms"));
    assert_true(value(p, "dram_bytes_read") > 0);
    assert_true(kl_profile_passes(p) <= 15);
    if (s.time.median < 20) /* a small shape may be launch-bound */
      continue;
    assert_int_equal(kl_profile_bottleneck(p), KL_BOTTLENECK_MEMORY);
    assert_true(value(p, "dram_throughput_pct") > 60.0);
    /* vector add: 4-byte loads and stores by full warps */
    assert_true(fabs(value(p, "sectors_per_load_request") - 4.0) < 0.5);
  }
  kl_report_free(r);
}

static void test_transpose_coalescing(void **state) {
  (void)state;
  if (!have_gpu) skip();
  kl_report *naive = profile("transpose_f32", NULL, "square4k", "standard");
  kl_report *tiled =
      profile("transpose_f32", "tiled.cu", "square4k", "standard");
  const kl_profile *pn = kl_report_profile(naive, 0);
  const kl_profile *pt = kl_report_profile(tiled, 0);
  assert_non_null(pn);
  assert_non_null(pt);
  /* the naive kernel's stores stride by a row: a sector per thread */
  assert_true(value(pn, "sectors_per_store_request") > 16.0);
  assert_true(value(pt, "sectors_per_store_request") <= 4.5);
  assert_true(value(pt, "sectors_per_load_request") <= 4.5);
  kl_report_free(naive);
  kl_report_free(tiled);
}

static void test_gemm_naive_not_memory_bound(void **state) {
  (void)state;
  if (!have_gpu) skip();
  kl_report *r = profile("gemm_f32", NULL, "s1024", "standard");
  const kl_profile *p = kl_report_profile(r, 0);
  assert_non_null(p);
  print_message("%s\n", kl_profile_verdict(p));
  assert_int_not_equal(kl_profile_bottleneck(p), KL_BOTTLENECK_MEMORY);
  assert_int_not_equal(kl_profile_bottleneck(p), KL_BOTTLENECK_UNKNOWN);
  assert_true(value(p, "theoretical_occupancy_pct") > 0);
  kl_report_free(r);
}

/* Every bundled CUDA case and candidate gets the standard set and a
 * verdict, at one shape each (the larger shapes are covered above and by
 * bench/profile_vs_ncu.sh). */
static void test_every_case_standard(void **state) {
  (void)state;
  if (!have_gpu) skip();
  static const char *const cases[][3] = {
      {"vector_add", NULL, "16M"},
      {"rmsnorm_bf16", NULL, "small"},
      {"transpose_f32", NULL, "square1k"},
      {"transpose_f32", "tiled.cu", "square1k"},
      {"softmax_f32", NULL, "r4k_c1k"},
      {"softmax_f32", "warp_per_row.cu", "r4k_c1k"},
      {"reduce_sum_f32", NULL, "16M"},
      {"reduce_sum_f32", "block_reduce.cu", "16M"},
      {"gemm_f32", NULL, "s512"},
      {"gemm_f32", "smem_tiled.cu", "s512"}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kl_report *r = profile(cases[i][0], cases[i][1], cases[i][2], "standard");
    for (size_t s = 0; s < kl_report_shape_count(r); s++) {
      const kl_profile *p = kl_report_profile(r, s);
      kl_shape_result sr = KL_SHAPE_RESULT_INIT;
      kl_report_shape(&sr, r, s);
      assert_non_null(p);
      print_message("%s%s%s %s: %zu passes, %s\n", cases[i][0],
                    cases[i][1] ? "/" : "", cases[i][1] ? cases[i][1] : "",
                    sr.name, kl_profile_passes(p), kl_profile_verdict(p));
      assert_int_not_equal(kl_profile_bottleneck(p), KL_BOTTLENECK_UNKNOWN);
      assert_true(kl_profile_passes(p) >= 1 && kl_profile_passes(p) <= 15);
    }
    kl_report_free(r);
  }
}

static void test_quick_and_user_sets(void **state) {
  (void)state;
  if (!have_gpu) skip();
  kl_report *r = profile("vector_add", NULL, NULL, "quick");
  const kl_profile *p = kl_report_profile(r, 0);
  assert_true(kl_profile_passes(p) <= 3);
  kl_report_free(r);
  r = profile("vector_add", NULL, NULL,
              "dram__bytes_read.sum, l2_hit_rate_pct");
  p = kl_report_profile(r, 0);
  assert_true(value(p, "dram__bytes_read.sum") > 0);
  assert_true(value(p, "l2_hit_rate_pct") >= 0);
  kl_report_free(r);
  /* a name the chip does not have is an error naming it */
  kl_case *c;
  assert_int_equal(kl_case_load(&c, SRC "/cases/vector_add", NULL), 0);
  kl_bench_options o = KL_BENCH_OPTIONS_INIT;
  o.compile = &copts;
  o.profile = "dram__byts_read.sum";
  o.time.time_cap_ms = 100;
  assert_int_equal(kl_bench_run(&r, c, &o), KL_EINVALID);
  print_message("%s\n", kl_error_last()->message);
  assert_non_null(strstr(kl_error_last()->message, "dram__byts_read.sum"));
  kl_case_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vector_add_memory_bound),
      cmocka_unit_test(test_transpose_coalescing),
      cmocka_unit_test(test_gemm_naive_not_memory_bound),
      cmocka_unit_test(test_quick_and_user_sets),
      cmocka_unit_test(test_every_case_standard),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
