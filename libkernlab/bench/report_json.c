/* A report as JSON (kl_report_json, fields in docs/json.md) and back
 * (kl__report_from_json): an executor that ran a bench on another machine
 * brings its report home as this document, and the loop records it as if
 * it had run here. */
#include <stdio.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "../core/json.h"
#include "../profile/profile_internal.h"
#include "../worker/client_internal.h"
#include "bench_internal.h"

/* ---- JSON ------------------------------------------------------------------
 */

/* u: "_us" for kernel times, "" for a command case's metric values */
static int json_summary(kl_buf *b, const kl_summary *s, const char *u) {
  return kl__buf_printf(b,
                        "\"median%s\":%.6g,\"ci_low%s\":%.6g,\"ci_high%s\":"
                        "%.6g,\"q1%s\":%.6g,\"q3%s\":%.6g,\"min%s\":%.6g,"
                        "\"samples\":%zu,\"outliers\":%zu",
                        u, s->median, u, s->ci_low, u, s->ci_high, u, s->q1, u,
                        s->q3, u, s->min, s->n, s->outliers);
}

static int json_speedup(kl_buf *b, const kl_speedup *s) {
  return kl__buf_printf(b,
                        "\"speedup\":%.6g,\"speedup_ci\":[%.6g,%.6g],"
                        "\"decision\":\"%s\"",
                        s->speedup, s->ci_low, s->ci_high,
                        kl_decision_name(s->decision));
}

