/* Two gates of kl_bench_run and kl_bench_compare besides the check's
 * tolerance (docs/integrity.md): the scale gate, after the checks (a
 * candidate must be closer to the oracle than a trivial output is, by the
 * case's trivial_margin), and the roofline gate, after timing (a median
 * that moves the case's bytes faster than this machine can move memory did
 * not do the work). Each turns a failure into the report's verdict through
 * kl__bench_reject; bench.c calls them in their place on the path. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../case/case_view.h"
#include "../worker/client_internal.h"
#include "bench_internal.h"

/* An error this small (relative L2) is right whatever the trivial outputs
 * are: 16 units in the last place of the output's dtype (an output the
 * oracle makes nearly constant has trivial outputs nearly as close). */
static double scale_floor(const kl_case *c, const char *param) {
  const case_param *params = kl__case_params(c);
  kl_dtype t = KL_DTYPE_F32;
  for (size_t p = 0; param && p < kl_case_param_count(c); p++)
    if (params[p].name && strcmp(params[p].name, param) == 0)
      t = params[p].dtype;
  double eps = t == KL_DTYPE_F64    ? 0x1p-52
               : t == KL_DTYPE_F16  ? 0x1p-10
               : t == KL_DTYPE_BF16 ? 0x1p-7
                                    : 0x1p-23;
  return 16 * eps;
}

/* A trivial output in words, for reasons. */
static const char *kl_trivial_label(int which) {
  static const char *const labels[] = {"zeros", "each row's mean",
                                       "the reference's rows rolled by half",
                                       "the reference transposed"};
  return which >= 0 && which < 4 ? labels[which] : "?";
}

/* The best trivial output of a seed's check: its index, or -1. A
 * trivial output within `floor` of the oracle's (an output the oracle
 * makes constant: its mean is the oracle's) tells nothing and is passed
 * over. */
static int best_trivial(const kl_check_result *res, double floor) {
  int best = -1;
  for (int k = 0; k < 4; k++)
    if (res->trivial_rel[k] > floor &&
        (best < 0 || res->trivial_rel[k] < res->trivial_rel[best]))
      best = k;
  return best;
}

/* The check's scale into the shape's result (the seed whose error is
 * nearest its best trivial output's), and the gate: a candidate whose
 * relative L2 error is not trivial_margin times below the best trivial
 * output's is no closer to the oracle than a wrong answer is, whatever the
 * elementwise tolerance said. */
int kl__bench_scale_gate(kl_report *r, const kl_case *c,
                         const kl_check_result *res, shape_entry *e) {
  const kl_reference_info *ref = kl__case_reference(c);
  const kl_check_result *worst = NULL;
  double worst_ratio = -1;
  for (size_t i = 0; i < r->nseeds; i++) {
    int b = best_trivial(&res[i], scale_floor(c, res[i].scale_param));
    if (!res[i].scaled || b < 0) continue;
    double t = res[i].trivial_rel[b];
    double ratio = t > 0 ? res[i].rel_l2 / t : res[i].rel_l2 > 0 ? HUGE_VAL : 0;
    if (ratio > worst_ratio) worst_ratio = ratio, worst = &res[i];
    if (res[i].max_ulp > e->res.max_ulp) e->res.max_ulp = res[i].max_ulp;
  }
  for (size_t i = 0; i < r->nseeds && !e->scale_param[0]; i++) {
    if (!res[i].scaled) continue; /* the first seed measured, for kl check */
    snprintf(e->scale_param, sizeof(e->scale_param), "%s", res[i].scale_param);
    memcpy(e->trivial_rel, res[i].trivial_rel, sizeof(e->trivial_rel));
    memcpy(e->trivial_rejected, res[i].trivial_rejected,
           sizeof(e->trivial_rejected));
    e->scale_elements = res[i].scale_elements;
    e->ref_rms = res[i].ref_rms;
  }
  if (!worst) return 0;
  r->gates |= KL__GATE_TRIVIAL_OUTPUT;
  double floor = scale_floor(c, worst->scale_param);
  int b = best_trivial(worst, floor);
  e->res.scaled = 1;
  e->res.rel_l2 = worst->rel_l2;
  e->res.trivial_rel = worst->trivial_rel[b];
  e->res.trivial = kl_trivial_name(b);
  double margin = ref->trivial_margin;
  if (!(margin > 0) || worst->rel_l2 <= floor ||
      worst->rel_l2 * margin <= worst->trivial_rel[b])
    return 0;
  e->res.correct = 0;
  /* named: the trivial output whose error is nearest the candidate's */
  int like = b;
  for (int k = 0; k < 4; k++)
    if (worst->trivial_rel[k] > floor && worst->rel_l2 > 0 &&
        fabs(log(worst->rel_l2 / worst->trivial_rel[k])) <
            fabs(log(worst->rel_l2 / worst->trivial_rel[like])))
      like = k;
  char how[96];
  double times = worst->trivial_rel[like] / worst->rel_l2;
  if (times <= 1)
    snprintf(how, sizeof(how), "no closer to the reference than");
  else
    snprintf(how, sizeof(how), "only %.3g times closer to the reference than",
             times);
  return kl__bench_reject(
      r, KL_VERDICT_INCORRECT,
      "shape %s, seed %llu: %s is %s %s (relative L2 error %.3g, "
      "%s's %.3g; the closest trivial output, %s, %.3g, and a "
      "right answer is %g times closer, reference.trivial_margin): "
      "it passed the elementwise tolerance (atol %g, rtol %g), "
      "which is too loose for this output's scale",
      e->res.name, (unsigned long long)worst->seed, worst->scale_param, how,
      kl_trivial_label(like), worst->rel_l2, kl_trivial_name(like),
      worst->trivial_rel[like], kl_trivial_name(b), worst->trivial_rel[b],
      margin, ref->atol, ref->rtol);
}

