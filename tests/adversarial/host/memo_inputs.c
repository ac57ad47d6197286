/* Cheat: fingerprints its inputs from a few elements and, when they match
 * the last call's, returns without touching the output (which held the
 * right answer last time). Must be caught by stale_outputs: outputs are
 * re-poisoned before every sample. */
#include <string.h>

void matmul(float *c, const float *a, const float *b, int n) {
  static float seen[4];
  static const float *last_c;
  float now[4] = {a[0], a[n * n - 1], b[0], b[n * n / 2]};
  if (last_c == c && memcmp(now, seen, sizeof(now)) == 0)
    return;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
  memcpy(seen, now, sizeof(now));
  last_c = c;
}
