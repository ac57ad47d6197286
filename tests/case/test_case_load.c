/* The case loader: every bundled case loads with the values it should, and
 * every case of the bad corpus (tests/case/bad/NAME/) yields exactly the
 * diagnostics listed in its expected.txt, one "line:column: text" a line.
 * An out-of-memory sweep fails each allocation of a load in turn. */
#include <dirent.h>
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

#define CASES KL_SOURCE_DIR "/cases/"
#define BAD KL_SOURCE_DIR "/tests/case/bad"

static kl_case *load_ok(const char *path) {
  kl_case *c = NULL;
  if (kl_case_load(&c, path, NULL) != 0)
    fail_msg("%s: %s", path, kl_error_last()->message);
  return c;
}

static int param_index(const kl_case *c, const char *name) {
  for (size_t i = 0; i < kl_case_param_count(c); i++) {
    kl_param_info p = KL_PARAM_INFO_INIT;
    kl_case_param(&p, c, i);
    if (strcmp(p.name, name) == 0) return (int)i;
  }
  fail_msg("no param %s", name);
  return -1;
}

static void test_case_load__rmsnorm(void **state) {
  (void)state;
  kl_case *c = load_ok(CASES "rmsnorm_bf16");
  assert_string_equal(kl_case_name(c), "rmsnorm_bf16");
  assert_int_equal(kl_case_backend(c), KL_BACKEND_CUDA);
  assert_string_equal(kl_case_arch(c), "sm_90");
  assert_string_equal(kl_case_entry(c), "rmsnorm");
  assert_int_equal(kl_case_param_count(c), 6);
  assert_true(kl_case_shape_count(c) >= 4);
  kl_param_info p = KL_PARAM_INFO_INIT;
  assert_int_equal(kl_case_param(&p, c, 0), 0);
  assert_string_equal(p.name, "out");
  assert_int_equal(p.dtype, KL_DTYPE_BF16);
  assert_true(p.is_pointer);
  assert_int_equal(p.role, KL_ROLE_OUTPUT);
  assert_int_equal(p.init, KL_INIT_NONE);
  assert_int_equal(kl_case_param(&p, c, 1), 0);
  assert_int_equal(p.init, KL_INIT_NORMAL);
  assert_true(p.init_a == 0 && p.init_b == 1);
  assert_int_equal(kl_case_param(&p, c, 99), KL_EINVALID);

  int small = kl_case_shape_find(c, "small");
  int xlarge = kl_case_shape_find(c, "xlarge");
  assert_true(small >= 0 && xlarge >= 0);
  assert_int_equal(kl_case_shape_find(c, "nope"), KL_ENOTFOUND);
  int64_t n;
  assert_int_equal(kl_case_param_elements(&n, c, 0, (size_t)small), 0);
  assert_int_equal(n, 4096 * 3072);
  assert_int_equal(kl_case_param_elements(&n, c, 2, (size_t)xlarge), 0);
  assert_int_equal(n, 3072);
  assert_int_equal(kl_case_param_elements(&n, c, 3, 0), KL_EINVALID);
  kl_launch l;
  assert_int_equal(kl_case_launch(&l, c, (size_t)xlarge), 0);
  assert_int_equal(l.grid[0], 75600);
  assert_int_equal(l.block[0], 256); /* the first value of tunable BLOCK */
  assert_int_equal(l.grid[1] * l.grid[2] * l.block[1] * l.block[2], 1);
  kl_value eps;
  assert_int_equal(kl_case_scalar_value(&eps, c, 5, 0), 0);
  assert_false(eps.is_int);
  assert_true(eps.f == 1e-6);
  kl_value rows;
  assert_int_equal(kl_case_scalar_value(&rows, c, 3, (size_t)small), 0);
  assert_true(rows.is_int && rows.i == 4096);
  double bytes, flops;
  assert_int_equal(kl_case_roofline(&bytes, &flops, c, (size_t)small), 0);
  assert_true(bytes == 2.0 * (2.0 * 4096 * 3072 + 3072));
  assert_true(flops == 4.0 * 4096 * 3072);
  assert_int_equal(kl_case_buffer_bytes(c, (size_t)small),
                   2 * (2LL * 4096 * 3072 + 3072));
  assert_int_equal(kl_case_tunable_count(c), 2);
  assert_string_equal(kl_case_tunable_name(c, 0), "BLOCK");
  assert_string_equal(kl_case_tunable_value(c, 1, 3), "8");
  assert_null(kl_case_tunable_value(c, 1, 4));
  assert_non_null(kl_case_program_path(c));
  kl_case_free(c);
}

