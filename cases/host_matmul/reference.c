/* Oracle: the same product accumulated in double precision. */
void matmul_ref(float *c, const float *a, const float *b, int n) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double acc = 0.0;
      for (int k = 0; k < n; k++)
        acc += (double)a[i * n + k] * (double)b[k * n + j];
      c[i * n + j] = (float)acc;
    }
}
