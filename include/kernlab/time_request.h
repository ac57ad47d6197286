/** @file kernlab/time_request.h  A time request's fields: name and default.
 *
 * kl_time_options (kernlab/worker.h) travels to kl-worker as the fields of
 * a `{"op":"time"}` request, each under its name in the struct. This
 * header is the one definition of those names and of the defaults:
 * KL_TIME_OPTIONS_INIT is made of the defaults, the client writes the
 * names (libkernlab/worker/requests.c, and a batch's jobs.json for another
 * machine), and kl-worker, which does not include the client's header,
 * reads them and takes the same default for a field a request leaves out.
 * Macros only: nothing here is a symbol.
 */
#ifndef KERNLAB_TIME_REQUEST_H
#define KERNLAB_TIME_REQUEST_H

/* flush caches before every sample */
#define KL_TIME_KEY_COLD "cold"
#define KL_TIME_DEFAULT_COLD 1
/* untimed launches per plugin first */
#define KL_TIME_KEY_WARMUP "warmup"
#define KL_TIME_DEFAULT_WARMUP 2
#define KL_TIME_KEY_MIN_SAMPLES "min_samples"
#define KL_TIME_DEFAULT_MIN_SAMPLES 10
#define KL_TIME_KEY_MAX_SAMPLES "max_samples"
#define KL_TIME_DEFAULT_MAX_SAMPLES 1000
/* the 95% interval's half-width, relative, that stops sampling */
#define KL_TIME_KEY_TARGET_REL_CI "target_rel_ci"
#define KL_TIME_DEFAULT_TARGET_REL_CI 0.005
#define KL_TIME_KEY_TIME_CAP_MS "time_cap_ms"
#define KL_TIME_DEFAULT_TIME_CAP_MS 2000
/* the inputs used while timing */
#define KL_TIME_KEY_SEED "seed"
#define KL_TIME_DEFAULT_SEED 1
/* fresh buffers every this many rounds */
#define KL_TIME_KEY_BLOCK_ROUNDS "block_rounds"
#define KL_TIME_DEFAULT_BLOCK_ROUNDS 16
/* < 0: no early stop on a settled decision */
#define KL_TIME_KEY_DECIDE_GAIN_PCT "decide_gain_pct"
#define KL_TIME_DEFAULT_DECIDE_GAIN_PCT (-1.0)
#define KL_TIME_KEY_VERIFY "verify"
#define KL_TIME_DEFAULT_VERIFY 0
/* -1: the timed plugin's own host reference */
#define KL_TIME_KEY_ORACLE "oracle"
#define KL_TIME_DEFAULT_ORACLE (-1)
/* Not an option of kl_time_options: the worker handle's own (its
 * device's calibration, libkernlab/worker/calibration.c). The true
 * duration (us) of the timer's probe kernel on this device; the CUPTI
 * timer subtracts its KERNEL records' fixed part from every sample. 0: no
 * calibration, the records' spans as they are. */
#define KL_TIME_KEY_PROBE_TRUE_US "probe_true_us"
#define KL_TIME_DEFAULT_PROBE_TRUE_US 0.0

#endif /* KERNLAB_TIME_REQUEST_H */
