/* The metric catalog, set specs, the verdict on profiles recorded on an
 * H200 (tests/profile/fixtures), and the sets' pass counts on GH100
 * computed offline by the worker through CUPTI's host API (no GPU needed;
 * skipped where the worker was built without CUPTI). */
#include <math.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "core/internal.h"
#include "kernlab/kernlab.h"
#include "profile/profile_internal.h"
#include "support/slurp.h"
#include "worker/client_internal.h"

#define FIX KL_SOURCE_DIR "/tests/profile/fixtures/"

static kl_profile *load(const char *name) {
  char path[512];
  snprintf(path, sizeof(path), FIX "%s.json", name);
  char *text = kl_test_slurp(path);
  assert_non_null(text);
  kl_profile *p = NULL;
  if (kl_profile_from_json(&p, text, path))
    fail_msg("%s", kl_error_last()->message);
  free(text);
  return p;
}

static double value(const kl_profile *p, const char *name) {
  double v = NAN;
  if (kl_profile_value(&v, p, name)) fail_msg("no %s", name);
  return v;
}

static void test_catalog_is_consistent(void **state) {
  (void)state;
  size_t n, quick = 0, standard = 0;
  const kl_metric_info *cat = kl_metric_catalog(&n);
  static const char *const groups[] = {
      "roofline",    "memory", "warp_stalls", "occupancy",
      "instruction", "launch", "host"};
  for (size_t i = 0; i < n; i++) {
    bool group_ok = false;
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
      group_ok |= strcmp(cat[i].group, groups[g]) == 0;
    if (!group_ok) fail_msg("%s: group %s", cat[i].name, cat[i].group);
    assert_true(cat[i].unit[0] && cat[i].description[0]);
    assert_true(strcmp(cat[i].source, "cupti") == 0 ||
                strcmp(cat[i].source, "derived") == 0 ||
                strcmp(cat[i].source, "perf") == 0);
    if (strcmp(cat[i].source, "cupti") == 0) {
      assert_non_null(cat[i].ncu_name);
      assert_non_null(strstr(cat[i].ncu_name, "__"));
      quick += (cat[i].sets & KL_METRIC_SET_QUICK) != 0;
      standard += (cat[i].sets & KL_METRIC_SET_STANDARD) != 0;
      /* quick is a subset of standard */
      if (cat[i].sets & KL_METRIC_SET_QUICK)
        assert_true(cat[i].sets & KL_METRIC_SET_STANDARD);
    }
    for (size_t j = 0; j < i; j++) {
      if (strcmp(cat[i].name, cat[j].name) == 0)
        fail_msg("%s twice", cat[i].name);
      if (cat[i].ncu_name && cat[j].ncu_name &&
          strcmp(cat[i].ncu_name, cat[j].ncu_name) == 0)
        fail_msg("%s twice", cat[i].ncu_name);
    }
    assert_ptr_equal(kl_metric_find(cat[i].name), &cat[i]);
    if (cat[i].ncu_name)
      assert_ptr_equal(kl_metric_find(cat[i].ncu_name), &cat[i]);
  }
  assert_true(standard >= 50);
  assert_true(quick >= 10 && quick < standard);
  /* every warp-stall reason has its share */
  for (size_t i = 0; i < n; i++)
    if (strncmp(cat[i].name, "stall_", 6) == 0 &&
        strcmp(cat[i].source, "cupti") == 0) {
      char share[96];
      snprintf(share, sizeof(share), "%s_pct", cat[i].name);
      assert_non_null(kl_metric_find(share));
    }
  assert_null(kl_metric_find("no_such_metric"));
}

