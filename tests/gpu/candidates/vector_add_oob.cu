// Writes far past the end of c: an illegal address.
extern "C" __global__ void vector_add(float *c, const float *a,
                                      const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i + (size_t)1 << 36] = a[i] + b[i];
}
