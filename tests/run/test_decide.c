/* What a run decides (libkernlab/run/decide.c), without a worker: reports
 * read back from JSON as an executor brings them home, decided against a
 * best; the chained speedup over the baseline; the budgets. And the run's
 * state folded from solutions (records/state.c), as the loop and a resume
 * both fold it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bench/bench_internal.h"
#include "core/json.h"
#include "run/run_internal.h"

/* A compare report whose objective is `speedup` [lo, hi] decided `d`. */
static kl_report *report(const char *verdict, const char *reason,
                         const char *gate, double speedup, double lo, double hi,
                         const char *d) {
  char text[2048];
  snprintf(text, sizeof(text),
           "{\"case\":\"c\",\"candidate\":\"x.c\",\"mode\":\"compare\","
           "\"verdict\":\"%s\",\"reason\":%s%s%s,\"gate\":%s%s%s,"
           "\"shapes\":[{\"name\":\"s\",\"checked\":true,\"correct\":true,"
           "\"median_us\":10,\"ci_low_us\":9,\"ci_high_us\":11,"
           "\"samples\":20,\"baseline\":{\"median_us\":20,\"ci_low_us\":19,"
           "\"ci_high_us\":21,\"samples\":20},\"speedup\":%g,"
           "\"speedup_ci\":[%g,%g],\"decision\":\"%s\"}],"
           "\"objective\":{\"name\":\"geomean_speedup\",\"speedup\":%g,"
           "\"speedup_ci\":[%g,%g],\"decision\":\"%s\"}}",
           verdict, reason ? "\"" : "", reason ? reason : "null",
           reason ? "\"" : "", gate ? "\"" : "", gate ? gate : "null",
           gate ? "\"" : "", speedup, lo, hi, d, speedup, lo, hi, d);
  json_object *doc = NULL;
  assert_int_equal(kl__json_parse(&doc, text, "t", "a report"), 0);
  kl_report *r = NULL;
  assert_int_equal(kl__report_from_json(&r, doc, "t"), 0);
  json_object_put(doc);
  return r;
}

static const kl_speedup base = {.speedup = 1, .ci_low = 1, .ci_high = 1};

static void test_decide__faster_is_accepted_and_chained(void **state) {
  (void)state;
  kl_report *r = report("OK", NULL, NULL, 2.0, 1.8, 2.2, "faster");
  kl__decision d;
  kl_speedup parent = {.speedup = 1.5,
                       .ci_low = 1.4,
                       .ci_high = 1.6,
                       .decision = KL_DECISION_FASTER};
  assert_int_equal(kl__decide(&d, r, parent, 2.0), 0);
  assert_int_equal(d.outcome, KL_OUTCOME_ACCEPTED);
  assert_true(d.timed);
  assert_true(fabs(d.vs_parent.speedup - 2.0) < 1e-9);
  assert_true(fabs(d.vs_base.speedup - 3.0) < 1e-9); /* 1.5 x 2.0 */
  /* log-scale half-widths combined as independent errors */
  double lo = 3.0 * exp(-hypot(log(1.5 / 1.4), log(2.0 / 1.8)));
  assert_true(fabs(d.vs_base.ci_low - lo) < 1e-9);
  assert_int_equal(d.vs_base.decision, KL_DECISION_FASTER);
  assert_non_null(strstr(d.reason, "x2.000 [1.800, 2.200] against the best"));
  kl__free(d.reason);
  kl_report_free(r);
}

static void test_decide__not_faster_and_slower_are_rejected(void **state) {
  (void)state;
  kl_report *same = report("OK", NULL, NULL, 1.01, 0.99, 1.03, "same");
  kl_report *slow = report("OK", NULL, NULL, 0.5, 0.45, 0.55, "slower");
  kl__decision d;
  assert_int_equal(kl__decide(&d, same, base, 2.0), 0);
  assert_int_equal(d.outcome, KL_OUTCOME_REJECTED);
  assert_non_null(strstr(d.reason, "not faster: x1.010"));
  assert_non_null(strstr(d.reason, "at least 2%"));
  kl__free(d.reason);
  assert_int_equal(kl__decide(&d, slow, base, 2.0), 0);
  assert_int_equal(d.outcome, KL_OUTCOME_REJECTED);
  assert_non_null(strstr(d.reason, "slower: x0.500"));
  kl__free(d.reason);
  kl_report_free(same);
  kl_report_free(slow);
}

