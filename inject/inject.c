/* kernlab's CUPTI injection library (libkernlab-inject.so).
 *
 * `kl observe` runs a program with CUDA_INJECTION64_PATH naming this file;
 * the CUDA driver loads it during cuInit and calls InitializeInjection, so
 * the program is neither edited nor rebuilt (cupti.md, section 4).
 *
 * What it records, for every launch of a kernel whose name (mangled or
 * demangled) matches KL_OBSERVE_KERNEL: the name, grid, block, dynamic shared
 * memory, and the bytes of every argument read with the kernel's parameter
 * layout (cuFuncGetParamInfo / cuKernelGetParamInfo: offsets and sizes).
 * An 8-byte argument that the driver knows as an address
 * (cuPointerGetAttribute) is marked as a pointer, with the bytes left in its
 * allocation, so a case can size its buffers; so is each 8-byte word of a
 * larger argument (a struct passed by value) that is such an address. The
 * GPU duration comes from
 * the kernel's CONCURRENT_KERNEL activity record, joined on the launch's
 * correlation id. Every kernel, matched or not, is also counted with its
 * total GPU time, so the share a kernel has of the program is known.
 *
 * Launch callbacks of both domains are enabled: a runtime launch records
 * what the runtime call passed and remembers its correlation id in a
 * thread-local; a driver launch inside it (when CUPTI reports one) only adds
 * its own correlation id, so either id finds the launch again.
 *
 * At exit (atexit) the activity buffers are flushed and the records are
 * written as JSON to KL_OBSERVE_OUT/obs-<pid>.json; `kl observe` merges the
 * files of every process of the program and adds what it knows (argv, time,
 * exit status). Limits: KL_OBSERVE_MAX_LAUNCHES launches and
 * KL_OBSERVE_MAX_BYTES bytes of records; launches past them are only
 * counted. Any CUPTI failure is written down, never fatal: the program runs
 * on (InitializeInjection returns 1 even then).
 *
 * Also written: the CUDA libraries the process had mapped at exit (cuBLAS,
 * cuBLASLt, cuDNN, NCCL, cuFFT, ..., read from /proc/self/maps), so that a
 * case made of one of its kernels links what the kernel's source calls. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <cupti.h>
#include "../kl-worker/cupti_launch_ids.h"

#define EXPORT __attribute__((visibility("default")))
#define BUF_SIZE (4u << 20)
#define MAX_ARGS 256
#define MAX_DEVICES 64

typedef struct arg_rec {
  uint32_t offset, size;
  uint8_t *bytes;
  int pointer;         /* 1 when the driver knows the value as an address */
  uint64_t alloc_left; /* bytes from the address to its allocation's end */
  /* an argument larger than a pointer (a struct by value): its 8-byte
   * words that are addresses, at offsets within it */
  uint32_t nwords;
  uint32_t *word_at;
  uint64_t *word_left;
} arg_rec;

#define MAX_STRUCT_PROBE 4096 /* bytes of a struct searched for addresses */

typedef struct kernel_stat {
  char *name;      /* mangled, as CUPTI gives it */
  char *demangled; /* NULL when not a C++ name or no demangler */
  int matched;     /* -1 not yet decided, 0 no, 1 yes */
  uint64_t launches, timed, total_ns, recorded, not_recorded;
} kernel_stat;

typedef struct launch_rec {
  uint64_t corr[2]; /* runtime and driver correlation ids, 0 when none */
  size_t kernel;    /* index into kernels */
  const char *api;
  uint32_t grid[3], block[3], shared;
  uint32_t nargs;
  arg_rec *args;
  int args_known;
  int device;
  uint32_t stream;
  uint64_t start, end;
} launch_rec;

