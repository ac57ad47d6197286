/* A compare's decision at one shape, explained: how many blocks the
 * interval came from and how they leaned, whether the time cap stretched
 * for more of them, and how busy the machine was while it was timed.
 *
 * The statistics decide (kernlab/stats.h); this says why, in the words a
 * report row and a run's record carry: "faster: 6 of 6 blocks faster,
 * interval above 1" or "same: blocks disagree (4 faster, 2 slower) ...;
 * the machine was busy: other processes used 1.0 of 2 CPUs". A machine is
 * busy when other processes kept KL__BUSY_CPUS (a quarter of a CPU) or
 * more at work. */
#include <stdio.h>
#include <string.h>

#include "bench_internal.h"

static void add(char *buf, size_t cap, size_t *at, const char *fmt, ...)
    KL_PRINTF(4, 5);

static void add(char *buf, size_t cap, size_t *at, const char *fmt, ...) {
  if (*at >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *at, cap - *at, fmt, ap);
  va_end(ap);
  if (n > 0) *at += (size_t)n < cap - *at ? (size_t)n : cap - *at - 1;
}

int kl__shape_decision(shape_entry *e, const kl_samples *s,
                       double min_gain_pct) {
  kl_shape_result *res = &e->res;
  res->others_cpus = s->others_cpus;
  res->cpus = s->cpus;
  res->loadavg = s->loadavg;
  res->stretched = s->stretched;
  res->decision_reason = e->decision_reason;
  e->decision_reason[0] = '\0';
  if (s->nplugins != 2) return 0;
  kl_blocks b = KL_BLOCKS_INIT;
  int rc = kl_stats_blocks(&b, s->us[0], s->us[1], s->n, s->block_rounds,
                           s->placements, min_gain_pct);
  if (rc < 0) return rc;
  res->blocks = b.units;
  res->blocks_faster = b.faster;
  res->blocks_slower = b.slower;
  const kl_speedup *sp = &res->speedup;
  char *out = e->decision_reason;
  size_t cap = sizeof(e->decision_reason), at = 0;
  add(out, cap, &at, "%s: ", kl_decision_name(sp->decision));
  if (b.units >= 3)
    add(out, cap, &at, "%zu of %zu %s faster, %zu slower; ", b.faster, b.units,
        s->placements ? "placements" : "blocks", b.slower);
  else
    add(out, cap, &at, "%zu samples (too few for blocks); ", s->n);
  if (b.disagree && sp->decision == KL_DECISION_SAME)
    add(out, cap, &at, "the blocks disagree%s, so 1 stays inside",
        s->stretched ? " after the time cap stretched for more" : "");
  else if (sp->decision == KL_DECISION_FASTER)
    add(out, cap, &at, "interval above 1, gain at least %g%%", min_gain_pct);
  else if (sp->decision == KL_DECISION_SLOWER)
    add(out, cap, &at, "interval below 1, loss at least %g%%", min_gain_pct);
  else if (sp->ci_low > 1 || sp->ci_high < 1)
    add(out, cap, &at, "interval excludes 1 but the change is under %g%%",
        min_gain_pct);
  else
    add(out, cap, &at, "interval includes 1");
  if (s->cpus > 0 && s->others_cpus >= KL__BUSY_CPUS)
    add(out, cap, &at,
        "; the machine was busy: other processes used %.1f of %.0f CPUs "
        "(load average %.2f)",
        s->others_cpus, s->cpus, s->loadavg);
  return 0;
}
