/* CASE/solutions.jsonl: one line per iteration, the run's commit point.
 *
 * The writer spells a kl__solution out in one ledger line; the reader
 * hands every complete line back as a kl__solution, whatever version
 * wrote it (fields a version lacks read as absent). An iteration exists
 * once its line is there: its folder's files are written before it, its
 * benchmark rows and memory line after (state.c completes those). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/json.h"
#include "records.h"

#define SOLUTION_VERSION 1

int kl__config_json(kl_buf *b, char *const *config) {
  kl__buf_putc(b, '[');
  for (size_t i = 0; config && config[i]; i++) {
    if (i) kl__buf_putc(b, ',');
    kl__buf_json_string(b, config[i]);
  }
  kl__buf_putc(b, ']');
  return kl__buf_status(b);
}

int kl__solution_write(const char *case_dir, const kl__solution *s) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_printf(&b, "{\"v\":%d,\"id\":", SOLUTION_VERSION);
  kl__buf_json_string(&b, s->id);
  kl__buf_puts(&b, ",\"parent\":");
  kl__buf_json_string(&b, s->parent);
  kl__buf_puts(&b, ",\"run\":");
  kl__buf_json_string(&b, s->run);
  kl__buf_puts(&b, ",\"case\":");
  kl__buf_json_string(&b, s->case_name);
  kl__buf_printf(&b, ",\"iteration\":%d,\"proposer\":", s->iteration);
  kl__buf_json_string(&b, s->proposer);
  kl__buf_puts(&b, ",\"source_sha256\":");
  kl__buf_json_string(&b, s->source_sha256);
  kl__buf_puts(&b, ",\"key\":");
  kl__buf_json_string(&b, s->key);
  kl__buf_puts(&b, ",\"config\":");
  kl__config_json(&b, s->config);
  kl__buf_printf(
      &b, ",\"verdict\":\"%s\",\"reason\":", kl_outcome_name(s->outcome));
  kl__buf_json_string(&b, s->reason);
  kl__buf_puts(&b, ",\"gate\":");
  kl__buf_json_string(&b, s->gate);
  if (s->timed)
    kl__buf_printf(&b,
                   ",\"speedup\":%.6g,\"speedup_ci\":[%.6g,%.6g],"
                   "\"log_vs_baseline\":%.6g",
                   s->vs_parent.speedup, s->vs_parent.ci_low,
                   s->vs_parent.ci_high, s->log_vs_baseline);
  else
    kl__buf_puts(&b, ",\"speedup\":null,\"speedup_ci\":null");
  if (s->has_vs_baseline)
    kl__buf_printf(&b,
                   ",\"vs_baseline\":{\"speedup\":%.6g,\"ci\":[%.6g,"
                   "%.6g],\"method\":\"%s\"}",
                   s->vs_baseline.speedup, s->vs_baseline.ci_low,
                   s->vs_baseline.ci_high, s->method ? s->method : "direct");
  kl__buf_puts(&b, ",\"memo\":");
  kl__buf_json_string(&b, s->memo);
  kl__buf_puts(&b, ",\"evidence\":{\"dir\":");
  kl__buf_json_string(&b, s->dir);
  kl__buf_puts(&b, ",\"kernel\":");
  kl__buf_json_string(&b, s->kernel);
  if (s->diff) kl__buf_puts(&b, ",\"diff\":\"kernel.diff\"");
  if (s->prompt) kl__buf_puts(&b, ",\"prompt\":\"prompt.txt\"");
  if (s->reply) kl__buf_puts(&b, ",\"reply\":\"reply.txt\"");
  if (s->compile_log) kl__buf_puts(&b, ",\"compile_log\":\"compile.log\"");
  if (s->profile)
    kl__buf_puts(&b, ",\"profile\":\"profile.json\","
                     "\"rules\":\"rules.json\"");
  kl__buf_puts(&b, ",\"verdict\":\"verdict.json\",\"report\":"
                   "\"report.json\"}");
  kl__buf_puts(&b, ",\"environment\":");
  kl__buf_puts(&b, s->environment ? s->environment : "null");
  kl__buf_puts(&b, ",\"ran_on\":");
  kl__buf_puts(&b, s->ran_on ? s->ran_on : "null");
  if (s->measurement) { /* how its numbers were obtained (timed lines) */
    kl__buf_puts(&b, ",\"measurement\":");
    kl__buf_puts(&b, s->measurement);
  }
  kl__buf_printf(&b, ",\"rechecked\":%s", s->rechecked ? "true" : "false");
  kl__buf_printf(&b,
                 ",\"cost\":{\"wall_s\":%.3f,\"worker_s\":%.3f,"
                 "\"usd\":%.6f,\"tokens_in\":%llu,\"tokens_out\":%llu},"
                 "\"time\":%lld}",
                 s->cost.wall_s, s->cost.worker_s, s->cost.usd,
                 (unsigned long long)s->cost.tokens_in,
                 (unsigned long long)s->cost.tokens_out, s->time);
  char *path = NULL;
  int rc = kl__buf_status(&b);
  if (rc == 0)
    rc = (path = kl__path_join(case_dir, "solutions.jsonl"))
             ? kl__ledger_append(path, b.ptr, NULL)
             : kl__error_oom();
  kl__free(path);
  kl_buf_dispose(&b);
  return rc;
}

