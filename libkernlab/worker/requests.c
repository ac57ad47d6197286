/* The worker's requests, from the parent's side: each one built as JSON
 * (check, time, device, notes, release, the pool and the kept oracle's
 * fields) and its reply mapped into the public result structs
 * (kl_check_result, kl_samples, kl_device_info; kernlab/worker.h), their
 * sizes the caller's (kl__result_give). The process and the channel are
 * client.c's (worker_impl.h). */
#define _GNU_SOURCE
#include <stddef.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "worker_impl.h"
#include "../core/internal.h"
#include "kernlab/worker.h"
#include "kernlab/time_request.h"

static int64_t obj_int(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

static double obj_double(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : 0;
}

const char *kl_trivial_name(int which) {
  static const char *const names[] = {"zeros", "mean", "rolled", "transposed"};
  return which >= 0 && which < 4 ? names[which] : NULL;
}

/* A seed's "scale" object (the worker's op_check.c) into *out. */
static void scale_from(kl_check_result *out, json_object *s) {
  json_object *v, *rel, *bad;
  out->scaled = 1;
  if (json_object_object_get_ex(s, "param", &v))
    snprintf(out->scale_param, sizeof(out->scale_param), "%s",
             json_object_get_string(v));
  out->rel_l2 = obj_double(s, "rel_l2");
  out->scale_elements = (uint64_t)obj_int(s, "elements");
  out->ref_rms = obj_double(s, "ref_rms");
  out->max_ulp = obj_double(s, "max_ulp");
  bool has_rel = json_object_object_get_ex(s, "trivial", &rel),
       has_bad = json_object_object_get_ex(s, "trivial_rejected", &bad);
  for (int k = 0; k < 4; k++) {
    out->trivial_rel[k] =
        has_rel && json_object_object_get_ex(rel, kl_trivial_name(k), &v)
            ? json_object_get_double(v)
            : -1;
    out->trivial_rejected[k] =
        has_bad ? (uint64_t)obj_int(bad, kl_trivial_name(k)) : 0;
  }
}

int kl_worker_check(kl_check_result *results, kl_worker *w, int plugin,
                    int oracle, int shape, const uint64_t *seeds,
                    size_t nseeds) {
  int rc = kl__wk_ensure_running(w);
  if (rc < 0) return rc;
  json_object *req = json_object_new_object(), *reply = NULL, *arr;
  json_object_object_add(req, "op", json_object_new_string("check"));
  json_object_object_add(req, "plugin", json_object_new_int(plugin));
  json_object_object_add(req, "oracle", json_object_new_int(oracle));
  json_object_object_add(req, "shape", json_object_new_int(shape));
  json_object *jseeds = json_object_new_array();
  for (size_t i = 0; i < nseeds; i++)
    json_object_array_add(jseeds, json_object_new_int64((int64_t)seeds[i]));
  json_object_object_add(req, "seeds", jseeds);
  if (w->pool) json_object_object_add(req, "pool", json_object_new_int(1));
  if (w->keep_oracle >= 0)
    json_object_object_add(req, "keep_oracle",
                           json_object_new_int(w->keep_oracle));
  rc = kl__wk_roundtrip(&reply, w, req);
  json_object_put(req);
  if (rc < 0) return rc;
  if ((rc = kl__wk_request_ok(reply, "check")) == 0 &&
      (!json_object_object_get_ex(reply, "results", &arr) ||
       json_object_array_length(arr) != nseeds))
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE, "worker: check: short reply");
  /* the caller's entries are results[0].size apart (its sizeof) */
  size_t stride = nseeds ? results[0].size : 0;
  for (size_t i = 0; rc == 0 && i < nseeds; i++) {
    json_object *r = json_object_array_get_idx(arr, i), *v;
    kl_check_result full = KL_CHECK_RESULT_INIT, *out = &full;
    out->seed = (uint64_t)obj_int(r, "seed");
    out->correct = json_object_object_get_ex(r, "correct", &v) &&
                   json_object_get_boolean(v);
    out->mismatches = (uint64_t)obj_int(r, "mismatches");
    out->unwritten = (uint64_t)obj_int(r, "unwritten");
    out->nonfinite = (uint64_t)obj_int(r, "nonfinite");
    out->inputs_written = (uint64_t)obj_int(r, "inputs_written");
    out->max_abs_err = obj_double(r, "max_abs_err");
    out->late_bytes = (uint64_t)obj_int(r, "late_bytes");
    out->busy_threads = (int)obj_int(r, "busy_threads");
    out->settle_ms = obj_double(r, "settle_ms");
    out->oracle_ms = obj_double(r, "oracle_ms");
    out->oracle_kept = json_object_object_get_ex(r, "oracle_kept", &v) &&
                       json_object_get_boolean(v);
    if (json_object_object_get_ex(r, "detail", &v))
      snprintf(out->detail, sizeof(out->detail), "%s",
               json_object_get_string(v));
    if (json_object_object_get_ex(r, "scale", &v)) scale_from(out, v);
    kl_check_result *to = (kl_check_result *)((char *)results + i * stride);
    rc = kl__result_give(to, &full, sizeof(full),
                         offsetof(kl_check_result, scaled), "kl_check_result");
  }
  json_object_put(reply);
  return rc;
}

