/** @file kernlab/worker.h  Run plugins in a child process.
 *
 * The worker is a separate process (the `kl-worker` program) that loads
 * plugins and answers requests: check a candidate against its oracle, time
 * one or two plugins. Candidate code runs only there: a candidate that
 * crashes, hangs or exits kills only the worker. The parent enforces a time
 * limit per request, reports CRASHED (KL_ECRASHED, with the signal and the
 * tail of the worker's stderr) or TIMEOUT (KL_ETIMEOUT), and starts a fresh
 * worker for the next request, loading the same plugins again under the
 * same ids. A kl_worker is used by one thread at a time.
 */
#ifndef KERNLAB_WORKER_H
#define KERNLAB_WORKER_H

#include "common.h"
#include "time_request.h"

KL_BEGIN_DECLS

typedef struct kl_worker kl_worker;

#define KL_WORKER_OPTIONS_VERSION 1
typedef struct kl_worker_options {
  unsigned version;        /**< KL_WORKER_OPTIONS_VERSION */
  const char *worker_path; /**< NULL: $KERNLAB_WORKER, else next to the
                                library, else the installed one */
  int timeout_ms;          /**< per request; 0: 60 s */
  int device;              /**< CUDA device index, -1: the default (0); the
                                worker sees only this device.
                                KL_DEVICE_IDLEST: of two or more GPUs (and no
                                CUDA_VISIBLE_DEVICES), the idlest by NVML
                                (fewest processes, then utilisation, then
                                memory in use), else the default */
} kl_worker_options;
#define KL_WORKER_OPTIONS_INIT                                                 \
  { KL_WORKER_OPTIONS_VERSION, NULL, 0, -1 }
#define KL_DEVICE_IDLEST (-2)
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_WORKER_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int)
kl_worker_options_init(kl_worker_options *opts, unsigned version);

/** Start a worker. @return 0, KL_ENOTFOUND (no kl-worker), KL_EIO. */
KL_EXTERN(int) kl_worker_create(kl_worker **out, const kl_worker_options *opts);
/** Stop it (asks it to quit, then kills it). NULL is a no-op. */
KL_EXTERN(void) kl_worker_free(kl_worker *w);
/** Change the time limit of later requests. */
KL_EXTERN(void) kl_worker_set_timeout(kl_worker *w, int timeout_ms);
/** How many times the worker was started again after a crash or timeout. */
KL_EXTERN(int) kl_worker_restarts(const kl_worker *w);

/** The CUDA device the worker sees (device 0 of its CUDA_VISIBLE_DEVICES). */
typedef struct kl_device_info {
  size_t size; /**< KL_DEVICE_INFO_INIT sets it; nothing is written past it */
  int count;   /**< CUDA devices visible; 0 when none */
  char name[128];          /**< e.g. "NVIDIA H200" */
  double max_sm_clock_mhz; /**< as the driver reports it, 0 if unknown */
  int sms;                 /**< multiprocessors */
  char why[256];           /**< when count is 0: why */
  char uuid[48]; /**< "GPU-...": the device as NVML and CUDA_VISIBLE_DEVICES
                      name it; "" when the driver does not say */
} kl_device_info;
#define KL_DEVICE_INFO_INIT KL_SIZED_INIT(kl_device_info)

/** Ask the worker which CUDA device it has (the driver is opened there, so
 *  this works, and says no, on machines without CUDA). */
KL_EXTERN(int) kl_worker_device(kl_device_info *out, kl_worker *w);

/** Load a plugin (a shared object exporting kl_plugin_v1); *id names it in
 *  later requests. @return 0, KL_EINVALID (not a plugin, wrong ABI). */
KL_EXTERN(int) kl_worker_load(int *id, kl_worker *w, const char *path);

/** What one check on one seed found. */
typedef struct kl_check_result {
  size_t size; /**< KL_CHECK_RESULT_INIT sets it; nothing is written past it */
  uint64_t seed;
  int correct;             /**< no mismatch and no input written */
  uint64_t mismatches;     /**< summed over outputs */
  uint64_t unwritten;      /**< output elements left poisoned */
  uint64_t nonfinite;      /**< NaN/Inf where the oracle is finite */
  uint64_t inputs_written; /**< inputs the kernel modified */
  double max_abs_err;
  char detail[160];    /**< first problem, e.g. "c[17]: mismatch" */
  uint64_t late_bytes; /**< output bytes that changed after launch and
                            sync had returned (work left running) */
  int busy_threads;    /**< host: threads still running after the
                            launch returned */
  double settle_ms;    /**< the pause of the work-after-return check */
  double oracle_ms;    /**< making the oracle's outputs for this seed (or
                            proving kept ones unchanged) */
  int oracle_kept;     /**< the oracle's outputs were kept from an earlier
                            check on this seed, not computed again */
  /* Added after the first release: a caller whose size stops before them
   * still works (they are not written). The scale of the output nearest a
   * trivial one (docs/integrity.md): set where the plugin measures it
   * (float outputs whose oracle is not all zeros). */
  int scaled;                   /**< the fields below were measured */
  char scale_param[64];         /**< which output */
  double rel_l2;                /**< |out - oracle| / |oracle| (L2 norms) */
  double trivial_rel[4];        /**< the same for zeros, the row means, the rows
                                     rolled by half, the transpose (KL_TRIVIAL_*);
                                     -1 where one does not apply */
  uint64_t trivial_rejected[4]; /**< elements of each trivial output the
                                     elementwise tolerance rejects */
  uint64_t scale_elements;      /**< elements measured */
  double ref_rms; /**< the oracle's root mean square over that output */
  double max_ulp; /**< largest error in units in the last place (every
                       float output) */
} kl_check_result;
#define KL_TRIVIAL_ZEROS 0
#define KL_TRIVIAL_MEAN 1
#define KL_TRIVIAL_ROLLED 2
#define KL_TRIVIAL_TRANSPOSED 3
/** "zeros", "mean", "rolled", "transposed"; NULL past them. */
KL_EXTERN(const char *) kl_trivial_name(int which);
#define KL_CHECK_RESULT_INIT KL_SIZED_INIT(kl_check_result)

