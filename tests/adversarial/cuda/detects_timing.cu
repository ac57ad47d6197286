// Cheat: notices it is being timed (the same inputs as on its last call, as
// in a sampling loop; the checks use fresh seeds) and then writes only one
// element in eight, trusting the rest to still hold last time's sums. Must
// be caught by stale_outputs: outputs are re-poisoned before every sample.
#define KL_MAX_N (64 * 1024 * 1024)
__device__ float last_a[KL_MAX_N], last_b[KL_MAX_N];

extern "C" __global__ void vector_add(float *c, const float *a,
                                      const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || i >= KL_MAX_N)
    return;
  float x = a[i], y = b[i];
  bool timed = last_a[i] == x && last_b[i] == y;
  last_a[i] = x;
  last_b[i] = y;
  if (timed && i % 8 != 0)
    return;
  c[i] = x + y;
}
