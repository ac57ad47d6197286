/* Recorded metrics: profiles read back from JSON or Nsight Compute's CSV.
 *
 * Three JSON forms are accepted, told apart by their keys: a profile object
 * (kl_profile_json's output, a report's "profile"; it has "raw"), the whole
 * output of `kl profile --json` (it has "shapes"; one profile per shape),
 * and a flat object of metric values keyed by Nsight Compute or CUPTI
 * names, as other tools export them. Each becomes a kl_profile computed
 * again from its raw values, so derived values and the verdict follow this
 * version of kernlab, not the one that recorded them. An `ncu --csv`
 * export (raw or details page) is read by ncu.c, one profile per kernel.
 * Errors carry the line and column of the offending text. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "../core/json.h"
#include "profile_internal.h"

struct kl_profile_list {
  kl_profile **items;
  char **names;
  char **launches; /* ncu's ID of each kernel, or NULL */
  size_t count, cap_items, cap_names, cap_launches;
};

/* A metric value: a JSON number, or a string holding one ("71.2"). */
static bool metric_number(json_object *v, double *out) {
  if (json_object_is_type(v, json_type_double) ||
      json_object_is_type(v, json_type_int)) {
    *out = json_object_get_double(v);
    return true;
  }
  if (!json_object_is_type(v, json_type_string)) return false;
  const char *s = json_object_get_string(v);
  char *end;
  *out = strtod(s, &end);
  return end != s && *end == '\0';
}

/* The reply form kl__profile_from_reply reads: the raw values as one
 * range of a device profile, or as host events. */
static json_object *reply_from_raw(json_object *o, json_object *raw,
                                   bool host) {
  json_object *reply = json_object_new_object();
  if (o) {
    json_object_object_foreach(o, key, val) {
      if (strcmp(key, "raw") != 0)
        json_object_object_add(reply, key, json_object_get(val));
    }
  } else {
    json_object_object_add(reply, "backend", json_object_new_string("cuda"));
  }
  if (host) {
    json_object *ev = json_object_new_object();
    json_object_object_foreach(raw, rk, rv) {
      if (!json_object_is_type(rv, json_type_null))
        json_object_object_add(ev, rk, json_object_get(rv));
    }
    json_object_object_add(reply, "events", ev);
    return reply;
  }
  json_object *names = json_object_new_array(), *vals = json_object_new_array(),
              *ranges = json_object_new_array();
  json_object_object_foreach(raw, rk, rv) {
    double v = 0;
    if (!metric_number(rv, &v)) continue; /* null: not measured */
    json_object_array_add(names, json_object_new_string(rk));
    json_object_array_add(vals, json_object_new_double(v));
  }
  json_object_array_add(ranges, vals);
  json_object_object_add(reply, "metrics", names);
  json_object_object_add(reply, "ranges", ranges);
  return reply;
}

