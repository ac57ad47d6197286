// Cheat (or bug): NaN in every 1024th element. Caught, NaN named.
extern "C" __global__ void vector_add(float *c, const float *a,
                                      const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = i % 1024 == 7 ? __int_as_float(0x7fc00000) : a[i] + b[i];
}
