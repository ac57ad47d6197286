/* The local executor: one thread per device, each taking the next
 * evaluation of the batch and running it in a worker on its own GPU
 * (kl_bench_compare's or kl_bench_run's path with that device). A
 * comparison's two sides always share one worker, so one decision is
 * always measured on one GPU. Each slot keeps its worker from one
 * evaluation to the next while they pass (bench_internal.h: the kept
 * worker; ended with the executor), unless fresh_workers asks for one per
 * evaluation. A batch folder's evaluations (kl evaluate) come built and
 * only execute. Threads share nothing but the batch's next index; the
 * compile cache takes concurrent writers (temporary names are per
 * thread). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../worker/client_internal.h"
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
  kl__kept_worker *keep; /* the slot's kept worker; NULL: one each */
} local_slot;

/* Where an evaluation ran, as the records show it. */
static int where_local(kl__eval *e, int device, double started) {
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "{\"executor\":\"local\",\"host\":");
  kl__buf_json_string(&b, host);
  kl_device_info dev = KL_DEVICE_INFO_INIT;
  if (e->report && kl_report_device(&dev, e->report) == 0) {
    kl__buf_printf(&b, ",\"device\":%d,\"gpu\":", device < 0 ? 0 : device);
    kl__buf_json_string(&b, dev.name);
  } else {
    kl__buf_puts(&b, ",\"device\":null,\"gpu\":null");
  }
  kl__buf_printf(&b, ",\"started\":%.3f,\"seconds\":%.3f}", started,
                 e->seconds);
  kl__free(e->where);
  e->where = kl__buf_detach(&b); /* NULL when a write failed */
  return e->where ? 0 : KL_ENOMEM;
}

static void evaluate_one(kl__eval *e, const kl_case *c, int device,
                         const char *worker_path, kl__kept_worker *keep) {
  double t0 = kl__now_ms();
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  kl_bench_options o = e->o;
  o.device = device;
  if (!o.worker_path) o.worker_path = worker_path;
  int rc = e->prebuilt ? kl__bench_execute(&e->report, c, &o, e->compare,
                                           &e->plugins, keep)
                       : kl__bench_in(&e->report, c, &o, e->compare, keep);
  e->seconds = (kl__now_ms() - t0) / 1000.0;
  if (rc == 0) rc = where_local(e, device, wall.tv_sec + wall.tv_nsec / 1e9);
  if (rc < 0) kl__eval_failed(e, rc);
}

static void *slot_main(void *arg) {
  local_slot *s = arg;
  local_batch *b = s->b;
  for (;;) {
    pthread_mutex_lock(&b->lock);
    size_t i = b->next < b->n ? b->next++ : b->n;
    pthread_mutex_unlock(&b->lock);
    if (i >= b->n) break;
    evaluate_one(&b->ev[i], b->c, s->device, b->ex->worker_path, s->keep);
    if (b->done) b->done(&b->ev[i], b->payload);
  }
  return NULL;
}

