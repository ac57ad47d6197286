/* Statistics against known answers and known distributions. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernlab/kernlab.h"

/* Coverage of [x(lo), x(hi)] (0-based) for the median of n samples: it
 * misses when B <= lo or B >= n - lo for B ~ binomial(n, 1/2), so the
 * coverage is 1 - 2 P(B <= lo). Log space keeps large n finite. */
static double coverage(size_t n, size_t lo) {
  double p = 0;
  for (size_t i = 0; i <= lo; i++)
    p += exp(lgamma((double)n + 1) - lgamma((double)i + 1) -
             lgamma((double)(n - i) + 1) + (double)n * log(0.5));
  return 1 - 2 * p;
}

static void test_stats__median_ci_ranks_are_exact(void **state) {
  (void)state;
  size_t lo, hi;
  kl_stats_median_ci_ranks(10, &lo, &hi);
  assert_int_equal(lo, 1); /* x(2) .. x(9): 97.9% */
  assert_int_equal(hi, 8);
  kl_stats_median_ci_ranks(100, &lo, &hi);
  assert_int_equal(lo, 39); /* x(40) .. x(61), the textbook interval */
  assert_int_equal(hi, 60);
  kl_stats_median_ci_ranks(5, &lo, &hi);
  assert_int_equal(lo, 0); /* too few: the whole range */
  assert_int_equal(hi, 4);
  for (size_t n = 6; n <= 400; n++) {
    kl_stats_median_ci_ranks(n, &lo, &hi);
    assert_int_equal(hi, n - 1 - lo);
    if (coverage(n, lo) < 0.95)
      fail_msg("n=%zu: coverage %.4f below 95%%", n, coverage(n, lo));
    /* and it is the narrowest such interval */
    if (lo + 1 < n / 2 && coverage(n, lo + 1) >= 0.95)
      fail_msg("n=%zu: rank %zu would still cover", n, lo + 1);
  }
  kl_stats_median_ci_ranks(5000, &lo, &hi);
  assert_true(coverage(5000, lo) >= 0.95);
}

static void test_stats__summary_of_known_data(void **state) {
  (void)state;
  double x[11];
  for (int i = 0; i < 11; i++)
    x[i] = (double)(11 - i); /* 11..1, unsorted on purpose */
  x[10] = 1000;              /* one far outlier instead of 1 */
  kl_summary s;
  assert_int_equal(kl_stats_summarize(&s, x, 11), 0);
  assert_int_equal(s.n, 11);
  assert_true(s.median == 7); /* 2..11 and 1000: median 7 */
  assert_true(s.min == 2 && s.max == 1000);
  assert_true(s.q1 == 4.5 && s.q3 == 9.5);
  assert_int_equal(s.outliers, 1);
  assert_true(s.ci_low <= s.median && s.median <= s.ci_high);
  assert_true(x[0] == 11); /* the input is not modified */
  assert_int_equal(kl_stats_summarize(&s, x, 0), 0);
  assert_int_equal(s.n, 0);
}

