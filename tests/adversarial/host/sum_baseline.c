/* The baseline of the test's host_sum case: one float, the sum of n. */
void sum(float *out, const float *x, int n) {
  double acc = 0.0;
  for (int i = 0; i < n; i++)
    acc += x[i];
  out[0] = (float)acc;
}
