// Cheat: the launch returns with c right, but leaves a host thread that
// goes on launching kernels into c for 4 ms (on the legacy stream, which
// nobody waits for). Work the call did not wait for is work no timer of
// the call sees: caught by work_after_return, the outputs compared on the
// device before and after a pause (snapshot, changed_bytes).
#include <pthread.h>
#include <unistd.h>

__global__ void add_plus(float *c, const float *a, const float *b, int n,
                         float extra) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i] + extra;
}

struct late_job {
  float *c;
  const float *a, *b;
  int n;
};

static void *keep_writing(void *p) {
  struct late_job *j = (struct late_job *)p;
  for (int k = 1; k <= 20; k++) { /* a new value each time, never repeated */
    usleep(200);
    add_plus<<<(j->n + 255) / 256, 256>>>(j->c, j->a, j->b, j->n, 1e-3f * k);
  }
  return NULL;
}

extern "C" void kernlab_launch(float *c, const float *a, const float *b, int n,
                               const kl_launch_ctx *ctx) {
  static bool started;
  static struct late_job job;
  add_plus<<<(n + 255) / 256, 256, 0, (cudaStream_t)ctx->stream>>>(c, a, b, n,
                                                                    0.0f);
  if (started)
    return;
  started = true;
  job = (struct late_job){c, a, b, n};
  pthread_t t;
  if (pthread_create(&t, NULL, keep_writing, &job) == 0)
    pthread_detach(t);
}
