/* A recorded iteration's "measurement" (bench/evidence.c wrote it) in
 * one paragraph for the report: the paired comparison (samples, speedup,
 * interval and blocks per timed shape), the checks (seeds, shapes, the
 * largest relative L2 error and the closest trivial output's), the gates
 * applied, and the timer, card and SM clock; a busy machine is named. A
 * line from before measurements were recorded says so. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/json.h"
#include "report_internal.h"

static size_t count(json_object *arr) {
  return arr && json_object_is_type(arr, json_type_array)
             ? json_object_array_length(arr)
             : 0;
}

static bool flag(json_object *o, const char *key) {
  json_object *v = kl__json_get(o, key);
  return v && json_object_get_boolean(v);
}

static double num(json_object *o, const char *key) {
  double d = 0;
  kl__json_number(o, key, &d);
  return d;
}

/* The comparison of each timed shape; *unchecked gets the first timed
 * shape without a passing check. */
static void compared(kl_buf *b, json_object *shapes, const char **unchecked,
                     double *rel, double *trivial_rel, const char **trivial,
                     double *busy, double *cpus, double *mhz) {
  size_t n = count(shapes), timed = 0;
  for (size_t i = 0; i < n; i++) {
    json_object *s = json_object_array_get_idx(shapes, i);
    if (flag(s, "timed") && !(flag(s, "checked") && flag(s, "correct")) &&
        !*unchecked)
      *unchecked = kl__json_text(s, "name");
    double r = num(s, "rel_l2");
    if (kl__json_get(s, "rel_l2") && r >= *rel) {
      *rel = r;
      *trivial_rel = num(s, "trivial_rel_l2");
      *trivial = kl__json_text(s, "trivial");
    }
    json_object *m = kl__json_get(s, "machine");
    if (m && num(m, "others_cpus") > *busy) {
      *busy = num(m, "others_cpus");
      *cpus = num(m, "cpus");
    }
    if (num(s, "sm_clock_mhz") > *mhz) *mhz = num(s, "sm_clock_mhz");
    if (!flag(s, "timed")) continue;
    double lo = 0, hi = 0;
    kl__json_pair(s, "ci", &lo, &hi);
    json_object *bl = kl__json_get(s, "blocks");
    kl__buf_printf(b, "%s%s: %.0f samples", timed++ ? "; " : "",
                   kl__json_text(s, "name") ? kl__json_text(s, "name") : "?",
                   num(s, "samples"));
    if (kl__json_get(s, "speedup"))
      kl__buf_printf(b, ", x%.3f [%.3f, %.3f], %.0f of %.0f blocks faster",
                     num(s, "speedup"), lo, hi, num(bl, "faster"),
                     num(bl, "units"));
    else
      kl__buf_printf(b, ", median %.4g us", num(s, "median_us"));
  }
  if (!timed) kl__buf_puts(b, "nothing timed");
}

int kl__rp_measurement_text(char **out, const char *measurement) {
  *out = NULL;
  kl_buf b = KL_BUF_INIT;
  json_object *m = measurement ? json_tokener_parse(measurement) : NULL;
  if (!m) {
    kl__buf_puts(&b, "not recorded (a line written before kernlab kept "
                     "how its numbers were obtained)");
  } else {
    json_object *shapes = kl__json_get(m, "shapes");
    const char *unchecked = NULL, *trivial = NULL;
    double rel = -1, trivial_rel = 0, busy = 0, cpus = 0, mhz = 0;
    bool paired = false; /* a comparison, or a bench (the baseline) */
    for (size_t i = 0; i < count(shapes); i++)
      paired |=
          kl__json_get(json_object_array_get_idx(shapes, i), "speedup") != NULL;
    kl__buf_puts(&b, paired ? "paired, interleaved: " : "timed alone: ");
    compared(&b, shapes, &unchecked, &rel, &trivial_rel, &trivial, &busy, &cpus,
             &mhz);
    size_t nseeds = count(kl__json_get(m, "seeds"));
    if (unchecked)
      kl__buf_printf(&b, ". NOT checked at shape %s", unchecked);
    else
      kl__buf_printf(&b, ". Checked: %zu seeds at every shape", nseeds);
    if (rel >= 0)
      kl__buf_printf(&b,
                     ", largest relative L2 error %.3g (the closest trivial "
                     "output, %s, %.3g)",
                     rel, trivial ? trivial : "?", trivial_rel);
    json_object *gates = kl__json_get(m, "gates");
    kl__buf_puts(&b, ". Gates: ");
    for (size_t i = 0; i < count(gates); i++)
      kl__buf_printf(
          &b, "%s%s", i ? ", " : "",
          json_object_get_string(json_object_array_get_idx(gates, i)));
    if (!count(gates)) kl__buf_puts(&b, "none recorded");
    const char *off = kl__json_text(m, "gates_off");
    if (off) kl__buf_printf(&b, " (switched off: %s)", off);
    json_object *dev = kl__json_get(m, "device");
    const char *name = kl__json_text(dev, "name");
    kl__buf_printf(&b, ". Timer %s, %s caches",
                   kl__json_text(m, "timer") ? kl__json_text(m, "timer") : "?",
                   flag(m, "cold") ? "cold" : "hot");
    if (name)
      kl__buf_printf(&b, ", on %s at %.0f MHz (max %.0f)", name, mhz,
                     num(dev, "max_sm_clock_mhz"));
    if (busy >= KL__BUSY_CPUS && cpus > 0)
      kl__buf_printf(&b,
                     "; a busy machine: other processes used %.1f of %.0f "
                     "CPUs",
                     busy, cpus);
    kl__buf_putc(&b, '.');
    json_object_put(m);
  }
  int rc = kl__buf_status(&b);
  if (rc == 0 && !(*out = kl__buf_detach(&b))) rc = kl__error_oom();
  kl_buf_dispose(&b);
  return rc;
}
