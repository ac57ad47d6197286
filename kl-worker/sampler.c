/* The one sampling loop, host and device alike.
 *
 * Warm up (the timer runs one round and says how long it took), then size
 * the placement blocks: at least six in what the time cap allows, since
 * with fewer than three an interval knows nothing of placement and a short
 * cap would read a placement effect as a speedup. Then rounds, window by
 * window (the host's window is one round; the device queues about 128
 * between synchronisations): each round takes its instance set (a fresh
 * placement at every block), and each plugin one sample, A B then B A. After
 * each window: the time cap, and every eighth of the samples so far the
 * stopping rule: the interval of the median (one plugin) or of the speedup
 * (two) narrow enough, or, with three placements at least, a decision at
 * decide_gain that can no longer change.
 *
 * Where buffers land (pages, cache sets, alignment between them) changes
 * a kernel's time by a few percent, and one placement would be measured
 * throughout: placements make it a random effect both sides sample
 * alike. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernlab/stats.h"
#include "worker_internal.h"

uint64_t klw_block_seed(uint64_t seed, size_t b) {
  if (b == 0) return seed;
  uint64_t z = seed + b * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
  return (z ^ (z >> 29)) | 1;
}

/* 1: the interval is narrow enough; 2: (two plugins) the decision at
 * decide_gain_pct can no longer change; 0: keep sampling. */
static int converged(double **us, int np, size_t n, size_t block,
                     size_t placements, double target, double decide_gain_pct) {
  if (np == 1) {
    kl_summary s;
    return kl_stats_summarize(&s, us[0], n) == 0 && s.rel_ci <= target;
  }
  kl_speedup sp;
  if (kl_stats_speedup_blocked(&sp, us[0], us[1], n, block, placements, 0) != 0)
    return 0;
  if ((log(sp.ci_high) - log(sp.ci_low)) / 2.0 <= target) return 1;
  /* Deciding early needs the placement spread: three placements at least. */
  size_t units = block ? n / block : 0;
  if (placements && placements < units) units = placements;
  if (decide_gain_pct >= 0 && units >= 3) {
    double g = 1.0 + decide_gain_pct / 100.0;
    if (sp.ci_low > g || sp.ci_high < 1.0 / g ||
        (sp.ci_low > 1.0 / g && sp.ci_high < g))
      return 2;
  }
  return 0;
}

int klw_sample(klw_sampling *s, const klw_timer *t, const char **reason,
               double *start_us) {
  const klw_time_req *tr = s->tr;
  *reason = "max_samples";
  *start_us = klw_now_us();
  s->n = 0;
  s->block_rounds = tr->block_rounds;
  for (int k = 0; k < s->np; k++)
    if (!(s->us[k] = calloc(tr->max_n, sizeof(double))) ||
        !(s->mhz[k] = calloc(tr->max_n, sizeof(double)))) {
      snprintf(s->err, sizeof(s->err), "out of memory");
      return -1;
    }
  double round_us = 0, t0 = klw_now_us();
  if (t->start(s) < 0 || t->warmup(s, &round_us) < 0) return -1;
  s->warmup_us = klw_now_us() - t0;
  /* at least six placement blocks in the rounds the budget allows */
  double expected = round_us > 0 ? tr->cap_us / round_us : (double)tr->max_n;
  if (expected > (double)tr->max_n) expected = (double)tr->max_n;
  size_t fit = (size_t)(expected / 6.0);
  if (fit < 1) fit = 1;
  if (fit < s->block_rounds) s->block_rounds = fit;
  size_t window = 1;
  t0 = klw_now_us();
  if (t->place(s, &window) < 0) return -1;
  double start = klw_now_us();
  s->place_us = start - t0;
  *start_us = start;
  /* Every window is the timer's (about 128 rounds on the device): shorter
   * first windows, stopping after three blocks, were tried (2026-11-26,
   * H200): a 20 us copy's cold median then repeated to 0.21% instead of
   * 0.08%, and A/A comparisons were called different 4 times in 20 instead
   * of never, for 4 ms less per measurement. */
  size_t next_look = tr->min_n;
  while (s->n < tr->max_n) {
    size_t rounds = window;
    if (s->n + rounds > tr->max_n) rounds = tr->max_n - s->n;
    if (t->ready) {
      t0 = klw_now_us();
      if (t->ready(s, s->n, rounds) < 0) return -1;
      double made = klw_now_us() - t0;
      s->ready_us += made;
      s->place_us += made;
    }
    t0 = klw_now_us();
    for (size_t r = 0; r < rounds; r++) {
      size_t round = s->n + r;
      void **set = t->set(s, round);
      if (!set) return -1;
      for (int j = 0; j < s->np; j++) {
        int k = (round % 2 && s->np == 2) ? 1 - j : j; /* A B, then B A */
        if (t->mark(s, k, set[k]) < 0 || t->launch(s, k, set[k], round) < 0)
          return -1;
      }
    }
    double t1 = klw_now_us(), waited = s->wait_us;
    s->queue_us += t1 - t0;
    if (t->collect(s) < 0) return -1; /* adds its wait to s->wait_us */
    s->n += rounds;
    const char *stop = NULL;
    if (klw_now_us() - start > tr->cap_us && s->n >= 3) {
      stop = "time_cap";
    } else if (s->n >= next_look) {
      int why = converged(s->us, s->np, s->n, s->block_rounds, s->placements,
                          tr->target, tr->decide_gain);
      if (why) stop = why == 1 ? "converged" : "decided";
      next_look = s->n + (s->n / 8 > 1 ? s->n / 8 : 1);
    }
    s->collect_us += klw_now_us() - t1 - (s->wait_us - waited);
    if (stop) {
      *reason = stop;
      break;
    }
  }
  return 0;
}

void klw_blame_launch(klw_sampling *s, int k) {
  if (strstr(s->err, "the launch called") || strstr(s->err, "scratch region")) {
    s->gate = "launch_contract";
    s->culprit = k;
  }
}
