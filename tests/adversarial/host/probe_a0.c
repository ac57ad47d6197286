/* Not a candidate: run in the standalone harness, it prints the first
 * input element it is given (the default seed's, at the first shape), so
 * the test can build default_seed_only.c around that value. */
#include <stdio.h>

void matmul(float *c, const float *a, const float *b, int n) {
  static int printed;
  if (!printed++)
    printf("A0 %a\n", (double)a[0]);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
}
