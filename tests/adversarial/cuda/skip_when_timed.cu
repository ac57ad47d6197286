// A cheat: does its work for the check's few launches, then (timing's
// hundreds) launches nothing and leaves c as it is. The kernel ran in every
// checked launch and runs in none of the timed ones: CHEAT, timed_work, at
// the first timed launch (before the stale-outputs gate would see poison).
__global__ void add(float *c, const float *a, const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}

static int launches;

extern "C" void kernlab_launch(float *c, const float *a, const float *b, int n,
                               const kl_launch_ctx *ctx) {
  if (++launches > 24)
    return;
  add<<<(n + 255) / 256, 256, 0, (cudaStream_t)ctx->stream>>>(c, a, b, n);
}