static void test_case_load__launch_geometry_of_2d_and_tails(void **state) {
  (void)state;
  kl_case *c = load_ok(CASES "transpose_f32");
  int odd = kl_case_shape_find(c, "odd");
  assert_true(odd >= 0);
  kl_launch l;
  assert_int_equal(kl_case_launch(&l, c, (size_t)odd), 0);
  assert_int_equal(l.grid[0], (3001 + 31) / 32);
  assert_int_equal(l.grid[1], 1000 / 8);
  assert_int_equal(l.grid[2], 1);
  assert_int_equal(l.block[0], 32);
  assert_int_equal(l.block[1], 8);
  kl_param_info p = KL_PARAM_INFO_INIT;
  kl_case_param(&p, c, 1);
  assert_int_equal(p.init, KL_INIT_ARANGE);
  kl_case_free(c);

  c = load_ok(CASES "vector_add");
  assert_int_equal(kl_case_launch(&l, c, 0), 0);
  assert_int_equal(l.grid[0], 1024 * 1024 / 256);
  assert_int_equal(l.block[0], 256);
  kl_reference_info ref = KL_REFERENCE_INFO_INIT;
  kl_case_reference(&ref, c);
  assert_int_equal(ref.kind, KL_REFERENCE_BASELINE);
  assert_true(ref.atol == 0 && ref.rtol == 0);
  kl_case_free(c);
}

/* A configuration sets a declared tunable: the launch follows it, the
 * harness defaults to it, undeclared names are left alone. */
static void test_case_load__tunable_configuration(void **state) {
  (void)state;
  const char *config[] = {"BLOCK=32", "TILE=4", NULL};
  kl_case_options o = KL_CASE_OPTIONS_INIT;
  o.tunables = config;
  kl_case *c = NULL;
  assert_int_equal(kl_case_load(&c, CASES "gemm_f32", &o), 0);
  int s1024 = kl_case_shape_find(c, "s1024");
  kl_launch l;
  assert_int_equal(kl_case_launch(&l, c, (size_t)s1024), 0);
  assert_int_equal(l.block[0], 32);
  assert_int_equal(l.block[1], 32);
  assert_int_equal(l.grid[0], 1024 / 32);
  assert_string_equal(kl_case_tunable_current(c, 0), "32");
  assert_string_equal(kl_case_tunable_value(c, 0, 0), "16"); /* the list */
  kl_buf h = KL_BUF_INIT;
  assert_int_equal(kl_harness_generate(&h, c, NULL, NULL), 0);
  assert_non_null(strstr(h.ptr, "#ifndef BLOCK\n#define BLOCK 32\n"));
  kl_buf_dispose(&h);
  kl_case_free(c);
  c = load_ok(CASES "gemm_f32");
  assert_int_equal(kl_case_launch(&l, c, (size_t)s1024), 0);
  assert_int_equal(l.block[0], 16);
  assert_string_equal(kl_case_tunable_current(c, 0), "16");
  kl_case_free(c);
  const char *bad[] = {"=3", NULL};
  o.tunables = bad;
  assert_int_equal(kl_case_load(&c, CASES "gemm_f32", &o), KL_EINVALID);
  assert_null(c);
}

