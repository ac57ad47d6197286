/* GPU usage through NVML (libnvidia-ml.so.1, the driver's own library,
 * opened at run time: kernlab builds and runs where there is none).
 * KERNLAB_NVML_LIB names another library with NVML's entry points (the
 * tests' fake device). The few types used are declared here as NVML's ABI
 * has them, so no NVML header is needed to build.
 *
 * Compute processes come from nvmlDeviceGetComputeRunningProcesses_v2,
 * whose four-field record is the same on every driver (v3's grew on some).
 * A process is ours when its pid is the one asked about; where none is
 * (a container whose NVML reports the host's pids), one of them is taken
 * to be ours, the worker having made its context before any reading. */
#include <pthread.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_usage.h"

typedef int nvml_return;
typedef void *nvml_device;
typedef struct {
  unsigned gpu, memory;
} nvml_utilization;
typedef struct {
  unsigned long long total, free, used;
} nvml_memory;
typedef struct {
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id, compute_instance_id;
} nvml_process;

static struct {
  int state; /* 0 not tried, 1 ready, -1 unavailable */
  nvml_return (*init)(void);
  nvml_return (*count)(unsigned *);
  nvml_return (*by_index)(unsigned, nvml_device *);
  nvml_return (*by_uuid)(const char *, nvml_device *);
  nvml_return (*uuid)(nvml_device, char *, unsigned);
  nvml_return (*util)(nvml_device, nvml_utilization *);
  nvml_return (*memory)(nvml_device, nvml_memory *);
  nvml_return (*procs)(nvml_device, unsigned *, nvml_process *);
} nv;

static void start(void) {
  nv.state = -1;
  const char *lib = getenv("KERNLAB_NVML_LIB");
  void *h = dlopen(lib && *lib ? lib : "libnvidia-ml.so.1", RTLD_NOW);
  if (!h) return;
  *(void **)&nv.init = dlsym(h, "nvmlInit_v2");
  *(void **)&nv.count = dlsym(h, "nvmlDeviceGetCount_v2");
  *(void **)&nv.by_index = dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
  *(void **)&nv.by_uuid = dlsym(h, "nvmlDeviceGetHandleByUUID");
  *(void **)&nv.uuid = dlsym(h, "nvmlDeviceGetUUID");
  *(void **)&nv.util = dlsym(h, "nvmlDeviceGetUtilizationRates");
  *(void **)&nv.memory = dlsym(h, "nvmlDeviceGetMemoryInfo");
  *(void **)&nv.procs = dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v2");
  if (!nv.init || !nv.count || !nv.by_index || !nv.by_uuid || !nv.uuid ||
      !nv.util || !nv.memory || nv.init() != 0)
    return; /* the library stays open: NVML may hold threads */
  nv.state = 1;
}

/* NVML loaded and started, once per process (benches of an executor run
 * on threads of their own). */
static bool ready(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, start);
  return nv.state > 0;
}

int kl__gpu_count(void) {
  unsigned n = 0;
  return ready() && nv.count(&n) == 0 ? (int)n : -1;
}

static bool usage(kl__gpu_usage *u, nvml_device d, int own_pid) {
  memset(u, 0, sizeof(*u));
  u->processes = u->others = -1;
  nvml_utilization ut;
  nvml_memory m;
  if (nv.uuid(d, u->uuid, sizeof(u->uuid)) != 0 || nv.util(d, &ut) != 0 ||
      nv.memory(d, &m) != 0)
    return false;
  u->util_pct = ut.gpu;
  u->mem_used_mib = (double)m.used / (1024.0 * 1024.0);
  u->mem_total_mib = (double)m.total / (1024.0 * 1024.0);
  nvml_process p[64];
  unsigned n = 64;
  if (nv.procs && nv.procs(d, &n, p) == 0 && n <= 64) {
    u->processes = (int)n;
    u->others = 0;
    for (unsigned i = 0; i < n; i++)
      u->others += own_pid <= 0 || p[i].pid != (unsigned)own_pid;
    if (own_pid > 0 && n > 0 && u->others == (int)n)
      u->others--; /* our pid is not NVML's: one of them is ours */
  }
  u->known = true;
  return true;
}

bool kl__gpu_usage_at(kl__gpu_usage *u, int index, int own_pid) {
  nvml_device d;
  memset(u, 0, sizeof(*u));
  return ready() && index >= 0 && nv.by_index((unsigned)index, &d) == 0 &&
         usage(u, d, own_pid);
}

bool kl__gpu_usage_of(kl__gpu_usage *u, const char *uuid, int own_pid) {
  nvml_device d;
  memset(u, 0, sizeof(*u));
  return ready() && uuid && *uuid && nv.by_uuid(uuid, &d) == 0 &&
         usage(u, d, own_pid);
}

bool kl__gpu_idlest(kl__gpu_usage *best) {
  int n = kl__gpu_count();
  if (n < 2) return false;
  bool have = false;
  for (int i = 0; i < n; i++) {
    kl__gpu_usage u;
    if (!kl__gpu_usage_at(&u, i, 0)) return false; /* cannot say: no pick */
    int up = u.processes < 0 ? 0 : u.processes,
        bp = best->processes < 0 ? 0 : best->processes;
    if (!have || up < bp ||
        (up == bp && (u.util_pct < best->util_pct ||
                      (u.util_pct == best->util_pct &&
                       u.mem_used_mib < best->mem_used_mib)))) {
      *best = u;
      have = true;
    }
  }
  return have;
}
