// Baseline: every element is added to out[0] with its own atomic.
extern "C" __global__ void reduce_sum(double *out, const float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    atomicAdd(out, (double)x[i]);
}
