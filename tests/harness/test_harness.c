/* The harness generator: golden files for both forms of both host cases
 * (KL_UPDATE_GOLDEN=1 rewrites them after a deliberate change), determinism,
 * and the standalone form compiling and running with nothing but cc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/internal.h"
#include "kernlab/kernlab.h"
#include "support/slurp.h"

#define SRC KL_SOURCE_DIR

static void generate(kl_buf *out, const char *case_name, const char *cand,
                     kl_harness_form form) {
  char path[512];
  snprintf(path, sizeof(path), SRC "/cases/%s", case_name);
  kl_case *c;
  if (kl_case_load(&c, path, NULL)) fail_msg("%s", kl_error_last()->message);
  kl_harness_options o = KL_HARNESS_OPTIONS_INIT;
  o.form = form;
  if (cand) o.candidate_name = "candidate.c";
  if (kl_harness_generate(out, c, cand, &o))
    fail_msg("%s", kl_error_last()->message);
  kl_case_free(c);
}

static void golden(const char *case_name, const char *cand,
                   kl_harness_form form, const char *file) {
  kl_buf b = KL_BUF_INIT;
  generate(&b, case_name, cand, form);
  char path[512];
  snprintf(path, sizeof(path), SRC "/tests/harness/golden/%s", file);
  const char *update = getenv("KL_UPDATE_GOLDEN");
  if (update && update[0] == '1') {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(b.ptr, 1, b.size, f);
    fclose(f);
  }
  char *want = kl_test_slurp(path);
  if (!want) fail_msg("no golden file %s (run with KL_UPDATE_GOLDEN=1)", path);
  if (strcmp(want, b.ptr) != 0) {
    size_t i = 0;
    while (want[i] && want[i] == b.ptr[i])
      i++;
    fail_msg("%s differs from the generated source at byte %zu", file, i);
  }
  free(want);
  kl_buf_dispose(&b);
}

static void test_harness__golden_files(void **state) {
  (void)state;
  golden("host_saxpy", NULL, KL_HARNESS_STANDALONE, "host_saxpy.standalone.c");
  golden("host_saxpy", NULL, KL_HARNESS_PLUGIN, "host_saxpy.plugin.c");
  golden("host_matmul", NULL, KL_HARNESS_STANDALONE,
         "host_matmul.standalone.c");
  golden("vector_add", NULL, KL_HARNESS_STANDALONE, "vector_add.standalone.cu");
  golden("rmsnorm_bf16", NULL, KL_HARNESS_PLUGIN, "rmsnorm_bf16.plugin.cu");
  golden("host_saxpy",
         "void saxpy(float *y, const float *x, float a, int n) {\n"
         "  for (int i = 0; i < n; i++) y[i] += a * x[i];\n}\n",
         KL_HARNESS_STANDALONE, "host_saxpy.candidate.standalone.c");
}

static void test_harness__deterministic(void **state) {
  (void)state;
  kl_buf a = KL_BUF_INIT, b = KL_BUF_INIT;
  generate(&a, "host_matmul", NULL, KL_HARNESS_PLUGIN);
  generate(&b, "host_matmul", NULL, KL_HARNESS_PLUGIN);
  assert_int_equal(a.size, b.size);
  assert_memory_equal(a.ptr, b.ptr, a.size);
  kl_buf_dispose(&a);
  kl_buf_dispose(&b);
}

static void test_harness__standalone_runs_with_only_cc(void **state) {
  (void)state;
  /* A candidate with an off-by-one against the embedded baseline: the
   * standalone program must find it by itself. */
  kl_buf b = KL_BUF_INIT;
  generate(&b, "host_saxpy",
           "void saxpy(float *y, const float *x, float a, int n) {\n"
           "  for (int i = 0; i < n - 1; i++) y[i] = a * x[i] + y[i];\n}\n",
           KL_HARNESS_STANDALONE);
  char dir[] = "/tmp/kl-harness-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char src[256], exe[256], cmd[1024], out[256];
  snprintf(src, sizeof(src), "%s/h.c", dir);
  snprintf(exe, sizeof(exe), "%s/h", dir);
  snprintf(out, sizeof(out), "%s/out.txt", dir);
  FILE *f = fopen(src, "wb");
  fwrite(b.ptr, 1, b.size, f);
  fclose(f);
  snprintf(cmd, sizeof(cmd),
           "cc -std=c11 -O2 -Wall -Wextra -Werror %s -lm -o %s", src, exe);
  assert_int_equal(system(cmd), 0);
  snprintf(cmd, sizeof(cmd), "%s > %s", exe, out);
  int status = system(cmd);
  assert_int_not_equal(status, 0); /* an incorrect candidate fails */
  char *text = kl_test_slurp(out);
  assert_non_null(text);
  assert_non_null(strstr(text, "\"shape\":\"1M\",\"checked\":true,"
                               "\"correct\":false"));
  assert_non_null(strstr(text, "\"mismatches\":3,")); /* one per seed */
  free(text);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
  kl_buf_dispose(&b);
}

