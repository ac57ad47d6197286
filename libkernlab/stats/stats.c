/* Robust statistics: medians with distribution-free intervals, paired
 * log-ratio speedups, and the faster/slower/same decision.
 *
 * The interval of the median of n samples is [x(lo), x(hi)] with ranks from
 * the binomial(n, 1/2) distribution: the smallest symmetric pair whose
 * coverage reaches 95%. It assumes nothing about the shape of the timing
 * distribution, which is skewed and heavy-tailed in practice. A speedup is
 * the ratio of the two medians of interleaved samples (interleaving exposes
 * both sides to the same drift); its interval combines the two medians'
 * intervals on the log scale. The median of per-pair ratios was tried first
 * and gave intervals five times wider on host timings: timing distributions
 * are sharply peaked, and a ratio of two draws smears the peak out.
 * Samples come in blocks that share a memory placement (the worker makes
 * fresh buffers per block), and drift and bursts of foreign load move
 * whole blocks: with three blocks or more the block is the replicate. The
 * speedup is the mean of the blocks' paired log ratios; its interval is at
 * least the t interval over them and the sign-test interval of their
 * median, so neither a placement effect nor a noisy minute that a few
 * blocks saw is mistaken for a speedup (bench/README.md, "A/A"). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "kernlab/stats.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* P(B <= k) for B ~ binomial(n, 1/2), in log space for large n. */
static double binom_cdf_half(size_t n, size_t k) {
  double log_half_n = (double)n * log(0.5), sum = 0, log_c = 0;
  for (size_t i = 0; i <= k; i++) {
    if (i > 0) log_c += log((double)(n - i + 1)) - log((double)i);
    sum += exp(log_c + log_half_n);
  }
  return sum;
}

void kl_stats_median_ci_ranks(size_t n, size_t *lo, size_t *hi) {
  *lo = 0;
  *hi = n ? n - 1 : 0;
  if (n < 6) return; /* too few for 95%: the whole range */
  /* The interval [x(k), x(n-1-k)] (0-based) misses the median when at
   * most k samples fall below it or at most k above: coverage is
   * 1 - 2 P(B <= k). Take the largest k with P(B <= k) <= 2.5%. */
  size_t k;
  if (n > 1000) { /* normal approximation; one rank wider to stay safe */
    double half = 1.959963984540054 * sqrt((double)n) / 2.0;
    double kk = floor((double)n / 2.0 - half) - 1.0;
    k = kk > 0 ? (size_t)kk : 0;
  } else {
    size_t first_over = 0;
    while (first_over + 1 < n / 2 && binom_cdf_half(n, first_over) <= 0.025)
      first_over++;
    k = first_over > 0 ? first_over - 1 : 0;
  }
  *lo = k;
  *hi = n - 1 - k;
}

static double quantile_sorted(const double *s, size_t n, double q) {
  if (n == 0) return 0;
  double pos = q * (double)(n - 1);
  size_t i = (size_t)pos;
  double frac = pos - (double)i;
  return i + 1 < n ? s[i] + frac * (s[i + 1] - s[i]) : s[n - 1];
}

int kl_stats_summarize(kl_summary *out, const double *x, size_t n) {
  memset(out, 0, sizeof(*out));
  if (n == 0) return 0;
  double *s = kl__malloc(n * sizeof(*s));
  if (!s) return kl__error_oom();
  memcpy(s, x, n * sizeof(*s));
  qsort(s, n, sizeof(*s), cmp_double);
  out->n = n;
  out->median = quantile_sorted(s, n, 0.5);
  out->q1 = quantile_sorted(s, n, 0.25);
  out->q3 = quantile_sorted(s, n, 0.75);
  out->min = s[0];
  out->max = s[n - 1];
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += s[i];
  out->mean = sum / (double)n;
  size_t lo, hi;
  kl_stats_median_ci_ranks(n, &lo, &hi);
  out->ci_low = s[lo];
  out->ci_high = s[hi];
  double iqr = out->q3 - out->q1;
  for (size_t i = 0; i < n; i++)
    if (s[i] < out->q1 - 1.5 * iqr || s[i] > out->q3 + 1.5 * iqr)
      out->outliers++;
  out->rel_ci =
      out->median > 0 ? (out->ci_high - out->ci_low) / 2.0 / out->median : 0;
  kl__free(s);
  return 0;
}

const char *kl_decision_name(kl_decision d) {
  switch (d) {
  case KL_DECISION_FASTER:
    return "faster";
  case KL_DECISION_SLOWER:
    return "slower";
  default:
    return "same";
  }
}

