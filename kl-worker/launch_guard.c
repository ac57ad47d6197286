/* The launch contract, enforced where the launch runs, and kl-worker's one
 * CUPTI callback subscriber (CUPTI allows one per process).
 *
 * A candidate's launcher may not allocate, free, copy to or from the host
 * or wait for the device (kernlab/plugin.h). The generated harness
 * redirects those calls by name in the kernel section; a launcher reaching
 * them another way (the driver API, a function pointer, dlsym) goes past
 * the names but not past CUPTI: while a device plugin's launch runs, the
 * callbacks of the runtime API and of the driver's forbidden entry points
 * note the first forbidden call, and the launch fails with it (the same
 * words as the harness's, so the library's verdict is CHEAT,
 * launch_contract). A driver call made inside a runtime call is the
 * runtime's doing, judged by the runtime call's own id: each thread counts
 * the runtime calls it is inside.
 *
 * The first launch of an instance is not judged: the harness makes the
 * instance's scratch regions there (cudaMalloc), and it is never timed.
 * Every launch after it is, in checks and in timing alike.
 *
 * Inside every device launch (judged or not, Python plugins too) the copies
 * and memsets it queues are noted by correlation id: the timer counts
 * their records as the sample's work (a launch's copy is work like a
 * kernel), and not the harness's own restores between samples.
 *
 * The same subscriber hands the runtime's kernel launches, by symbol, to
 * whoever watches them (the profiler names its ranges so), and notes the
 * kernels every device launch runs, runtime and driver launches alike
 * (Triton's go through the driver), by name: timed_work.c holds a timed
 * launch to the kernels its checked launches ran. Without CUPTI
 * (a host-only build, or no libcupti at run time) launches run unguarded:
 * the harness's redirection by name still holds. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../libkernlab/core/internal.h"
#include "worker_internal.h"

/* Instances launched at least once (CUPTI builds judge the others): a
 * small open set of pointers. */
static void **seen;
static size_t nseen;

void klw_destroy(const kl_plugin *pl, void *inst) {
  for (size_t i = 0; i < nseen; i++)
    if (seen[i] == inst) {
      seen[i] = seen[--nseen];
      break;
    }
  pl->destroy(inst);
}

static char guard_error[320];

#ifdef KL_HAVE_CUPTI
#include <cupti.h>
#include <dlfcn.h>

#include "cupti_copy_ids.h"
#include "cupti_launch_ids.h"
#include "cupti_timer.h"

static const CUpti_CallbackId forbidden_runtime[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSetLimit_v3020};

static const CUpti_CallbackId forbidden_driver[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset,
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSetLimit};

/* The runtime's kernel launches a watcher is told of. */
static const CUpti_CallbackId kernel_launches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000};

static size_t capseen;

static bool seen_before(void *inst) {
  for (size_t i = 0; i < nseen; i++)
    if (seen[i] == inst) return true;
  if (nseen == capseen) {
    size_t cap = capseen ? 2 * capseen : 64;
    void **grown = realloc(seen, cap * sizeof(*seen));
    if (!grown) return true; /* judge it rather than lose track */
    seen = grown;
    capseen = cap;
  }
  seen[nseen++] = inst;
  return false;
}

static bool listed(const CUpti_CallbackId *ids, size_t n, CUpti_CallbackId id) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] == id) return true;
  return false;
}

static atomic_bool armed;            /* a launch being judged */
static atomic_bool in_launch;        /* any device plugin's launch */
static _Atomic(const char *) caught; /* the first forbidden call's name */
static _Thread_local int runtime_depth;
static void (*kernel_watcher)(const char *symbol);

/* Correlation ids of the copies and memsets queued inside launches (the
 * runtime's call and the driver's under it: CUPTI gives a copy record
 * either's), for the timer; the launcher's threads add to it too. */
static pthread_mutex_t copies_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t *copies;
static size_t ncopies, capcopies;

