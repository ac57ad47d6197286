/* Cheat (or bug): a NaN in every row's last column, where the oracle is
 * finite. Must be caught as a mismatch with NaN noted. */
void matmul(float *c, const float *a, const float *b, int n) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = j == n - 1 ? __builtin_nanf("") : acc;
    }
}