static struct {
  pthread_mutex_t lock;
  int initialized, written;
  char *out_dir;
  regex_t filter;
  int have_filter;
  uint64_t max_launches, max_bytes, bytes;
  kernel_stat *kernels;
  size_t nkernels, capkernels;
  launch_rec *launches;
  size_t nlaunches, caplaunches;
  uint64_t *corr_keys; /* open addressing: correlation id -> launch + 1 */
  uint32_t *corr_vals;
  size_t corr_cap, corr_used;
  uint64_t kernel_records, unmatched_records, dropped_records;
  struct {
    int seen;
    char name[256];
    int cc_major, cc_minor;
    int mem_khz, bus_bits; /* the DRAM's peak clock and width */
  } devices[MAX_DEVICES];
  char errors[2048];
  char *(*demangle)(const char *, char *, size_t *, int *);
  CUpti_SubscriberHandle subscriber;
} st = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* the runtime launch this thread is inside of, if any */
static __thread uint64_t tl_runtime_corr;
static __thread long tl_runtime_launch = -1;

static void note_error(const char *fmt, ...) {
  size_t used = strlen(st.errors);
  if (used + 2 >= sizeof st.errors) return;
  if (used) st.errors[used++] = '\n';
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st.errors + used, sizeof st.errors - used, fmt, ap);
  va_end(ap);
}

static void note_cupti(const char *what, CUptiResult r) {
  const char *s = NULL;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
    s = "unknown CUPTI error";
  note_error("%s: %s", what, s);
}

static uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *v = getenv(name);
  if (!v || !*v) return fallback;
  char *end = NULL;
  unsigned long long x = strtoull(v, &end, 10);
  return end && *end == '\0' && x > 0 ? (uint64_t)x : fallback;
}

/* ---- kernels by name ---------------------------------------------------- */

static size_t kernel_index(const char *name) {
  for (size_t i = 0; i < st.nkernels; i++)
    if (strcmp(st.kernels[i].name, name) == 0) return i;
  if (st.nkernels == st.capkernels) {
    size_t cap = st.capkernels ? 2 * st.capkernels : 16;
    kernel_stat *k = realloc(st.kernels, cap * sizeof *k);
    if (!k) return SIZE_MAX;
    st.kernels = k;
    st.capkernels = cap;
  }
  kernel_stat *k = &st.kernels[st.nkernels];
  memset(k, 0, sizeof *k);
  k->name = strdup(name);
  if (!k->name) return SIZE_MAX;
  k->matched = -1;
  if (st.demangle && strncmp(name, "_Z", 2) == 0) {
    int status = -1;
    char *d = st.demangle(name, NULL, NULL, &status);
    if (status == 0)
      k->demangled = d;
    else
      free(d);
  }
  return st.nkernels++;
}

static bool kernel_matches(kernel_stat *k) {
  if (k->matched < 0)
    k->matched =
        !st.have_filter || regexec(&st.filter, k->name, 0, NULL, 0) == 0 ||
        (k->demangled && regexec(&st.filter, k->demangled, 0, NULL, 0) == 0);
  return k->matched == 1;
}

/* ---- correlation ids ---------------------------------------------------- */

static int corr_put(uint64_t key, size_t launch) {
  if (!key) return 0;
  if (2 * (st.corr_used + 1) > st.corr_cap) {
    size_t cap = st.corr_cap ? 2 * st.corr_cap : 1024;
    uint64_t *keys = calloc(cap, sizeof *keys);
    uint32_t *vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
      free(keys);
      free(vals);
      return -1;
    }
    for (size_t i = 0; i < st.corr_cap; i++) {
      if (!st.corr_keys[i]) continue;
      size_t h = (size_t)(st.corr_keys[i] * 0x9E3779B97F4A7C15ull) & (cap - 1);
      while (keys[h])
        h = (h + 1) & (cap - 1);
      keys[h] = st.corr_keys[i];
      vals[h] = st.corr_vals[i];
    }
    free(st.corr_keys);
    free(st.corr_vals);
    st.corr_keys = keys;
    st.corr_vals = vals;
    st.corr_cap = cap;
  }
  size_t h = (size_t)(key * 0x9E3779B97F4A7C15ull) & (st.corr_cap - 1);
  while (st.corr_keys[h] && st.corr_keys[h] != key)
    h = (h + 1) & (st.corr_cap - 1);
  if (!st.corr_keys[h]) st.corr_used++;
  st.corr_keys[h] = key;
  st.corr_vals[h] = (uint32_t)(launch + 1);
  return 0;
}

