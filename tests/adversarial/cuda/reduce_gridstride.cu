// The baseline of the CUDA suite's reduction (reduce_sum_f32 with a fixed
// grid of 528 blocks, 4 per H200 SM): each thread strides over x, a block
// reduces in shared memory, one atomic per block. A fixed grid keeps the
// launch cheap, so a kernel that skips reading x can beat DRAM.
extern "C" __global__ void reduce_sum(double *out, const float *x, int n) {
  __shared__ double part[256];
  double s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x)
    s += x[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w)
      part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    atomicAdd(out, part[0]);
}
