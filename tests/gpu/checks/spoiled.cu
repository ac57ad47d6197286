// The baseline with defects at fixed indices, whatever the inputs
// (test_device_checks.c counts them): y left unwritten at n-1, NaN where
// i % 997 == 5, off by one where i % 1000 == 17 and by 1e-4 (within the
// tolerance) where i % 400 == 11; h infinite where i % 500 == 3; b off by
// 0.5 where i % 300 == 7; k unwritten at 0 and off by one where
// i % 777 == 1; acc not moved where i % 611 == 9.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void spread(const float *x, float *y, __half *h,
                                  __nv_bfloat16 *b, int *k, float *acc,
                                  int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  if (i == n - 1) {
  } else if (i % 997 == 5) {
    y[i] = __int_as_float(0x7fc00000); /* a quiet NaN, not the poison */
  } else if (i % 1000 == 17) {
    y[i] = 2.0f * x[i] + 1.0f;
  } else if (i % 400 == 11) {
    y[i] = 2.0f * x[i] + 1e-4f;
  } else {
    y[i] = 2.0f * x[i];
  }
  h[i] = i % 500 == 3 ? __ushort_as_half(0x7c00) : __float2half_rn(x[i]);
  b[i] = __float2bfloat16_rn(i % 300 == 7 ? x[i] + 0.5f : x[i]);
  int kk = (int)floorf(100.0f * x[i]);
  if (i != 0)
    k[i] = i % 777 == 1 ? kk + 1 : kk;
  if (i % 611 != 9)
    acc[i] = acc[i] + 1.0f;
}
