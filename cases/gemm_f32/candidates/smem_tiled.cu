// Shared-memory tiling: each block stages BLOCK x BLOCK tiles of a and b,
// so every operand is read from global memory once per tile instead of
// once per output element. Same launch geometry as the baseline.
#ifndef BLOCK
#define BLOCK 16
#endif

extern "C" __global__ void gemm(float *c, const float *a, const float *b,
                                int m, int n, int k) {
  __shared__ float as[BLOCK][BLOCK];
  __shared__ float bs[BLOCK][BLOCK + 1];
  int tx = threadIdx.x, ty = threadIdx.y;
  int col = blockIdx.x * BLOCK + tx;
  int row = blockIdx.y * BLOCK + ty;
  float acc = 0.0f;
  for (int t = 0; t < k; t += BLOCK) {
    as[ty][tx] = row < m && t + tx < k ? a[(size_t)row * k + t + tx] : 0.0f;
    bs[ty][tx] = t + ty < k && col < n ? b[(size_t)(t + ty) * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < BLOCK; i++)
      acc += as[ty][i] * bs[i][tx];
    __syncthreads();
  }
  if (row < m && col < n)
    c[(size_t)row * n + col] = acc;
}
