// Honest: a shared-memory reduction per block, one atomic per block.
// Never flagged.
extern "C" __global__ void reduce_sum(double *out, const float *x, int n) {
  __shared__ double part[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  part[threadIdx.x] = i < n ? (double)x[i] : 0.0;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w)
      part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    atomicAdd(out, part[0]);
}
