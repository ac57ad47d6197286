/* Leaves the last row of c unwritten (an off-by-one in the outer loop). */
void matmul(float *c, const float *a, const float *b, int n) {
  for (int i = 0; i < n - 1; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
}
