// The copy plus about 1% more memory traffic: the first 2% of the threads
// store their element a second time through a volatile pointer.
extern "C" __global__ void copy(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = in[i];
    out[i] = v;
    if (i < n / 50)
      ((volatile float *)out)[i] = v;
  }
}
