// Breaks the launch contract: waits for the device inside the launch.
__global__ void add(float *c, const float *a, const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}

extern "C" void kernlab_launch(float *c, const float *a, const float *b, int n,
                               const kl_launch_ctx *ctx) {
  add<<<(n + 255) / 256, 256, 0, (cudaStream_t)ctx->stream>>>(c, a, b, n);
  cudaDeviceSynchronize();
}
