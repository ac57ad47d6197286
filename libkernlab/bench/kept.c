/* A worker kept between evaluations (bench_internal.h says when it is kept
 * and when it is ended, and when its replacement starts). Its plugins are
 * loaded once by path: the case's baseline serves every evaluation of a run
 * under one id, and a candidate profiled after its comparison is not loaded
 * (for a Python case: not imported and compiled) again. The worker's own plugin
 * table is bounded (kl-worker's MAX_PLUGINS), so a worker that has loaded
 * KEPT_MAX_PLUGINS is ended after the evaluation that reached it. */
#include <signal.h>
#include <string.h>

#include "../worker/client_internal.h"
#include "bench_internal.h"

#define KEPT_MAX_PLUGINS 48

/* The replacement's thread: start the worker, publish its process (so that
 * kl__kept_worker_end can kill it mid-load rather than wait), then load the
 * baseline and make the device's context, unless it is no longer wanted. Until
 * joined, only this thread touches k (but for the two atomics). A failure
 * leaves k without a worker: the next evaluation starts one itself and sees the
 * error. */
static void *spare_main(void *arg) {
  kl__kept_worker *k = arg;
  char *base = k->spare_base;
  k->spare_base = NULL;
  if (kl_worker_create(&k->w, &k->spare_opts) < 0) {
    kl_error_clear();
    kl__free(base);
    return NULL;
  }
  atomic_store(&k->spare_pid, kl__worker_pid(k->w));
  int id = -1;
  if (!atomic_load(&k->spare_abandon) &&
      ((base && kl_worker_load(&id, k->w, base) < 0) ||
       kl__worker_warm(k->w) < 0)) {
    kl_error_clear(); /* the next evaluation will say why */
    kl_worker_free(k->w);
    k->w = NULL;
  }
  kl__free(base);
  return NULL;
}

static void spare_join(kl__kept_worker *k) {
  if (!k->spare_running) return;
  pthread_join(k->spare, NULL);
  k->spare_running = false;
}

void kl__kept_worker_end(kl__kept_worker *k) {
  if (!k) return;
  if (k->spare_running) { /* not wanted: kill it rather than wait */
    atomic_store(&k->spare_abandon, 1);
    int pid = atomic_load(&k->spare_pid);
    if (pid > 0) kill(pid, SIGKILL);
    spare_join(k);
  }
  kl_worker_free(k->w);
  kl__free(k->worker_path);
  kl__free(k->spare_base);
  memset(k, 0, sizeof(*k));
}

int kl__kept_worker_take(kl_worker **out, kl__kept_worker *k,
                         const kl_worker_options *wopts) {
  spare_join(k); /* the replacement, ready or not */
  const char *path = wopts->worker_path ? wopts->worker_path : "";
  if (k->worker_path &&
      (k->device != wopts->device || strcmp(k->worker_path, path)))
    kl__kept_worker_end(k); /* another device or program: start afresh */
  if (!k->w) {
    kl__free(k->worker_path);
    if (!(k->worker_path = kl__strdup(path))) return kl__error_oom();
    k->device = wopts->device;
    int rc = kl_worker_create(&k->w, wopts);
    if (rc < 0) {
      kl__kept_worker_end(k);
      return rc;
    }
  }
  kl_worker_set_timeout(k->w, wopts->timeout_ms);
  k->spare_opts.timeout_ms = wopts->timeout_ms;
  *out = k->w;
  return 0;
}

int kl__kept_worker_load(int *id, kl__kept_worker *k, const char *path) {
  size_t n;
  char *const *paths = kl__worker_plugin_paths(k->w, &n);
  for (size_t i = 0; i < n; i++)
    if (strcmp(paths[i], path) == 0) {
      *id = (int)i;
      return 0;
    }
  return kl_worker_load(id, k->w, path);
}

void kl__kept_worker_start(kl__kept_worker *k, const kl_worker_options *wopts) {
  const char *path = wopts->worker_path ? wopts->worker_path : "";
  if (k->w || k->spare_running || !(k->worker_path = kl__strdup(path))) return;
  k->device = wopts->device;
  k->spare_opts = *wopts;
  k->spare_opts.worker_path = k->worker_path[0] ? k->worker_path : NULL;
  /* no thread: the process is started here, and makes its context while
   * the caller goes on; a failure is the evaluation's to meet again */
  if (kl_worker_create(&k->w, &k->spare_opts) < 0 ||
      kl__worker_warm_begin(k->w) < 0)
    kl_error_clear();
}

/* End k's worker and start its replacement in a thread (spare_main),
 * with the baseline it had loaded first. Without memory or a thread, the
 * next evaluation starts one itself. */
static void replace(kl__kept_worker *k) {
  size_t n;
  char *const *paths = kl__worker_plugin_paths(k->w, &n);
  char *wp = kl__strdup(k->worker_path);
  char *base = n ? kl__strdup(paths[0]) : NULL;
  int device = k->device, timeout_ms = k->spare_opts.timeout_ms;
  bool had_base = n > 0;
  kl__kept_worker_end(k);
  if (!wp || (!base && had_base)) {
    kl__free(wp);
    kl__free(base);
    return;
  }
  kl_worker_options o = KL_WORKER_OPTIONS_INIT;
  o.worker_path = wp[0] ? wp : NULL;
  o.device = device;
  o.timeout_ms = timeout_ms;
  k->worker_path = wp;
  k->device = device;
  k->spare_opts = o;
  k->spare_base = base;
  if (pthread_create(&k->spare, NULL, spare_main, k) == 0) {
    k->spare_running = true;
  } else {
    kl__free(k->spare_base);
    k->spare_base = NULL;
  }
}

void kl__kept_worker_after(kl__kept_worker *k, bool clean) {
  if (!k->w) return;
  size_t n;
  kl__worker_plugin_paths(k->w, &n);
  if (clean && n < KEPT_MAX_PLUGINS) {
    k->served++;
    return;
  }
  replace(k);
}
