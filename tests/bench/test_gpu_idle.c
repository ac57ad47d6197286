/* The GPU's idleness (issue 49, part 3) with a fake device on the CPU: the
 * NVML reader (core/gpu_usage.c) through tests/support/fake_nvml.c, the
 * idlest of several GPUs, the report's "gpu_usage" written and read back,
 * its words and warning, and benchmark.csv's GPU columns (and a file begun
 * before them keeping its columns); a report of --launch both read back
 * (with the kind of CUPTI records that timed a shape). The
 * same readings of a real H200 are checked by graph_launch_gpu's bench. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "bench/bench_internal.h"
#include "core/gpu_usage.h"
#include "core/json.h"
#include "records/records.h"
#include "support/slurp.h"

#define BUSY "GPU-busy0000"
#define IDLE "GPU-idle1111"

static void test_gpu_idle__reads_the_devices(void **state) {
  (void)state;
  assert_int_equal(kl__gpu_count(), 3);
  kl__gpu_usage u;
  assert_true(kl__gpu_usage_of(&u, BUSY, 4242));
  assert_string_equal(u.uuid, BUSY);
  assert_int_equal(u.util_pct, 87);
  assert_true(u.mem_used_mib == 30000);
  assert_int_equal(u.processes, 2);
  assert_int_equal(u.others, 1); /* 4242 is ours */
  assert_false(kl__gpu_usage_of(&u, "GPU-nosuch", 0));
  assert_false(u.known);
}

static void test_gpu_idle__picks_the_idlest(void **state) {
  (void)state;
  kl__gpu_usage u;
  memset(&u, 0, sizeof(u));
  assert_true(kl__gpu_idlest(&u));
  /* the busy one has two processes, the third one process and 5% */
  assert_string_equal(u.uuid, IDLE);
}

static const char *report_json(int others_after) {
  static char doc[1024];
  snprintf(doc, sizeof doc,
           "{\"case\":\"c\",\"candidate\":\"k\",\"mode\":\"bench\","
           "\"verdict\":\"OK\",\"shapes\":[{\"name\":\"s1\",\"checked\":true,"
           "\"correct\":true,\"median_us\":10,\"ci_us\":[9.9,10.1],"
           "\"samples\":20}],\"gpu_usage\":{\"uuid\":\"" BUSY "\","
           "\"before\":{\"util_pct\":0,\"mem_used_mib\":512,"
           "\"mem_total_mib\":81559,\"processes\":1,\"others\":0},"
           "\"after\":{\"util_pct\":3,\"mem_used_mib\":600,"
           "\"mem_total_mib\":81559,\"processes\":%d,\"others\":%d}}}",
           1 + others_after, others_after);
  return doc;
}

static kl_report *report_from(const char *text) {
  json_object *doc = NULL;
  kl_report *r = NULL;
  assert_int_equal(kl__json_parse(&doc, text, "report", "report"), 0);
  assert_int_equal(kl__report_from_json(&r, doc, "report"), 0);
  json_object_put(doc);
  return r;
}

static void test_gpu_idle__report_json_and_words(void **state) {
  (void)state;
  kl_report *r = report_from(report_json(0));
  kl_buf b = KL_BUF_INIT;
  assert_int_equal(kl_report_json(&b, r), 0);
  assert_non_null(strstr(b.ptr, "\"gpu_usage\":{\"uuid\":\"" BUSY "\""));
  assert_non_null(strstr(b.ptr, "\"foreign_work\":false"));
  kl_buf_dispose(&b);
  assert_int_equal(kl_report_gpu_usage_text(&b, r), 0);
  assert_non_null(strstr(b.ptr, "before timing 0% busy, 512 of 81559 MiB"));
  assert_null(strstr(b.ptr, "warning"));
  kl_buf_dispose(&b);
  kl_report_free(r);
  r = report_from(report_json(2)); /* two others after the timing */
  assert_int_equal(kl_report_gpu_usage_text(&b, r), 0);
  assert_non_null(strstr(b.ptr, "2 other processes"));
  assert_non_null(strstr(b.ptr, "warning: another process used this GPU"));
  kl_buf_dispose(&b);
  kl_report_free(r);
}

/* --launch both (issue 46, part 3): a compare's report carries each shape's
 * graph replays beside the stream's times, written and read back; a
 * "graph" object in a report of one launch mode is not read. */
