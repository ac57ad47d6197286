// Breaks the launch contract: asks for a larger workspace in every launch.
__global__ void add(float *c, const float *a, const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}

extern "C" void kernlab_launch(float *c, const float *a, const float *b, int n,
                               const kl_launch_ctx *ctx) {
  static uint64_t bytes = 1024;
  bytes *= 2;
  (void)ctx->scratch(ctx, bytes);
  add<<<(n + 255) / 256, 256, 0, (cudaStream_t)ctx->stream>>>(c, a, b, n);
}