static kl_decision decide(double speedup, double lo, double hi,
                          double min_gain_pct) {
  double gain = 1.0 + min_gain_pct / 100.0;
  if (lo > 1.0 && speedup >= gain) return KL_DECISION_FASTER;
  if (hi < 1.0 && speedup <= 1.0 / gain) return KL_DECISION_SLOWER;
  return KL_DECISION_SAME;
}

/* Half-width of a summary's interval on the log scale. */
static double log_half_width(const kl_summary *s) {
  return (log(s->ci_high) - log(s->ci_low)) / 2.0;
}

/* Two-sided 95% quantile of Student's t with df degrees of freedom. */
static double t95(size_t df) {
  static const double t[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447,
                             2.365, 2.306,  2.262, 2.228, 2.201, 2.179, 2.160,
                             2.145, 2.131,  2.120, 2.110, 2.101, 2.093, 2.086,
                             2.080, 2.074,  2.069, 2.064, 2.060, 2.056, 2.052,
                             2.048, 2.045,  2.042};
  return df < KL_ARRAY_SIZE(t) ? t[df] : 1.96 + 2.4 / (double)df;
}

/* The units of a blocked comparison: blocks of `block` rounds, pooled by
 * placement (block k used placement k % placements; 0: each its own). Unit
 * u's log ratio of medians goes to r[u]; returns the count (0 when there
 * are no whole blocks). Blocks that reuse a placement are pooled, or one
 * placement would count as several replicates. */
static int unit_ratios(double *r, size_t *units, const double *base,
                       const double *cand, size_t n, size_t block,
                       size_t placements) {
  size_t nblocks = block ? n / block : 0;
  *units = placements && placements < nblocks ? placements : nblocks;
  if (*units == 0) return 0;
  double *ua = kl__malloc(n * sizeof(double));
  double *ub = kl__malloc(n * sizeof(double));
  int rc = 0;
  if (!ua || !ub) rc = kl__error_oom();
  for (size_t u = 0; u < *units && rc == 0; u++) {
    size_t m = 0;
    for (size_t i = 0; i < nblocks * block; i++)
      if ((i / block) % *units == u) {
        ua[m] = base[i];
        ub[m] = cand[i];
        m++;
      }
    kl_summary sa, sb;
    if ((rc = kl_stats_summarize(&sa, ua, m)) == 0 &&
        (rc = kl_stats_summarize(&sb, ub, m)) == 0) {
      if (!(sa.median > 0 && sb.median > 0))
        rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                       "timing samples must be positive");
      else
        r[u] = log(sa.median) - log(sb.median);
    }
  }
  kl__free(ua);
  kl__free(ub);
  return rc;
}

/* Units and agreement (kl_blocks) from their log ratios; *t_half and
 * *sign_lo, *sign_hi are the t interval's half-width about the mean and the
 * distribution-free interval of the units' median (log scale). */
static void blocks_of(kl_blocks *b, double *r, size_t units, double *mean,
                      double *t_half, double *sign_lo, double *sign_hi) {
  double sum = 0, sum2 = 0;
  for (size_t u = 0; u < units; u++) {
    sum += r[u];
    b->faster += r[u] > 0;
    b->slower += r[u] < 0;
  }
  *mean = sum / (double)units;
  for (size_t u = 0; u < units; u++)
    sum2 += (r[u] - *mean) * (r[u] - *mean);
  b->units = units;
  b->spread = units > 1 ? sqrt(sum2 / (double)(units - 1)) : 0;
  *t_half = units > 1 ? t95(units - 1) * b->spread / sqrt((double)units) : 0;
  qsort(r, units, sizeof(*r), cmp_double);
  size_t lo, hi;
  kl_stats_median_ci_ranks(units, &lo, &hi);
  *sign_lo = r[lo];
  *sign_hi = r[hi];
}

int kl_stats_blocks(kl_blocks *out, const double *base, const double *cand,
                    size_t n, size_t block, size_t placements,
                    double min_gain_pct) {
  size_t size = out->size;
  memset(out, 0, size);
  out->size = size;
  kl_blocks b = KL_BLOCKS_INIT;
  double *r = n ? kl__malloc(n * sizeof(double)) : NULL;
  if (n && !r) return kl__error_oom();
  size_t units = 0;
  int rc = unit_ratios(r, &units, base, cand, n, block, placements);
  if (rc == 0 && units >= 3) {
    double mean, t_half, slo, shi;
    blocks_of(&b, r, units, &mean, &t_half, &slo, &shi);
    (void)t_half;
    double gain = log(1.0 + (min_gain_pct > 0 ? min_gain_pct : 0) / 100.0);
    b.disagree = units >= KL_STATS_SIGN_UNITS && b.faster > 0 && b.slower > 0 &&
                 fabs(mean) >= gain && slo <= 0 && shi >= 0;
  } else if (rc == 0) {
    b.units = units;
  }
  kl__free(r);
  if (rc == 0) memcpy(out, &b, size < sizeof(b) ? size : sizeof(b));
  out->size = size;
  return rc;
}