static void test_decide__verdicts_map_to_outcomes(void **state) {
  (void)state;
  static const struct {
    const char *verdict, *gate;
    kl_outcome want;
  } cases[] = {{"INCORRECT", NULL, KL_OUTCOME_INCORRECT},
               {"CRASHED", NULL, KL_OUTCOME_CRASHED},
               {"TIMEOUT", NULL, KL_OUTCOME_TIMEOUT},
               {"COMPILE_ERROR", NULL, KL_OUTCOME_COMPILE_ERROR},
               {"CHEAT", "stale_outputs", KL_OUTCOME_CHEAT}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kl_report *r =
        report(cases[i].verdict, "why", cases[i].gate, 0, 0, 0, "same");
    kl__decision d;
    assert_int_equal(kl__decide(&d, r, base, 2.0), 0);
    assert_int_equal(d.outcome, cases[i].want);
    assert_false(d.timed);
    assert_string_equal(d.reason, "why");
    if (cases[i].gate) assert_string_equal(d.gate, cases[i].gate);
    kl__free(d.reason);
    kl_report_free(r);
  }
}

/* A faster objective over a shape that was timed but not checked is not
 * accepted; a busy machine and blocks that disagreed are named. */
static void test_decide__nothing_accepted_unchecked(void **state) {
  (void)state;
  static const char text[] =
      "{\"case\":\"c\",\"candidate\":\"x.c\",\"mode\":\"compare\","
      "\"verdict\":\"OK\",\"reason\":null,\"gate\":null,\"shapes\":["
      "{\"name\":\"a\",\"checked\":true,\"correct\":true,"
      "\"median_us\":10,\"ci_low_us\":9,\"ci_high_us\":11,\"samples\":20,"
      "\"baseline\":{\"median_us\":20,\"ci_low_us\":19,\"ci_high_us\":21,"
      "\"samples\":20},\"speedup\":2,\"speedup_ci\":[1.8,2.2],"
      "\"decision\":\"faster\",\"machine\":{\"others_cpus\":1.0,"
      "\"cpus\":2,\"loadavg\":2.1}},"
      "{\"name\":\"b\",\"checked\":false,\"correct\":null,"
      "\"median_us\":10,\"ci_low_us\":9,\"ci_high_us\":11,\"samples\":20,"
      "\"baseline\":{\"median_us\":20,\"ci_low_us\":19,\"ci_high_us\":21,"
      "\"samples\":20},\"speedup\":2,\"speedup_ci\":[1.8,2.2],"
      "\"decision\":\"faster\"}],"
      "\"objective\":{\"name\":\"geomean_speedup\",\"speedup\":2,"
      "\"speedup_ci\":[1.8,2.2],\"decision\":\"faster\"}}";
  json_object *doc = NULL;
  assert_int_equal(kl__json_parse(&doc, text, "t", "a report"), 0);
  kl_report *r = NULL;
  assert_int_equal(kl__report_from_json(&r, doc, "t"), 0);
  json_object_put(doc);
  kl__decision d;
  assert_int_equal(kl__decide(&d, r, base, 2.0), 0);
  assert_int_equal(d.outcome, KL_OUTCOME_REJECTED);
  assert_non_null(strstr(d.reason, "shape b was timed without a correctness "
                                   "check there"));
  assert_non_null(strstr(d.reason, "other processes used 1.0 of 2 CPUs"));
  kl__free(d.reason);
  kl_report_free(r);
}

