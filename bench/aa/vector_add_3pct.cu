// vector_add that moves about 2% more bytes than the baseline: the first
// 6% of threads also read a[] half an array away (4 of each element's 12
// bytes), so the result is the baseline's and the time about 3% longer on
// a memory-bound shape (the extra reads are scattered: 9% of threads gave
// x0.953 on an H200). bench/aa.sh uses it to show that a real
// difference of that size is still found by the decision A/A keeps quiet.
extern "C" __global__ void vector_add(float *c, const float *a,
                                      const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = a[i] + b[i];
  if (i < n / 100 * 6) {
    float extra = a[(i + n / 2) % n];
    if (extra == 12345.0f) v = 0.0f; /* inputs are in [-1, 1]: never */
  }
  c[i] = v;
}
