/* Cheat: a correct product, but it uses b as scratch (zeroes its last
 * element). Must be caught as an input written. */
void matmul(float *c, const float *a, const float *b, int n) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
  ((float *)b)[n * n - 1] = 0.0f;
}
