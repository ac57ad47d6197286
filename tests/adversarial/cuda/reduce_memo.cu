// Cheat: a reduction that remembers its answer by a fingerprint (first and
// last element) and, when the inputs look the same, writes it back from one
// thread without reading x. New inputs are summed (slowly, by one block)
// and remembered. Every answer is right for its inputs; reading nothing is
// faster than DRAM allows: must be caught by beyond_roofline.
__device__ float fp_first, fp_last;
__device__ double answer;
__device__ int have;

extern "C" __global__ void reduce_sum(double *out, const float *x, int n) {
  bool same = have && x[0] == fp_first && x[n - 1] == fp_last;
  if (same) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
      *out += answer;
    return;
  }
  if (blockIdx.x != 0)
    return;
  __shared__ double part[256];
  double s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    s += x[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w)
      part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    answer = part[0];
    *out += part[0];
    fp_first = x[0];
    fp_last = x[n - 1];
    have = 1;
  }
}