int kl_report_json(kl_buf *out, const kl_report *r) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "{\"case\":");
  kl__buf_json_string(&b, r->case_name);
  kl__buf_printf(
      &b, ",\"mode\":\"%s\",\"candidate\":", r->compare ? "compare" : "bench");
  kl__buf_json_string(&b, r->candidate_name);
  kl__buf_printf(
      &b, ",\"verdict\":\"%s\",\"reason\":", kl_verdict_name(r->verdict));
  kl__buf_json_string(&b, r->reason);
  kl__buf_puts(&b, ",\"gate\":");
  kl__buf_json_string(&b, r->gate);
  if (r->compile_log) { /* absent: the compiler said nothing */
    kl__buf_puts(&b, ",\"compile_log\":");
    kl__buf_json_string(&b, r->compile_log);
  }
  kl__buf_printf(&b, ",\"cold\":%s", r->cold ? "true" : "false");
  if (r->launch != KL_LAUNCH_STREAM) /* absent: stream */
    kl__buf_printf(&b, ",\"launch\":\"%s\"", kl_launch_name(r->launch));
  kl__buf_printf(&b, ",\"min_gain_pct\":%g,\"seeds\":[", r->min_gain_pct);
  for (size_t i = 0; i < r->nseeds; i++)
    kl__buf_printf(&b, "%s%llu", i ? "," : "", (unsigned long long)r->seeds[i]);
  kl__buf_puts(&b, "],\"shapes\":[");
  for (size_t i = 0; i < r->nshapes; i++) {
    const shape_entry *e = &r->shapes[i];
    const kl_shape_result *s = &e->res;
    const char *u = r->command ? "" : "_us";
    kl__buf_puts(&b, i ? ",{\"name\":" : "{\"name\":");
    kl__buf_json_string(&b, s->name);
    if (e->better) kl__buf_printf(&b, ",\"better\":\"%s\"", e->better);
    if (!r->command) { /* a metric row has no check of its own */
      kl__buf_printf(
          &b, ",\"checked\":%s,\"correct\":", s->checked ? "true" : "false");
      kl__buf_puts(&b, s->checked ? (s->correct ? "true" : "false") : "null");
    }
    if (!r->command)
      kl__buf_printf(
          &b,
          ",\"max_abs_err\":%.6g,\"mismatches\":%llu,"
          "\"unwritten\":%llu,\"nonfinite\":%llu,"
          "\"inputs_written\":%llu,\"cold\":%s",
          s->max_abs_err, (unsigned long long)s->mismatches,
          (unsigned long long)s->unwritten, (unsigned long long)s->nonfinite,
          (unsigned long long)s->inputs_written, r->cold ? "true" : "false");
    if (!r->command && s->scaled) {
      kl__buf_printf(&b, ",\"rel_l2\":%.6g,\"trivial\":", s->rel_l2);
      kl__buf_json_string(&b, s->trivial);
      kl__buf_printf(&b, ",\"trivial_rel_l2\":%.6g,\"max_ulp\":%.6g",
                     s->trivial_rel, s->max_ulp);
    }
    if (s->timed) {
      kl__buf_putc(&b, ',');
      json_summary(&b, &s->time, u);
      if (r->has_device)
        kl__buf_printf(&b, ",\"sm_clock_mhz\":%.1f,\"throttled\":%zu",
                       s->sm_clock_mhz, s->throttled);
      kl__buf_printf(&b, ",\"stop_reason\":\"%s\",\"wall_ms\":%.6g",
                     e->stop_reason, s->wall_ms);
      if (e->tracing[0]) kl__buf_printf(&b, ",\"tracing\":\"%s\"", e->tracing);
      kl__report_calibration_json(&b, e->calibration);
      if (r->compare) {
        kl__buf_puts(&b, ",\"baseline\":{");
        json_summary(&b, &s->baseline, u);
        kl__buf_puts(&b, "},");
        json_speedup(&b, &s->speedup);
        kl__json_blocks(&b, s);
        kl__buf_puts(&b, ",\"decision_reason\":");
        kl__buf_json_string(&b,
                            e->decision_reason[0] ? e->decision_reason : NULL);
      }
      kl__json_machine(&b, s);
      if (s->graph_timed) { /* --launch both: the graph's replays */
        kl__buf_puts(&b, ",\"graph\":{");
        json_summary(&b, &s->graph_time, u);
        if (r->compare) {
          kl__buf_puts(&b, ",\"baseline\":{");
          json_summary(&b, &s->graph_baseline, u);
          kl__buf_puts(&b, "},");
          json_speedup(&b, &s->graph_speedup);
        }
        if (e->graph_tracing[0])
          kl__buf_printf(&b, ",\"tracing\":\"%s\"", e->graph_tracing);
        kl__report_calibration_json(&b, e->graph_calibration);
        kl__buf_putc(&b, '}');
      }
    } else {
      kl__buf_printf(&b,
                     ",\"median%s\":null,\"ci_low%s\":null,"
                     "\"ci_high%s\":null,\"samples\":0",
                     u, u, u);
    }
    if (e->profile) {
      kl_buf pj = KL_BUF_INIT;
      int rc = kl_profile_json(&pj, e->profile, 0);
      if (rc < 0) {
        kl_buf_dispose(&b);
        return rc;
      }
      kl__buf_puts(&b, ",\"profile\":");
      kl__buf_put(&b, pj.ptr, pj.size);
      kl_buf_dispose(&pj);
    }
    kl__buf_putc(&b, '}');
  }
  kl__buf_puts(&b, "]");
  if (r->compare) {
    kl__buf_printf(&b, ",\"objective\":{\"name\":\"%s\"",
                   kl_objective_name(r->objective));
    if (r->has_objective) {
      kl__buf_putc(&b, ',');
      json_speedup(&b, &r->objective_speedup);
    }
    kl__buf_putc(&b, '}');
  }
  if (r->has_device) {
    kl__buf_puts(&b, ",\"device\":{\"name\":");
    kl__buf_json_string(&b, r->device.name);
    kl__buf_printf(&b, ",\"max_sm_clock_mhz\":%.0f,\"sms\":%d}",
                   r->device.max_sm_clock_mhz, r->device.sms);
  }
  kl__buf_printf(&b, ",\"timer\":\"%s\"", r->timer[0] ? r->timer : "none");
  if (r->command) kl__buf_puts(&b, ",\"backend\":\"command\"");
  if (r->sandbox[0]) kl__buf_printf(&b, ",\"sandbox\":%s", r->sandbox);
  kl__buf_puts(&b, ",\"gates_applied\":");
  kl__json_gates(&b, r->gates);
  if (r->gates_off[0]) { /* a measurement of what gates cost, not a verdict */
    kl__buf_puts(&b, ",\"gates_off\":");
    kl__buf_json_string(&b, r->gates_off);
  }
  if (r->notes_baseline || r->notes_candidate)
    kl__buf_printf(&b, ",\"python\":{\"baseline\":%s,\"candidate\":%s}",
                   r->notes_baseline ? r->notes_baseline : "null",
                   r->notes_candidate ? r->notes_candidate : "null");
  kl__report_phases_json(&b, &r->phases);
  kl__gpu_idle_json(&b, r);
  kl__buf_printf(&b,
                 ",\"compile\":{\"seconds\":%.3f,\"baseline_cached\":%s,"
                 "\"candidate_cached\":%s},\"worker_restarts\":%d,"
                 "\"worker_served\":%d,\"oracle_kept\":%d}",
                 r->compile_seconds, r->baseline_cached ? "true" : "false",
                 r->candidate_cached ? "true" : "false", r->worker_restarts,
                 r->worker_served, r->oracle_kept);
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}

