/* The parent side of the worker: its process and its channel (the
 * requests themselves and their replies' mapping are requests.c's).
 *
 * The worker is exec'd (never just forked: a host program with threads, a
 * Python interpreter say, must not run library code in a forked copy) with
 * a socketpair on fd 3 for the protocol and a log file, already unlinked,
 * as its stdout and stderr; a Python worker is forked instead by a warm
 * parent that exists for it (zygote.c), in the same sandbox. Each request is
 * one JSON line; the reply is awaited with poll() until the request's deadline.
 * End of file means the worker died: its exit status says how, and the log's
 * tail says what it printed. After a crash or a timeout the worker is marked
 * dead; the next request starts a new one and loads the same plugins again in
 * the same order, so their ids stay valid.
 *
 * The worker runs candidate code, so it starts in the sandbox
 * (core/sandbox.c): an environment built from an allow-list, no network,
 * no reads where secrets live (the folders it loads plugins from are
 * allowed again: a plugin from a folder it may not read restarts it with
 * that folder allowed), writes only to its own folder. Everything it sends
 * back, replies and the tail of its log alike, passes through the redactor
 * (core/secrets.c) before anyone sees it.
 *
 * A worker told to quit is waited for only until it answers (it gives the
 * device's counters back first), not until it ends: tearing down its CUDA
 * context takes it 100-150 ms, which nobody needs to sit through. Its pid goes
 * on a short list that later calls reap without blocking (killing one that
 * lingers); an orphan left at exit is reaped by whoever inherits it. */
#define _GNU_SOURCE
#include <stddef.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_internal.h"
#include "worker_impl.h"
#include "../core/gpu_usage.h"
#include "../core/sandbox.h"
#include "../core/internal.h"
#include "kernlab/worker.h"

#ifndef KL_INSTALL_LIBEXEC_DIR
#define KL_INSTALL_LIBEXEC_DIR "/usr/local/libexec/kernlab"
#endif
#ifndef KL_BUILD_WORKER
#define KL_BUILD_WORKER ""
#endif

void kl_samples_dispose(kl_samples *s) {
  if (!s) return;
  kl__free(s->us[0]);
  kl__free(s->us[1]);
  kl__free(s->mhz[0]);
  kl__free(s->mhz[1]);
  /* empty again, of the same size (the caller's, which may be smaller) */
  size_t size = s->size < sizeof(*s) ? s->size : sizeof(*s);
  if (size > sizeof(s->size))
    memset((char *)s + sizeof(s->size), 0, size - sizeof(s->size));
}

static bool executable(const char *p) {
  return p && p[0] && access(p, X_OK) == 0 && kl__is_file(p);
}

static char *find_worker(const char *given) {
  if (given) return executable(given) ? kl__strdup(given) : NULL;
  const char *env = getenv("KERNLAB_WORKER");
  if (env && env[0]) return executable(env) ? kl__strdup(env) : NULL;
  Dl_info info;
  if (dladdr((void *)&kl_worker_create, &info) && info.dli_fname) {
    char *dir = kl__path_dir(info.dli_fname);
    char *cand =
        dir ? kl__path_join(dir, "../libexec/kernlab/kl-worker") : NULL;
    kl__free(dir);
    if (cand && executable(cand)) return cand;
    kl__free(cand);
  }
  if (executable(KL_INSTALL_LIBEXEC_DIR "/kl-worker"))
    return kl__strdup(KL_INSTALL_LIBEXEC_DIR "/kl-worker");
  if (executable(KL_BUILD_WORKER)) return kl__strdup(KL_BUILD_WORKER);
  return NULL;
}

char *kl__find_kl(void) {
  const char *env = getenv("KERNLAB_KL");
  if (env && env[0]) return kl__strdup(env);
  char *worker = find_worker(NULL);
  char *dir = worker ? kl__path_dir(worker) : NULL;
  char *kl = dir ? kl__path_join(dir, "../../bin/kl") : NULL;
  kl__free(worker);
  kl__free(dir);
  if (kl && executable(kl)) return kl;
  kl__free(kl);
  return kl__strdup("kl");
}