/* The build line a harness prints uses the case's target.flags in place of
 * the default flags, as kernlab's own compile does. */
static void test_harness__build_line_says_the_case_flags(void **state) {
  (void)state;
  char dir[] = "/tmp/kl-harness-XXXXXX", cmd[1024];
  assert_non_null(mkdtemp(dir));
  snprintf(cmd, sizeof(cmd),
           "cp -r " SRC "/cases/host_saxpy/. %s && sed -i 's/^backend: "
           "host$/backend: host\\ntarget: { flags: \"-O2 -DKL_X=1\" }/' "
           "%s/case.yaml",
           dir, dir);
  assert_int_equal(system(cmd), 0);
  kl_case *c;
  if (kl_case_load(&c, dir, NULL)) fail_msg("%s", kl_error_last()->message);
  kl_harness_options o = KL_HARNESS_OPTIONS_INIT;
  kl_buf b = KL_BUF_INIT;
  o.form = KL_HARNESS_STANDALONE;
  assert_int_equal(kl_harness_generate(&b, c, NULL, &o), 0);
  assert_non_null(strstr(b.ptr, " * Build and run: cc -O2 -DKL_X=1 harness.c"));
  kl_buf_dispose(&b);
  o.form = KL_HARNESS_PLUGIN;
  assert_int_equal(kl_harness_generate(&b, c, NULL, &o), 0);
  assert_non_null(strstr(b.ptr, " * Build: cc -O2 -DKL_X=1 -shared"));
  kl_buf_dispose(&b);
  kl_case_free(c);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

static void test_harness__cuda_plugin_compiles_with_nvcc(void **state) {
  (void)state;
  /* Generating and compiling CUDA harnesses needs the toolkit, not a GPU. */
  if (system("command -v nvcc >/dev/null 2>&1") != 0) skip();
  kl_case *c;
  assert_int_equal(kl_case_load(&c, SRC "/cases/rmsnorm_bf16", NULL), 0);
  char cache[] = "/tmp/kl-nvcc-XXXXXX";
  assert_non_null(mkdtemp(cache));
  kl_compile_options o = KL_COMPILE_OPTIONS_INIT;
  o.cache_dir = cache;
  kl_artifact *a;
  if (kl_compile_plugin(&a, c, NULL, &o))
    fail_msg("%s", kl_error_last()->message);
  if (!kl_artifact_ok(a)) fail_msg("nvcc failed: %s", kl_artifact_log(a));
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "nm -D %s | grep -q ' T kl_plugin_v1'",
           kl_artifact_path(a));
  assert_int_equal(system(cmd), 0);
  kl_artifact_free(a);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", cache);
  assert_int_equal(system(cmd), 0);
  kl_case_free(c);
}

/* Fail each allocation of a generation in turn: every failure must be
 * KL_ENOMEM with nothing handed out (ASan runs show nothing leaks). */
static void test_harness__out_of_memory_sweep(void **state) {
  (void)state;
  const char *cases[] = {SRC "/cases/host_matmul", SRC "/cases/rmsnorm_bf16"};
  for (size_t k = 0; k < 2; k++) {
    kl_case *c;
    assert_int_equal(kl_case_load(&c, cases[k], NULL), 0);
    int failures = 0;
    for (long nth = 1; nth < 100000; nth++) {
      kl_buf b = KL_BUF_INIT;
      kl_harness_options o = KL_HARNESS_OPTIONS_INIT;
      o.form = KL_HARNESS_PLUGIN;
      kl__alloc_fail_after(nth);
      int rc = kl_harness_generate(&b, c, NULL, &o);
      kl__alloc_fail_after(0);
      if (rc == 0) {
        assert_non_null(b.ptr);
        kl_buf_dispose(&b);
        break;
      }
      if (rc != KL_ENOMEM) fail_msg("allocation %ld: rc %d", nth, rc);
      assert_null(b.ptr);
      failures++;
    }
    assert_true(failures > 3);
    kl_case_free(c);
  }
  /* and the statistics */
  double x[64];
  for (int i = 0; i < 64; i++)
    x[i] = 10 + i % 7;
  for (long nth = 1; nth < 64; nth++) {
    kl_speedup sp;
    kl__alloc_fail_after(nth);
    int rc = kl_stats_speedup_blocked(&sp, x, x, 64, 8, 0, 2.0);
    kl__alloc_fail_after(0);
    if (rc == 0) break;
    assert_int_equal(rc, KL_ENOMEM);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_harness__golden_files),
      cmocka_unit_test(test_harness__deterministic),
      cmocka_unit_test(test_harness__standalone_runs_with_only_cc),
      cmocka_unit_test(test_harness__build_line_says_the_case_flags),
      cmocka_unit_test(test_harness__cuda_plugin_compiles_with_nvcc),
      cmocka_unit_test(test_harness__out_of_memory_sweep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