static void test_set_specs(void **state) {
  (void)state;
  char **names;
  size_t n, ncat, want = 0;
  const kl_metric_info *cat = kl_metric_catalog(&ncat);
  assert_int_equal(kl__profile_names(&names, &n, "standard"), 0);
  for (size_t i = 0; i < ncat; i++)
    want += strcmp(cat[i].source, "cupti") == 0 &&
            (cat[i].sets & KL_METRIC_SET_STANDARD);
  assert_int_equal(n, want); /* gpu__time_duration.sum is one of them */
  assert_string_equal(names[0], "gpu__time_duration.sum");
  kl__profile_names_free(names, n);
  /* catalog names become CUPTI names; raw names pass to the chip */
  assert_int_equal(
      kl__profile_names(&names, &n, " l2_hit_rate_pct,dram__bytes_read.sum "),
      0);
  assert_int_equal(n, 3);
  assert_string_equal(names[1], "lts__t_sector_hit_rate.pct");
  assert_string_equal(names[2], "dram__bytes_read.sum");
  kl__profile_names_free(names, n);
  assert_int_equal(kl__profile_names(&names, &n, "l2_hit_rate_pc"),
                   KL_EINVALID);
  assert_non_null(
      strstr(kl_error_last()->message, "did you mean 'l2_hit_rate_pct'"));
  assert_int_equal(kl__profile_names(&names, &n, "waves_per_sm"), KL_EINVALID);
  assert_non_null(strstr(kl_error_last()->message, "computed by kernlab"));
  assert_int_equal(kl__profile_names(&names, &n, "ipc,,dram__bytes.sum"),
                   KL_EINVALID);
}

/* The worker counts passes for GH100 offline, as it does on the device. */
static void test_passes_on_gh100(void **state) {
  (void)state;
  kl_worker *w;
  assert_int_equal(kl_worker_create(&w, NULL), 0);
  const char *sets[2] = {"quick", "standard"};
  size_t limits[2] = {3, 15};
  for (int s = 0; s < 2; s++) {
    char **names;
    size_t n, passes = 0;
    assert_int_equal(kl__profile_names(&names, &n, sets[s]), 0);
    int rc = kl__worker_metric_passes(&passes, w, "GH100", names, n);
    kl__profile_names_free(names, n);
    /* no CUPTI in this build, or a sanitizer build: ASan's runtime
     * refuses the RTLD_DEEPBIND dlopen CUPTI does of libnvperf_host */
    bool deepbind =
        rc == KL_ECRASHED && strstr(kl_error_last()->message, "RTLD_DEEPBIND");
    if (rc == KL_EUNSUPPORTED || deepbind) {
      print_message("CUPTI's host API cannot run here (%s): skipped\n",
                    kl_error_last()->text);
      kl_worker_free(w);
      skip();
    }
    if (rc) {
      kl_worker_free(w);
      fail_msg("%s", kl_error_last()->message);
    }
    print_message("%s: %zu metrics, %zu passes on GH100\n", sets[s], n, passes);
    assert_true(passes >= 1 && passes <= limits[s]);
  }
  char *bad[2] = {"gpu__time_duration.sum", "dram__byts_read.sum"};
  size_t passes;
  assert_int_equal(kl__worker_metric_passes(&passes, w, "GH100", bad, 2),
                   KL_EINVALID);
  assert_non_null(strstr(kl_error_last()->message, "'dram__byts_read.sum'"));
  assert_non_null(strstr(kl_error_last()->message, "dram__bytes_read"));
  kl_worker_free(w);
}

static void test_recorded_verdicts(void **state) {
  (void)state;
  kl_profile *va = load("vector_add.64M");
  assert_int_equal(kl_profile_bottleneck(va), KL_BOTTLENECK_MEMORY);
  assert_true(value(va, "dram_throughput_pct") > 60);
  assert_true(fabs(value(va, "sectors_per_load_request") - 4) < 0.5);
  /* 768 MB over ~248 us against the H200's ~4.8 TB/s */
  assert_true(value(va, "peak_bandwidth") > 4000 &&
              value(va, "peak_bandwidth") < 6000);
  assert_true(value(va, "roofline_pct") > 50 &&
              value(va, "roofline_pct") <= 100);
  assert_true(value(va, "achieved_bandwidth") > 2500);
  assert_true(value(va, "waves_per_sm") > 1);
  kl_profile_free(va);

  kl_profile *tn = load("transpose_f32.square4k");
  kl_profile *tt = load("transpose_f32.square4k.tiled");
  assert_true(value(tn, "sectors_per_store_request") > 16);
  assert_true(value(tt, "sectors_per_store_request") <= 4.5);
  assert_true(value(tt, "sectors_per_load_request") <= 4.5);
  assert_true(value(tt, "static_smem_per_block") > 0);
  assert_true(value(tt, "occupancy_limit_shared_mem") > 0);
  kl_profile_free(tn);
  kl_profile_free(tt);

  kl_profile *g = load("gemm_f32.s1024");
  assert_int_not_equal(kl_profile_bottleneck(g), KL_BOTTLENECK_MEMORY);
  assert_true(value(g, "arithmetic_intensity") > 10);
  assert_true(value(g, "theoretical_occupancy_pct") > 0 &&
              value(g, "theoretical_occupancy_pct") <= 100);
  /* the stall shares add up to the whole */
  size_t ncat;
  const kl_metric_info *cat = kl_metric_catalog(&ncat);
  double sum = 0;
  for (size_t i = 0; i < ncat; i++)
    if (strncmp(cat[i].name, "stall_", 6) == 0 && strstr(cat[i].name, "_pct"))
      sum += value(g, cat[i].name);
  assert_true(fabs(sum - 100) < 1e-6);
  kl_profile_free(g);
}

