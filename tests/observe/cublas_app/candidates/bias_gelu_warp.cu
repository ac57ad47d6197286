// The same kernel at the same launch (one thread per row, 128 a block):
// each warp takes its 32 rows one after the other, its lanes across the
// columns, so every load and store is coalesced.
#include <math.h>

__device__ float gelu(float v) {
  return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}

__global__ void bias_gelu_rows(float *out, const float *x, const float *bias,
                               int rows, int cols) {
  int first = (blockIdx.x * blockDim.x + threadIdx.x) & ~31;
  int lane = threadIdx.x & 31;
  for (int r = first; r < first + 32 && r < rows; r++)
    for (int c = lane; c < cols; c += 32)
      out[(size_t)r * cols + c] = gelu(x[(size_t)r * cols + c] + bias[c]);
}
