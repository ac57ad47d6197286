// A split reduction in two kernels, with its own launch. The first kernel
// runs four blocks per SM (the grid is sized by ctx->sms, not by n); each
// block walks the input with a grid stride, sums in double and writes one
// partial to a workspace from ctx->scratch. The second kernel, one block,
// adds the partials to out[0]. No atomics on the hot path.
#define THREADS 256

__device__ double block_sum(double v) {
  __shared__ double warp_sums[THREADS / 32];
  for (int off = 16; off > 0; off >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0)
    warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  v = threadIdx.x < THREADS / 32 ? warp_sums[threadIdx.x] : 0.0;
  if (threadIdx.x < 32)
    for (int off = 16; off > 0; off >>= 1)
      v += __shfl_down_sync(0xffffffffu, v, off);
  return v; /* valid in thread 0 */
}

__global__ void partial_sums(double *partials, const float *x, int n) {
  double acc = 0.0;
  int stride = gridDim.x * THREADS;
  const float4 *x4 = (const float4 *)x;
  int n4 = n / 4;
  for (int i = blockIdx.x * THREADS + threadIdx.x; i < n4; i += stride) {
    float4 v = x4[i];
    acc += (double)v.x + (double)v.y + (double)v.z + (double)v.w;
  }
  for (int i = n4 * 4 + blockIdx.x * THREADS + threadIdx.x; i < n; i += stride)
    acc += (double)x[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = acc;
}

__global__ void finish(double *out, const double *partials, int count) {
  double acc = 0.0;
  for (int i = threadIdx.x; i < count; i += THREADS)
    acc += partials[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0)
    out[0] += acc;
}

extern "C" void kernlab_launch(double *out, const float *x, int n,
                               const kl_launch_ctx *ctx) {
  int blocks = 4 * ctx->sms;
  double *partials =
      (double *)ctx->scratch(ctx, (uint64_t)blocks * sizeof(double));
  if (!partials)
    return; /* the harness reports why */
  cudaStream_t st = (cudaStream_t)ctx->stream;
  partial_sums<<<blocks, THREADS, 0, st>>>(partials, x, n);
  finish<<<1, THREADS, 0, st>>>(out, partials, blocks);
}
