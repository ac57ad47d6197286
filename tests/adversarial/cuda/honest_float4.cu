// Honest (the GPU bench tests' float4 candidate). Never flagged.
// Four elements per thread with 16-byte loads (n is a multiple of 4 at
// every bundled shape; the tail loop covers the rest). Launched with the
// baseline's grid, so a quarter of the threads do the work: the same bytes,
// fewer instructions.
extern "C" __global__ void vector_add(float *c, const float *a,
                                      const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int n4 = n / 4;
  if (i < n4) {
    float4 x = reinterpret_cast<const float4 *>(a)[i];
    float4 y = reinterpret_cast<const float4 *>(b)[i];
    reinterpret_cast<float4 *>(c)[i] =
        make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  if (i == 0)
    for (int j = n4 * 4; j < n; j++)
      c[j] = a[j] + b[j];
}
