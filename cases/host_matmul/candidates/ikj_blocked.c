/* A faster matmul: i-k-j order inside 64x64 tiles, so the inner loop walks
 * b and c by rows (unit stride, vectorisable) and the tiles stay in cache. */
#define TILE 64

void matmul(float *c, const float *a, const float *b, int n) {
  for (int i = 0; i < n * n; i++)
    c[i] = 0.0f;
  for (int ii = 0; ii < n; ii += TILE)
    for (int kk = 0; kk < n; kk += TILE)
      for (int jj = 0; jj < n; jj += TILE) {
        int ie = ii + TILE < n ? ii + TILE : n;
        int ke = kk + TILE < n ? kk + TILE : n;
        int je = jj + TILE < n ? jj + TILE : n;
        for (int i = ii; i < ie; i++)
          for (int k = kk; k < ke; k++) {
            float aik = a[i * n + k];
            float *crow = c + i * n;
            const float *brow = b + k * n;
            for (int j = jj; j < je; j++)
              crow[j] += aik * brow[j];
          }
      }
}
