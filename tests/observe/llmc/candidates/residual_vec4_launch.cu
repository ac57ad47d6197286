// The residual kernel with 16-byte loads and stores: a thread does four
// elements, so the launcher sizes the grid for N/4 threads (a tail kernel
// would take N % 4; the program's N is a multiple of 4, and the launcher
// falls back to the scalar loop for the rest).
#include "common.h"

struct ResidualParams {
  floatX *out;
  int N;
  const floatX *inp1;
  const floatX *inp2;
  float scale;
};

__global__ void residual_forward_kernel1(ResidualParams p) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < p.N)
    p.out[idx] = (floatX)(p.scale * (float)p.inp1[idx] + (float)p.inp2[idx]);
}

__global__ void residual_vec4(ResidualParams p, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n4)
    return;
  float4 a = reinterpret_cast<const float4 *>(p.inp1)[i];
  float4 b = reinterpret_cast<const float4 *>(p.inp2)[i];
  float4 o;
  o.x = p.scale * a.x + b.x;
  o.y = p.scale * a.y + b.y;
  o.z = p.scale * a.z + b.z;
  o.w = p.scale * a.w + b.w;
  reinterpret_cast<float4 *>(p.out)[i] = o;
}

__global__ void residual_tail(ResidualParams p, int from) {
  int idx = from + blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < p.N)
    p.out[idx] = p.scale * p.inp1[idx] + p.inp2[idx];
}

extern "C" void kernlab_launch(ResidualParams p, const kl_launch_ctx *ctx) {
  cudaStream_t st = (cudaStream_t)ctx->stream;
  int n4 = p.N / 4, block = 256;
  if (n4 > 0)
    residual_vec4<<<(n4 + block - 1) / block, block, 0, st>>>(p, n4);
  if (p.N % 4)
    residual_tail<<<1, 4, 0, st>>>(p, 4 * n4);
}
