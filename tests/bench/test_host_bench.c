/* Integration: the whole path (compile, worker, check, time, verdict) on
 * the host cases, with one candidate per failure mode from
 * tests/bench/candidates/. Sampling is capped short: these tests assert
 * verdicts and decisions, never times. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernlab/kernlab.h"
#include "support/slurp.h"
#include "bench/bench_internal.h"
#include "worker/client_internal.h"

#define SRC KL_SOURCE_DIR
#define CAND SRC "/tests/bench/candidates/"

static char cache[] = "/tmp/kl-bench-test-XXXXXX";
static kl_compile_options copts = KL_COMPILE_OPTIONS_INIT;
static kl_case *saxpy, *matmul;

static int setup(void **state) {
  (void)state;
  if (!mkdtemp(cache)) return -1;
  copts.cache_dir = cache;
  if (kl_case_load(&saxpy, SRC "/cases/host_saxpy", NULL) ||
      kl_case_load(&matmul, SRC "/cases/host_matmul", NULL))
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kl_case_free(saxpy);
  kl_case_free(matmul);
  char cmd[256];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", cache);
  return system(cmd) == 0 ? 0 : -1;
}

static kl_bench_options options(const char *shape) {
  kl_bench_options o = KL_BENCH_OPTIONS_INIT;
  o.compile = &copts;
  o.shape = shape;
  o.time.time_cap_ms = 300;
  o.time.min_samples = 5;
  o.timeout_ms = 20000;
  return o;
}

/* Run (or compare) a candidate file under options o; NULL: the
 * baseline. */
static kl_report *run_with(const kl_case *c, const char *file,
                           kl_bench_options o, bool compare) {
  char *src = file ? kl_test_slurp(file) : NULL;
  if (file) assert_non_null(src);
  o.candidate = src;
  o.candidate_name = file ? strrchr(file, '/') + 1 : NULL;
  kl_report *r = NULL;
  int rc = compare ? kl_bench_compare(&r, c, &o) : kl_bench_run(&r, c, &o);
  if (rc) fail_msg("%s", kl_error_last()->message);
  free(src);
  return r;
}

static kl_report *run(const kl_case *c, const char *file, const char *shape,
                      bool compare, int timeout_ms) {
  kl_bench_options o = options(shape);
  /* decisions get the default sampling budget: with a short cap a
   * comparison sees few placements, and on a loaded machine an A/A test
   * would then fail more often than its interval promises */
  if (compare) o.time.time_cap_ms = 2000;
  if (timeout_ms) o.timeout_ms = timeout_ms;
  return run_with(c, file, o, compare);
}

/* A comparison whose decision is the point (a 12x faster candidate is
 * FASTER): sampled hot with a 5 s cap. Cold at 2 s, a loaded 2-core
 * machine under ASan can leave too few samples for the blocks to agree
 * (the cli test's same pair once read 4.06 [0.77, 21.3], "same"); hot
 * samples skip the cache flush, so the cap holds more of them, and the
 * decision stops the sampling as soon as the blocks agree. */
static kl_bench_options deciding(const char *shape) {
  kl_bench_options o = options(shape);
  o.time.cold = 0;
  o.time.time_cap_ms = 5000;
  return o;
}

static void expect_verdict(kl_report *r, kl_verdict v, const char *in_reason) {
  if (kl_report_verdict(r) != v)
    fail_msg("verdict %s (%s), want %s", kl_verdict_name(kl_report_verdict(r)),
             kl_report_reason(r) ? kl_report_reason(r) : "no reason",
             kl_verdict_name(v));
  if (in_reason && !strstr(kl_report_reason(r), in_reason))
    fail_msg("reason '%s' lacks '%s'", kl_report_reason(r), in_reason);
}

