// The copy, made about 1% slower at the 20 us size: the last block to be
// scheduled waits 330 ns (measured on the global timer) before it ends, so
// the kernel ends that much later. Used to test that a real 1% change is
// detected.
extern "C" __global__ void copy(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) {
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    } while (t1 - t0 < 330);
  }
}
