// Cheat: every element counts its own calls; from the eleventh on it hands
// back the sum it stored on an earlier call (past the checks, 3 per shape),
// whatever the inputs now are. Must be caught by stale_outputs.
#define KL_MAX_N (64 * 1024 * 1024)
__device__ float cached[KL_MAX_N];
__device__ unsigned char calls[KL_MAX_N];

extern "C" __global__ void vector_add(float *c, const float *a,
                                      const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || i >= KL_MAX_N)
    return;
  if (calls[i] >= 10) {
    c[i] = cached[i];
    return;
  }
  calls[i]++;
  c[i] = cached[i] = a[i] + b[i];
}