/* ---- back from JSON
 * ----------------------------------------------------------- */

static void summary_from(kl_summary *s, json_object *o) {
  s->median = kl__json_num(o, "median_us");
  s->ci_low = kl__json_num(o, "ci_low_us");
  s->ci_high = kl__json_num(o, "ci_high_us");
  s->q1 = kl__json_num(o, "q1_us");
  s->q3 = kl__json_num(o, "q3_us");
  s->min = kl__json_num(o, "min_us");
  s->n = (size_t)kl__json_num(o, "samples");
  s->outliers = (size_t)kl__json_num(o, "outliers");
}

static void speedup_from(kl_speedup *s, json_object *o) {
  s->speedup = kl__json_num(o, "speedup");
  json_object *ci = kl__json_get(o, "speedup_ci");
  if (ci && json_object_is_type(ci, json_type_array) &&
      json_object_array_length(ci) == 2) {
    s->ci_low = json_object_get_double(json_object_array_get_idx(ci, 0));
    s->ci_high = json_object_get_double(json_object_array_get_idx(ci, 1));
  }
  json_object *d = kl__json_get(o, "decision");
  const char *dn = d ? json_object_get_string(d) : "";
  s->decision = strcmp(dn, "faster") == 0   ? KL_DECISION_FASTER
                : strcmp(dn, "slower") == 0 ? KL_DECISION_SLOWER
                                            : KL_DECISION_SAME;
}

/* The gate's name as the static string bench.c sets. */
static const char *known_gate(const char *name) {
  static const char *const gates[] = {"work_after_return",    "stale_outputs",
                                      "faster_than_roofline", "launch_contract",
                                      "timed_work",           "trivial_output"};
  for (size_t i = 0; name && i < sizeof(gates) / sizeof(gates[0]); i++)
    if (strcmp(name, gates[i]) == 0) return gates[i];
  return NULL;
}

