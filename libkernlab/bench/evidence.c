/* How a report's numbers were obtained, as a run records them beside an
 * iteration's verdict: the check (seeds, and per shape whether it was
 * checked and passed, its relative L2 error, the closest trivial output
 * and the largest ULP error), the paired comparison per timed shape
 * (samples, speedup and interval, the blocks, the decision and why), the
 * gates the evaluation applied, and the timer, card and SM clock. An
 * ACCEPTED line without it, or with a timed shape that was not checked,
 * cannot be written (run/decide.c refuses the acceptance first). */
#include <stdio.h>
#include <string.h>

#include "bench_internal.h"

static const char *const gate_names[KL__GATES] = {"tolerance",
                                                  "work_after_return",
                                                  "launch_contract",
                                                  "trivial_output",
                                                  "stale_outputs",
                                                  "timed_work",
                                                  "faster_than_roofline",
                                                  "varied_inputs"};

const char *kl__gate_name(int i) {
  return i >= 0 && i < KL__GATES ? gate_names[i] : NULL;
}

void kl__json_blocks(kl_buf *b, const kl_shape_result *s) {
  kl__buf_printf(b,
                 ",\"blocks\":{\"units\":%zu,\"faster\":%zu,\"slower\":%zu,"
                 "\"stretched\":%s}",
                 s->blocks, s->blocks_faster, s->blocks_slower,
                 s->stretched ? "true" : "false");
}

void kl__json_machine(kl_buf *b, const kl_shape_result *s) {
  if (s->cpus > 0)
    kl__buf_printf(b,
                   ",\"machine\":{\"others_cpus\":%.3g,\"cpus\":%.0f,"
                   "\"loadavg\":%.3g}",
                   s->others_cpus, s->cpus, s->loadavg);
}

void kl__json_gates(kl_buf *b, unsigned gates) {
  kl__buf_putc(b, '[');
  for (int i = 0, n = 0; i < KL__GATES; i++)
    if (gates & (1u << i))
      kl__buf_printf(b, "%s\"%s\"", n++ ? "," : "", gate_names[i]);
  kl__buf_putc(b, ']');
}

static void shape_json(kl_buf *b, const kl_report *r, const shape_entry *e) {
  const kl_shape_result *s = &e->res;
  kl__buf_puts(b, "{\"name\":");
  kl__buf_json_string(b, s->name);
  kl__buf_printf(b, ",\"checked\":%s,\"correct\":%s",
                 s->checked ? "true" : "false",
                 s->checked && s->correct ? "true" : "false");
  if (s->scaled) {
    kl__buf_printf(b, ",\"rel_l2\":%.3g,\"trivial\":", s->rel_l2);
    kl__buf_json_string(b, s->trivial);
    kl__buf_printf(b, ",\"trivial_rel_l2\":%.3g,\"max_ulp\":%.3g",
                   s->trivial_rel, s->max_ulp);
  }
  kl__buf_printf(b, ",\"max_abs_err\":%.3g,\"timed\":%s", s->max_abs_err,
                 s->timed ? "true" : "false");
  if (s->timed) {
    kl__buf_printf(b, ",\"samples\":%zu,\"median_us\":%.6g", s->time.n,
                   s->time.median);
    if (r->has_device)
      kl__buf_printf(b, ",\"sm_clock_mhz\":%.0f", s->sm_clock_mhz);
    if (e->tracing[0]) /* the CUPTI records that timed it */
      kl__buf_printf(b, ",\"tracing\":\"%s\"", e->tracing);
    if (e->calibration[0] > 0) /* less the records' fixed part */
      kl__buf_printf(b, ",\"calibration_us\":%.3g", e->calibration[0]);
  }
  if (s->timed && r->compare) {
    kl__buf_printf(b,
                   ",\"speedup\":%.6g,\"ci\":[%.6g,%.6g],\"decision\":\"%s\"",
                   s->speedup.speedup, s->speedup.ci_low, s->speedup.ci_high,
                   kl_decision_name(s->speedup.decision));
    kl__json_blocks(b, s);
    kl__buf_puts(b, ",\"decision_reason\":");
    kl__buf_json_string(b, e->decision_reason[0] ? e->decision_reason : NULL);
  }
  if (s->timed) kl__json_machine(b, s);
  if (s->graph_timed) { /* --launch both: the graph's replays, beside */
    kl__buf_printf(b, ",\"graph\":{\"median_us\":%.6g", s->graph_time.median);
    if (r->compare)
      kl__buf_printf(b,
                     ",\"speedup\":%.6g,\"ci\":[%.6g,%.6g],\"decision\":\"%s\"",
                     s->graph_speedup.speedup, s->graph_speedup.ci_low,
                     s->graph_speedup.ci_high,
                     kl_decision_name(s->graph_speedup.decision));
    if (e->graph_tracing[0])
      kl__buf_printf(b, ",\"tracing\":\"%s\"", e->graph_tracing);
    kl__buf_putc(b, '}');
  }
  kl__buf_putc(b, '}');
}

int kl__report_evidence_json(kl_buf *out, const kl_report *r) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "{\"seeds\":[");
  for (size_t i = 0; i < r->nseeds; i++)
    kl__buf_printf(&b, "%s%llu", i ? "," : "", (unsigned long long)r->seeds[i]);
  kl__buf_printf(&b, "],\"cold\":%s", r->cold ? "true" : "false");
  if (r->launch != KL_LAUNCH_STREAM) /* absent: stream */
    kl__buf_printf(&b, ",\"launch\":\"%s\"", kl_launch_name(r->launch));
  kl__buf_printf(&b, ",\"min_gain_pct\":%g,\"timer\":\"%s\"", r->min_gain_pct,
                 r->timer[0] ? r->timer : "none");
  kl__buf_puts(&b, ",\"gates\":");
  kl__json_gates(&b, r->gates);
  if (r->gates_off[0]) {
    kl__buf_puts(&b, ",\"gates_off\":");
    kl__buf_json_string(&b, r->gates_off);
  }
  if (r->has_device) {
    kl__buf_puts(&b, ",\"device\":{\"name\":");
    kl__buf_json_string(&b, r->device.name);
    kl__buf_printf(&b, ",\"max_sm_clock_mhz\":%.0f}",
                   r->device.max_sm_clock_mhz);
  } else {
    kl__buf_puts(&b, ",\"device\":null");
  }
  kl__buf_puts(&b, ",\"shapes\":[");
  for (size_t i = 0; i < r->nshapes; i++) {
    if (i) kl__buf_putc(&b, ',');
    shape_json(&b, r, &r->shapes[i]);
  }
  kl__buf_puts(&b, "]}");
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  kl_buf_dispose(&b);
  return rc;
}