static long corr_get(uint64_t key) {
  if (!key || !st.corr_cap) return -1;
  size_t h = (size_t)(key * 0x9E3779B97F4A7C15ull) & (st.corr_cap - 1);
  while (st.corr_keys[h]) {
    if (st.corr_keys[h] == key) return (long)st.corr_vals[h] - 1;
    h = (h + 1) & (st.corr_cap - 1);
  }
  return -1;
}

/* ---- reading a launch ---------------------------------------------------- */

static void note_device(CUcontext ctx, launch_rec *l) {
  uint32_t id = 0;
  l->device = -1;
  if (!ctx || cuptiGetDeviceId(ctx, &id) != CUPTI_SUCCESS || id >= MAX_DEVICES)
    return;
  l->device = (int)id;
  if (st.devices[id].seen) return;
  CUdevice dev;
  st.devices[id].seen = 1;
  if (cuDeviceGet(&dev, (int)id) != CUDA_SUCCESS) return;
  cuDeviceGetName(st.devices[id].name, sizeof st.devices[id].name, dev);
  cuDeviceGetAttribute(&st.devices[id].cc_major,
                       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cuDeviceGetAttribute(&st.devices[id].cc_minor,
                       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  cuDeviceGetAttribute(&st.devices[id].mem_khz,
                       CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev);
  cuDeviceGetAttribute(&st.devices[id].bus_bits,
                       CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev);
}

/* Offsets and sizes of a kernel's parameters; how many, or -1. `f` is a
 * CUfunction, or a CUkernel when `is_kernel`. */
static int param_layout(const void *f, int is_kernel, uint32_t *offs,
                        uint32_t *sizes) {
  int n = 0;
  for (; n < MAX_ARGS; n++) {
    size_t off = 0, size = 0;
    CUresult r =
        is_kernel ? cuKernelGetParamInfo((CUkernel)f, (size_t)n, &off, &size)
                  : cuFuncGetParamInfo((CUfunction)f, (size_t)n, &off, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break;
    if (r != CUDA_SUCCESS) return -1;
    offs[n] = (uint32_t)off;
    sizes[n] = (uint32_t)size;
  }
  return n;
}

/* Whether the 8 bytes at p are an address in a device allocation the
 * driver knows, with the bytes from it to the allocation's end. */
static int device_address(const uint8_t *p, uint64_t *left) {
  CUdeviceptr value, base = 0;
  size_t range = 0;
  memcpy(&value, p, 8);
  if (value &&
      cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                            value) == CUDA_SUCCESS &&
      cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, value) ==
          CUDA_SUCCESS &&
      value >= base && value - base <= range) {
    *left = (uint64_t)(base + range - value);
    return 1;
  }
  return 0;
}

/* Copies the arguments: from kernelParams[i], or from the packed buffer of
 * `extra` at the layout's offsets. */
static void read_args(launch_rec *l, const void *f, int is_kernel,
                      void **params, void **extra) {
  uint32_t offs[MAX_ARGS], sizes[MAX_ARGS];
  int n = f ? param_layout(f, is_kernel, offs, sizes) : -1;
  if (n < 0) return;
  const uint8_t *packed = NULL;
  size_t packed_size = 0;
  for (size_t i = 0; !params && extra && extra[i] != CU_LAUNCH_PARAM_END;
       i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      packed = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
      packed_size = *(size_t *)extra[i + 1];
  }
  if (n > 0 && !params && !packed) return;
  l->args = calloc((size_t)n + 1, sizeof *l->args);
  if (!l->args) return;
  for (int i = 0; i < n; i++) {
    arg_rec *a = &l->args[i];
    a->offset = offs[i];
    a->size = sizes[i];
    const uint8_t *src = params ? params[i] : packed + offs[i];
    if (!params && (size_t)offs[i] + sizes[i] > packed_size) src = NULL;
    a->bytes = src ? malloc(sizes[i] ? sizes[i] : 1) : NULL;
    if (a->bytes) memcpy(a->bytes, src, sizes[i]);
    st.bytes += 2u * sizes[i] + 48;
    if (a->bytes && sizes[i] == 8) {
      a->pointer = device_address(a->bytes, &a->alloc_left);
    } else if (a->bytes && sizes[i] > 8 && sizes[i] <= MAX_STRUCT_PROBE &&
               offs[i] % 8 == 0) {
      uint32_t words = sizes[i] / 8;
      a->word_at = calloc(words, sizeof *a->word_at);
      a->word_left = calloc(words, sizeof *a->word_left);
      for (uint32_t w = 0; a->word_at && a->word_left && w < words; w++)
        if (device_address(a->bytes + 8 * w, &a->word_left[a->nwords]))
          a->word_at[a->nwords++] = 8 * w;
      st.bytes += 12u * a->nwords;
    }
  }
  l->nargs = (uint32_t)n;
  l->args_known = 1;
}

/* A new launch record for kernel `name`, or NULL when the kernel does not
 * match or the limits are reached (then it is only counted). */
static launch_rec *new_launch(const char *name, const char *api) {
  size_t k = kernel_index(name ? name : "?");
  if (k == SIZE_MAX || !kernel_matches(&st.kernels[k])) return NULL;
  if (st.nlaunches >= st.max_launches || st.bytes >= st.max_bytes) {
    st.kernels[k].not_recorded++;
    return NULL;
  }
  if (st.nlaunches == st.caplaunches) {
    size_t cap = st.caplaunches ? 2 * st.caplaunches : 256;
    launch_rec *p = realloc(st.launches, cap * sizeof *p);
    if (!p) {
      st.kernels[k].not_recorded++;
      return NULL;
    }
    st.launches = p;
    st.caplaunches = cap;
  }
  launch_rec *l = &st.launches[st.nlaunches++];
  memset(l, 0, sizeof *l);
  l->kernel = k;
  l->api = api;
  l->device = -1;
  st.kernels[k].recorded++;
  st.bytes += 160 + strlen(name ? name : "?");
  return l;
}

static void set_geometry(launch_rec *l, unsigned gx, unsigned gy, unsigned gz,
                         unsigned bx, unsigned by, unsigned bz, size_t smem) {
  l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
  l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
  l->shared = (uint32_t)smem;
}

static void on_runtime(const CUpti_CallbackData *cb, CUpti_CallbackId id) {
  if (cb->callbackSite == CUPTI_API_EXIT) {
    tl_runtime_corr = 0;
    tl_runtime_launch = -1;
    return;
  }
  tl_runtime_corr = cb->correlationId;
  launch_rec *l = new_launch(cb->symbolName, "runtime");
  if (!l) return;
  size_t index = (size_t)(l - st.launches);
  tl_runtime_launch = (long)index;
  l->corr[0] = cb->correlationId;
  corr_put(cb->correlationId, index);
  note_device(cb->context, l);
  if (id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 ||
      id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060) {
    const cudaLaunchKernelExC_v11060_params *p = cb->functionParams;
    const cudaLaunchConfig_t *c = p->config;
    set_geometry(l, c->gridDim.x, c->gridDim.y, c->gridDim.z, c->blockDim.x,
                 c->blockDim.y, c->blockDim.z, c->dynamicSmemBytes);
    return; /* a host stub: the arguments come from the driver launch */
  }
  /* cudaLaunchKernel and CUDA 13's __cudaLaunchKernel share this layout;
   * the latter passes a cudaKernel_t, which is a CUkernel */
  const cudaLaunchKernel_v7000_params *p = cb->functionParams;
  set_geometry(l, p->gridDim.x, p->gridDim.y, p->gridDim.z, p->blockDim.x,
               p->blockDim.y, p->blockDim.z, p->sharedMem);
  if (id == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000 ||
      id == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000)
    read_args(l, p->func, 1, p->args, NULL);
}

static void on_driver(const CUpti_CallbackData *cb, CUpti_CallbackId id) {
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  launch_rec *l = NULL;
  if (tl_runtime_corr) {
    /* inside a runtime launch: the same launch seen a level down */
    if (tl_runtime_launch < 0) return;
    l = &st.launches[tl_runtime_launch];
    l->corr[1] = cb->correlationId;
    corr_put(cb->correlationId, (size_t)tl_runtime_launch);
    if (l->args_known) return;
  } else {
    l = new_launch(cb->symbolName, "driver");
    if (!l) return;
    l->corr[1] = cb->correlationId;
    corr_put(cb->correlationId, (size_t)(l - st.launches));
    note_device(cb->context, l);
  }
  if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
      id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    const cuLaunchKernelEx_params *p = cb->functionParams;
    const CUlaunchConfig *c = p->config;
    set_geometry(l, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                 c->blockDimY, c->blockDimZ, c->sharedMemBytes);
    read_args(l, p->f, 0, p->kernelParams, p->extra);
    return;
  }
  const cuLaunchKernel_params *p = cb->functionParams;
  set_geometry(l, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX,
               p->blockDimY, p->blockDimZ, p->sharedMemBytes);
  read_args(l, p->f, 0, p->kernelParams, p->extra);
  if (!l->args_known) /* a CUkernel passed as a CUfunction */
    read_args(l, p->f, 1, p->kernelParams, p->extra);
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId id, const void *data) {
  (void)userdata;
  pthread_mutex_lock(&st.lock);
  if (!st.written) {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
      on_runtime(data, id);
    else if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
      on_driver(data, id);
  }
  pthread_mutex_unlock(&st.lock);
}

