/* What the worker client's two files share (worker/ only): the client's
 * state, and the channel requests.c asks through. client.c owns the
 * process (its start in the sandbox, its end, the channel: one JSON line
 * each way); requests.c builds each request and maps its reply into the
 * public result structs. */
#ifndef KL_WORKER_IMPL_H
#define KL_WORKER_IMPL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>

#include "kernlab/common.h"
#include "kernlab/worker.h"

struct kl_worker {
  char *path;
  int timeout_ms;
  char *visible; /* CUDA_VISIBLE_DEVICES for the worker, or NULL */
  char *dir;     /* its working folder (sandbox.c), made on first spawn */
  pid_t pid;
  int zygote; /* connection to the warm parent that forked it (zygote.c),
                 -1 when it is our child */
  int sock;   /* protocol, -1 when no worker runs */
  int log_fd; /* the worker's stdout and stderr */
  int restarts;
  bool started_once;
  char **loaded;      /* plugin paths, by id */
  char *load_refused; /* the worker's reason for the last load it refused */
  size_t nloaded, cap_loaded;
  kl_buf inbox;    /* bytes read past the last reply */
  char **readable; /* folders its sandbox lets it read (NULL-ended) */
  size_t cap_readable;
  bool *granted; /* per folder: it existed when the worker started, so the
                    running worker's sandbox holds a rule for it */
  size_t cap_granted;
  char sandbox[192];    /* what its sandbox holds (JSON object) */
  int pending;          /* replies owed for requests sent without waiting */
  bool pool;            /* check, time and profile requests say "pool":1 */
  int keep_oracle;      /* check requests keep the oracle's outputs under it;
                           -1: none */
  bool calibrated;      /* the device's calibration is known (calibration.c) */
  double probe_true_us; /* it: the probe kernel's true duration, 0: none */
};

/* A kl-worker (never the Python one, whatever KERNLAB_PYWORKER says) on
 * the device `visible` names. */
int kl__worker_create_on(kl_worker **out, const char *visible, int timeout_ms);
/* The device's calibration into w->probe_true_us (w->calibrated after):
 * the cache's, else measured by a fresh kl-worker and kept; 0 where there
 * is none (KERNLAB_CALIBRATE=0, or the device cannot be calibrated). Never
 * fails: an uncalibrated timer is still a timer. */
void kl__worker_calibrate(kl_worker *w, const char *uuid, int driver);
/* The cache's calibration of the device with this UUID under this driver:
 * 1 with *true_us (0: the file says the device could not be calibrated,
 * less than a day ago), or 0 when there is none to use (no file, another
 * driver, an older failure, a file that is not what
 * kl__calibration_store writes). */
int kl__calibration_lookup(double *true_us, const char *uuid, int driver);
/* Keep a calibrate reply's measurement (error NULL), or why the device
 * cannot be calibrated. 0, KL_EINVALID (a UUID that is not one, nothing
 * plausible to keep), KL_EIO. */
int kl__calibration_store(const char *uuid, int driver, json_object *measured,
                          const char *error);

/* A running worker, started again (with its plugins) if it died. */
int kl__wk_ensure_running(kl_worker *w);
/* Send a request and wait for its reply (a parsed object, caller puts);
 * a crash or a timeout is KL_ECRASHED / KL_ETIMEOUT, the worker marked
 * for a restart. */
int kl__wk_roundtrip(json_object **out, kl_worker *w, json_object *req);
/* A failed reply as `code`, its message once prefixed with the request
 * ("worker: check: ..."); 0 for ok:true. */
int kl__wk_reply_failed(json_object *reply, const char *what, int code);
/* The same as a runtime failure (KL_ERROR): a request the worker could
 * not carry out. */
int kl__wk_request_ok(json_object *reply, const char *what);

/* The takers of this module's options structs (KL__OPTIONS_FUNCTIONS,
 * beside each init function): a caller's struct, whatever its version,
 * over this library's defaults. */
int kl__worker_options_take(kl_worker_options *full,
                            const kl_worker_options *given);
int kl__time_options_take(kl_time_options *full, const kl_time_options *given);

#endif /* KL_WORKER_IMPL_H */
