/* The outside agent's side of `kl run --proposer agent` (kl propose, kl
 * mcp's propose tool): hand a candidate to the inbox a running (or later)
 * agent run takes its proposals from, and wait for the verdict the run
 * records for it. Both go through the records module: the inbox
 * (records/inbox.c) and solutions.jsonl (records/solutions.c); the run
 * decides, the agent only proposes. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "run_internal.h"

int kl_agent_propose(kl_buf *name, const kl_case *c, const char *source,
                     const char *memo) {
  if (!name || !c || !source || !source[0])
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_agent_propose: no candidate source");
  const char *kernel = kl_case_kernel_path(c);
  const char *dot = kernel ? strrchr(kernel, '.') : NULL;
  const char *slash = kernel ? strrchr(kernel, '/') : NULL;
  const char *ext = dot && (!slash || dot > slash) ? dot : "";
  return kl__inbox_put(name, kl_case_dir(c), source, memo, ext);
}

int kl_agent_stop(const kl_case *c) {
  if (!c)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "kl_agent_stop: no case");
  return kl__inbox_stop(kl_case_dir(c));
}

typedef struct wanted {
  const char *run;
  int iteration;
  json_object *found;
} wanted;

/* a number as the other records write it (%.6g), not json-c's %.17g */
static json_object *number(double v) {
  char text[32];
  snprintf(text, sizeof(text), "%.6g", v);
  return json_object_new_double_s(v, text);
}

static json_object *speedup_json(kl_speedup s) {
  json_object *o = json_object_new_object();
  json_object *ci = json_object_new_array();
  json_object_array_add(ci, number(s.ci_low));
  json_object_array_add(ci, number(s.ci_high));
  json_object_object_add(o, "speedup", number(s.speedup));
  json_object_object_add(o, "ci", ci);
  json_object_object_add(o, "decision",
                         json_object_new_string(kl_decision_name(s.decision)));
  return o;
}

static void add_string(json_object *o, const char *key, const char *value) {
  json_object_object_add(o, key, value ? json_object_new_string(value) : NULL);
}

static int find_line(const kl__solution *s, int line, void *payload) {
  (void)line;
  wanted *w = payload;
  if (!s->run || strcmp(s->run, w->run) != 0 || s->iteration != w->iteration)
    return 0;
  json_object *o = json_object_new_object();
  add_string(o, "id", s->id);
  add_string(o, "run", s->run);
  json_object_object_add(o, "iteration", json_object_new_int(s->iteration));
  add_string(o, "verdict", kl_outcome_name(s->outcome));
  add_string(o, "reason", s->reason);
  add_string(o, "gate", s->gate);
  add_string(o, "memo", s->memo);
  add_string(o, "parent", s->parent);
  json_object_object_add(o, "vs_parent",
                         s->timed ? speedup_json(s->vs_parent) : NULL);
  json_object_object_add(o, "vs_baseline",
                         s->has_vs_baseline ? speedup_json(s->vs_baseline)
                                            : NULL);
  add_string(o, "dir", s->dir);
  json_object_put(w->found);
  w->found = o;
  return 0;
}

int kl_agent_verdict(kl_buf *out, const kl_case *c, const char *name,
                     int timeout_ms) {
  if (!out || !c || !name || !name[0] || strchr(name, '/'))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_agent_verdict: no proposal name");
  double until = kl__now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  char *run = NULL;
  int iteration = 0, rc;
  for (;;) {
    if (!run &&
        (rc = kl__inbox_taken_by(&run, &iteration, kl_case_dir(c), name)) < 0)
      return rc;
    if (run) {
      wanted w = {run, iteration, NULL};
      if ((rc = kl__solutions_read(kl_case_dir(c), find_line, &w)) < 0) {
        json_object_put(w.found);
        kl__free(run);
        return rc;
      }
      if (w.found) {
        json_object_object_add(w.found, "name", json_object_new_string(name));
        kl_buf b = KL_BUF_INIT;
        kl__buf_puts(&b, json_object_to_json_string_ext(
                             w.found, JSON_C_TO_STRING_PLAIN |
                                          JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(w.found);
        kl__free(run);
        kl__buf_give(out, &b);
        return kl__buf_status(out);
      }
    }
    if (kl__now_ms() >= until) break;
    struct timespec pause = {0, 200 * 1000000L};
    nanosleep(&pause, NULL);
  }
  if (run)
    rc = kl__error(KL_ETIMEOUT, KL_DOMAIN_NONE,
                   "proposal %s: taken by run %s as iteration %d, not "
                   "decided yet",
                   name, run, iteration);
  else
    rc = kl__error(KL_ETIMEOUT, KL_DOMAIN_NONE,
                   "proposal %s: still in the inbox (is kl run --proposer "
                   "agent running on the case?)",
                   name);
  kl__free(run);
  return rc;
}