static void note_copy(uint32_t correlation) {
  pthread_mutex_lock(&copies_lock);
  if (ncopies == capcopies) {
    size_t cap = capcopies ? 2 * capcopies : 256;
    uint32_t *grown =
        cap <= (1u << 22) ? realloc(copies, cap * sizeof(*copies)) : NULL;
    if (grown) copies = grown, capcopies = cap;
  }
  if (ncopies < capcopies) copies[ncopies++] = correlation;
  pthread_mutex_unlock(&copies_lock);
}

bool klw_copy_in_launch(uint32_t correlation) {
  bool found = false;
  pthread_mutex_lock(&copies_lock);
  for (size_t i = 0; i < ncopies && !found; i++)
    found = copies[i] == correlation;
  pthread_mutex_unlock(&copies_lock);
  return found;
}

void klw_copies_forget(void) {
  pthread_mutex_lock(&copies_lock);
  ncopies = 0;
  pthread_mutex_unlock(&copies_lock);
}

/* The kernels the current launch ran (distinct names, the first
 * KLW_LAUNCH_KERNELS), noted from any thread of the launch. */
static pthread_mutex_t kernels_lock = PTHREAD_MUTEX_INITIALIZER;
static klw_launch_kernels launched;

static uint64_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static void note_kernel(const char *name) {
  uint64_t h = name_hash(name);
  pthread_mutex_lock(&kernels_lock);
  bool known = false;
  for (int i = 0; i < launched.n && !known; i++)
    known = launched.hash[i] == h;
  if (!known && launched.n < KLW_LAUNCH_KERNELS) {
    launched.hash[launched.n] = h;
    snprintf(launched.name[launched.n], sizeof(launched.name[0]), "%s", name);
    launched.n++;
  }
  launched.total++;
  pthread_mutex_unlock(&kernels_lock);
}

static void note(const char *name) {
  const char *none = NULL;
  atomic_compare_exchange_strong(&caught, &none, name ? name : "?");
}

static void CUPTIAPI on_api(void *ud, CUpti_CallbackDomain domain,
                            CUpti_CallbackId cbid, const void *data) {
  (void)ud;
  const CUpti_CallbackData *cb = data;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (cb->callbackSite == CUPTI_API_EXIT) {
      if (runtime_depth > 0) runtime_depth--;
      return;
    }
    if (runtime_depth++ == 0 && atomic_load(&armed) &&
        listed(forbidden_runtime, KL_ARRAY_SIZE(forbidden_runtime), cbid))
      note(cb->functionName);
    if (atomic_load(&in_launch) &&
        listed(klw_copy_runtime_cbids, KLW_COPY_IDS(klw_copy_runtime_cbids),
               cbid))
      note_copy(cb->correlationId);
    if (kernel_watcher && cb->symbolName &&
        listed(kernel_launches, KL_ARRAY_SIZE(kernel_launches), cbid))
      kernel_watcher(cb->symbolName);
    if (atomic_load(&in_launch) && cb->symbolName &&
        listed(kl__launch_runtime_cbids,
               KL_LAUNCH_IDS(kl__launch_runtime_cbids), cbid))
      note_kernel(cb->symbolName);
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
             cb->callbackSite == CUPTI_API_ENTER) {
    if (listed(kl__launch_driver_cbids, KL_LAUNCH_IDS(kl__launch_driver_cbids),
               cbid)) { /* a kernel launch: never forbidden */
      if (atomic_load(&in_launch) && runtime_depth == 0 && cb->symbolName)
        note_kernel(cb->symbolName);
    } else if (atomic_load(&in_launch) &&
               listed(klw_copy_driver_cbids,
                      KLW_COPY_IDS(klw_copy_driver_cbids), cbid))
      note_copy(cb->correlationId);
    else if (runtime_depth == 0 && atomic_load(&armed))
      note(cb->functionName);
  }
}

/* Subscribe once: the whole runtime domain (its depth), the driver's
 * forbidden entry points. false when this CUPTI cannot. */
