/* libkernlab/worker/calibration.c: the timer's calibration is kept per
 * device and driver in the cache folder, read back only as it was written
 * (another device, another driver, a hand-edited or implausible file:
 * none), a device that cannot be calibrated is remembered as such, and a
 * UUID never names a file outside the folder. Then through a real worker
 * handle: a kept calibration is used as it is, KERNLAB_CALIBRATE=0 uses
 * none, and a measurement that fails (no GPU here) leaves the samples
 * uncalibrated and keeps nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/internal.h"
#include "worker/worker_impl.h"

static char dir[] = "/tmp/kl-calibration-XXXXXX";

static int setup(void **state) {
  (void)state;
  if (!mkdtemp(dir)) return -1;
  setenv("KERNLAB_CACHE_DIR", dir, 1);
  unsetenv("KERNLAB_CALIBRATE");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static const char *uuid = "GPU-0a1b2c3d-0000-1111-2222-333344445555";

static json_object *measured(double true_us) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "probe_true_us", json_object_new_double(true_us));
  json_object_object_add(o, "chip", json_object_new_string("GH100"));
  return o;
}

static void write_cache(const char *text) {
  char path[256];
  snprintf(path, sizeof(path), "%s/calibration/%s.json", dir, uuid);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_calibration__kept_per_device_and_driver(void **state) {
  (void)state;
  double us = -1;
  assert_int_equal(kl__calibration_lookup(&us, uuid, 13000), 0);
  json_object *m = measured(1.28);
  assert_int_equal(kl__calibration_store(uuid, 13000, m, NULL), 0);
  json_object_put(m);
  assert_int_equal(kl__calibration_lookup(&us, uuid, 13000), 1);
  assert_true(us == 1.28);
  /* another driver, another device: measured again */
  assert_int_equal(kl__calibration_lookup(&us, uuid, 13010), 0);
  assert_int_equal(kl__calibration_lookup(
                       &us, "GPU-ffffffff-0000-1111-2222-333344445555", 13000),
                   0);
}

static void test_calibration__what_it_did_not_write_is_none(void **state) {
  (void)state;
  double us = -1;
  json_object *m = measured(1.28);
  assert_int_equal(kl__calibration_store(uuid, 13000, m, NULL), 0);
  json_object_put(m);
  static const char *const bad[] = {
      "",
      "not json",
      "[]",
      "{\"kernlab_calibration\":2,\"uuid\":\"GPU-0a1b2c3d-0000-1111-2222-"
      "333344445555\",\"driver\":13000,\"probe_true_us\":1.3}",
      "{\"kernlab_calibration\":1,\"uuid\":\"GPU-0a1b2c3d-0000-1111-2222-"
      "333344445555\",\"driver\":\"13000\",\"probe_true_us\":1.3}",
      /* out of what a one-thread kernel can take */
      "{\"kernlab_calibration\":1,\"uuid\":\"GPU-0a1b2c3d-0000-1111-2222-"
      "333344445555\",\"driver\":13000,\"probe_true_us\":1e9}",
      "{\"kernlab_calibration\":1,\"uuid\":\"GPU-0a1b2c3d-0000-1111-2222-"
      "333344445555\",\"driver\":13000,\"probe_true_us\":-1}",
      "{\"kernlab_calibration\":1,\"uuid\":\"GPU-0a1b2c3d-0000-1111-2222-"
      "333344445555\",\"driver\":13000,\"probe_true_us\":\"1.3\"}",
      /* both a value and an error: not what the store writes */
      "{\"kernlab_calibration\":1,\"uuid\":\"GPU-0a1b2c3d-0000-1111-2222-"
      "333344445555\",\"driver\":13000,\"probe_true_us\":1e9,\"error\":\"x\"}",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    write_cache(bad[i]);
    us = -1;
    if (kl__calibration_lookup(&us, uuid, 13000) != 0)
      fail_msg("read back: %s", bad[i]);
    assert_true(us == 0);
  }
}

