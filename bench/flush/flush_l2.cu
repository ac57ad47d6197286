/* Which L2 flush leaves the cache as Nsight Compute's does (issue 26)?
 *
 * Each round is what a kernlab cold sample does before its kernel: the
 * previous sample's kernel ran (its output lines dirty in L2), the inputs
 * were restored (a device-to-device copy: dirty lines too), then a flush,
 * then the timed kernel. The timed kernel is `timed_copy` (the float copy
 * of bench/cases/copy_f32); the one before it is `prev_copy`, so that
 * `ncu -k regex:^timed_copy` profiles only the kernel after the flush.
 *
 * usage: flush_l2 N ROUNDS [VARIANT...]
 *   N        floats per buffer (10M: the 20 us copy; 2.5M: the 5 us one)
 *   VARIANT  none, read2 (kernlab's: read 2x L2 through L2 only), read4,
 *            read2_ca (plain loads), write2 (a memset-like store of 2x L2),
 *            write_read (write 2x L2, then read another 2x L2),
 *            write_discard (write 2x L2, then discard.global.L2 every line
 *            of it: nothing dirty left, nothing of the kernel's either),
 *            read_discard (read 2x L2, then discard its lines),
 *            reset_read (cudaCtxResetPersistingL2Cache, then read2),
 *            read2_spinUS (read2, then a one-thread kernel spinning US
 *            microseconds, as kernlab's clock probe spins 2 us),
 *            read2_idle (read2, synchronise, sleep 1 ms on the host)
 * Each variant runs ROUNDS rounds, in the order given; stdout has one line
 * per variant: its name, the median wall of the flush alone and of the
 * timed kernel, each read by CUDA events around it (an event pair adds
 * about a microsecond; the same for every variant). Under ncu the timed
 * kernel's duration and DRAM traffic are ncu's (bench/flush/flush_l2.sh),
 * but ncu's own work between the flush and the kernel hides anything the
 * flush leaves in flight: the events see that. */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <unistd.h>

#include <cuda_runtime.h>

#define CK(call)                                                        \
  do {                                                                  \
    cudaError_t e_ = (call);                                            \
    if (e_ != cudaSuccess) {                                            \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,     \
              cudaGetErrorString(e_));                                  \
      exit(1);                                                          \
    }                                                                   \
  } while (0)

extern "C" __global__ void prev_copy(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

extern "C" __global__ void timed_copy(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

__global__ void flush_read_cg(const int4 *buf, size_t n, int *sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    int4 v = __ldcg(buf + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7fffffff) *sink = acc;
}

__global__ void flush_read_ca(const int4 *buf, size_t n, int *sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    int4 v = buf[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7fffffff) *sink = acc;
}

__global__ void flush_write(int4 *buf, size_t n, int salt) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    buf[i] = make_int4(salt, (int)i, salt, (int)i);
}

__global__ void spin(int ns) {
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  } while (t1 - t0 < (unsigned long long)ns);
}

