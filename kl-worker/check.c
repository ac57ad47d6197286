/* Comparing a plugin's outputs with the oracle's: what the check and the
 * stale-outputs gate after timing share. Two device plugins compare where
 * the outputs lie (the candidate's plugin runs the comparison kernel on the
 * oracle instance's device buffer); anything else is read back and compared
 * on the host by the candidate's plugin, as everything is with
 * KERNLAB_HOST_CHECKS=1 in the worker's environment (the GPU test that the
 * two ways agree; anyone who doubts the device's). A check that keeps the
 * oracle's outputs (instances.c) compares with the kept ones where they
 * exist and are proved unchanged, and hands over those it computes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker_internal.h"

bool klw_gate_off(const char *gate) {
  const char *v = getenv("KERNLAB_GATES_OFF");
  size_t n = strlen(gate);
  for (const char *p = v ? strstr(v, gate) : NULL; p; p = strstr(p + 1, gate))
    if ((p == v || p[-1] == ',') && (p[n] == '\0' || p[n] == ',')) return true;
  return false;
}

bool klw_host_checks(void) {
  const char *v = getenv("KERNLAB_HOST_CHECKS");
  return v && *v && strcmp(v, "0") != 0;
}

static bool on_device(const kl_plugin *pl, const kl_plugin *orc) {
  return orc && !klw_host_checks() && strcmp(pl->backend, "cuda") == 0 &&
         strcmp(orc->backend, "cuda") == 0 && KLW_ENTRY(pl, check_device) &&
         KLW_ENTRY(orc, device_buffer);
}

static int host_buffers(klw_want *w, const kl_plugin *pl, void *inst, char *err,
                        size_t errlen) {
  for (int p = 0; p < pl->nparams && p < 256; p++) {
    if (!klw_is_checked(pl, p) || w->host[p]) continue;
    uint64_t bytes = pl->buffer_bytes(inst, p);
    if (!(w->host[p] = malloc(bytes ? (size_t)bytes : 1))) {
      snprintf(err, errlen, "out of memory for the oracle's outputs");
      return -1;
    }
  }
  return 0;
}

/* The request's oracle instance, taken on first need; its outputs must
 * be the candidate's sizes. */
static int oracle_instance(klw_want *w, const kl_plugin *pl, void *inst,
                           char *err, size_t errlen) {
  const kl_plugin *orc = w->orc;
  if (!w->oinst &&
      klw_instance_take(orc, w->shape, w->pooled, &w->oinst, NULL) != 0) {
    w->oinst = NULL;
    snprintf(err, errlen, "create oracle: %s", orc->last_error(NULL));
    return -1;
  }
  for (int p = 0; p < pl->nparams; p++)
    if (klw_is_checked(pl, p) &&
        orc->buffer_bytes(w->oinst, p) != pl->buffer_bytes(inst, p)) {
      snprintf(err, errlen, "oracle's %s has another size", pl->param_names[p]);
      return -1;
    }
  return 0;
}

/* Hand the outputs just computed to the kept store (w->keep >= 0); on
 * success w compares with them and no longer owns them. */
static void keep_outputs(klw_want *w, const kl_plugin *pl, void *inst,
                         uint64_t seed) {
  if (w->keep < 0) return;
  if (w->on_device) {
    if ((w->from = klw_kept_device(w->keep, w->shape, seed, w->orc, w->oinst)))
      w->oinst = NULL; /* the store's now; the next seed takes another */
    return;
  }
  uint64_t bytes[256] = {0};
  for (int p = 0; p < pl->nparams; p++)
    if (w->host[p]) bytes[p] = pl->buffer_bytes(inst, p);
  if ((w->from =
           klw_kept_host(w->keep, w->shape, seed, pl->nparams, w->host, bytes)))
    memset(w->host, 0, sizeof(w->host));
}

