/* Representative configurations of one kernel in an observation (of every
 * instantiation of a template it names: an instantiation is part of a
 * configuration).
 *
 * Launches are bucketed by launch geometry (grid, block, dynamic shared
 * memory) and the bytes of their scalar arguments; pointer arguments (the
 * ones the driver knew as addresses) do not split buckets, since the same
 * work on other buffers is the same configuration. A bucket whose
 * durations spread wide (p95/p25 above split_ratio, with at least four
 * timed launches) holds two behaviours, e.g. cold and warm caches or
 * data-dependent work: it is split at the geometric middle of p25 and p95
 * into a fast and a slow half, so neither hides the other. Buckets are
 * ranked by their share of the kernel's recorded GPU time, and the first
 * ones are kept until they cover the target share or K are kept. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "observe_internal.h"

/* Whether byte k of a is in one of its address words. */
static bool masked(const kl__obs_arg *a, size_t k) {
  for (size_t w = 0; w < a->nwords; w++)
    if (k >= a->word_at[w] && k < a->word_at[w] + 8) return true;
  return false;
}

static int cmp_launch(const void *pa, const void *pb) {
  const kl__obs_launch *a = *(const kl__obs_launch *const *)pa;
  const kl__obs_launch *b = *(const kl__obs_launch *const *)pb;
  if (a->kernel != b->kernel) return a->kernel < b->kernel ? -1 : 1;
  for (int i = 0; i < 3; i++) {
    if (a->grid[i] != b->grid[i]) return a->grid[i] < b->grid[i] ? -1 : 1;
    if (a->block[i] != b->block[i]) return a->block[i] < b->block[i] ? -1 : 1;
  }
  if (a->shared != b->shared) return a->shared < b->shared ? -1 : 1;
  if (a->nargs != b->nargs) return a->nargs < b->nargs ? -1 : 1;
  for (size_t i = 0; i < a->nargs; i++) {
    const kl__obs_arg *x = &a->args[i], *y = &b->args[i];
    if (x->pointer != y->pointer) return x->pointer ? -1 : 1;
    if (x->pointer) continue;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    if (!x->bytes || !y->bytes) {
      if (x->bytes != y->bytes) return x->bytes ? 1 : -1;
      continue;
    }
    /* the addresses in a struct do not make another configuration */
    for (size_t k = 0; k < x->size; k++) {
      uint8_t u = masked(x, k) ? 0 : x->bytes[k];
      uint8_t v = masked(y, k) ? 0 : y->bytes[k];
      if (u != v) return u < v ? -1 : 1;
    }
  }
  return 0;
}

static int cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return a < b ? -1 : a > b;
}

/* Linear interpolation between order statistics of sorted v. */
static double quantile(const double *v, size_t n, double q) {
  if (n == 0) return NAN;
  double pos = q * (double)(n - 1);
  size_t lo = (size_t)pos;
  if (lo + 1 >= n) return v[n - 1];
  return v[lo] + (pos - (double)lo) * (v[lo + 1] - v[lo]);
}

static int cmp_config(const void *pa, const void *pb) {
  const kl__obs_config *a = pa, *b = pb;
  if (a->total_us != b->total_us) return a->total_us > b->total_us ? -1 : 1;
  return a->launches > b->launches ? -1 : a->launches < b->launches;
}

/* The configuration of durations d[0..n) (sorted), `launches` in all. */
static void describe(kl__obs_config *c, const kl__obs_launch *first,
                     const char *half, const double *d, size_t n,
                     int64_t launches) {
  c->first = first;
  c->half = half;
  c->launches = launches;
  c->total_us = 0;
  for (size_t i = 0; i < n; i++)
    c->total_us += d[i];
  c->p25 = quantile(d, n, 0.25);
  c->p50 = quantile(d, n, 0.50);
  c->p95 = quantile(d, n, 0.95);
}

void kl__obs_configs_dispose(kl__obs_configs *c) {
  if (c) kl__free(c->all);
}

