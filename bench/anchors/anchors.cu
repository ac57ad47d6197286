// Anchors for bench_cuda, measured in the same run on the same kernels:
//  - CUDA events around each launch, hot (no flush);
//  - an nvbench-style cold loop: a memset of twice the L2 (a writing flush)
//    then an event pair around the kernel;
//  - the event reading of an empty kernel.
// Each is repeated REPEATS times; we print the median of medians, the
// relative SD of the medians, and the wall time per sample.
// usage: anchors N_ELEMENTS REPEATS SAMPLES   (JSON lines on stdout)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" __global__ void copy(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
}
extern "C" __global__ void empty(float *x) { (void)x; }

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                 \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static void report(const char *method, int n, const std::vector<double> &meds,
                   double wall_per_sample_us) {
  double mean = 0, var = 0;
  for (double m : meds)
    mean += m / meds.size();
  for (double m : meds)
    var += (m - mean) * (m - mean) / (meds.size() - 1);
  printf("{\"anchor\":\"%s\",\"n\":%d,\"median_us\":%.4f,\"rsd_pct\":%.4f,"
         "\"repeats\":%zu,\"wall_per_sample_us\":%.3f}\n",
         method, n, median(meds), 100 * std::sqrt(var) / mean, meds.size(),
         wall_per_sample_us);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10 << 20;
  int repeats = argc > 2 ? atoi(argv[2]) : 30;
  int samples = argc > 3 ? atoi(argv[3]) : 100;
  float *in, *out;
  CK(cudaMalloc(&in, (size_t)n * 4));
  CK(cudaMalloc(&out, (size_t)n * 4));
  CK(cudaMemset(in, 0, (size_t)n * 4));
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  size_t flush_bytes = 2 * (size_t)l2;
  char *flush;
  CK(cudaMalloc(&flush, flush_bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  dim3 grid((n + 255) / 256), block(256);
  for (int w = 0; w < 10; w++)
    copy<<<grid, block>>>(out, in, n);
  CK(cudaDeviceSynchronize());
  for (int mode = 0; mode < 3; mode++) {
    std::vector<double> meds;
    auto t0 = std::chrono::steady_clock::now();
    long total = 0;
    for (int r = 0; r < repeats; r++) {
      std::vector<double> t;
      for (int s = 0; s < samples; s++) {
        if (mode == 1)
          CK(cudaMemsetAsync(flush, s & 0xff, flush_bytes)); /* writes */
        CK(cudaEventRecord(e0));
        if (mode == 2)
          empty<<<1, 32>>>(out);
        else
          copy<<<grid, block>>>(out, in, n);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1000.0);
        total++;
      }
      meds.push_back(median(t));
    }
    double wall = std::chrono::duration<double, std::micro>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
    const char *names[] = {"events_hot", "nvbench_style_cold_memset",
                           "events_empty_kernel"};
    report(names[mode], n, meds, wall / total);
  }
  return 0;
}
