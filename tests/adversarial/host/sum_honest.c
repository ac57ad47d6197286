/* Honest: four double accumulators (the loads overlap). Never flagged. */
void sum(float *out, const float *x, int n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += x[i];
    s1 += x[i + 1];
    s2 += x[i + 2];
    s3 += x[i + 3];
  }
  for (; i < n; i++)
    s0 += x[i];
  out[0] = (float)((s0 + s1) + (s2 + s3));
}
