/* Cheat: hands the product to a detached thread and returns at once, so
 * the timer sees a return, not the work. Must be caught by
 * work_after_return (outputs still changing, a thread still running). */
#include <pthread.h>

struct job { float *c; const float *a, *b; int n; };

static void *work(void *p) {
  struct job *j = p;
  int n = j->n;
  for (int i = 0; i < n; i++)
    for (int jj = 0; jj < n; jj++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += j->a[i * n + k] * j->b[k * n + jj];
      j->c[i * n + jj] = acc;
    }
  return NULL;
}

void matmul(float *c, const float *a, const float *b, int n) {
  static struct job job;
  pthread_t t;
  job = (struct job){c, a, b, n};
  if (pthread_create(&t, NULL, work, &job) == 0)
    pthread_detach(t);
}
