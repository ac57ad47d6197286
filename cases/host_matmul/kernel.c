/* Baseline: the naive i-j-k triple loop, which walks b down its columns.
 * Tunables: BLOCK (0 = none, else the tile edge) and LOOP_ORDER (0 = i-j-k,
 * 1 = i-k-j). */
#ifndef BLOCK
#define BLOCK 0
#endif
#ifndef LOOP_ORDER
#define LOOP_ORDER 0
#endif

void matmul(float *c, const float *a, const float *b, int n) {
#if BLOCK == 0 && LOOP_ORDER == 0
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
#elif BLOCK == 0
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++)
      c[i * n + j] = 0.0f;
    for (int k = 0; k < n; k++) {
      float aik = a[i * n + k];
      for (int j = 0; j < n; j++)
        c[i * n + j] += aik * b[k * n + j];
    }
  }
#else
  for (int i = 0; i < n * n; i++)
    c[i] = 0.0f;
  for (int ii = 0; ii < n; ii += BLOCK)
    for (int kk = 0; kk < n; kk += BLOCK)
      for (int jj = 0; jj < n; jj += BLOCK) {
        int ie = ii + BLOCK < n ? ii + BLOCK : n;
        int ke = kk + BLOCK < n ? kk + BLOCK : n;
        int je = jj + BLOCK < n ? jj + BLOCK : n;
#if LOOP_ORDER == 0
        for (int i = ii; i < ie; i++)
          for (int j = jj; j < je; j++) {
            float acc = c[i * n + j];
            for (int k = kk; k < ke; k++)
              acc += a[i * n + k] * b[k * n + j];
            c[i * n + j] = acc;
          }
#else
        for (int i = ii; i < ie; i++)
          for (int k = kk; k < ke; k++) {
            float aik = a[i * n + k];
            for (int j = jj; j < je; j++)
              c[i * n + j] += aik * b[k * n + j];
          }
#endif
      }
#endif
}