static bool subscribed(void) {
  static int state; /* 0 not tried, 1 ready, -1 unavailable */
  if (state) return state > 0;
  state = -1;
  char err[256];
  void *h = klw_cupti_open(err, sizeof err);
  if (!h) return false;
  CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc,
                           void *);
  CUptiResult (*enable_domain)(uint32_t, CUpti_SubscriberHandle,
                               CUpti_CallbackDomain);
  CUptiResult (*enable_one)(uint32_t, CUpti_SubscriberHandle,
                            CUpti_CallbackDomain, CUpti_CallbackId);
  *(void **)&subscribe = dlsym(h, "cuptiSubscribe");
  *(void **)&enable_domain = dlsym(h, "cuptiEnableDomain");
  *(void **)&enable_one = dlsym(h, "cuptiEnableCallback");
  static CUpti_SubscriberHandle sub;
  if (!subscribe || !enable_domain || !enable_one ||
      subscribe(&sub, on_api, NULL) != CUPTI_SUCCESS ||
      enable_domain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) != CUPTI_SUCCESS)
    return false;
  for (size_t i = 0; i < KL_ARRAY_SIZE(forbidden_driver); i++)
    if (enable_one(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, forbidden_driver[i]) !=
        CUPTI_SUCCESS)
      return false;
  for (size_t i = 0; i < KLW_COPY_IDS(klw_copy_driver_cbids); i++)
    if (enable_one(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
                   klw_copy_driver_cbids[i]) != CUPTI_SUCCESS)
      return false;
  for (size_t i = 0; i < KL_LAUNCH_IDS(kl__launch_driver_cbids); i++)
    if (enable_one(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
                   kl__launch_driver_cbids[i]) != CUPTI_SUCCESS)
      return false;
  state = 1;
  return true;
}

bool klw_watch_kernels(void (*watcher)(const char *symbol)) {
  if (!subscribed()) return false;
  kernel_watcher = watcher;
  return true;
}

int klw_launch(const kl_plugin *pl, void *inst) {
  guard_error[0] = '\0';
  if (!pl->flush || !subscribed()) { /* host plugins */
    launched.valid = false;
    seen_before(inst);
    return pl->launch(inst);
  }
  bool judged = seen_before(inst) && strcmp(pl->backend, "cuda") == 0;
  atomic_store(&caught, NULL);
  pthread_mutex_lock(&kernels_lock);
  launched.n = 0;
  launched.total = 0;
  launched.valid = true;
  pthread_mutex_unlock(&kernels_lock);
  atomic_store(&armed, judged);
  atomic_store(&in_launch, true);
  int rc = pl->launch(inst);
  atomic_store(&in_launch, false);
  atomic_store(&armed, false);
  const char *name = atomic_load(&caught);
  if (name) { /* the contract's words, even where the call then failed (a
                 capture refuses an allocation) */
    snprintf(guard_error, sizeof guard_error,
             "the launch called %s (seen by CUPTI): a launcher may not "
             "allocate, free, copy to or from the host or synchronise "
             "(workspace comes from ctx->scratch; see kernlab/plugin.h)",
             name);
    return 1;
  }
  return rc;
}

int klw_launch_window(int (*fn)(void)) {
  atomic_store(&in_launch, true);
  int rc = fn();
  atomic_store(&in_launch, false);
  return rc;
}
#else
int klw_launch_window(int (*fn)(void)) {
  return fn();
}

bool klw_watch_kernels(void (*watcher)(const char *symbol)) {
  (void)watcher;
  return false;
}

bool klw_copy_in_launch(uint32_t correlation) {
  (void)correlation;
  return false;
}

void klw_copies_forget(void) {}

int klw_launch(const kl_plugin *pl, void *inst) {
  guard_error[0] = '\0';
  return pl->launch(inst);
}
#endif

#ifdef KL_HAVE_CUPTI
const klw_launch_kernels *klw_last_launch_kernels(void) {
  return launched.valid ? &launched : NULL;
}
#else
const klw_launch_kernels *klw_last_launch_kernels(void) {
  return NULL;
}
#endif

const char *klw_launch_error(const kl_plugin *pl, void *inst) {
  return guard_error[0] ? guard_error : pl->last_error(inst);
}