char *kl__find_pyworker(void) {
  const char *env = getenv("KERNLAB_PYWORKER");
  char *found = NULL;
  if (env && env[0]) {
    found = executable(env) ? kl__strdup(env) : NULL;
  } else {
    char *worker = find_worker(NULL);
    char *dir = worker ? kl__path_dir(worker) : NULL;
    found = dir ? kl__path_join(dir, "kl-pyworker") : NULL;
    kl__free(worker);
    kl__free(dir);
    if (found && !executable(found)) {
      kl__free(found);
      found = NULL;
    }
  }
  if (!found)
    kl__error(KL_ENOTFOUND, KL_DOMAIN_OS,
              "kl-pyworker not found beside kl-worker (set KERNLAB_PYWORKER "
              "to its path)");
  return found;
}

static void reap(kl_worker *w, int *status) {
  *status = 0;
  if (w->zygote >= 0) {
    /* not our child: its parent says how it ended (left at 0 when the
     * parent says nothing) */
    if (w->pid > 0) (void)kl__zygote_status(w->zygote, status, 30000);
    close(w->zygote);
    w->zygote = -1;
  } else if (w->pid > 0) {
    while (waitpid(w->pid, status, 0) < 0 && errno == EINTR)
      ;
  }
  w->pid = -1;
  if (w->sock >= 0) close(w->sock);
  w->sock = -1;
  w->inbox.size = 0;
  w->pending = 0; /* a worker gone owes no replies */
}

static void kill_worker(kl_worker *w) {
  int status;
  if (w->pid > 0) kill(w->pid, SIGKILL);
  reap(w, &status);
}

/* The last `max` bytes of the worker's log, on one line, redacted. */
static void log_tail(kl_worker *w, char *out, size_t max) {
  out[0] = '\0';
  if (w->log_fd < 0) return;
  off_t end = lseek(w->log_fd, 0, SEEK_END);
  off_t from = end > (off_t)max - 1 ? end - (off_t)max + 1 : 0;
  ssize_t n = pread(w->log_fd, out, max - 1, from);
  if (n <= 0) return;
  out[n] = '\0';
  for (ssize_t i = 0; i < n; i++)
    if (out[i] == '\n' || out[i] == '\r') out[i] = i == n - 1 ? '\0' : ' ';
  kl__redact_inplace(out, max);
}

/* The worker's sandbox: its folder, the folders it reads plugins from. */
static int prepare_sandbox(kl__sandbox *sb, kl_worker *w) {
  const char *env[3] = {NULL, NULL, NULL};
  kl_buf visible = KL_BUF_INIT;
  size_t n = 0;
  if (w->visible &&
      kl__buf_printf(&visible, "CUDA_VISIBLE_DEVICES=%s", w->visible) < 0)
    return kl__error_oom();
  if (w->visible) env[n++] = visible.ptr;
  if (!getenv("OMP_WAIT_POLICY"))
    env[n++] = "OMP_WAIT_POLICY=PASSIVE"; /* idle pool threads sleep */
  kl__sandbox_spec spec = {.dir = w->dir,
                           .readable = (const char *const *)w->readable,
                           .env = env,
                           .limits = true,
                           .gpu_counters = true};
  /* a folder that does not exist yet gets no rule (Landlock needs one to
   * open): remember which did, before the rules are made */
  for (size_t i = 0; w->readable && w->readable[i]; i++)
    w->granted[i] = access(w->readable[i], F_OK) == 0;
  int rc = kl__sandbox_prepare(sb, &spec);
  kl_buf_dispose(&visible);
  if (rc < 0) return rc;
  kl_buf tag = KL_BUF_INIT;
  if (kl__buf_printf(&tag, "KL_WORKER_SANDBOX=%s", sb->describe) < 0 ||
      kl__sandbox_setenv(sb, tag.ptr) < 0) {
    kl_buf_dispose(&tag);
    kl__sandbox_dispose(sb);
    return kl__error_oom();
  }
  kl_buf_dispose(&tag);
  snprintf(w->sandbox, sizeof(w->sandbox), "%s", sb->describe);
  return 0;
}

/* Let the worker read `path`'s folder; 1 when its sandbox hides that
 * folder and the running worker has no rule for it (the folder is new to
 * it, or did not exist when it started, as the compile cache on a first
 * run), so it must start again to be allowed it. */
