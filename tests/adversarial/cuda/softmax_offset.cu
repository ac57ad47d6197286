// Wrong by a little everywhere: the warp-per-row softmax of
// cases/softmax_f32/candidates/warp_per_row.cu with 1e-6 added to every
// output, so each row sums to 1.001 (cols 1024) or 1.004 (cols 4096). The
// outputs are about 1/cols: an atol of 1e-6 let it through.
extern "C" __global__ void softmax(float *out, const float *x, int rows,
                                   int cols) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int first = blockIdx.x * blockDim.x;
  for (int k = 0; k < 32; k++) {
    int r = first + warp * 32 + k;
    if (r >= rows)
      return;
    const float *xr = x + (size_t)r * cols;
    float m = -INFINITY, s = 0.0f;
    for (int c = lane; c < cols; c += 32) {
      float v = xr[c];
      float m2 = fmaxf(m, v);
      s = s * __expf(m - m2) + __expf(v - m2);
      m = m2;
    }
    for (int off = 16; off > 0; off >>= 1) {
      float mo = __shfl_xor_sync(0xffffffffu, m, off);
      float so = __shfl_xor_sync(0xffffffffu, s, off);
      float m2 = fmaxf(m, mo);
      s = s * __expf(m - m2) + so * __expf(mo - m2);
      m = m2;
    }
    float inv = 1.0f / s;
    float *outr = out + (size_t)r * cols;
    for (int c = lane; c < cols; c += 32)
      outr[c] = __expf(xr[c] - m) * inv + 1e-6f;
  }
}