static void test_bench__baseline_is_correct_and_timed(void **state) {
  (void)state;
  kl_report *r = run(saxpy, NULL, "1M", false, 0);
  expect_verdict(r, KL_VERDICT_OK, NULL);
  assert_null(kl_report_reason(r));
  assert_int_equal(kl_report_shape_count(r), 1);
  kl_shape_result s = KL_SHAPE_RESULT_INIT;
  assert_int_equal(kl_report_shape(&s, r, 0), 0);
  assert_string_equal(s.name, "1M");
  assert_true(s.checked && s.correct && s.timed);
  /* the time cap wins over min_samples, never before 3 samples
   * (docs/json.md): a slow machine (a cold 1M saxpy under ASan on a loaded
   * 2-core box) reaches the 300 ms cap first */
  assert_true(s.time.n >= 3);
  if (s.time.n < 5) assert_string_equal(s.stop_reason, "time_cap");
  assert_true(s.time.ci_low <= s.time.median &&
              s.time.median <= s.time.ci_high);
  assert_true(s.time.median > 0);
  assert_true(s.scaled && s.rel_l2 == 0 && strcmp(s.trivial, "mean") == 0);
  {
    /* an older caller's kl_shape_result stops before the scale */
    union {
      kl_shape_result s;
      unsigned char bytes[sizeof(kl_shape_result)];
    } older;
    memset(&older, 0x5A, sizeof(older));
    older.s.size = offsetof(kl_shape_result, scaled);
    assert_int_equal(kl_report_shape(&older.s, r, 0), 0);
    assert_true(older.s.checked && older.s.timed);
    for (size_t k = offsetof(kl_shape_result, scaled); k < sizeof(older); k++)
      assert_int_equal(older.bytes[k], 0x5A);
    /* and its kl_reference_info before trivial_margin */
    union {
      kl_reference_info i;
      unsigned char bytes[sizeof(kl_reference_info)];
    } ref;
    memset(&ref, 0x5A, sizeof(ref));
    ref.i.size = offsetof(kl_reference_info, trivial_margin);
    assert_int_equal(kl_case_reference(&ref.i, saxpy), 0);
    for (size_t k = offsetof(kl_reference_info, trivial_margin);
         k < sizeof(ref); k++)
      assert_int_equal(ref.bytes[k], 0x5A);
    kl_reference_info full = KL_REFERENCE_INFO_INIT;
    assert_int_equal(kl_case_reference(&full, saxpy), 0);
    assert_true(full.trivial_margin == 100);
  }
  kl_report_free(r);
  /* host reference oracle (matmul_ref) */
  r = run(matmul, NULL, "n256", false, 0);
  expect_verdict(r, KL_VERDICT_OK, NULL);
  kl_report_shape(&s, r, 0);
  assert_true(s.max_abs_err > 0 && s.max_abs_err < 1e-3);
  kl_report_free(r);
}

static void note_phase(const char *phase, void *payload) {
  char *seen = payload;
  size_t n = strlen(seen);
  snprintf(seen + n, 128 - n, "%s%s", n ? " " : "", phase);
}

/* The value of "key": in text after `after`, or -1. */
static double json_number_after(const char *text, const char *after,
                                const char *key) {
  const char *p = strstr(text, after);
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  p = p ? strstr(p, pat) : NULL;
  return p ? strtod(p + strlen(pat), NULL) : -1;
}

/* The live view's phases, in order; the report's breakdown of the same
 * bench: each phase that ran, sampling within timing, timing within the
 * whole (structure, not speed). */
static void test_bench__phases(void **state) {
  (void)state;
  char seen[128] = "";
  kl_bench_options o = options("1M");
  o.on_phase = note_phase;
  o.phase_payload = seen;
  kl_report *r = NULL;
  if (kl_bench_run(&r, saxpy, &o)) fail_msg("%s", kl_error_last()->message);
  assert_string_equal(seen, "build worker load checks timing");
  kl_buf b = KL_BUF_INIT;
  assert_int_equal(kl_report_phases_text(&b, r), 0);
  assert_non_null(strstr(b.ptr, "wall "));
  assert_non_null(strstr(b.ptr, "checks "));
  assert_non_null(strstr(b.ptr, " (oracle "));
  assert_non_null(strstr(b.ptr, ", settle "));
  assert_non_null(strstr(b.ptr, " (setup "));
  assert_non_null(strstr(b.ptr, ", sampling "));
  assert_non_null(strstr(b.ptr, ", verify "));
  assert_null(strstr(b.ptr, "profile"));
  kl_buf_dispose(&b);
  assert_int_equal(kl_report_json(&b, r), 0);
  const char *ph = "\"phases_ms\":{";
  assert_non_null(strstr(b.ptr, ph));
  assert_non_null(strstr(b.ptr, "\"profile\":null"));
  double total = json_number_after(b.ptr, ph, "total");
  double timing = json_number_after(b.ptr, ph, "timing");
  double sampling = json_number_after(b.ptr, ph, "sampling");
  double placements = json_number_after(b.ptr, ph, "placements");
  double verify = json_number_after(b.ptr, ph, "verify");
  double setup = json_number_after(b.ptr, ph, "setup");
  double checks = json_number_after(b.ptr, ph, "checks");
  double oracle = json_number_after(b.ptr, ph, "oracle");
  double settle = json_number_after(b.ptr, ph, "settle");
  assert_true(total > 0 && timing > 0 && sampling > 0 && sampling <= timing &&
              timing <= total);
  /* timing's parts: made, sampled and verified within it (0.1 ms a value
   * of rounding) */
  assert_true(setup >= 0 && placements >= 0 && verify > 0 &&
              setup + sampling + placements + verify <= timing + 0.4);
  /* the checks' parts: the host reference run on three seeds, the pause
   * of at least 2 ms after each launch */
  assert_true(oracle > 0 && settle >= 3 * 2.0 &&
              oracle + settle <= checks + 0.2);
  assert_non_null(strstr(b.ptr, "\"gates\":null")); /* no candidate */
  kl_buf_dispose(&b);
  kl_report_free(r);
  /* a candidate (the baseline's own source) passes the roofline gate */
  seen[0] = '\0';
  o.candidate = "void saxpy(float *y, const float *x, float a, int n) {\n"
                "  for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];\n}\n";
  if (kl_bench_run(&r, saxpy, &o)) fail_msg("%s", kl_error_last()->message);
  assert_string_equal(seen, "build worker load checks timing gates");
  assert_int_equal(kl_report_json(&b, r), 0);
  double gates = json_number_after(b.ptr, ph, "gates");
  assert_true(gates >= 0 && gates <= json_number_after(b.ptr, ph, "total"));
  kl_buf_dispose(&b);
  assert_int_equal(kl_report_phases_text(&b, r), 0);
  assert_non_null(strstr(b.ptr, ", gates "));
  kl_buf_dispose(&b);
  kl_report_free(r);
}

