/** @file kernlab/stats.h  Robust statistics of timing samples.
 *
 * Timing samples are skewed and have outliers (interrupts, other work), so
 * kernlab summarises them with order statistics: the median with a
 * distribution-free confidence interval (the binomial/sign-test interval
 * between two order statistics), quartiles, and Tukey outliers. A speedup
 * from interleaved A/B samples is the ratio of the medians, its interval the
 * two medians' intervals combined on the log scale; taken in blocks, it is
 * the blocks' mean paired ratio with an interval from the spread between
 * blocks. The decision needs the interval to exclude 1 (statistical) and
 * the gain to reach a minimum (practical).
 */
#ifndef KERNLAB_STATS_H
#define KERNLAB_STATS_H

#include "common.h"

KL_BEGIN_DECLS

typedef struct kl_summary {
  size_t n;
  double median, ci_low, ci_high; /**< 95% CI of the median */
  double q1, q3, min, max, mean;
  size_t outliers; /**< beyond 1.5 IQR from the quartiles */
  double rel_ci;   /**< (ci_high - ci_low) / 2 / median */
} kl_summary;

/** Summarise n samples (any order; not modified). n = 0 gives zeros.
 *  @return 0 or KL_ENOMEM. */
KL_EXTERN(int) kl_stats_summarize(kl_summary *out, const double *x, size_t n);

/** 0-based ranks (lo, hi) of the order statistics bounding a 95% interval
 *  of the median of n samples (lo = 0, hi = n - 1 when n is too small). */
KL_EXTERN(void) kl_stats_median_ci_ranks(size_t n, size_t *lo, size_t *hi);

typedef enum kl_decision {
  KL_DECISION_SAME = 0,
  KL_DECISION_FASTER = 1,
  KL_DECISION_SLOWER = 2
} kl_decision;
KL_EXTERN(const char *) kl_decision_name(kl_decision d);

typedef struct kl_speedup {
  size_t n;                        /**< pairs */
  double speedup, ci_low, ci_high; /**< base time / candidate time */
  kl_decision decision;
} kl_speedup;

/** The speedup of `cand` over `base` (median of base / median of cand) from
 *  n samples each, taken interleaved, and the decision at min_gain_pct: FASTER
 *  when the interval lies above 1 and the speedup is at least
 *  1 + min_gain_pct/100; SLOWER when it lies below 1 and the speedup is at
 *  most 1 / (1 + min_gain_pct/100); SAME otherwise. */
KL_EXTERN(int)
kl_stats_speedup(kl_speedup *out, const double *base, const double *cand,
                 size_t n, double min_gain_pct);

/** Units from which the distribution-free interval of their median
 *  reaches 95% (with fewer, units that all agree by chance are too
 *  likely: one time in four with three). */
#define KL_STATS_SIGN_UNITS 6

/** kl_stats_speedup for samples taken in blocks of `block` rounds, block k
 *  on memory placement k % placements (placements 0: each block its own).
 *  With three or more units (blocks, or placements when they repeat) the
 *  unit is the replicate: the speedup is the geometric mean of the units'
 *  paired ratios of medians, and its interval the widest of the 95% t
 *  interval about it and the medians' own intervals, and, from
 *  KL_STATS_SIGN_UNITS units, the distribution-free interval of the units'
 *  median (so units that disagree on the side of 1 keep 1 inside). */
KL_EXTERN(int)
kl_stats_speedup_blocked(kl_speedup *out, const double *base,
                         const double *cand, size_t n, size_t block,
                         size_t placements, double min_gain_pct);

/** How the units of a blocked comparison agree. */
typedef struct kl_blocks {
  size_t size;   /**< KL_BLOCKS_INIT sets it; nothing is written past it */
  size_t units;  /**< blocks, or placements when blocks reuse them */
  size_t faster; /**< units whose paired ratio says the candidate is faster */
  size_t slower; /**< units that say it is slower */
  double spread; /**< standard deviation of the units' log ratios */
  int disagree;  /**< undecided for want of agreement: the units' mean
                      gain reaches min_gain_pct, but some units lie on
                      each side of 1 and their median's interval holds it
                      (KL_STATS_SIGN_UNITS units at least): more blocks
                      are needed */
} kl_blocks;
#define KL_BLOCKS_INIT KL_SIZED_INIT(kl_blocks)

/** The units of kl_stats_speedup_blocked's comparison and how they agree
 *  (units 0 to 2: too few to say; disagree is 0). */
KL_EXTERN(int)
kl_stats_blocks(kl_blocks *out, const double *base, const double *cand,
                size_t n, size_t block, size_t placements, double min_gain_pct);

/** Weighted geometric mean of per-shape speedups with a 95% interval
 *  (intervals combined on the log scale as independent normal errors), and
 *  the same decision rule. */
KL_EXTERN(int)
kl_stats_geomean(kl_speedup *out, const kl_speedup *shapes,
                 const double *weights, size_t n, double min_gain_pct);

KL_END_DECLS

#endif /* KERNLAB_STATS_H */
