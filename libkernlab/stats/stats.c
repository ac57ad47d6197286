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
 * fresh buffers per block); the interval is at least the t interval over
 * per-block ratios, so a placement effect is not mistaken for a speedup. */
#include <math.h>
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
  /* The two medians' intervals are independent; on the log scale their
   * half-widths add in quadrature. */
  double h = sqrt(log_half_width(&a) * log_half_width(&a) +
                  log_half_width(&b) * log_half_width(&b));
  /* Samples that share a memory placement are not independent. With three
   * or more placements, the spread of the per-placement ratios bounds the
   * interval from below (a t interval with placements as the unit). Block
   * k of `block` rounds used placement k % placements (0: every block had
   * one of its own); blocks that reuse a placement are pooled, or the
   * interval would count one placement several times. */
  size_t nblocks = block ? n / block : 0;
  size_t units = placements && placements < nblocks ? placements : nblocks;
  if (units >= 3) {
    double *ua = kl__malloc(n * sizeof(double));
    double *ub = kl__malloc(n * sizeof(double));
    double sum = 0, sum2 = 0;
    if (!ua || !ub) {
      kl__free(ua);
      kl__free(ub);
      return kl__error_oom();
    }
    for (size_t u = 0; u < units && rc == 0; u++) {
      size_t m = 0;
      for (size_t i = 0; i < nblocks * block; i++)
        if ((i / block) % units == u) {
          ua[m] = base[i];
          ub[m] = cand[i];
          m++;
        }
      kl_summary sa, sb;
      if ((rc = kl_stats_summarize(&sa, ua, m)) == 0 &&
          (rc = kl_stats_summarize(&sb, ub, m)) == 0) {
        double r = log(sa.median) - log(sb.median);
        sum += r;
        sum2 += r * r;
      }
    }
    kl__free(ua);
    kl__free(ub);
    if (rc < 0) return rc;
    double mean = sum / (double)units;
    double var = (sum2 - (double)units * mean * mean) / (double)(units - 1);
    double hb = t95(units - 1) * sqrt(var > 0 ? var : 0) / sqrt((double)units);
    if (hb > h) h = hb;
  }
  double l = log(a.median) - log(b.median);
  out->n = n;
  out->speedup = exp(l);
  out->ci_low = exp(l - h);
  out->ci_high = exp(l + h);
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
  double wsum = 0, mean = 0, var = 0;
  for (size_t i = 0; i < n; i++)
    wsum += weights ? weights[i] : 1.0;
  if (n == 0 || wsum <= 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no shapes to combine");
  for (size_t i = 0; i < n; i++) {
    double w = (weights ? weights[i] : 1.0) / wsum;
    if (!(shapes[i].speedup > 0 && shapes[i].ci_low > 0))
      return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                       "a shape has no positive speedup");
    mean += w * log(shapes[i].speedup);
    /* a 95% interval spans about 2 * 1.96 standard errors on the log scale */
    double se = (log(shapes[i].ci_high) - log(shapes[i].ci_low)) / 3.92;
    var += w * w * se * se;
    out->n += shapes[i].n;
  }
  double half = 1.959963984540054 * sqrt(var);
  out->speedup = exp(mean);
  out->ci_low = exp(mean - half);
  out->ci_high = exp(mean + half);
  out->decision = decide(out->speedup, out->ci_low, out->ci_high, min_gain_pct);
  return 0;
}
