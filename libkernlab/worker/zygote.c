/* The warm Python worker: a parent that outlives commands.
 *
 * A Python case's worker spends seconds importing torch before it serves
 * (bench/README.md: 4–5 s of a 6 s `kl compare`). So a Python worker is not
 * exec'd afresh for each command but forked by a parent that has the
 * interpreter, numpy, torch and triton loaded already: `kl-pyworker
 * --zygote NAME IDLE_S` (kl-worker/kl_pyworker_parent.py). There is one per
 * user, worker program and sandbox environment (the name hashes the three, so a
 * changed kl-pyworker, another CUDA_VISIBLE_DEVICES or another PYTHONPATH
 * gets its own); the first command that needs it starts it, and it leaves
 * after IDLE_S seconds ($KERNLAB_PYWORKER_IDLE_S, default 600) with nothing
 * to do. KERNLAB_PYWORKER_WARM=0 turns it off: every worker is exec'd.
 *
 * The sandbox is the same as an exec'd worker's: the client prepares it as
 * always (core/sandbox.c) and sends it with the request — the wire text,
 * the environment, and the Landlock ruleset as a file descriptor beside the
 * worker's channel and log — and the forked child enters it before it
 * imports anything of the case's. The parent itself runs no case's or
 * candidate's code; it starts with the sandbox's environment (no secret
 * reaches it) in a private folder of its own. It listens on an abstract
 * Unix socket: a sandboxed worker cannot reach it (abstract names belong
 * to a network namespace, and the worker has its own, or Landlock scopes
 * them), so where the sandbox has neither (the seccomp fallback) the warm
 * path is not taken. Both ends check that the other is the same user.
 *
 * The worker is not this process's child: its pid comes back in the
 * parent's answer ({"pid":N}), kill() reaches it as before, and its exit
 * status comes back on the same connection ({"status":S}) when the parent
 * reaps it. Anything that fails on the way (no parent can be started, it
 * answers nothing) leaves the caller to exec the worker as before. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_internal.h"
#include "../core/internal.h"
#include "../core/sandbox.h"

#define IDLE_DEFAULT_S 600
#define CONNECT_WAIT_MS 5000 /* for a parent just started to listen */

bool kl__zygote_wanted(const char *worker_path, const struct kl__sandbox *sb) {
  const char *off = getenv("KERNLAB_PYWORKER_WARM");
  if (off && strcmp(off, "0") == 0) return false;
  const char *base = strrchr(worker_path, '/');
  base = base ? base + 1 : worker_path;
  return strcmp(base, "kl-pyworker") == 0 &&
         kl__sandbox_walls_abstract_sockets(sb);
}

/* Entries that differ between two workers of one parent: their folders
 * and the sandbox's tag. */
static bool per_worker(const char *entry) {
  static const char *const names[] = {
      "HOME=", "TMPDIR=", "PWD=", "KL_WORKER_SANDBOX="};
  for (size_t i = 0; i < KL_ARRAY_SIZE(names); i++)
    if (strncmp(entry, names[i], strlen(names[i])) == 0) return true;
  return false;
}

/* The parent's socket name: user, worker program (its path and the file's
 * identity, so an updated one starts afresh) and environment. */
static void parent_name(char *out, size_t cap, const char *pyworker,
                        char *const *envp) {
  kl__sha256 h;
  char hex[65];
  struct stat st;
  kl__sha256_init(&h);
  kl__sha256_update(&h, pyworker, strlen(pyworker) + 1);
  if (stat(pyworker, &st) == 0) {
    long long id[4] = {(long long)st.st_dev, (long long)st.st_ino,
                       (long long)st.st_size, (long long)st.st_mtime};
    kl__sha256_update(&h, id, sizeof(id));
  }
  for (char *const *e = envp; e && *e; e++)
    if (!per_worker(*e)) kl__sha256_update(&h, *e, strlen(*e) + 1);
  kl__sha256_hex(&h, hex);
  snprintf(out, cap, "kernlab-pyworker-%u-%.24s", (unsigned)getuid(), hex);
}

static socklen_t address_of(struct sockaddr_un *a, const char *name) {
  memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  size_t n = strlen(name);
  if (n > sizeof(a->sun_path) - 2) n = sizeof(a->sun_path) - 2;
  memcpy(a->sun_path + 1, name, n); /* sun_path[0] = 0: abstract */
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* A connection to the parent called `name`, if one listens and is ours;
 * -1 otherwise. */
static int connect_parent(const char *name) {
  struct sockaddr_un a;
  socklen_t len = address_of(&a, name);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, (struct sockaddr *)&a, len) != 0) {
    close(fd);
    return -1;
  }
  struct ucred cred;
  socklen_t clen = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 ||
      cred.uid != getuid()) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Start the parent, detached (its own session; not our child: a grandchild
 * the init process inherits), in a private folder, with the sandbox's
 * environment. Everything is built before the fork. */
