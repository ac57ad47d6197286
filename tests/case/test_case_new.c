/* kl_case_new: every bundled template stamps a case that loads as is;
 * nothing is ever overwritten; bad names and templates are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernlab/kernlab.h"

static char tmp[256];

static int make_tmp(void **state) {
  (void)state;
  snprintf(tmp, sizeof(tmp), "/tmp/kl-test-new-XXXXXX");
  return mkdtemp(tmp) ? 0 : -1;
}

static int remove_tmp(void **state) {
  (void)state;
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
  return system(cmd) == 0 ? 0 : -1;
}

static void stamp_and_load(const char *template_name, const char *name,
                           kl_backend want) {
  kl_case_new_options opts = KL_CASE_NEW_OPTIONS_INIT;
  opts.template_name = template_name;
  opts.dir = tmp;
  kl_buf path = KL_BUF_INIT;
  if (kl_case_new(&path, name, &opts) != 0)
    fail_msg("%s: %s", template_name, kl_error_last()->message);
  kl_case *c = NULL;
  if (kl_case_load(&c, path.ptr, NULL) != 0)
    fail_msg("%s: %s", template_name, kl_error_last()->message);
  assert_string_equal(kl_case_name(c), name);
  assert_int_equal(kl_case_backend(c), want);
  assert_non_null(kl_case_program_path(c));
  kl_case_free(c);
  kl_buf_dispose(&path);
}

static void test_case_new__templates_load_as_is(void **state) {
  (void)state;
  assert_non_null(kl_share_dir());
  stamp_and_load("host", "my_host_case", KL_BACKEND_HOST);
  stamp_and_load("cuda", "my-cuda.case", KL_BACKEND_CUDA);
  stamp_and_load("python", "my_python_case", KL_BACKEND_PYTHON);
  stamp_and_load(NULL, "default_is_host", KL_BACKEND_HOST);
}

static void test_case_new__never_overwrites(void **state) {
  (void)state;
  kl_case_new_options opts = KL_CASE_NEW_OPTIONS_INIT;
  opts.dir = tmp;
  assert_int_equal(kl_case_new(NULL, "twice", &opts), 0);
  char kernel[512];
  snprintf(kernel, sizeof(kernel), "%s/twice/kernel.c", tmp);
  FILE *f = fopen(kernel, "w");
  assert_non_null(f);
  fputs("/* mine */\n", f);
  fclose(f);
  assert_int_equal(kl_case_new(NULL, "twice", &opts), KL_EEXISTS);
  f = fopen(kernel, "r");
  char line[64] = "";
  assert_non_null(fgets(line, sizeof(line), f));
  fclose(f);
  assert_string_equal(line, "/* mine */\n");
}

static void test_case_new__bad_input(void **state) {
  (void)state;
  kl_case_new_options opts = KL_CASE_NEW_OPTIONS_INIT;
  opts.dir = tmp;
  const char *bad_names[] = {"", ".hidden", "-dash", "a/b", "sp ace", "x$"};
  for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++)
    assert_int_equal(kl_case_new(NULL, bad_names[i], &opts), KL_EINVALID);
  opts.template_name = "no_such_template";
  assert_int_equal(kl_case_new(NULL, "fine", &opts), KL_ENOTFOUND);
  assert_non_null(strstr(kl_error_last()->text, "no template"));
  opts.template_name = "host";
  opts.dir = "/nonexistent/folder";
  assert_int_equal(kl_case_new(NULL, "fine", &opts), KL_ENOTFOUND);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_case_new__templates_load_as_is),
      cmocka_unit_test(test_case_new__never_overwrites),
      cmocka_unit_test(test_case_new__bad_input),
  };
  return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}
