// Correct when launched, and launches nothing while its stream is being
// captured: the graph it leaves would replay no work. The timed_work gate
// judges the capture as a timed launch: CHEAT.
__global__ void add_unless_captured(float *c, const float *a, const float *b,
                                    int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" void kernlab_launch(float *c, const float *a, const float *b, int n,
                               const kl_launch_ctx *ctx) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing((cudaStream_t)ctx->stream, &st);
  if (st == cudaStreamCaptureStatusActive) return;
  add_unless_captured<<<(n + 255) / 256, 256, 0, (cudaStream_t)ctx->stream>>>(
      c, a, b, n);
}