static int shape_from(kl_report *r, shape_entry *e, json_object *s) {
  int rc = kl__json_dup(&e->name, s, "name");
  if (rc < 0) return rc;
  if (!e->name && !(e->name = kl__strdup("?"))) return kl__error_oom();
  kl_shape_result *res = &e->res;
  res->name = e->name;
  json_object *v = kl__json_get(s, "checked");
  res->checked = v && json_object_get_boolean(v);
  v = kl__json_get(s, "correct");
  res->correct = v && json_object_get_boolean(v);
  res->max_abs_err = kl__json_num(s, "max_abs_err");
  res->mismatches = (uint64_t)kl__json_num(s, "mismatches");
  res->unwritten = (uint64_t)kl__json_num(s, "unwritten");
  res->nonfinite = (uint64_t)kl__json_num(s, "nonfinite");
  res->inputs_written = (uint64_t)kl__json_num(s, "inputs_written");
  if ((v = kl__json_get(s, "trivial")) &&
      json_object_is_type(v, json_type_string)) {
    res->scaled = 1;
    res->rel_l2 = kl__json_num(s, "rel_l2");
    res->trivial_rel = kl__json_num(s, "trivial_rel_l2");
    res->max_ulp = kl__json_num(s, "max_ulp");
    for (int k = 0; kl_trivial_name(k); k++)
      if (strcmp(json_object_get_string(v), kl_trivial_name(k)) == 0)
        res->trivial = kl_trivial_name(k);
  }
  v = kl__json_get(s, "median_us");
  res->timed = v && !json_object_is_type(v, json_type_null);
  if (!res->timed) return 0;
  summary_from(&res->time, s);
  res->sm_clock_mhz = kl__json_num(s, "sm_clock_mhz");
  res->throttled = (size_t)kl__json_num(s, "throttled");
  res->wall_ms = kl__json_num(s, "wall_ms");
  v = kl__json_get(s, "stop_reason");
  snprintf(e->stop_reason, sizeof(e->stop_reason), "%s",
           v ? json_object_get_string(v) : "");
  v = kl__json_get(s, "tracing");
  snprintf(e->tracing, sizeof(e->tracing), "%s",
           kl__tracing_name(v ? json_object_get_string(v) : NULL));
  kl__report_calibration_read(e->calibration, s);
  if (r->compare && (v = kl__json_get(s, "baseline"))) {
    summary_from(&res->baseline, v);
    speedup_from(&res->speedup, s);
  }
  if ((v = kl__json_get(s, "blocks"))) {
    res->blocks = (size_t)kl__json_num(v, "units");
    res->blocks_faster = (size_t)kl__json_num(v, "faster");
    res->blocks_slower = (size_t)kl__json_num(v, "slower");
    json_object *st = kl__json_get(v, "stretched");
    res->stretched = st && json_object_get_boolean(st);
  }
  if ((v = kl__json_get(s, "machine"))) {
    res->others_cpus = kl__json_num(v, "others_cpus");
    res->cpus = kl__json_num(v, "cpus");
    res->loadavg = kl__json_num(v, "loadavg");
  }
  json_object *g = kl__json_get(s, "graph"); /* --launch both */
  if (r->launch == KL_LAUNCH_BOTH && g &&
      json_object_is_type(g, json_type_object)) {
    res->graph_timed = 1;
    summary_from(&res->graph_time, g);
    if (r->compare && (v = kl__json_get(g, "baseline"))) {
      summary_from(&res->graph_baseline, v);
      speedup_from(&res->graph_speedup, g);
    }
    v = kl__json_get(g, "tracing");
    snprintf(e->graph_tracing, sizeof(e->graph_tracing), "%s",
             kl__tracing_name(v ? json_object_get_string(v) : NULL));
    kl__report_calibration_read(e->graph_calibration, g);
  }
  v = kl__json_get(s, "decision_reason");
  if (v && json_object_is_type(v, json_type_string))
    snprintf(e->decision_reason, sizeof(e->decision_reason), "%s",
             json_object_get_string(v));
  res->decision_reason = e->decision_reason;
  return 0;
}

/* The profiles the document carries, into the shapes they belong to. */
static int profiles_from(kl_report *r, json_object *doc, const char *where) {
  kl_profile_list *l = NULL;
  int rc = kl_profile_list_from_json(
      &l, json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN), where);
  if (rc < 0) return rc;
  for (size_t i = 0; i < kl_profile_list_count(l); i++)
    for (size_t k = 0; k < r->nshapes; k++)
      if (!r->shapes[k].profile && kl_profile_list_name(l, i) &&
          strcmp(kl_profile_list_name(l, i), r->shapes[k].name) == 0) {
        r->shapes[k].profile = kl__profile_list_take(l, i);
        break;
      }
  kl_profile_list_free(l);
  return rc;
}

