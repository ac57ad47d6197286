/* Profiles: from raw counters to catalog values and a bottleneck verdict.
 *
 * A profile keeps its inputs (the raw values of the main kernel keyed by
 * CUPTI or perf names, the kernel's launch and occupancy facts, the timed
 * duration, the roofline) and computes everything else from them, the same
 * way whether the inputs came from the worker a moment ago or from a JSON
 * profile recorded on another machine. This file keeps the profile: its
 * life, its set specs, building it from a worker's reply, reading and
 * writing it; compute.c computes its values and its verdict. */
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../core/internal.h"
#include "../core/json.h"
#include "kernel_info_fields.h"
#include "kernlab/plugin.h"
#include "profile_internal.h"

void kl_profile_free(kl_profile *p) {
  if (!p) return;
  for (size_t i = 0; i < p->nraw; i++)
    kl__free(p->raw[i].name);
  kl__free(p->raw);
  kl__free(p->values);
  kl__free(p->set);
  kl__free(p->backend);
  kl__free(p->chip);
  kl__free(p->replay);
  kl__free(p->note);
  kl__free(p->verdict);
  kl__free(p->limiter);
  kl__free(p->name);
  for (size_t i = 0; i < p->nparts; i++)
    kl_profile_free(p->parts[i]);
  kl__free(p->parts);
  for (size_t i = 0; i < p->nadvice; i++)
    kl__ncu_advice_dispose(&p->advice[i]);
  kl__free(p->advice);
  for (size_t i = 0; i < p->nstand_ins; i++) {
    kl__free(p->stand_ins[i].name);
    kl__free(p->stand_ins[i].source);
  }
  kl__free(p->stand_ins);
  kl__free(p);
}

void kl__ncu_advice_dispose(kl_ncu_advice *a) {
  kl__free((char *)a->rule);
  kl__free((char *)a->type);
  kl__free((char *)a->section);
  kl__free((char *)a->text);
  kl__free((char *)a->speedup_type);
  memset(a, 0, sizeof(*a));
}

/* Ranked: the largest estimated speedup first, those without one last, in
 * the order ncu gave them. */
static bool ranks_before(const kl_ncu_advice *a, const kl_ncu_advice *b) {
  if (isnan(b->speedup_pct)) return !isnan(a->speedup_pct);
  return !isnan(a->speedup_pct) && a->speedup_pct > b->speedup_pct;
}

int kl__profile_add_advice(kl_profile *p, const kl_ncu_advice *a) {
  if (KL__GROW(p->advice, p->cap_advice, p->nadvice + 1) < 0) return KL_ENOMEM;
  kl_ncu_advice c = {0};
  c.speedup_pct = a->speedup_pct;
  if (!(c.rule = kl__strdup(a->rule ? a->rule : "")) ||
      !(c.type = kl__strdup(a->type ? a->type : "")) ||
      !(c.section = kl__strdup(a->section ? a->section : "")) ||
      !(c.text = kl__strdup(a->text ? a->text : "")) ||
      !(c.speedup_type = kl__strdup(a->speedup_type ? a->speedup_type : ""))) {
    kl__ncu_advice_dispose(&c);
    return kl__error_oom();
  }
  size_t at = p->nadvice;
  while (at > 0 && ranks_before(&c, &p->advice[at - 1]))
    at--;
  memmove(&p->advice[at + 1], &p->advice[at],
          (p->nadvice - at) * sizeof(*p->advice));
  p->advice[at] = c;
  p->nadvice++;
  return 0;
}

int kl__profile_set_name(kl_profile *p, const char *name) {
  char *copy = name ? kl__strdup(name) : NULL;
  if (name && !copy) return kl__error_oom();
  kl__free(p->name);
  p->name = copy;
  return 0;
}

size_t kl_profile_advice_count(const kl_profile *p) {
  return p ? p->nadvice : 0;
}

const kl_ncu_advice *kl_profile_advice(const kl_profile *p, size_t i) {
  return p && i < p->nadvice ? &p->advice[i] : NULL;
}

