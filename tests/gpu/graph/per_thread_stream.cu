// Launches on the per-thread default stream instead of ctx->stream: under
// a capture the kernel runs at once instead of joining the graph, so a
// replay would do no work (kl compare --launch graph refuses it).
__global__ void add_elsewhere(float *c, const float *a, const float *b,
                              int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" void kernlab_launch(float *c, const float *a, const float *b, int n,
                               const kl_launch_ctx *ctx) {
  (void)ctx;
  add_elsewhere<<<(n + 255) / 256, 256, 0, cudaStreamPerThread>>>(c, a, b, n);
}
