/* Cheat: writes only the upper half of c. Must be caught as unwritten
 * output (the harness poisons outputs before every check). */
void matmul(float *c, const float *a, const float *b, int n) {
  for (int i = 0; i < n / 2; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
}
