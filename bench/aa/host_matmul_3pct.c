/* host_matmul's baseline (i-j-k) that then computes the first 3% of its
 * rows again, writing the same values: the result is the baseline's and
 * the work 3% more. bench/aa.sh uses it to show that a real difference of
 * that size is still found by the decision A/A keeps quiet. */
static void rows(float *c, const float *a, const float *b, int n, int from,
                 int to) {
  for (int i = from; i < to; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
}

void matmul(float *c, const float *a, const float *b, int n) {
  rows(c, a, b, n, 0, n);
  rows(c, a, b, n, 0, n * 3 / 100);
}
