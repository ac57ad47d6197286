/* The expression language: precedence, integer/float rules, functions,
 * names, and errors located at the right column with a caret. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kernlab/kernlab.h"

typedef struct int_case {
  const char *src;
  int64_t want;
} int_case;

static void test_expr__integer_precedence(void **state) {
  (void)state;
  static const int_case cases[] = {
      {"1 + 2 * 3", 7},
      {"(1 + 2) * 3", 9},
      {"2 ** 3 ** 2", 512},
      {"-2 ** 2", -4},
      {"(-2) ** 2", 4},
      {"2 ** 10", 1024},
      {"10 - 4 - 3", 3},
      {"7 // 2", 3},
      {"-7 // 2", -4},
      {"7 % 3", 1},
      {"-7 % 3", 2},
      {"7 % -3", -2},
      /* near INT64_MIN: b*floor(a/b) would overflow (found by fuzz_expr) */
      {"-9223372036854775807 % 274", 245},
      {"1 < 2 and 3 > 2", 1},
      {"1 == 1 == 1", 1},
      {"not 1 == 2", 1},
      {"1 or 0 and 0", 1},
      {"(1 or 0) and 0", 0},
      {"not not 5", 1},
      {"2 + 3 >= 5", 1},
      {"4 != 4", 0},
      {"-(-3)", 3},
      {"+4", 4},
      {"3 - -2", 5},
      {"1 <= 1", 1},
      {"16*1024*1024", 16777216},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kl_value v;
    int rc = kl_expr_eval_string(&v, cases[i].src);
    if (rc != 0) fail_msg("%s: %s", cases[i].src, kl_error_last()->message);
    if (!v.is_int || v.i != cases[i].want)
      fail_msg("%s: got %s %lld, want %lld", cases[i].src,
               v.is_int ? "int" : "float", (long long)v.i,
               (long long)cases[i].want);
  }
}

