// Right without the workspace: never touches tmp.
extern "C" __global__ void twice_plus_one(float *y, float *tmp, const float *x,
                                          int n) {
  (void)tmp;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
