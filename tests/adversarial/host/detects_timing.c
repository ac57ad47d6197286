/* Cheat: notices it is being timed (called again on the inputs it saw last
 * time, as a sampling loop does; the checks use a fresh seed per call) and
 * then recomputes only the first eighth of the rows, trusting the rest to
 * still hold last time's result. Must be caught by stale_outputs: the
 * harness re-poisons outputs before every sample. */
void matmul(float *c, const float *a, const float *b, int n) {
  static float last_a0, last_b0;
  static int seen;
  int rows = seen && a[0] == last_a0 && b[0] == last_b0 ? n / 8 : n;
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
  last_a0 = a[0];
  last_b0 = b[0];
  seen = 1;
}