/* ---- activity ------------------------------------------------------------ */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size,
                                      size_t *max_records) {
  *buffer = aligned_alloc(8, BUF_SIZE);
  *size = *buffer ? BUF_SIZE : 0;
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
                                      uint8_t *buffer, size_t size,
                                      size_t valid) {
  (void)size;
  CUpti_Activity *rec = NULL;
  pthread_mutex_lock(&st.lock);
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
    st.kernel_records++;
    size_t ki = kernel_index(k->name ? k->name : "?");
    uint64_t ns = k->end > k->start ? k->end - k->start : 0;
    if (ki != SIZE_MAX) {
      st.kernels[ki].launches++;
      st.kernels[ki].timed += ns > 0;
      st.kernels[ki].total_ns += ns;
    }
    long li = corr_get(k->correlationId);
    if (li < 0) {
      st.unmatched_records += ki != SIZE_MAX && kernel_matches(&st.kernels[ki]);
      continue;
    }
    launch_rec *l = &st.launches[li];
    l->start = k->start;
    l->end = k->end;
    l->stream = k->streamId;
    if (l->device < 0) l->device = (int)k->deviceId;
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
    st.dropped_records += dropped;
  pthread_mutex_unlock(&st.lock);
  free(buffer);
}

/* ---- writing ------------------------------------------------------------- */