/* The state folds solutions the same way whoever applies them. */
static void test_state__folds_solutions(void **state) {
  (void)state;
  kl__run_state st;
  kl__run_state_init(&st);
  char *cfg0[] = {"B=1", NULL}, *cfg1[] = {"B=2", NULL};
  kl__solution s0 = {.id = "r/000",
                     .run = "r",
                     .iteration = 0,
                     .key = "k0",
                     .config = cfg0,
                     .outcome = KL_OUTCOME_BASELINE,
                     .has_vs_baseline = true,
                     .vs_baseline = base,
                     .cost = {1, 2, 0, 0, 0}};
  assert_int_equal(kl__run_state_apply(&st, &s0, "base"), 0);
  assert_string_equal(st.best_source, "base");
  assert_string_equal(st.baseline_key, "k0");
  assert_int_equal(st.done, 0);
  kl__solution s1 = {.id = "r/001",
                     .run = "r",
                     .iteration = 1,
                     .key = "k1",
                     .config = cfg1,
                     .outcome = KL_OUTCOME_ACCEPTED,
                     .memo = "faster",
                     .timed = true,
                     .vs_parent = {.speedup = 2,
                                   .ci_low = 1.9,
                                   .ci_high = 2.1,
                                   .decision = KL_DECISION_FASTER},
                     .log_vs_baseline = log(2),
                     .has_vs_baseline = true,
                     .vs_baseline = {.speedup = 2,
                                     .ci_low = 1.9,
                                     .ci_high = 2.1,
                                     .decision = KL_DECISION_FASTER},
                     .cost = {3, 4, 0.5, 10, 20}};
  assert_int_equal(kl__run_state_apply(&st, &s1, "better"), 0);
  kl__solution s2 = s1;
  s2.id = "r/002";
  s2.iteration = 2;
  s2.outcome = KL_OUTCOME_REJECTED;
  s2.has_vs_baseline = false;
  assert_int_equal(kl__run_state_apply(&st, &s2, NULL), 0);
  assert_string_equal(st.best_source, "better");
  assert_string_equal(st.best_id, "r/001");
  assert_string_equal(st.best_config[0], "B=2");
  assert_int_equal(st.best_iteration, 1);
  assert_true(fabs(st.best_vs_base.speedup - 2) < 1e-12);
  assert_int_equal(st.best_vs_base.decision, KL_DECISION_FASTER);
  assert_int_equal(st.done, 2);
  assert_int_equal(st.counts[KL_OUTCOME_ACCEPTED], 1);
  assert_int_equal(st.counts[KL_OUTCOME_REJECTED], 1);
  assert_int_equal(st.since_accept, 1);
  assert_int_equal(st.nattempts, 2);
  assert_string_equal(st.attempts[0].memo, "faster");
  assert_true(fabs(st.attempts[1].log_vs_base - log(2)) < 1e-12);
  assert_true(fabs(st.recorded.wall_s - 7) < 1e-12);
  assert_true(fabs(st.recorded.usd - 1.0) < 1e-12);
  assert_int_equal(st.next_iteration, 3);
  /* an iteration out of order is an error, and changes nothing */
  s2.iteration = 5;
  assert_int_equal(kl__run_state_apply(&st, &s2, NULL), KL_EINVALID);
  assert_int_equal(st.next_iteration, 3);
  /* a best without its kernel: the record says so */
  s1.iteration = 3;
  assert_int_equal(kl__run_state_apply(&st, &s1, NULL), KL_EIO);
  assert_int_equal(st.done, 2);
  kl__run_state_dispose(&st);
}

static void test_budget__first_reached_stops(void **state) {
  (void)state;
  kl_run r;
  memset(&r, 0, sizeof(r));
  kl__run_state_init(&r.st);
  r.max_iterations = 5;
  r.patience = 2;
  r.t0_ms = kl__now_ms();
  assert_null(kl__run_budget_reached(&r));
  r.st.since_accept = 2;
  assert_string_equal(kl__run_budget_reached(&r), "patience");
  r.st.done = 5;
  assert_string_equal(kl__run_budget_reached(&r), "iterations");
  r.st.done = 0;
  r.st.since_accept = 0;
  r.o.max_usd = 1;
  r.usd = 1.5;
  assert_string_equal(kl__run_budget_reached(&r), "usd");
  r.usd = 0;
  r.o.max_worker_s = 1;
  r.worker_s = 2;
  assert_string_equal(kl__run_budget_reached(&r), "worker_time");
  r.worker_s = 0;
  r.o.max_wall_s = 1;
  r.wall_before_s = 5;
  assert_string_equal(kl__run_budget_reached(&r), "wall_time");
  int stop = 1;
  r.o.stop = &stop;
  assert_string_equal(kl__run_budget_reached(&r), "stopped");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decide__faster_is_accepted_and_chained),
      cmocka_unit_test(test_decide__not_faster_and_slower_are_rejected),
      cmocka_unit_test(test_decide__verdicts_map_to_outcomes),
      cmocka_unit_test(test_decide__nothing_accepted_unchecked),
      cmocka_unit_test(test_state__folds_solutions),
      cmocka_unit_test(test_budget__first_reached_stops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
