/* Baseline: a plain loop. UNROLL (a tunable) unrolls it by hand. */
#ifndef UNROLL
#define UNROLL 1
#endif

void saxpy(float *y, const float *x, float a, int n) {
  int i = 0;
#if UNROLL > 1
  for (; i + UNROLL <= n; i += UNROLL)
    for (int u = 0; u < UNROLL; u++)
      y[i + u] = a * x[i + u] + y[i + u];
#endif
  for (; i < n; i++)
    y[i] = a * x[i] + y[i];
}
