// Breaks the launch contract past the harness's redirection by name: takes
// device memory through the driver API, found with dlsym, in every launch.
#include <dlfcn.h>

__global__ void add(float *c, const float *a, const float *b, int n, float *t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    t[i] = a[i];
    c[i] = t[i] + b[i];
  }
}

extern "C" void kernlab_launch(float *c, const float *a, const float *b, int n,
                               const kl_launch_ctx *ctx) {
  typedef int (*mem_alloc_fn)(unsigned long long *, size_t);
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  mem_alloc_fn mem_alloc =
      driver ? (mem_alloc_fn)dlsym(driver, "cuMemAlloc_v2") : 0;
  unsigned long long tmp = 0;
  if (!mem_alloc || mem_alloc(&tmp, (size_t)n * sizeof(float)) != 0)
    return;
  add<<<(n + 255) / 256, 256, 0, (cudaStream_t)ctx->stream>>>(
      c, a, b, n, (float *)tmp);
}
