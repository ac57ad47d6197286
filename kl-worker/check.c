/* Comparing a plugin's outputs with the oracle's: what the check and the
 * stale-outputs gate after timing share. */
#include <stdio.h>

#include "worker_internal.h"

bool klw_is_checked(const kl_plugin *pl, int p) {
  return pl->param_roles[p] == KL_PLUGIN_ROLE_OUTPUT ||
         pl->param_roles[p] == KL_PLUGIN_ROLE_INOUT;
}

/* Compare every output `inst` holds with want, adding to *t (the first
 * problem goes to t->detail). 0, or -1 with t->detail when a comparison
 * could not run. */
int klw_compare_outputs(const kl_plugin *pl, void *inst, void *const *want,
                        klw_tally *t) {
  for (int p = 0; p < pl->nparams; p++) {
    if (!klw_is_checked(pl, p)) continue;
    kl_plugin_check r;
    if (pl->check(inst, p, want[p], &r)) {
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
