/* The versioned ABI (kernlab/common.h): an options struct's init writes
 * only the bytes its version knows and the library reads no further; a
 * result struct gets no byte past the size its caller set. Each test
 * stands in for a program built against older (or newer) headers by
 * cutting a current struct at an older version's end and filling the rest
 * with a pattern no field could hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kernlab/kernlab.h"

#define POISON 0xA5

static int all_poison(const void *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (((const unsigned char *)p)[i] != POISON) return 0;
  return 1;
}

static void test_abi__the_loaded_library_is_these_headers(void **state) {
  (void)state;
  assert_int_equal(kl_abi_version(), KL_ABI_VERSION);
}

/* Version 1 of kl_run_options ended before `webhook`, version 2 before
 * `executor`: init at each writes the defaults up to there and nothing
 * past it. */
static void test_abi__init_writes_only_its_version(void **state) {
  (void)state;
  const kl_run_options defaults = KL_RUN_OPTIONS_INIT;
  static const size_t ends[] = {0, offsetof(kl_run_options, webhook),
                                offsetof(kl_run_options, executor),
                                sizeof(kl_run_options)};
  for (unsigned v = 1; v <= KL_RUN_OPTIONS_VERSION; v++) {
    kl_run_options o;
    memset(&o, POISON, sizeof(o));
    assert_int_equal(kl_run_options_init(&o, v), 0);
    assert_int_equal(o.version, v);
    assert_true(all_poison((char *)&o + ends[v], sizeof(o) - ends[v]));
    assert_int_equal(o.device, defaults.device);
    assert_int_equal(o.time.cold, defaults.time.cold);
    assert_memory_equal((char *)&o + sizeof(unsigned),
                        (const char *)&defaults + sizeof(unsigned),
                        ends[v] - sizeof(unsigned));
  }
  /* an unknown version is refused and nothing is written */
  kl_bench_options b;
  memset(&b, POISON, sizeof(b));
  assert_int_equal(kl_bench_options_init(&b, 0), KL_EINVALID);
  assert_int_equal(kl_bench_options_init(&b, KL_BENCH_OPTIONS_VERSION + 1),
                   KL_EINVALID);
  assert_non_null(strstr(kl_error_last()->message, "version"));
  assert_true(all_poison(&b, sizeof(b)));
  /* every options struct has one, at its header's version */
  kl_case_options c;
  kl_time_options t;
  kl_llm_config l;
  kl_prompt_inputs p;
  assert_int_equal(kl_case_options_init(&c, KL_CASE_OPTIONS_VERSION), 0);
  assert_int_equal(kl_time_options_init(&t, KL_TIME_OPTIONS_VERSION), 0);
  assert_int_equal(kl_llm_config_init(&l, KL_LLM_CONFIG_VERSION), 0);
  assert_int_equal(kl_prompt_inputs_init(&p, KL_PROMPT_INPUTS_VERSION), 0);
  assert_int_equal(t.min_samples, 10);
  assert_int_equal(l.max_retries, -1);
  assert_int_equal(p.iteration, 1);
}

/* A version-1 kl_case_options ends before `tunables`: what lies past it in
 * the caller's memory is not read (a poisoned pointer there would crash
 * a library that did). */
static void test_abi__older_options_are_read_no_further(void **state) {
  (void)state;
  kl_case_options o;
  memset(&o, POISON, sizeof(o));
  assert_int_equal(kl_case_options_init(&o, 1), 0);
  kl_case *c = NULL;
  assert_int_equal(kl_case_load(&c, KL_SOURCE_DIR "/cases/host_saxpy", &o), 0);
  kl_case_free(c);
  /* and a struct that was never initialized is refused, not guessed at */
  memset(&o, 0, sizeof(o));
  assert_int_equal(kl_case_load(&c, KL_SOURCE_DIR "/cases/host_saxpy", &o),
                   KL_EINVALID);
  assert_null(c);
}

/* A newer caller's bigger result struct keeps its bytes past ours; a size
 * never set is refused. */
static void test_abi__results_stop_at_the_callers_size(void **state) {
  (void)state;
  kl_case *c = NULL;
  assert_int_equal(kl_case_load(&c, KL_SOURCE_DIR "/cases/host_saxpy", NULL),
                   0);
  struct {
    kl_budget b;
    unsigned char later[24]; /* fields of a newer kl_budget */
  } newer;
  memset(&newer, POISON, sizeof(newer));
  newer.b.size = sizeof(newer);
  assert_int_equal(kl_case_budget(&newer.b, c), 0);
  assert_true(newer.b.iterations > 0);
  assert_int_equal(newer.b.size, sizeof(newer));
  assert_true(all_poison(newer.later, sizeof(newer.later)));

  kl_param_info p;
  memset(&p, POISON, sizeof(p));
  p.size = 0;
  assert_int_equal(kl_case_param(&p, c, 0), KL_EINVALID);
  assert_true(
      all_poison((char *)&p + sizeof(size_t), sizeof(p) - sizeof(size_t)));
  p.size = sizeof(p);
  assert_int_equal(kl_case_param(&p, c, 0), 0);
  assert_non_null(p.name);
  kl_case_free(c);
}

/* A caller built before a result struct grew passes its older, smaller
 * size: it gets the fields it knows and not a byte past them
 * (kl_reference_info grew trivial_margin after its first release). */
static void test_abi__an_older_caller_of_a_grown_result_works(void **state) {
  (void)state;
  kl_case *c = NULL;
  assert_int_equal(kl_case_load(&c, KL_SOURCE_DIR "/cases/host_saxpy", NULL),
                   0);
  kl_reference_info r;
  const size_t older = offsetof(kl_reference_info, trivial_margin);
  memset(&r, POISON, sizeof(r));
  r.size = older;
  assert_int_equal(kl_case_reference(&r, c), 0);
  assert_int_equal(r.size, older);
  assert_true(all_poison((char *)&r + older, sizeof(r) - older));
  kl_reference_info now = KL_REFERENCE_INFO_INIT;
  assert_int_equal(kl_case_reference(&now, c), 0);
  assert_memory_equal((char *)&r + sizeof(size_t),
                      (char *)&now + sizeof(size_t), older - sizeof(size_t));
  /* one byte short of the first release: refused, nothing written */
  memset(&r, POISON, sizeof(r));
  r.size = older - 1;
  assert_int_equal(kl_case_reference(&r, c), KL_EINVALID);
  assert_true(
      all_poison((char *)&r + sizeof(size_t), sizeof(r) - sizeof(size_t)));
  kl_case_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_abi__the_loaded_library_is_these_headers),
      cmocka_unit_test(test_abi__init_writes_only_its_version),
      cmocka_unit_test(test_abi__older_options_are_read_no_further),
      cmocka_unit_test(test_abi__results_stop_at_the_callers_size),
      cmocka_unit_test(test_abi__an_older_caller_of_a_grown_result_works),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
