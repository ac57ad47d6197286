/* What kl-worker's files share.
 *
 *   serve.c         the request loop: one JSON request per line,
 *                   dispatched by its "op" to one file per operation;
 *                   kl-worker's main.c and the Python worker call it
 *   protocol.c      request lines in and reply lines out, on fd 3
 *   op_load.c       load a plugin
 *   op_check.c      check a candidate against the oracle (check.c: the
 *                   comparisons time's verification shares)
 *   op_time.c       time one or two plugins: the request, the sampler,
 *                   the stale-outputs gate, the reply
 *   sampler.c       the one sampling loop, host and device alike, driven
 *                   through a timer (start, mark, launch, collect)
 *   timer_host.c    the host's timer: clock_gettime around each launch
 *   timer_cupti.c   the device's timer: CUPTI activity records
 *   op_device.c     which device, its clocks and memory
 *   op_profile.c    hardware counters (cupti_profiler.c, perf_counters.c)
 *   launch_guard.c  the launch contract, judged by CUPTI callbacks around
 *                   every launch of a candidate; the one CUPTI subscriber
 */
#ifndef KLW_WORKER_INTERNAL_H
#define KLW_WORKER_INTERNAL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernlab/plugin.h"
#include "kernlab/worker_serve.h"

/* ---- protocol.c
 * ---------------------------------------------------------------- */

/* The next request line (NULL: the parent went away). */
char *klw_read_line(void);
/* Send one reply line (takes the object). */
void klw_reply(json_object *o);
/* A failed request that the timed (or checked) code caused: "code":
 * "cheat", its gate and the index of the culprit plugin in the request.
 * The client turns it into a CHEAT verdict, not a kernlab failure. */
void klw_reply_cheat(const char *gate, int culprit, const char *text);
void klw_reply_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* A failure the parent tells apart by its "code" (the profiler's
 * "permission", "unavailable", ...). */
void klw_reply_code(const char *code, const char *msg);
/* Its reply object, for a caller that adds fields before klw_reply. */
json_object *klw_failure(const char *code, const char *msg);
int64_t klw_get_int(json_object *req, const char *key, int64_t dflt);
double klw_get_double(json_object *req, const char *key, double dflt);
/* Microseconds on a monotonic clock. */
double klw_now_us(void);

/* ---- op_load.c
 * ------------------------------------------------------------------- */

/* {"op":"load","path":P}: dlopen a plugin (or have the loader make it),
 * give it the next id. */
void klw_op_load(json_object *req);
/* {"op":"notes","plugin":N} -> {"ok":true,"notes":{...}|null}: what the
 * plugin noticed about its calls (kl_plugin.notes). */
void klw_op_notes(json_object *req);
/* Who makes the plugins loads name (NULL: dlopen), for serve.c. */
void klw_set_loader(kl_plugin_loader load);
/* A loaded plugin by id, or NULL. */
const kl_plugin *klw_plugin_at(int64_t id);
/* How many loads this worker was asked for, refused ones too: 0 means no
 * plugin's code has run in it. */
int klw_loads_asked(void);

/* ---- launch_guard.c
 * ------------------------------------------------------------- */

/* pl->launch(inst), a device plugin's under the launch contract's guard:
 * nonzero when the launch failed or made a forbidden call (allocation,
 * free, host copy, synchronisation) by whatever route; klw_launch_error
 * then says why. An instance's first launch is not judged (the harness
 * makes its scratch there). */
int klw_launch(const kl_plugin *pl, void *inst);
/* The kernels the last klw_launch of a device plugin ran, by name (CUPTI's
 * launch callbacks); NULL where they are not known (a host plugin, no
 * CUPTI). Valid until the next klw_launch. */