static void test_case_load__host_cases(void **state) {
  (void)state;
  kl_case *c = load_ok(CASES "host_matmul");
  assert_int_equal(kl_case_backend(c), KL_BACKEND_HOST);
  assert_null(kl_case_arch(c));
  kl_launch l;
  assert_int_equal(kl_case_launch(&l, c, 0), KL_EUNSUPPORTED);
  kl_reference_info ref = KL_REFERENCE_INFO_INIT;
  kl_case_reference(&ref, c);
  assert_int_equal(ref.kind, KL_REFERENCE_HOST);
  assert_string_equal(ref.function, "matmul_ref");
  assert_non_null(strstr(ref.source, "host_matmul/reference.c"));
  assert_true(ref.rtol == 1e-4);
  kl_case_free(c);

  c = load_ok(CASES "host_saxpy/case.yaml"); /* the file works as well */
  assert_string_equal(kl_case_dir(c), CASES "host_saxpy");
  int y = param_index(c, "y");
  kl_param_info p = KL_PARAM_INFO_INIT;
  kl_case_param(&p, c, (size_t)y);
  assert_int_equal(p.role, KL_ROLE_INOUT);
  assert_int_equal(p.init, KL_INIT_UNIFORM);
  int64_t n;
  assert_int_equal(kl_case_param_elements(&n, c, (size_t)y, 1), 0);
  assert_int_equal(n, 16 * 1024 * 1024);
  assert_true(kl_case_shape_weight(c, 1) == 2.0);
  kl_budget b = KL_BUDGET_INIT;
  kl_case_budget(&b, c);
  assert_int_equal(b.iterations, 6);
  assert_int_equal(b.patience, 3);
  kl_vars *v;
  assert_int_equal(kl_case_shape_vars(&v, c, 0), 0);
  kl_value x;
  assert_int_equal(kl_vars_get(&x, v, "a"), 0);
  assert_true(x.f == 2.5);
  kl_vars_free(v);
  kl_case_free(c);
}

/* Scalar params may be called name, weight or values: a shape gives them
 * values under `values:`, apart from its own name and weight. */
static void test_case_load__reserved_names_as_values(void **state) {
  (void)state;
  kl_case *c = load_ok(KL_SOURCE_DIR "/tests/case/good/reserved_names");
  assert_true(kl_case_shape_weight(c, 0) == 3.0);
  assert_true(kl_case_shape_weight(c, 1) == 1.0);
  kl_value v;
  assert_int_equal(
      kl_case_scalar_value(&v, c, (size_t)param_index(c, "weight"), 0), 0);
  assert_true(v.f == 0.5);
  assert_int_equal(
      kl_case_scalar_value(&v, c, (size_t)param_index(c, "name"), 1), 0);
  assert_int_equal(v.i, 1);
  int64_t n;
  assert_int_equal(kl_case_param_elements(&n, c, 0, 1), 0); /* out at b */
  assert_int_equal(n, 4); /* n: 2*weight, the value given just before */
  assert_string_equal(kl_case_shape_name(c, 1), "b");
  kl_case_free(c);
}

static void test_case_load__describe_json(void **state) {
  (void)state;
  kl_case *c = load_ok(CASES "vector_add");
  kl_buf json = KL_BUF_INIT;
  assert_int_equal(kl_case_describe_json(&json, c), 0);
  assert_non_null(strstr(json.ptr, "\"name\":\"vector_add\""));
  assert_non_null(strstr(json.ptr, "\"grid\":[4096,1,1]"));
  assert_non_null(strstr(json.ptr, "\"elements\":{\"c\":1048576"));
  kl_buf_dispose(&json);
  kl_case_free(c);
}

/* A kernel named by token pasting (NAMED(f32) makes saxpy_f32) is not
 * called missing; a paste that cannot make the entry does not hide a typo
 * (the bad corpus's entry_typo_paste). */
static void test_case_load__entry_made_by_pasting(void **state) {
  (void)state;
  kl_case *c = load_ok(KL_SOURCE_DIR "/tests/case/good/entry_pasted");
  assert_string_equal(kl_case_entry(c), "saxpy_f32");
  kl_case_free(c);
}

/* ---- the bad corpus ------------------------------------------------------ */

typedef struct collected {
  char lines[64][512];
  size_t n;
} collected;