/* The phases, in the order they run, each with the phase it is a part of
 * (NULL: a phase of its own); "other" is what the bench's own steps do not
 * cover (objective, notes). */
static const struct {
  const char *name, *part_of;
  size_t offset;
} phases[] = {
#define PHASE(name, part_of)                                                   \
  { #name, part_of, offsetof(kl__report_phases, name) }
    PHASE(total, NULL),        PHASE(build, NULL),
    PHASE(worker, NULL),       PHASE(load, NULL),
    PHASE(checks, NULL),       PHASE(oracle, "checks"),
    PHASE(settle, "checks"),   PHASE(profile, NULL),
    PHASE(timing, NULL),       PHASE(setup, "timing"),
    PHASE(sampling, "timing"), PHASE(placements, "timing"),
    PHASE(verify, "timing"),   PHASE(gates, NULL),
    PHASE(other, NULL)
#undef PHASE
};

static double *phase_slot(kl__report_phases *ph, size_t i) {
  return (double *)((char *)ph + phases[i].offset);
}

/* The phases with `other`: what the total holds beyond the phases that
 * make it up (sampling is part of timing, not a part of its own). */
static kl__report_phases with_other(const kl__report_phases *in) {
  kl__report_phases ph = *in;
  if (!isfinite(ph.total)) return ph;
  const double parts[] = {ph.build,   ph.worker, ph.load, ph.checks,
                          ph.profile, ph.timing, ph.gates};
  double known = 0;
  for (size_t i = 0; i < KL_ARRAY_SIZE(parts); i++)
    if (isfinite(parts[i])) known += parts[i];
  ph.other = ph.total > known ? ph.total - known : 0;
  return ph;
}

int kl__report_phases_json(kl_buf *b, const kl__report_phases *in) {
  kl__report_phases ph = with_other(in);
  kl__buf_puts(b, ",\"phases_ms\":{");
  for (size_t i = 0; i < KL_ARRAY_SIZE(phases); i++) {
    double v = *phase_slot(&ph, i);
    kl__buf_printf(b, "%s\"%s\":", i ? "," : "", phases[i].name);
    if (isfinite(v))
      kl__buf_printf(b, "%.1f", v);
    else
      kl__buf_puts(b, "null");
  }
  kl__buf_putc(b, '}');
  return kl__buf_status(b);
}

int kl_report_phases_text(kl_buf *out, const kl_report *r) {
  if (!out || !r || !isfinite(r->phases.total)) return 0;
  kl__report_phases ph = with_other(&r->phases);
  kl__buf_printf(out, "wall %.2f s:", ph.total / 1e3);
  bool open = false; /* within a phase's brackets (its parts) */
  for (size_t i = 1; i < KL_ARRAY_SIZE(phases); i++) {
    double v = *phase_slot(&ph, i);
    if (!isfinite(v)) continue;
    bool inner = phases[i].part_of != NULL;
    if (open && !inner) kl__buf_putc(out, ')');
    kl__buf_printf(out, "%s%s %.2f",
                   inner   ? (open ? ", " : " (")
                   : i > 1 ? ", "
                           : " ",
                   phases[i].name, v / 1e3);
    open = inner;
  }
  if (open) kl__buf_putc(out, ')');
  return kl__buf_puts(out, "\n");
}

void kl__report_phases_read(kl__report_phases *ph, json_object *o) {
  for (size_t i = 0; i < KL_ARRAY_SIZE(phases); i++) {
    json_object *v = o ? kl__json_get(o, phases[i].name) : NULL;
    *phase_slot(ph, i) = v && (json_object_is_type(v, json_type_double) ||
                               json_object_is_type(v, json_type_int))
                             ? json_object_get_double(v)
                             : NAN;
  }
}

/* Its three numbers, by name: what a time reply's "calibration" holds
 * (kl-worker/timer_cupti.c). */
static const char *const calibration_keys[3] = {"offset_us", "probe_records_us",
                                                "probe_true_us"};

void kl__report_calibration_json(kl_buf *b, const double cal[3]) {
  if (!(cal[2] > 0)) return; /* no calibration was asked for */
  kl__buf_puts(b, ",\"calibration\":{");
  for (size_t i = 0; i < 3; i++)
    kl__buf_printf(b, "%s\"%s\":%.6g", i ? "," : "", calibration_keys[i],
                   cal[i]);
  kl__buf_putc(b, '}');
}

void kl__report_calibration_read(double cal[3], json_object *shape) {
  json_object *c = kl__json_get(shape, "calibration");
  for (size_t i = 0; i < 3; i++)
    if (!kl__json_number(c, calibration_keys[i], &cal[i]) ||
        !(cal[i] >= 0 && cal[i] < 1e6)) /* absent, NaN, or not ours */
      cal[i] = 0;
}

int kl__report_from_json(kl_report **out, json_object *doc, const char *where) {
  *out = NULL;
  json_object *shapes = kl__json_get(doc, "shapes"), *v;
  if (!json_object_is_type(doc, json_type_object) || !shapes ||
      !json_object_is_type(shapes, json_type_array) ||
      !kl__json_get(doc, "verdict"))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s: not a bench report (no verdict or shapes)", where);
  kl_report *r = kl__calloc(1, sizeof(*r));
  if (!r) return kl__error_oom();
  kl__report_phases_read(&r->phases, kl__json_get(doc, "phases_ms"));
  kl__gpu_idle_from_json(r, doc);
  const char *mode =
      (v = kl__json_get(doc, "mode")) ? json_object_get_string(v) : "";
  r->compare = strcmp(mode, "compare") == 0;
  const char *vn = json_object_get_string(kl__json_get(doc, "verdict"));
  r->verdict = KL_VERDICT_OK;
  bool known = false;
  for (int k = KL_VERDICT_OK; k <= KL_VERDICT_INVALID_OUTPUT && !known; k++)
    if (strcmp(vn, kl_verdict_name((kl_verdict)k)) == 0) {
      r->verdict = (kl_verdict)k;
      known = true;
    }
  int rc;
  if (!known) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE, "%s: unknown verdict '%s'",
                   where, vn);
    goto fail;
  }
  if ((rc = kl__json_dup(&r->case_name, doc, "case")) < 0 ||
      (rc = kl__json_dup(&r->candidate_name, doc, "candidate")) < 0 ||
      (rc = kl__json_dup(&r->reason, doc, "reason")) < 0 ||
      (rc = kl__json_dup(&r->compile_log, doc, "compile_log")) < 0)
    goto fail;
  if (!r->case_name || !r->candidate_name) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                   "%s: a report names its case and candidate", where);
    goto fail;
  }
  v = kl__json_get(doc, "gate");
  r->gate = known_gate(v ? json_object_get_string(v) : NULL);
  r->cold = (v = kl__json_get(doc, "cold")) && json_object_get_boolean(v);
  v = kl__json_get(doc, "launch"); /* absent: stream */
  int launch = v ? kl_launch_parse(json_object_get_string(v)) : -1;
  r->launch = launch >= 0 ? launch : KL_LAUNCH_STREAM;
  r->min_gain_pct = kl__json_num(doc, "min_gain_pct");
  json_object *seeds = kl__json_get(doc, "seeds");
  r->nseeds = seeds && json_object_is_type(seeds, json_type_array)
                  ? json_object_array_length(seeds)
                  : 0;
  r->nshapes = json_object_array_length(shapes);
  if ((r->nseeds && !(r->seeds = kl__calloc(r->nseeds, 8))) ||
      (r->nshapes &&
       !(r->shapes = kl__calloc(r->nshapes, sizeof(*r->shapes))))) {
    rc = kl__error_oom();
    goto fail;
  }
  for (size_t i = 0; i < r->nseeds; i++)
    r->seeds[i] =
        (uint64_t)json_object_get_uint64(json_object_array_get_idx(seeds, i));
  for (size_t i = 0; i < r->nshapes; i++)
    if ((rc = shape_from(r, &r->shapes[i],
                         json_object_array_get_idx(shapes, i))) < 0)
      goto fail;
  json_object *obj = kl__json_get(doc, "objective");
  if (obj) {
    const char *on =
        (v = kl__json_get(obj, "name")) ? json_object_get_string(v) : "";
    for (int k = KL_OBJECTIVE_GEOMEAN_SPEEDUP; k <= KL_OBJECTIVE_TOTAL_TIME;
         k++)
      if (strcmp(on, kl_objective_name((kl_objective)k)) == 0)
        r->objective = (kl_objective)k;
    if (kl__json_get(obj, "speedup")) {
      r->has_objective = true;
      speedup_from(&r->objective_speedup, obj);
    }
  }
  json_object *dev = kl__json_get(doc, "device");
  if (dev) {
    r->has_device = true;
    v = kl__json_get(dev, "name");
    snprintf(r->device.name, sizeof(r->device.name), "%s",
             v ? json_object_get_string(v) : "");
    r->device.max_sm_clock_mhz = kl__json_num(dev, "max_sm_clock_mhz");
    r->device.sms = (int)kl__json_num(dev, "sms");
    r->device.count = 1;
  }
  v = kl__json_get(doc, "timer");
  snprintf(r->timer, sizeof(r->timer), "%s",
           v && strcmp(json_object_get_string(v), "none")
               ? json_object_get_string(v)
               : "");
  json_object *comp = kl__json_get(doc, "compile");
  if (comp) {
    r->compile_seconds = kl__json_num(comp, "seconds");
    r->baseline_cached = (v = kl__json_get(comp, "baseline_cached")) &&
                         json_object_get_boolean(v);
    r->candidate_cached = (v = kl__json_get(comp, "candidate_cached")) &&
                          json_object_get_boolean(v);
  }
  r->worker_restarts = (int)kl__json_num(doc, "worker_restarts");
  r->worker_served = (int)kl__json_num(doc, "worker_served");
  r->oracle_kept = (int)kl__json_num(doc, "oracle_kept");
  json_object *py = kl__json_get(doc, "python");
  char **notes[2] = {&r->notes_baseline, &r->notes_candidate};
  static const char *const sides[2] = {"baseline", "candidate"};
  for (int k = 0; py && k < 2; k++) {
    json_object *n = kl__json_get(py, sides[k]);
    if (n && json_object_is_type(n, json_type_object) &&
        !(*notes[k] = kl__strdup(
              json_object_to_json_string_ext(n, JSON_C_TO_STRING_PLAIN)))) {
      rc = kl__error_oom();
      goto fail;
    }
  }
  json_object *applied = kl__json_get(doc, "gates_applied");
  for (size_t i = 0; applied && json_object_is_type(applied, json_type_array) &&
                     i < json_object_array_length(applied);
       i++)
    for (int g = 0; g < KL__GATES; g++)
      if (strcmp(json_object_get_string(json_object_array_get_idx(applied, i)),
                 kl__gate_name(g)) == 0)
        r->gates |= 1u << g;
  if ((v = kl__json_get(doc, "gates_off")) &&
      json_object_is_type(v, json_type_string))
    snprintf(r->gates_off, sizeof(r->gates_off), "%s",
             json_object_get_string(v));
  json_object *sb = kl__json_get(doc, "sandbox");
  if (sb && json_object_is_type(sb, json_type_object))
    snprintf(r->sandbox, sizeof(r->sandbox), "%s",
             json_object_to_json_string_ext(sb, JSON_C_TO_STRING_PLAIN));
  bool any_profile = false;
  for (size_t i = 0; i < r->nshapes; i++)
    any_profile |=
        kl__json_get(json_object_array_get_idx(shapes, i), "profile") != 0;
  if (any_profile && (rc = profiles_from(r, doc, where)) < 0) goto fail;
  *out = r;
  return 0;
fail:
  kl_report_free(r);
  return rc;
}