static int allow_folder(kl_worker *w, const char *path) {
  char *real = realpath(path, NULL);
  char *dir = real ? kl__path_dir(real) : kl__path_dir(path);
  free(real);
  if (!dir) return kl__error_oom();
  size_t n = 0;
  for (; w->readable && w->readable[n]; n++)
    if (strcmp(w->readable[n], dir) == 0) {
      kl__free(dir);
      return !w->granted[n] && kl__sandbox_hidden(w->readable[n]) ? 1 : 0;
    }
  bool hidden = kl__sandbox_hidden(dir);
  if (KL__GROW(w->readable, w->cap_readable, n + 2) < 0 ||
      KL__GROW(w->granted, w->cap_granted, n + 2) < 0) {
    kl__free(dir);
    return KL_ENOMEM;
  }
  w->readable[n] = dir;
  w->readable[n + 1] = NULL;
  w->granted[n] = false;
  return hidden ? 1 : 0;
}

static int spawn(kl_worker *w) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    return kl__error_os(KL_EIO, w->path, "cannot create the worker channel");
  if (w->log_fd < 0) {
    char tmpl[] = "/tmp/kl-worker-log-XXXXXX";
    w->log_fd = mkostemp(tmpl, O_CLOEXEC);
    if (w->log_fd < 0) {
      close(sv[0]);
      close(sv[1]);
      return kl__error_os(KL_EIO, tmpl, "cannot create the worker log");
    }
    unlink(tmpl);
  } else if (ftruncate(w->log_fd, 0) < 0) {
    kl_error_clear(); /* an old tail in the log is harmless */
  }
  int rc;
  if (!w->dir && (rc = kl__sandbox_dir(&w->dir)) < 0) {
    close(sv[0]);
    close(sv[1]);
    return rc;
  }
  kl__sandbox sb;
  int status[2] = {-1, -1};
  if ((rc = prepare_sandbox(&sb, w)) < 0) {
    close(sv[0]);
    close(sv[1]);
    return rc;
  }
  if (kl__zygote_wanted(w->path, &sb)) {
    /* a Python worker forked by the warm parent, in the same sandbox */
    pid_t pid;
    if (kl__zygote_spawn(&w->zygote, &pid, w->path, &sb, sv[1], w->log_fd,
                         w->timeout_ms) == 0) {
      close(sv[1]);
      kl__sandbox_dispose(&sb);
      w->pid = pid;
      w->sock = sv[0];
      return 0;
    }
    kl_error_clear(); /* exec'd, as without one */
  }
  if (pipe2(status, O_CLOEXEC) < 0) {
    kl__sandbox_dispose(&sb);
    close(sv[0]);
    close(sv[1]);
    return kl__error_os(KL_EIO, w->path, "cannot create a pipe");
  }
  pid_t pid = fork();
  if (pid < 0) {
    kl__sandbox_dispose(&sb);
    close(sv[0]);
    close(sv[1]);
    close(status[0]);
    close(status[1]);
    return kl__error_os(KL_EIO, w->path, "cannot fork the worker");
  }
  if (pid == 0) {
    /* Only async-signal-safe calls between fork and exec. */
    close(status[0]);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(w->log_fd, 1);
    dup2(w->log_fd, 2);
    dup2(sv[1], 3);
    int why[2] = {1, 0};
    if (kl__sandbox_enter(&sb) == 0) {
      char *argv[] = {w->path, NULL};
      execve(w->path, argv, sb.envp);
      why[0] = 2;
    }
    why[1] = errno;
    if (write(status[1], why, sizeof why) < 0) _exit(127);
    _exit(127);
  }
  close(sv[1]);
  close(status[1]);
  kl__sandbox_dispose(&sb);
  int why[2] = {0, 0};
  ssize_t got;
  while ((got = read(status[0], why, sizeof why)) < 0 && errno == EINTR)
    ;
  close(status[0]);
  if (got == (ssize_t)sizeof why) {
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
      ;
    close(sv[0]);
    errno = why[1];
    return kl__error_os(KL_EIO, w->path,
                        why[0] == 1 ? "cannot enter the worker's sandbox"
                                    : "cannot start the worker");
  }
  w->pid = pid;
  w->sock = sv[0];
  return 0;
}

