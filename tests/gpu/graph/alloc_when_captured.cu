// Keeps the launch contract when launched, and allocates while its stream
// is being captured: the capture is a timed launch the contract judges
// (CHEAT, launch_contract), not a launch graphs merely cannot hold.
__global__ void add_alloc(float *c, const float *a, const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" void kernlab_launch(float *c, const float *a, const float *b, int n,
                               const kl_launch_ctx *ctx) {
  cudaStream_t s = (cudaStream_t)ctx->stream;
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(s, &st);
  if (st == cudaStreamCaptureStatusActive) {
    void *p = NULL;
    cudaMalloc(&p, 1 << 20);
  }
  add_alloc<<<(n + 255) / 256, 256, 0, s>>>(c, a, b, n);
}
