/** @file kernlab/history.h  What a case's records say: its runs, and a
 *  report of one run.
 *
 * Everything here reads the records kl_run_optimize leaves in the case
 * folder (solutions.jsonl, runs/<id>/run.json and summary.json, each
 * iteration's report.json, profile.json and rules.json) and never writes.
 * The numbers shown are the ones recorded: nothing is re-measured.
 */
#ifndef KERNLAB_HISTORY_H
#define KERNLAB_HISTORY_H

#include "case.h"
#include "common.h"

KL_BEGIN_DECLS

/** The case's runs, oldest first: id, start, proposer, iterations, verdict
 *  counts, best speedup against the baseline, stop reason (null when the
 *  run was killed before it could say). `format`: "text" (a table) or
 *  "json" (`{"case", "runs": [...]}`, fields in docs/json.md). A case
 *  without runs gives an empty list. @return 0, KL_EIO, KL_EINVALID (a
 *  ledger line that does not parse: located) */
KL_EXTERN(int) kl_history(kl_buf *out, const kl_case *c, const char *format);

/** The lineage of the case's versions: every candidate under the version
 *  it was compared with (its parent), with its verdict, speedups, the size
 *  of its diff against the parent and its memo. `run`: one run's tree, or
 *  NULL for the case across runs (a run whose baseline is an earlier run's
 *  accepted version, written back by kl best, hangs under it). `format`:
 *  "text" (an indented tree) or "json" (`{"case", "run", "roots",
 *  "versions": [...]}`, docs/json.md). @return 0, KL_ENOTFOUND (no such
 *  run), KL_EINVALID (bad format, or a ledger line that does not parse:
 *  located), KL_EIO */
KL_EXTERN(int)
kl_history_lineage(kl_buf *out, const kl_case *c, const char *run,
                   const char *format);

/** A ledger view of solutions.jsonl. `view`: "attempts" (the attempt
 *  ledger: every candidate, failures with their reasons) or
 *  "improvements" (the optimization ledger: the baselines and the
 *  accepted versions only). `run`: one run, or NULL for all. `format`:
 *  "text" or "json" (`{"case", "view", "run", "entries": [...]}`).
 *  @return as kl_history_lineage */
KL_EXTERN(int)
kl_history_ledger(kl_buf *out, const kl_case *c, const char *view,
                  const char *run, const char *format);

/** The case's devlog.md (docs/lineage.md): its newest whole entries within
 *  max_chars, a line first saying older ones were left out; max_chars 0:
 *  the whole file. Nothing when the case has none yet. @return 0, KL_EIO,
 *  KL_ENOMEM */
KL_EXTERN(int)
kl_history_devlog(kl_buf *out, const kl_case *c, size_t max_chars);

#define KL_HISTORY_REPORT_OPTIONS_VERSION 1
typedef struct kl_history_report_options {
  unsigned version;       /**< KL_HISTORY_REPORT_OPTIONS_VERSION */
  const char *run;        /**< the run id; NULL: the latest */
  const char *format;     /**< "html" (NULL) or "md" */
  const char *links_from; /**< links to iteration folders are relative to
                               this directory (where the report will be);
                               NULL: the case folder */
} kl_history_report_options;
#define KL_HISTORY_REPORT_OPTIONS_INIT                                         \
  { KL_HISTORY_REPORT_OPTIONS_VERSION, NULL, NULL, NULL }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_HISTORY_REPORT_OPTIONS_VERSION when built against this header) and
 * nothing past them: a program built against an older, smaller struct is never
 * overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int)
kl_history_report_options_init(kl_history_report_options *opts,
                               unsigned version);

/** A self-contained report of one run: the best-so-far curve against the
 *  baseline with its 95% band, every candidate by verdict, the per-shape
 *  table (baseline and best times, speedup with its interval, achieved
 *  bandwidth or FLOP/s and the share of the roofline where a peak was
 *  measured), the bottleneck and findings before and after, the budget
 *  spent, and a link to each iteration's folder. HTML carries its charts
 *  as inline SVG and fetches nothing; markdown suits terminals and pull
 *  requests. @return 0, KL_ENOTFOUND (no such run, or no runs),
 *  KL_EINVALID (bad options, or a record that does not parse: located),
 *  KL_EIO */
KL_EXTERN(int)
kl_history_report(kl_buf *out, const kl_case *c,
                  const kl_history_report_options *opts);

/** Read a JSON Lines ledger (solutions.jsonl, memory.jsonl): fn gets each
 *  complete record as JSON text with its 1-based line. A torn last line
 *  (a killed writer) is skipped; a missing file has no records. fn's
 *  negative return stops the reading and is returned. @return 0,
 *  KL_EINVALID ("path:line:column: message" for a line that does not
 *  parse), KL_EIO */
typedef int (*kl_ledger_fn)(const char *record, int line, void *payload);
KL_EXTERN(int) kl_ledger_read(const char *path, kl_ledger_fn fn, void *payload);

KL_END_DECLS

#endif /* KERNLAB_HISTORY_H */
