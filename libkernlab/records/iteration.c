/* An iteration's folder and the files in it.
 *
 * Nothing is overwritten: files go in with O_EXCL, and a folder a killed
 * run left half-written is set aside (iter_NNN.aborted-K) before the
 * iteration is done again. verdict.json and proposal.json are spelled
 * here; the others (kernel, diff, prompt, reply, report, profile, rules,
 * compile log) are texts their producers hand over whole. */
#include <stdio.h>
#include <string.h>

#include "../core/json.h"
#include "records.h"

#define VERDICT_VERSION 1
#define PROPOSAL_VERSION 1

int kl__iteration_dir(char **out, const char *run_dir, int iteration) {
  *out = NULL;
  kl_buf b = KL_BUF_INIT;
  if (kl__buf_printf(&b, "%s/iter_%03d", run_dir, iteration) < 0)
    return kl__error_oom();
  /* a folder from a killed attempt at this iteration: keep it, aside */
  for (int k = 1; kl__is_dir(b.ptr) && k < 1000; k++) {
    kl_buf aside = KL_BUF_INIT;
    if (kl__buf_printf(&aside, "%s.aborted-%d", b.ptr, k) < 0) {
      kl_buf_dispose(&b);
      return kl__error_oom();
    }
    int rc = kl__is_dir(aside.ptr) ? 0 : kl__record_rename(b.ptr, aside.ptr);
    kl_buf_dispose(&aside);
    if (rc < 0) {
      kl_buf_dispose(&b);
      return rc;
    }
  }
  int rc = kl__record_mkdir(b.ptr);
  if (rc < 0) {
    kl_buf_dispose(&b);
    return rc;
  }
  *out = kl__buf_detach(&b);
  return *out ? 0 : kl__error_oom();
}

int kl__iteration_write(const char *dir, const char *name, const char *text) {
  char *path = kl__path_join(dir, name);
  if (!path) return kl__error_oom();
  int rc = kl__record_new_file(path, text, strlen(text));
  kl__free(path);
  return rc;
}

int kl__iteration_read(kl_buf *out, const char *run_dir, int iteration,
                       const char *name) {
  kl_buf path = KL_BUF_INIT;
  if (kl__buf_printf(&path, "%s/iter_%03d/%s", run_dir, iteration, name) < 0)
    return kl__error_oom();
  int rc = kl__read_file(out, path.ptr);
  kl_buf_dispose(&path);
  return rc;
}

int kl__record_json_read(json_object **out, const char *dir, const char *name) {
  *out = NULL;
  char *path = kl__path_join(dir, name);
  if (!path) return kl__error_oom();
  int rc = 0;
  kl_buf t = KL_BUF_INIT;
  if (kl__is_file(path) && (rc = kl__read_file(&t, path)) == 0) {
    enum json_tokener_error jerr; /* any JSON value: rules.json is a list */
    *out = json_tokener_parse_verbose(t.ptr ? t.ptr : "", &jerr);
    if (!*out)
      rc = kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, path, 1, 1, NULL, "%s",
                        json_tokener_error_desc(jerr));
  }
  kl_buf_dispose(&t);
  kl__free(path);
  return rc;
}

int kl__verdict_write(const char *dir, const kl__verdict *v) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_printf(&b,
                 "{\"v\":%d,\"iteration\":%d,\"verdict\":\"%s\","
                 "\"reason\":",
                 VERDICT_VERSION, v->iteration, kl_outcome_name(v->outcome));
  kl__buf_json_string(&b, v->reason);
  kl__buf_puts(&b, ",\"gate\":");
  kl__buf_json_string(&b, v->gate);
  kl__buf_puts(&b, ",\"gates\":{\"poison\":\"applied\",\"inputs_written\":"
                   "\"applied\",\"fresh_seeds\":\"applied\","
                   "\"other_streams\":\"");
  kl__buf_puts(&b, v->device ? "applied (CUPTI sees every stream)"
                             : "not applicable (host)");
  kl__buf_puts(&b, "\",\"work_after_return\":\"applied\","
                   "\"stale_outputs\":\"applied\","
                   "\"faster_than_roofline\":\"");
  kl__buf_puts(&b, v->roofline ? "applied"
                               : "not applicable: the case gives no "
                                 "roofline bytes");
  kl__buf_puts(&b, "\",\"elisions_and_stubs\":\"");
  kl__buf_puts(&b, v->reply ? "applied (reply parser)"
                            : "not applicable (no reply)");
  kl__buf_puts(&b, "\"}");
  if (v->timed)
    kl__buf_printf(&b,
                   ",\"speedup\":%.6g,\"speedup_ci\":[%.6g,%.6g],"
                   "\"min_gain_pct\":%g",
                   v->vs_parent.speedup, v->vs_parent.ci_low,
                   v->vs_parent.ci_high, v->min_gain_pct);
  kl__buf_puts(&b, ",\"memo\":");
  kl__buf_json_string(&b, v->memo);
  kl__buf_puts(&b, ",\"parent\":");
  kl__buf_json_string(&b, v->parent);
  kl__buf_printf(
      &b, ",\"rechecked\":%s,\"ran_on\":", v->rechecked ? "true" : "false");
  kl__buf_puts(&b, v->ran_on ? v->ran_on : "null");
  kl__buf_puts(&b, "}\n");
  int rc = kl__buf_status(&b);
  if (rc == 0) rc = kl__iteration_write(dir, "verdict.json", b.ptr);
  kl_buf_dispose(&b);
  return rc;
}

