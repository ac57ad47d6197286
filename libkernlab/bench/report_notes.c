/* A python case's notes (what kl-pyworker saw of a side's calls: the first
 * call of each shape, where JIT compilation and autotuning happen, the
 * allocations of a call after it, the configurations Triton's autotuners
 * chose), as stored in the report and as lines for people. The worker
 * writes the JSON (kl-worker/kl_pyworker.py, notes()); this file only
 * reads it. */
#include <json-c/json.h>
#include <string.h>

#include "../core/json.h"
#include "bench_internal.h"

const char *kl_report_python_notes(const kl_report *r, int candidate) {
  return candidate ? r->notes_candidate : r->notes_baseline;
}

static void bytes_text(kl_buf *b, double n) {
  if (n >= 1 << 20)
    kl__buf_printf(b, "%.1f MiB", n / (1 << 20));
  else if (n >= 1 << 10)
    kl__buf_printf(b, "%.1f KiB", n / (1 << 10));
  else
    kl__buf_printf(b, "%.0f B", n);
}

static int side_text(kl_buf *b, const char *side, const char *text) {
  json_object *doc = text ? json_tokener_parse(text) : NULL, *v;
  if (!doc) return 0;
  json_object *shapes = kl__json_get(doc, "shapes");
  size_t n = shapes && json_object_is_type(shapes, json_type_array)
                 ? json_object_array_length(shapes)
                 : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *s = json_object_array_get_idx(shapes, i);
    v = kl__json_get(s, "shape");
    kl__buf_printf(b,
                   "%s, shape %s: first call %.4g ms (JIT, autotuning; "
                   "not timed)",
                   side, v ? json_object_get_string(v) : "?",
                   kl__json_num(s, "first_call_ms"));
    if (kl__json_get(s, "second_call_ms"))
      kl__buf_printf(b, ", the next %.4g ms",
                     kl__json_num(s, "second_call_ms"));
    if (kl__json_get(s, "allocations")) {
      double a = kl__json_num(s, "allocations");
      kl__buf_printf(b, "; a call allocates %.0f time%s", a, a == 1 ? "" : "s");
      if (a > 0) {
        kl__buf_puts(b, " (");
        bytes_text(b, kl__json_num(s, "allocated_bytes"));
        kl__buf_printf(b, ", %.0f cudaMalloc)",
                       kl__json_num(s, "device_mallocs"));
      }
    }
    kl__buf_putc(b, '\n');
  }
  json_object *tuned = kl__json_get(doc, "autotuned");
  size_t nt = tuned && json_object_is_type(tuned, json_type_array)
                  ? json_object_array_length(tuned)
                  : 0;
  for (size_t i = 0; i < nt; i++) {
    json_object *t = json_object_array_get_idx(tuned, i), *k, *c;
    k = kl__json_get(t, "kernel");
    c = kl__json_get(t, "config");
    kl__buf_printf(b, "%s: autotuned %s: %s\n", side,
                   k ? json_object_get_string(k) : "?",
                   c ? json_object_get_string(c) : "?");
  }
  json_object_put(doc);
  return kl__buf_status(b);
}

int kl_report_python_notes_text(kl_buf *out, const kl_report *r) {
  int rc =
      side_text(out, r->compare ? "baseline" : "kernel", r->notes_baseline);
  if (rc == 0) rc = side_text(out, "candidate", r->notes_candidate);
  return rc;
}
