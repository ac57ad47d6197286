// The baseline kernel of {{name}}: one element per thread.
extern "C" __global__ void scale(float *y, const float *x, float alpha,
                                 int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = alpha * x[i];
}