#define KLW_LAUNCH_KERNELS 32
typedef struct klw_launch_kernels {
  bool valid;
  int n;          /* distinct names (at most the first 32) */
  uint64_t total; /* kernel launches */
  uint64_t hash[KLW_LAUNCH_KERNELS];
  char name[KLW_LAUNCH_KERNELS][96]; /* the first 95 bytes of each */
} klw_launch_kernels;
const klw_launch_kernels *klw_last_launch_kernels(void);
/* fn() with the launch guard's copy window open but nothing judged: a
 * CUDA graph's replay, whose copies and memsets are the sample's work as a
 * launch's are. Returns fn's result. */
int klw_launch_window(int (*fn)(void));

/* ---- graph_launch.c (CUPTI builds)
 * ------------------------------------------------------- */

/* A device plugin's launch captured in a CUDA graph: klw_graph_capture
 * runs klw_launch(pl, inst) on the instance's stream in capture mode
 * (judged as a timed launch; never an instance's first launch) and
 * instantiates what it queued: 0, KLW_GRAPH_LAUNCH saying why the launch
 * cannot run under graphs, or KLW_GRAPH_ENV (the driver's graph API
 * failed or is missing: nobody's launch to blame). klw_graph_replay
 * launches the graph on `stream`. */
typedef struct klw_graph klw_graph;
#define KLW_GRAPH_LAUNCH (-1) /* the launch cannot be captured: its fault */
#define KLW_GRAPH_ENV (-2)    /* the driver or this process failed */
int klw_graph_capture(const kl_plugin *pl, void *inst, klw_graph **out,
                      char *err, size_t errlen);
int klw_graph_replay(klw_graph *g, void *stream, char *err, size_t errlen);
void klw_graph_free(klw_graph *g);
/* timed_work.c: what a plugin's checked launches ran at a shape, and
 * whether a timed launch ran it too. klw_work_checked after each check
 * launch (`first`: the instance's first, which may run one-time kernels);
 * klw_work_timed after each timed launch: NULL, or why it falls short (it
 * skipped a kernel every checked launch ran), in a static buffer. */
void klw_work_checked(const kl_plugin *pl, int shape, bool first);
const char *klw_work_timed(const kl_plugin *pl, int shape);
/* Whether the plugin's checked launches at the shape ran a kernel. */
bool klw_work_expected(const kl_plugin *pl, int shape);
const char *klw_launch_error(const kl_plugin *pl, void *inst);
/* Whether a copy or memset record's correlation id is one queued inside a
 * launch (its time is the sample's work); klw_copies_forget empties the
 * list (each request starts it anew, the timer after every window). */
bool klw_copy_in_launch(uint32_t correlation);
void klw_copies_forget(void);
/* pl->destroy(inst), and the guard forgets the instance. */
void klw_destroy(const kl_plugin *pl, void *inst);
/* Hand every kernel the runtime launches (its symbol) to watcher (NULL:
 * none) until changed; false without CUPTI callbacks. */
bool klw_watch_kernels(void (*watcher)(const char *symbol));

/* ---- check.c, op_check.c
 * ------------------------------------------------------------ */

/* What comparing a plugin's outputs with the oracle's found. */
typedef struct klw_tally {
  uint64_t mismatches, unwritten, nonfinite;
  double max_abs_err;
  char detail[160];
  /* scale (plugins with scale(), float outputs whose oracle is not all
   * zeros): of the outputs, the one whose relative L2 error is closest to
   * a trivial output's (kl_plugin_scale) */
  bool scaled;
  char scale_param[64];
  double rel_l2;                          /* |out - want| / |want| */
  double trivial_rel[KL_PLUGIN_NTRIVIAL]; /* the trivial outputs'; -1: n/a */
  uint64_t trivial_bad[KL_PLUGIN_NTRIVIAL];
  uint64_t elements, rows;
  double ref_rms;     /* sqrt(sum want^2 / elements) of that output */
  double scale_ratio; /* rel_l2 over the best trivial output's */
  double scale_kept;  /* of that output's elements, the share of a trivial
                         output's that the tolerance rejects, least of the
                         four: the weakest output wins a tie of ratios */
  double max_ulp;     /* over every output */
} klw_tally;

/* A plugin's entry `member`, or NULL when the plugin's struct_size does not
 * cover it (built against an older plugin.h) or it has none. */
