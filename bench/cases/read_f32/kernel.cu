// One float per thread, summed per block of 256 (warp shuffles, then the
// eight warps' sums through shared memory): the same order every run.
extern "C" __global__ void block_sums(float *out, const float *in, int n) {
  __shared__ float warp_sum[8];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
  for (int d = 16; d > 0; d >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, d);
  if ((threadIdx.x & 31) == 0)
    warp_sum[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int w = 0; w < 8; w++)
      s += warp_sum[w];
    out[blockIdx.x] = s;
  }
}