int kl__profile_add_part(kl_profile *p, kl_profile *part, const char *name) {
  kl_profile **grown =
      kl__realloc(p->parts, (p->nparts + 1) * sizeof(*p->parts));
  if (!grown || (name && !(part->name = kl__strdup(name)))) {
    if (grown) p->parts = grown;
    kl_profile_free(part);
    return kl__error_oom();
  }
  p->parts = grown;
  p->parts[p->nparts++] = part;
  kl__profile_derive_operator(p);
  return 0;
}

size_t kl_profile_part_count(const kl_profile *p) {
  return p ? p->nparts : 0;
}

const kl_profile *kl_profile_part(const kl_profile *p, size_t i) {
  return p && i < p->nparts ? p->parts[i] : NULL;
}

const char *kl_profile_name(const kl_profile *p) {
  return p ? p->name : NULL;
}

double kl_profile_time_us(const kl_profile *p) {
  return p && p->time_us > 0 ? p->time_us : NAN;
}

/* ---- set specs ------------------------------------------------------------
 */

void kl__profile_names_free(char **names, size_t n) {
  for (size_t i = 0; names && i < n; i++)
    kl__free(names[i]);
  kl__free(names);
}

static int add_name(char ***names, size_t *n, size_t *cap, const char *name,
                    size_t len) {
  for (size_t i = 0; i < *n; i++)
    if (strlen((*names)[i]) == len && strncmp((*names)[i], name, len) == 0)
      return 0;
  if (!kl__array_reserve(names, cap, *n + 1, sizeof(**names)))
    return kl__error_oom();
  if (!((*names)[*n] = kl__strndup(name, len))) return kl__error_oom();
  (*n)++;
  return 0;
}

int kl__profile_names(char ***out, size_t *nout, const char *spec) {
  size_t ncat, n = 0, cap = 0;
  const kl_metric_info *cat = kl_metric_catalog(&ncat);
  char **names = NULL;
  int rc = add_name(&names, &n, &cap, "gpu__time_duration.sum", 22);
  unsigned set = strcmp(spec, "quick") == 0      ? KL_METRIC_SET_QUICK
                 : strcmp(spec, "standard") == 0 ? KL_METRIC_SET_STANDARD
                                                 : 0;
  for (size_t i = 0; rc == 0 && set && i < ncat; i++)
    if ((cat[i].sets & set) && strcmp(cat[i].source, "cupti") == 0)
      rc = add_name(&names, &n, &cap, cat[i].ncu_name, strlen(cat[i].ncu_name));
  for (const char *p = spec; rc == 0 && !set && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *next = end ? end + 1 : p + len;
    char word[256];
    while (len && (*p == ' ' || *p == '\t'))
      p++, len--;
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
      len--;
    if (len == 0 || len >= sizeof(word)) {
      rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "--set: an empty or over-long metric name in '%s'", spec);
      break;
    }
    memcpy(word, p, len);
    word[len] = '\0';
    const kl_metric_info *m = kl_metric_find(word);
    if (m && strcmp(m->source, "cupti") == 0)
      rc = add_name(&names, &n, &cap, m->ncu_name, strlen(m->ncu_name));
    else if (m)
      rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "--set: '%s' is computed by kernlab (%s), not "
                     "collected: ask for the set it comes with",
                     word, m->source);
    else if (strstr(word, "__"))
      rc = add_name(&names, &n, &cap, word, len); /* the chip decides */
    else {
      const char *cands[256];
      size_t k = 0;
      for (size_t i = 0; i < ncat && k < 256; i++)
        cands[k++] = cat[i].name;
      const char *near = kl__suggest(word, cands, k);
      rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "--set: unknown metric '%s'%s%s%s (use quick, standard, "
                     "catalog names or CUPTI names like "
                     "dram__bytes_read.sum)",
                     word, near ? " (did you mean '" : "", near ? near : "",
                     near ? "'?)" : "");
    }
    p = next;
  }
  if (rc < 0) {
    kl__profile_names_free(names, n);
    return rc;
  }
  *out = names;
  *nout = n;
  return 0;
}

/* ---- building
 * ------------------------------------------------------------------- */

