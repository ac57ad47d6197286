/* Oracle: the same product accumulated in double precision, in i-k-j order
 * (rows of b stream through the cache, so checking n = 1024 takes well
 * under a second instead of the naive order's tens of seconds). */
#include <stdlib.h>

void matmul_ref(float *c, const float *a, const float *b, int n) {
  double *row = malloc((size_t)n * sizeof(*row));
  if (!row)
    abort();
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++)
      row[j] = 0.0;
    for (int k = 0; k < n; k++) {
      double aik = a[i * n + k];
      const float *brow = b + (size_t)k * n;
      for (int j = 0; j < n; j++)
        row[j] += aik * (double)brow[j];
    }
    for (int j = 0; j < n; j++)
      c[i * n + j] = (float)row[j];
  }
  free(row);
}