static int send_line(kl_worker *w, const char *line) {
  size_t n = strlen(line);
  while (n > 0) {
    ssize_t s = send(w->sock, line, n, MSG_NOSIGNAL);
    if (s < 0 && errno == EINTR) continue;
    if (s < 0) return -1;
    line += s;
    n -= (size_t)s;
  }
  return send(w->sock, "\n", 1, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* The worker died or hung: record why, and mark it for a restart. */
static int worker_lost(kl_worker *w, bool timed_out, int timeout_ms) {
  char tail[512];
  if (timed_out) {
    kill_worker(w);
    log_tail(w, tail, sizeof(tail));
    return kl__error(KL_ETIMEOUT, KL_DOMAIN_NONE,
                     "the worker did not answer within %d ms (killed)%s%s",
                     timeout_ms, tail[0] ? "; it printed: " : "", tail);
  }
  int status;
  reap(w, &status);
  log_tail(w, tail, sizeof(tail));
  if (WIFSIGNALED(status))
    return kl__error(KL_ECRASHED, KL_DOMAIN_NONE,
                     "the worker was killed by signal %d (%s)%s%s",
                     WTERMSIG(status), strsignal(WTERMSIG(status)),
                     tail[0] ? "; it printed: " : "", tail);
  return kl__error(KL_ECRASHED, KL_DOMAIN_NONE,
                   "the worker exited with status %d%s%s",
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                   tail[0] ? "; it printed: " : "", tail);
}

/* What fill_line found. */
enum { LINE_READY = 1, LINE_LATE = 0, LINE_CLOSED = -1 };

/* Read what the worker sends into the inbox until it holds a whole line
 * (LINE_READY), the deadline passes (LINE_LATE) or the socket ends
 * (LINE_CLOSED); KL_ENOMEM. */
static int fill_line(kl_worker *w, int64_t deadline) {
  for (;;) {
    if (w->inbox.size && memchr(w->inbox.ptr, '\n', w->inbox.size))
      return LINE_READY;
    int64_t left = deadline - (int64_t)kl__now_ms();
    if (left <= 0) return LINE_LATE;
    struct pollfd pfd = {w->sock, POLLIN, 0};
    int n = poll(&pfd, 1, (int)left);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) continue;
    if (kl__buf_grow(&w->inbox, 65536) < 0) return KL_ENOMEM;
    ssize_t got = recv(w->sock, w->inbox.ptr + w->inbox.size, 65536, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return LINE_CLOSED;
    w->inbox.size += (size_t)got;
  }
}

/* The length of the inbox's first line, its newline included (fill_line
 * found one). */
static size_t first_line_size(const kl_worker *w) {
  const char *nl = memchr(w->inbox.ptr, '\n', w->inbox.size);
  return (size_t)(nl - w->inbox.ptr) + 1;
}

/* Forget the inbox's first `used` bytes. */
static void inbox_drop(kl_worker *w, size_t used) {
  memmove(w->inbox.ptr, w->inbox.ptr + used, w->inbox.size - used);
  w->inbox.size -= used;
}

/* Read and drop the replies owed for requests sent without waiting
 * (kl__worker_warm_begin), each within `timeout_ms`. */
static int drain_pending(kl_worker *w, int timeout_ms) {
  while (w->pending > 0) {
    int got = fill_line(w, (int64_t)kl__now_ms() + timeout_ms);
    if (got == KL_ENOMEM) return KL_ENOMEM;
    if (got != LINE_READY) {
      w->pending = 0;
      return worker_lost(w, got == LINE_LATE, timeout_ms);
    }
    inbox_drop(w, first_line_size(w));
    w->pending--;
  }
  return 0;
}

/* Send a request and wait for its reply (a parsed object, caller puts). */
int kl__wk_roundtrip(json_object **out, kl_worker *w, json_object *req) {
  *out = NULL;
  int rc = drain_pending(w, w->timeout_ms);
  if (rc < 0) return rc;
  const char *line =
      json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
  if (send_line(w, line) < 0) return worker_lost(w, false, 0);
  int got = fill_line(w, (int64_t)kl__now_ms() + w->timeout_ms);
  if (got == KL_ENOMEM) return KL_ENOMEM;
  if (got == LINE_LATE) return worker_lost(w, true, w->timeout_ms);
  if (got == LINE_CLOSED) return worker_lost(w, false, 0);
  size_t used = first_line_size(w);
  kl_buf text = KL_BUF_INIT;
  if (kl__buf_put(&text, w->inbox.ptr, used - 1) < 0 || kl__redact(&text) < 0) {
    kl_buf_dispose(&text);
    return kl__error_oom();
  }
  json_object *reply = json_tokener_parse(text.ptr);
  kl_buf_dispose(&text);
  inbox_drop(w, used);
  if (!reply) {
    kill_worker(w);
    return kl__error(KL_ECRASHED, KL_DOMAIN_NONE,
                     "the worker sent a reply that is not JSON");
  }
  *out = reply;
  return 0;
}

/* A failed reply as `code`, its message once prefixed with the request
 * ("worker: check: ...", where the worker's own text may already begin
 * with "check: "). */
int kl__wk_reply_failed(json_object *reply, const char *what, int code) {
  json_object *ok, *err;
  if (json_object_object_get_ex(reply, "ok", &ok) &&
      json_object_get_boolean(ok))
    return 0;
  const char *msg = json_object_object_get_ex(reply, "error", &err)
                        ? json_object_get_string(err)
                        : "no reason given";
  size_t n = strlen(what);
  if (strncmp(msg, what, n) == 0 && strncmp(msg + n, ": ", 2) == 0)
    msg += n + 2;
  return kl__error(code, KL_DOMAIN_NONE, "worker: %s: %s", what, msg);
}

/* A load the worker refused: the file is not a plugin it can use (bad
 * input). */
static int check_ok(json_object *reply, const char *what) {
  return kl__wk_reply_failed(reply, what, KL_EINVALID);
}

/* A check, time, device or release request the worker could not carry
 * out (the device out of memory, a driver error, a case's module that
 * raised): a runtime failure, not bad input. */
int kl__wk_request_ok(json_object *reply, const char *what) {
  return kl__wk_reply_failed(reply, what, KL_ERROR);
}

static int load_in_worker(kl_worker *w, const char *path, int want_id) {
  json_object *req = json_object_new_object(), *reply, *id;
  json_object_object_add(req, "op", json_object_new_string("load"));
  json_object_object_add(req, "path", json_object_new_string(path));
  int rc = kl__wk_roundtrip(&reply, w, req);
  json_object_put(req);
  kl__free(w->load_refused);
  w->load_refused = NULL;
  if (rc < 0) return rc;
  rc = check_ok(reply, path);
  json_object *why;
  if (rc < 0 && json_object_object_get_ex(reply, "error", &why) &&
      !(w->load_refused = kl__strdup(json_object_get_string(why)))) {
    json_object_put(reply);
    return kl__error_oom();
  }
  if (rc == 0 && (!json_object_object_get_ex(reply, "id", &id) ||
                  json_object_get_int(id) != want_id))
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                   "worker: %s loaded under an unexpected id", path);
  json_object_put(reply);
  return rc;
}

/* A running worker, started again (with its plugins) if it died. */
int kl__wk_ensure_running(kl_worker *w) {
  if (w->sock >= 0) return 0;
  int rc = spawn(w);
  if (rc < 0) return rc;
  if (w->started_once) w->restarts++;
  w->started_once = true;
  for (size_t i = 0; i < w->nloaded; i++)
    if ((rc = load_in_worker(w, w->loaded[i], (int)i)) < 0) return rc;
  return 0;
}

/* ---- workers on their way out ---------------------------------------- */

#define LEAVING_MAX 16
#define LEAVING_KILL_MS 5000.0
static struct {
  pid_t pid;
  double since; /* kl__now_ms() when told to quit */
} leaving[LEAVING_MAX];
static size_t nleaving;
static pthread_mutex_t leaving_lock = PTHREAD_MUTEX_INITIALIZER;

/* Reap those that have left; kill those told to quit too long ago. */
static void reap_leaving(void) {
  pthread_mutex_lock(&leaving_lock);
  double now = kl__now_ms();
  for (size_t i = 0; i < nleaving;) {
    pid_t got = waitpid(leaving[i].pid, NULL, WNOHANG);
    if (got == leaving[i].pid || (got < 0 && errno == ECHILD)) {
      leaving[i] = leaving[--nleaving];
      continue;
    }
    if (now - leaving[i].since > LEAVING_KILL_MS) kill(leaving[i].pid, SIGKILL);
    i++;
  }
  pthread_mutex_unlock(&leaving_lock);
}

/* Hand a worker told to quit to reap_leaving; false when the list is
 * full (then the caller waits, as before). */
static bool leave_later(pid_t pid) {
  pthread_mutex_lock(&leaving_lock);
  bool room = nleaving < LEAVING_MAX;
  if (room) {
    leaving[nleaving].pid = pid;
    leaving[nleaving].since = kl__now_ms();
    nleaving++;
  }
  pthread_mutex_unlock(&leaving_lock);
  return room;
}

/* The idlest of several GPUs, by its UUID (NVML's order need not be
 * CUDA's), chosen once per process: every worker of a run or a bench then
 * runs on the same GPU. NULL with one GPU, or none NVML can read. */
static kl__gpu_usage idle_gpu;
static bool idle_found;
static void pick_idlest(void) {
  idle_found = kl__gpu_idlest(&idle_gpu);
}

static const char *idlest_gpu(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, pick_idlest);
  return idle_found ? idle_gpu.uuid : NULL;
}