static void test_gpu_idle__launch_both_read_back(void **state) {
  (void)state;
  static const char *const doc_text =
      "{\"case\":\"c\",\"candidate\":\"k\",\"mode\":\"compare\","
      "\"verdict\":\"OK\",\"launch\":\"both\",\"shapes\":[{\"name\":"
      "\"s1\",\"checked\":true,\"correct\":true,\"median_us\":7.5,"
      "\"samples\":40,\"stop_reason\":\"converged\",\"tracing\":"
      "\"concurrent\",\"baseline\":{\"median_us\":8.7,\"samples\":40},"
      "\"speedup\":1.16,\"speedup_ci\":[1.15,1.17],\"decision\":"
      "\"faster\",\"graph\":{\"median_us\":6.5,\"samples\":38,"
      "\"baseline\":{\"median_us\":6.6,\"samples\":38},\"speedup\":1.01,"
      "\"speedup_ci\":[0.99,1.03],\"decision\":\"same\",\"tracing\":"
      "\"kernel\"}}]}";
  json_object *doc = NULL;
  kl_report *r = NULL;
  assert_int_equal(kl__json_parse(&doc, doc_text, "report", "report"), 0);
  assert_int_equal(kl__report_from_json(&r, doc, "report"), 0);
  json_object_put(doc);
  assert_int_equal(kl_report_launch(r), KL_LAUNCH_BOTH);
  kl_shape_result s = KL_SHAPE_RESULT_INIT;
  assert_int_equal(kl_report_shape(&s, r, 0), 0);
  assert_int_equal(s.speedup.decision, KL_DECISION_FASTER);
  assert_true(s.graph_timed);
  assert_true(s.graph_time.median == 6.5 && s.graph_time.n == 38);
  assert_true(s.graph_baseline.median == 6.6);
  assert_int_equal(s.graph_speedup.decision, KL_DECISION_SAME);
  assert_string_equal(s.tracing, "concurrent");
  assert_string_equal(s.graph_tracing, "kernel");
  kl_buf b = KL_BUF_INIT;
  assert_int_equal(kl_report_json(&b, r), 0);
  assert_non_null(strstr(b.ptr, "\"launch\":\"both\""));
  /* the kind of CUPTI records that timed the shape (issue 46, part 2) */
  assert_non_null(strstr(b.ptr, "\"stop_reason\":\"converged\","));
  assert_non_null(strstr(b.ptr, "\"tracing\":\"concurrent\""));
  assert_non_null(strstr(b.ptr, "\"graph\":{\"median_us\":6.5,"));
  assert_non_null(strstr(b.ptr,
                         "\"speedup\":1.01,\"speedup_ci\":[0.99,1.03],"
                         "\"decision\":\"same\",\"tracing\":\"kernel\"}"));
  kl_buf_dispose(&b);
  kl_report_free(r);
  /* the same document under one launch mode: no graph fields */
  char *one = strdup(doc_text);
  assert_non_null(one);
  memcpy(strstr(one, "\"both\""), "\"grph\"", 6); /* unknown: stream */
  /* and records of a kind no worker names are not read */
  memcpy(strstr(one, "\"concurrent\""), "\"concurrenX\"", 12);
  assert_int_equal(kl__json_parse(&doc, one, "report", "report"), 0);
  assert_int_equal(kl__report_from_json(&r, doc, "report"), 0);
  json_object_put(doc);
  free(one);
  assert_int_equal(kl_report_launch(r), KL_LAUNCH_STREAM);
  kl_shape_result t = KL_SHAPE_RESULT_INIT;
  assert_int_equal(kl_report_shape(&t, r, 0), 0);
  assert_false(t.graph_timed);
  assert_null(t.tracing);
  assert_null(t.graph_tracing); /* the graph object is not read */
  assert_int_equal(kl_report_json(&b, r), 0);
  assert_null(strstr(b.ptr, "\"graph\""));
  assert_null(strstr(b.ptr, "\"launch\""));
  assert_null(strstr(b.ptr, "\"tracing\""));
  kl_buf_dispose(&b);
  kl_report_free(r);
}

static void test_gpu_idle__benchmark_csv_columns(void **state) {
  (void)state;
  char dir[] = "/tmp/kl-gpu-idle-XXXXXX";
  assert_non_null(mkdtemp(dir));
  kl_report *r = report_from(report_json(1));
  assert_int_equal(kl__benchmark_rows_write(dir, "run1", 1, "k",
                                            KL_OUTCOME_ACCEPTED, r, NULL),
                   0);
  char path[256];
  snprintf(path, sizeof path, "%s/benchmark.csv", dir);
  char *text = kl_test_slurp(path);
  assert_non_null(text);
  assert_non_null(strstr(text, ",speedup_ci_high,gpu_util_pct_before,"
                               "gpu_util_pct_after,gpu_mem_used_mib_before,"
                               "gpu_mem_used_mib_after,gpu_other_processes\n"));
  assert_non_null(strstr(text, ",,,,0,3,512,600,1\n"));
  free(text);
  /* a file begun with the first header keeps its 14 columns */
  FILE *f = fopen(path, "w");
  fputs("run,iteration,id,shape,verdict,median_us,ci_low_us,ci_high_us,"
        "samples,sm_clock_mhz,against_median_us,speedup,speedup_ci_low,"
        "speedup_ci_high\n",
        f);
  fclose(f);
  assert_int_equal(kl__benchmark_rows_write(dir, "run1", 2, "k",
                                            KL_OUTCOME_ACCEPTED, r, NULL),
                   0);
  text = kl_test_slurp(path);
  const char *row = strchr(text, '\n') + 1;
  int commas = 0;
  for (const char *p = row; *p && *p != '\n'; p++)
    commas += *p == ',';
  assert_int_equal(commas, 13);
  free(text);
  kl_report_free(r);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  setenv("KERNLAB_NVML_LIB", KL_FAKE_NVML, 1);
  setenv("FAKE_NVML",
         BUSY ":87:30000:4242,777;" IDLE ":0:300:;GPU-third:5:100:999", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_idle__reads_the_devices),
      cmocka_unit_test(test_gpu_idle__picks_the_idlest),
      cmocka_unit_test(test_gpu_idle__report_json_and_words),
      cmocka_unit_test(test_gpu_idle__launch_both_read_back),
      cmocka_unit_test(test_gpu_idle__benchmark_csv_columns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