/* ---- the roofline gate ------------------------------------------------------
 */

/* How much slower than the copy bound a correct kernel may legitimately
 * look fast: written lines can stay in the device's L2 past the kernel's
 * end, a case's byte count can be generous, reads run faster than copies. */
#define ROOFLINE_SLACK_DEVICE 2.0
#define ROOFLINE_SLACK_HOST 4.0

/* The best of five memcpy's moving `bytes` (bytes/2 read, bytes/2 written)
 * in this process, warm, in microseconds; 0 when it cannot tell (too
 * small to time or too large to allocate). A generous bound for host
 * kernels: the worker runs on the same memory. */
static double host_copy_us(double bytes) {
  size_t half = (size_t)(bytes / 2);
  if (bytes < 65536 || bytes > (double)(4ull << 30)) return 0;
  char *from = kl__malloc(half), *to = kl__malloc(half);
  double best = 0;
  if (from && to) {
    memset(from, 1, half);
    memset(to, 0, half);
    for (int i = 0; i < 6; i++) {
      double t0 = kl__now_ms();
      memcpy(to, from, half);
      double us = (kl__now_ms() - t0) * 1e3;
      if (i > 0 && (best == 0 || us < best)) best = us;
      from[i] = to[half - 1 - (size_t)i]; /* keep the copies observable */
    }
  }
  kl__free(from);
  kl__free(to);
  return best;
}

/* After timing: a timed candidate whose median moves the case's roofline
 * bytes faster than this machine can move memory did not do the work it
 * claims (it skipped some, or hid it from the timer). Device: the DRAM's
 * theoretical bandwidth (or a measured device copy), for cold samples or a
 * working set over four times the L2; host: one thread's memcpy of the same
 * bytes, times the slack per hardware thread. Flops are not judged. */
int kl__bench_roofline_gate(kl_report *r, const kl_case *c, kl_worker *w,
                            int cold) {
  double peak_gbps = 0, l2 = 0;
  int rc;
  if (kl_case_on_gpu(c) && (rc = kl__worker_memory(&peak_gbps, &l2, w)) < 0)
    return kl__bench_worker_failure(r, rc, NULL,
                                    "reading the device's bandwidth");
  for (size_t i = 0; i < r->nshapes; i++) {
    shape_entry *e = &r->shapes[i];
    double bytes = 0, bound_us = 0, slack;
    int s = kl_case_shape_find(c, e->res.name);
    if (!e->res.timed || kl_case_roofline(&bytes, NULL, c, s) < 0 || bytes <= 0)
      continue;
    if (kl_case_on_gpu(c)) {
      if (peak_gbps <= 0 || (!cold && bytes < 4 * l2)) continue;
      bound_us = bytes / (peak_gbps * 1e3);
      slack = ROOFLINE_SLACK_DEVICE;
    } else {
      if ((bound_us = host_copy_us(bytes)) < 1) continue;
      /* the copy is one thread's; a kernel may use every hardware thread
       * (a launcher of its own starts them: kernlab/plugin.h) */
      long cpus = sysconf(_SC_NPROCESSORS_ONLN);
      slack = ROOFLINE_SLACK_HOST * (double)(cpus < 1     ? 1
                                             : cpus > 256 ? 256
                                                          : cpus);
    }
    double t = e->res.time.median;
    r->gates |= KL__GATE_ROOFLINE;
    if (t <= 0 || t * slack >= bound_us) continue;
    r->gate = "faster_than_roofline";
    return kl__bench_reject(
        r, KL_VERDICT_CHEAT,
        "shape %s: %.3g us for the roofline's %.4g bytes is %.0f "
        "GB/s, %.1fx what this machine can move (%.0f GB/s%s): "
        "work skipped or hidden from the timer",
        e->res.name, t, bytes, bytes / (t * 1e3), bound_us / t,
        bytes / (bound_us * 1e3),
        kl_case_on_gpu(c) ? ", DRAM peak" : ", memcpy");
  }
  return 0;
}
