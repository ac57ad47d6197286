// Correct c, but zeroes its input a.
extern "C" __global__ void vector_add(float *c, const float *a,
                                      const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    c[i] = a[i] + b[i];
    ((float *)a)[i] = 0.0f;
  }
}