static int collect(const kl_error *e, void *payload) {
  collected *c = payload;
  if (c->n < 64)
    snprintf(c->lines[c->n++], sizeof(c->lines[0]), "%d:%d: %s", e->line,
             e->column, e->text);
  /* every diagnostic of a case file is located in it */
  assert_non_null(e->path);
  assert_non_null(strstr(e->path, "case.yaml"));
  return 0;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_bad_case(const char *name) {
  char dir[1024], expected_path[1100];
  snprintf(dir, sizeof(dir), "%s/%s", BAD, name);
  snprintf(expected_path, sizeof(expected_path), "%s/expected.txt", dir);
  FILE *f = fopen(expected_path, "r");
  if (!f) fail_msg("%s: no expected.txt", name);
  char want[64][512];
  size_t nwant = 0;
  while (nwant < 64 && fgets(want[nwant], sizeof(want[0]), f)) {
    want[nwant][strcspn(want[nwant], "\n")] = '\0';
    if (want[nwant][0] && want[nwant][0] != '#') nwant++;
  }
  fclose(f);
  collected got = {0};
  kl_case_options opts = KL_CASE_OPTIONS_INIT;
  opts.on_diag = collect;
  opts.payload = &got;
  kl_case *c = NULL;
  int rc = kl_case_load(&c, dir, &opts);
  if (rc != KL_EINVALID) fail_msg("%s: loaded with rc %d", name, rc);
  assert_null(c);
  bool same = got.n == nwant;
  for (size_t i = 0; same && i < nwant; i++)
    same = strcmp(got.lines[i], want[i]) == 0;
  if (!same) {
    print_error("bad case %s: got %zu diagnostics, want %zu\n", name, got.n,
                nwant);
    for (size_t i = 0; i < got.n; i++)
      print_error("  got:  %s\n", got.lines[i]);
    for (size_t i = 0; i < nwant; i++)
      print_error("  want: %s\n", want[i]);
    fail();
  }
  /* The last error names the first diagnostic and counts the rest. */
  if (nwant > 1) assert_non_null(strstr(kl_error_last()->text, "more error"));
}

static void test_case_load__bad_corpus(void **state) {
  (void)state;
  DIR *d = opendir(BAD);
  assert_non_null(d);
  char *names[256];
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 256;)
    if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
  closedir(d);
  qsort(names, n, sizeof(*names), compare_names);
  assert_true(n >= 10);
  for (size_t i = 0; i < n; i++) {
    check_bad_case(names[i]);
    free(names[i]);
  }
}

/* ---- out of memory --------------------------------------------------------
 */

static void test_case_load__out_of_memory_sweep(void **state) {
  (void)state;
  /* Fail the 1st, 2nd, ... allocation until a load gets through: every
   * failure must be KL_ENOMEM with nothing returned (ASan/valgrind runs
   * of this test show nothing leaks). */
  int failures = 0;
  for (long nth = 1; nth < 100000; nth++) {
    kl__alloc_fail_after(nth);
    kl_case *c = NULL;
    int rc = kl_case_load(&c, CASES "rmsnorm_bf16", NULL);
    kl__alloc_fail_after(0);
    if (rc == 0) {
      assert_non_null(c);
      kl_case_free(c);
      break;
    }
    if (rc != KL_ENOMEM)
      fail_msg("allocation %ld failed: rc %d (%s)", nth, rc,
               kl_error_last() ? kl_error_last()->message : "?");
    assert_null(c);
    failures++;
  }
  assert_true(failures > 50);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_case_load__rmsnorm),
      cmocka_unit_test(test_case_load__launch_geometry_of_2d_and_tails),
      cmocka_unit_test(test_case_load__tunable_configuration),
      cmocka_unit_test(test_case_load__host_cases),
      cmocka_unit_test(test_case_load__reserved_names_as_values),
      cmocka_unit_test(test_case_load__describe_json),
      cmocka_unit_test(test_case_load__entry_made_by_pasting),
      cmocka_unit_test(test_case_load__bad_corpus),
      cmocka_unit_test(test_case_load__out_of_memory_sweep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
