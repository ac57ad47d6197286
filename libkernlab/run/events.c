/* What a run tells as it goes: progress events to the caller's callback
 * and messages to its webhook. Neither can fail the run. */
#include <stdio.h>
#include <string.h>

#include "run_internal.h"

/* An event with the run's budget and best as they are now. */
static void event_of(kl_run_event *e, kl_run *r, int iteration,
                     const char *phase, const char *proposer,
                     const char *what) {
  memset(e, 0, sizeof(*e));
  e->run = r->id;
  e->iteration = iteration;
  e->phase = phase;
  e->proposer = proposer;
  e->what = what;
  e->outcome = KL_OUTCOME_BASELINE;
  e->best_speedup = r->st.best_vs_base.speedup;
  e->iterations_left = (int)(r->max_iterations - r->st.done);
  e->wall_s = kl__run_spent_wall_s(r);
  e->worker_s = r->worker_s;
  e->usd = r->usd;
}

void kl__run_emit(kl_run *r, int iteration, const char *phase,
                  const char *proposer, const char *what, kl_outcome o,
                  const char *reason, double speedup) {
  if (!r->o.on_event) return;
  kl_run_event e;
  event_of(&e, r, iteration, phase, proposer, what);
  e.outcome = o;
  e.reason = reason;
  e.speedup = speedup;
  r->o.on_event(&e, r->o.payload);
}

/* A bench's phases while an iteration is measured or profiled: the same
 * event with its step. Called from the local executor's slot threads as
 * well; the run's state it reads is not written while they run. */
void kl__run_relay_step(const char *step, void *payload) {
  kl__run_step *s = payload;
  if (!s->r->o.on_event) return;
  kl_run_event e;
  event_of(&e, s->r, s->iteration, s->phase, s->proposer, s->what);
  e.step = step;
  s->r->o.on_event(&e, s->r->o.payload);
}

/* What happened is kept for the summary (wh_status). */
void kl__run_notify(kl_run *r, const char *event, int iteration,
                    const char *detail) {
  if (!r->o.webhook || r->o.no_webhook) return;
  kl_webhook_message m = {event,
                          kl_case_name(r->c),
                          r->id,
                          iteration,
                          r->st.best_vs_base.speedup,
                          r->st.best_vs_base.ci_low,
                          r->st.best_vs_base.ci_high,
                          detail};
  if (strcmp(event, "run_start") == 0) m.speedup = m.ci_low = m.ci_high = 0;
  long status = 0;
  r->wh_attempted++;
  if (kl_webhook_send(r->o.webhook, &m, &status) == 0) {
    r->wh_sent++;
    snprintf(r->wh_status, sizeof(r->wh_status), "sent (HTTP %ld)", status);
  } else {
    const kl_error *e = kl_error_last();
    snprintf(r->wh_status, sizeof(r->wh_status), "failed: %s",
             e && e->message ? e->message : "no answer");
  }
}
