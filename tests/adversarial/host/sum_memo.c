/* Cheat: a reduction that remembers its answer by a fingerprint of four
 * input elements and writes it back without reading the rest: every
 * output it gives is right for its inputs, it just does not read them.
 * Writing one float in place of reading n is faster than memory allows:
 * must be caught by faster_than_roofline (and, with the inputs varied
 * between samples, first by stale_outputs). */
void sum(float *out, const float *x, int n) {
  static float seen[4], answer;
  static int have;
  float now[4] = {x[0], x[n / 3], x[2 * (n / 3)], x[n - 1]};
  if (have && now[0] == seen[0] && now[1] == seen[1] && now[2] == seen[2] &&
      now[3] == seen[3]) {
    out[0] = answer;
    return;
  }
  double acc = 0.0;
  for (int i = 0; i < n; i++)
    acc += x[i];
  answer = out[0] = (float)acc;
  for (int k = 0; k < 4; k++)
    seen[k] = now[k];
  have = 1;
}
