/* A worker kept between evaluations (bench_internal.h says when it is kept
 * and when it is ended). Its plugins are loaded once by path: the case's
 * baseline serves every evaluation of a run under one id, and a candidate
 * profiled after its comparison is not loaded (for a Python case: not
 * imported and compiled) again. The worker's own plugin table is bounded
 * (kl-worker's MAX_PLUGINS), so a worker that has loaded KEPT_MAX_PLUGINS
 * is ended after the evaluation that reached it. */
#include <string.h>

#include "bench_internal.h"

#define KEPT_MAX_PLUGINS 48

void kl__kept_worker_end(kl__kept_worker *k) {
  if (!k) return;
  kl_worker_free(k->w);
  for (size_t i = 0; i < k->npaths; i++)
    kl__free(k->paths[i]);
  kl__free(k->paths);
  kl__free(k->worker_path);
  memset(k, 0, sizeof(*k));
}

int kl__kept_worker_take(kl_worker **out, kl__kept_worker *k,
                         const kl_worker_options *wopts) {
  const char *path = wopts->worker_path ? wopts->worker_path : "";
  if (k->w && (k->device != wopts->device || strcmp(k->worker_path, path)))
    kl__kept_worker_end(k); /* another device or program: start afresh */
  if (!k->w) {
    if (!(k->worker_path = kl__strdup(path))) return kl__error_oom();
    int rc = kl_worker_create(&k->w, wopts);
    if (rc < 0) {
      kl__kept_worker_end(k);
      return rc;
    }
    k->device = wopts->device;
  }
  kl_worker_set_timeout(k->w, wopts->timeout_ms);
  *out = k->w;
  return 0;
}

int kl__kept_worker_load(int *id, kl__kept_worker *k, const char *path) {
  for (size_t i = 0; i < k->npaths; i++)
    if (strcmp(k->paths[i], path) == 0) {
      *id = (int)i;
      return 0;
    }
  char *copy = kl__strdup(path);
  if (!copy || KL__GROW(k->paths, k->cap_paths, k->npaths + 1) < 0) {
    kl__free(copy);
    return kl__error_oom();
  }
  int rc = kl_worker_load(id, k->w, path);
  if (rc < 0) {
    kl__free(copy);
    return rc;
  }
  if (*id != (int)k->npaths) { /* loaded past the kept worker's back */
    kl__free(copy);
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "worker: %s loaded under an unexpected id", path);
  }
  k->paths[k->npaths++] = copy;
  return 0;
}

void kl__kept_worker_after(kl__kept_worker *k, bool clean) {
  if (!k->w) return;
  if (!clean || k->npaths >= KEPT_MAX_PLUGINS) {
    kl__kept_worker_end(k);
    return;
  }
  k->served++;
}