static void put_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20 || *p >= 0x7f)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

static void put_hex(FILE *f, const uint8_t *b, uint32_t n) {
  fputc('"', f);
  for (uint32_t i = 0; b && i < n; i++)
    fprintf(f, "%02x", b[i]);
  fputc('"', f);
}

static void write_launch(FILE *f, const launch_rec *l) {
  fprintf(f,
          "{\"kernel\": %zu, \"api\": \"%s\", \"grid\": [%u, %u, %u], "
          "\"block\": [%u, %u, %u], \"shared_bytes\": %u, \"device\": %d, "
          "\"stream\": %u, ",
          l->kernel, l->api, l->grid[0], l->grid[1], l->grid[2], l->block[0],
          l->block[1], l->block[2], l->shared, l->device, l->stream);
  if (l->end > l->start)
    fprintf(f, "\"start_ns\": %" PRIu64 ", \"duration_ns\": %" PRIu64 ", ",
            l->start, l->end - l->start);
  else
    fputs("\"start_ns\": null, \"duration_ns\": null, ", f);
  if (!l->args_known) {
    fputs("\"args\": null}", f);
    return;
  }
  fputs("\"args\": [", f);
  for (uint32_t i = 0; i < l->nargs; i++) {
    const arg_rec *a = &l->args[i];
    fprintf(f, "%s{\"offset\": %u, \"size\": %u, \"hex\": ", i ? ", " : "",
            a->offset, a->size);
    put_hex(f, a->bytes, a->bytes ? a->size : 0);
    if (a->pointer)
      fprintf(f, ", \"pointer\": true, \"alloc_bytes_left\": %" PRIu64,
              a->alloc_left);
    for (uint32_t w = 0; w < a->nwords; w++)
      fprintf(f, "%s{\"at\": %u, \"alloc_bytes_left\": %" PRIu64 "}",
              w ? ", " : ", \"pointers\": [", a->word_at[w], a->word_left[w]);
    fputs(a->nwords ? "]}" : "}", f);
  }
  fputs("]}", f);
}

