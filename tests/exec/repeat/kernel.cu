// y[i] = x[i] after REPEAT * 512 dependent steps of acc = acc/2 + x/2,
// exact for the inputs' range: a kernel whose time the tunable sets.
#ifndef REPEAT
#define REPEAT 4
#endif
extern "C" __global__ void repeat(float *y, const float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float v = x[i], acc = v;
  for (int r = 0; r < REPEAT * 512; r++)
    acc = acc * 0.5f + v * 0.5f;
  y[i] = acc;
}
