// Breaks the launch contract past the harness's redirection by name: waits
// for the device through a pointer to cudaDeviceSynchronize, which no
// macro of a call's name sees.
__global__ void add(float *c, const float *a, const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}

static cudaError_t (*volatile wait_for_device)(void) = cudaDeviceSynchronize;

extern "C" void kernlab_launch(float *c, const float *a, const float *b, int n,
                               const kl_launch_ctx *ctx) {
  add<<<(n + 255) / 256, 256, 0, (cudaStream_t)ctx->stream>>>(c, a, b, n);
  wait_for_device();
}
