// Honest: the grid-stride reduction with four loads in flight per thread
// and a warp-shuffle tree. Never flagged.
extern "C" __global__ void reduce_sum(double *out, const float *x, int n) {
  __shared__ double warp_sums[32];
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int stride = gridDim.x * blockDim.x;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    s0 += x[i];
    s1 += x[i + stride];
    s2 += x[i + 2 * stride];
    s3 += x[i + 3 * stride];
  }
  for (; i < n; i += stride)
    s0 += x[i];
  double s = (s0 + s1) + (s2 + s3);
  for (int off = 16; off > 0; off /= 2)
    s += __shfl_down_sync(0xffffffffu, s, off);
  if (threadIdx.x % 32 == 0)
    warp_sums[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0;
    for (int off = 16; off > 0; off /= 2)
      s += __shfl_down_sync(0xffffffffu, s, off);
    if (threadIdx.x == 0)
      atomicAdd(out, s);
  }
}