/* The CUDA libraries a program's kernels may call into: the file name's
 * stem before ".so". The runtime and the driver are not here (every CUDA
 * build links the one, and the other is never linked), nor is CUPTI. */
static const char *const cuda_libs[] = {
    "libcublas",   "libcublasLt",   "libcudnn",      "libnccl",
    "libcufft",    "libcufftw",     "libcurand",     "libcusparse",
    "libcusolver", "libcusolverMg", "libcusparseLt", "libcutensor",
    "libnvrtc",    "libnvJitLink",  "libnvjpeg",     "libnpp",
    "libcudss",    "libnvshmem"};

static int cuda_library(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *so = strstr(base, ".so");
  if (!so || (so[3] != '\0' && so[3] != '.')) return 0;
  size_t n = (size_t)(so - base);
  for (size_t i = 0; i < sizeof cuda_libs / sizeof *cuda_libs; i++) {
    size_t k = strlen(cuda_libs[i]);
    /* libcudnn_ops, libnppc, libnvshmem_host: a family's members count */
    if (n >= k && strncmp(base, cuda_libs[i], k) == 0 &&
        (n == k ||
         (strncmp(cuda_libs[i], "libcudnn", 8) == 0 && base[k] == '_') ||
         (strcmp(cuda_libs[i], "libnpp") == 0) ||
         (strcmp(cuda_libs[i], "libnvshmem") == 0 && base[k] == '_')))
      return 1;
  }
  return 0;
}

/* "libraries": each CUDA library mapped now, once, in order of mapping. */
static void write_libraries(FILE *f) {
  fputs("\"libraries\": [", f);
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[4608], seen[64][512];
  int n = 0;
  while (maps && fgets(line, sizeof line, maps)) {
    char *path = strchr(line, '/');
    if (!path) continue;
    path[strcspn(path, "\n")] = '\0';
    if (!cuda_library(path) || strlen(path) >= sizeof seen[0]) continue;
    int dup = 0;
    for (int i = 0; i < n && !dup; i++)
      dup = strcmp(seen[i], path) == 0;
    if (dup || n == 64) continue;
    memcpy(seen[n], path, strlen(path) + 1);
    fputs(n ? ", " : "", f);
    put_string(f, path);
    n++;
  }
  if (maps) fclose(maps);
  fputs("],\n", f);
}

static void write_results(void) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/obs-%ld.json", st.out_dir, (long)getpid());
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return;
  fprintf(f, "{\"kernlab_inject\": 1, \"pid\": %ld, \"cupti_version\": %u,\n",
          (long)getpid(), (unsigned)CUPTI_API_VERSION);
  fputs("\"devices\": [", f);
  int first = 1;
  for (int i = 0; i < MAX_DEVICES; i++) {
    if (!st.devices[i].seen) continue;
    fprintf(f, "%s{\"id\": %d, \"name\": ", first ? "" : ", ", i);
    put_string(f, st.devices[i].name);
    fprintf(f, ", \"compute_capability\": \"%d.%d\"", st.devices[i].cc_major,
            st.devices[i].cc_minor);
    /* double data rate: two transfers a clock */
    if (st.devices[i].mem_khz > 0 && st.devices[i].bus_bits > 0)
      fprintf(f, ", \"dram_peak_gbs\": %.1f",
              2.0 * st.devices[i].mem_khz * 1e3 * (st.devices[i].bus_bits / 8) /
                  1e9);
    fputs("}", f);
    first = 0;
  }
  fprintf(f,
          "],\n\"limits\": {\"max_launches\": %" PRIu64
          ", \"max_bytes\": %" PRIu64 "},\n",
          st.max_launches, st.max_bytes);
  fprintf(f,
          "\"kernel_records\": %" PRIu64 ", \"unmatched_records\": %" PRIu64
          ", \"dropped_records\": %" PRIu64 ",\n",
          st.kernel_records, st.unmatched_records, st.dropped_records);
  write_libraries(f);
  fputs("\"errors\": ", f);
  put_string(f, st.errors);
  fputs(",\n\"kernels\": [\n", f);
  for (size_t i = 0; i < st.nkernels; i++) {
    const kernel_stat *k = &st.kernels[i];
    fputs(i ? ",\n{\"name\": " : "{\"name\": ", f);
    put_string(f, k->name);
    if (k->demangled) {
      fputs(", \"demangled\": ", f);
      put_string(f, k->demangled);
    }
    fprintf(f,
            ", \"matched\": %s, \"launches\": %" PRIu64 ", \"timed\": %" PRIu64
            ", \"total_ns\": %" PRIu64 ", \"recorded\": %" PRIu64
            ", \"not_recorded\": %" PRIu64 "}",
            k->matched == 1 ? "true" : "false", k->launches, k->timed,
            k->total_ns, k->recorded, k->not_recorded);
  }
  fputs("],\n\"launches\": [\n", f);
  for (size_t i = 0; i < st.nlaunches; i++) {
    if (i) fputs(",\n", f);
    write_launch(f, &st.launches[i]);
  }
  fputs("]}\n", f);
  if (fclose(f) == 0)
    rename(tmp, path);
  else
    unlink(tmp);
}

