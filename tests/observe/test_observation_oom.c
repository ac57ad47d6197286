/* Out of memory through observation files: fail the 1st, 2nd, ...
 * allocation kernlab makes (kl__alloc_fail_after) while an H200-recorded
 * observation is loaded, summarised as text and JSON and turned into
 * representative configurations, until one pass gets through. Every
 * failure must be KL_ENOMEM with nothing returned; the ASan and valgrind
 * runs of this test show nothing leaks on any path. (json-c's own
 * allocations are not hooked: the hook reaches kernlab's code.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/internal.h"
#include "kernlab/kernlab.h"

#define FIXTURE KL_SOURCE_DIR "/tests/observe/fixtures/app_h200.json"

static void test_observation__out_of_memory_sweep(void **state) {
  (void)state;
  int failures = 0;
  for (long n = 1;; n++) {
    kl__alloc_fail_after(n);
    kl_observation *o = NULL;
    kl_buf b = KL_BUF_INIT;
    kl_configs_options co = KL_CONFIGS_OPTIONS_INIT;
    int rc = kl_observation_load(&o, FIXTURE);
    if (rc != 0) assert_null(o); /* a failed load returns nothing */
    if (rc == 0) rc = kl_observation_summary(&b, o, &co, "text");
    if (rc == 0) rc = kl_observation_summary(&b, o, &co, "json");
    long ran = kl__alloc_fail_after(0);
    kl_buf_dispose(&b);
    kl_observation_free(o);
    if (rc == 0 && ran < n)
      break; /* every allocation point has been failed once */
    if (rc != KL_ENOMEM)
      fail_msg("allocation %ld failed: rc %d (%s)", n, rc,
               kl_error_last() ? kl_error_last()->message : "?");
    failures++;
  }
  assert_true(failures > 20);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_observation__out_of_memory_sweep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
