/* Worker requests the library uses internally (client.c). */
#ifndef KL_CLIENT_INTERNAL_H
#define KL_CLIENT_INTERNAL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernlab/worker.h"

/* What the worker's sandbox holds, as a JSON object (core/sandbox.c);
 * borrowed, lives as long as w. */
const char *kl__worker_sandbox(const kl_worker *w);
/* Have the worker make its device's CUDA context now (where there is a
 * device; nothing otherwise), so that its first request later does not. */
int kl__worker_warm(kl_worker *w);
/* The same without waiting: the request is sent, and its reply read (and
 * dropped) before the next request's, so the worker makes the context
 * while the caller does something else. */
int kl__worker_warm_begin(kl_worker *w);
/* The plugin paths loaded into w, by id (*n of them); borrowed, until the
 * next load. */
char *const *kl__worker_plugin_paths(const kl_worker *w, size_t *n);
/* The worker's process id (-1: none runs now). */
int kl__worker_pid(const kl_worker *w);
/* The worker's own reason (redacted) for the last load it refused, as it
 * gave it: no "worker: <path>: " before it. NULL after a load that worked
 * or failed otherwise (a crash, a timeout); borrowed, until the next load. */
const char *kl__worker_load_refused(const kl_worker *w);
/* The Python worker (kl-pyworker): $KERNLAB_PYWORKER, else beside the
 * kl-worker this library would start. NULL, with the error set, when
 * there is none; the caller frees it. */
char *kl__find_pyworker(void);
/* The `kl` program: $KERNLAB_KL, else bin/kl of the prefix the kl-worker
 * this library would start lies in (libexec/kernlab/../../bin/kl), else
 * "kl" (looked up on PATH when run). The caller frees it; NULL only when
 * out of memory. */
char *kl__find_kl(void);

/* ---- the warm Python worker (zygote.c) */
struct kl__sandbox;
/* Is `worker_path` a Python worker that a warm parent may fork, with this
 * sandbox (one that walls off our abstract sockets), and is that not
 * turned off (KERNLAB_PYWORKER_WARM=0)? */
bool kl__zygote_wanted(const char *worker_path, const struct kl__sandbox *sb);
/* A worker forked by the warm parent (started if none listens), in sandbox
 * sb, serving on `chan` and logging to `log_fd`: *pid, and *conn, the
 * connection its exit status will come on. An error (nothing started) when
 * the parent cannot be started or does not answer within timeout_ms: the
 * caller execs the worker instead. */
int kl__zygote_spawn(int *conn, pid_t *pid, const char *pyworker,
                     const struct kl__sandbox *sb, int chan, int log_fd,
                     int timeout_ms);
/* The raw wait status of a warm parent's worker, once it has ended: 0, or
 * -1 when the connection ends or nothing comes within timeout_ms. */
int kl__zygote_status(int conn, int *status, int timeout_ms);

/* Counters of one launch of plugin at shape (the reply as the worker sent
 * it; see libkernlab/worker/op_profile.c). Crashes and timeouts are the
 * usual KL_ECRASHED / KL_ETIMEOUT; the reply may still say ok:false. */
/* The plugin's notes (kl_plugin.notes) as the text of a JSON object, or
 * *out NULL when it has none. */
int kl__worker_notes(char **out, kl_worker *w, int plugin);
int kl__worker_profile(json_object **reply, kl_worker *w, int plugin, int shape,
                       char *const *metrics, size_t n, uint64_t seed);
/* The CUPTI records a time request names (kl_samples.tracing): "kernel",
 * "concurrent" or "serialised" as given; anything else (an older or a
 * foreign worker, a hand-edited report) as "". */
const char *kl__tracing_name(const char *name);
/* Check metric names and count passes: offline for a named chip (e.g.
 * "GH100"), else on the worker's device. */
int kl__worker_metric_passes(size_t *passes, kl_worker *w, const char *chip,
                             char *const *metrics, size_t n);
/* 0 for ok:true; else KL_EINVALID (e.g. an unknown metric) or
 * KL_EUNSUPPORTED (no counters here: permissions, vGPU, no CUPTI), with the
 * worker's message. */
int kl__worker_reply_status(json_object *reply, const char *what);
/* Whether w's check, time and profile requests take their instances from
 * the worker's pool and give them back to it (kl-worker/instances.c): one
 * evaluation's shapes are made once for its check, profile and timing. */
void kl__worker_pool(kl_worker *w, bool on);
/* Destroy the worker's pooled instances (nothing when no worker runs). */
int kl__worker_release(kl_worker *w);
/* Whether w's checks keep the oracle's outputs in the worker under `key`
 * (-1: they do not), for later checks on the same seeds to compare with. */
void kl__worker_keep_oracle(kl_worker *w, int key);
/* Device 0's theoretical DRAM bandwidth (2 x memory clock x bus width) in
 * GB/s and its L2 size in bytes; both 0 where there is no device. */
int kl__worker_memory(double *peak_gbps, double *l2_bytes, kl_worker *w);

#endif /* KL_CLIENT_INTERNAL_H */