static int add_raw(kl_profile *p, const char *name, double v, size_t *cap) {
  if (KL__GROW(p->raw, *cap, p->nraw + 1) < 0) return KL_ENOMEM;
  if (!(p->raw[p->nraw].name = kl__strdup(name))) return kl__error_oom();
  p->raw[p->nraw++].value = v;
  return 0;
}

/* A recorded number as an integer field of `size` bytes: NaN is 0, the
 * rest clamped into range (a file may say anything). */
static int64_t to_int(double v, size_t size) {
  double hi = size == 4 ? 2147483647.0 : 9e18;
  if (isnan(v)) return 0;
  return (int64_t)(v < -hi ? -hi : v > hi ? hi : v);
}

static void read_kernel(kl_profile *p, json_object *k) {
  json_object *g, *b;
  kl_plugin_kernel_info *ki = &p->kernel;
  if (!k || !json_object_object_get_ex(k, "grid", &g) ||
      !json_object_object_get_ex(k, "block", &b) ||
      !json_object_is_type(g, json_type_array) ||
      !json_object_is_type(b, json_type_array) ||
      json_object_array_length(g) != 3 || json_object_array_length(b) != 3)
    return;
  for (size_t d = 0; d < 3; d++) {
    ki->grid[d] =
        to_int(json_object_get_double(json_object_array_get_idx(g, d)),
               sizeof(ki->grid[d]));
    ki->block[d] =
        to_int(json_object_get_double(json_object_array_get_idx(b, d)),
               sizeof(ki->block[d]));
  }
#define F(name)                                                                \
  ki->name =                                                                   \
      (__typeof__(ki->name))to_int(kl__json_num(k, #name), sizeof(ki->name));
  KL_KERNEL_INFO_FIELDS(F)
#undef F
  p->has_kernel = true;
}

static kl_profile *new_profile(const kl_profile_inputs *in) {
  kl_profile *p = kl__calloc(1, sizeof(*p));
  if (!p) return NULL;
  p->set = kl__strdup(in->set ? in->set : "standard");
  p->time_us = in->time_us;
  p->has_roofline = in->has_roofline;
  p->bytes = in->bytes;
  p->flops = in->flops;
  p->wall_ms = in->wall_ms;
  if (!p->set) {
    kl_profile_free(p);
    return NULL;
  }
  return p;
}

int kl__profile_unavailable(kl_profile **out, const kl_profile_inputs *in,
                            const char *backend, const char *why) {
  *out = NULL;
  kl_profile *p = new_profile(in);
  if (!p || !(p->backend = kl__strdup(backend)) ||
      !(p->note = kl__strdup(why))) {
    kl_profile_free(p);
    return kl__error_oom();
  }
  int rc = kl__profile_compute(p);
  if (rc < 0) {
    kl_profile_free(p);
    return rc;
  }
  *out = p;
  return 0;
}

/* The metrics of the main kernel: the range that ran longest. Replies and
 * recorded files alike may be malformed: every type is checked. */
static int add_range_metrics(kl_profile *p, json_object *reply,
                             const kl_profile_inputs *in, size_t *cap) {
  json_object *names, *ranges;
  if (!json_object_object_get_ex(reply, "metrics", &names) ||
      !json_object_object_get_ex(reply, "ranges", &ranges) ||
      !json_object_is_type(names, json_type_array) ||
      !json_object_is_type(ranges, json_type_array))
    return 0;
  size_t nr = json_object_array_length(ranges), best = 0;
  size_t nm = json_object_array_length(names), dur = nm;
  for (size_t i = 0; i < nm; i++) {
    const char *n = json_object_get_string(json_object_array_get_idx(names, i));
    if (n && strcmp(n, "gpu__time_duration.sum") == 0) dur = i;
  }
  double longest = -1;
  for (size_t r = 0; r < nr && dur < nm; r++) {
    json_object *row = json_object_array_get_idx(ranges, r);
    if (!json_object_is_type(row, json_type_array) ||
        json_object_array_length(row) <= dur)
      continue;
    double d = json_object_get_double(json_object_array_get_idx(row, dur));
    if (d > longest) {
      longest = d;
      best = r;
    }
  }
  p->kernels = in->kernels ? in->kernels : nr;
  json_object *vals = nr ? json_object_array_get_idx(ranges, best) : NULL;
  if (!json_object_is_type(vals, json_type_array)) return 0;
  for (size_t i = 0; i < nm; i++) {
    const char *n = json_object_get_string(json_object_array_get_idx(names, i));
    int rc;
    if (n && i < json_object_array_length(vals) &&
        (rc = add_raw(
             p, n, json_object_get_double(json_object_array_get_idx(vals, i)),
             cap)) < 0)
      return rc;
  }
  return 0;
}

/* A launch that ran several kernels: each range (kernel) as a profile of
 * its own, named, timed by its own duration, without the operator's
 * roofline; the main profile stays the longest kernel's. */
static int add_parts(kl_profile *p, json_object *reply,
                     const kl_profile_inputs *in) {
  json_object *names, *ranges, *rnames = NULL;
  if (!json_object_object_get_ex(reply, "metrics", &names) ||
      !json_object_object_get_ex(reply, "ranges", &ranges) ||
      !json_object_is_type(ranges, json_type_array) ||
      json_object_array_length(ranges) < 2)
    return 0;
  json_object_object_get_ex(reply, "range_names", &rnames);
  size_t nm = json_object_array_length(names), dur = nm;
  for (size_t i = 0; i < nm; i++) {
    const char *n = json_object_get_string(json_object_array_get_idx(names, i));
    if (n && strcmp(n, "gpu__time_duration.sum") == 0) dur = i;
  }
  for (size_t r = 0; r < json_object_array_length(ranges); r++) {
    json_object *row = json_object_array_get_idx(ranges, r);
    if (!json_object_is_type(row, json_type_array)) continue;
    json_object *sub = json_object_new_object(), *one = json_object_new_array();
    if (!sub || !one) {
      json_object_put(sub);
      json_object_put(one);
      return kl__error_oom();
    }
    const char *keys[] = {"backend", "chip", "replay", "passes"};
    for (size_t k = 0; k < KL_ARRAY_SIZE(keys); k++) {
      json_object *v;
      if (json_object_object_get_ex(reply, keys[k], &v))
        json_object_object_add(sub, keys[k], json_object_get(v));
    }
    json_object_object_add(sub, "metrics", json_object_get(names));
    json_object_array_add(one, json_object_get(row));
    json_object_object_add(sub, "ranges", one);
    kl_profile_inputs pin = {0};
    pin.set = in->set;
    pin.kernels = 1;
    if (dur < nm && dur < json_object_array_length(row))
      pin.time_us =
          json_object_get_double(json_object_array_get_idx(row, dur)) / 1e3;
    kl_profile *part = NULL;
    int rc = kl__profile_from_reply(&part, sub, &pin);
    json_object_put(sub);
    if (rc < 0) return rc;
    json_object *nm_obj = rnames && json_object_is_type(rnames, json_type_array)
                              ? json_object_array_get_idx(rnames, r)
                              : NULL;
    const char *name = json_object_is_type(nm_obj, json_type_string)
                           ? json_object_get_string(nm_obj)
                           : NULL;
    char fallback[32];
    snprintf(fallback, sizeof fallback, "kernel %zu", r + 1);
    if ((rc = kl__profile_add_part(p, part, name ? name : fallback)) < 0)
      return rc;
  }
  return 0;
}

int kl__profile_from_reply(kl_profile **out, json_object *reply,
                           const kl_profile_inputs *in) {
  *out = NULL;
  kl_profile *p = new_profile(in);
  if (!p) return kl__error_oom();
  size_t cap = 0;
  int rc;
  if ((rc = kl__json_dup(&p->backend, reply, "backend")) < 0 ||
      (rc = kl__json_dup(&p->chip, reply, "chip")) < 0 ||
      (rc = kl__json_dup(&p->replay, reply, "replay")) < 0 ||
      (rc = kl__json_dup(&p->note, reply, "note")) < 0)
    goto fail;
  json_object *tr, *events, *k;
  if (!p->note && json_object_object_get_ex(reply, "tracing_on", &tr) &&
      json_object_get_boolean(tr) &&
      !(p->note = kl__strdup("kernel tracing was on in this worker: "
                             "instruction counts include CUPTI's "
                             "instrumentation (profile before timing, as "
                             "kl_bench_run does)"))) {
    rc = kl__error_oom();
    goto fail;
  }
  int64_t passes = to_int(kl__json_num(reply, "passes"), 4);
  p->passes = passes > 0 ? (size_t)passes : 0;
  p->init_ms = kl__json_num(reply, "init_ms");
  p->config_ms = kl__json_num(reply, "config_ms");
  p->collect_ms = kl__json_num(reply, "collect_ms");
  /* newer than the rest: null (NAN) in what older workers recorded */
  if (!kl__json_number(reply, "setup_ms", &p->setup_ms)) p->setup_ms = NAN;
  if (!kl__json_number(reply, "first_pass_ms", &p->first_pass_ms))
    p->first_pass_ms = NAN;
  p->decode_ms = kl__json_num(reply, "decode_ms");
  if (!p->backend) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE, "profile: no backend");
    goto fail;
  }
  if ((rc = add_range_metrics(p, reply, in, &cap)) < 0) goto fail;
  if (json_object_object_get_ex(reply, "events", &events) &&
      json_object_is_type(events, json_type_object)) {
    json_object_object_foreach(events, key, val) {
      if ((rc = add_raw(p, key, json_object_get_double(val), &cap)) < 0)
        goto fail;
    }
  }
  if (json_object_object_get_ex(reply, "kernel", &k)) read_kernel(p, k);
  if ((rc = kl__profile_compute(p)) < 0) goto fail;
  if ((rc = add_parts(p, reply, in)) < 0) goto fail;
  *out = p;
  return 0;
fail:
  kl_profile_free(p);
  return rc;
}

