/* Executors (kernlab/executor.h): what the loop hands them, and how the
 * three kinds share the batch folder that ssh and slurm ship. */
#ifndef KL_EXEC_INTERNAL_H
#define KL_EXEC_INTERNAL_H

#include <pthread.h>

#include "../bench/bench_internal.h"
#include "../records/records.h"
#include "kernlab/executor.h"

/* One evaluation: kl_bench_compare (compare) or kl_bench_run of `o` on the
 * case, somewhere. */
typedef struct kl__eval {
  bool compare;
  kl_bench_options o;        /* strings are the caller's; device is set by
                                the executor */
  kl__bench_plugins plugins; /* built already (a batch folder's) */
  bool prebuilt;
  /* what came back */
  kl_report *report; /* NULL when rc < 0 */
  int rc;            /* < 0: kernlab failed to evaluate it */
  char *error;       /* then: the one-line message */
  char *where;       /* JSON object: executor, host, device, gpu,
                        and the job or batch folder */
  double seconds;    /* spent evaluating it */
} kl__eval;
void kl__eval_dispose(kl__eval *e);
/* Record a failure: the thread's last error, into e. */
void kl__eval_failed(kl__eval *e, int rc);

typedef enum exec_kind { EXEC_LOCAL, EXEC_SSH, EXEC_SLURM } exec_kind;

/* A backend: how it evaluates a batch, finds its devices (NULL: nothing to
 * find), and how many evaluations it runs at once. The dispatcher
 * (executor.c) calls them; they never call back into it. */
typedef struct kl__exec_backend {
  const char *name;
  exec_kind kind;
  int (*evaluate)(kl_executor *ex, const kl_case *c, kl__eval *ev, size_t n,
                  const char *batch_dir, const char *ledger);
  int (*devices)(kl_executor *ex, const kl_case *c);
  int (*slots)(const kl_executor *ex);
} kl__exec_backend;
extern const kl__exec_backend kl__exec_local, kl__exec_ssh, kl__exec_slurm;

struct kl_executor {
  const kl__exec_backend *backend;
  exec_kind kind;
  char *describe;
  int *devices;
  size_t ndevices;
  bool devices_known; /* listed, or found */
  char *host, *remote_kl, *remote_dir, *partition, *worker_path;
  char **ssh_options, **sbatch_options;
  int gpus, retries;
  char control_path[160]; /* ssh: the shared connection's socket */
  /* local: a worker kept per slot (slot i runs on devices[i]) between
   * evaluations, ndevices of them (or one); none with fresh_workers */
  kl__kept_worker *kept;
  size_t nkept;
  bool fresh_workers;
};

/* Evaluate ev[0..n) for case c. batch_dir: where ssh and slurm write the
 * batch (under the run's folder); ledger: the run's executor.jsonl, one
 * line per remote attempt (job ids, dropped connections). A negative
 * return is the executor giving up (unreachable after its retries): the
 * evaluations without a report say why. */
int kl__executor_evaluate(kl_executor *ex, const kl_case *c, kl__eval *ev,
                          size_t n, const char *batch_dir, const char *ledger);
/* A local executor of one slot on `device` (-1: the default GPU): what a
 * library caller without an executor gets. */
int kl__executor_one_device(kl_executor **out, const char *worker_path,
                            int device);
/* The devices an executor runs on, found when none were listed (the local
 * one asks a worker how many GPUs it sees). */
int kl__executor_devices(kl_executor *ex, const kl_case *c);

/* local.c: ev[] in parallel, one thread per device; done(i) runs on the
 * evaluating thread as each finishes. */
typedef void (*kl__eval_done_fn)(kl__eval *e, void *payload);
int kl__local_evaluate(kl_executor *ex, const kl_case *c, kl__eval *ev,
                       size_t n, kl__eval_done_fn done, void *payload);
/* "0,2,3" into ex->devices; `where` names the setting in errors. */
int kl__local_parse_devices(kl_executor *ex, const char *list,
                            const char *where);

/* batch.c: the batch folder. Build every evaluation here (a candidate
 * that does not compile gets its report at once), then write
 * DIR/jobs.json and DIR/plugins/; with copy_case the case's files go to
 * DIR/case, else jobs.json names the case's folder (a shared
 * filesystem). An existing DIR is replaced. *pending: the evaluations
 * the folder holds (those without a report yet); with none, nothing is
 * written. */
int kl__batch_write(const char *dir, const kl_case *c, kl__eval *ev, size_t n,
                    bool copy_case, size_t *pending);
/* Results the batch folder holds, into the evaluations still without a
 * report; *missing counts those left. Each one's `where` names the
 * executor and `key`: `value` (the Slurm job, the ssh folder). */
int kl__batch_collect(const char *dir, kl__eval *ev, size_t n, size_t *missing,
                      const char *executor, const char *key, const char *value);
/* A line of the run's executor.jsonl is records' (kl__executor_line_write):
 * one attempt of a batch (its Slurm job id, or the ssh destination's
 * folder), how it ended, and the words that say why. */
/* Run argv (kl__run_io) with `input` on its standard input; res->output
 * is its standard output when it exits 0, else its standard error (its
 * own words, for the message). Standard error never mixes into the
 * output: a tar stream stays a tar stream. */
int kl__exec_run(kl__run_result *res, const char *const *argv,
                 const char *input, size_t input_len, int timeout_ms,
                 size_t max_output);
/* kl__exec_run of a tar (pack or unpack); a failing one is KL_EIO with
 * its words. */
int kl__exec_tar(kl__run_result *res, const char *const *argv,
                 const char *input, size_t input_len);
/* A word for a POSIX shell: single-quoted. */
int kl__sh_quote(kl_buf *b, const char *word);

/* The taker of this module's options struct (KL__OPTIONS_FUNCTIONS,
 * beside its init function): a caller's struct, whatever its version,
 * over this library's defaults. */
int kl__executor_options_take(kl_executor_options *full,
                              const kl_executor_options *given);

#endif /* KL_EXEC_INTERNAL_H */
