// Issue 26's "a captured CUDA graph per round": what would it save? A cold
// sample is [restore (memset of the outputs)][flush (read 2x the L2)]
// [kernel]; kernlab queues them as separate launches on one stream. This
// times rounds of those operations queued as launches and as a graph
// (one round per graph, and sixteen rounds per graph), each operation
// alone, and the same without the restore, so the device's idle time
// between operations shows as (round - sum of operations). A fourth form
// writes the restore's pattern inside the flush kernel, before its reads:
// a launch fewer, the writes and the reads in one kernel.
//
// usage: graph_gaps [FLOATS] [ROUNDS]   (default 10M floats: 40 MB a buffer)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));              \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

// the harness's own flush (klh_l2_flush, klh_flush_on), as kernlab runs it
#include "../../libkernlab/harness/cuda_probes.inc"

__global__ void copy(float4 *dst, const float4 *src, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

// The restore's memset and the flush in one kernel: each thread writes its
// share of the output's pattern, then reads its share of the flush buffer.
__global__ void restore_flush(uint4 *dst, size_t n16, uint4 word,
                              const int4 *buf, size_t n, int *sink) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] = word;
  klh_flush_read(buf, n, sink);
}

static float *in, *out;
static size_t nfloat;
static cudaStream_t st;
static char err[256];

enum { RESTORE = 1, FLUSH = 2, KERNEL = 4, FUSED = 8 };

static void queue(int ops) {
  if (ops & RESTORE) CK(cudaMemsetAsync(out, 0xff, nfloat * 4, st));
  if ((ops & FLUSH) && klh_flush_on(st, err, sizeof(err))) {
    fprintf(stderr, "%s\n", err);
    exit(1);
  }
  if (ops & FUSED) {
    uint4 word = {~0u, ~0u, ~0u, ~0u};
    restore_flush<<<1024, 512, 0, st>>>((uint4 *)out, nfloat / 4, word,
                                        klh_flush_buf, klh_flush_n,
                                        klh_flush_sink);
  }
  if (ops & KERNEL)
    copy<<<1056, 256, 0, st>>>((float4 *)out, (const float4 *)in, nfloat / 4);
}

// Microseconds per round: `rounds` rounds of `ops`, as launches (per_graph
// 0) or as graphs of per_graph rounds each.
static double per_round(int ops, int rounds, int per_graph) {
  cudaGraphExec_t exec = nullptr;
  if (per_graph) {
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int r = 0; r < per_graph; r++)
      queue(ops);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&exec, g, 0));
    CK(cudaGraphDestroy(g));
  }
  auto run = [&](int n) {
    if (per_graph)
      for (int r = 0; r < n; r += per_graph)
        CK(cudaGraphLaunch(exec, st));
    else
      for (int r = 0; r < n; r++)
        queue(ops);
  };
  run(per_graph ? per_graph * 4 : 32); // warm
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaStreamSynchronize(st));
  CK(cudaEventRecord(e0, st));
  run(rounds);
  CK(cudaEventRecord(e1, st));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  if (exec) CK(cudaGraphExecDestroy(exec));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return ms * 1000.0 / rounds;
}

int main(int argc, char **argv) {
  nfloat = argc > 1 ? strtoull(argv[1], nullptr, 10) : 10u << 20;
  int rounds = argc > 2 ? atoi(argv[2]) : 512;
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  CK(cudaMalloc(&in, nfloat * 4));
  CK(cudaMalloc(&out, nfloat * 4));
  CK(cudaMemset(in, 0, nfloat * 4));
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  if (klh_flush_ready(err, sizeof(err))) { /* its buffer, before capture */
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  printf("%s, L2 %d MB, buffers %.0f MB, flush reads %.0f MB, %d rounds\n",
         p.name, p.l2CacheSize >> 20, nfloat * 4 / 1e6,
         klh_flush_n * sizeof(int4) / 1e6, rounds);
  double alone[8] = {0};
  for (int op : {RESTORE, FLUSH, KERNEL, FUSED})
    alone[op] = per_round(op, rounds, 0);
  printf("alone (us a round, launches): restore %.2f, flush %.2f, kernel "
         "%.2f, restore in the flush %.2f\n",
         alone[RESTORE], alone[FLUSH], alone[KERNEL], alone[FUSED]);
  struct {
    const char *name;
    int ops;
  } seq[] = {
      {"restore+flush+kernel (cold)", RESTORE | FLUSH | KERNEL},
      {"flush+kernel", FLUSH | KERNEL},
      {"restore+kernel (hot)", RESTORE | KERNEL},
      {"restore in the flush, kernel (cold, 2 launches)", FUSED | KERNEL}};
  printf("| round | each op repeated alone, summed | launches | graph a round "
         "| graph of "
         "16 rounds |\n|---|---|---|---|---|\n");
  for (auto &s : seq) {
    double sum = 0;
    for (int op : {RESTORE, FLUSH, KERNEL, FUSED})
      if (s.ops & op) sum += alone[op];
    printf("| %s | %.2f | %.2f | %.2f | %.2f |\n", s.name, sum,
           per_round(s.ops, rounds, 0), per_round(s.ops, rounds, 1),
           per_round(s.ops, rounds, 16));
  }
  return 0;
}
