// CUB's device-wide reduction instead of hand-written kernels: the sum of
// x (float in, double accumulated: the output's type sets CUB's
// accumulator) goes to a scratch double, then one thread adds it to
// out[0] (the case's out is read and written: out[0] += sum). CUB's
// temporary storage comes from ctx->scratch: its size is asked once per
// launch (a host-side query, no device work), the same every time, so the
// region is made in the first launch only.
#include <cub/cub.cuh>

__global__ void add_total(double *out, const double *total) {
  out[0] += total[0];
}

extern "C" void kernlab_launch(double *out, const float *x, int n,
                               const kl_launch_ctx *ctx) {
  cudaStream_t st = (cudaStream_t)ctx->stream;
  double *total = (double *)ctx->scratch(ctx, sizeof(double));
  size_t bytes = 0;
  cub::DeviceReduce::Sum(nullptr, bytes, x, total, n, st);
  void *temp = ctx->scratch(ctx, bytes);
  if (!total || !temp)
    return; /* the harness reports why */
  cub::DeviceReduce::Sum(temp, bytes, x, total, n, st);
  add_total<<<1, 1, 0, st>>>(out, total);
}