int kl_stats_speedup_blocked(kl_speedup *out, const double *base,
                             const double *cand, size_t n, size_t block,
                             size_t placements, double min_gain_pct) {
  memset(out, 0, sizeof(*out));
  if (n == 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no samples to compare");
  kl_summary a, b;
  int rc = kl_stats_summarize(&a, base, n);
  if (rc == 0) rc = kl_stats_summarize(&b, cand, n);
  if (rc < 0) return rc;
  if (!(a.ci_low > 0 && b.ci_low > 0))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "timing samples must be positive");
  /* Within: the two medians' intervals are independent; on the log scale
   * their half-widths add in quadrature. */
  double h = sqrt(log_half_width(&a) * log_half_width(&a) +
                  log_half_width(&b) * log_half_width(&b));
  double l = log(a.median) - log(b.median), lo = l - h, hi = l + h;
  /* Between: samples of one block (or placement) are not independent, and
   * drift and bursts of foreign load move whole blocks. With three units
   * or more, the unit is the replicate: the estimate is the mean of the
   * units' paired log ratios, and the interval the widest of the t
   * interval about it, the distribution-free interval of the units'
   * median (a sign test: units that disagree on the side of 1 keep it
   * inside), and the within interval about the estimate. */
  double *r = kl__malloc(n * sizeof(double));
  if (!r) return kl__error_oom();
  size_t units = 0;
  rc = unit_ratios(r, &units, base, cand, n, block, placements);
  if (rc == 0 && units >= 3) {
    kl_blocks bl = KL_BLOCKS_INIT;
    double t_half, slo, shi;
    blocks_of(&bl, r, units, &l, &t_half, &slo, &shi);
    double half = t_half > h ? t_half : h;
    lo = l - half;
    hi = l + half;
    if (units >= KL_STATS_SIGN_UNITS) { /* its coverage reaches 95% */
      lo = fmin(lo, slo);
      hi = fmax(hi, shi);
    }
  }
  kl__free(r);
  if (rc < 0) return rc;
  out->n = n;
  out->speedup = exp(l);
  out->ci_low = exp(lo);
  out->ci_high = exp(hi);
  out->decision = decide(out->speedup, out->ci_low, out->ci_high, min_gain_pct);
  return 0;
}

int kl_stats_speedup(kl_speedup *out, const double *base, const double *cand,
                     size_t n, double min_gain_pct) {
  return kl_stats_speedup_blocked(out, base, cand, n, 0, 0, min_gain_pct);
}

int kl_stats_geomean(kl_speedup *out, const kl_speedup *shapes,
                     const double *weights, size_t n, double min_gain_pct) {
  memset(out, 0, sizeof(*out));
  double wsum = 0, mean = 0, var_lo = 0, var_hi = 0;
  for (size_t i = 0; i < n; i++)
    wsum += weights ? weights[i] : 1.0;
  if (n == 0 || wsum <= 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no shapes to combine");
  for (size_t i = 0; i < n; i++) {
    double w = (weights ? weights[i] : 1.0) / wsum;
    if (!(shapes[i].speedup > 0 && shapes[i].ci_low > 0))
      return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                       "a shape has no positive speedup");
    double l = log(shapes[i].speedup);
    mean += w * l;
    /* a 95% interval reaches about 1.96 standard errors each side on the
     * log scale; a blocked interval need not be symmetric, so each side
     * is combined on its own (one shape keeps its interval) */
    double lo = fmax(l - log(shapes[i].ci_low), 0) / 1.959963984540054;
    double hi = fmax(log(shapes[i].ci_high) - l, 0) / 1.959963984540054;
    var_lo += w * w * lo * lo;
    var_hi += w * w * hi * hi;
    out->n += shapes[i].n;
  }
  out->speedup = exp(mean);
  out->ci_low = exp(mean - 1.959963984540054 * sqrt(var_lo));
  out->ci_high = exp(mean + 1.959963984540054 * sqrt(var_hi));
  out->decision = decide(out->speedup, out->ci_low, out->ci_high, min_gain_pct);
  return 0;
}
