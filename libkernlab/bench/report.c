/* The report a bench makes (struct kl_report, bench_internal.h): its
 * public accessors and its release, shared by the kernel bench (bench.c),
 * the command bench (command.c) and the JSON reader (report_json.c). */
#include <stddef.h>
#include <string.h>

#include "../profile/profile_internal.h"
#include "bench_internal.h"

const char *kl_verdict_name(kl_verdict v) {
  switch (v) {
  case KL_VERDICT_OK:
    return "OK";
  case KL_VERDICT_INCORRECT:
    return "INCORRECT";
  case KL_VERDICT_CRASHED:
    return "CRASHED";
  case KL_VERDICT_TIMEOUT:
    return "TIMEOUT";
  case KL_VERDICT_COMPILE_ERROR:
    return "COMPILE_ERROR";
  case KL_VERDICT_CHEAT:
    return "CHEAT";
  case KL_VERDICT_INVALID_OUTPUT:
    return "INVALID_OUTPUT";
  }
  return "?";
}

void kl_report_free(kl_report *r) {
  if (!r) return;
  kl__free(r->case_name);
  kl__free(r->candidate_name);
  kl__free(r->reason);
  kl__free(r->compile_log);
  kl__free(r->notes_baseline);
  kl__free(r->notes_candidate);
  kl__free(r->seeds);
  for (size_t i = 0; r->shapes && i < r->nshapes; i++) {
    kl__free(r->shapes[i].name);
    kl_profile_free(r->shapes[i].profile);
  }
  kl__free(r->shapes);
  kl__free(r);
}

/* A verdict with its one-line reason (bench.c's path and gates.c's gates
 * set it so). */
int kl__bench_reject(kl_report *r, kl_verdict v, const char *fmt, ...) {
  kl_buf b = KL_BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  int rc = kl__buf_vprintf(&b, fmt, ap);
  va_end(ap);
  if (rc < 0) return rc;
  r->verdict = v;
  r->reason = kl__buf_detach(&b);
  return r->reason ? 0 : kl__error_oom();
}

/* A worker failure: a crash or a hang is the candidate's verdict; anything
 * else is kernlab's error. `shape` may be NULL (no shape was running). */
int kl__bench_worker_failure(kl_report *r, int rc, const char *shape,
                             const char *what) {
  const kl_error *e = kl_error_last();
  const char *msg = e ? e->message : kl_strerror(rc);
  if (rc != KL_ECRASHED && rc != KL_ETIMEOUT) return rc;
  return kl__bench_reject(
      r, rc == KL_ECRASHED ? KL_VERDICT_CRASHED : KL_VERDICT_TIMEOUT,
      "%s%s%s: %s", what, shape ? " at shape " : "", shape ? shape : "", msg);
}

uint64_t kl_report_seed(const kl_report *r) {
  return r ? r->base_seed : 0;
}

int kl_report_launch(const kl_report *r) {
  return r ? r->launch : KL_LAUNCH_STREAM;
}

kl_verdict kl_report_verdict(const kl_report *r) {
  return r->verdict;
}
const char *kl_report_reason(const kl_report *r) {
  return r->reason;
}
const char *kl_report_gate(const kl_report *r) {
  return r->gate;
}
const char *kl_report_compile_log(const kl_report *r) {
  return r->compile_log;
}
size_t kl_report_shape_count(const kl_report *r) {
  return r->nshapes;
}

const char *kl_report_shape_better(const kl_report *r, size_t i) {
  return r && i < r->nshapes ? r->shapes[i].better : NULL;
}

int kl_report_shape_trivial(kl_trivial_info *out, const kl_report *r, size_t i,
                            int which) {
  if (i >= r->nshapes || !kl_trivial_name(which))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no shape %zu or trivial %d",
                     i, which);
  const shape_entry *e = &r->shapes[i];
  if (!e->scale_param[0] || e->trivial_rel[which] < 0) return KL_ENOTFOUND;
  kl_trivial_info full = KL_TRIVIAL_INFO_INIT;
  full.name = kl_trivial_name(which);
  full.output = e->scale_param;
  full.rel_l2 = e->trivial_rel[which];
  full.rejected = e->trivial_rejected[which];
  full.elements = e->scale_elements;
  full.ref_rms = e->ref_rms;
  return kl__result_give(out, &full, sizeof(full),
                         KL__SIZE_THROUGH(kl_trivial_info, ref_rms),
                         "kl_trivial_info");
}

int kl_report_shape(kl_shape_result *out, const kl_report *r, size_t i) {
  if (i >= r->nshapes)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no shape %zu in report", i);
  kl_shape_result full = r->shapes[i].res;
  full.stop_reason = r->shapes[i].stop_reason;
  full.decision_reason =
      r->shapes[i].decision_reason[0] ? r->shapes[i].decision_reason : NULL;
  full.tracing = r->shapes[i].tracing[0] ? r->shapes[i].tracing : NULL;
  full.graph_tracing =
      r->shapes[i].graph_tracing[0] ? r->shapes[i].graph_tracing : NULL;
  full.calibration_us = r->shapes[i].calibration[0];
  full.graph_calibration_us = r->shapes[i].graph_calibration[0];
  return kl__result_give(out, &full, sizeof(full),
                         offsetof(kl_shape_result, scaled), "kl_shape_result");
}

const char *kl__report_sandbox(const kl_report *r) {
  return r && r->sandbox[0] ? r->sandbox : NULL;
}

int kl_report_device(kl_device_info *out, const kl_report *r) {
  if (!r->has_device) return KL_ENOTFOUND;
  return kl__result_give(out, &r->device, sizeof(r->device),
                         KL__SIZE_THROUGH(kl_device_info, why),
                         "kl_device_info");
}

int kl_report_objective(kl_speedup *out, const kl_report *r) {
  if (!r->has_objective) return KL_ENOTFOUND;
  *out = r->objective_speedup;
  return 0;
}

/* A launch failed for breaking the launch contract (kernlab/plugin.h): the
 * harness's or the worker's guard said so. */