/* A worker seeing the device `visible` names (CUDA_VISIBLE_DEVICES'
 * syntax), or the one opts says. */
static int create(kl_worker **out, const kl_worker_options *given,
                  const char *visible) {
  *out = NULL;
  kl_worker_options full;
  int rc = kl__worker_options_take(&full, given);
  if (rc < 0) return rc;
  const kl_worker_options *opts = &full;
  reap_leaving();
  kl_worker *w = kl__calloc(1, sizeof(*w));
  if (!w) return kl__error_oom();
  w->sock = w->log_fd = w->zygote = -1;
  w->pid = -1;
  w->keep_oracle = -1;
  w->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : 60000;
  const char *idlest = visible ? visible
                       : opts && opts->device == KL_DEVICE_IDLEST &&
                               !getenv("CUDA_VISIBLE_DEVICES")
                           ? idlest_gpu()
                           : NULL;
  if (idlest) {
    if (!(w->visible = kl__strdup(idlest))) {
      kl_worker_free(w);
      return kl__error_oom();
    }
  } else if (opts && opts->device >= 0) {
    /* pick the device-th entry of an existing CUDA_VISIBLE_DEVICES list */
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    char pick[64];
    snprintf(pick, sizeof(pick), "%d", opts->device);
    if (env && env[0]) {
      const char *p = env;
      for (int i = 0; i < opts->device && p; i++) {
        p = strchr(p, ',');
        if (p) p++;
      }
      if (!p || !*p) {
        kl_worker_free(w);
        return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                         "device %d is not among CUDA_VISIBLE_DEVICES=%s",
                         opts->device, env);
      }
      snprintf(pick, sizeof(pick), "%.*s", (int)strcspn(p, ","), p);
    }
    if (!(w->visible = kl__strdup(pick))) {
      kl_worker_free(w);
      return kl__error_oom();
    }
  }
  w->path = find_worker(opts ? opts->worker_path : NULL);
  if (!w->path) {
    kl_worker_free(w);
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                     "kl-worker not found (set KERNLAB_WORKER to its path)");
  }
  /* it reads its own program's folder, and plugins from the cache */
  kl_buf cache = KL_BUF_INIT;
  if ((rc = kl__cache_dir_default(&cache)) < 0 ||
      (rc = kl__buf_puts(&cache, "/plugin")) < 0 ||
      (rc = allow_folder(w, w->path)) < 0 ||
      (rc = allow_folder(w, cache.ptr)) < 0 ||
      (rc = kl__wk_ensure_running(w)) < 0) {
    kl_buf_dispose(&cache);
    kl_worker_free(w);
    return rc;
  }
  kl_buf_dispose(&cache);
  *out = w;
  return 0;
}