/** Check `plugin` at `shape` on each seed: the oracle is plugin `oracle`'s
 *  outputs on the same inputs, or (oracle = -1) the plugin's own host
 *  reference. results must hold nseeds entries, each of results[0].size
 *  bytes (KL_CHECK_RESULT_INIT).
 *  @return 0, KL_ECRASHED, KL_ETIMEOUT, KL_EINVALID. */
KL_EXTERN(int)
kl_worker_check(kl_check_result *results, kl_worker *w, int plugin, int oracle,
                int shape, const uint64_t *seeds, size_t nseeds);

#define KL_TIME_OPTIONS_VERSION 2
typedef struct kl_time_options {
  unsigned version;       /**< KL_TIME_OPTIONS_VERSION */
  int cold;               /**< flush caches before every sample (default 1) */
  int warmup;             /**< untimed launches per plugin first (default 2) */
  size_t min_samples;     /**< default 10 (the time cap may stop sampling
                               sooner, never before 3 samples) */
  size_t max_samples;     /**< default 1000 */
  double target_rel_ci;   /**< stop when the 95% CI half-width of the median
                               (or of the speedup) is below this; 0.005 */
  int time_cap_ms;        /**< stop after this much sampling; default 2000 */
  uint64_t seed;          /**< inputs used while timing */
  size_t block_rounds;    /**< fresh buffers every this many rounds, so
                               memory placement varies (default 16) */
  double decide_gain_pct; /**< two plugins: also stop once the speedup's
                               interval settles the decision at this minimum
                               gain (wholly above 1+g, below 1/(1+g), or
                               inside both), once three blocks were
                               sampled; < 0 (default): off */
  int verify;             /**< after sampling, compare the outputs the last
                               plugin's last placement block left with the
                               oracle on that block's inputs (each block after
                               the first gets fresh inputs; if the last block
                               is the first, one more launch on fresh inputs):
                               results computed once and handed back later
                               are caught */
  int oracle;             /**< verify against this plugin; -1: the timed
                               plugin's own host reference */
} kl_time_options;
/* the defaults: kernlab/time_request.h, which kl-worker reads them from */
#define KL_TIME_OPTIONS_INIT                                                   \
  {                                                                            \
    KL_TIME_OPTIONS_VERSION, KL_TIME_DEFAULT_COLD, KL_TIME_DEFAULT_WARMUP,     \
        KL_TIME_DEFAULT_MIN_SAMPLES, KL_TIME_DEFAULT_MAX_SAMPLES,              \
        KL_TIME_DEFAULT_TARGET_REL_CI, KL_TIME_DEFAULT_TIME_CAP_MS,            \
        KL_TIME_DEFAULT_SEED, KL_TIME_DEFAULT_BLOCK_ROUNDS,                    \
        KL_TIME_DEFAULT_DECIDE_GAIN_PCT, KL_TIME_DEFAULT_VERIFY,               \
        KL_TIME_DEFAULT_ORACLE                                                 \
  }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_TIME_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int) kl_time_options_init(kl_time_options *opts, unsigned version);

/** Where one time request's wall time went, as the worker measured it
 *  (milliseconds), and for device plugins what the device did while
 *  sampling (microseconds, summed over the sampling windows; 0 for host
 *  plugins). The device's idle time between samples is dev_span_us less
 *  the four kinds of work. */
typedef struct kl_time_costs {
  double setup_ms;       /**< the request's instances made and prepared */
  double warmup_ms;      /**< the timer started, warm-up rounds */
  double place_ms;       /**< the placement sets made */
  double queue_ms;       /**< rounds queued (host plugins: and timed) */
  double wait_ms;        /**< waiting for the device at each window's end */
  double collect_ms;     /**< records cut into samples, the stopping rule */
  double verify_ms;      /**< the stale-outputs gate (verify) */
  double dev_span_us;    /**< each window's first record's start to its
                              last record's end */
  double dev_restore_us; /**< restores between samples (memsets, copies) */
  double dev_flush_us;   /**< cold-cache flushes */
  double dev_probe_us;   /**< sample markers and SM clock probes */
  double dev_timed_us;   /**< the samples themselves */
  /** the device's idle time by what followed it: the gaps before
   *  restores, flushes, probes and the timed work */
  double dev_idle_before_restore_us, dev_idle_before_flush_us,
      dev_idle_before_probe_us, dev_idle_before_work_us;
  size_t dev_windows; /**< sampling windows (one synchronisation each) */
} kl_time_costs;

