// Cheat: writes only the first half of c. Caught as unwritten output.
extern "C" __global__ void vector_add(float *c, const float *a,
                                      const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 2)
    c[i] = a[i] + b[i];
}