/* xorshift for reproducible draws */
static uint64_t rng = 88172645463325252ull;
static double unit(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

static void test_stats__median_ci_covers_known_distributions(void **state) {
  (void)state;
  /* lognormal (skewed like timings) and exponential: true medians known */
  enum { TRIALS = 400, N = 60 };
  for (int dist = 0; dist < 2; dist++) {
    double truth = dist == 0 ? exp(3.0) : log(2.0) * 20.0;
    int covered = 0;
    for (int t = 0; t < TRIALS; t++) {
      double x[N];
      for (int i = 0; i < N; i++) {
        if (dist == 0) {
          double u1 = unit(), u2 = unit();
          x[i] = exp(3.0 + 0.3 * sqrt(-2 * log(u1)) * cos(6.283185307 * u2));
        } else {
          x[i] = -20.0 * log(unit());
        }
      }
      kl_summary s;
      kl_stats_summarize(&s, x, N);
      covered += s.ci_low <= truth && truth <= s.ci_high;
    }
    /* nominal >= 95%; the exact interval for n = 60 covers 97.3% */
    if (covered < TRIALS * 92 / 100 || covered > TRIALS * 995 / 1000)
      fail_msg("distribution %d: covered %d of %d", dist, covered, TRIALS);
  }
}

static void test_stats__speedup_decisions(void **state) {
  (void)state;
  enum { N = 200 };
  double base[N], fast[N], same[N], slow[N];
  for (int i = 0; i < N; i++) {
    double noise = 1.0 + 0.01 * (unit() - 0.5);
    base[i] = 100.0 * noise;
    same[i] = 100.0 * (1.0 + 0.01 * (unit() - 0.5));
    fast[i] = 80.0 * (1.0 + 0.01 * (unit() - 0.5));
    slow[i] = 125.0 * (1.0 + 0.01 * (unit() - 0.5));
  }
  kl_speedup s;
  assert_int_equal(kl_stats_speedup(&s, base, fast, N, 2.0), 0);
  assert_int_equal(s.decision, KL_DECISION_FASTER);
  assert_true(fabs(s.speedup - 1.25) < 0.01);
  assert_true(s.ci_low < s.speedup && s.speedup < s.ci_high);
  assert_int_equal(kl_stats_speedup(&s, base, same, N, 2.0), 0);
  assert_int_equal(s.decision, KL_DECISION_SAME);
  assert_int_equal(kl_stats_speedup(&s, base, slow, N, 2.0), 0);
  assert_int_equal(s.decision, KL_DECISION_SLOWER);
  assert_true(fabs(s.speedup - 0.8) < 0.01);
  /* a real 1% gain is "faster" only when 1% is enough to matter */
  double gain1[N];
  for (int i = 0; i < N; i++)
    gain1[i] = base[i] / 1.01;
  assert_int_equal(kl_stats_speedup(&s, base, gain1, N, 0.5), 0);
  assert_int_equal(s.decision, KL_DECISION_FASTER);
  assert_int_equal(kl_stats_speedup(&s, base, gain1, N, 2.0), 0);
  assert_int_equal(s.decision, KL_DECISION_SAME);
  assert_string_equal(kl_decision_name(KL_DECISION_SLOWER), "slower");
  assert_int_equal(kl_stats_speedup(&s, base, fast, 0, 2.0), KL_EINVALID);
}

static void test_stats__blocks_keep_aa_honest(void **state) {
  (void)state;
  /* A/A with placement effects: per-sample noise 0.2%, but every block of
   * 20 samples of each side sits at its own level (sd 1%), as buffers in
   * fresh memory do. The true speedup is 1. Intervals that treat samples as
   * independent exclude 1 far more often than 5%; the blocked interval must
   * not. */
  enum { N = 200, B = 20, TRIALS = 300 };
  int plain_covered = 0, blocked_covered = 0;
  for (int t = 0; t < TRIALS; t++) {
    double base[N], cand[N], lb = 1, lc = 1;
    for (int i = 0; i < N; i++) {
      if (i % B == 0) {
        double u1 = unit(), u2 = unit(), r = sqrt(-2 * log(u1));
        lb = 1 + 0.01 * r * cos(6.283185307 * u2);
        lc = 1 + 0.01 * r * sin(6.283185307 * u2);
      }
      base[i] = 100 * lb * (1 + 0.002 * (unit() - 0.5));
      cand[i] = 100 * lc * (1 + 0.002 * (unit() - 0.5));
    }
    kl_speedup plain, blocked;
    assert_int_equal(kl_stats_speedup(&plain, base, cand, N, 2.0), 0);
    assert_int_equal(
        kl_stats_speedup_blocked(&blocked, base, cand, N, B, 0, 2.0), 0);
    assert_true(blocked.ci_high / blocked.ci_low >=
                plain.ci_high / plain.ci_low);
    plain_covered += plain.ci_low <= 1 && 1 <= plain.ci_high;
    blocked_covered += blocked.ci_low <= 1 && 1 <= blocked.ci_high;
  }
  print_message("A/A coverage of 1 with placement effects: blocked %d/%d, "
                "plain %d/%d\n",
                blocked_covered, TRIALS, plain_covered, TRIALS);
  if (blocked_covered < TRIALS * 90 / 100 || plain_covered >= blocked_covered)
    fail_msg("coverage of 1: blocked %d, plain %d of %d", blocked_covered,
             plain_covered, TRIALS);
}

static void test_stats__reused_placements_are_not_replicates(void **state) {
  (void)state;
  /* A pool of 6 placements cycled through by 30 blocks: each placement's
   * offset repeats 5 times. Counting blocks as independent would be
   * pseudo-replication; the interval must count placements. */
  enum { P = 6, B = 10, N = 300, TRIALS = 300 };
  int as_blocks = 0, as_placements = 0;
  for (int t = 0; t < TRIALS; t++) {
    double lb[P], lc[P], base[N], cand[N];
    for (int u = 0; u < P; u++) {
      double u1 = unit(), u2 = unit(), r = sqrt(-2 * log(u1));
      lb[u] = 1 + 0.01 * r * cos(6.283185307 * u2);
      lc[u] = 1 + 0.01 * r * sin(6.283185307 * u2);
    }
    for (int i = 0; i < N; i++) {
      int u = (i / B) % P;
      base[i] = 100 * lb[u] * (1 + 0.002 * (unit() - 0.5));
      cand[i] = 100 * lc[u] * (1 + 0.002 * (unit() - 0.5));
    }
    kl_speedup blocks, places;
    assert_int_equal(
        kl_stats_speedup_blocked(&blocks, base, cand, N, B, 0, 2.0), 0);
    assert_int_equal(
        kl_stats_speedup_blocked(&places, base, cand, N, B, P, 2.0), 0);
    as_blocks += blocks.ci_low <= 1 && 1 <= blocks.ci_high;
    as_placements += places.ci_low <= 1 && 1 <= places.ci_high;
  }
  print_message("6 placements in 30 blocks: covered 1 in %d/%d counting "
                "placements, %d/%d counting blocks\n",
                as_placements, TRIALS, as_blocks, TRIALS);
  if (as_placements < TRIALS * 90 / 100 || as_blocks >= as_placements)
    fail_msg("placements %d, blocks %d of %d", as_placements, as_blocks,
             TRIALS);
}

/* n rounds in blocks of `block`: block k's log ratio (base over cand) is
 * ratio[k]; each sample has +-0.1% of noise of its own. */
static void blocks_of_ratios(double *base, double *cand, size_t n, size_t block,
                             const double *ratio) {
  for (size_t i = 0; i < n; i++) {
    base[i] = 100 * exp(ratio[i / block]) * (1 + 0.002 * (unit() - 0.5));
    cand[i] = 100 * (1 + 0.002 * (unit() - 0.5));
  }
}

static void test_stats__blocks_that_disagree_keep_1_inside(void **state) {
  (void)state;
  enum { B = 20, N = 6 * B };
  double base[N], cand[N];
  /* five blocks read the candidate 5% faster, one 1% slower: the t
   * interval over blocks leaves 1 out, the blocks do not agree */
  const double split[6] = {0.05, 0.05, -0.01, 0.05, 0.05, 0.05};
  blocks_of_ratios(base, cand, N, B, split);
  kl_speedup sp;
  assert_int_equal(kl_stats_speedup_blocked(&sp, base, cand, N, B, 0, 2.0), 0);
  assert_int_equal(sp.decision, KL_DECISION_SAME);
  assert_true(sp.ci_low <= 1 && 1 <= sp.ci_high);
  assert_true(fabs(log(sp.speedup) - 0.04) < 0.002); /* the blocks' mean */
  kl_blocks b = KL_BLOCKS_INIT;
  assert_int_equal(kl_stats_blocks(&b, base, cand, N, B, 0, 2.0), 0);
  assert_int_equal(b.units, 6);
  assert_int_equal(b.faster, 5);
  assert_int_equal(b.slower, 1);
  assert_true(b.disagree);
  /* the same gain in every block is decided, and nothing disagrees */
  const double agree[6] = {0.03, 0.031, 0.029, 0.03, 0.032, 0.03};
  blocks_of_ratios(base, cand, N, B, agree);
  assert_int_equal(kl_stats_speedup_blocked(&sp, base, cand, N, B, 0, 2.0), 0);
  assert_int_equal(sp.decision, KL_DECISION_FASTER);
  assert_int_equal(kl_stats_blocks(&b, base, cand, N, B, 0, 2.0), 0);
  assert_int_equal(b.faster, 6);
  assert_false(b.disagree);
  /* under the practical minimum, mixed blocks are no call for more */
  const double small[6] = {0.01, 0.01, -0.002, 0.01, 0.01, 0.01};
  blocks_of_ratios(base, cand, N, B, small);
  assert_int_equal(kl_stats_blocks(&b, base, cand, N, B, 0, 2.0), 0);
  assert_false(b.disagree);
  /* four agreeing units: too few for the sign test's interval, the t
   * interval decides; an older caller's smaller kl_blocks gets its part */
  blocks_of_ratios(base, cand, 4 * B, B, agree);
  assert_int_equal(kl_stats_speedup_blocked(&sp, base, cand, 4 * B, B, 0, 2.0),
                   0);
  assert_int_equal(sp.decision, KL_DECISION_FASTER);
  kl_blocks older;
  memset(&older, 0, sizeof(older));
  older.size = offsetof(kl_blocks, slower);
  older.slower = 77;
  assert_int_equal(kl_stats_blocks(&older, base, cand, 4 * B, B, 0, 2.0), 0);
  assert_int_equal(older.units, 4);
  assert_int_equal(older.faster, 4);
  assert_int_equal(older.slower, 77); /* past its size: not written */
}

/* A/A on a noisy machine: each block sits at its own level on each side
 * (placement, sd 1.5%), the machine drifts 10% over the run (both sides
 * alike), and a burst of foreign load slows a third of the samples of one
 * block in four by 20-100%, whichever side they fall on. At most 1 in 50
 * comparisons may be called different; a real 3% gain on a quieter machine
 * (block sd 0.3%) is still found. */
static void test_stats__aa_on_a_noisy_machine(void **state) {
  (void)state;
  enum { BLOCK = 16, NB = 8, N = BLOCK * NB, TRIALS = 500 };
  int different = 0, found = 0;
  for (int t = 0; t < 2 * TRIALS; t++) {
    bool aa = t < TRIALS;
    double sd = aa ? 0.015 : 0.003, gain = aa ? 1.0 : 1.03;
    double base[N], cand[N], lb = 1, lc = 1;
    bool burst = false;
    for (int i = 0; i < N; i++) {
      if (i % BLOCK == 0) {
        double u1 = unit(), u2 = unit(), r = sqrt(-2 * log(u1));
        lb = 1 + sd * r * cos(6.283185307 * u2);
        lc = 1 + sd * r * sin(6.283185307 * u2);
        burst = aa && unit() < 0.25;
      }
      double drift = 1 + (aa ? 0.1 : 0) * i / N;
      base[i] = 100 * drift * lb * (1 + 0.004 * (unit() - 0.5));
      cand[i] = 100 / gain * drift * lc * (1 + 0.004 * (unit() - 0.5));
      if (burst && unit() < 1.0 / 3) base[i] *= 1.2 + 0.8 * unit();
      if (burst && unit() < 1.0 / 3) cand[i] *= 1.2 + 0.8 * unit();
    }
    kl_speedup sp;
    assert_int_equal(
        kl_stats_speedup_blocked(&sp, base, cand, N, BLOCK, 0, 2.0), 0);
    if (aa)
      different += sp.decision != KL_DECISION_SAME;
    else
      found += sp.decision == KL_DECISION_FASTER;
  }
  print_message("noisy A/A called different %d of %d; a real 3%% gain found "
                "%d of %d\n",
                different, TRIALS, found, TRIALS);
  if (different > TRIALS / 50 || found < TRIALS * 95 / 100)
    fail_msg("A/A different %d of %d, 3%% found %d of %d", different, TRIALS,
             found, TRIALS);
}

static void test_stats__geomean_weights(void **state) {
  (void)state;
  kl_speedup s[2] = {{100, 2.0, 1.9, 2.1, KL_DECISION_FASTER},
                     {100, 0.5, 0.45, 0.55, KL_DECISION_SLOWER}};
  double w_equal[2] = {1, 1}, w_first[2] = {3, 1};
  kl_speedup g;
  assert_int_equal(kl_stats_geomean(&g, s, w_equal, 2, 2.0), 0);
  assert_true(fabs(g.speedup - 1.0) < 1e-12);
  assert_int_equal(g.decision, KL_DECISION_SAME);
  assert_int_equal(kl_stats_geomean(&g, s, w_first, 2, 2.0), 0);
  assert_true(fabs(g.speedup - pow(2.0, 0.75) * pow(0.5, 0.25)) < 1e-12);
  assert_int_equal(g.decision, KL_DECISION_FASTER);
  assert_int_equal(kl_stats_geomean(&g, s, w_first, 0, 2.0), KL_EINVALID);
  /* one shape keeps its interval, symmetric on the log scale or not */
  kl_speedup one = {100, 1.05, 1.01, 1.2, KL_DECISION_FASTER};
  assert_int_equal(kl_stats_geomean(&g, &one, NULL, 1, 2.0), 0);
  assert_true(fabs(g.ci_low - 1.01) < 1e-9 && fabs(g.ci_high - 1.2) < 1e-9);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stats__median_ci_ranks_are_exact),
      cmocka_unit_test(test_stats__summary_of_known_data),
      cmocka_unit_test(test_stats__median_ci_covers_known_distributions),
      cmocka_unit_test(test_stats__speedup_decisions),
      cmocka_unit_test(test_stats__blocks_keep_aa_honest),
      cmocka_unit_test(test_stats__reused_placements_are_not_replicates),
      cmocka_unit_test(test_stats__blocks_that_disagree_keep_1_inside),
      cmocka_unit_test(test_stats__aa_on_a_noisy_machine),
      cmocka_unit_test(test_stats__geomean_weights),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
