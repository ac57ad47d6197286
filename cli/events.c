/* --json-events: what a verb is doing, as one JSON object a line on
 * stderr, for a program that follows it (an MCP server's progress, a CI
 * log, a dashboard). stdout keeps the verb's own output (its text, or its
 * --json document), so the two never mix; kl's own messages on stderr
 * start with "kl:", an event always with '{'. The events come from the
 * library's callbacks (kl_bench_options.on_phase, kl_run_options.on_event)
 * and, once a bench has its report, one "shape" event per shape and one
 * "verdict" event. docs/json.md lists the fields. Lines are written whole
 * under stderr's lock: a run's executor threads may report at once. */
#include <string.h>
#include <time.h>

#include "cli.h"

static struct timespec started;

static double seconds_since_start(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - started.tv_sec) +
         (double)(now.tv_nsec - started.tv_nsec) / 1e9;
}

void cli_events_begin(void) {
  clock_gettime(CLOCK_MONOTONIC, &started);
}

/* `{"event":"NAME","verb":"VERB","t":S` — the caller adds its fields and
 * ends the line with cli_event_end */
static void event_start(const char *name, const char *verb) {
  flockfile(stderr);
  fprintf(stderr, "{\"event\":\"%s\",\"verb\":", name);
  cli_json_string(stderr, verb);
  fprintf(stderr, ",\"t\":%.3f", seconds_since_start());
}

static void event_end(void) {
  fputs("}\n", stderr);
  fflush(stderr);
  funlockfile(stderr);
}

static void field_string(const char *key, const char *value) {
  if (!value) return;
  fprintf(stderr, ",\"%s\":", key);
  cli_json_string(stderr, value);
}

void cli_events_phase(const char *phase, void *verb) {
  event_start("phase", verb);
  field_string("phase", phase);
  event_end();
}

void cli_events_report(const char *verb, const kl_report *r, bool compare) {
  for (size_t i = 0; i < kl_report_shape_count(r); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    if (kl_report_shape(&s, r, i) < 0) continue;
    event_start("shape", verb);
    field_string("shape", s.name);
    fprintf(stderr, ",\"checked\":%s,\"correct\":%s,\"timed\":%s",
            s.checked ? "true" : "false", s.correct ? "true" : "false",
            s.timed ? "true" : "false");
    if (s.timed) {
      fprintf(stderr, ",\"samples\":%zu,\"median\":%.6g", s.time.n,
              s.time.median);
      if (compare)
        fprintf(stderr, ",\"speedup\":%.6g,\"decision\":\"%s\"",
                s.speedup.speedup, kl_decision_name(s.speedup.decision));
    }
    event_end();
  }
  event_start("verdict", verb);
  field_string("verdict", kl_verdict_name(kl_report_verdict(r)));
  if (kl_report_verdict(r) != KL_VERDICT_OK)
    field_string("reason", kl_report_reason(r));
  kl_speedup obj;
  if (compare && kl_report_objective(&obj, r) == 0)
    fprintf(stderr, ",\"objective\":%.6g,\"decision\":\"%s\"", obj.speedup,
            kl_decision_name(obj.decision));
  event_end();
}

void cli_events_run(const kl_run_event *e) {
  bool done = strcmp(e->phase, "done") == 0;
  event_start(done ? "verdict" : "iteration", "run");
  field_string("run", e->run);
  fprintf(stderr, ",\"iteration\":%d", e->iteration);
  field_string("phase", e->phase);
  field_string("step", e->step);
  field_string("proposer", e->proposer);
  field_string("what", e->what);
  if (done) {
    field_string("verdict", kl_outcome_name(e->outcome));
    field_string("reason", e->reason);
    fprintf(stderr, ",\"speedup\":%.6g", e->speedup);
  }
  fprintf(stderr,
          ",\"best_speedup\":%.6g,\"iterations_left\":%d,\"wall_s\":%.3f,"
          "\"worker_s\":%.3f,\"usd\":%.4f",
          e->best_speedup, e->iterations_left, e->wall_s, e->worker_s, e->usd);
  event_end();
}
