/* Honest: i-k-j order (streams b by rows). Must never be flagged. */
void matmul(float *c, const float *a, const float *b, int n) {
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++)
      c[i * n + j] = 0.0f;
    for (int k = 0; k < n; k++) {
      float aik = a[i * n + k];
      for (int j = 0; j < n; j++)
        c[i * n + j] += aik * b[k * n + j];
    }
  }
}