/* One profile object (it has "raw"). */
static int from_profile_object(kl_profile **out, json_object *o,
                               const char *text, const char *path) {
  json_object *raw, *roof, *v;
  *out = NULL;
  if (!json_object_object_get_ex(o, "raw", &raw) ||
      !json_object_is_type(raw, json_type_object))
    return kl__json_error_at_key(
        text, path, "raw", "%s",
        "a profile needs a \"raw\" object of metric values");
  json_object_object_foreach(raw, key, val) {
    double d;
    if (!metric_number(val, &d) && !json_object_is_type(val, json_type_null))
      return kl__json_error_at_key(text, path, key,
                                   "metric '%s' is not a number", key);
  }
  kl_profile_inputs in = {0};
  in.set = json_object_object_get_ex(o, "set", &v) ? json_object_get_string(v)
                                                   : "standard";
  in.time_us = kl__json_num(o, "time_us");
  in.wall_ms = kl__json_num(o, "wall_ms");
  double kernels = kl__json_num(o, "kernels"); /* a file may say anything */
  in.kernels = kernels >= 1 && kernels < 1e9 ? (size_t)kernels : 0;
  if (json_object_object_get_ex(o, "roofline", &roof)) {
    in.has_roofline = true;
    in.bytes = kl__json_num(roof, "bytes");
    in.flops = kl__json_num(roof, "flops");
  }
  bool host = json_object_object_get_ex(o, "backend", &v) &&
              json_object_is_type(v, json_type_string) &&
              strcmp(json_object_get_string(v), "host") == 0;
  json_object *reply = reply_from_raw(o, raw, host);
  int rc = reply ? kl__profile_from_reply(out, reply, &in) : kl__error_oom();
  json_object_put(reply);
  json_object *parts; /* every kernel of a launch that ran several */
  if (rc == 0 && json_object_object_get_ex(o, "parts", &parts) &&
      json_object_is_type(parts, json_type_array)) {
    for (size_t i = 0; rc == 0 && i < json_object_array_length(parts); i++) {
      json_object *po = json_object_array_get_idx(parts, i), *nm;
      if (!json_object_is_type(po, json_type_object)) continue;
      kl_profile *part = NULL;
      if (json_object_object_get_ex(po, "parts", &nm)) continue; /* 1 level */
      if ((rc = from_profile_object(&part, po, text, path)) < 0) break;
      const char *name = json_object_object_get_ex(po, "name", &nm) &&
                                 json_object_is_type(nm, json_type_string)
                             ? json_object_get_string(nm)
                             : NULL;
      rc = kl__profile_add_part(*out, part, name);
    }
    if (rc < 0) {
      kl_profile_free(*out);
      *out = NULL;
    }
  }
  return rc;
}

/* A flat object of metric values ({"dram__bytes_read.sum": 1.2e9, ...}). */
static int from_flat_object(kl_profile **out, json_object *o, const char *text,
                            const char *path) {
  *out = NULL;
  if (json_object_object_length(o) == 0)
    return kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, path, 1, 1, NULL,
                        "no metrics: expected a profile, the output of "
                        "`kl profile --json`, or {\"<metric name>\": value, "
                        "...}");
  json_object_object_foreach(o, key, val) {
    double d;
    if (!metric_number(val, &d))
      return kl__json_error_at_key(
          text, path, key,
          "metric '%s' is not a number (a flat object maps "
          "metric names to values)",
          key);
  }
  kl_profile_inputs in = {0};
  in.set = "recorded";
  json_object *reply = reply_from_raw(NULL, o, false);
  int rc = reply ? kl__profile_from_reply(out, reply, &in) : kl__error_oom();
  json_object_put(reply);
  return rc;
}

int kl_profile_from_json(kl_profile **out, const char *json, const char *path) {
  json_object *o;
  *out = NULL;
  int rc = kl__json_parse(&o, json, path, "recorded metrics");
  if (rc < 0) return rc;
  rc = from_profile_object(out, o, json, path);
  json_object_put(o);
  return rc;
}

void kl_profile_list_free(kl_profile_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->count; i++) {
    kl_profile_free(l->items[i]);
    kl__free(l->names[i]);
    kl__free(l->launches[i]);
  }
  kl__free(l->items);
  kl__free(l->names);
  kl__free(l->launches);
  kl__free(l);
}

/* Takes p, name and launch (freed on failure). */
static int list_take(kl_profile_list *l, kl_profile *p, char *name,
                     char *launch) {
  if (KL__GROW(l->items, l->cap_items, l->count + 1) < 0 ||
      KL__GROW(l->names, l->cap_names, l->count + 1) < 0 ||
      KL__GROW(l->launches, l->cap_launches, l->count + 1) < 0) {
    kl__free(name);
    kl__free(launch);
    kl_profile_free(p);
    return kl__error_oom();
  }
  l->items[l->count] = p;
  l->launches[l->count] = launch;
  l->names[l->count++] = name;
  return 0;
}

static int list_add(kl_profile_list *l, kl_profile *p, const char *name) {
  char *copy = name ? kl__strdup(name) : NULL;
  if (name && !copy) {
    kl_profile_free(p);
    return kl__error_oom();
  }
  return list_take(l, p, copy, NULL);
}

