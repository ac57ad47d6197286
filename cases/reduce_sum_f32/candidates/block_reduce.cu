// Sum in registers: each warp reduces its 32 values with shuffles, the
// block's 8 warp sums meet in shared memory, and one atomic per block adds
// the block's sum to out[0].
extern "C" __global__ void reduce_sum(double *out, const float *x, int n) {
  __shared__ double warp_sums[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double v = i < n ? (double)x[i] : 0.0;
  for (int off = 16; off > 0; off >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, off);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : 0.0;
    for (int off = 16; off > 0; off >>= 1)
      v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0)
      atomicAdd(out, v);
  }
}
