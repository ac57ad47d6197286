/* A cheat: correct for its first six calls (enough for the checks), then
 * it hands back the last product it computed, whatever the inputs. Timing
 * sees a memcpy; the stale_outputs gate must see stale outputs. */
#include <stdlib.h>
#include <string.h>

void matmul(float *c, const float *a, const float *b, int n) {
  static float *cache;
  static int calls;
  size_t bytes = (size_t)n * n * sizeof(float);
  if (++calls > 6 && cache) {
    memcpy(c, cache, bytes);
    return;
  }
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++)
      c[i * n + j] = 0.0f;
    for (int k = 0; k < n; k++)
      for (int j = 0; j < n; j++)
        c[i * n + j] += a[i * n + k] * b[k * n + j];
  }
  free(cache);
  if ((cache = malloc(bytes)))
    memcpy(cache, c, bytes);
}
