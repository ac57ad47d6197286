// Baseline: one thread per element of c, reading a row of a and a column
// of b from global memory. BLOCK (a tunable) is the block edge.
#ifndef BLOCK
#define BLOCK 16
#endif

extern "C" __global__ void gemm(float *c, const float *a, const float *b,
                                int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n)
    return;
  float acc = 0.0f;
  for (int i = 0; i < k; i++)
    acc += a[(size_t)row * k + i] * b[(size_t)i * n + col];
  c[(size_t)row * n + col] = acc;
}