/* discard.global.L2: the 128-byte line leaves L2 without a write-back */
__global__ void flush_discard(int4 *buf, size_t lines) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < lines;
       i += (size_t)gridDim.x * blockDim.x) {
    char *p = (char *)buf + i * 128;
    asm volatile("discard.global.L2 [%0], 128;" ::"l"(p) : "memory");
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: flush_l2 N ROUNDS [VARIANT...]\n");
    return 2;
  }
  int n = atoi(argv[1]), rounds = atoi(argv[2]);
  int dev = 0, l2 = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  size_t fbytes = 4 * (size_t)l2; /* the largest variant's, read4 */
  int4 *fa, *fb;
  int *sink;
  float *in, *in_saved, *out;
  CK(cudaMalloc(&fa, fbytes));
  CK(cudaMalloc(&fb, fbytes));
  CK(cudaMalloc(&sink, sizeof(int)));
  CK(cudaMemset(fa, 1, fbytes));
  CK(cudaMemset(fb, 2, fbytes));
  CK(cudaMalloc(&in, n * sizeof(float)));
  CK(cudaMalloc(&in_saved, n * sizeof(float)));
  CK(cudaMalloc(&out, n * sizeof(float)));
  CK(cudaMemset(in_saved, 3, n * sizeof(float)));
  CK(cudaDeviceSynchronize());
  size_t n2 = 2 * (size_t)l2 / sizeof(int4), n4 = 2 * n2;
  int grid = (n + 255) / 256;
  cudaEvent_t e0, e1, e2;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventCreate(&e2));
  static const char *const all[] = {"none",     "read2",         "read4",
                                    "read2_ca", "write2",        "write_read",
                                    "write_discard", "read_discard",
                                    "reset_read", "read2_spin2",
                                    "read2_spin20", "read2_spin200",
                                    "read2_idle"};
  std::vector<const char *> variants;
  for (int i = 3; i < argc; i++) variants.push_back(argv[i]);
  if (variants.empty())
    variants.assign(all, all + sizeof(all) / sizeof(all[0]));
  printf("l2_bytes %d\n", l2);
  for (const char *v : variants) {
    std::vector<float> ms, ks;
    for (int r = 0; r < rounds; r++) {
      prev_copy<<<grid, 256>>>(out, in, n);
      CK(cudaMemcpyAsync(in, in_saved, n * sizeof(float),
                         cudaMemcpyDeviceToDevice));
      CK(cudaEventRecord(e0));
      if (!strcmp(v, "none")) {
      } else if (!strcmp(v, "read2")) {
        flush_read_cg<<<1024, 512>>>(fa, n2, sink);
      } else if (!strcmp(v, "read4")) {
        flush_read_cg<<<1024, 512>>>(fa, n4, sink);
      } else if (!strcmp(v, "read2_ca")) {
        flush_read_ca<<<1024, 512>>>(fa, n2, sink);
      } else if (!strcmp(v, "write2")) {
        flush_write<<<1024, 512>>>(fa, n2, r);
      } else if (!strcmp(v, "write_read")) {
        flush_write<<<1024, 512>>>(fa, n2, r);
        flush_read_cg<<<1024, 512>>>(fb, n2, sink);
      } else if (!strcmp(v, "write_discard")) {
        flush_write<<<1024, 512>>>(fa, n2, r);
        flush_discard<<<1024, 512>>>(fa, n2 * sizeof(int4) / 128);
      } else if (!strcmp(v, "read_discard")) {
        flush_read_cg<<<1024, 512>>>(fa, n2, sink);
        flush_discard<<<1024, 512>>>(fa, n2 * sizeof(int4) / 128);
      } else if (!strncmp(v, "read2_spin", 10)) {
        flush_read_cg<<<1024, 512>>>(fa, n2, sink);
        spin<<<1, 1>>>(1000 * atoi(v + 10));
      } else if (!strcmp(v, "read2_idle")) {
        flush_read_cg<<<1024, 512>>>(fa, n2, sink);
        CK(cudaDeviceSynchronize());
        usleep(1000);
      } else if (!strcmp(v, "reset_read")) {
        CK(cudaCtxResetPersistingL2Cache());
        flush_read_cg<<<1024, 512>>>(fa, n2, sink);
      } else {
        fprintf(stderr, "flush_l2: unknown variant '%s'\n", v);
        return 2;
      }
      CK(cudaEventRecord(e1));
      timed_copy<<<grid, 256>>>(out, in, n);
      CK(cudaEventRecord(e2));
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      float t = 0, k = 0;
      CK(cudaEventElapsedTime(&t, e0, e1));
      CK(cudaEventElapsedTime(&k, e1, e2));
      ms.push_back(t);
      ks.push_back(k);
    }
    std::sort(ms.begin(), ms.end());
    std::sort(ks.begin(), ks.end());
    printf("variant %s rounds %d flush_us %.1f kernel_us %.2f\n", v, rounds,
           1000.0 * ms[ms.size() / 2], 1000.0 * ks[ks.size() / 2]);
  }
  return 0;
}