#define KLW_ENTRY(pl, member)                                                  \
  ((pl)->struct_size >= offsetof(kl_plugin, member) + sizeof((pl)->member)     \
       ? (pl)->member                                                          \
       : NULL)

/* KERNLAB_HOST_CHECKS is set (not "0"): compare and snapshot on the host
 * even where the device could. */
bool klw_host_checks(void);
/* KERNLAB_GATES_OFF (comma-separated: scale, timed_work) names `gate`: for
 * measuring what a gate costs (bench/integrity_cost.sh), never for use;
 * the report says so. */
bool klw_gate_off(const char *gate);

/* Is parameter p one the check compares (an output or in-out)? (Here, not
 * in check.c: the instances' pool asks it too, and check.c uses the pool.) */
static inline bool klw_is_checked(const kl_plugin *pl, int p) {
  return pl->param_roles[p] == KL_PLUGIN_ROLE_OUTPUT ||
         pl->param_roles[p] == KL_PLUGIN_ROLE_INOUT;
}

/* The oracle's outputs kept for (key, shape, seed) (instances.c). */
typedef struct klw_kept klw_kept;

/* The oracle's outputs for one seed: another plugin's instance run on the
 * same inputs, whose outputs stay on the device when both plugins compare
 * there (KLW_ENTRY check_device, device_buffer), else read back into
 * host[]; or, without an oracle plugin, the candidate's own host
 * reference in host[]; or outputs kept from an earlier check (keep >= 0,
 * instances.c). One per request: its oracle instance taken on first need
 * (from the pool when `pooled`), its host buffers made on first need. */
typedef struct klw_want {
  const kl_plugin *orc;
  void *oinst;
  int shape;
  bool pooled;
  int keep;             /* keep the outputs under this key; -1: not kept */
  bool on_device;       /* the last klw_want_compute left them there */
  bool kept_hit;        /* the last one found them kept by an earlier check */
  const klw_kept *from; /* the kept outputs compared with, or NULL */
  uint64_t vary;        /* the oracle's inputs get vary(seed) too; 0: none */
  void *host[256];
} klw_want;
#define KLW_WANT_INIT(orc_, shape_, pooled_)                                   \
  { .orc = (orc_), .shape = (shape_), .pooled = (pooled_), .keep = -1 }

/* Run the oracle (orc of w, or pl's reference on inst, which was prepared
 * with seed and varied by w->vary) on seed's inputs varied so, or find its
 * outputs kept. 0;
 * KL_PLUGIN_NO_REFERENCE when pl has no reference and w no oracle; -1 with
 * err on failure. */
int klw_want_compute(klw_want *w, const kl_plugin *pl, void *inst,
                     uint64_t seed, char *err, size_t errlen);
void klw_want_release(klw_want *w, const kl_plugin *pl);
/* Compare every output `inst` holds with w's, adding to *t (the first
 * problem goes to t->detail); with `scale`, also measure each output's
 * distance beside the trivial outputs' (t->scaled). 0, or -1 with t->detail
 * when a comparison could not run. */
int klw_compare_outputs(const kl_plugin *pl, void *inst, const klw_want *w,
                        klw_tally *t, bool scale);
/* {"op":"check",...}: fresh seeds, poisoned outputs, inputs intact, work
 * after return. */
void klw_op_check(json_object *req);

/* ---- instances.c
 * ---------------------------------------------------------------- */

/* An instance of pl at shape: an idle one from the pool (use_pool) or a
 * new one (*made, when made is not NULL). 0, or create's nonzero
 * (pl->last_error(NULL) says why). */
int klw_instance_take(const kl_plugin *pl, int shape, bool use_pool,
                      void **inst, bool *made);
/* Done with inst (NULL: nothing): into the pool (use_pool, while it has
 * room), else destroyed. */
void klw_instance_give(const kl_plugin *pl, int shape, void *inst,
                       bool use_pool);
