/** @file kernlab/executor.h  Where candidates are evaluated: every GPU of
 *  this host, a GPU box over SSH, or a Slurm partition.
 *
 * An executor takes a batch of evaluations (check, time and compare one
 * candidate against the current best; bench or profile the baseline) and
 * hands back one report per evaluation, as kl_bench_compare would here,
 * with where it ran. The loop (kernlab/run.h) proposes a batch, has the
 * executor evaluate it, and decides in iteration order; what it records
 * depends on the batch size, never on the executor or the number of GPUs.
 *
 *   local  one worker per selected GPU (devices "0,1", or every visible
 *          one), evaluations in parallel; a host case gets one slot per
 *          listed device (default one: parallel host timings share cores).
 *          A slot keeps its worker from one evaluation to the next (no
 *          new process, CUDA context, profiler or Python imports per
 *          candidate) for as long as the evaluations in it pass every
 *          check; after a crash, a timeout, wrong outputs, a gate or an
 *          error the worker is ended and the next evaluation starts a
 *          fresh one. `fresh_workers` starts one per evaluation always.
 *          Kept workers end with kl_executor_free.
 *   ssh    compile here, evaluate on `host` with kernlab installed there
 *          (`remote_kl evaluate`), through the user's own ssh with
 *          connection sharing; the batch's plugins, case and seeds go
 *          there, the reports come back. A dropped connection is retried
 *          (`retries` times, 1, 2, 4... s apart); what the remote finished
 *          is kept there and never done twice.
 *   slurm  compile here, write the batch under the run's folder (which
 *          must be on a filesystem the nodes share), submit it with
 *          sbatch to `partition` with --gres=gpu:`gpus`, record the job
 *          id, wait; a job cancelled, failed or lost with its node is
 *          submitted again for what it left undone, `retries` times.
 *
 * Unset fields come from the user config file's `executor:` section
 * (kind, devices, host, ssh_options, remote_kl, remote_dir, partition,
 * gpus, sbatch_options, retries), then the defaults.
 *
 * Threads: a kl_executor is used by one thread at a time. The local
 * executor runs a thread per device inside kl_executor_evaluate and joins
 * them before it returns; the workers they keep live until
 * kl_executor_free.
 */
#ifndef KERNLAB_EXECUTOR_H
#define KERNLAB_EXECUTOR_H

#include "common.h"

KL_BEGIN_DECLS

#define KL_EXECUTOR_OPTIONS_VERSION 2
typedef struct kl_executor_options {
  unsigned version;    /**< KL_EXECUTOR_OPTIONS_VERSION */
  const char *kind;    /**< "local", "ssh", "slurm"; NULL: the config's,
                            else local */
  const char *devices; /**< local (and `kl evaluate`): "0,2,3"; NULL:
                            every visible GPU (one slot for host cases) */
  const char *host;    /**< ssh: [user@]host, as ssh takes it */
  const char *const *ssh_options; /**< ssh: NULL-ended arguments given to
                              ssh before the host ("-p", "2222", "-F",
                              "file"); NULL: the config's */
  const char *remote_kl;  /**< ssh, slurm: the kl program where evaluations
                               run; NULL: "kl" (found in PATH there) */
  const char *remote_dir; /**< ssh: where batches go on the host; NULL:
                              ".cache/kernlab/batches" under its home */
  const char *partition;  /**< slurm: required */
  int gpus;               /**< slurm: --gres=gpu:N and the evaluations run
                               at once per job; -1: the config's, else 1;
                               0: no GPUs asked for (host cases) */
  const char *const *sbatch_options; /**< slurm: more sbatch arguments */
  int retries;             /**< ssh, slurm: tries after the first; -1: the
                                config's, else 3 */
  const char *worker_path; /**< local: the worker; NULL: found as
                              kl_worker_create does */
  /* version 2 */
  int fresh_workers; /**< local: a new worker for every evaluation (0: a
                          slot's worker is kept while evaluations pass) */
} kl_executor_options;
#define KL_EXECUTOR_OPTIONS_INIT                                               \
  {                                                                            \
    KL_EXECUTOR_OPTIONS_VERSION, NULL, NULL, NULL, NULL, NULL, NULL, NULL, -1, \
        NULL, -1, NULL, 0                                                      \
  }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_EXECUTOR_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int)
kl_executor_options_init(kl_executor_options *opts, unsigned version);

typedef struct kl_executor kl_executor; /* opaque */

/** An executor from `opts` and the user config. @return 0, KL_EINVALID
 *  (an unknown kind, ssh without a host, slurm without a partition, a bad
 *  device list, a bad config section: located), KL_ENOMEM. Nothing is
 *  contacted yet. */
KL_EXTERN(int)
kl_executor_create(kl_executor **out, const kl_executor_options *opts);
KL_EXTERN(void) kl_executor_free(kl_executor *ex);
/** "local", "ssh" or "slurm". */
KL_EXTERN(const char *) kl_executor_kind(const kl_executor *ex);
/** One line: "local: GPUs 0,1", "ssh: me@box", "slurm: partition gpu,
 *  2 GPUs per job". */
KL_EXTERN(const char *) kl_executor_describe(const kl_executor *ex);
/** Evaluations run at once: the local executor's devices (0 until it
 *  has looked, when none were listed), the job's GPUs on Slurm, 1 over
 *  SSH (the remote `kl evaluate` spreads one batch over its GPUs). */
KL_EXTERN(int) kl_executor_slots(const kl_executor *ex);

/** Evaluate the batch folder `dir` that an ssh or slurm executor wrote
 *  (`kl evaluate DIR`): every evaluation without a result yet, in
 *  parallel over `devices` (NULL: every visible GPU), each result written
 *  to DIR/results/ as it finishes. One evaluator per folder at a time
 *  (a lock); a second waits. @return 0 when every evaluation has a
 *  result (a failed one included), KL_EINVALID (not a batch folder),
 *  KL_EIO. */
KL_EXTERN(int)
kl_evaluate_dir(const char *dir, const char *devices, const char *worker_path);

KL_END_DECLS

#endif /* KERNLAB_EXECUTOR_H */
