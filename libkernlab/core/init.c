/* Version, compiled-in features, reference-counted init, and where the
 * library finds its share folder (templates, rules, skills).
 *
 * The share folder is looked up once per process: the environment wins, then
 * a folder beside the loaded library (so a relocated install works), then the
 * install prefix, then the source tree (so the build tree works). */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kernlab/case.h"

#ifndef KL_INSTALL_SHARE_DIR
#define KL_INSTALL_SHARE_DIR "/usr/local/share/kernlab"
#endif
#ifndef KL_SOURCE_SHARE_DIR
#define KL_SOURCE_SHARE_DIR ""
#endif

unsigned kl_version_number(void) {
  return KL_VERSION_NUMBER;
}

const char *kl_version_string(void) {
  return KL_VERSION;
}

unsigned kl_abi_version(void) {
  return KL_ABI_VERSION;
}

unsigned kl_features(void) {
  unsigned f = 0;
#ifdef KL_HAVE_CUDA
  f |= KL_FEATURE_CUDA;
#endif
#ifdef KL_HAVE_CUPTI
  f |= KL_FEATURE_CUPTI;
#endif
#ifdef KL_HAVE_CURL
  f |= KL_FEATURE_HTTP;
#endif
  return f;
}

static atomic_int init_count;

int kl_init(void) {
  return atomic_fetch_add(&init_count, 1) + 1;
}

int kl_shutdown(void) {
  int n = atomic_load(&init_count);
  while (n > 0)
    if (atomic_compare_exchange_weak(&init_count, &n, n - 1)) return n - 1;
  return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                   "kl_shutdown called more often than kl_init");
}

/* ---- share folder -------------------------------------------------------- */

static pthread_once_t share_once = PTHREAD_ONCE_INIT;
static char share_dir[4096];

static bool try_share(const char *dir) {
  if (!dir || !dir[0]) return false;
  char *templates = kl__path_join(dir, "templates");
  bool ok = templates && kl__is_dir(templates);
  kl__free(templates);
  if (ok && strlen(dir) < sizeof(share_dir)) {
    memcpy(share_dir, dir, strlen(dir) + 1);
    return true;
  }
  return false;
}

static void find_share(void) {
  if (try_share(getenv("KERNLAB_SHARE_DIR"))) return;
  Dl_info info;
  if (dladdr((void *)&kl_share_dir, &info) && info.dli_fname) {
    char *libdir = kl__path_dir(info.dli_fname);
    char *cand = libdir ? kl__path_join(libdir, "../share/kernlab") : NULL;
    bool ok = cand && try_share(cand);
    kl__free(libdir);
    kl__free(cand);
    if (ok) return;
  }
  if (try_share(KL_INSTALL_SHARE_DIR)) return;
  try_share(KL_SOURCE_SHARE_DIR);
}

const char *kl_share_dir(void) {
  pthread_once(&share_once, find_share);
  return share_dir[0] ? share_dir : NULL;
}