int kl__obs_configs_make(kl__obs_configs *out, const kl_observation *o,
                         const kl_configs_options *opts) {
  memset(out, 0, sizeof *out);
  kl_configs_options def = KL_CONFIGS_OPTIONS_INIT;
  if (!opts) opts = &def;
  double share = opts->share > 0 ? opts->share : 0.9;
  double split = opts->split_ratio > 0 ? opts->split_ratio : 1.5;
  int max_k = opts->max_configs > 0 ? opts->max_configs : 8;
  if (share > 1 || split < 1)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "share must be in (0, 1] and the split ratio >= 1");
  int rc = kl__obs_pick_kernel(&out->kernel, o, opts->kernel, true);
  if (rc < 0) return rc;
  /* a name stands for every instantiation of a template it names */
  bool *in = kl__calloc(o->nkernels ? o->nkernels : 1, sizeof *in);
  if (!in) return kl__error_oom();
  bool by_name =
      opts->kernel && kl__obs_same_name(&o->kernels[out->kernel], opts->kernel);
  for (size_t k = 0; k < o->nkernels; k++)
    in[k] = k == out->kernel ||
            (by_name && kl__obs_same_name(&o->kernels[k], opts->kernel));
  size_t n = 0;
  for (size_t i = 0; i < o->nlaunches; i++)
    n += in[o->launches[i].kernel];
  if (n == 0) {
    kl__free(in);
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                     "%s: '%s' ran %lld times, but no launch of it was "
                     "recorded in full (observed with another --kernel?)",
                     o->path, o->kernels[out->kernel].name,
                     (long long)o->kernels[out->kernel].launches);
  }
  const kl__obs_launch **ls = kl__calloc(n, sizeof *ls);
  double *d = kl__calloc(n, sizeof *d);
  /* at most two configurations per bucket */
  out->all = kl__calloc(2 * n, sizeof *out->all);
  if (!ls || !d || !out->all) {
    kl__free(in);
    kl__free(ls);
    kl__free(d);
    kl__obs_configs_dispose(out);
    return kl__error_oom();
  }
  n = 0;
  for (size_t i = 0; i < o->nlaunches; i++)
    if (in[o->launches[i].kernel]) ls[n++] = &o->launches[i];
  kl__free(in);
  qsort(ls, n, sizeof *ls, cmp_launch);
  for (size_t s = 0; s < n;) {
    size_t e = s + 1;
    while (e < n && cmp_launch(&ls[s], &ls[e]) == 0)
      e++;
    size_t nd = 0;
    for (size_t i = s; i < e; i++) {
      if (isnan(ls[i]->us))
        out->untimed++;
      else
        d[nd++] = ls[i]->us;
    }
    qsort(d, nd, sizeof *d, cmp_double);
    for (size_t i = 0; i < nd; i++)
      out->recorded_us += d[i];
    double p25 = quantile(d, nd, 0.25), p95 = quantile(d, nd, 0.95);
    if (nd >= 4 && p25 > 0 && p95 / p25 > split) {
      double cut = sqrt(p25 * p95);
      size_t nf = 0;
      while (nf < nd && d[nf] <= cut)
        nf++;
      describe(&out->all[out->nall++], ls[s], "fast", d, nf, (int64_t)nf);
      describe(&out->all[out->nall++], ls[s], "slow", d + nf, nd - nf,
               (int64_t)(e - s - nf));
    } else {
      describe(&out->all[out->nall++], ls[s], "", d, nd, (int64_t)(e - s));
    }
    s = e;
  }
  kl__free(ls);
  kl__free(d);
  qsort(out->all, out->nall, sizeof *out->all, cmp_config);
  for (size_t i = 0; i < out->nall; i++)
    out->all[i].share =
        out->recorded_us > 0 ? out->all[i].total_us / out->recorded_us : 0;
  while (out->nkept < out->nall && (int)out->nkept < max_k &&
         out->kept_share < share - 1e-12)
    out->kept_share += out->all[out->nkept++].share;
  return 0;
}

double kl__obs_cover(const kl__obs_configs *c, size_t k) {
  double s = 0;
  for (size_t i = 0; i < k && i < c->nall; i++)
    s += c->all[i].share;
  return s;
}