/* Destroy every pooled instance; how many there were. */
size_t klw_instances_release(void);
/* {"op":"release"} -> {"ok":true,"released":n} */
void klw_op_release(json_object *req);

/* Kept outputs of (key, shape, seed) kept the `device` way, proved unchanged
 * since they were made; NULL when there are none, or when they had changed
 * (*changed: they are dropped, and the log says so). */
const klw_kept *klw_kept_find(int key, int shape, uint64_t seed, bool device,
                              bool *changed);
/* Keep the outputs oinst (of orc) holds, snapshotted now; the store owns
 * oinst from then on. NULL (oinst still the caller's) when they do not fit
 * or the snapshot failed. */
const klw_kept *klw_kept_device(int key, int shape, uint64_t seed,
                                const kl_plugin *orc, void *oinst);
/* Keep host[p] (bytes[p] long; NULL: not an output), hashed now; the store
 * owns the buffers from then on. NULL (still the caller's) when they do not
 * fit. */
const klw_kept *klw_kept_host(int key, int shape, uint64_t seed, int nparams,
                              void *const *host, const uint64_t *bytes);
/* Output p of k: a device pointer when klw_kept_on_device, else host. */
const void *klw_kept_output(const klw_kept *k, int p);
bool klw_kept_on_device(const klw_kept *k);

/* ---- op_time.c, sampler.c, timer_*.c
 * ---------------------------------------------- */

/* A time request's parameters, parsed and clamped once for both timers. */
typedef struct klw_time_req {
  int shape, cold, warmup;
  size_t min_n, max_n, block_rounds;
  double target, cap_us, decide_gain;
  uint64_t seed;
  int verify;  /* re-check the timed outputs against oracle (stale_outputs) */
  int oracle;  /* plugin id, or -1: the timed plugin's own reference */
  bool pooled; /* the first placement set and the oracle from the pool */
  bool graph;  /* time each launch replayed from a CUDA graph */
  double probe_true_us; /* the probe kernel's true duration here, or 0: the
                           KERNEL records' fixed part stays in the samples */
} klw_time_req;

/* One measurement as the sampler runs it: what to time (one plugin, or
 * two interleaved A B B A ...), the samples so far, and the timer's own
 * state. inst[] are the request's instances: prepared on the request's
 * seed, the first placement. */
typedef struct klw_sampling {
  const klw_time_req *tr;
  const kl_plugin **pl;
  void **inst;
  int np;
  size_t block_rounds; /* rounds per placement, sized from the warm-up */
  size_t placements;   /* placement sets rotated through; 0: a fresh one
                          every block */
  size_t n;            /* rounds sampled */
  double *us[2];       /* per plugin, max_n each: the samples */
  double *mhz[2];      /* per plugin: the SM clock of each sample (device) */
  /* where the wall time went, in us (the reply's "costs"): the timer's
   * start and the warm-up, the placement sets, queueing rounds (the host
   * timer: timing them), waiting for the device at each window's end (the
   * device timer adds it in collect), and the host's work after that
   * (records cut into samples, clocks, the stopping rule) */
  double warmup_us, place_us, queue_us, wait_us, collect_us;
  double ready_us; /* of place_us: sets made between windows (not part of
                      the sampling wall the reply reports) */
  char err[512];   /* why the sampler stopped on an error */
  /* an error that is the timed code's doing, not the worker's: the gate
   * it failed ("launch_contract": it broke the launch contract while
   * timed; "timed_work": a sample launched no kernel) and which of the
   * request's plugins did it; NULL: the worker's own failure */
  const char *gate;
  int culprit;
  bool stretched; /* the time cap was stretched while blocks disagreed */
  /* inputs varied every round (plugin vary(), by the sampler after the
   * timer's set): the seed each plugin's instance was last varied with,
   * 0: none */
  bool vary;
  uint64_t varied[2];
  void *state; /* the timer's */
} klw_sampling;

