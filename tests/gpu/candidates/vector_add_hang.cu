// Never finishes: sleeps in a loop whose exit depends on memory nothing
// writes (a loop without side effects could be removed by the compiler).
extern "C" __global__ void vector_add(float *c, const float *a,
                                      const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
  while (*(volatile const int *)b != 0x7ff00001) /* b holds finite floats */
    __nanosleep(1000);
}
