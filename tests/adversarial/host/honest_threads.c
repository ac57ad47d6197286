/* Honest: four threads, each a quarter of the rows, all joined before it
 * returns (the time includes them). Must never be flagged. */
#include <pthread.h>

struct part { float *c; const float *a, *b; int n, from, to; };

static void *rows(void *p) {
  struct part *q = p;
  int n = q->n;
  for (int i = q->from; i < q->to; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += q->a[i * n + k] * q->b[k * n + j];
      q->c[i * n + j] = acc;
    }
  return NULL;
}

void matmul(float *c, const float *a, const float *b, int n) {
  struct part parts[4];
  pthread_t t[4];
  int started[4] = {0};
  for (int p = 0; p < 4; p++) {
    parts[p] = (struct part){c, a, b, n, n * p / 4, n * (p + 1) / 4};
    started[p] = pthread_create(&t[p], NULL, rows, &parts[p]) == 0;
    if (!started[p])
      rows(&parts[p]);
  }
  for (int p = 0; p < 4; p++)
    if (started[p])
      pthread_join(t[p], NULL);
}
