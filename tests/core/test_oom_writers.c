/* Out of memory through the text writers: every kl_buf write is checked
 * once, at the end of its function (core/buf.c keeps a failed write), so
 * a dropped check would hand back truncated text as a success. Each sweep
 * fails the 1st, 2nd, ... allocation kernlab makes while one document is
 * produced, until a pass gets through: every pass must end in KL_ENOMEM
 * with the output untouched, or in 0 with exactly the document a pass
 * without failures gave. The ASan run of this test shows no path leaks. */
#define _GNU_SOURCE
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

typedef int (*produce_fn)(kl_buf *out, void *ctx);

/* Sweep `produce`; returns how many passes failed. */
static int sweep(const char *what, produce_fn produce, void *ctx) {
  kl_buf want = KL_BUF_INIT;
  kl__alloc_fail_after(0);
  if (produce(&want, ctx) != 0)
    fail_msg("%s: %s", what, kl_error_last()->message);
  int failures = 0;
  for (long n = 1;; n++) {
    kl_buf got = KL_BUF_INIT;
    kl__alloc_fail_after(n);
    int rc = produce(&got, ctx);
    long ran = kl__alloc_fail_after(0);
    if (rc == 0) {
      if (got.size != want.size || memcmp(got.ptr, want.ptr, want.size) != 0)
        fail_msg("%s: allocation %ld failed and the call succeeded with "
                 "other text (%zu bytes, want %zu)",
                 what, n, got.size, want.size);
      kl_buf_dispose(&got);
      if (ran < n) break; /* every allocation point has been failed once */
      continue;
    }
    if (rc != KL_ENOMEM)
      fail_msg("%s: allocation %ld failed: rc %d (%s)", what, n, rc,
               kl_error_last() ? kl_error_last()->message : "?");
    if (got.ptr || got.size)
      fail_msg("%s: allocation %ld failed and the output holds %zu bytes", what,
               n, got.size);
    kl_buf_dispose(&got);
    failures++;
  }
  kl_buf_dispose(&want);
  print_message("%s: %d allocations failed, each KL_ENOMEM\n", what, failures);
  return failures;
}

/* ---- the documents
 * ----------------------------------------------------------- */

typedef struct fixture {
  kl_case *cuda, *host, *records;
  kl_rules *rules;
  kl_profile_list *profiles;
  char dir[256];
} fixture;

static int describe(kl_buf *out, void *ctx) {
  return kl_case_describe_json(out, ((fixture *)ctx)->cuda);
}

static int harness_plugin(kl_buf *out, void *ctx) {
  kl_harness_options o = KL_HARNESS_OPTIONS_INIT;
  o.form = KL_HARNESS_PLUGIN;
  return kl_harness_generate(out, ((fixture *)ctx)->cuda, NULL, &o);
}

static int harness_standalone(kl_buf *out, void *ctx) {
  return kl_harness_generate(out, ((fixture *)ctx)->host,
                             "void saxpy(float *y, const float *x, float a, "
                             "int n) { for (int i = 0; i < n; i++) y[i] += "
                             "a * x[i]; }\n",
                             NULL);
}

static int diagnosis(kl_buf *out, void *ctx) {
  fixture *f = ctx;
  kl_diagnosis *d = NULL;
  int rc = kl_rules_evaluate(&d, f->rules, kl_profile_list_get(f->profiles, 0));
  if (rc == 0) rc = kl_diagnosis_json(out, d);
  kl_diagnosis_free(d);
  return rc;
}

static int profile(kl_buf *out, void *ctx) {
  return kl_profile_json(out,
                         kl_profile_list_get(((fixture *)ctx)->profiles, 0),
                         KL_PROFILE_NCU_NAMES);
}