int klw_want_compute(klw_want *w, const kl_plugin *pl, void *inst,
                     uint64_t seed, char *err, size_t errlen) {
  const kl_plugin *orc = w->orc;
  w->on_device = false;
  w->kept_hit = false;
  w->from = NULL;
  if (pl->nparams > 256) {
    snprintf(err, errlen, "too many params");
    return -1;
  }
  bool device = on_device(pl, orc);
  if (w->vary) w->keep = -1; /* kept outputs are of unvaried inputs */
  if (w->keep >= 0) {
    /* kept on the device only where the plugin can prove them unchanged */
    if (device && !(KLW_ENTRY(orc, snapshot) && KLW_ENTRY(orc, changed_bytes)))
      w->keep = -1;
    bool changed; /* the log says so; they are made again below */
    if (w->keep >= 0 &&
        (w->from = klw_kept_find(w->keep, w->shape, seed, device, &changed))) {
      w->on_device = device;
      w->kept_hit = true;
      return 0;
    }
  }
  if (!orc) {
    /* Outputs kept for later candidates come from the baseline's own
     * reference (plugin `keep`) on its own instance: a candidate's plugin
     * holds the case's reference too, but beside the candidate's code. */
    const kl_plugin *rp = pl,
                    *kp = w->keep >= 0 ? klw_plugin_at(w->keep) : NULL;
    void *rinst = inst, *own = NULL;
    if (w->keep >= 0 &&
        (!kp || kp->nparams != pl->nparams ||
         klw_instance_take(kp, w->shape, w->pooled, &own, NULL) ||
         kp->prepare(own, seed, 0))) {
      if (own) klw_instance_give(kp, w->shape, own, false);
      own = NULL;
      w->keep = -1; /* not kept, as before: the candidate's reference */
    } else if (own) {
      rp = kp;
      rinst = own;
    }
    int rc = host_buffers(w, pl, inst, err, errlen);
    if (rc == 0) {
      rc = rp->reference(rinst, w->host);
      if (rc == KL_PLUGIN_NO_REFERENCE) {
        snprintf(err, errlen,
                 "the case's oracle is the baseline: load it and "
                 "pass it as the oracle");
      } else if (rc) {
        snprintf(err, errlen, "reference failed: %s", rp->last_error(rinst));
        rc = -1;
      } else {
        keep_outputs(w, pl, inst, seed);
      }
    }
    if (own) klw_instance_give(kp, w->shape, own, w->pooled);
    return rc;
  }
  if (oracle_instance(w, pl, inst, err, errlen)) return -1;
  if (orc->prepare(w->oinst, seed, 0) ||
      (w->vary &&
       !(KLW_ENTRY(orc, vary) && orc->vary(w->oinst, w->vary) == 0)) ||
      orc->launch(w->oinst) || orc->sync(w->oinst)) {
    snprintf(err, errlen, "oracle failed: %s", orc->last_error(w->oinst));
    return -1;
  }
  if (device) {
    w->on_device = true;
    keep_outputs(w, pl, inst, seed);
    return 0;
  }
  if (host_buffers(w, pl, inst, err, errlen)) return -1;
  for (int p = 0; p < pl->nparams; p++)
    if (w->host[p] &&
        orc->read(w->oinst, p, w->host[p], orc->buffer_bytes(w->oinst, p))) {
      snprintf(err, errlen, "reading the oracle's %s: %s", pl->param_names[p],
               orc->last_error(w->oinst));
      return -1;
    }
  keep_outputs(w, pl, inst, seed);
  return 0;
}

void klw_want_release(klw_want *w, const kl_plugin *pl) {
  for (int p = 0; pl && p < pl->nparams && p < 256; p++) {
    free(w->host[p]);
    w->host[p] = NULL;
  }
  if (w->oinst) klw_instance_give(w->orc, w->shape, w->oinst, w->pooled);
  w->oinst = NULL;
  w->from = NULL;
}