/* ---- reading ----------------------------------------------------------------
 */

char **kl__config_from_json(json_object *arr) {
  size_t n = arr && json_object_is_type(arr, json_type_array)
                 ? json_object_array_length(arr)
                 : 0;
  char **out = kl__calloc(n + 1, sizeof(*out));
  for (size_t i = 0; out && i < n; i++)
    if (!(out[i] = kl__strdup(
              json_object_get_string(json_object_array_get_idx(arr, i))))) {
      kl__strv_free(out);
      return NULL;
    }
  return out;
}

static bool speedup_of(json_object *o, const char *num, const char *ci,
                       kl_speedup *out) {
  double lo = 0, hi = 0;
  memset(out, 0, sizeof(*out));
  if (!kl__json_number(o, num, &out->speedup)) return false;
  if (kl__json_pair(o, ci, &lo, &hi)) {
    out->ci_low = lo;
    out->ci_high = hi;
  }
  return true;
}

/* A parsed line as a kl__solution (strings borrowed from rec; *config
 * allocated, the caller frees it). */
static int parse(kl__solution *s, char ***config, json_object *rec) {
  memset(s, 0, sizeof(*s));
  double d;
  s->id = kl__json_text(rec, "id");
  s->parent = kl__json_text(rec, "parent");
  s->run = kl__json_text(rec, "run");
  s->case_name = kl__json_text(rec, "case");
  s->proposer = kl__json_text(rec, "proposer");
  s->iteration = kl__json_number(rec, "iteration", &d) ? (int)d : -1;
  s->source_sha256 = kl__json_text(rec, "source_sha256");
  s->key = kl__json_text(rec, "key");
  if (!(*config = kl__config_from_json(kl__json_get(rec, "config"))))
    return kl__error_oom();
  s->config = *config;
  s->outcome = kl__outcome_from_name(kl__json_text(rec, "verdict"));
  s->reason = kl__json_text(rec, "reason");
  s->gate = kl__json_text(rec, "gate");
  s->memo = kl__json_text(rec, "memo");
  s->timed = speedup_of(rec, "speedup", "speedup_ci", &s->vs_parent);
  kl__json_number(rec, "log_vs_baseline", &s->log_vs_baseline);
  json_object *vb = kl__json_get(rec, "vs_baseline");
  s->has_vs_baseline = speedup_of(vb, "speedup", "ci", &s->vs_baseline);
  s->method = kl__json_text(vb, "method");
  json_object *ev = kl__json_get(rec, "evidence");
  s->dir = kl__json_text(ev, "dir");
  s->kernel = kl__json_text(ev, "kernel");
  s->diff = kl__json_get(ev, "diff") != NULL;
  s->prompt = kl__json_get(ev, "prompt") != NULL;
  s->reply = kl__json_get(ev, "reply") != NULL;
  s->compile_log = kl__json_get(ev, "compile_log") != NULL;
  s->profile = kl__json_get(ev, "profile") != NULL;
  json_object *env = kl__json_get(rec, "environment");
  s->environment =
      env && json_object_is_type(env, json_type_object)
          ? json_object_to_json_string_ext(env, JSON_C_TO_STRING_PLAIN)
          : NULL;
  json_object *on = kl__json_get(rec, "ran_on");
  s->ran_on = on && json_object_is_type(on, json_type_object)
                  ? json_object_to_json_string_ext(on, JSON_C_TO_STRING_PLAIN)
                  : NULL;
  json_object *m = kl__json_get(rec, "measurement");
  s->measurement =
      m && json_object_is_type(m, json_type_object)
          ? json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN)
          : NULL;
  json_object *v = kl__json_get(rec, "rechecked");
  s->rechecked = v && json_object_get_boolean(v);
  json_object *cost = kl__json_get(rec, "cost");
  kl__json_number(cost, "wall_s", &s->cost.wall_s);
  kl__json_number(cost, "worker_s", &s->cost.worker_s);
  kl__json_number(cost, "usd", &s->cost.usd);
  if (kl__json_number(cost, "tokens_in", &d)) s->cost.tokens_in = (uint64_t)d;
  if (kl__json_number(cost, "tokens_out", &d)) s->cost.tokens_out = (uint64_t)d;
  if (kl__json_number(rec, "time", &d)) s->time = (long long)d;
  return 0;
}

