/* The same loop split over threads, with its own launch: the launcher
 * (kernlab/plugin.h) starts up to ctx->host_threads - 1 threads (at most 7)
 * over equal slices, does the last slice itself and joins them all before
 * it returns, as the launch contract asks. */
#include <pthread.h>

#define MAX_THREADS 8

typedef struct slice {
  float *y;
  const float *x;
  float a;
  int begin, end;
} slice;

static void *saxpy_slice(void *arg) {
  slice *s = arg;
  for (int i = s->begin; i < s->end; i++)
    s->y[i] = s->a * s->x[i] + s->y[i];
  return NULL;
}

void kernlab_launch(float *y, const float *x, float a, int n,
                    const kl_launch_ctx *ctx) {
  int t = ctx->host_threads < MAX_THREADS ? ctx->host_threads : MAX_THREADS;
  if (t < 1)
    t = 1;
  slice s[MAX_THREADS];
  pthread_t id[MAX_THREADS];
  int started[MAX_THREADS] = {0};
  for (int k = 0; k < t; k++) {
    s[k] = (slice){y, x, a, (int)((long long)n * k / t),
                   (int)((long long)n * (k + 1) / t)};
    if (k + 1 < t)
      started[k] = pthread_create(&id[k], NULL, saxpy_slice, &s[k]) == 0;
  }
  for (int k = 0; k + 1 < t; k++)
    if (!started[k])
      saxpy_slice(&s[k]); /* no thread: do it here */
  saxpy_slice(&s[t - 1]);
  for (int k = 0; k + 1 < t; k++)
    if (started[k])
      pthread_join(id[k], NULL);
}