/* A time reply's samples, SM clocks and verification into *out (which
 * the caller disposes on failure). */
static int samples_from(kl_samples *out, json_object *reply, size_t nplugins,
                        size_t block) {
  json_object *all, *clocks, *ver, *v, *c, *code, *gate;
  if (json_object_object_get_ex(reply, "code", &code) &&
      strcmp(json_object_get_string(code), "cheat") == 0 &&
      json_object_object_get_ex(reply, "gate", &gate)) {
    /* the timed code's doing: a verdict for the caller, not a failure */
    snprintf(out->gate, sizeof(out->gate), "%s", json_object_get_string(gate));
    json_object *who;
    out->culprit = json_object_object_get_ex(reply, "culprit", &who)
                       ? json_object_get_int(who)
                       : (int)nplugins - 1;
    int rc = kl__wk_reply_failed(reply, "time", KL_EREJECTED);
    return rc ? rc : KL_EREJECTED;
  }
  int rc = kl__wk_request_ok(reply, "time");
  if (rc < 0) return rc;
  if (!json_object_object_get_ex(reply, "samples", &all) ||
      json_object_array_length(all) != nplugins)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "worker: time: short reply");
  for (size_t k = 0; k < nplugins; k++) {
    json_object *arr = json_object_array_get_idx(all, k);
    size_t n = json_object_array_length(arr);
    out->n = n;
    if (!(out->us[k] = kl__malloc((n ? n : 1) * sizeof(double))))
      return kl__error_oom();
    for (size_t i = 0; i < n; i++)
      out->us[k][i] = json_object_get_double(json_object_array_get_idx(arr, i));
  }
  if (json_object_object_get_ex(reply, "sm_clock_mhz", &clocks) &&
      json_object_array_length(clocks) == nplugins) {
    for (size_t k = 0; k < nplugins; k++) {
      json_object *arr = json_object_array_get_idx(clocks, k);
      if (!(out->mhz[k] = kl__calloc(out->n ? out->n : 1, sizeof(double))))
        return kl__error_oom();
      for (size_t i = 0; i < out->n && i < json_object_array_length(arr); i++)
        out->mhz[k][i] =
            json_object_get_double(json_object_array_get_idx(arr, i));
    }
  }
  snprintf(out->timer, sizeof(out->timer), "%s",
           out->mhz[0] ? "cupti" : "clock_gettime");
  snprintf(out->launch, sizeof(out->launch), "%s",
           json_object_object_get_ex(reply, "launch", &v)
               ? json_object_get_string(v)
               : "stream");
  if (json_object_object_get_ex(reply, "tracing", &v))
    snprintf(out->tracing, sizeof(out->tracing), "%s",
             kl__tracing_name(json_object_get_string(v)));
  out->varied = json_object_object_get_ex(reply, "varied", &v) &&
                json_object_get_boolean(v);
  if (json_object_object_get_ex(reply, "calibration", &c)) {
    out->calibration_us = obj_double(c, "offset_us");
    out->probe_records_us = obj_double(c, "probe_records_us");
    out->probe_true_us = obj_double(c, "probe_true_us");
  }
  out->nplugins = nplugins;
  if (json_object_object_get_ex(reply, "stop_reason", &v))
    snprintf(out->stop_reason, sizeof(out->stop_reason), "%s",
             json_object_get_string(v));
  out->wall_ms = obj_double(reply, "wall_ms");
  out->flush_bytes = obj_double(reply, "flush_bytes");
  out->flush_us = obj_double(reply, "flush_us");
  /* the worker may use smaller blocks to fit six in the budget */
  int64_t used = obj_int(reply, "block_rounds");
  out->block_rounds = used > 0 ? (size_t)used : block;
  out->placements = (size_t)obj_int(reply, "placements");
  json_object *part;
  if (json_object_object_get_ex(reply, "costs", &c)) {
    kl_time_costs *k = &out->costs;
    k->setup_ms = obj_double(c, "setup_ms");
    k->warmup_ms = obj_double(c, "warmup_ms");
    k->place_ms = obj_double(c, "place_ms");
    k->queue_ms = obj_double(c, "queue_ms");
    k->wait_ms = obj_double(c, "wait_ms");
    k->collect_ms = obj_double(c, "collect_ms");
    k->verify_ms = obj_double(c, "verify_ms");
  }
  if (json_object_object_get_ex(reply, "device_timeline", &c)) {
    kl_time_costs *k = &out->costs;
    k->dev_span_us = obj_double(c, "span_us");
    k->dev_timed_us = obj_double(c, "timed_us");
    k->dev_windows = (size_t)obj_int(c, "windows");
    if (json_object_object_get_ex(c, "busy_us", &part)) {
      k->dev_restore_us = obj_double(part, "restore");
      k->dev_flush_us = obj_double(part, "flush");
      k->dev_probe_us = obj_double(part, "probe");
    }
    if (json_object_object_get_ex(c, "idle_before_us", &part)) {
      k->dev_idle_before_restore_us = obj_double(part, "restore");
      k->dev_idle_before_flush_us = obj_double(part, "flush");
      k->dev_idle_before_probe_us = obj_double(part, "probe");
      k->dev_idle_before_work_us = obj_double(part, "work");
    }
  }
  if (json_object_object_get_ex(reply, "verify", &ver) &&
      json_object_array_length(ver) == nplugins) {
    out->verified = 1;
    for (size_t k = 0; k < nplugins; k++) {
      json_object *e = json_object_array_get_idx(ver, k);
      out->stale[k] = (uint64_t)obj_int(e, "mismatches");
      if (json_object_object_get_ex(e, "detail", &v))
        snprintf(out->stale_detail[k], sizeof(out->stale_detail[k]), "%s",
                 json_object_get_string(v));
    }
  }
  return 0;
}