static void test_launch_bound_and_round_trip(void **state) {
  (void)state;
  kl_profile *p = load("softmax_f32.r16k_c1k");
  kl_buf b = KL_BUF_INIT, b2 = KL_BUF_INIT;
  assert_int_equal(kl_profile_json(&b, p, 0), 0);
  kl_profile *q;
  assert_int_equal(kl_profile_from_json(&q, b.ptr, "mem"), 0);
  assert_int_equal(kl_profile_bottleneck(q), kl_profile_bottleneck(p));
  assert_string_equal(kl_profile_verdict(q), kl_profile_verdict(p));
  assert_int_equal(kl_profile_json(&b2, q, 0), 0);
  assert_string_equal(b.ptr, b2.ptr);
  kl_profile_free(q);
  /* a profile recorded before setup_ms and first_pass_ms existed: null,
   * never a bare nan */
  assert_non_null(strstr(b.ptr, "\"setup_ms\":null"));
  assert_non_null(strstr(b.ptr, "\"first_pass_ms\":null"));
  assert_null(strstr(b.ptr, "nan"));
  /* --ncu-names keys: ncu's name where it has one */
  assert_int_equal(kl_profile_json(&b2, p, KL_PROFILE_NCU_NAMES), 0);
  assert_non_null(strstr(
      b2.ptr, "\"dram__throughput.avg.pct_of_peak_sustained_elapsed\":"));
  assert_non_null(strstr(b2.ptr, "\"kernlab_only\":{"));
  assert_null(strstr(b2.ptr, "\"dram_throughput_pct\""));
  /* the same counters for a 3 us kernel: launch-bound */
  char *t = strstr(b.ptr, "\"time_us\":");
  assert_non_null(t);
  char *end = strchr(t, ',');
  kl_buf c = KL_BUF_INIT;
  assert_int_equal(kl__buf_put(&c, b.ptr, (size_t)(t - b.ptr)), 0);
  assert_int_equal(kl__buf_printf(&c, "\"time_us\":3%s", end), 0);
  assert_int_equal(kl_profile_from_json(&q, c.ptr, "mem"), 0);
  assert_int_equal(kl_profile_bottleneck(q), KL_BOTTLENECK_LAUNCH);
  kl_profile_free(q);
  kl_buf_dispose(&b);
  kl_buf_dispose(&b2);
  kl_buf_dispose(&c);
  kl_profile_free(p);
}

/* A launch of two kernels (a launcher's): the worker's reply holds a range
 * per kernel with its name; the profile is the longest kernel's, and each
 * kernel is a part with its own time and verdict, kept through JSON. */
