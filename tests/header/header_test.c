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
  return KL_VERSION_NUMBER > 0 ? 0 : 1;
}
