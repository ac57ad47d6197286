/* The local executor: one thread per device, each taking the next
 * evaluation of the batch and running it in its own worker on its own GPU
 * (kl_bench_compare or kl_bench_run with that device). A
 * comparison's two sides always share one worker, so one decision is
 * always measured on one GPU. A batch folder's evaluations (kl evaluate)
 * come built and only execute. Threads share nothing but the batch's next
 * index; the compile cache takes concurrent writers (temporary names are
 * per thread). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec_internal.h"

typedef struct local_batch {
  kl_executor *ex;
  const kl_case *c;
  kl__eval *ev;
  size_t n, next;
  pthread_mutex_t lock;
  kl__eval_done_fn done;
  void *payload;
} local_batch;

typedef struct local_slot {
  local_batch *b;
  int device;
} local_slot;

/* Where an evaluation ran, as the records show it. */
static int where_local(kl__eval *e, int device, double started) {
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  kl_buf b = KL_BUF_INIT;
  int rc = kl__buf_puts(&b, "{\"executor\":\"local\",\"host\":");
  rc |= kl__buf_json_string(&b, host);
  kl_device_info dev;
  if (e->report && kl_report_device(&dev, e->report) == 0) {
    rc |= kl__buf_printf(&b, ",\"device\":%d,\"gpu\":", device < 0 ? 0
                                                                   : device);
    rc |= kl__buf_json_string(&b, dev.name);
  } else {
    rc |= kl__buf_puts(&b, ",\"device\":null,\"gpu\":null");
  }
  rc |= kl__buf_printf(&b, ",\"started\":%.3f,\"seconds\":%.3f}", started,
                       e->seconds);
  kl__free(e->where);
  if (rc < 0 || !(e->where = kl__buf_detach(&b))) {
    kl_buf_dispose(&b);
    return kl__error_oom();
  }
  return 0;
}

static void evaluate_one(kl__eval *e, const kl_case *c, int device,
                         const char *worker_path) {
  double t0 = kl__now_ms();
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  kl_bench_options o = e->o;
  o.device = device;
  if (!o.worker_path)
    o.worker_path = worker_path;
  int rc = e->prebuilt ? kl__bench_execute(&e->report, c, &o, e->compare,
                                           &e->plugins)
           : e->compare ? kl_bench_compare(&e->report, c, &o)
                        : kl_bench_run(&e->report, c, &o);
  e->seconds = (kl__now_ms() - t0) / 1000.0;
  if (rc == 0)
    rc = where_local(e, device, wall.tv_sec + wall.tv_nsec / 1e9);
  if (rc < 0)
    kl__eval_failed(e, rc);
}

static void *slot_main(void *arg) {
  local_slot *s = arg;
  local_batch *b = s->b;
  for (;;) {
    pthread_mutex_lock(&b->lock);
    size_t i = b->next < b->n ? b->next++ : b->n;
    pthread_mutex_unlock(&b->lock);
    if (i >= b->n)
      break;
    evaluate_one(&b->ev[i], b->c, s->device, b->ex->worker_path);
    if (b->done)
      b->done(&b->ev[i], b->payload);
  }
  return NULL;
}

int kl__local_evaluate(kl_executor *ex, const kl_case *c, kl__eval *ev,
                       size_t n, kl__eval_done_fn done, void *payload) {
  local_batch b = {ex, c, ev, n, 0, PTHREAD_MUTEX_INITIALIZER, done, payload};
  size_t nslots = ex->ndevices ? ex->ndevices : 1;
  if (nslots > n)
    nslots = n;
  bool cuda = c->backend == KL_BACKEND_CUDA;
  if (nslots <= 1) { /* no thread for one slot */
    local_slot s = {&b, cuda && ex->ndevices ? ex->devices[0] : -1};
    slot_main(&s);
    return 0;
  }
  local_slot *slots = kl__calloc(nslots, sizeof(*slots));
  pthread_t *threads = kl__calloc(nslots, sizeof(*threads));
  if (!slots || !threads) {
    kl__free(slots);
    kl__free(threads);
    return kl__error_oom();
  }
  size_t started = 0;
  for (size_t i = 0; i < nslots; i++) {
    slots[i].b = &b;
    slots[i].device = cuda ? ex->devices[i] : -1;
    if (pthread_create(&threads[i], NULL, slot_main, &slots[i]) != 0)
      break;
    started++;
  }
  if (started == 0) /* no thread at all: evaluate here */
    slot_main(&slots[0]);
  for (size_t i = 0; i < started; i++)
    pthread_join(threads[i], NULL);
  kl__free(slots);
  kl__free(threads);
  return 0;
}
