// Correct, and part of its work is no kernel: the launch copies a into c
// (cudaMemcpyAsync, device to device) and then adds b in place. It moves
// 20 bytes an element where the case's kernel moves 12, so it is slower,
// and the timer must count the copy to say so.
__global__ void add_in_place(float *c, const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] += b[i];
}

extern "C" void kernlab_launch(float *c, const float *a, const float *b, int n,
                               const kl_launch_ctx *ctx) {
  cudaStream_t s = (cudaStream_t)ctx->stream;
  cudaMemcpyAsync(c, a, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice, s);
  add_in_place<<<(n + 255) / 256, 256, 0, s>>>(c, b, n);
}
