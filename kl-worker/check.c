/* Comparing a plugin's outputs with the oracle's: what the check and the
 * stale-outputs gate after timing share. Two device plugins compare where
 * the outputs lie (the candidate's plugin runs the comparison kernel on the
 * oracle instance's device buffer); anything else is read back and compared
 * on the host by the candidate's plugin, as everything is with
 * KERNLAB_HOST_CHECKS=1 in the worker's environment (the GPU test that the
 * two ways agree; anyone who doubts the device's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker_internal.h"

bool klw_is_checked(const kl_plugin *pl, int p) {
  return pl->param_roles[p] == KL_PLUGIN_ROLE_OUTPUT ||
         pl->param_roles[p] == KL_PLUGIN_ROLE_INOUT;
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

int klw_want_compute(klw_want *w, const kl_plugin *pl, void *inst,
                     uint64_t seed, char *err, size_t errlen) {
  const kl_plugin *orc = w->orc;
  w->on_device = false;
  if (pl->nparams > 256) {
    snprintf(err, errlen, "too many params");
    return -1;
  }
  if (!orc) {
    if (host_buffers(w, pl, inst, err, errlen)) return -1;
    int rc = pl->reference(inst, w->host);
    if (rc == KL_PLUGIN_NO_REFERENCE) {
      snprintf(err, errlen,
               "the case's oracle is the baseline: load it and "
               "pass it as the oracle");
      return rc;
    }
    if (rc) {
      snprintf(err, errlen, "reference failed: %s", pl->last_error(inst));
      return -1;
    }
    return 0;
  }
  if (orc->prepare(w->oinst, seed, 0) || orc->launch(w->oinst) ||
      orc->sync(w->oinst)) {
    snprintf(err, errlen, "oracle failed: %s", orc->last_error(w->oinst));
    return -1;
  }
  if (on_device(pl, orc)) {
    w->on_device = true;
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
  return 0;
}

void klw_want_release(klw_want *w, const kl_plugin *pl) {
  for (int p = 0; pl && p < pl->nparams && p < 256; p++) {
    free(w->host[p]);
    w->host[p] = NULL;
  }
}

int klw_compare_outputs(const kl_plugin *pl, void *inst, const klw_want *w,
                        klw_tally *t) {
  for (int p = 0; p < pl->nparams; p++) {
    if (!klw_is_checked(pl, p)) continue;
    kl_plugin_check r;
    int rc =
        w->on_device
            ? pl->check_device(inst, p, w->orc->device_buffer(w->oinst, p), &r)
            : pl->check(inst, p, w->host[p], &r);
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
  }
  return 0;
}