int kl__proposal_write(const char *dir, const kl__proposal_file *p) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_printf(&b,
                 "{\"v\":%d,\"iteration\":%d,\"proposer\":", PROPOSAL_VERSION,
                 p->iteration);
  kl__buf_json_string(&b, p->proposer);
  kl__buf_puts(&b, ",\"parent\":");
  kl__buf_json_string(&b, p->parent);
  kl__buf_puts(&b, ",\"memo\":");
  kl__buf_json_string(&b, p->memo);
  kl__buf_puts(&b, ",\"config\":");
  kl__config_json(&b, p->config);
  kl__buf_puts(&b, ",\"invalid\":");
  kl__buf_json_string(&b, p->invalid);
  kl__buf_puts(&b, "}\n");
  int rc = kl__buf_status(&b);
  if (rc == 0) rc = kl__iteration_write(dir, "proposal.json", b.ptr);
  kl_buf_dispose(&b);
  if (rc < 0 ||
      (p->prompt &&
       (rc = kl__iteration_write(dir, "prompt.txt", p->prompt)) < 0) ||
      (p->reply && (rc = kl__iteration_write(dir, "reply.txt", p->reply)) < 0))
    return rc;
  return 0;
}

void kl__recorded_dispose(kl__recorded_proposal *p) {
  kl__free(p->memo);
  kl__free(p->reply);
  kl__free(p->kernel);
  json_object_put(p->config);
  memset(p, 0, sizeof(*p));
}

int kl__recorded_proposal_read(kl__recorded_proposal *out, const char *run_dir,
                               int iteration, const char *kernel_ext) {
  memset(out, 0, sizeof(*out));
  kl_buf dir = KL_BUF_INIT, path = KL_BUF_INIT, text = KL_BUF_INIT;
  if (kl__buf_printf(&dir, "%s/iter_%03d", run_dir, iteration) < 0)
    return kl__error_oom();
  if (!kl__is_dir(dir.ptr)) {
    kl_buf_dispose(&dir);
    return 1; /* the recording has nothing more */
  }
  json_object *prop = NULL, *v;
  int rc = 0;
  if (kl__buf_printf(&path, "%s/proposal.json", dir.ptr) < 0 ||
      (rc = kl__read_file(&text, path.ptr)) < 0) {
    rc = kl__buf_status(&path) < 0 ? kl__error_oom() : rc;
    goto done;
  }
  if (!(prop = json_tokener_parse(text.ptr ? text.ptr : ""))) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE, "%s: not JSON", path.ptr);
    goto done;
  }
  if (json_object_object_get_ex(prop, "config", &v) &&
      json_object_is_type(v, json_type_array))
    out->config = json_object_get(v);
  if (json_object_object_get_ex(prop, "memo", &v) &&
      !(out->memo = kl__strdup(json_object_get_string(v)))) {
    rc = kl__error_oom();
    goto done;
  }
  /* the model's reply when it had one, else the kernel it measured */
  kl_buf_dispose(&path);
  if (kl__buf_printf(&path, "%s/reply.txt", dir.ptr) < 0) {
    rc = kl__error_oom();
    goto done;
  }
  char **into = &out->reply;
  if (!kl__is_file(path.ptr)) {
    kl_buf_dispose(&path);
    if (kl__buf_printf(&path, "%s/kernel.%s", dir.ptr, kernel_ext) < 0) {
      rc = kl__error_oom();
      goto done;
    }
    into = &out->kernel;
  }
  kl_buf_dispose(&text);
  if ((rc = kl__read_file(&text, path.ptr)) == 0 &&
      !(*into = text.ptr ? kl__buf_detach(&text) : kl__strdup("")))
    rc = kl__error_oom();
done:
  json_object_put(prop);
  kl_buf_dispose(&dir);
  kl_buf_dispose(&path);
  kl_buf_dispose(&text);
  if (rc < 0) kl__recorded_dispose(out);
  return rc;
}

/* The ids of the rules that fired at any shape of an iteration's
 * rules.json ([{"shape", "diagnosis": {"fired": [{"id"}, ...]}}, ...]),
 * each once, in the order first seen. */
int kl__iteration_fired(char ***ids, const char *run_dir, int iteration) {
  *ids = NULL;
  kl_buf t = KL_BUF_INIT;
  json_object *doc = NULL;
  char **v = kl__calloc(1, sizeof(*v));
  size_t n = 0;
  int rc = v ? 0 : kl__error_oom();
  if (rc == 0 && kl__iteration_read(&t, run_dir, iteration, "rules.json") < 0)
    kl_error_clear(); /* not profiled: no rule fired */
  else if (rc == 0 && !(doc = json_tokener_parse(t.ptr ? t.ptr : "")))
    rc = kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, "rules.json", 1, 1, NULL,
                      "iteration %d's rules.json does not parse", iteration);
  size_t ns = json_object_is_type(doc, json_type_array)
                  ? json_object_array_length(doc)
                  : 0;
  for (size_t i = 0; rc == 0 && i < ns; i++) {
    json_object *f = kl__json_get(
        kl__json_get(json_object_array_get_idx(doc, i), "diagnosis"), "fired");
    size_t nf = json_object_is_type(f, json_type_array)
                    ? json_object_array_length(f)
                    : 0;
    for (size_t j = 0; rc == 0 && j < nf; j++) {
      const char *id = kl__json_text(json_object_array_get_idx(f, j), "id");
      bool seen = !id;
      for (size_t k = 0; !seen && k < n; k++)
        seen = strcmp(v[k], id) == 0;
      if (seen) continue;
      char **g = kl__realloc(v, (n + 2) * sizeof(*v));
      if (!g || !(g[n] = kl__strdup(id))) {
        if (g) v = g;
        rc = kl__error_oom();
        break;
      }
      v = g;
      v[++n] = NULL;
    }
  }
  json_object_put(doc);
  kl_buf_dispose(&t);
  if (rc < 0) {
    kl__strv_free(v);
    return rc;
  }
  *ids = v;
  return 0;
}