static void test_parts_of_a_launch(void **state) {
  (void)state;
  kl_profile *one = load("softmax_f32.r16k_c1k");
  kl_buf b = KL_BUF_INIT;
  assert_int_equal(kl_profile_json(&b, one, 0), 0);
  kl_profile_free(one);
  json_object *rec = json_tokener_parse(b.ptr), *raw;
  assert_non_null(rec);
  assert_true(json_object_object_get_ex(rec, "raw", &raw));
  /* the reply: the same counters twice, the second kernel 4x shorter */
  json_object *reply = json_object_new_object(),
              *names = json_object_new_array(),
              *ranges = json_object_new_array(), *r0 = json_object_new_array(),
              *r1 = json_object_new_array(), *rn = json_object_new_array();
  json_object_object_foreach(raw, key, val) {
    if (json_object_is_type(val, json_type_null)) continue;
    double v = json_object_get_double(val);
    json_object_array_add(names, json_object_new_string(key));
    json_object_array_add(r0, json_object_new_double(v));
    json_object_array_add(
        r1, json_object_new_double(
                strcmp(key, "gpu__time_duration.sum") == 0 ? v / 4 : v));
  }
  json_object_array_add(ranges, r0);
  json_object_array_add(ranges, r1);
  json_object_array_add(rn, json_object_new_string("stats_kernel"));
  json_object_array_add(rn, json_object_new_string("normalise_kernel"));
  json_object_object_add(reply, "backend", json_object_new_string("cuda"));
  json_object_object_add(reply, "chip", json_object_new_string("GH100"));
  json_object_object_add(reply, "metrics", names);
  json_object_object_add(reply, "ranges", ranges);
  json_object_object_add(reply, "range_names", rn);
  kl_profile_inputs in = {0};
  in.set = "standard";
  in.time_us = 300;
  kl_profile *p;
  assert_int_equal(kl__profile_from_reply(&p, reply, &in), 0);
  assert_int_equal(kl_profile_part_count(p), 2);
  assert_string_equal(kl_profile_name(kl_profile_part(p, 0)), "stats_kernel");
  assert_string_equal(kl_profile_name(kl_profile_part(p, 1)),
                      "normalise_kernel");
  double t0 = kl_profile_time_us(kl_profile_part(p, 0)),
         t1 = kl_profile_time_us(kl_profile_part(p, 1));
  assert_true(t0 > 0 && fabs(t1 * 4 - t0) < 1e-6 * t0);
  assert_null(kl_profile_name(p));
  assert_true(kl_profile_time_us(p) == 300);
  assert_non_null(kl_profile_verdict(kl_profile_part(p, 1)));
  /* through JSON and back */
  kl_buf j = KL_BUF_INIT, j2 = KL_BUF_INIT;
  assert_int_equal(kl_profile_json(&j, p, 0), 0);
  kl_profile *q;
  assert_int_equal(kl_profile_from_json(&q, j.ptr, "mem"), 0);
  assert_int_equal(kl_profile_part_count(q), 2);
  assert_string_equal(kl_profile_name(kl_profile_part(q, 1)),
                      "normalise_kernel");
  assert_int_equal(kl_profile_json(&j2, q, 0), 0);
  assert_string_equal(j.ptr, j2.ptr);
  /* one kernel: no parts */
  kl_profile *single = load("softmax_f32.r16k_c1k");
  assert_int_equal(kl_profile_part_count(single), 0);
  assert_null(kl_profile_part(single, 0));
  kl_profile_free(single);
  kl_profile_free(q);
  kl_profile_free(p);
  json_object_put(reply);
  json_object_put(rec);
  kl_buf_dispose(&b);
  kl_buf_dispose(&j);
  kl_buf_dispose(&j2);
}

static kl_bottleneck host(const char *events) {
  char json[512];
  snprintf(json, sizeof(json),
           "{\"set\":\"standard\",\"backend\":\"host\",\"time_us\":100,"
           "\"raw\":{%s}}",
           events);
  kl_profile *p;
  if (kl_profile_from_json(&p, json, "host"))
    fail_msg("%s", kl_error_last()->message);
  kl_bottleneck b = kl_profile_bottleneck(p);
  print_message("%s\n", kl_profile_verdict(p));
  kl_profile_free(p);
  return b;
}

