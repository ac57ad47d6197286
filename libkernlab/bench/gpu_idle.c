/* The GPU's idleness around a bench (issue 49): NVML's reading of the
 * device before the first timed sample and after the last (utilisation,
 * memory in use, compute processes, those not the worker's), kept in the
 * report, written to its JSON ("gpu_usage"), read back from it, and said
 * in words. A reading with another process on the device marks the
 * samples as possibly overlapping foreign work: NVML samples utilisation
 * over a period, not per kernel, so kernlab cannot say which samples; it
 * says that some may. Utilisation alone says nothing of whose work it was
 * (the worker's own checks ran just before the first reading). */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "../core/json.h"
#include "../worker/client_internal.h"
#include "bench_internal.h"

void kl__gpu_idle_read(kl_report *r, kl_worker *w, bool after) {
  if (!r->has_device || !r->device.uuid[0]) return;
  kl__gpu_usage *u = after ? &r->gpu_after : &r->gpu_before;
  kl__gpu_usage_of(u, r->device.uuid, kl__worker_pid(w));
}

bool kl__gpu_idle_foreign(const kl_report *r) {
  const kl__gpu_usage *b = &r->gpu_before, *a = &r->gpu_after;
  return (b->known && b->others > 0) || (a->known && a->others > 0);
}

static void one_json(kl_buf *b, const char *name, const kl__gpu_usage *u) {
  kl__buf_printf(b, ",\"%s\":", name);
  if (!u->known) {
    kl__buf_puts(b, "null");
    return;
  }
  kl__buf_printf(b,
                 "{\"util_pct\":%u,\"mem_used_mib\":%.1f,"
                 "\"mem_total_mib\":%.1f,\"processes\":%d,\"others\":%d}",
                 u->util_pct, u->mem_used_mib, u->mem_total_mib, u->processes,
                 u->others);
}

void kl__gpu_idle_json(kl_buf *b, const kl_report *r) {
  if (!r->gpu_before.known && !r->gpu_after.known) return;
  kl__buf_puts(b, ",\"gpu_usage\":{\"uuid\":");
  kl__buf_json_string(b, r->device.uuid);
  one_json(b, "before", &r->gpu_before);
  one_json(b, "after", &r->gpu_after);
  kl__buf_printf(b, ",\"foreign_work\":%s}",
                 kl__gpu_idle_foreign(r) ? "true" : "false");
}

static void one_read(kl__gpu_usage *u, json_object *o) {
  memset(u, 0, sizeof(*u));
  if (!o || !json_object_is_type(o, json_type_object)) return;
  u->known = true;
  u->util_pct = (unsigned)kl__json_num(o, "util_pct");
  u->mem_used_mib = kl__json_num(o, "mem_used_mib");
  u->mem_total_mib = kl__json_num(o, "mem_total_mib");
  u->processes = (int)kl__json_num(o, "processes");
  u->others = (int)kl__json_num(o, "others");
}

void kl__gpu_idle_from_json(kl_report *r, json_object *doc) {
  json_object *g = kl__json_get(doc, "gpu_usage"), *v;
  if (!g) return;
  if ((v = kl__json_get(g, "uuid")))
    snprintf(r->device.uuid, sizeof(r->device.uuid), "%s",
             json_object_get_string(v));
  one_read(&r->gpu_before, kl__json_get(g, "before"));
  one_read(&r->gpu_after, kl__json_get(g, "after"));
}

static void one_text(kl_buf *b, const kl__gpu_usage *u) {
  kl__buf_printf(b, "%u%% busy, %.0f of %.0f MiB in use, ", u->util_pct,
                 u->mem_used_mib, u->mem_total_mib);
  if (u->others < 0)
    kl__buf_puts(b, "processes unknown");
  else if (u->others == 0)
    kl__buf_puts(b, "no other process");
  else
    kl__buf_printf(b, "%d other process%s", u->others,
                   u->others == 1 ? "" : "es");
}

int kl_report_gpu_usage_text(kl_buf *out, const kl_report *r) {
  if (!r->gpu_before.known && !r->gpu_after.known) return 0;
  kl__buf_printf(out, "gpu %s:", r->device.uuid);
  if (r->gpu_before.known) {
    kl__buf_puts(out, " before timing ");
    one_text(out, &r->gpu_before);
  }
  if (r->gpu_after.known) {
    kl__buf_puts(out, r->gpu_before.known ? "; after " : " after timing ");
    one_text(out, &r->gpu_after);
  }
  kl__buf_putc(out, '\n');
  if (kl__gpu_idle_foreign(r))
    kl__buf_puts(out, "warning: another process used this GPU around the "
                      "timing: some samples may include its work (pick an "
                      "idle GPU with --device, or wait)\n");
  return kl__buf_status(out);
}

int kl_report_gpu_reading(const kl_report *r, int after, double *util_pct,
                          double *mem_used_mib, int *others) {
  const kl__gpu_usage *u = after ? &r->gpu_after : &r->gpu_before;
  if (!u->known) return 0;
  *util_pct = u->util_pct;
  *mem_used_mib = u->mem_used_mib;
  *others = u->others;
  return 1;
}