static void at_exit(void) {
  if (!st.initialized) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&st.lock);
  if (!st.written) {
    write_results();
    st.written = 1;
  }
  pthread_mutex_unlock(&st.lock);
}

static void enable(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
  CUptiResult r = cuptiEnableCallback(1, st.subscriber, domain, id);
  if (r != CUPTI_SUCCESS) note_cupti("cuptiEnableCallback", r);
  r = domain == CUPTI_CB_DOMAIN_RUNTIME_API
          ? cuptiActivityEnableRuntimeApi(id, 1)
          : cuptiActivityEnableDriverApi(id, 1);
  (void)r; /* correlation ids only; the kernel records are what matter */
}

EXPORT int InitializeInjection(void) {
  pthread_mutex_lock(&st.lock);
  int again = st.initialized;
  st.initialized = 1;
  pthread_mutex_unlock(&st.lock);
  const char *out = getenv("KL_OBSERVE_OUT");
  if (again || !out || !*out) return 1;
  st.out_dir = strdup(out);
  st.max_launches = env_u64("KL_OBSERVE_MAX_LAUNCHES", 100000);
  st.max_bytes = env_u64("KL_OBSERVE_MAX_BYTES", 64u << 20);
  const char *filter = getenv("KL_OBSERVE_KERNEL");
  if (filter && *filter) {
    if (regcomp(&st.filter, filter, REG_EXTENDED | REG_NOSUB) == 0)
      st.have_filter = 1;
    else
      note_error("KL_OBSERVE_KERNEL: not a regular expression");
  }
  void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
  if (cxx) *(void **)&st.demangle = dlsym(cxx, "__cxa_demangle");
  atexit(at_exit);

  uint32_t version = 0;
  if (cuptiGetVersion(&version) == CUPTI_SUCCESS &&
      version / 1000 != CUPTI_API_VERSION / 1000)
    note_error("CUPTI %u loaded, built against %u", version,
               (unsigned)CUPTI_API_VERSION);
  CUptiResult r = cuptiSubscribe(&st.subscriber, on_callback, NULL);
  if (r != CUPTI_SUCCESS) {
    note_cupti("cuptiSubscribe (is another profiler attached?)", r);
    return 1;
  }
  for (size_t i = 0; i < KL_LAUNCH_IDS(kl__launch_runtime_cbids); i++)
    enable(CUPTI_CB_DOMAIN_RUNTIME_API, kl__launch_runtime_cbids[i]);
  for (size_t i = 0; i < KL_LAUNCH_IDS(kl__launch_driver_cbids); i++)
    enable(CUPTI_CB_DOMAIN_DRIVER_API, kl__launch_driver_cbids[i]);
  r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r == CUPTI_SUCCESS)
    r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) note_cupti("kernel activity (no durations)", r);
  return 1;
}