/* ---- reading
 * -------------------------------------------------------------------- */

kl_bottleneck kl_profile_bottleneck(const kl_profile *p) {
  return p->bottleneck;
}
const char *kl_profile_verdict(const kl_profile *p) {
  return p->verdict;
}
const char *kl_profile_note(const kl_profile *p) {
  return p->note;
}
size_t kl_profile_passes(const kl_profile *p) {
  return p->passes;
}

int kl_profile_value(double *v, const kl_profile *p, const char *name) {
  double x = kl__profile_get(p, name);
  if (!isfinite(x)) {
    const double *r = kl__profile_raw_get(p, name);
    if (!r) return KL_ENOTFOUND;
    x = *r;
  }
  *v = x;
  return 0;
}

int kl_profile_foreach(const kl_profile *p, kl_profile_visit_fn cb, void *ud) {
  size_t ncat;
  const kl_metric_info *cat = kl_metric_catalog(&ncat);
  for (size_t i = 0; i < ncat; i++)
    if (isfinite(p->values[i])) {
      int rc = cb(&cat[i], p->values[i], ud);
      if (rc) return rc;
    }
  for (size_t i = 0; i < p->nraw; i++) {
    if (kl_metric_find(p->raw[i].name)) continue;
    if (strcmp(p->backend, "host") == 0) /* perf names are in the catalog */
      continue;
    kl_metric_info tmp = {p->raw[i].name,      p->raw[i].name, "raw", "",
                          "Raw CUPTI metric.", "cupti",        0};
    int rc = cb(&tmp, p->raw[i].value, ud);
    if (rc) return rc;
  }
  return 0;
}

