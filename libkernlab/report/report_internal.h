/* A run as its records tell it: what history.c gathers and render.c draws. */
#ifndef KL_REPORT_INTERNAL_H
#define KL_REPORT_INTERNAL_H

#include <stdbool.h>

#include "../core/internal.h"
#include "kernlab/history.h"
#include "kernlab/run.h"

/* One iteration, from its solutions.jsonl line. */
typedef struct rp_iter {
  int iteration;
  char *id, *parent, *proposer, *verdict, *reason, *gate, *memo, *dir, *config;
  bool timed; /* speedup against its parent */
  double speedup, lo, hi;
  bool has_vs_base; /* baseline and acceptances */
  double vs_base, vb_lo, vb_hi;
  char *vb_method;
  bool has_log; /* timed: estimate against the baseline */
  double log_vs_base;
  double wall_s, worker_s, usd;
  double tokens_in, tokens_out;
  char *how; /* baseline and acceptances: how its numbers were obtained
                (kl__rp_measurement_text) */
} rp_iter;

/* One rule that fired before (the baseline) or after (the best). */
typedef struct rp_finding {
  char *id, *severity, *finding, *action;
  char *shapes; /* where it fired, comma-separated */
} rp_finding;

typedef struct rp_shape {
  char *name;
  const char *better;  /* a command case's metric: "higher" or "lower";
                          NULL for a shape's time in µs */
  double bytes, flops; /* the case's roofline */
  bool has_base, has_best;
  double base_us, base_lo, base_hi;
  double best_us, best_lo, best_hi;
  bool has_speedup;
  double speedup, lo, hi;       /* best against the baseline */
  double peak_gbs, peak_gflops; /* from a profile; 0: none */
  char *bottleneck_before, *bottleneck_after;
  /* a launch of several kernels: "k1 12.3 µs memory; k2 ..." per profile
   * part, in launch order; NULL for one kernel */
  char *kernels_before, *kernels_after;
} rp_shape;

typedef struct rp_run {
  char *case_name, *backend, *id, *proposer, *strategy, *stop_reason;
  char *device, *started_text;
  double started; /* Unix seconds; 0: unknown */
  rp_iter *iters;
  size_t niters, cap_iters;
  int best; /* index into iters; -1: none */
  int counts[KL_OUTCOME_COUNT];
  rp_shape *shapes;
  size_t nshapes;
  rp_finding *before, *after;
  size_t nbefore, nafter;
  char *links; /* prefix of links to iteration folders */
  bool has_summary;
  char *webhook_status;
} rp_run;

int kl__rp_collect(rp_run *run, const kl_case *c, const char *run_id,
                   const char *links_from);
void kl__rp_dispose(rp_run *run);
int kl__rp_render_md(kl_buf *out, const rp_run *run);
/* A recorded "measurement" (JSON text, or NULL: none recorded) as one
 * paragraph (measurement.c); *out owned. */
int kl__rp_measurement_text(char **out, const char *measurement);
int kl__rp_render_html(kl_buf *out, const rp_run *run);
/* The run's versions as a tree, each under its parent, appended to b
 * (lineage_draw.c). */
int kl__rp_lineage_md(kl_buf *b, const rp_run *run);
int kl__rp_lineage_html(kl_buf *b, const rp_run *run);

/* The taker of this module's options struct (KL__OPTIONS_FUNCTIONS,
 * beside its init function): a caller's struct, whatever its version,
 * over this library's defaults. */
int kl__history_report_options_take(kl_history_report_options *full,
                                    const kl_history_report_options *given);

#endif /* KL_REPORT_INTERNAL_H */