/* Param p's scale against `want` into t, where it is the output closest to
 * a trivial one so far. */
static void scale_output(const kl_plugin *pl, void *inst, int p,
                         const void *want, bool on_device, klw_tally *t) {
  kl_plugin_scale s;
  memset(&s, 0, sizeof(s));
  s.struct_size = sizeof(s);
  if (KLW_ENTRY(pl, scale)(inst, p, want, on_device, &s) != 0 ||
      !(s.ref_sq > 0))
    return; /* integers, or an oracle of zeros: no scale to judge by */
  if (s.max_ulp > t->max_ulp) t->max_ulp = s.max_ulp;
  double rel = sqrt(s.err_sq / s.ref_sq), best = -1;
  double trel[KL_PLUGIN_NTRIVIAL];
  for (int k = 0; k < KL_PLUGIN_NTRIVIAL; k++) {
    trel[k] = s.trivial_sq[k] < 0 ? -1 : sqrt(s.trivial_sq[k] / s.ref_sq);
    if (trel[k] >= 0 && (best < 0 || trel[k] < best)) best = trel[k];
  }
  /* the worst output: error nearest the best trivial output's; between
   * outputs alike (a right answer: no error in any), the one whose
   * tolerance lets a trivial output through the most, which `kl check
   * --tolerance` reports (once it was always the first) */
  double ratio = best > 0 ? rel / best : rel > 0 ? INFINITY : 0;
  double kept = 1;
  for (int k = 0; k < KL_PLUGIN_NTRIVIAL && s.counted; k++)
    if (trel[k] >= 0 && (double)s.trivial_bad[k] / (double)s.counted < kept)
      kept = (double)s.trivial_bad[k] / (double)s.counted;
  /* (written so that a NaN ratio never takes the place of a number) */
  if (t->scaled && !(ratio > t->scale_ratio) &&
      !(ratio == t->scale_ratio && kept < t->scale_kept))
    return;
  t->scale_ratio = ratio;
  t->scale_kept = kept;
  t->scaled = true;
  snprintf(t->scale_param, sizeof(t->scale_param), "%s", pl->param_names[p]);
  t->rel_l2 = rel;
  for (int k = 0; k < KL_PLUGIN_NTRIVIAL; k++) {
    t->trivial_rel[k] = trel[k];
    t->trivial_bad[k] = s.trivial_bad[k];
  }
  t->elements = s.counted;
  t->rows = s.rows;
  t->ref_rms = s.counted ? sqrt(s.ref_sq / (double)s.counted) : 0;
}

int klw_compare_outputs(const kl_plugin *pl, void *inst, const klw_want *w,
                        klw_tally *t, bool scale) {
  for (int p = 0; p < pl->nparams; p++) {
    if (!klw_is_checked(pl, p)) continue;
    kl_plugin_check r;
    const void *want = w->from        ? klw_kept_output(w->from, p)
                       : w->on_device ? w->orc->device_buffer(w->oinst, p)
                                      : w->host[p];
    int rc = w->on_device ? pl->check_device(inst, p, want, &r)
                          : pl->check(inst, p, want, &r);
    if (rc) {
      snprintf(t->detail, sizeof(t->detail), "%s", pl->last_error(inst));
      return -1;
    }
    if (r.mismatches && !t->detail[0])
      snprintf(t->detail, sizeof(t->detail), "%s[%lld]: %s", pl->param_names[p],
               (long long)r.first_bad,
               r.unwritten ? "unwritten or wrong" : "mismatch");
    t->mismatches += r.mismatches;
    t->unwritten += r.unwritten;
    t->nonfinite += r.nonfinite;
    if (r.max_abs_err > t->max_abs_err) t->max_abs_err = r.max_abs_err;
    if (scale && KLW_ENTRY(pl, scale) && !klw_gate_off("scale"))
      scale_output(pl, inst, p, want, w->on_device, t);
  }
  return 0;
}
