/* One kl process per MCP tool call. The child runs in a process group of
 * its own with stdin from /dev/null; its stdout is the verb's document,
 * kept whole, and its stderr is split into lines: those that start with
 * '{' are --json-events and go to the caller as they come (progress),
 * the others (kl's messages) are kept for the result. Cancelling kills
 * the child and every process under it, found by walking /proc's parent
 * links, because the worker kl starts sits in a process group of its own
 * and would otherwise finish its request first. The pid is cleared under
 * the lock before the child is reaped (waitid with WNOWAIT first), so a
 * kill never reaches a reused pid. */
#define _GNU_SOURCE /* pipe2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/sandbox.h"
#include "mcp_internal.h"

#define MAX_OUTPUT ((size_t)64 << 20)

static pid_t parent_of(pid_t pid) {
  char path[64], text[512];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return -1;
  text[n] = 0;
  /* "pid (comm) state ppid ...": comm may hold spaces and parentheses */
  char *close_paren = strrchr(text, ')');
  if (!close_paren) return -1;
  char state;
  int ppid;
  if (sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2) return -1;
  return (pid_t)ppid;
}

/* every pid under `root`, into *found (grown), breadth first */
static int descendants(pid_t **found, size_t *count, pid_t root) {
  size_t cap = 0;
  *found = NULL;
  *count = 0;
  pid_t *all = NULL, *parents = NULL;
  size_t nall = 0, cap_all = 0, cap_parents = 0;
  DIR *d = opendir("/proc");
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    if (KL__GROW(all, cap_all, nall + 1) < 0 ||
        KL__GROW(parents, cap_parents, nall + 1) < 0)
      break;
    all[nall] = (pid_t)pid;
    parents[nall++] = parent_of((pid_t)pid);
  }
  closedir(d);
  if (KL__GROW(*found, cap, 1) == 0) (*found)[(*count)++] = root;
  for (size_t i = 0; i < *count; i++)
    for (size_t j = 0; j < nall; j++)
      if (parents[j] == (*found)[i] && KL__GROW(*found, cap, *count + 1) == 0)
        (*found)[(*count)++] = all[j];
  kl__free(all);
  kl__free(parents);
  return 0;
}

void kl_mcp__child_kill(kl_mcp__child *child) {
  child->cancelled = true;
  if (child->pid <= 0) return;
  pid_t *pids = NULL;
  size_t n = 0;
  /* stop the tree first so that nothing forks while it is walked */
  kill(-child->pid, SIGSTOP);
  descendants(&pids, &n, child->pid);
  for (size_t i = n; i-- > 1;)
    kill(pids[i], SIGKILL);
  kill(-child->pid, SIGKILL);
  kl__free(pids);
}

/* hand every whole line in `pending` that is an event to on_event, keep
 * the others in res->errors; with `flush` the last partial line too */
static void take_lines(kl_buf *pending, kl_mcp__exit *res, bool flush,
                       kl_mcp__line_fn on_event, void *payload) {
  size_t start = 0;
  while (start < pending->size) {
    char *nl = memchr(pending->ptr + start, '\n', pending->size - start);
    if (!nl && !flush) break;
    size_t len =
        nl ? (size_t)(nl - (pending->ptr + start)) : pending->size - start;
    char *line = pending->ptr + start;
    char saved = line[len];
    line[len] = 0;
    if (line[0] == '{') {
      if (on_event) on_event(line, payload);
    } else if (res->errors.size < MAX_OUTPUT) {
      kl__buf_put(&res->errors, line, len);
      kl__buf_putc(&res->errors, '\n');
    }
    line[len] = saved;
    start += len + (nl ? 1 : 0);
  }
  if (!pending->ptr) return; /* nothing was read yet */
  memmove(pending->ptr, pending->ptr + start, pending->size - start);
  pending->size -= start;
  pending->ptr[pending->size] = 0;
}

static pid_t start(const char *program, char *const *argv, int out_fd,
                   int err_fd) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  setpgid(0, 0);
  /* a server killed outright takes its running call with it */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 ||
      dup2(err_fd, 2) < 0)
    _exit(127);
    /* nothing of the server's but the three: a host program (the Python
     * bindings) may hold descriptors it never marked close-on-exec */
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
#endif
    for (int fd = 3; fd < 4096; fd++)
      close(fd);
  signal(SIGPIPE, SIG_DFL);
  execv(program, argv);
  static const char msg[] = "kl: cannot run the kl program\n";
  if (write(2, msg, sizeof(msg) - 1) < 0) _exit(127);
  _exit(127);
}

int kl_mcp__child_run(kl_mcp__exit *res, kl_mcp__child *child,
                      const char *program, char *const *argv,
                      kl_mcp__line_fn on_event, void *payload) {
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  kl_buf pending = KL_BUF_INIT;
  res->status = -1;
  res->signal = 0;
  if (pipe2(out_pipe, O_CLOEXEC) < 0 || pipe2(err_pipe, O_CLOEXEC) < 0) {
    int rc = kl__error_os(KL_EIO, NULL, "pipe");
    if (out_pipe[0] >= 0) close(out_pipe[0]), close(out_pipe[1]);
    return rc;
  }
  pthread_mutex_lock(child->lock);
  pid_t pid =
      child->cancelled ? -1 : start(program, argv, out_pipe[1], err_pipe[1]);
  if (pid > 0) {
    setpgid(pid, pid); /* also here: a kill may come before the child's own */
    child->pid = pid;
  }
  pthread_mutex_unlock(child->lock);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid <= 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    if (child->cancelled) return 0;
    return kl__error_os(KL_EIO, program, "fork");
  }
  struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char chunk[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !fds[i].revents) continue;
      ssize_t n = read(fds[i].fd, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_fds--;
        continue;
      }
      if (i == 0 && res->out.size < MAX_OUTPUT)
        kl__buf_put(&res->out, chunk, (size_t)n);
      if (i == 1) {
        kl__buf_put(&pending, chunk, (size_t)n);
        take_lines(&pending, res, false, on_event, payload);
      }
    }
  }
  take_lines(&pending, res, true, on_event, payload);
  kl_buf_dispose(&pending);
  siginfo_t info;
  while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0 &&
         errno == EINTR) {
  }
  pthread_mutex_lock(child->lock);
  child->pid = 0;
  pthread_mutex_unlock(child->lock);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status))
    res->status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    res->signal = WTERMSIG(status);
  /* a call killed (cancelled) left its workers' folders: its pid is gone
   * now that it is reaped */
  if (WIFSIGNALED(status)) kl__sandbox_dir_sweep(NULL);
  if (kl__buf_status(&res->out) < 0 || kl__buf_status(&res->errors) < 0)
    return KL_ENOMEM;
  return 0;
}
