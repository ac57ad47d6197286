/* The CUPTI timer's calibration of a device, from the parent's side.
 *
 * CUPTI's KERNEL records read every kernel a fixed part longer than it
 * ran (about 1.1 us on an H200: the front end's timestamps around the
 * launch; kl-worker/op_calibrate.c). The worker removes it from every
 * sample when a time request brings the true duration of the timer's own
 * probe kernel on that device: it then times the probe on its records in
 * the same request, and the difference is the fixed part. The true
 * duration is measured once per device and driver, by the range
 * profiler's gpu__time_duration (ncu's metric) in a fresh kl-worker that
 * loads no plugin (so no candidate's code can touch it), and kept here,
 * in the cache folder, one file per device (this file owns the format):
 *
 *   calibration/GPU-<uuid>.json
 *   {"kernlab_calibration":1,"uuid":"GPU-...","driver":13000,
 *    "probe_true_us":1.28,"values_us":[...],"chip":"GH100",
 *    "measured_at":"2026-11-29T09:30:00Z"}
 *
 * Where the device could not be calibrated (counters for admins only,
 * MIG, vGPU, a CUPTI that cannot profile) the file says why in "error"
 * instead of "probe_true_us", and later commands do not try again for a
 * day ("measured_at_s"): an administrator may open the counters, or the
 * environment be mended, without a new driver. Another driver version
 * measures again, and so does removing the file or anything in it that is
 * not what this writes. A failure that may pass (the worker did not
 * start, the counters were busy) is not kept. KERNLAB_CALIBRATE=0 leaves
 * the samples as the records read. */
#define _GNU_SOURCE
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/internal.h"
#include "../core/json.h"
#include "kernlab/worker.h"
#include "worker_impl.h"

#define FORMAT 1
/* what a probe kernel of one thread can take, and a fixed part can be */
#define TRUE_US_MIN 0.05
#define TRUE_US_MAX 50.0
/* the calibrate request: its launches, and the time it may take */
#define LAUNCHES 9
#define TIMEOUT_MS 60000
/* how long "cannot be calibrated" holds */
#define FAILURE_KEPT_S (24 * 3600)

static bool plausible(double us) {
  return us >= TRUE_US_MIN && us <= TRUE_US_MAX;
}

/* A UUID as a file name: the driver's own characters only. */
static bool safe_uuid(const char *uuid) {
  if (!uuid[0] || strlen(uuid) > 64) return false;
  for (const char *p = uuid; *p; p++)
    if (!(*p == '-' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
          (*p >= 'A' && *p <= 'Z')))
      return false;
  return true;
}

/* The cache file's path for the device, or NULL. */
static char *cache_path(const char *uuid) {
  kl_buf dir = KL_BUF_INIT;
  char *path = NULL;
  if (kl__cache_dir_default(&dir) == 0 &&
      kl__buf_puts(&dir, "/calibration") == 0) {
    kl_buf name = KL_BUF_INIT;
    if (kl__buf_printf(&name, "%s.json", uuid) == 0)
      path = kl__path_join(dir.ptr, name.ptr);
    kl_buf_dispose(&name);
  }
  kl_buf_dispose(&dir);
  return path;
}

/* Whether o's key is a JSON integer equal to want. */
static bool int_is(json_object *o, const char *key, int want) {
  json_object *v = kl__json_get(o, key);
  return v && json_object_is_type(v, json_type_int) &&
         json_object_get_int(v) == want;
}

int kl__calibration_lookup(double *true_us, const char *uuid, int driver) {
  *true_us = 0;
  char *path = safe_uuid(uuid) ? cache_path(uuid) : NULL;
  json_object *o = NULL;
  if (!path || kl__json_read_file(&o, path, "a calibration") < 0) {
    kl_error_clear();
    kl__free(path);
    return 0;
  }
  kl__free(path);
  const char *u = kl__json_text(o, "uuid");
  json_object *at = kl__json_get(o, "measured_at_s");
  double us;
  int found = 0;
  if (int_is(o, "kernlab_calibration", FORMAT) && u && strcmp(u, uuid) == 0 &&
      int_is(o, "driver", driver)) {
    if (kl__json_number(o, "probe_true_us", &us) && plausible(us)) {
      *true_us = us;
      found = 1;
    } else if (!kl__json_get(o, "probe_true_us") && kl__json_text(o, "error") &&
               at && json_object_is_type(at, json_type_int)) {
      int64_t age = (int64_t)time(NULL) - json_object_get_int64(at);
      found = age >= -60 && age < FAILURE_KEPT_S;
    }
  }
  json_object_put(o);
  return found;
}