/* A time reply that asks for the device's calibration first. */
static bool wants_calibration(json_object *reply) {
  json_object *ok, *code;
  return json_object_object_get_ex(reply, "ok", &ok) &&
         !json_object_get_boolean(ok) &&
         json_object_object_get_ex(reply, "code", &code) &&
         strcmp(json_object_get_string(code), "calibrate") == 0;
}

int kl_worker_time(kl_samples *into, kl_worker *w, const int *plugins,
                   size_t nplugins, int shape, const kl_time_options *given) {
  return kl_worker_time_launch(into, w, plugins, nplugins, shape, given,
                               KL_LAUNCH_STREAM);
}

const char *kl__tracing_name(const char *name) {
  static const char *const known[] = {"kernel", "concurrent", "serialised"};
  for (size_t i = 0; name && i < sizeof(known) / sizeof(known[0]); i++)
    if (strcmp(name, known[i]) == 0) return known[i];
  return "";
}

int kl_worker_time_launch(kl_samples *into, kl_worker *w, const int *plugins,
                          size_t nplugins, int shape,
                          const kl_time_options *given, int launch) {
  /* filled whole here, given to the caller's struct at the end (every
   * pointer it owns lies within the first version's size) */
  kl_samples got = KL_SAMPLES_INIT, *out = &got;
  const size_t oldest = offsetof(kl_samples, gate); /* the first release */
  if (into->size < oldest)
    return kl__result_give(into, &got, sizeof(got), oldest, "kl_samples");
  kl_time_options full;
  int rc = kl__time_options_take(&full, given);
  if (rc < 0) return rc;
  const kl_time_options *opts = &full;
  if (nplugins < 1 || nplugins > 2)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "time one or two plugins, not %zu", nplugins);
  if (launch != KL_LAUNCH_STREAM && launch != KL_LAUNCH_GRAPH)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "time: launch %d is neither KL_LAUNCH_STREAM nor "
                     "KL_LAUNCH_GRAPH",
                     launch);
  rc = kl__wk_ensure_running(w);
  if (rc < 0) return rc;
  json_object *req = json_object_new_object(), *reply = NULL;
  json_object_object_add(req, "op", json_object_new_string("time"));
  json_object *ids = json_object_new_array();
  for (size_t k = 0; k < nplugins; k++)
    json_object_array_add(ids, json_object_new_int(plugins[k]));
  json_object_object_add(req, "plugins", ids);
  json_object_object_add(req, "shape", json_object_new_int(shape));
  /* the fields' names and the worker's defaults: kernlab/time_request.h */
  json_object_object_add(req, KL_TIME_KEY_COLD,
                         json_object_new_int(opts->cold));
  json_object_object_add(req, KL_TIME_KEY_WARMUP,
                         json_object_new_int(opts->warmup));
  json_object_object_add(req, KL_TIME_KEY_MIN_SAMPLES,
                         json_object_new_int64((int64_t)opts->min_samples));
  json_object_object_add(req, KL_TIME_KEY_MAX_SAMPLES,
                         json_object_new_int64((int64_t)opts->max_samples));
  json_object_object_add(req, KL_TIME_KEY_TARGET_REL_CI,
                         json_object_new_double(opts->target_rel_ci));
  json_object_object_add(req, KL_TIME_KEY_TIME_CAP_MS,
                         json_object_new_int(opts->time_cap_ms));
  json_object_object_add(req, KL_TIME_KEY_SEED,
                         json_object_new_int64((int64_t)opts->seed));
  size_t block =
      opts->block_rounds ? opts->block_rounds : KL_TIME_DEFAULT_BLOCK_ROUNDS;
  json_object_object_add(req, KL_TIME_KEY_BLOCK_ROUNDS,
                         json_object_new_int64((int64_t)block));
  json_object_object_add(req, KL_TIME_KEY_DECIDE_GAIN_PCT,
                         json_object_new_double(opts->decide_gain_pct));
  if (opts->verify) {
    json_object_object_add(req, KL_TIME_KEY_VERIFY, json_object_new_int(1));
    json_object_object_add(req, KL_TIME_KEY_ORACLE,
                           json_object_new_int(opts->oracle));
  }
  if (launch == KL_LAUNCH_GRAPH)
    json_object_object_add(req, "launch", json_object_new_string("graph"));
  if (w->pool) json_object_object_add(req, "pool", json_object_new_int(1));
  if (w->calibrated)
    json_object_object_add(req, KL_TIME_KEY_PROBE_TRUE_US,
                           json_object_new_double(w->probe_true_us));
  kl__load before, after;
  kl__load_mark(&before, kl__worker_pid(w));
  rc = kl__wk_roundtrip(&reply, w, req);
  if (rc == 0 && !w->calibrated && wants_calibration(reply)) {
    /* the CUPTI timer's first request on this handle: the device's
     * calibration (calibration.c), then the request again with it */
    json_object *v;
    const char *uuid = json_object_object_get_ex(reply, "uuid", &v)
                           ? json_object_get_string(v)
                           : "";
    kl__worker_calibrate(w, uuid, (int)obj_int(reply, "driver"));
    json_object_put(reply);
    reply = NULL;
    json_object_object_add(req, KL_TIME_KEY_PROBE_TRUE_US,
                           json_object_new_double(w->probe_true_us));
    kl__load_mark(&before, kl__worker_pid(w));
    rc = kl__wk_roundtrip(&reply, w, req);
  }
  kl__load_mark(&after, kl__worker_pid(w));
  json_object_put(req);
  if (rc < 0) return rc;
  if ((rc = samples_from(out, reply, nplugins, block)) == 0) {
    kl__load_between(&before, &after, &out->others_cpus, &out->cpus,
                     &out->loadavg);
    json_object *v;
    out->stretched = json_object_object_get_ex(reply, "stretched", &v) &&
                     json_object_get_boolean(v);
    rc = kl__result_give(into, &got, sizeof(got), oldest, "kl_samples");
  } else {
    char gate[sizeof(got.gate)];
    int culprit = got.culprit;
    memcpy(gate, got.gate, sizeof(gate));
    kl_samples_dispose(out); /* empties it: the gate and culprit go back */
    if (rc == KL_EREJECTED) {
      memcpy(got.gate, gate, sizeof(gate));
      got.culprit = culprit;
      kl__result_give(into, &got, sizeof(got), oldest, "kl_samples");
    }
  }
  json_object_put(reply);
  return rc;
}

