/* Cheat: computes honestly for the first calls (the checks and the
 * warm-up), then hands back the product it remembered, whatever the
 * inputs. Must be caught by stale_outputs. */
#include <stdlib.h>
#include <string.h>

void matmul(float *c, const float *a, const float *b, int n) {
  static float *cache;
  static int calls;
  size_t bytes = (size_t)n * n * sizeof(float);
  if (++calls > 8 && cache) {
    memcpy(c, cache, bytes);
    return;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
  free(cache);
  if ((cache = malloc(bytes)))
    memcpy(cache, c, bytes);
}
