/* How busy a GPU is, from NVML through the driver's library (gpu_usage.c):
 * no nvidia-smi process. Read by the worker's client to pick an idle GPU
 * and by a bench before and after its timing. */
#ifndef KL_CORE_GPU_USAGE_H
#define KL_CORE_GPU_USAGE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct kl__gpu_usage {
  bool known;          /* NVML answered for this device */
  char uuid[80];       /* "GPU-...", as CUDA_VISIBLE_DEVICES takes it */
  unsigned util_pct;   /* the kernels' share of the last sample period */
  double mem_used_mib; /* memory in use, every process's */
  double mem_total_mib;
  int processes; /* compute processes on it; -1: unknown */
  int others;    /* of them, not `own_pid`; -1: unknown */
} kl__gpu_usage;

/* GPUs NVML sees; -1 when NVML cannot be loaded or started (no driver,
 * KERNLAB_NVML_LIB names a library that is not NVML). */
int kl__gpu_count(void);
/* Device `index` (NVML's order), or the one whose UUID is `uuid`; own_pid's
 * processes do not count as others (0: none is ours). false when unknown. */
bool kl__gpu_usage_at(kl__gpu_usage *u, int index, int own_pid);
bool kl__gpu_usage_of(kl__gpu_usage *u, const char *uuid, int own_pid);
/* Of two or more GPUs, the idlest: fewest compute processes, then the
 * lowest utilisation, then the least memory in use (the first on a tie).
 * false with one GPU or none, or when NVML cannot say. */
bool kl__gpu_idlest(kl__gpu_usage *u);

#endif
