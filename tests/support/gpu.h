/* What the GPU tests (label gpu) share: a compile cache of their own, and
 * whether a CUDA device is there at all; without one every test skips.
 * Include after <cmocka.h> (print_message). */
#ifndef KL_TEST_GPU_H
#define KL_TEST_GPU_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernlab/kernlab.h"

/* cmocka group setup: make `cache` (a mkdtemp template) the compile cache
 * and look for a device; 0, or -1 when the machine cannot run the tests. */
static inline int kl_test_gpu_setup(char *cache, kl_compile_options *copts,
                                    bool *have_gpu) {
  if (!mkdtemp(cache)) return -1;
  copts->cache_dir = cache;
  kl_worker *w;
  if (kl_worker_create(&w, NULL)) return -1;
  kl_device_info d = KL_DEVICE_INFO_INIT;
  *have_gpu = kl_worker_device(&d, w) == 0 && d.count > 0;
  if (*have_gpu)
    print_message("device: %s, %d SMs\n", d.name, d.sms);
  else
    print_message("no CUDA device (%s): the gpu tests skip\n", d.why);
  kl_worker_free(w);
  return 0;
}

/* cmocka group teardown: remove the cache. */
static inline int kl_test_gpu_teardown(const char *cache) {
  char cmd[256];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", cache);
  return system(cmd) == 0 ? 0 : -1;
}

#endif /* KL_TEST_GPU_H */