/* `kl profile --json`: {"shapes":[{"name":..,"profile":{..}}, ...]} */
static int from_report(kl_profile_list *l, json_object *shapes,
                       const char *text, const char *path) {
  if (!json_object_is_type(shapes, json_type_array))
    return kl__json_error_at_key(text, path, "shapes", "%s",
                                 "\"shapes\" must be a list of shapes");
  for (size_t i = 0; i < json_object_array_length(shapes); i++) {
    json_object *s = json_object_array_get_idx(shapes, i), *prof, *name;
    if (!json_object_is_type(s, json_type_object) ||
        !json_object_object_get_ex(s, "profile", &prof))
      continue;
    if (!json_object_is_type(prof, json_type_object))
      return kl__json_error_at_key(text, path, "profile", "%s",
                                   "a shape's \"profile\" must be an object");
    kl_profile *p;
    int rc = from_profile_object(&p, prof, text, path);
    if (rc < 0) return rc;
    bool named = json_object_object_get_ex(s, "name", &name) &&
                 json_object_is_type(name, json_type_string);
    if ((rc = list_add(l, p, named ? json_object_get_string(name) : NULL)) < 0)
      return rc;
  }
  if (l->count == 0)
    return kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, path, 1, 1, NULL,
                        "this report holds no profiles (was it made by "
                        "`kl profile --json`?)");
  return 0;
}

/* An Nsight Compute CSV export: one profile per kernel, named by it. */
static int from_ncu_csv(kl_profile_list *l, const char *text,
                        const char *path) {
  kl_profile **ps;
  char **names, **ids;
  size_t n;
  int rc = kl__ncu_csv_read(&ps, &names, &ids, &n, text, path);
  if (rc < 0) return rc;
  size_t i = 0;
  for (; rc == 0 && i < n; i++)
    rc = list_take(l, ps[i], names[i], ids[i]);
  for (; i < n; i++) { /* what a failed take left */
    kl_profile_free(ps[i]);
    kl__free(names[i]);
    kl__free(ids[i]);
  }
  kl__free(ps);
  kl__free(names);
  kl__free(ids);
  return rc;
}

int kl_profile_list_from_text(kl_profile_list **out, const char *text,
                              const char *path) {
  if (!kl__ncu_csv_sniff(text))
    return kl_profile_list_from_json(out, text, path);
  *out = NULL;
  kl_profile_list *l = kl__calloc(1, sizeof(*l));
  if (!l) return kl__error_oom();
  int rc = from_ncu_csv(l, text, path);
  if (rc < 0) {
    kl_profile_list_free(l);
    return rc;
  }
  *out = l;
  return 0;
}

/* `ncu --import REPORT --csv ...`'s output, or KL_ENOTFOUND without ncu
 * (the error says so) and KL_EINVALID when ncu refuses the report. */
static int ncu_import(kl_buf *out, const char *report, const char *page,
                      const char *extra, const char *extra_value) {
  const char *argv[] = {"ncu", "--import", report,      "--csv", "--page",
                        page,  extra,      extra_value, NULL};
  kl__run_result res = {0};
  kl__run_extras io = {0};
  kl_buf errors = KL_BUF_INIT;
  io.errors = &errors;
  int rc = kl__run_io(&res, argv, NULL, 600000, (size_t)1 << 30, &io);
  if (rc == KL_ENOTFOUND)
    rc = kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                   "%s: reading an .ncu-rep takes Nsight Compute's ncu "
                   "(ncu --import), which is not on PATH; export it where "
                   "ncu is installed: ncu --import %s --csv --page details "
                   "--print-details all > report.csv",
                   report, report);
  else if (rc == 0 && (res.exit_code != 0 || res.output.size == 0))
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                   "%s: ncu --import failed (exit %d): %.300s", report,
                   res.exit_code, errors.ptr ? errors.ptr : "");
  if (rc == 0) kl__buf_give(out, &res.output);
  kl_buf_dispose(&res.output);
  kl_buf_dispose(&errors);
  return rc;
}