/* The stale_outputs gate: checked correct, then caught after timing. */
static void test_bench__replayed_result_is_cheat(void **state) {
  (void)state;
  kl_report *r = run(matmul, CAND "matmul_replays_result.c", "n256", false, 0);
  expect_verdict(r, KL_VERDICT_CHEAT, "did not match the inputs");
  assert_string_equal(kl_report_gate(r), "stale_outputs");
  kl_shape_result s = KL_SHAPE_RESULT_INIT;
  kl_report_shape(&s, r, 0);
  assert_true(s.checked && s.correct);
  kl_report_free(r);
  /* compared against the baseline, the same */
  r = run(matmul, CAND "matmul_replays_result.c", "n256", true, 0);
  expect_verdict(r, KL_VERDICT_CHEAT, NULL);
  kl_report_free(r);
}

/* A configuration: the blocked i-k-j variant of the baseline itself,
 * checked against the unconfigured baseline's reference and compared
 * against a second configuration. */
static void test_bench__tunable_configurations(void **state) {
  (void)state;
  const char *fast[] = {"BLOCK=32", "LOOP_ORDER=1", NULL};
  const char *naive[] = {"BLOCK=0", "LOOP_ORDER=0", NULL};
  kl_bench_options o = deciding("n256");
  o.candidate_config = fast;
  o.against_config = naive;
  kl_report *r = NULL;
  if (kl_bench_compare(&r, matmul, &o))
    fail_msg("%s", kl_error_last()->message);
  expect_verdict(r, KL_VERDICT_OK, NULL);
  kl_shape_result s = KL_SHAPE_RESULT_INIT;
  kl_report_shape(&s, r, 0);
  assert_true(s.correct && s.timed);
  assert_true(s.speedup.decision == KL_DECISION_FASTER);
  kl_report_free(r);
  /* a setting that is not NAME=VALUE is the caller's mistake */
  const char *bad[] = {"BLOCK", NULL};
  o.candidate_config = bad;
  assert_int_equal(kl_bench_compare(&r, matmul, &o), KL_EINVALID);
  assert_non_null(strstr(kl_error_last()->message, "NAME=VALUE"));
}

static void test_bench__wrong_result(void **state) {
  (void)state;
  kl_report *r = run(saxpy, CAND "saxpy_wrong.c", "1M", false, 0);
  expect_verdict(r, KL_VERDICT_INCORRECT, "mismatches");
  kl_shape_result s = KL_SHAPE_RESULT_INIT;
  kl_report_shape(&s, r, 0);
  assert_true(s.checked && !s.correct && !s.timed);
  assert_true(s.mismatches > 0);
  kl_report_free(r);
}

static void test_bench__unwritten_output(void **state) {
  (void)state;
  kl_report *r = run(matmul, CAND "matmul_unwritten.c", "n256", false, 0);
  expect_verdict(r, KL_VERDICT_INCORRECT, "never written");
  kl_shape_result s = KL_SHAPE_RESULT_INIT;
  kl_report_shape(&s, r, 0);
  assert_int_equal(s.unwritten, 3 * 256); /* the last row, on 3 seeds */
  kl_report_free(r);
}

static void test_bench__writes_its_input(void **state) {
  (void)state;
  kl_report *r = run(saxpy, CAND "saxpy_writes_input.c", "1M", false, 0);
  expect_verdict(r, KL_VERDICT_INCORRECT, "wrote its input");
  kl_shape_result s = KL_SHAPE_RESULT_INIT;
  kl_report_shape(&s, r, 0);
  assert_int_equal(s.inputs_written, 3);
  assert_int_equal(s.mismatches, 0);
  kl_report_free(r);
}