int kl_worker_create(kl_worker **out, const kl_worker_options *given) {
  return create(out, given, NULL);
}

int kl__worker_create_on(kl_worker **out, const char *visible, int timeout_ms) {
  kl_worker_options opts = KL_WORKER_OPTIONS_INIT;
  opts.timeout_ms = timeout_ms;
  return create(out, &opts, visible);
}

void kl_worker_free(kl_worker *w) {
  if (!w) return;
  reap_leaving();
  if (w->sock >= 0) {
    /* it answers once it has given the device's counters back (a
     * profiler left enabled in a worker on its way out would make the next
     * worker's busy): wait for that line, the socket's end, or 2 s. One
     * still answering a request sent without waiting (making its context:
     * nothing of the device to give back) is killed instead. */
    if (w->pending > 0) {
      if (w->pid > 0) kill(w->pid, SIGKILL);
    } else if (send_line(w, "{\"op\":\"quit\"}") == 0) {
      fill_line(w, (int64_t)kl__now_ms() + 2000);
    }
    pid_t got = w->pid > 0 ? waitpid(w->pid, NULL, WNOHANG) : -1;
    if (got != 0 || leave_later(w->pid)) {
      /* gone already, or leaving by itself: reap_leaving collects it */
      w->pid = -1;
    } else {
      /* give it a moment to leave by itself, then make sure */
      for (int i = 0; i < 50 && w->pid > 0; i++)
        if (waitpid(w->pid, NULL, WNOHANG) != 0)
          w->pid = -1; /* reaped (or not ours to reap) */
        else
          usleep(2000);
    }
    kill_worker(w); /* closes the socket; kills only a worker still here */
  }
  if (w->log_fd >= 0) close(w->log_fd);
  for (size_t i = 0; i < w->nloaded; i++)
    kl__free(w->loaded[i]);
  kl__free(w->loaded);
  kl__free(w->load_refused);
  kl_buf_dispose(&w->inbox);
  kl__sandbox_dir_remove(w->dir);
  kl__free(w->dir);
  kl__free(w->visible);
  kl__free(w->path);
  for (size_t i = 0; w->readable && w->readable[i]; i++)
    kl__free(w->readable[i]);
  kl__free(w->readable);
  kl__free(w->granted);
  kl__free(w);
}