typedef struct relay {
  kl__solution_fn fn;
  void *payload;
} relay;

static int relay_line(json_object *rec, int line, void *payload) {
  relay *r = payload;
  kl__solution s;
  char **config = NULL;
  int rc = parse(&s, &config, rec);
  if (rc == 0) rc = r->fn(&s, line, r->payload);
  kl__strv_free(config);
  return rc;
}

int kl__solutions_read(const char *case_dir, kl__solution_fn fn,
                       void *payload) {
  char *path = kl__path_join(case_dir, "solutions.jsonl");
  if (!path) return kl__error_oom();
  relay r = {fn, payload};
  int rc = kl__ledger_read(path, relay_line, &r);
  kl__free(path);
  return rc;
}

/* ---- the best of a case
 * ------------------------------------------------------ */

int kl__kernel_with_settings(kl_buf *out, const char *source,
                             char *const *config, bool defines) {
  if (!defines) /* a command case's file: its settings go by environment */
    return kl__buf_puts(out, source);
  if (config && config[0])
    kl__buf_puts(out, "/* kernlab: the tunable settings this kernel "
                      "was measured with */\n");
  for (size_t i = 0; config && config[i]; i++) {
    const char *eq = strchr(config[i], '=');
    if (eq)
      kl__buf_printf(out, "#define %.*s %s\n", (int)(eq - config[i]), config[i],
                     eq + 1);
  }
  kl__buf_puts(out, source);
  return kl__buf_status(out);
}

/* The accepted line with the largest speedup over its baseline, kept. */
typedef struct best_acc {
  double log_best;
  json_object *rec;
} best_acc;

static int best_line(json_object *rec, int line, void *payload) {
  (void)line;
  best_acc *a = payload;
  kl__solution s;
  char **config = NULL;
  int rc = parse(&s, &config, rec);
  kl__strv_free(config);
  if (rc < 0) return rc;
  if (s.outcome != KL_OUTCOME_ACCEPTED || !s.has_vs_baseline || !s.dir ||
      !s.kernel || s.vs_baseline.speedup <= 0 ||
      (a->rec && log(s.vs_baseline.speedup) <= a->log_best))
    return 0;
  json_object_put(a->rec);
  a->rec = json_object_get(rec);
  a->log_best = log(s.vs_baseline.speedup);
  return 0;
}

int kl__solution_best(const char *case_dir, const char *case_name,
                      kl__best_fn fn, void *payload) {
  best_acc a = {0, NULL};
  kl__solution s;
  char **config = NULL;
  kl_buf text = KL_BUF_INIT, kp = KL_BUF_INIT;
  char *path = kl__path_join(case_dir, "solutions.jsonl");
  int rc = path ? kl__ledger_read(path, best_line, &a) : kl__error_oom();
  kl__free(path);
  if (rc < 0) goto done;
  if (!a.rec) {
    rc = kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                   "case '%s' has no accepted candidate yet (run kl run)",
                   case_name);
    goto done;
  }
  if ((rc = parse(&s, &config, a.rec)) < 0) goto done;
  kl__buf_printf(&kp, "%s/%s/%s", case_dir, s.dir, s.kernel);
  if ((rc = kl__buf_status(&kp)) < 0 || (rc = kl__read_file(&text, kp.ptr)) < 0)
    goto done;
  rc = fn(&s, text.ptr ? text.ptr : "",
          json_object_to_json_string_ext(
              a.rec, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
          payload);
done:
  kl__strv_free(config);
  kl_buf_dispose(&text);
  kl_buf_dispose(&kp);
  json_object_put(a.rec);
  return rc;
}
