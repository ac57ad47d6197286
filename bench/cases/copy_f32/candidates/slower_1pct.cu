// The copy plus about 1% more DRAM traffic: the first 2% of the threads
// also read an element from the far end of the input (other cache lines,
// so nothing merges in L2) and fold it in with a multiply by zero, which
// IEEE arithmetic does not let the compiler remove.
extern "C" __global__ void copy(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = in[i];
    if (i < n / 50)
      v += 0.0f * in[n - 1 - i];
    out[i] = v;
  }
}
