/* What a run decides, apart from everything that measures: the outcome
 * of a candidate's report against the best it was compared with, the
 * speedup over the baseline that an acceptance chains, and the budgets.
 * No worker, no file: test_decide drives these with reports read from
 * JSON. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run_internal.h"

static kl_outcome outcome_of(kl_verdict v) {
  switch (v) {
  case KL_VERDICT_INCORRECT:
    return KL_OUTCOME_INCORRECT;
  case KL_VERDICT_CRASHED:
    return KL_OUTCOME_CRASHED;
  case KL_VERDICT_TIMEOUT:
    return KL_OUTCOME_TIMEOUT;
  case KL_VERDICT_COMPILE_ERROR:
    return KL_OUTCOME_COMPILE_ERROR;
  case KL_VERDICT_CHEAT:
    return KL_OUTCOME_CHEAT;
  case KL_VERDICT_INVALID_OUTPUT:
    return KL_OUTCOME_INCORRECT;
  default:
    return KL_OUTCOME_REJECTED;
  }
}

kl_speedup kl__chain(kl_speedup a, kl_speedup b) {
  kl_speedup out = a;
  out.speedup = a.speedup * b.speedup;
  double la = log(a.speedup), lb = log(b.speedup);
  double lo = hypot(la - log(a.ci_low), lb - log(b.ci_low));
  double hi = hypot(log(a.ci_high) - la, log(b.ci_high) - lb);
  out.ci_low = out.speedup * exp(-lo);
  out.ci_high = out.speedup * exp(hi);
  out.decision = out.ci_low > 1    ? KL_DECISION_FASTER
                 : out.ci_high < 1 ? KL_DECISION_SLOWER
                                   : KL_DECISION_SAME;
  return out;
}

int kl__decide(kl__decision *d, const kl_report *rep, kl_speedup parent_vs_base,
               double min_gain_pct) {
  memset(d, 0, sizeof(*d));
  if (kl_report_verdict(rep) != KL_VERDICT_OK) {
    d->outcome = outcome_of(kl_report_verdict(rep));
    d->gate = kl_report_gate(rep);
    d->reason = kl__strdup(kl_report_reason(rep) ? kl_report_reason(rep) : "");
    return d->reason ? 0 : kl__error_oom();
  }
  if (kl_report_objective(&d->vs_parent, rep) < 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no objective was computed");
  d->timed = true;
  kl_buf reason = KL_BUF_INIT;
  int rc;
  const char *unchecked = NULL, *disagreed = NULL;
  double busy = 0, cpus = 0;
  for (size_t i = 0; i < kl_report_shape_count(rep); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    if (kl_report_shape(&s, rep, i) < 0) continue;
    /* a command case's rows are its metrics: the command checks itself,
     * and its verdict is OK only when that check passed */
    bool metric = kl_report_shape_better(rep, i) != NULL;
    if (s.timed && !metric && !(s.checked && s.correct) && !unchecked)
      unchecked = s.name;
    if (s.timed && s.blocks_faster && s.blocks_slower &&
        s.speedup.decision == KL_DECISION_SAME && !disagreed)
      disagreed = s.name;
    if (s.others_cpus > busy) busy = s.others_cpus, cpus = s.cpus;
  }
  if (unchecked && d->vs_parent.decision == KL_DECISION_FASTER) {
    /* a speedup counts only where the kernel was shown correct */
    d->outcome = KL_OUTCOME_REJECTED;
    rc = kl__buf_printf(&reason,
                        "x%.3f [%.3f, %.3f] against the best, but shape %s "
                        "was timed without a correctness check there: "
                        "nothing is accepted unchecked",
                        d->vs_parent.speedup, d->vs_parent.ci_low,
                        d->vs_parent.ci_high, unchecked);
  } else if (d->vs_parent.decision == KL_DECISION_FASTER) {
    d->outcome = KL_OUTCOME_ACCEPTED;
    d->vs_base = kl__chain(parent_vs_base, d->vs_parent);
    rc = kl__buf_printf(&reason,
                        "x%.3f [%.3f, %.3f] against the best, at "
                        "least %g%% and the interval above 1",
                        d->vs_parent.speedup, d->vs_parent.ci_low,
                        d->vs_parent.ci_high, min_gain_pct);
  } else {
    d->outcome = KL_OUTCOME_REJECTED;
    rc = kl__buf_printf(
        &reason,
        "%s: x%.3f [%.3f, %.3f] against the best "
        "(needs the interval above 1 and at least "
        "%g%%)",
        d->vs_parent.decision == KL_DECISION_SLOWER ? "slower" : "not faster",
        d->vs_parent.speedup, d->vs_parent.ci_low, d->vs_parent.ci_high,
        min_gain_pct);
  }
  if (rc == 0 && disagreed && d->outcome != KL_OUTCOME_ACCEPTED)
    rc = kl__buf_printf(&reason, "; at shape %s the blocks disagreed",
                        disagreed);
  if (rc == 0 && busy >= KL__BUSY_CPUS && cpus > 0)
    rc = kl__buf_printf(&reason,
                        "; timed on a busy machine (other processes used "
                        "%.1f of %.0f CPUs)",
                        busy, cpus);
  if (rc < 0) {
    kl_buf_dispose(&reason);
    return kl__error_oom();
  }
  d->reason = kl__buf_detach(&reason);
  return d->reason ? 0 : kl__error_oom();
}

double kl__run_spent_wall_s(const kl_run *r) {
  return r->wall_before_s + (kl__now_ms() - r->t0_ms) / 1000.0;
}

const char *kl__run_budget_reached(const kl_run *r) {
  if (r->o.stop && *r->o.stop) return "stopped";
  if (r->st.done >= r->max_iterations) return "iterations";
  if (r->patience > 0 && r->st.since_accept >= r->patience) return "patience";
  if (r->o.max_wall_s > 0 && kl__run_spent_wall_s(r) >= r->o.max_wall_s)
    return "wall_time";
  if (r->o.max_worker_s > 0 && r->worker_s >= r->o.max_worker_s)
    return "worker_time";
  if (r->o.max_usd > 0 && r->usd >= r->o.max_usd) return "usd";
  return NULL;
}