static int json_num(kl_buf *b, double v) {
  return isfinite(v) ? kl__buf_printf(b, "%.10g", v) : kl__buf_puts(b, "null");
}

static int json_opt_str(kl_buf *b, const char *key, const char *v) {
  if (!v) return 0;
  kl__buf_printf(b, ",\"%s\":", key);
  return kl__buf_json_string(b, v);
}

int kl_profile_json(kl_buf *out, const kl_profile *p, unsigned flags) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "{\"set\":");
  kl__buf_json_string(&b, p->set);
  json_opt_str(&b, "backend", p->backend);
  json_opt_str(&b, "chip", p->chip);
  json_opt_str(&b, "replay", p->replay);
  kl__buf_printf(&b, ",\"passes\":%zu,\"kernels\":%zu", p->passes, p->kernels);
  kl__buf_puts(&b, ",\"time_us\":");
  json_num(&b, p->time_us > 0 ? p->time_us : NAN);
  const struct {
    const char *key;
    double ms;
  } times[] = {
      {"wall_ms", p->wall_ms},       {"init_ms", p->init_ms},
      {"config_ms", p->config_ms},   {"setup_ms", p->setup_ms},
      {"collect_ms", p->collect_ms}, {"first_pass_ms", p->first_pass_ms},
      {"decode_ms", p->decode_ms}};
  for (size_t i = 0; i < KL_ARRAY_SIZE(times); i++) {
    kl__buf_printf(&b, ",\"%s\":", times[i].key);
    json_num(&b, isfinite(times[i].ms) ? round(times[i].ms * 1e4) / 1e4
                                       : times[i].ms);
  }
  if (p->has_roofline)
    kl__buf_printf(&b, ",\"roofline\":{\"bytes\":%.17g,\"flops\":%.17g}",
                   p->bytes, p->flops);
  kl__buf_printf(&b, ",\"bottleneck\":\"%s\"",
                 kl_bottleneck_name(p->bottleneck));
  json_opt_str(&b, "verdict", p->verdict);
  json_opt_str(&b, "occupancy_limiter", p->limiter);
  json_opt_str(&b, "note", p->note);
  if (p->has_kernel) {
    const kl_plugin_kernel_info *k = &p->kernel;
    kl__buf_printf(
        &b, ",\"kernel\":{\"grid\":[%lld,%lld,%lld],\"block\":[%lld,%lld,%lld]",
        (long long)k->grid[0], (long long)k->grid[1], (long long)k->grid[2],
        (long long)k->block[0], (long long)k->block[1], (long long)k->block[2]);
#define F(name) kl__buf_printf(&b, ",\"" #name "\":%lld", (long long)k->name);
    KL_KERNEL_INFO_FIELDS(F)
#undef F
    kl__buf_putc(&b, '}');
  }
  /* metrics, keyed by kernlab's names or by Nsight Compute's */
  size_t ncat;
  const kl_metric_info *cat = kl_metric_catalog(&ncat);
  bool ncu = flags & KL_PROFILE_NCU_NAMES;
  for (int pass = 0; pass < (ncu ? 2 : 1); pass++) {
    kl__buf_puts(&b, pass ? ",\"kernlab_only\":{" : ",\"metrics\":{");
    bool first = true;
    for (size_t i = 0; i < ncat; i++) {
      if (!isfinite(p->values[i])) continue;
      const char *key = cat[i].name;
      if (ncu && pass == 0 && !cat[i].ncu_name) continue;
      if (ncu && pass == 1 && cat[i].ncu_name) continue;
      if (ncu && pass == 0) key = cat[i].ncu_name;
      kl__buf_puts(&b, first ? "" : ",");
      kl__buf_json_string(&b, key);
      kl__buf_putc(&b, ':');
      json_num(&b, p->values[i]);
      first = false;
    }
    kl__buf_putc(&b, '}');
  }
  kl__buf_puts(&b, ",\"raw\":{");
  for (size_t i = 0; i < p->nraw; i++) {
    kl__buf_puts(&b, i ? "," : "");
    kl__buf_json_string(&b, p->raw[i].name);
    kl__buf_putc(&b, ':');
    json_num(&b, p->raw[i].value);
  }
  kl__buf_putc(&b, '}');
  json_opt_str(&b, "name", p->name);
  if (p->nparts) { /* every kernel of the launch, in launch order */
    kl__buf_puts(&b, ",\"parts\":[");
    for (size_t i = 0; i < p->nparts; i++) {
      kl_buf part = KL_BUF_INIT;
      int rc = kl_profile_json(&part, p->parts[i], flags);
      if (rc == 0) {
        kl__buf_puts(&b, i ? "," : "");
        kl__buf_put(&b, part.ptr, part.size);
      }
      kl_buf_dispose(&part);
      if (rc < 0) {
        kl_buf_dispose(&b);
        return rc;
      }
    }
    kl__buf_putc(&b, ']');
  }
  kl__buf_putc(&b, '}');
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}