/* The worker's answer to a device request (caller puts); `memory` asks
 * for the memory bandwidth too (it may cost a measurement), `context` for
 * the device's primary context to be made now. */
static int device_reply(json_object **reply, kl_worker *w, bool memory,
                        bool context) {
  *reply = NULL;
  int rc = kl__wk_ensure_running(w);
  if (rc < 0) return rc;
  json_object *req = json_object_new_object();
  json_object_object_add(req, "op", json_object_new_string("device"));
  if (memory) json_object_object_add(req, "memory", json_object_new_int(1));
  if (context) json_object_object_add(req, "context", json_object_new_int(1));
  rc = kl__wk_roundtrip(reply, w, req);
  json_object_put(req);
  if (rc == 0 && (rc = kl__wk_request_ok(*reply, "device")) < 0) {
    json_object_put(*reply);
    *reply = NULL;
  }
  return rc;
}

int kl_worker_device(kl_device_info *into, kl_worker *w) {
  kl_device_info full = KL_DEVICE_INFO_INIT, *out = &full;
  json_object *reply, *v;
  int rc = device_reply(&reply, w, false, false);
  if (rc < 0) return rc;
  out->count = (int)obj_int(reply, "count");
  out->sms = (int)obj_int(reply, "sms");
  out->max_sm_clock_mhz = obj_double(reply, "max_sm_clock_mhz");
  if (json_object_object_get_ex(reply, "name", &v))
    snprintf(out->name, sizeof(out->name), "%s", json_object_get_string(v));
  if (json_object_object_get_ex(reply, "why", &v))
    snprintf(out->why, sizeof(out->why), "%s", json_object_get_string(v));
  if (json_object_object_get_ex(reply, "uuid", &v))
    snprintf(out->uuid, sizeof(out->uuid), "%s", json_object_get_string(v));
  json_object_put(reply);
  return kl__result_give(into, &full, sizeof(full),
                         KL__SIZE_THROUGH(kl_device_info, why),
                         "kl_device_info");
}

