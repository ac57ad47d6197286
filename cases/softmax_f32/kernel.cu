// Baseline: one thread per row, online softmax (running max and rescaled
// sum in one pass), then a second pass that writes the outputs.
extern "C" __global__ void softmax(float *out, const float *x, int rows,
                                   int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  const float *xr = x + (size_t)r * cols;
  float m = -INFINITY, s = 0.0f;
  for (int c = 0; c < cols; c++) {
    float v = xr[c];
    float m2 = fmaxf(m, v);
    s = s * __expf(m - m2) + __expf(v - m2);
    m = m2;
  }
  float inv = 1.0f / s;
  float *outr = out + (size_t)r * cols;
  for (int c = 0; c < cols; c++)
    outr[c] = __expf(xr[c] - m) * inv;
}
