/* GPU test (ctest label gpu): the check compares a CUDA candidate's outputs
 * with the oracle's on the device (kl-worker/check.c, the harness's
 * klh_compare_outputs); KERNLAB_HOST_CHECKS=1 makes the worker read them
 * back and compare on the host, as it did before. Both ways must count the
 * same defects of tests/gpu/checks/spoiled.cu, field for field, and the
 * counts must be the ones its fixed defects give: an f32 output with an
 * unwritten element, NaNs and errors inside and outside the tolerance, an
 * f16 output with infinities, a bf16 one, an i32 one compared with a
 * tolerance and with an unwritten element, and an inout, at 1000 elements
 * and at 3000007 (ragged tails for every stride). */
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
#define CASE SRC "/tests/gpu/checks"
#define NSEEDS 3

static bool have_gpu;
static char cache[] = "/tmp/kl-gpu-checks-XXXXXX";
static kl_compile_options copts = KL_COMPILE_OPTIONS_INIT;

static int setup(void **state) {
  (void)state;
  return kl_test_gpu_setup(cache, &copts, &have_gpu);
}

static int teardown(void **state) {
  (void)state;
  return kl_test_gpu_teardown(cache);
}

static char *plugin(const kl_case *c, const char *candidate) {
  kl_artifact *a;
  if (kl_compile_plugin(&a, c, candidate, &copts))
    fail_msg("%s", kl_error_last()->message);
  if (!kl_artifact_ok(a)) fail_msg("nvcc: %s", kl_artifact_log(a));
  char *path = strdup(kl_artifact_path(a));
  kl_artifact_free(a);
  return path;
}

/* Check the spoiled candidate and the baseline itself at both shapes in a
 * fresh worker: out[shape][seed], self[shape][seed]. */
static void check_all(kl_check_result out[2][NSEEDS],
                      kl_check_result self[2][NSEEDS], const char *base,
                      const char *cand) {
  static const uint64_t seeds[NSEEDS] = {11, 12, 13};
  kl_worker *w;
  assert_int_equal(kl_worker_create(&w, NULL), 0);
  int bid, cid;
  assert_int_equal(kl_worker_load(&bid, w, base), 0);
  assert_int_equal(kl_worker_load(&cid, w, cand), 0);
  for (int s = 0; s < 2; s++) {
    for (int i = 0; i < NSEEDS; i++)
      out[s][i] = self[s][i] = (kl_check_result)KL_CHECK_RESULT_INIT;
    if (kl_worker_check(out[s], w, cid, bid, s, seeds, NSEEDS) ||
        kl_worker_check(self[s], w, bid, bid, s, seeds, NSEEDS))
      fail_msg("check: %s", kl_error_last()->message);
  }
  kl_worker_free(w);
}

/* The defects spoiled.cu leaves at n elements. */
static void expected(uint64_t n, uint64_t *mismatches, uint64_t *unwritten,
                     uint64_t *nonfinite) {
  *mismatches = *unwritten = *nonfinite = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (i == n - 1) { /* y */
      ++*unwritten;
      ++*mismatches;
    } else if (i % 997 == 5) {
      ++*nonfinite;
      ++*mismatches;
    } else if (i % 1000 == 17) {
      ++*mismatches;
    }
    if (i % 500 == 3) { /* h */
      ++*nonfinite;
      ++*mismatches;
    }
    *mismatches += i % 300 == 7; /* b */
    if (i == 0) {                /* k */
      ++*unwritten;
      ++*mismatches;
    } else if (i % 777 == 1) {
      ++*mismatches;
    }
    *mismatches += i % 611 == 9; /* acc */
  }
}

static void test_gpu__device_and_host_checks_agree(void **state) {
  (void)state;
  if (!have_gpu) skip();
  kl_case *c;
  if (kl_case_load(&c, CASE, NULL)) fail_msg("%s", kl_error_last()->message);
  char *spoiled = kl_test_slurp(CASE "/spoiled.cu");
  assert_non_null(spoiled);
  char *base = plugin(c, NULL), *cand = plugin(c, spoiled);
  kl_check_result dev[2][NSEEDS], host[2][NSEEDS], dev_self[2][NSEEDS],
      host_self[2][NSEEDS];
  assert_int_equal(unsetenv("KERNLAB_HOST_CHECKS"), 0);
  check_all(dev, dev_self, base, cand);
  assert_int_equal(setenv("KERNLAB_HOST_CHECKS", "1", 1), 0);
  check_all(host, host_self, base, cand);
  assert_int_equal(unsetenv("KERNLAB_HOST_CHECKS"), 0);
  static const uint64_t sizes[2] = {1000, 3000007};
  for (int s = 0; s < 2; s++) {
    uint64_t mism, unw, nonf;
    expected(sizes[s], &mism, &unw, &nonf);
    for (int i = 0; i < NSEEDS; i++) {
      const kl_check_result *d = &dev[s][i], *h = &host[s][i];
      print_message(
          "n=%llu seed %llu: device %llu mismatches, %llu "
          "unwritten, %llu nonfinite, max %.9g (%s); host %llu, "
          "%llu, %llu, max %.9g (%s); expected %llu, %llu, %llu\n",
          (unsigned long long)sizes[s], (unsigned long long)d->seed,
          (unsigned long long)d->mismatches, (unsigned long long)d->unwritten,
          (unsigned long long)d->nonfinite, d->max_abs_err, d->detail,
          (unsigned long long)h->mismatches, (unsigned long long)h->unwritten,
          (unsigned long long)h->nonfinite, h->max_abs_err, h->detail,
          (unsigned long long)mism, (unsigned long long)unw,
          (unsigned long long)nonf);
      assert_int_equal(d->mismatches, mism);
      assert_int_equal(d->unwritten, unw);
      assert_int_equal(d->nonfinite, nonf);
      assert_int_equal(d->mismatches, h->mismatches);
      assert_int_equal(d->unwritten, h->unwritten);
      assert_int_equal(d->nonfinite, h->nonfinite);
      assert_true(d->max_abs_err == h->max_abs_err);
      assert_true(d->max_abs_err > 0.99 && d->max_abs_err < 1.01);
      assert_string_equal(d->detail, h->detail);
      assert_string_equal(d->detail, "y[5]: unwritten or wrong");
      assert_false(d->correct || h->correct);
      assert_int_equal(d->inputs_written + h->inputs_written, 0);
      assert_int_equal(d->late_bytes + h->late_bytes, 0);
      /* the baseline against itself: nothing, either way */
      const kl_check_result *ds = &dev_self[s][i], *hs = &host_self[s][i];
      assert_true(ds->correct && hs->correct);
      assert_int_equal(ds->mismatches + hs->mismatches, 0);
      assert_true(ds->max_abs_err == 0 && hs->max_abs_err == 0);
    }
  }
  free(base);
  free(cand);
  free(spoiled);
  kl_case_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu__device_and_host_checks_agree),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