int kl__local_evaluate(kl_executor *ex, const kl_case *c, kl__eval *ev,
                       size_t n, kl__eval_done_fn done, void *payload) {
  local_batch b = {ex, c, ev, n, 0, PTHREAD_MUTEX_INITIALIZER, done, payload};
  size_t nall = ex->ndevices ? ex->ndevices : 1; /* slot i: devices[i] */
  size_t nslots = nall < n ? nall : n;
  bool cuda = kl_case_on_gpu(c);
  if (!ex->fresh_workers && !ex->kept) {
    if (!(ex->kept = kl__calloc(nall, sizeof(*ex->kept))))
      return kl__error_oom();
    ex->nkept = nall;
  }
  if (nslots <= 1) { /* no thread for one slot */
    local_slot s = {&b, cuda && ex->ndevices ? ex->devices[0] : -1, ex->kept};
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
    slots[i].keep = ex->kept && i < ex->nkept ? &ex->kept[i] : NULL;
    if (pthread_create(&threads[i], NULL, slot_main, &slots[i]) != 0) break;
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

/* "0,2,3" into ex->devices. */
int kl__local_parse_devices(kl_executor *ex, const char *list,
                            const char *where) {
  size_t n = 1;
  for (const char *p = list; *p; p++)
    n += *p == ',';
  int *d = kl__calloc(n, sizeof(int));
  if (!d) return kl__error_oom();
  const char *p = list;
  for (size_t i = 0; i < n; i++) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 0 || v > 4095 || (*end && *end != ',')) {
      kl__free(d);
      return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                       "%s: devices are GPU indices separated by commas "
                       "(0,1,3), not '%s'",
                       where, list);
    }
    for (size_t k = 0; k < i; k++)
      if (d[k] == (int)v) {
        kl__free(d);
        return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                         "%s: device %ld is listed twice", where, v);
      }
    d[i] = (int)v;
    p = *end ? end + 1 : end;
  }
  kl__free(ex->devices);
  ex->devices = d;
  ex->ndevices = n;
  ex->devices_known = true;
  return 0;
}

/* The devices to run on, found when none were listed: every visible GPU
 * (a worker counts them); one slot for host cases. */
static int local_devices(kl_executor *ex, const kl_case *c) {
  if (ex->kind != EXEC_LOCAL || ex->devices_known) return 0;
  if (!kl_case_on_gpu(c)) return kl__local_parse_devices(ex, "0", "devices");
  /* every visible GPU: ask a worker how many there are */
  kl_worker_options wo = KL_WORKER_OPTIONS_INIT;
  wo.worker_path = ex->worker_path;
  kl_worker *w = NULL;
  kl_device_info info = KL_DEVICE_INFO_INIT;
  int rc = kl_worker_create(&w, &wo);
  if (rc == 0) rc = kl_worker_device(&info, w);
  kl_worker_free(w);
  if (rc < 0) return rc;
  if (info.count <= 0) /* the bench says why, as without an executor */
    return kl__local_parse_devices(ex, "0", "devices");
  kl_buf list = KL_BUF_INIT, d = KL_BUF_INIT;
  for (int i = 0; i < info.count && i < 64; i++)
    kl__buf_printf(&list, "%s%d", i ? "," : "", i);
  kl__buf_printf(&d, "local: %d visible GPU%s", info.count,
                 info.count == 1 ? "" : "s");
  if ((rc = kl__buf_status(&list)) < 0 || (rc = kl__buf_status(&d)) < 0 ||
      (rc = kl__local_parse_devices(ex, list.ptr, "devices")) < 0)
    goto done;
  kl__free(ex->describe);
  ex->describe = kl__buf_detach(&d);
done:
  kl_buf_dispose(&list);
  kl_buf_dispose(&d);
  return rc;
}

static int local_batch_evaluate(kl_executor *ex, const kl_case *c, kl__eval *ev,
                                size_t n, const char *batch_dir,
                                const char *ledger) {
  double t0 = kl__now_ms();
  int rc;
  if ((rc = local_devices(ex, c)) < 0 ||
      (rc = kl__local_evaluate(ex, c, ev, n, NULL, NULL)) < 0)
    return rc;
  if (n > 1) { /* a batch: how long it took, on how many */
    char detail[128];
    const char *name = strrchr(batch_dir, '/');
    size_t slots = ex->ndevices < n ? ex->ndevices : n;
    snprintf(detail, sizeof(detail), "%zu evaluations in %.3f s on %zu slot%s",
             n, (kl__now_ms() - t0) / 1000.0, slots, slots == 1 ? "" : "s");
    rc = kl__executor_line_write(ledger, "local", name ? name + 1 : batch_dir,
                                 1, "completed", NULL, detail);
  }
  return rc;
}

static int local_slots(const kl_executor *ex) {
  return (int)ex->ndevices;
}

const kl__exec_backend kl__exec_local = {
    "local", EXEC_LOCAL, local_batch_evaluate, local_devices, local_slots};