/** Samples of one time request: us[k][i] is plugin k's i-th sample, in
 *  microseconds; with two plugins, samples i of both were taken back to
 *  back (order alternating each round). */
typedef struct kl_samples {
  size_t size; /**< KL_SAMPLES_INIT sets it; nothing is written past it */
  size_t n;
  size_t nplugins;
  double *us[2];
  char stop_reason[32]; /**< "converged", "decided", "time_cap" or
                             "max_samples" */
  double wall_ms;       /**< sampling wall time, flushes included (the
                             placement sets made between windows and the
                             stale-outputs gate are in costs) */
  double flush_bytes;   /**< bytes read per cold flush (host) */
  double flush_us;      /**< device: mean duration of the L2 flush kernel */
  double *mhz[2];       /**< device plugins: the SM clock measured just
                             before each sample (NULL for host plugins) */
  char timer[16];       /**< "cupti" (device) or "clock_gettime" (host) */
  size_t placements;    /**< distinct placements the blocks cycled through
                             (0: every block had a fresh one) */
  size_t block_rounds;  /**< rounds per placement block actually used
                             (smaller than asked when the time cap fits
                             fewer than eight blocks) */
  int verified;         /**< kl_time_options.verify ran */
  uint64_t stale[2];    /**< per plugin: output elements that differed
                             from the oracle after timing (only the last
                             plugin is verified) */
  char stale_detail[2][160]; /**< the first of them */
  kl_time_costs costs;       /**< where the request's time went */
  /* Added after the first release: a caller whose size stops before
   * them still works (they are not written). */
  char gate[32]; /**< after KL_EREJECTED: the gate the timed code failed
                      ("launch_contract": it broke the launch contract
                      while timed; "timed_work": a timed sample launched
                      no kernel); "" otherwise */
  int culprit;   /**< after KL_EREJECTED: the index in `plugins` of the
                      plugin that did it */
  int stretched; /**< the time cap was stretched (up to twice) because the
                      blocks of a pair disagreed (kl_blocks.disagree) */
  /* How busy the machine was while sampling (all 0 where it cannot be
   * known): other processes' CPU time in CPUs' worth (1.0: one CPU kept
   * busy throughout; neither the worker nor this process counts), the CPUs
   * online, and the 1-minute load average at the end. */
  double others_cpus, cpus, loadavg;
  char launch[8];          /**< "stream", or "graph": each sample was a CUDA
                                graph's replay (kl_worker_time_launch) */
  char tracing[12];        /**< device: the CUPTI records timed, "kernel"
                                (kernels serialised, not instrumented),
                                "concurrent" (the first plugin's launch used two
                                streams, or either was a graph of kernels KERNEL
                                records cannot time: kernels overlap,
                                instrumented) or "serialised"
                                (kernel records; the second plugin's launch used
                                two streams, its overlap not counted); "" for host
                                plugins */
  double calibration_us;   /**< device, KERNEL records: what was subtracted
                                from every sample, the records' fixed part
                                (probe_records_us less probe_true_us); 0:
                                the records' spans as they are (concurrent
                                records, KERNLAB_CALIBRATE=0, or a device
                                that cannot be calibrated) */
  double probe_records_us; /**< the timer's probe kernel on its records, in
                                this request (0: not measured) */
  double probe_true_us;    /**< its true duration on this device (the range
                                profiler's gpu__time_duration, kept per
                                device in the cache folder) */
  int varied;              /**< every sample's inputs were changed in a few
                                places before it (kl_plugin.vary), and the
                                stale-outputs check saw the last sample's */
} kl_samples;
#define KL_SAMPLES_INIT KL_SIZED_INIT(kl_samples)
/** Free what *s holds; *s is empty again and keeps its size. */
KL_EXTERN(void) kl_samples_dispose(kl_samples *s);

/** Time one or two plugins at `shape`. @return 0, KL_ECRASHED, KL_ETIMEOUT,
 *  KL_EINVALID, KL_ERROR (the worker could not do it), or KL_EREJECTED: a
 *  timed plugin behaved otherwise than when checked (out->gate and
 *  out->culprit say how and which; no samples). */
KL_EXTERN(int)
kl_worker_time(kl_samples *out, kl_worker *w, const int *plugins,
               size_t nplugins, int shape, const kl_time_options *opts);
/** kl_worker_time with the samples launched as `launch` says
 *  (KL_LAUNCH_STREAM, as kl_worker_time does, or KL_LAUNCH_GRAPH). */
KL_EXTERN(int)
kl_worker_time_launch(kl_samples *out, kl_worker *w, const int *plugins,
                      size_t nplugins, int shape, const kl_time_options *opts,
                      int launch);

KL_END_DECLS

#endif /* KERNLAB_WORKER_H */
