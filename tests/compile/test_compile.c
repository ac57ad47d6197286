/* The compile cache: a key compiles once; flags and defines change the
 * key; compiler errors carry the candidate's own line numbers and are
 * cached too. Each test uses a fresh cache folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernlab/kernlab.h"

static char cache[] = "/tmp/kl-cache-test-XXXXXX";
static kl_case *saxpy;

static int setup(void **state) {
  (void)state;
  if (!mkdtemp(cache)) return -1;
  return kl_case_load(&saxpy, KL_SOURCE_DIR "/cases/host_saxpy", NULL);
}

static int teardown(void **state) {
  (void)state;
  kl_case_free(saxpy);
  char cmd[256];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", cache);
  return system(cmd) == 0 ? 0 : -1;
}

static kl_artifact *compile(const char *cand, const char *const *defines) {
  kl_compile_options o = KL_COMPILE_OPTIONS_INIT;
  o.cache_dir = cache;
  o.defines = defines;
  o.candidate_name = "cand.c";
  kl_artifact *a = NULL;
  if (kl_compile_plugin(&a, saxpy, cand, &o))
    fail_msg("%s", kl_error_last()->message);
  return a;
}

static void test_compile__second_time_is_cached(void **state) {
  (void)state;
  kl_artifact *a = compile(NULL, NULL), *b = compile(NULL, NULL);
  assert_true(kl_artifact_ok(a));
  assert_false(kl_artifact_cached(a));
  assert_true(kl_artifact_ok(b));
  assert_true(kl_artifact_cached(b));
  assert_string_equal(kl_artifact_key(a), kl_artifact_key(b));
  assert_string_equal(kl_artifact_path(a), kl_artifact_path(b));
  assert_int_equal(strlen(kl_artifact_key(a)), 64);
  const char *unroll4[] = {"UNROLL=4", NULL}, *unroll8[] = {"UNROLL=8", NULL};
  kl_artifact *c = compile(NULL, unroll4), *d = compile(NULL, unroll8);
  assert_string_not_equal(kl_artifact_key(a), kl_artifact_key(c));
  assert_string_not_equal(kl_artifact_key(c), kl_artifact_key(d));
  assert_false(kl_artifact_cached(c));
  kl_artifact_free(a);
  kl_artifact_free(b);
  kl_artifact_free(c);
  kl_artifact_free(d);
}

static void test_compile__errors_name_the_candidates_line(void **state) {
  (void)state;
  const char *bad = "void saxpy(float *y, const float *x, float a, int n) {\n"
                    "  for (int i = 0; i < n; i++)\n"
                    "    y[i] = a * x[i] + undefined_name;\n"
                    "}\n";
  kl_artifact *a = compile(bad, NULL);
  assert_false(kl_artifact_ok(a));
  assert_null(kl_artifact_path(a));
  const char *first = kl_artifact_first_error(a);
  assert_non_null(first);
  assert_true(strncmp(first, "cand.c:3:", 9) == 0);
  assert_non_null(strstr(first, "undefined_name"));
  assert_false(kl_artifact_cached(a));
  /* the failure is remembered: not compiled a second time */
  kl_artifact *b = compile(bad, NULL);
  assert_false(kl_artifact_ok(b));
  assert_true(kl_artifact_cached(b));
  assert_string_equal(kl_artifact_first_error(b), first);
  kl_artifact_free(a);
  kl_artifact_free(b);
}

static void test_compile__missing_compiler_is_an_error(void **state) {
  (void)state;
  kl_compile_options o = KL_COMPILE_OPTIONS_INIT;
  o.cache_dir = cache;
  o.compiler = "/nonexistent/cc";
  kl_artifact *a = NULL;
  assert_int_equal(kl_compile_plugin(&a, saxpy, NULL, &o), KL_ENOTFOUND);
  assert_null(a);
  assert_non_null(strstr(kl_error_last()->message, "/nonexistent/cc"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compile__second_time_is_cached),
      cmocka_unit_test(test_compile__errors_name_the_candidates_line),
      cmocka_unit_test(test_compile__missing_compiler_is_an_error),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