static void test_bench__nan_is_not_close_enough(void **state) {
  (void)state;
  kl_report *r = run(saxpy, CAND "saxpy_nan.c", "1M", false, 0);
  expect_verdict(r, KL_VERDICT_INCORRECT, "NaN");
  kl_shape_result s = KL_SHAPE_RESULT_INIT;
  kl_report_shape(&s, r, 0);
  assert_int_equal(s.nonfinite, 3);
  kl_report_free(r);
}

static void test_bench__segfault_is_crashed(void **state) {
  (void)state;
  kl_report *r = run(saxpy, CAND "saxpy_segfault.c", "1M", false, 0);
  expect_verdict(r, KL_VERDICT_CRASHED, "signal 11");
  kl_report_free(r);
  r = run(saxpy, CAND "saxpy_exits.c", "1M", false, 0);
  expect_verdict(r, KL_VERDICT_CRASHED, "status 7");
  assert_non_null(strstr(kl_report_reason(r), "giving up"));
  kl_report_free(r);
}

static void test_bench__hang_is_timeout(void **state) {
  (void)state;
  kl_report *r = run(saxpy, CAND "saxpy_hang.c", "1M", false, 1500);
  expect_verdict(r, KL_VERDICT_TIMEOUT, "1500 ms");
  kl_report_free(r);
}

static void test_bench__compile_error(void **state) {
  (void)state;
  kl_report *r = run(saxpy, CAND "saxpy_compile_error.c", NULL, false, 0);
  expect_verdict(r, KL_VERDICT_COMPILE_ERROR, "saxpy_compile_error.c:4:");
  assert_non_null(kl_report_compile_log(r));
  kl_report_free(r);
}

/* After a crash the next request gets a fresh worker with the same
 * plugins, under the same ids. */