/* An .ncu-rep: its raw page in base units for the values, its details
 * page for ncu's rule results, joined by kernel ID. */
static int from_ncu_report(kl_profile_list **out, const char *path) {
  kl_buf raw = KL_BUF_INIT, details = KL_BUF_INIT;
  kl_profile_list *l = NULL, *d = NULL;
  int rc = ncu_import(&raw, path, "raw", "--print-units", "base");
  if (rc == 0) rc = ncu_import(&details, path, "details", NULL, NULL);
  if (rc == 0) rc = kl_profile_list_from_text(&l, raw.ptr, path);
  if (rc == 0) rc = kl_profile_list_from_text(&d, details.ptr, path);
  for (size_t i = 0; rc == 0 && i < l->count; i++)
    for (size_t j = 0; rc == 0 && j < d->count; j++) {
      if (!l->launches[i] || !d->launches[j] ||
          strcmp(l->launches[i], d->launches[j]) != 0)
        continue;
      for (size_t a = 0; rc == 0 && a < kl_profile_advice_count(d->items[j]);
           a++)
        rc = kl__profile_add_advice(l->items[i],
                                    kl_profile_advice(d->items[j], a));
    }
  kl_buf_dispose(&raw);
  kl_buf_dispose(&details);
  kl_profile_list_free(d);
  if (rc < 0) {
    kl_profile_list_free(l);
    l = NULL;
  }
  *out = l;
  return rc;
}

static bool ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), t = strlen(tail);
  return n >= t && strcmp(s + n - t, tail) == 0;
}

int kl_profile_list_read(kl_profile_list **out, const char *path) {
  *out = NULL;
  if (ends_with(path, ".ncu-rep")) return from_ncu_report(out, path);
  kl_buf text = KL_BUF_INIT;
  int rc = kl__read_file(&text, path);
  if (rc == 0)
    rc = kl_profile_list_from_text(out, text.ptr ? text.ptr : "", path);
  kl_buf_dispose(&text);
  return rc;
}

int kl_profile_list_from_json(kl_profile_list **out, const char *json,
                              const char *path) {
  *out = NULL;
  json_object *o, *v;
  int rc = kl__json_parse(&o, json, path, "recorded metrics");
  if (rc < 0) return rc;
  kl_profile_list *l = kl__calloc(1, sizeof(*l));
  if (!l) {
    json_object_put(o);
    return kl__error_oom();
  }
  kl_profile *p = NULL;
  if (json_object_object_get_ex(o, "shapes", &v))
    rc = from_report(l, v, json, path);
  else if (json_object_object_get_ex(o, "raw", &v))
    rc = from_profile_object(&p, o, json, path);
  else
    rc = from_flat_object(&p, o, json, path);
  if (rc == 0 && p) rc = list_add(l, p, NULL);
  json_object_put(o);
  if (rc < 0) {
    kl_profile_list_free(l);
    return rc;
  }
  *out = l;
  return 0;
}

size_t kl_profile_list_count(const kl_profile_list *l) {
  return l->count;
}

kl_profile *kl__profile_list_take(kl_profile_list *l, size_t i) {
  kl_profile *p = i < l->count ? l->items[i] : NULL;
  if (p) l->items[i] = NULL;
  return p;
}

const kl_profile *kl_profile_list_get(const kl_profile_list *l, size_t i) {
  return i < l->count ? l->items[i] : NULL;
}

const char *kl_profile_list_name(const kl_profile_list *l, size_t i) {
  return i < l->count ? l->names[i] : NULL;
}

int kl_profile_list_set_roofline(kl_profile_list *l, size_t i, double bytes,
                                 double flops) {
  if (i >= l->count || !l->items[i])
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no profile %zu (of %zu)", i,
                     l->count);
  return kl__profile_set_roofline(l->items[i], bytes, flops);
}

const char *kl_profile_list_launch(const kl_profile_list *l, size_t i) {
  return i < l->count ? l->launches[i] : NULL;
}