int kl__worker_warm(kl_worker *w) {
  json_object *reply;
  int rc = device_reply(&reply, w, false, true);
  json_object_put(reply);
  return rc;
}

int kl__worker_memory(double *peak_gbps, double *l2_bytes, kl_worker *w) {
  json_object *reply;
  int rc = device_reply(&reply, w, true, false);
  if (rc < 0) return rc;
  *peak_gbps = obj_double(reply, "memory_peak_gbps");
  *l2_bytes = obj_double(reply, "l2_bytes");
  json_object_put(reply);
  return 0;
}

int kl__worker_notes(char **out, kl_worker *w, int plugin) {
  *out = NULL;
  int rc = kl__wk_ensure_running(w);
  if (rc < 0) return rc;
  json_object *req = json_object_new_object(), *reply = NULL, *notes;
  json_object_object_add(req, "op", json_object_new_string("notes"));
  json_object_object_add(req, "plugin", json_object_new_int(plugin));
  rc = kl__wk_roundtrip(&reply, w, req);
  json_object_put(req);
  if (rc < 0) return rc;
  if ((rc = kl__worker_reply_status(reply, "notes")) == 0 &&
      json_object_object_get_ex(reply, "notes", &notes) &&
      json_object_is_type(notes, json_type_object) &&
      !(*out = kl__strdup(
            json_object_to_json_string_ext(notes, JSON_C_TO_STRING_PLAIN))))
    rc = kl__error_oom();
  json_object_put(reply);
  return rc;
}

