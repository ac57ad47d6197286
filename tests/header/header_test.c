/* Compiled as C99 and as C++ with -Wall -Wextra -pedantic -Werror: the
 * public headers must stand alone in both languages. */
#include "kernlab/kernlab.h"

#if !KL_VERSION_CHECK(0, 1, 0)
#error "version macros disagree with the header"
#endif

int main(void) {
  kl_buf buf = KL_BUF_INIT;
  kl_case_options copts = KL_CASE_OPTIONS_INIT;
  kl_expr_options eopts = KL_EXPR_OPTIONS_INIT;
  kl_case_new_options nopts = KL_CASE_NEW_OPTIONS_INIT;
  (void)buf;
  (void)copts;
  (void)eopts;
  (void)nopts;
#ifndef __cplusplus /* C++ before C++20 has no designated initializers */
  kl_shape_result shape = KL_SHAPE_RESULT_INIT;
  kl_check_result check = KL_CHECK_RESULT_INIT;
  kl_samples samples = KL_SAMPLES_INIT;
  kl_llm_usage usage = KL_LLM_USAGE_INIT;
  (void)shape;
  (void)check;
  (void)samples;
  (void)usage;
#endif
  return KL_VERSION_NUMBER > 0 && KL_ABI_VERSION > 0 ? 0 : 1;
}