static void test_calibration__a_device_that_cannot_is_remembered(void **state) {
  (void)state;
  double us = -1;
  assert_int_equal(kl__calibration_store(uuid, 13000, NULL,
                                         "calibrate: the range profiler: "
                                         "ERR_NVGPUCTRPERM"),
                   0);
  assert_int_equal(kl__calibration_lookup(&us, uuid, 13000), 1);
  assert_true(us == 0);
  /* for a day: the counters may be opened without a new driver */
  char text[512];
  snprintf(text, sizeof(text),
           "{\"kernlab_calibration\":1,\"uuid\":\"%s\",\"driver\":13000,"
           "\"error\":\"ERR_NVGPUCTRPERM\",\"measured_at_s\":%lld}",
           uuid, (long long)time(NULL) - 25 * 3600);
  write_cache(text);
  assert_int_equal(kl__calibration_lookup(&us, uuid, 13000), 0);
  snprintf(text, sizeof(text),
           "{\"kernlab_calibration\":1,\"uuid\":\"%s\",\"driver\":13000,"
           "\"error\":\"ERR_NVGPUCTRPERM\",\"measured_at_s\":%lld}",
           uuid, (long long)time(NULL) - 3600);
  write_cache(text);
  assert_int_equal(kl__calibration_lookup(&us, uuid, 13000), 1);
  /* and nothing implausible is kept */
  json_object *m = measured(500.0);
  assert_int_equal(kl__calibration_store(uuid, 13000, m, NULL), KL_EINVALID);
  json_object_put(m);
  kl_error_clear();
}

static void test_calibration__a_uuid_names_no_other_file(void **state) {
  (void)state;
  double us = -1;
  json_object *m = measured(1.28);
  assert_int_equal(kl__calibration_store("../../etc/x", 13000, m, NULL),
                   KL_EINVALID);
  kl_error_clear();
  assert_int_equal(kl__calibration_store("", 13000, m, NULL), KL_EINVALID);
  kl_error_clear();
  json_object_put(m);
  assert_int_equal(kl__calibration_lookup(&us, "../../etc/x", 13000), 0);
  /* where the traversal would have written: the cache's calibration
   * folder, two up, etc/x.json */
  char escaped[256];
  snprintf(escaped, sizeof(escaped), "%s/calibration/../../etc/x.json", dir);
  assert_int_equal(access(escaped, F_OK), -1);
}

static void test_calibration__through_a_worker(void **state) {
  (void)state;
  kl_worker *w = NULL;
  assert_int_equal(kl_worker_create(&w, NULL), 0);
  json_object *m = measured(1.31);
  assert_int_equal(kl__calibration_store(uuid, 13000, m, NULL), 0);
  json_object_put(m);
  kl__worker_calibrate(w, uuid, 13000);
  assert_true(w->calibrated && w->probe_true_us == 1.31);
  setenv("KERNLAB_CALIBRATE", "0", 1);
  kl__worker_calibrate(w, uuid, 13000);
  assert_true(w->calibrated && w->probe_true_us == 0);
  unsetenv("KERNLAB_CALIBRATE");
  /* not kept for this driver: a fresh kl-worker on the device this UUID
   * names measures, which fails (there is no such device, GPU or not);
   * a failure that may pass keeps nothing, and the samples go
   * uncalibrated */
  kl__worker_calibrate(w, uuid, 13020);
  assert_true(w->calibrated && w->probe_true_us == 0);
  double us = -1;
  assert_int_equal(kl__calibration_lookup(&us, uuid, 13020), 0);
  kl_error_clear();
  kl_worker_free(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_calibration__kept_per_device_and_driver),
      cmocka_unit_test(test_calibration__what_it_did_not_write_is_none),
      cmocka_unit_test(test_calibration__a_device_that_cannot_is_remembered),
      cmocka_unit_test(test_calibration__a_uuid_names_no_other_file),
      cmocka_unit_test(test_calibration__through_a_worker),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
