/* The error model: per-thread last error, codes, messages, init counting,
 * version, buffers. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kernlab/kernlab.h"

static void test_error__starts_empty_and_clears(void **state) {
  (void)state;
  kl_error_clear();
  assert_null(kl_error_last());
  kl_value v;
  assert_int_equal(kl_expr_eval_string(&v, "1 +"), KL_EINVALID);
  assert_non_null(kl_error_last());
  kl_error_clear();
  assert_null(kl_error_last());
}

static void test_error__located_message_is_gnu_style(void **state) {
  (void)state;
  kl_case *c = NULL;
  int rc = kl_case_load(&c, KL_SOURCE_DIR "/tests/case/bad/unknown_key", NULL);
  assert_int_equal(rc, KL_EINVALID);
  assert_null(c);
  const kl_error *e = kl_error_last();
  assert_int_equal(e->code, KL_EINVALID);
  assert_int_equal(e->domain, KL_DOMAIN_CASE);
  assert_string_equal(e->path,
                      KL_SOURCE_DIR "/tests/case/bad/unknown_key/case.yaml");
  assert_true(e->line > 0);
  assert_true(e->column > 0);
  /* message = path:line:column: text */
  char want[1024];
  snprintf(want, sizeof(want), "%s:%d:%d: %s", e->path, e->line, e->column,
           e->text);
  assert_string_equal(e->message, want);
  assert_null(strchr(e->message, '\n'));
}

static void test_error__not_found_is_its_own_code(void **state) {
  (void)state;
  kl_case *c = NULL;
  assert_int_equal(kl_case_load(&c, "/nonexistent/case", NULL), KL_ENOTFOUND);
  assert_int_equal(kl_error_last()->code, KL_ENOTFOUND);
  assert_string_equal(kl_error_last()->message,
                      "/nonexistent/case: no such case folder or file");
}

static void *fail_in_thread(void *arg) {
  (void)arg;
  kl_value v;
  kl_expr_eval_string(&v, "1 / 0");
  const kl_error *e = kl_error_last();
  return (void *)(intptr_t)(e && strcmp(e->text, "division by zero") == 0);
}

static void test_error__is_per_thread(void **state) {
  (void)state;
  kl_value v;
  assert_int_equal(kl_expr_eval_string(&v, "unknown_name"), KL_EINVALID);
  pthread_t t;
  void *ok = NULL;
  assert_int_equal(pthread_create(&t, NULL, fail_in_thread, NULL), 0);
  assert_int_equal(pthread_join(t, &ok), 0);
  assert_true((intptr_t)ok);
  /* The other thread's failure did not touch this thread's error. */
  assert_string_equal(kl_error_last()->text, "unknown name 'unknown_name'");
}

static void test_error__strerror_names_every_code(void **state) {
  (void)state;
  for (int code = KL_EREJECTED; code <= KL_OK; code++) {
    const char *s = kl_strerror(code);
    assert_non_null(s);
    assert_string_not_equal(s, "unknown error");
  }
  assert_string_equal(kl_strerror(-999), "unknown error");
}

static void test_error__init_is_reference_counted(void **state) {
  (void)state;
  assert_int_equal(kl_init(), 1);
  assert_int_equal(kl_init(), 2);
  assert_int_equal(kl_shutdown(), 1);
  assert_int_equal(kl_shutdown(), 0);
  assert_int_equal(kl_shutdown(), KL_EINVALID);
  assert_string_equal(kl_error_last()->text,
                      "kl_shutdown called more often than kl_init");
}

static void test_error__version_matches_headers(void **state) {
  (void)state;
  assert_int_equal(kl_version_number(), KL_VERSION_NUMBER);
  assert_string_equal(kl_version_string(), KL_VERSION);
  assert_true(KL_VERSION_CHECK(0, 1, 0));
  assert_false(KL_VERSION_CHECK(99, 0, 0));
}

static void test_error__buf_dispose_is_null_safe(void **state) {
  (void)state;
  kl_buf_dispose(NULL);
  kl_buf b = KL_BUF_INIT;
  kl_buf_dispose(&b);
  assert_int_equal(kl_case_new(&b, "bad/name", NULL), KL_EINVALID);
  kl_buf_dispose(&b);
  assert_null(b.ptr);
  assert_int_equal(b.size, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_error__starts_empty_and_clears),
      cmocka_unit_test(test_error__located_message_is_gnu_style),
      cmocka_unit_test(test_error__not_found_is_its_own_code),
      cmocka_unit_test(test_error__is_per_thread),
      cmocka_unit_test(test_error__strerror_names_every_code),
      cmocka_unit_test(test_error__init_is_reference_counted),
      cmocka_unit_test(test_error__version_matches_headers),
      cmocka_unit_test(test_error__buf_dispose_is_null_safe),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