/* How samples are taken: the host's clock or CUPTI's records. The sampler
 * calls start (before anything), warmup (returns one round's time, which
 * sizes the placement blocks), place (the placement pool; the largest
 * window of rounds the timer queues between collections), then per window
 * ready (may be NULL: what the window's rounds need, made before they are
 * queued), per round the instance set to use (set), and per sample mark
 * (restore, flush, marker/clock probe) and launch (the kernel: timed now by
 * the host, queued on the device), and collect after each window (the
 * device syncs and cuts its records into samples); last names the instance
 * the candidate's last timed outputs are in and the placement block of its
 * inputs; reply adds the timer's own fields; stop releases what start and
 * place made. Errors: -1 with s->err. */
typedef struct klw_timer {
  const char *name;
  int (*start)(klw_sampling *s);
  int (*warmup)(klw_sampling *s, double *round_us);
  int (*place)(klw_sampling *s, size_t *window);
  int (*ready)(klw_sampling *s, size_t first, size_t rounds);
  void **(*set)(klw_sampling *s, size_t round);
  int (*mark)(klw_sampling *s, int k, void *inst);
  int (*launch)(klw_sampling *s, int k, void *inst, size_t index);
  int (*collect)(klw_sampling *s);
  void (*last)(klw_sampling *s, void **inst, size_t *block);
  void (*reply)(klw_sampling *s, json_object *o);
  void (*stop)(klw_sampling *s);
  /* one more launch of plugin k's instance as the samples launched it (a
   * CUDA graph's replay in graph mode), for the stale-outputs gate; NULL:
   * klw_launch */
  int (*relaunch)(klw_sampling *s, int k, void *inst);
} klw_timer;

extern const klw_timer klw_timer_host;
#ifdef KL_HAVE_CUPTI
extern const klw_timer klw_timer_cupti;
#endif

/* After a launch of plugin k failed while timed: where s->err says it
 * broke the launch contract (a call a launcher may not make, a scratch
 * region asked for after the first launch), the plugin's fault. */
void klw_blame_launch(klw_sampling *s, int k);

/* The one sampling loop (sampler.c): warm up, size the placement blocks,
 * sample rounds window by window until the interval is narrow enough,
 * the decision at decide_gain can no longer change, max_n or the time
 * cap; *reason says which, *start_us when sampling began. 0, or -1 with
 * s->err. */
int klw_sample(klw_sampling *s, const klw_timer *t, const char **reason,
               double *start_us);
/* The inputs of placement block b: block 0 keeps the request's seed, later
 * blocks get fresh inputs. */
uint64_t klw_block_seed(uint64_t seed, size_t b);
/* The vary() seed of timed round `round` (never 0). */
uint64_t klw_vary_seed(uint64_t seed, size_t round);

/* {"op":"time",...} */
void klw_op_time(json_object *req);

/* Evict the host's last-level cache without leaving dirty lines; the
 * bytes the flush reads (timer_host.c). */
int klw_flush_host_caches(void);
size_t klw_flush_host_bytes(void);

/* ---- op_device.c, op_profile.c
 * ------------------------------------------------------ */

/* {"op":"device"(,"memory":1)}: the device, its clocks and memory peak. */
void klw_op_device(json_object *req);
/* The worker's device (the first it sees): its UUID and the driver's
 * version (cuDriverGetVersion); 0, or -1 without a device. */
int klw_device_identity(char *uuid, size_t n, int *driver);
/* {"op":"calibrate"}: the timer's probe kernel's true duration, by the
 * range profiler, in a fresh worker (op_calibrate.c). */
void klw_op_calibrate(json_object *req);
/* {"op":"profile"}: hardware counters of one launch (op_profile.c). */
void klw_op_profile(json_object *req);
/* {"op":"metric_passes"}: check names and count passes, offline for a
 * named chip or for this device (op_profile.c). */
void klw_op_metric_passes(json_object *req);
/* Give the device's counters back (the profiler stays enabled between
 * profiles); serve.c calls it on quit, before it answers, and op_time.c
 * before it times anything. */
void klw_profile_release(void);

#endif /* KLW_WORKER_INTERNAL_H */