static void test_expr__floats(void **state) {
  (void)state;
  static const struct {
    const char *src;
    double want;
  } cases[] = {
      {"7 / 2", 3.5},
      {"1e-6", 1e-6},
      {"2.5 * 2", 5.0},
      {".5 + 1.", 1.5},
      {"2 ** -1", 0.5},
      {"sqrt(16.0)", 4.0},
      {"log2(1024)", 10},
      {"7.5 // 2", 3.0},
      {"-7.5 % 2", 0.5},
      {"min(1, 2.5)", 1},
      {"max(3, 2.5, -1)", 3},
      {"abs(-2.5)", 2.5},
      {"pow(2, 0.5) * pow(2, 0.5)", 2.0},
      {"exp(0)", 1.0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kl_value v;
    if (kl_expr_eval_string(&v, cases[i].src) != 0)
      fail_msg("%s: %s", cases[i].src, kl_error_last()->message);
    if (fabs(v.f - cases[i].want) > 1e-12)
      fail_msg("%s: got %.17g, want %.17g", cases[i].src, v.f, cases[i].want);
  }
  /* / is real division even between integers. */
  kl_value v;
  assert_int_equal(kl_expr_eval_string(&v, "8 / 4"), 0);
  assert_false(v.is_int);
  assert_true(v.f == 2.0);
}

static void test_expr__functions_keep_integers(void **state) {
  (void)state;
  static const int_case cases[] = {
      {"ceil_div(1000, 256)", 4},
      {"ceil_div(1024, 256)", 4},
      {"ceil_div(1025, 256)", 5},
      {"ceil_div(-5, 2)", -2},
      {"min(3, 1, 2)", 1},
      {"max(3, 1, 2)", 3},
      {"abs(-7)", 7},
      {"floor(2.7)", 2},
      {"ceil(2.1)", 3},
      {"round(2.5)", 3},
      {"clamp(5, 0, 3)", 3},
      {"clamp(-1, 0, 3)", 0},
      {"if(1 > 2, 10, 20)", 20},
      {"if(1, 10, 1 / 0)", 10},
      {"pow(3, 4)", 81},
      {"ceil_div(10.0, 4)", 3},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kl_value v;
    if (kl_expr_eval_string(&v, cases[i].src) != 0)
      fail_msg("%s: %s", cases[i].src, kl_error_last()->message);
    if (!v.is_int || v.i != cases[i].want)
      fail_msg("%s: got %lld (int %d), want %lld", cases[i].src, (long long)v.i,
               v.is_int, (long long)cases[i].want);
  }
}

static void test_expr__names_with_dots_and_vars(void **state) {
  (void)state;
  kl_expr *e;
  assert_int_equal(kl_expr_compile(&e,
                                   "dram__bytes.sum / gpu__time_duration.sum "
                                   "> rows and dram__bytes.sum > 0",
                                   NULL),
                   0);
  assert_int_equal(kl_expr_name_count(e), 3);
  assert_string_equal(kl_expr_name(e, 0), "dram__bytes.sum");
  assert_string_equal(kl_expr_name(e, 1), "gpu__time_duration.sum");
  assert_string_equal(kl_expr_name(e, 2), "rows");
  assert_null(kl_expr_name(e, 3));
  kl_vars *v;
  assert_int_equal(kl_vars_create(&v), 0);
  assert_int_equal(kl_vars_set_float(v, "dram__bytes.sum", 1e9), 0);
  assert_int_equal(kl_vars_set_float(v, "gpu__time_duration.sum", 1e3), 0);
  assert_int_equal(kl_vars_set_int(v, "rows", 10), 0);
  kl_value out;
  assert_int_equal(kl_expr_eval(&out, e, v), 0);
  assert_true(out.is_int && out.i == 1);
  /* Replacing a value keeps one entry. */
  assert_int_equal(kl_vars_set_int(v, "rows", 2000000), 0);
  assert_int_equal(kl_vars_count(v), 3);
  assert_int_equal(kl_expr_eval(&out, e, v), 0);
  assert_true(out.is_int && out.i == 0);
  assert_int_equal(kl_vars_get(&out, v, "missing"), KL_ENOTFOUND);
  kl_vars_free(v);
  kl_expr_free(e);
  assert_int_equal(kl_expr_compile(&e, "-42", NULL), 0);
  assert_true(kl_expr_is_constant(e));
  kl_expr_free(e);
  assert_int_equal(kl_expr_compile(&e, "n + 1", NULL), 0);
  assert_false(kl_expr_is_constant(e));
  kl_expr_free(e);
}

typedef struct error_case {
  const char *src;
  int column;
  const char *text;
} error_case;

static void test_expr__syntax_errors_have_columns(void **state) {
  (void)state;
  static const error_case cases[] = {
      {"1 +", 4, "expected a number, a name or '(', found end of expression"},
      {"(1 + 2", 1, "unclosed '('"},
      {"1 + 2)", 6, "unmatched ')'"},
      {"1 2", 3, "expected an operator or end of expression, found '2'"},
      {"foo(1)", 1, "unknown function 'foo'"},
      {"mni(1, 2)", 1, "unknown function 'mni'; did you mean 'min'?"},
      {"a && b", 3, "unexpected '&&'; use 'and'"},
      {"a || b", 3, "unexpected '||'; use 'or'"},
      {"!a", 1, "unexpected '!'; use 'not'"},
      {"a = 1", 3, "unexpected '='; use '==' to compare"},
      {"rows * $", 8, "unexpected character '$'"},
      {"12abc", 1, "malformed number '12abc'"},
      {"ceil_div(1)", 1, "'ceil_div' takes 2 arguments, not 1"},
      {"min(1)", 1, "'min' takes at least 2 arguments, not 1"},
      {"min(1, )", 8, "expected a number, a name or '(', found ')'"},
      {"abs(1 2)", 7, "expected ',' or ')', found '2'"},
      {"", 1, "empty expression"},
      {"   ", 4, "empty expression"},
      {"99999999999999999999", 1,
       "integer '99999999999999999999' does not fit in 64 bits"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kl_expr *e = (kl_expr *)1;
    int rc = kl_expr_compile(&e, cases[i].src, NULL);
    if (rc != KL_EINVALID) fail_msg("'%s' compiled (rc %d)", cases[i].src, rc);
    assert_null(e);
    const kl_error *err = kl_error_last();
    assert_non_null(err);
    assert_int_equal(err->domain, KL_DOMAIN_EXPR);
    if (err->column != cases[i].column || strcmp(err->text, cases[i].text))
      fail_msg("'%s': got column %d '%s', want column %d '%s'", cases[i].src,
               err->column, err->text, cases[i].column, cases[i].text);
    assert_int_equal(err->line, 1);
  }
}

static void test_expr__eval_errors_have_columns(void **state) {
  (void)state;
  static const error_case cases[] = {
      {"1 / 0", 3, "division by zero"},
      {"1 // 0", 3, "division by zero"},
      {"5 % 0", 3, "modulo by zero"},
      {"9223372036854775807 + 1", 21, "integer overflow in '+'"},
      {"3037000500 * 3037000500", 12, "integer overflow in '*'"},
      {"2 ** 64", 3, "integer overflow in '**'"},
      {"x + 1", 1, "unknown name 'x'"},
      {"1 + sqrt(-1)", 5, "square root of a negative number"},
      {"log(0)", 1, "logarithm of a number that is not positive"},
      {"ceil_div(4, 0)", 1, "division by zero in 'ceil_div'"},
      {"exp(1000)", 1, "result is not a finite number"},
      {"clamp(1, 3, 2)", 1, "clamp: low bound above high bound"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kl_value v;
    int rc = kl_expr_eval_string(&v, cases[i].src);
    if (rc != KL_EINVALID) fail_msg("'%s' evaluated (rc %d)", cases[i].src, rc);
    const kl_error *err = kl_error_last();
    if (err->column != cases[i].column || strcmp(err->text, cases[i].text))
      fail_msg("'%s': got column %d '%s', want column %d '%s'", cases[i].src,
               err->column, err->text, cases[i].column, cases[i].text);
  }
}

static void test_expr__caret_and_file_position(void **state) {
  (void)state;
  kl_expr_options opts = KL_EXPR_OPTIONS_INIT;
  opts.path = "rules/memory.yaml";
  opts.line = 14;
  opts.column = 11;
  kl_expr *e;
  assert_int_equal(kl_expr_compile(&e, "rows * * cols", &opts), KL_EINVALID);
  const kl_error *err = kl_error_last();
  assert_string_equal(err->path, "rules/memory.yaml");
  assert_int_equal(err->line, 14);
  assert_int_equal(err->column, 18); /* 11 + 8 - 1 */
  assert_string_equal(err->message,
                      "rules/memory.yaml:14:18: expected a number, a name or "
                      "'(', found '*'");
  assert_string_equal(err->snippet, "  rows * * cols\n         ^");
  /* On a later line of a multi-line expression, columns are the line's. */
  assert_int_equal(kl_expr_compile(&e, "a +\n  b +\n   )", &opts), KL_EINVALID);
  err = kl_error_last();
  assert_int_equal(err->line, 16);
  assert_int_equal(err->column, 4);
  assert_string_equal(err->snippet, "     )\n     ^");
}

static void test_expr__deep_nesting_is_an_error_not_a_crash(void **state) {
  (void)state;
  char src[4096];
  size_t n = 0;
  for (int i = 0; i < 1000; i++)
    src[n++] = '(';
  src[n++] = '1';
  for (int i = 0; i < 1000; i++)
    src[n++] = ')';
  src[n] = '\0';
  kl_expr *e;
  assert_int_equal(kl_expr_compile(&e, src, NULL), KL_EINVALID);
  assert_string_equal(kl_error_last()->text, "expression nested too deeply");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_expr__integer_precedence),
      cmocka_unit_test(test_expr__floats),
      cmocka_unit_test(test_expr__functions_keep_integers),
      cmocka_unit_test(test_expr__names_with_dots_and_vars),
      cmocka_unit_test(test_expr__syntax_errors_have_columns),
      cmocka_unit_test(test_expr__eval_errors_have_columns),
      cmocka_unit_test(test_expr__caret_and_file_position),
      cmocka_unit_test(test_expr__deep_nesting_is_an_error_not_a_crash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
