/* The one sampling loop, host and device alike.
 *
 * Warm up (the timer runs one round and says how long it took), then size
 * the placement blocks: at least eight in what the time cap allows, since
 * the block is the replicate a comparison's interval counts (with fewer
 * than three it knows nothing of placement, and a short cap would read a
 * placement effect as a speedup). Then rounds, window by
 * window (the host's window is one round; the device queues about 128
 * between synchronisations): each round takes its instance set (a fresh
 * placement at every block), its inputs varied in a few places (where the
 * request varies them), and each plugin one sample, in the order of
 * the Thue-Morse sequence (below). After
 * each window: the time cap (stretched, up to twice, while a pair has too
 * few blocks or blocks that disagree), and every eighth of the samples so
 * far the stopping rule: the interval of the median (one plugin) or of the
 * speedup (two) narrow enough, or, with eight blocks at least (every
 * placement of a smaller pool), a decision at decide_gain that can no
 * longer change.
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

/* Blocks a comparison aims for. Six is where the sign test's interval
 * reaches 95%, but six blocks that agree by chance are called a difference
 * once in 32; eight, once in 128 (A/A of host_saxpy beside a CPU hog: 2 of
 * 50 called different with six, bench/README.md "A/A"). */
#define BLOCKS_WANTED 8

uint64_t klw_block_seed(uint64_t seed, size_t b) {
  if (b == 0) return seed;
  uint64_t z = seed + b * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
  return (z ^ (z >> 29)) | 1;
}

uint64_t klw_vary_seed(uint64_t seed, size_t round) {
  return klw_block_seed(seed ^ 0x5851f42d4c957f2dull, round + 1);
}

/* A round's new values in a few places of each plugin's inputs (plugin
 * vary(), both sides the same seed), before its marks: a kernel that keeps
 * its last result for inputs it takes for the same (the same buffers, a few
 * values alike) hands back a stale one, which the stale-outputs gate finds
 * in the last sample. The device queues them on the set's stream. */
static int vary_round(klw_sampling *s, void **set, size_t round) {
  uint64_t seed = klw_vary_seed(s->tr->seed, round);
  for (int k = 0; k < s->np; k++) {
    if (s->pl[k]->vary(set[k], seed)) {
      snprintf(s->err, sizeof(s->err), "vary: %s",
               s->pl[k]->last_error(set[k]));
      return -1;
    }
    s->varied[k] = seed;
  }
  return 0;
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
  /* Deciding early needs the blocks' spread and their agreement: as many
   * units as the sign test needs, or every placement of a smaller pool. */
  size_t units = block ? n / block : 0;
  if (placements && placements < units) units = placements;
  size_t enough = placements && placements < BLOCKS_WANTED
                      ? (placements < 3 ? 3 : placements)
                      : BLOCKS_WANTED;
  if (decide_gain_pct >= 0 && units >= enough) {
    double g = 1.0 + decide_gain_pct / 100.0;
    if (sp.ci_low > g || sp.ci_high < 1.0 / g ||
        (sp.ci_low > 1.0 / g && sp.ci_high < g))
      return 2;
  }
  return 0;
}

/* Two plugins that need more blocks than the time cap gave: fewer than
 * BLOCKS_WANTED (a loaded machine's rounds run slower than the warm-up
 * said), or blocks that disagree (their mean reads a gain of at
 * least decide_gain, but they lie on both sides of 1, too few on its side
 * to decide). The cap then stretches, to twice itself at most: an answer
 * from a noisy minute needs more blocks, not fewer. Pooled placements
 * fewer than that are all the units there will be. */
static bool want_blocks(klw_sampling *s) {
  if (s->np != 2) return false;
  kl_blocks b = KL_BLOCKS_INIT;
  if (kl_stats_blocks(&b, s->us[0], s->us[1], s->n, s->block_rounds,
                      s->placements, s->tr->decide_gain) != 0)
    return false;
  size_t most = s->placements ? s->placements : (size_t)-1;
  bool want = b.disagree || (b.units < BLOCKS_WANTED && b.units < most);
  if (want) s->stretched = true;
  return want;
}

/* Whether the second plugin goes first in round r: the parity of r's one
 * bits, the Thue-Morse sequence (A B, B A, B A, A B, B A, A B, A B, B A,
 * ...). Like A B B A repeated, it puts both plugins first equally often and
 * cancels a steady drift; unlike it, it has no period, so an effect of the
 * sample's position that repeats every few samples falls on both sides
 * alike. A B B A repeated gives plugin A positions 0 and 3 of every four:
 * on an H200 a 1M vector_add's samples at positions 0 and 3 read about
 * 0.1 us longer than at 1 and 2 (whatever the plugin; cause unknown), and
 * an A/A comparison was called 1.3-2.4% "faster" in 12 of 30 runs, every
 * block on the same side; in Thue-Morse order 0 in 16 (bench/README.md,
 * "the A/A bias"). It also spreads hot mode's clock probe, which comes
 * before every eighth sample, over both plugins. */
static int second_first(size_t r) {
  int odd = 0;
  for (; r; r &= r - 1)
    odd ^= 1;
  return odd;
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
  /* at least BLOCKS_WANTED placement blocks in the rounds the budget
   * allows, and two to spare: a round while sampling (restores, fresh
   * placements) takes longer than the warm-up's */
  double expected = round_us > 0 ? tr->cap_us / round_us : (double)tr->max_n;
  if (expected > (double)tr->max_n) expected = (double)tr->max_n;
  size_t fit = (size_t)(expected / (double)(BLOCKS_WANTED + 2));
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
      if (!set || (s->vary && vary_round(s, set, round) < 0)) return -1;
      for (int j = 0; j < s->np; j++) {
        int k = s->np == 2 && second_first(round) ? 1 - j : j;
        if (t->mark(s, k, set[k]) < 0 || t->launch(s, k, set[k], round) < 0)
          return -1;
      }
    }
    double t1 = klw_now_us(), waited = s->wait_us;
    s->queue_us += t1 - t0;
    if (t->collect(s) < 0) return -1; /* adds its wait to s->wait_us */
    s->n += rounds;
    const char *stop = NULL;
    double spent = klw_now_us() - start;
    if (spent > tr->cap_us && s->n >= 3 &&
        !(spent < 2 * tr->cap_us && want_blocks(s))) {
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
