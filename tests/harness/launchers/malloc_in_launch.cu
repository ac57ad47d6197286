// Breaks the launch contract: allocates device memory in every launch.
__global__ void add(float *c, const float *a, const float *b, int n, float *t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    t[i] = a[i];
    c[i] = t[i] + b[i];
  }
}

extern "C" void kernlab_launch(float *c, const float *a, const float *b, int n,
                               const kl_launch_ctx *ctx) {
  float *tmp = NULL;
  cudaMalloc(&tmp, (size_t)n * sizeof(float));
  add<<<(n + 255) / 256, 256, 0, (cudaStream_t)ctx->stream>>>(c, a, b, n, tmp);
}