static void test_bench__worker_survives_a_crash(void **state) {
  (void)state;
  char *bad = kl_test_slurp(CAND "saxpy_segfault.c");
  assert_non_null(bad);
  kl_artifact *good_a, *bad_a;
  assert_int_equal(kl_compile_plugin(&good_a, saxpy, NULL, &copts), 0);
  assert_int_equal(kl_compile_plugin(&bad_a, saxpy, bad, &copts), 0);
  kl_worker *w;
  assert_int_equal(kl_worker_create(&w, NULL), 0);
  int good, crash;
  assert_int_equal(kl_worker_load(&good, w, kl_artifact_path(good_a)), 0);
  assert_int_equal(kl_worker_load(&crash, w, kl_artifact_path(bad_a)), 0);
  uint64_t seeds[3] = {1, 2, 3};
  kl_check_result res[3] = {KL_CHECK_RESULT_INIT, KL_CHECK_RESULT_INIT,
                            KL_CHECK_RESULT_INIT};
  assert_int_equal(kl_worker_check(res, w, crash, good, 0, seeds, 3),
                   KL_ECRASHED);
  assert_int_equal(kl_worker_restarts(w), 0);
  assert_int_equal(kl_worker_check(res, w, good, good, 0, seeds, 3), 0);
  assert_int_equal(kl_worker_restarts(w), 1);
  assert_true(res[0].correct && res[1].correct && res[2].correct);
  /* a request the worker cannot carry out is a runtime failure (exit 1),
   * not bad input, its reason once prefixed */
  assert_int_equal(kl_worker_check(res, w, 99, good, 0, seeds, 3), KL_ERROR);
  assert_non_null(strstr(kl_error_last()->message, "worker: check: "));
  assert_null(strstr(kl_error_last()->message, "check: check:"));
  assert_int_equal(kl_worker_restarts(w), 1);
  /* a newer caller's bigger entries: laid out at its stride, the bytes
   * this library does not know left alone */
  struct {
    kl_check_result r;
    unsigned char later[40];
  } newer[3];
  memset(newer, 0xA5, sizeof(newer));
  for (size_t i = 0; i < 3; i++)
    newer[i].r.size = sizeof(newer[0]);
  assert_int_equal(kl_worker_check(&newer[0].r, w, good, good, 0, seeds, 3), 0);
  for (size_t i = 0; i < 3; i++) {
    assert_true(newer[i].r.correct);
    assert_int_equal(newer[i].r.seed, seeds[i]);
    for (size_t k = 0; k < sizeof(newer[i].later); k++)
      assert_int_equal(newer[i].later[k], 0xA5);
  }
  /* the scale of a float output against the oracle's (itself: no error),
   * and what zeros and the mean would score */
  assert_int_equal(kl_worker_check(res, w, good, good, 0, seeds, 3), 0);
  assert_true(res[0].scaled && res[0].rel_l2 == 0 &&
              strcmp(res[0].scale_param, "y") == 0);
  assert_true(res[0].trivial_rel[KL_TRIVIAL_ZEROS] == 1.0 &&
              res[0].trivial_rel[KL_TRIVIAL_MEAN] > 0.5 &&
              res[0].trivial_rel[KL_TRIVIAL_ROLLED] == -1 &&
              res[0].scale_elements > 0 && res[0].ref_rms > 0);
  /* an older caller, sized to the struct's first release: laid out at its
   * stride, nothing written past it */
  {
    /* its sizeof: the fields before `scaled`, padded to the alignment */
    const size_t old =
        (offsetof(kl_check_result, scaled) + _Alignof(kl_check_result) - 1) &
        ~(_Alignof(kl_check_result) - 1);
    _Alignas(
        kl_check_result) unsigned char entries[3 * sizeof(kl_check_result)];
    memset(entries, 0x5A, sizeof(entries));
    for (size_t i = 0; i < 3; i++) {
      kl_check_result *e = (kl_check_result *)(void *)(entries + i * old);
      memset(e, 0, old);
      e->size = old;
    }
    assert_int_equal(kl_worker_check((kl_check_result *)(void *)entries, w,
                                     good, good, 0, seeds, 3),
                     0);
    for (size_t i = 0; i < 3; i++) {
      kl_check_result e;
      memcpy(&e, entries + i * old, old);
      assert_true(e.correct && e.seed == seeds[i]);
    }
    for (size_t k = 3 * old; k < sizeof(entries); k++)
      assert_int_equal(entries[k], 0x5A);
  }
  kl_time_options t = KL_TIME_OPTIONS_INIT;
  t.time_cap_ms = 100;
  t.min_samples = 3;
  kl_samples s = KL_SAMPLES_INIT;
  assert_int_equal(kl_worker_time(&s, w, &good, 1, 0, &t), 0);
  assert_true(s.n >= 3 && s.us[0][0] > 0);
  assert_string_equal(s.gate, "");
  {
    /* kl_samples' older callers: the gate and culprit are not theirs */
    union {
      kl_samples s;
      unsigned char bytes[sizeof(kl_samples)];
    } older;
    memset(&older, 0x5A, sizeof(older));
    memset(&older.s, 0, offsetof(kl_samples, gate));
    older.s.size = offsetof(kl_samples, gate);
    assert_int_equal(kl_worker_time(&older.s, w, &good, 1, 0, &t), 0);
    assert_true(older.s.n >= 3);
    for (size_t k = offsetof(kl_samples, gate); k < sizeof(older); k++)
      assert_int_equal(older.bytes[k], 0x5A);
    kl_samples_dispose(&older.s);
  }
  /* where the time went: the host timer times as it queues; no device */
  assert_true(s.costs.queue_ms > 0 && s.costs.setup_ms >= 0 &&
              s.costs.wait_ms == 0 && s.costs.dev_windows == 0 &&
              s.costs.dev_span_us == 0);
  kl_samples_dispose(&s);
  /* a file that is not a plugin is refused without killing anything, and
   * the worker's own reason is there, without the client's prefix */
  assert_int_equal(kl_worker_load(&good, w, "/etc/hostname"), KL_EINVALID);
  const char *why = kl__worker_load_refused(w);
  assert_non_null(why);
  assert_true(why[0] && strncmp(why, "worker:", 7) != 0);
  assert_int_equal(kl_worker_load(&good, w, kl_artifact_path(good_a)), 0);
  assert_null(kl__worker_load_refused(w));
  kl_worker_free(w);
  kl_artifact_free(good_a);
  kl_artifact_free(bad_a);
  free(bad);
}

/* This process's children that are kl-workers: the zombies among them
 * (exited, not yet reaped) or the others. */
static int worker_children(bool zombies) {
  DIR *d = opendir("/proc");
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f =
        e->d_name[0] >= '0' && e->d_name[0] <= '9' ? fopen(path, "r") : NULL;
    if (!f) continue;
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = '\0';
    const char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    long ppid = 0;
    char state;
    if (open && close && sscanf(close + 2, "%c %ld", &state, &ppid) == 2 &&
        ppid == (long)getpid() && strncmp(open + 1, "kl-worker", 9) == 0 &&
        (state == 'Z') == zombies)
      n++;
  }
  if (d) closedir(d);
  return n;
}

/* kl_worker_free waits for the worker's answer to quit, not for its end:
 * workers on their way out leave by themselves, never more than 16 of
 * them at once, and the next kl_worker_create reaps those that have left.
 * Structure, not speed: the bound is the list's, the wait a generous one. */
