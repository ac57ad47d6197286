/* Does CUPTI's kernel tracing change the kernel it times (issue 46, part 2)?
 *
 * kernlab times a launch by CUPTI's CONCURRENT_KERNEL activity records,
 * which CUPTI gets by instrumenting kernel code (cupti.md); ncu reads the
 * performance monitor's gpu__time_duration. Read from the same cold state
 * the two differ by kernel: +7-9% for kernels that read DRAM, -3% to -11%
 * for one that only writes (bench/flush/duration_sources.py). This program
 * times the same rounds three ways in separate processes — no CUPTI,
 * CONCURRENT_KERNEL, KERNEL (which serialises instead of instrumenting) —
 * each round being kernlab's cold sample without kernlab: a read-only
 * flush of 2x the L2 (ld.cg, as the harness's), then the timed kernel,
 * bracketed by CUDA events. If the events move when tracing is on, the
 * tracing slows the kernel; if the records and the events part, the
 * records read it differently. ncu can read the untraced mode's kernels
 * (`-k regex:^timed_`).
 *
 * `switch` starts with KERNEL and, after its rounds, disables it and
 * enables CONCURRENT_KERNEL for as many again: whether a process can change
 * kinds once its modules are loaded.
 *
 * usage: activity_kinds N ROUNDS none|concurrent|kernel|switch
 * prints per kernel (copy, read, fill of N floats): the median of the
 * events' kernel time and, traced, of the records' end - start, in us. */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <cupti_activity.h>
#include <cuda_runtime.h>

/* the harness's own flush (klh_flush_on: 2x the L2, ld.cg), as kernlab
 * runs it; the run in bench/README.md used a copy of the same kernel */
#include "../../libkernlab/harness/cuda_probes.inc"

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                      \
              cudaGetErrorString(e_));                                         \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)
#define CU(x)                                                                  \
  do {                                                                         \
    CUptiResult r_ = (x);                                                      \
    if (r_ != CUPTI_SUCCESS) {                                                 \
      const char *s_ = "";                                                     \
      cuptiGetResultString(r_, &s_);                                           \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, s_);                  \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

__global__ void timed_copy(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

__global__ void timed_read(float *out, const float *in, int n) {
  __shared__ float warp_sum[8];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
  for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
  if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int w = 0; w < 8; w++) s += warp_sum[w];
    out[blockIdx.x] = s;
  }
}

__global__ void timed_fill(float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (float)(i & 1023);
}

static std::map<std::string, std::vector<double>> g_records;

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size,
                                      size_t *max_records) {
  *size = 8 << 20;
  *buf = (uint8_t *)aligned_alloc(8, *size);
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t *buf,
                                      size_t, size_t valid) {
  CUpti_Activity *rec = NULL;
  while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
    if (k->name && strncmp(k->name, "_Z10timed_", 10) == 0 &&
        k->end > k->start)
      g_records[std::string(rec->kind == CUPTI_ACTIVITY_KIND_KERNEL ? "K"
                                                                    : "C") +
                k->name]
          .push_back((double)(k->end - k->start) / 1000.0);
  }
  free(buf);
}

static double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: activity_kinds N ROUNDS none|concurrent|kernel\n");
    return 2;
  }
  int n = atoi(argv[1]), rounds = atoi(argv[2]);
  const char *mode = argv[3];
  bool sw = !strcmp(mode, "switch");
  if (strcmp(mode, "none") && strcmp(mode, "concurrent") &&
      strcmp(mode, "kernel") && !sw) {
    fprintf(stderr,
            "activity_kinds: mode '%s' is none, concurrent, kernel or "
            "switch\n",
            mode);
    return 2;
  }
  if (strcmp(mode, "none")) {
    CU(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    CU(cuptiActivityEnable(!strcmp(mode, "kernel") || sw
                               ? CUPTI_ACTIVITY_KIND_KERNEL
                               : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  }
  char err[256];
  float *in, *out;
  CK(cudaMalloc(&in, n * sizeof(float)));
  CK(cudaMalloc(&out, n * sizeof(float)));
  CK(cudaMemset(in, 0, n * sizeof(float)));
  CK(cudaDeviceSynchronize());
  int grid = (n + 255) / 256;
  cudaEvent_t e1, e2;
  CK(cudaEventCreate(&e1));
  CK(cudaEventCreate(&e2));
  static const char *const kernels[] = {"copy", "read", "fill"};
  for (int phase = 0; phase < (sw ? 2 : 1); phase++) {
    if (phase == 1) { /* switch: from KERNEL to CONCURRENT_KERNEL */
      CK(cudaDeviceSynchronize());
      CU(cuptiActivityFlushAll(1));
      CU(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_KERNEL));
      CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    }
    std::map<std::string, std::vector<double>> events;
    for (int r = 0; r < rounds + 5; r++) /* 5 warm-up rounds, kept out */
      for (const char *k : kernels) {
        if (klh_flush_on(0, err, sizeof(err))) {
          fprintf(stderr, "flush: %s\n", err);
          return 1;
        }
        CK(cudaEventRecord(e1));
        if (!strcmp(k, "copy"))
          timed_copy<<<grid, 256>>>(out, in, n);
        else if (!strcmp(k, "read"))
          timed_read<<<grid, 256>>>(out, in, n);
        else
          timed_fill<<<grid, 256>>>(out, n);
        CK(cudaEventRecord(e2));
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e1, e2));
        if (r >= 5) events[k].push_back(1000.0 * ms);
      }
    if (strcmp(mode, "none")) CU(cuptiActivityFlushAll(1));
    const char *kind = !strcmp(mode, "kernel") || (sw && phase == 0) ? "K"
                                                                      : "C";
    for (const char *k : kernels) {
      std::string mangled = std::string(kind) + "_Z10timed_" + k;
      double rec = 0;
      size_t nrec = 0;
      for (auto &kv : g_records)
        if (kv.first.compare(0, mangled.size(), mangled) == 0 &&
            kv.second.size() > 5) { /* the warm-up rounds' records left out */
          rec = median(std::vector<double>(kv.second.begin() + 5,
                                           kv.second.end()));
          nrec = kv.second.size();
        }
      printf("mode %-10s n %d kernel %s events_us %.2f records_us %.2f "
             "(%zu records)\n",
             sw ? (phase ? "switch->C" : "switch:K") : mode, n, k,
             median(events[k]), rec, nrec);
    }
    g_records.clear();
  }
  return 0;
}
