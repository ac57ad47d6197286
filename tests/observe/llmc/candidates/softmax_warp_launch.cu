// A candidate that owns its launch, for the case made from
// softmax_forward.cu: a warp per row instead of a block per row (the
// program's block size no longer matters), the row held in registers so
// the input is read once, an online max and sum.
#include <float.h>
#include "common.h"

namespace kernels {

template <typename T, int PER_LANE>
__global__ void softmax_warp_per_row(T *out, const T *inp, int N, int C) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= N)
    return;
  const T *x = inp + (size_t)row * C;
  T *y = out + (size_t)row * C;
  float v[PER_LANE];
  float maxval = -FLT_MAX;
#pragma unroll
  for (int k = 0; k < PER_LANE; k++) {
    int i = lane + 32 * k;
    v[k] = i < C ? (float)x[i] : -FLT_MAX;
    maxval = fmaxf(maxval, v[k]);
  }
  for (int o = 16; o > 0; o /= 2)
    maxval = fmaxf(maxval, __shfl_xor_sync(0xffffffffu, maxval, o));
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < PER_LANE; k++) {
    v[k] = lane + 32 * k < C ? __expf(v[k] - maxval) : 0.0f;
    sum += v[k];
  }
  for (int o = 16; o > 0; o /= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, o);
  float inv = 1.0f / sum;
#pragma unroll
  for (int k = 0; k < PER_LANE; k++) {
    int i = lane + 32 * k;
    if (i < C)
      y[i] = (T)(v[k] * inv);
  }
}

// rows longer than the registers hold: three strided passes per warp
template <typename T>
__global__ void softmax_warp_strided(T *out, const T *inp, int N, int C) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= N)
    return;
  const T *x = inp + (size_t)row * C;
  T *y = out + (size_t)row * C;
  float maxval = -FLT_MAX, sum = 0.0f;
  for (int i = lane; i < C; i += 32)
    maxval = fmaxf(maxval, (float)x[i]);
  for (int o = 16; o > 0; o /= 2)
    maxval = fmaxf(maxval, __shfl_xor_sync(0xffffffffu, maxval, o));
  for (int i = lane; i < C; i += 32)
    sum += __expf((float)x[i] - maxval);
  for (int o = 16; o > 0; o /= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, o);
  for (int i = lane; i < C; i += 32)
    y[i] = (T)(__expf((float)x[i] - maxval) / sum);
}

} // namespace kernels

extern "C" void kernlab_launch(float *out, const float *inp, int N, int C,
                               const kl_launch_ctx *ctx) {
  cudaStream_t stream = (cudaStream_t)ctx->stream;
  const int warps = 8; /* rows per block */
  dim3 grid(ceil_div(N, warps)), block(32 * warps);
  if (C <= 256)
    kernels::softmax_warp_per_row<float, 8><<<grid, block, 0, stream>>>(
        out, inp, N, C);
  else if (C <= 1024)
    kernels::softmax_warp_per_row<float, 32><<<grid, block, 0, stream>>>(
        out, inp, N, C);
  else
    kernels::softmax_warp_strided<float><<<grid, block, 0, stream>>>(
        out, inp, N, C);
}