static void test_bench__workers_leave_without_waiting(void **state) {
  (void)state;
  kl_artifact *a;
  assert_int_equal(kl_compile_plugin(&a, saxpy, NULL, &copts), 0);
  for (int i = 0; i < 40; i++) {
    kl_worker *w;
    int id;
    assert_int_equal(kl_worker_create(&w, NULL), 0);
    assert_int_equal(kl_worker_load(&id, w, kl_artifact_path(a)), 0);
    kl_worker_free(w);
    int n = worker_children(false) + worker_children(true);
    if (n > 16) fail_msg("%d workers after %d frees", n, i + 1);
  }
  /* they end by themselves, nobody waiting */
  for (int tries = 0; worker_children(false) > 0 && tries < 600; tries++)
    nanosleep(&(struct timespec){0, 50000000}, NULL);
  assert_int_equal(worker_children(false), 0);
  /* and a new worker's start reaps them: only it is left */
  kl_worker *w;
  assert_int_equal(kl_worker_create(&w, NULL), 0);
  assert_int_equal(worker_children(true), 0);
  assert_int_equal(worker_children(false), 1);
  kl_worker_free(w);
  kl_artifact_free(a);
}

/* The default compile cache lives under the home, which the worker's
 * sandbox hides; on a first run it does not exist yet when the worker
 * starts, so the worker must start again once it does (a bench on a fresh
 * machine: the load used to fail with "Permission denied"). */
static void test_bench__cache_made_after_the_worker_started(void **state) {
  (void)state;
  static const char *const vars[] = {"HOME", "XDG_CACHE_HOME",
                                     "KERNLAB_CACHE_DIR"};
  char *saved[3];
  for (int i = 0; i < 3; i++) {
    const char *v = getenv(vars[i]);
    saved[i] = v ? strdup(v) : NULL;
  }
  char home[300];
  snprintf(home, sizeof(home), "%s/home", cache);
  assert_int_equal(mkdir(home, 0700), 0);
  setenv("HOME", home, 1);
  unsetenv("XDG_CACHE_HOME");
  unsetenv("KERNLAB_CACHE_DIR");
  kl_worker *w;
  assert_int_equal(kl_worker_create(&w, NULL), 0); /* no cache yet */
  kl_artifact *a;
  assert_int_equal(kl_compile_plugin(&a, saxpy, NULL, NULL), 0);
  assert_true(kl_artifact_ok(a));
  assert_non_null(strstr(kl_artifact_path(a), "/home/.cache/kernlab/"));
  int id;
  assert_int_equal(kl_worker_load(&id, w, kl_artifact_path(a)), 0);
  uint64_t seeds[1] = {1};
  kl_check_result res[1] = {KL_CHECK_RESULT_INIT};
  assert_int_equal(kl_worker_check(res, w, id, id, 0, seeds, 1), 0);
  assert_true(res[0].correct);
  kl_worker_free(w);
  kl_artifact_free(a);
  for (int i = 0; i < 3; i++) {
    if (saved[i])
      setenv(vars[i], saved[i], 1);
    else
      unsetenv(vars[i]);
    free(saved[i]);
  }
}

static void test_bench__faster_candidate_is_faster(void **state) {
  (void)state;
  kl_report *r =
      run_with(matmul, SRC "/cases/host_matmul/candidates/ikj_blocked.c",
               deciding("n256"), true);
  expect_verdict(r, KL_VERDICT_OK, NULL);
  kl_shape_result s = KL_SHAPE_RESULT_INIT;
  kl_report_shape(&s, r, 0);
  assert_int_equal(s.speedup.decision, KL_DECISION_FASTER);
  assert_true(s.speedup.ci_low > 1.0);
  kl_speedup obj;
  assert_int_equal(kl_report_objective(&obj, r), 0);
  assert_int_equal(obj.decision, KL_DECISION_FASTER);
  kl_report_free(r);
}

/* The baseline against itself is "same". Both sides compute, so on a
 * loaded 2-core machine under sanitizers a burst of preemption can stretch
 * a run of one side's samples past what the interleaving cancels (a CI run
 * beside a CPU hog once read 0.586 [0.357, 0.962]). Up to three
 * comparisons: one "same" passes; a real bias between the two sides (one
 * timed differently from the other) is "different" every time. */
static void test_bench__baseline_against_itself_is_same(void **state) {
  (void)state;
  char seen[3][96];
  for (int attempt = 0; attempt < 3; attempt++) {
    kl_report *r =
        run(matmul, SRC "/cases/host_matmul/kernel.c", "n256", true, 0);
    expect_verdict(r, KL_VERDICT_OK, NULL);
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    kl_report_shape(&s, r, 0);
    kl_decision d = s.speedup.decision;
    snprintf(seen[attempt], sizeof seen[attempt], "%s %.4f [%.4f, %.4f]",
             kl_decision_name(d), s.speedup.speedup, s.speedup.ci_low,
             s.speedup.ci_high);
    kl_report_free(r);
    if (d == KL_DECISION_SAME) return;
  }
  fail_msg("A/A decided different three times: %s; %s; %s", seen[0], seen[1],
           seen[2]);
}