const char *kl__worker_load_refused(const kl_worker *w) {
  return w->load_refused;
}

char *const *kl__worker_plugin_paths(const kl_worker *w, size_t *n) {
  *n = w->nloaded;
  return w->loaded;
}

int kl__worker_pid(const kl_worker *w) {
  return w->sock >= 0 ? (int)w->pid : -1;
}

const char *kl__worker_sandbox(const kl_worker *w) {
  return w->sandbox;
}

void kl_worker_set_timeout(kl_worker *w, int timeout_ms) {
  w->timeout_ms = timeout_ms > 0 ? timeout_ms : 60000;
}

int kl_worker_restarts(const kl_worker *w) {
  return w->restarts;
}

int kl_worker_load(int *id, kl_worker *w, const char *path) {
  /* a folder its sandbox hides: start it again with the folder allowed
   * (not a restart the caller counts: nothing failed) */
  int rc = allow_folder(w, path);
  if (rc < 0) return rc;
  if (rc == 1 && w->sock >= 0) {
    kill_worker(w);
    w->started_once = false;
    rc = kl__wk_ensure_running(w);
    w->started_once = true;
  } else {
    rc = kl__wk_ensure_running(w);
  }
  if (rc < 0) return rc;
  if (KL__GROW(w->loaded, w->cap_loaded, w->nloaded + 1) < 0) return KL_ENOMEM;
  if (!(w->loaded[w->nloaded] = kl__strdup(path))) return kl__error_oom();
  if ((rc = load_in_worker(w, path, (int)w->nloaded)) < 0) {
    kl__free(w->loaded[w->nloaded]);
    return rc;
  }
  *id = (int)w->nloaded++;
  return 0;
}

/* The device's context made now, without waiting for the reply (read and
 * dropped before the next request's). */
int kl__worker_warm_begin(kl_worker *w) {
  int rc = kl__wk_ensure_running(w);
  if (rc < 0) return rc;
  rc = drain_pending(w, w->timeout_ms);
  if (rc < 0) return rc;
  if (send_line(w, "{\"op\":\"device\",\"context\":1}") < 0)
    return worker_lost(w, false, 0);
  w->pending++;
  return 0;
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t worker_options_sizes[] = {0, sizeof(kl_worker_options)};

KL__OPTIONS_FUNCTIONS(kl_worker_options, kl_worker_options_init,
                      kl__worker_options_take, KL_WORKER_OPTIONS_INIT,
                      worker_options_sizes)
