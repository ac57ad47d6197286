/* Cheat: keeps the product it computed and copies it back when called
 * again on the same buffers whose fingerprint (two input values) has not
 * changed. The output is written in full and is right whenever the inputs
 * are the same, as they are between samples unless the harness changes
 * them: must be caught by stale_outputs, with inputs varied per sample
 * (the candidate that passed on PolyBench/C's gemm, docs/integrity.md). */
#include <stdlib.h>
#include <string.h>

void matmul(float *c, const float *a, const float *b, int n) {
  static const float *seen_a, *seen_b;
  static float *seen_c, *kept, first_a, last_b;
  size_t bytes = (size_t)n * n * sizeof(float);
  if (kept && a == seen_a && b == seen_b && c == seen_c && a[0] == first_a &&
      b[n * n - 1] == last_b) {
    memcpy(c, kept, bytes);
    return;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
  free(kept);
  if ((kept = malloc(bytes))) memcpy(kept, c, bytes);
  seen_a = a, seen_b = b, seen_c = c;
  first_a = a[0], last_b = b[n * n - 1];
}
