/* libFuzzer target: the expression language (case counts, launch
 * geometry, roofline, rule conditions). The bytes are compiled; what
 * compiles is evaluated with every name it reads bound, first to small
 * integers, then to floats, then to extreme values (overflow, division by
 * zero and the functions' domains must be errors, never traps). Built by
 * scripts/fuzz.sh; replayed under ctest by fuzz/replay.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text.h"
#include "kernlab/kernlab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void eval_with(const kl_expr *e, int pass) {
  kl_vars *v;
  if (kl_vars_create(&v) != 0) return;
  for (size_t i = 0; i < kl_expr_name_count(e); i++) {
    const char *name = kl_expr_name(e, i);
    switch (pass) {
    case 0:
      kl_vars_set_int(v, name, (int64_t)i + 3);
      break;
    case 1:
      kl_vars_set_float(v, name, 0.5 + (double)i);
      break;
    default:
      if (i % 2)
        kl_vars_set_int(v, name, i % 4 == 1 ? INT64_MAX : INT64_MIN);
      else
        kl_vars_set_float(v, name, i % 4 == 0 ? 1e308 : -0.0);
    }
  }
  kl_value out;
  if (kl_expr_eval(&out, e, v) != 0 &&
      (!kl_error_last() || !kl_error_last()->message[0]))
    abort(); /* every failure says why */
  kl_vars_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  if (!text) return 0;
  kl_expr *e;
  kl_expr_options o = KL_EXPR_OPTIONS_INIT;
  o.path = "fuzz.yaml";
  if (kl_expr_compile(&e, text, &o) == 0) {
    for (int pass = 0; pass < 3; pass++)
      eval_with(e, pass);
    kl_expr_free(e);
  }
  kl_value out;
  kl_expr_eval_string(&out, text);
  free(text);
  return 0;
}