int kl__worker_profile(json_object **reply, kl_worker *w, int plugin, int shape,
                       char *const *metrics, size_t n, uint64_t seed) {
  *reply = NULL;
  int rc = kl__wk_ensure_running(w);
  if (rc < 0) return rc;
  json_object *req = json_object_new_object(), *names = json_object_new_array();
  json_object_object_add(req, "op", json_object_new_string("profile"));
  json_object_object_add(req, "plugin", json_object_new_int(plugin));
  json_object_object_add(req, "shape", json_object_new_int(shape));
  json_object_object_add(req, "seed", json_object_new_int64((int64_t)seed));
  json_object_object_add(req, "cold", json_object_new_int(1));
  for (size_t i = 0; i < n; i++)
    json_object_array_add(names, json_object_new_string(metrics[i]));
  json_object_object_add(req, "metrics", names);
  if (w->pool) json_object_object_add(req, "pool", json_object_new_int(1));
  rc = kl__wk_roundtrip(reply, w, req);
  json_object_put(req);
  return rc;
}

void kl__worker_pool(kl_worker *w, bool on) {
  w->pool = on;
}

void kl__worker_keep_oracle(kl_worker *w, int key) {
  w->keep_oracle = key;
}

int kl__worker_release(kl_worker *w) {
  if (w->sock < 0) return 0; /* nothing pooled in a worker not running */
  json_object *req = json_object_new_object(), *reply = NULL;
  json_object_object_add(req, "op", json_object_new_string("release"));
  int rc = kl__wk_roundtrip(&reply, w, req);
  json_object_put(req);
  if (rc == 0) rc = kl__wk_request_ok(reply, "release");
  json_object_put(reply);
  return rc;
}

int kl__worker_metric_passes(size_t *passes, kl_worker *w, const char *chip,
                             char *const *metrics, size_t n) {
  *passes = 0;
  int rc = kl__wk_ensure_running(w);
  if (rc < 0) return rc;
  json_object *req = json_object_new_object(), *names = json_object_new_array(),
              *reply = NULL;
  json_object_object_add(req, "op", json_object_new_string("metric_passes"));
  if (chip) json_object_object_add(req, "chip", json_object_new_string(chip));
  for (size_t i = 0; i < n; i++)
    json_object_array_add(names, json_object_new_string(metrics[i]));
  json_object_object_add(req, "metrics", names);
  rc = kl__wk_roundtrip(&reply, w, req);
  json_object_put(req);
  if (rc < 0) return rc;
  if ((rc = kl__worker_reply_status(reply, "metric_passes")) == 0)
    *passes = (size_t)obj_int(reply, "passes");
  json_object_put(reply);
  return rc;
}

/* A reply's failure as an error: a name the chip lacks is bad input; no
 * counters on this machine is "not possible here"; anything else (the
 * profiler's own failures, a device error) a runtime failure. */
int kl__worker_reply_status(json_object *reply, const char *what) {
  json_object *code, *err, *ok;
  if (json_object_object_get_ex(reply, "ok", &ok) &&
      json_object_get_boolean(ok))
    return 0;
  const char *k = json_object_object_get_ex(reply, "code", &code)
                      ? json_object_get_string(code)
                      : "";
  if (!k[0]) return kl__wk_reply_failed(reply, what, KL_ERROR);
  const char *msg = json_object_object_get_ex(reply, "error", &err)
                        ? json_object_get_string(err)
                        : "the worker gave no reason";
  if (strcmp(k, "permission") == 0 || strcmp(k, "unavailable") == 0)
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_NONE, "%s", msg);
  return kl__error(strcmp(k, "unknown_metric") == 0 ? KL_EINVALID : KL_ERROR,
                   KL_DOMAIN_NONE, "%s", msg);
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t time_options_sizes[] = {
    0, offsetof(kl_time_options, verify), sizeof(kl_time_options)};

KL__OPTIONS_FUNCTIONS(kl_time_options, kl_time_options_init,
                      kl__time_options_take, KL_TIME_OPTIONS_INIT,
                      time_options_sizes)