static int prompt(kl_buf *out, void *ctx) {
  fixture *f = ctx;
  kl_prompt_shape shapes[1] = {{kl_profile_list_name(f->profiles, 0),
                                kl_profile_list_get(f->profiles, 0)}};
  kl_prompt_inputs in = KL_PROMPT_INPUTS_INIT;
  in.c = f->cuda;
  in.rules = f->rules;
  in.shapes = shapes;
  in.nshapes = 1;
  kl_prompt *p = NULL;
  int rc = kl_prompt_build(&p, &in);
  if (rc == 0) rc = kl_prompt_json(out, p);
  kl_prompt_free(p);
  return rc;
}

static int history_text(kl_buf *out, void *ctx) {
  return kl_history(out, ((fixture *)ctx)->records, "text");
}

static int history_json(kl_buf *out, void *ctx) {
  return kl_history(out, ((fixture *)ctx)->records, "json");
}

static int report(kl_buf *out, void *ctx, const char *format) {
  kl_history_report_options o = KL_HISTORY_REPORT_OPTIONS_INIT;
  o.format = format;
  return kl_history_report(out, ((fixture *)ctx)->records, &o);
}

static int report_md(kl_buf *out, void *ctx) {
  return report(out, ctx, "md");
}

static int report_html(kl_buf *out, void *ctx) {
  return report(out, ctx, "html");
}

static char *slurp(const char *path) {
  kl_buf b = KL_BUF_INIT;
  assert_int_equal(kl__read_file(&b, path), 0);
  return kl__buf_detach(&b);
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  assert_int_equal(
      kl_case_load(&f->cuda, KL_SOURCE_DIR "/cases/transpose_f32", NULL), 0);
  assert_int_equal(
      kl_case_load(&f->host, KL_SOURCE_DIR "/cases/host_saxpy", NULL), 0);
  assert_int_equal(kl_rules_create(&f->rules, NULL), 0);
  assert_int_equal(kl_rules_add_defaults(f->rules), 0);
  char *text =
      slurp(KL_SOURCE_DIR "/tests/rules/fixtures/h200/transpose_f32.json");
  assert_int_equal(kl_profile_list_from_json(&f->profiles, text, "t.json"), 0);
  free(text);
  /* a real GPU run's records (tests/report/fixtures) beside gemm_f32 */
  snprintf(f->dir, sizeof(f->dir), "/tmp/kl-oom-XXXXXX");
  assert_non_null(mkdtemp(f->dir));
  char cmd[1024];
  snprintf(cmd, sizeof(cmd),
           "cp -r %s/cases/gemm_f32/. %s/ && cp -r %s/tests/report/fixtures/"
           "gemm_h200/. %s/",
           KL_SOURCE_DIR, f->dir, KL_SOURCE_DIR, f->dir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(kl_case_load(&f->records, f->dir, NULL), 0);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  kl__alloc_fail_after(0);
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", f->dir);
  kl_case_free(f->cuda);
  kl_case_free(f->host);
  kl_case_free(f->records);
  kl_rules_free(f->rules);
  kl_profile_list_free(f->profiles);
  free(f);
  return 0;
}

static void test_oom__cases_and_harnesses(void **state) {
  assert_true(sweep("kl_case_describe_json", describe, *state) > 2);
  assert_true(sweep("kl_harness_generate (plugin)", harness_plugin, *state) >
              2);
  assert_true(sweep("kl_harness_generate (standalone)", harness_standalone,
                    *state) > 2);
}

static void test_oom__profiles_diagnoses_prompts(void **state) {
  assert_true(sweep("kl_profile_json", profile, *state) > 2);
  assert_true(sweep("kl_diagnosis_json", diagnosis, *state) > 2);
  assert_true(sweep("kl_prompt_json", prompt, *state) > 2);
}

static void test_oom__history_and_reports(void **state) {
  assert_true(sweep("kl_history (text)", history_text, *state) > 2);
  assert_true(sweep("kl_history (json)", history_json, *state) > 2);
  assert_true(sweep("kl_history_report (md)", report_md, *state) > 2);
  assert_true(sweep("kl_history_report (html)", report_html, *state) > 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_oom__cases_and_harnesses),
      cmocka_unit_test(test_oom__profiles_diagnoses_prompts),
      cmocka_unit_test(test_oom__history_and_reports),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