static int start_parent(const char *name, const char *pyworker,
                        char *const *envp) {
  const char *idle_env = getenv("KERNLAB_PYWORKER_IDLE_S");
  long idle_s = idle_env ? strtol(idle_env, NULL, 10) : 0;
  char idle[32];
  snprintf(idle, sizeof(idle), "%ld",
           idle_s > 0 && idle_s < 86400 * 7 ? idle_s : IDLE_DEFAULT_S);
  char *dir = NULL;
  int rc = kl__sandbox_dir_lasting(&dir, "pyworker-parent");
  if (rc < 0) return rc;
  size_t n = 0;
  while (envp && envp[n])
    n++;
  char **env = kl__calloc(n + 3, sizeof(*env));
  kl_buf home = KL_BUF_INIT, tmp = KL_BUF_INIT;
  if (!env || kl__buf_printf(&home, "HOME=%s", dir) < 0 ||
      kl__buf_printf(&tmp, "TMPDIR=%s", dir) < 0) {
    rc = kl__error_oom();
    goto done;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(envp[i], "HOME=", 5) != 0 &&
        strncmp(envp[i], "TMPDIR=", 7) != 0)
      env[k++] = envp[i];
  env[k++] = home.ptr;
  env[k++] = tmp.ptr;
  char *argv[] = {(char *)pyworker, "--zygote", (char *)name, idle, NULL};
  pid_t pid = fork();
  if (pid < 0) {
    rc = kl__error_os(KL_EIO, pyworker, "cannot start the warm Python worker");
    goto done;
  }
  if (pid == 0) { /* only async-signal-safe calls from here */
    setsid();
    if (fork() != 0) _exit(0);
    int null = open("/dev/null", O_RDWR);
    if (null < 0) _exit(127);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
#endif
      for (int fd = 3; fd < 4096; fd++)
        close(fd);
    if (chdir(dir) != 0) _exit(127);
    execve(pyworker, argv, env);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
done:
  kl_buf_dispose(&home);
  kl_buf_dispose(&tmp);
  kl__free(env);
  kl__free(dir); /* the parent removes it when it leaves */
  return rc;
}

/* One line from the parent within `timeout_ms`: 0 with `line` filled, -1
 * when it ends or says nothing in time. */
static int read_line(int fd, char *line, size_t cap, int timeout_ms) {
  size_t n = 0;
  int64_t deadline = (int64_t)kl__now_ms() + timeout_ms;
  while (n + 1 < cap) {
    int left = (int)(deadline - (int64_t)kl__now_ms());
    if (timeout_ms >= 0 && left <= 0) return -1;
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, timeout_ms >= 0 ? left : -1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    ssize_t got = read(fd, line + n, 1);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1;
    if (line[n] == '\n') {
      line[n] = '\0';
      return 0;
    }
    n++;
  }
  return -1;
}

/* The request: length, wire text and environment NUL-separated; the fds
 * beside it. */
static int send_request(int fd, const kl__sandbox *sb, const int *fds,
                        int nfds) {
  kl_buf body = KL_BUF_INIT;
  uint32_t len = 0;
  int rc = kl__buf_put(&body, (const char *)&len, sizeof(len));
  if (rc == 0) rc = kl__sandbox_wire(sb, &body);
  for (char **e = sb->envp; rc == 0 && e && *e; e++)
    if ((rc = kl__buf_put(&body, "", 1)) == 0) rc = kl__buf_puts(&body, *e);
  if (rc < 0) {
    kl_buf_dispose(&body);
    return kl__error_oom();
  }
  len = (uint32_t)(body.size - sizeof(len)); /* little-endian hosts only */
  memcpy(body.ptr, &len, sizeof(len));
  char control[CMSG_SPACE(3 * sizeof(int))];
  memset(control, 0, sizeof(control));
  struct iovec iov = {body.ptr, body.size};
  struct msghdr m = {0};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
  memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
  ssize_t sent;
  while ((sent = sendmsg(fd, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
    ;
  /* the rest, if the socket took only part */
  size_t done = sent > 0 ? (size_t)sent : 0;
  while (sent >= 0 && done < body.size) {
    sent = send(fd, body.ptr + done, body.size - done, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) sent = 0;
    if (sent > 0) done += (size_t)sent;
  }
  kl_buf_dispose(&body);
  return sent < 0 ? -1 : 0;
}

int kl__zygote_spawn(int *conn, pid_t *pid, const char *pyworker,
                     const struct kl__sandbox *sb, int chan, int log_fd,
                     int timeout_ms) {
  *conn = -1;
  *pid = -1;
  char name[96];
  parent_name(name, sizeof(name), pyworker, sb->envp);
  int fd = connect_parent(name);
  if (fd < 0) {
    int rc = start_parent(name, pyworker, sb->envp);
    if (rc < 0) return rc;
    for (int waited = 0; fd < 0 && waited < CONNECT_WAIT_MS; waited += 10) {
      usleep(10000);
      fd = connect_parent(name);
    }
    if (fd < 0)
      return kl__error(KL_EIO, KL_DOMAIN_NONE,
                       "%s: the warm Python worker did not start", pyworker);
  }
  int fds[3] = {chan, log_fd, sb->ruleset};
  char line[64];
  long got = -1;
  /* its first answer waits for its imports when it has only just started */
  if (send_request(fd, sb, fds, sb->ruleset >= 0 ? 3 : 2) < 0 ||
      read_line(fd, line, sizeof(line), timeout_ms) < 0 ||
      sscanf(line, "{\"pid\":%ld}", &got) != 1 || got <= 0) {
    close(fd);
    return kl__error(KL_EIO, KL_DOMAIN_NONE,
                     "%s: the warm Python worker did not answer", pyworker);
  }
  *conn = fd;
  *pid = (pid_t)got;
  return 0;
}

int kl__zygote_status(int conn, int *status, int timeout_ms) {
  char line[64];
  int s;
  if (read_line(conn, line, sizeof(line), timeout_ms) < 0 ||
      sscanf(line, "{\"status\":%d}", &s) != 1)
    return -1;
  *status = s;
  return 0;
}
