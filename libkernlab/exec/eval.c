/* An evaluation's results and failures (exec_internal.h), shared by every
 * backend. */
#include "exec_internal.h"

void kl__eval_dispose(kl__eval *e) {
  kl_report_free(e->report);
  kl__free(e->error);
  kl__free(e->where);
  kl__bench_plugins_dispose(&e->plugins);
  e->report = NULL;
  e->error = e->where = NULL;
}

void kl__eval_failed(kl__eval *e, int rc) {
  const kl_error *err = kl_error_last();
  e->rc = rc;
  kl__free(e->error);
  e->error =
      kl__strdup(err && err->message ? err->message : "the evaluation failed");
}
