// The baseline: every output written from x, acc moved by one.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void spread(const float *x, float *y, __half *h,
                                  __nv_bfloat16 *b, int *k, float *acc,
                                  int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  y[i] = 2.0f * x[i];
  h[i] = __float2half_rn(x[i]);
  b[i] = __float2bfloat16_rn(x[i]);
  k[i] = (int)floorf(100.0f * x[i]);
  acc[i] = acc[i] + 1.0f;
}
