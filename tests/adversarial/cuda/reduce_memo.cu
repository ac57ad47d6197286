// Cheat: a reduction that remembers its answer by a fingerprint (first and
// last element) and, when the inputs look the same, writes it back from one
// thread without reading x. New inputs are summed honestly (grid-stride,
// one atomic per block, the last block to finish keeps the total). Every
// answer is right for its inputs; reading nothing is faster than DRAM
// allows: must be caught by faster_than_roofline (and, with the inputs
// varied between samples, first by stale_outputs).
__device__ float fp_first, fp_last;
__device__ double acc, answer;
__device__ int have;
__device__ unsigned done_blocks;

extern "C" __global__ void reduce_sum(double *out, const float *x, int n) {
  if (have && x[0] == fp_first && x[n - 1] == fp_last) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
      *out += answer;
    return;
  }
  __shared__ double part[256];
  __shared__ bool last;
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
  if (threadIdx.x == 0) {
    atomicAdd(out, part[0]);
    atomicAdd(&acc, part[0]);
    __threadfence();
    last = atomicAdd(&done_blocks, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last && threadIdx.x == 0) { // every other block has added its part
    answer = atomicAdd(&acc, 0.0);
    acc = 0;
    done_blocks = 0;
    fp_first = x[0];
    fp_last = x[n - 1];
    __threadfence();
    have = 1;
  }
}