static void test_host_verdicts(void **state) {
  (void)state;
  assert_int_equal(host("\"cycles\":1e6,\"instructions\":3e6,"
                        "\"cache_references\":1e4,\"cache_misses\":100"),
                   KL_BOTTLENECK_COMPUTE);
  assert_int_equal(host("\"cycles\":1e6,\"instructions\":5e5,"
                        "\"cache_references\":4e4,\"cache_misses\":2e4"),
                   KL_BOTTLENECK_MEMORY);
  assert_int_equal(host("\"cycles\":1e6,\"instructions\":8e5,"
                        "\"cache_references\":1e3,\"cache_misses\":10,"
                        "\"branches\":1e5,\"branch_misses\":2e4"),
                   KL_BOTTLENECK_LATENCY);
  assert_int_equal(host(""), KL_BOTTLENECK_UNKNOWN);
}

/* A latency-bound kernel whose launch attributes are unknown (a Triton
 * kernel in a python case's profile): no theoretical occupancy, no waves,
 * no stalls; the verdict says what it knows, never "nan". */
static void test_latency_verdict_without_launch(void **state) {
  (void)state;
  kl_profile *p;
  const char *json =
      "{\"set\":\"standard\",\"backend\":\"cuda\",\"time_us\":50,"
      "\"raw\":{\"gpu__time_duration.sum\":50000,"
      "\"dram__throughput.avg.pct_of_peak_sustained_elapsed\":20,"
      "\"lts__throughput.avg.pct_of_peak_sustained_elapsed\":15,"
      "\"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed\":"
      "20,\"sm__throughput.avg.pct_of_peak_sustained_elapsed\":18,"
      "\"smsp__issue_active.avg.pct_of_peak_sustained_active\":18,"
      "\"l1tex__throughput.avg.pct_of_peak_sustained_active\":10,"
      "\"sm__warps_active.avg.pct_of_peak_sustained_active\":28.1}}";
  if (kl_profile_from_json(&p, json, "triton"))
    fail_msg("%s", kl_error_last()->message);
  const char *v = kl_profile_verdict(p);
  print_message("%s\n", v);
  assert_int_equal(kl_profile_bottleneck(p), KL_BOTTLENECK_LATENCY);
  assert_non_null(strstr(v, "achieved occupancy 28.1%"));
  assert_null(strstr(v, "nan"));
  assert_null(strstr(v, "theoretical"));
  kl_profile_free(p);
}

static void test_bad_profiles(void **state) {
  (void)state;
  kl_profile *p = NULL;
  assert_int_equal(kl_profile_from_json(&p, "{\"set\":\n  [1,", "x.json"),
                   KL_EINVALID);
  assert_null(p);
  const kl_error *e = kl_error_last();
  assert_non_null(strstr(e->message, "x.json:2:"));
  assert_int_equal(kl_profile_from_json(&p, "{\"set\":\"quick\"}", "y.json"),
                   KL_EINVALID);
  assert_non_null(strstr(kl_error_last()->message, "y.json:1:1: "));
  assert_int_equal(kl_profile_from_json(&p, "[]", "z.json"), KL_EINVALID);
}

/* Every allocation of a load failing in turn: an error, never a crash. */
static void test_out_of_memory(void **state) {
  (void)state;
  char *text = kl_test_slurp(FIX "gemm_f32.s1024.json");
  assert_non_null(text);
  int failures = 0;
  for (long k = 1; k < 100000; k++) {
    kl__alloc_fail_after(k);
    kl_profile *p = NULL;
    int rc = kl_profile_from_json(&p, text, "gemm");
    kl__alloc_fail_after(0);
    if (rc == 0) {
      kl_profile_free(p);
      break;
    }
    assert_int_equal(rc, KL_ENOMEM);
    assert_null(p);
    failures++;
  }
  print_message("%d allocations failed in turn\n", failures);
  assert_true(failures >= 5);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_catalog_is_consistent),
      cmocka_unit_test(test_set_specs),
      cmocka_unit_test(test_passes_on_gh100),
      cmocka_unit_test(test_recorded_verdicts),
      cmocka_unit_test(test_launch_bound_and_round_trip),
      cmocka_unit_test(test_parts_of_a_launch),
      cmocka_unit_test(test_host_verdicts),
      cmocka_unit_test(test_latency_verdict_without_launch),
      cmocka_unit_test(test_bad_profiles),
      cmocka_unit_test(test_out_of_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