static void test_bench__json_fields(void **state) {
  (void)state;
  kl_report *r = run(saxpy, SRC "/cases/host_saxpy/kernel.c", "1M", true, 0);
  kl_buf b = KL_BUF_INIT;
  assert_int_equal(kl_report_json(&b, r), 0);
  const char *fields[] = {"\"case\":\"host_saxpy\"",
                          "\"mode\":\"compare\"",
                          "\"verdict\":\"OK\"",
                          "\"name\":\"1M\"",
                          "\"correct\":true",
                          "\"max_abs_err\":",
                          "\"unwritten\":0",
                          "\"median_us\":",
                          "\"ci_low_us\":",
                          "\"ci_high_us\":",
                          "\"samples\":",
                          "\"cold\":true",
                          "\"speedup\":",
                          "\"speedup_ci\":[",
                          "\"decision\":",
                          "\"objective\":{\"name\":"
                          "\"geomean_speedup\"",
                          "\"worker_served\":0",
                          "\"blocks\":{\"units\":",
                          "\"decision_reason\":\"",
                          "\"gates_applied\":[\"tolerance\","
                          "\"work_after_return\",\"launch_contract\","
                          "\"trivial_output\""};
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
    if (!strstr(b.ptr, fields[i]))
      fail_msg("JSON lacks %s: %s", fields[i], b.ptr);
  /* the decision in words begins with the decision, with its blocks */
  kl_shape_result s = KL_SHAPE_RESULT_INIT;
  assert_int_equal(kl_report_shape(&s, r, 0), 0);
  assert_non_null(s.decision_reason);
  assert_true(strncmp(s.decision_reason, kl_decision_name(s.speedup.decision),
                      strlen(kl_decision_name(s.speedup.decision))) == 0);
  assert_true(s.blocks >= 1 && s.blocks_faster + s.blocks_slower <= s.blocks);
  /* a host shape has no calibration (kernel records only) */
  assert_null(strstr(b.ptr, "\"calibration\""));
  assert_true(s.calibration_us == 0);
  /* and read back from the JSON as written, with a device shape's
   * calibration put in (an executor's report from a GPU machine) */
  json_object *doc = json_tokener_parse(b.ptr);
  json_object *cal = json_object_new_object();
  json_object_object_add(cal, "offset_us", json_object_new_double(1.125));
  json_object_object_add(cal, "probe_records_us", json_object_new_double(2.5));
  json_object_object_add(cal, "probe_true_us", json_object_new_double(1.375));
  json_object_object_add(
      json_object_array_get_idx(json_object_object_get(doc, "shapes"), 0),
      "calibration", cal);
  kl_report *back = NULL;
  assert_int_equal(kl__report_from_json(&back, doc, "t"), 0);
  kl_shape_result t = KL_SHAPE_RESULT_INIT;
  assert_int_equal(kl_report_shape(&t, back, 0), 0);
  assert_string_equal(t.decision_reason, s.decision_reason);
  assert_int_equal(t.blocks, s.blocks);
  assert_true(t.calibration_us == 1.125 && t.graph_calibration_us == 0);
  kl_buf again = KL_BUF_INIT;
  assert_int_equal(kl_report_json(&again, back), 0);
  assert_non_null(strstr(again.ptr, "\"gates_applied\":[\"tolerance\""));
  assert_non_null(strstr(again.ptr, "\"calibration\":{\"offset_us\":1.125,"
                                    "\"probe_records_us\":2.5,"
                                    "\"probe_true_us\":1.375}"));
  kl_buf_dispose(&again);
  kl_report_free(back);
  json_object_put(doc);
  kl_buf_dispose(&b);
  kl_report_free(r);
}

/* kl__bench_in through a kept worker (the local executor's, per slot): one
 * worker serves evaluation after evaluation while they pass, each plugin
 * loaded once; a failure ends it and starts its replacement, which has
 * the baseline loaded when the next evaluation takes it; ending a kept
 * worker kills a replacement still starting. Structure, not time. */
static kl_report *kept_run_of(kl__kept_worker *k, kl_case *c, const char *shape,
                              const char *file, bool compare) {
  kl_bench_options o = options(shape);
  o.time.time_cap_ms = 100;
  o.check_seed = 77; /* a run's: every evaluation checked on its seeds */
  char *src = file ? kl_test_slurp(file) : NULL;
  if (file) assert_non_null(src);
  o.candidate = src;
  kl_report *r = NULL;
  if (kl__bench_in(&r, c, &o, compare, k))
    fail_msg("%s", kl_error_last()->message);
  free(src);
  return r;
}

static kl_report *kept_run(kl__kept_worker *k, const char *file, bool compare) {
  return kept_run_of(k, saxpy, "1M", file, compare);
}

static size_t loaded_in(const kl__kept_worker *k) {
  size_t n;
  kl__worker_plugin_paths(k->w, &n);
  return n;
}

