/* What the two halves of kl_export share: the export's state (export.c
 * runs it: backup, verify, observe, decide, record) and the new text of
 * the program's file (export_section.c writes it). */
#ifndef KL_OBSERVE_EXPORT_INTERNAL_H
#define KL_OBSERVE_EXPORT_INTERNAL_H

#include <stdarg.h>

#include "kernlab/observe.h"
#include "observe_internal.h"

typedef struct exporter {
  const kl_case *c;
  kl_export_options o;
  char id[48];
  char *dir;       /* <case>/exports/<id> */
  char *ledger;    /* <case>/export.jsonl */
  char *backup;    /* dir/<basename>.orig */
  kl_buf original; /* the target as it was */
  double before[32], after[32];
  int nbefore, nafter;
  bool own_launch; /* the exported section brings kernlab_launch */
  char *function;  /* the entry without template arguments: "ns::kern" */
  char *name;      /* its unqualified name: "kern" */
  /* what the observations show, per run of each side */
  double program_before[32], program_after[32]; /* every kernel's µs */
  double entry_before[32];                      /* the entry's µs */
  int64_t entry_launches[2][32]; /* [before, after]: the entry's */
  int64_t exported_launches[32]; /* after: the section's kernels' */
  /* the section's kernels as the program will launch them: the entry's
   * own name kept (renamed kl_export_NAME when `renamed`), or the kernels
   * a launcher brings */
  char **kernels;
  size_t nkernels;
  bool renamed;
  double speedup[3]; /* on the case, and its interval; NAN: unknown */
  /* the forecast and the program's measured change, each with its
   * interval (forecast() fills them; NAN: none) */
  double share, forecast[3], measured[3];
  bool gap;
  const char *engagement; /* "engaged", "not engaged", NULL: not observed */
} exporter;

/* A progress line (the caller's on_step); here, so that the section's
 * half needs nothing of the other. */
static inline void kl__export_step(exporter *x, const char *fmt, ...)
    KL_PRINTF(2, 3);
static inline void kl__export_step(exporter *x, const char *fmt, ...) {
  if (!x->o.on_step) return;
  kl_buf b = KL_BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  int rc = kl__buf_vprintf(&b, fmt, ap);
  va_end(ap);
  if (rc == 0) x->o.on_step(b.ptr, x->o.payload);
  kl_buf_dispose(&b);
}

/* The new text of the target (x->original) with the best's section in
 * place of the entry's, made to live beside the program's own code; it
 * fills x->kernels, x->renamed. */
int kl__export_new_target(exporter *x, kl_buf *out, const char *best_source,
                          char *const *config);

/* The taker of this module's options struct (KL__OPTIONS_FUNCTIONS,
 * beside its init function): a caller's struct, whatever its version,
 * over this library's defaults. */
int kl__export_options_take(kl_export_options *full,
                            const kl_export_options *given);

#endif