/* Measure in a fresh kl-worker on the device: 0 with the reply; 1 where
 * the device cannot be calibrated (the profiler's "permission" or
 * "unavailable": kept, so that no later command tries again); -1 for a
 * failure that may pass (not kept). *why says what failed. */
static int measure(json_object **reply, char *why, size_t n, const char *uuid) {
  kl_worker *cw = NULL;
  *reply = NULL;
  int rc = kl__worker_create_on(&cw, uuid, TIMEOUT_MS);
  if (rc == 0) {
    json_object *req = json_object_new_object();
    json_object_object_add(req, "op", json_object_new_string("calibrate"));
    json_object_object_add(req, "launches", json_object_new_int(LAUNCHES));
    rc = kl__wk_roundtrip(reply, cw, req);
    json_object_put(req);
  }
  kl_worker_free(cw);
  if (rc < 0) {
    snprintf(why, n, "%s", kl_error_last()->message);
    kl_error_clear();
    return -1;
  }
  json_object *v;
  if (json_object_object_get_ex(*reply, "ok", &v) && json_object_get_boolean(v))
    return 0;
  const char *code = json_object_object_get_ex(*reply, "code", &v)
                         ? json_object_get_string(v)
                         : "";
  snprintf(why, n, "%s",
           json_object_object_get_ex(*reply, "error", &v)
               ? json_object_get_string(v)
               : "calibrate: no reason given");
  json_object_put(*reply);
  *reply = NULL;
  return strcmp(code, "permission") == 0 || strcmp(code, "unavailable") == 0
             ? 1
             : -1;
}

int kl__calibration_store(const char *uuid, int driver, json_object *measured,
                          const char *error) {
  if (!safe_uuid(uuid))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "calibration: '%s' is not a device UUID", uuid);
  json_object *v;
  if (!error &&
      !(measured && json_object_object_get_ex(measured, "probe_true_us", &v) &&
        plausible(json_object_get_double(v))))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "calibration: no plausible probe_true_us to keep");
  char *path = cache_path(uuid);
  if (!path) return kl__error_oom();
  json_object *o = json_object_new_object();
  json_object_object_add(o, "kernlab_calibration", json_object_new_int(FORMAT));
  json_object_object_add(o, "uuid", json_object_new_string(uuid));
  json_object_object_add(o, "driver", json_object_new_int(driver));
  if (!error) {
    static const char *const keys[] = {"probe_true_us", "values_us", "chip"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
      if (json_object_object_get_ex(measured, keys[i], &v))
        json_object_object_add(o, keys[i], json_object_get(v));
  } else {
    json_object_object_add(o, "error", json_object_new_string(error));
  }
  char when[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
  json_object_object_add(o, "measured_at", json_object_new_string(when));
  json_object_object_add(o, "measured_at_s",
                         json_object_new_int64((int64_t)now));
  const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
  char *dir = kl__path_dir(path);
  int rc = !dir ? kl__error_oom() : kl__mkdir_p(dir);
  if (rc == 0) rc = kl__write_file_atomic(path, text, strlen(text));
  kl__free(dir);
  kl__free(path);
  json_object_put(o);
  return rc;
}

void kl__worker_calibrate(kl_worker *w, const char *uuid, int driver) {
  w->calibrated = true;
  w->probe_true_us = 0;
  const char *env = getenv("KERNLAB_CALIBRATE");
  if ((env && strcmp(env, "0") == 0) || !safe_uuid(uuid)) return;
  double true_us = 0;
  if (!kl__calibration_lookup(&true_us, uuid, driver)) {
    json_object *reply = NULL, *v;
    char why[512] = "";
    int got = measure(&reply, why, sizeof(why), uuid);
    if (got == 0 && json_object_object_get_ex(reply, "probe_true_us", &v) &&
        plausible(json_object_get_double(v)))
      true_us = json_object_get_double(v);
    /* a cache that cannot be written costs the next command a measurement */
    if ((true_us > 0 && kl__calibration_store(uuid, driver, reply, NULL) < 0) ||
        (got == 1 && kl__calibration_store(uuid, driver, NULL, why) < 0))
      kl_error_clear();
    json_object_put(reply);
  }
  w->probe_true_us = true_us;
}