static void test_bench__kept_worker(void **state) {
  (void)state;
  kl__kept_worker k;
  memset(&k, 0, sizeof(k));
  kl_report *r = kept_run(&k, NULL, false); /* the baseline: a fresh one */
  assert_int_equal(kl_report_verdict(r), KL_VERDICT_OK);
  assert_int_equal(r->worker_served, 0);
  assert_int_equal(r->oracle_kept, 0); /* made here, kept for later */
  kl_report_free(r);
  assert_non_null(k.w);
  assert_int_equal(k.served, 1);
  assert_int_equal((int)loaded_in(&k), 1);
  int pid = kl__worker_pid(k.w);
  assert_true(pid > 0);
  /* the same candidate twice: one worker, the plugin loaded once */
  size_t loaded = 0;
  for (int i = 0; i < 2; i++) {
    r = kept_run(&k, SRC "/cases/host_saxpy/kernel.c", true);
    assert_int_equal(kl_report_verdict(r), KL_VERDICT_OK);
    assert_int_equal(r->worker_served, 1 + i);
    /* the oracle's outputs of the baseline's check served all 3 seeds */
    assert_int_equal(r->oracle_kept, 3);
    kl_report_free(r);
    assert_int_equal(kl__worker_pid(k.w), pid);
    if (i == 0) loaded = loaded_in(&k);
  }
  assert_true(loaded >= 1 && loaded <= 2);
  assert_int_equal(loaded_in(&k), loaded);
  r = kept_run(&k, CAND "saxpy_wrong.c", true);
  expect_verdict(r, KL_VERDICT_INCORRECT, "mismatches");
  assert_int_equal(r->worker_served, 3);
  assert_true(r->oracle_kept >= 1); /* rejected on kept outputs */
  kl_report_free(r);
  /* ended, and its replacement starting with the baseline */
  assert_true(k.spare_running);
  assert_int_equal(k.served, 0);
  r = kept_run(&k, NULL, false);
  assert_int_equal(kl_report_verdict(r), KL_VERDICT_OK);
  assert_int_equal(r->worker_served, 0);
  assert_int_equal(r->oracle_kept, 0); /* a new process keeps nothing */
  kl_report_free(r);
  assert_false(k.spare_running);
  assert_non_null(k.w);
  assert_true(kl__worker_pid(k.w) != pid);
  assert_int_equal((int)loaded_in(&k), 1);
  /* a crash: ended, and the replacement killed when the keeper ends */
  r = kept_run(&k, CAND "saxpy_segfault.c", false);
  expect_verdict(r, KL_VERDICT_CRASHED, NULL);
  kl_report_free(r);
  assert_true(k.spare_running);
  kl__kept_worker_end(&k);
  assert_null(k.w);
  assert_false(k.spare_running);
}

/* A host reference kept for a run: made by the baseline's plugin in its
 * own evaluation, then served to a candidate's checks. */
static void test_bench__kept_reference(void **state) {
  (void)state;
  kl__kept_worker k;
  memset(&k, 0, sizeof(k));
  kl_report *r = kept_run_of(&k, matmul, "n256", NULL, false);
  assert_int_equal(kl_report_verdict(r), KL_VERDICT_OK);
  assert_int_equal(r->oracle_kept, 0);
  kl_report_free(r);
  r = kept_run_of(&k, matmul, "n256", SRC "/cases/host_matmul/kernel.c", true);
  assert_int_equal(kl_report_verdict(r), KL_VERDICT_OK);
  assert_int_equal(r->oracle_kept, 3);
  kl_report_free(r);
  r = kept_run_of(&k, matmul, "n256", CAND "matmul_unwritten.c", true);
  expect_verdict(r, KL_VERDICT_INCORRECT, "never written");
  assert_true(r->oracle_kept >= 1);
  kl_report_free(r);
  kl__kept_worker_end(&k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bench__baseline_is_correct_and_timed),
      cmocka_unit_test(test_bench__phases),
      cmocka_unit_test(test_bench__wrong_result),
      cmocka_unit_test(test_bench__replayed_result_is_cheat),
      cmocka_unit_test(test_bench__tunable_configurations),
      cmocka_unit_test(test_bench__unwritten_output),
      cmocka_unit_test(test_bench__writes_its_input),
      cmocka_unit_test(test_bench__nan_is_not_close_enough),
      cmocka_unit_test(test_bench__segfault_is_crashed),
      cmocka_unit_test(test_bench__hang_is_timeout),
      cmocka_unit_test(test_bench__compile_error),
      cmocka_unit_test(test_bench__worker_survives_a_crash),
      cmocka_unit_test(test_bench__workers_leave_without_waiting),
      cmocka_unit_test(test_bench__cache_made_after_the_worker_started),
      cmocka_unit_test(test_bench__faster_candidate_is_faster),
      cmocka_unit_test(test_bench__baseline_against_itself_is_same),
      cmocka_unit_test(test_bench__json_fields),
      cmocka_unit_test(test_bench__kept_worker),
      cmocka_unit_test(test_bench__kept_reference),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
