/* A fake NVML for the tests of kernlab's GPU idleness (core/gpu_usage.c),
 * loaded through KERNLAB_NVML_LIB: the devices come from $FAKE_NVML,
 * "UUID:UTIL:MIB_USED:PID,PID;UUID:..." (no pids: nothing runs there).
 * Only the entry points kernlab calls, with NVML's signatures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char uuid[80];
  unsigned util;
  unsigned long long used;
  unsigned pids[8], npids;
} fake_dev;

static fake_dev devs[8];
static unsigned ndevs;

int nvmlInit_v2(void);
int nvmlInit_v2(void) {
  const char *spec = getenv("FAKE_NVML");
  if (!spec) return 1; /* NVML_ERROR_UNINITIALIZED */
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", spec);
  ndevs = 0;
  for (char *dev = buf; dev && *dev && ndevs < 8;) {
    char *end = strchr(dev, ';');
    if (end) *end = '\0';
    fake_dev *d = &devs[ndevs++];
    char pids[256] = "";
    unsigned long long mib = 0;
    memset(d, 0, sizeof(*d));
    sscanf(dev, "%79[^:]:%u:%llu:%255s", d->uuid, &d->util, &mib, pids);
    d->used = mib << 20;
    for (char *p = pids; *p && d->npids < 8;) {
      d->pids[d->npids++] = (unsigned)strtoul(p, &p, 10);
      if (*p != ',') break;
      p++;
    }
    dev = end ? end + 1 : NULL;
  }
  return 0;
}

int nvmlDeviceGetCount_v2(unsigned *n);
int nvmlDeviceGetCount_v2(unsigned *n) {
  *n = ndevs;
  return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d);
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d) {
  if (i >= ndevs) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *d = &devs[i];
  return 0;
}

int nvmlDeviceGetHandleByUUID(const char *uuid, void **d);
int nvmlDeviceGetHandleByUUID(const char *uuid, void **d) {
  for (unsigned i = 0; i < ndevs; i++)
    if (strcmp(devs[i].uuid, uuid) == 0) {
      *d = &devs[i];
      return 0;
    }
  return 6; /* NVML_ERROR_NOT_FOUND */
}

int nvmlDeviceGetUUID(void *d, char *out, unsigned n);
int nvmlDeviceGetUUID(void *d, char *out, unsigned n) {
  snprintf(out, n, "%s", ((fake_dev *)d)->uuid);
  return 0;
}

int nvmlDeviceGetUtilizationRates(void *d, unsigned *u);
int nvmlDeviceGetUtilizationRates(void *d, unsigned *u) {
  u[0] = ((fake_dev *)d)->util;
  u[1] = 0;
  return 0;
}

int nvmlDeviceGetMemoryInfo(void *d, unsigned long long *m);
int nvmlDeviceGetMemoryInfo(void *d, unsigned long long *m) {
  m[0] = 80ull << 30;
  m[2] = ((fake_dev *)d)->used;
  m[1] = m[0] - m[2];
  return 0;
}

typedef struct {
  unsigned pid;
  unsigned long long used;
  unsigned gi, ci;
} fake_proc;

int nvmlDeviceGetComputeRunningProcesses_v2(void *d, unsigned *n, fake_proc *p);
int nvmlDeviceGetComputeRunningProcesses_v2(void *d, unsigned *n,
                                            fake_proc *p) {
  fake_dev *f = d;
  if (*n < f->npids) {
    *n = f->npids;
    return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  }
  for (unsigned i = 0; i < f->npids; i++) {
    memset(&p[i], 0, sizeof(p[i]));
    p[i].pid = f->pids[i];
  }
  *n = f->npids;
  return 0;
}
