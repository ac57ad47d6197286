#define _GNU_SOURCE /* pipe2 */
/* Run a program from an argv list (never through a shell), with its
 * standard output and error captured (together, or apart), optional bytes
 * for its standard input, a time limit, and an optional working folder.
 * Used for compilers, the command LLM provider, and verify commands later.
 * The child gets its own process group so a timeout kills everything it
 * started. Input is written as the child reads it, in the same poll loop
 * that drains its output, so neither side can block the other. A child
 * that cannot start (no such program, a sandbox it cannot enter, a folder
 * it cannot enter) says so on a close-on-exec pipe before it would exec,
 * so a program's own exit status is never mistaken for that. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "sandbox.h"

int kl__run(kl__run_result *res, const char *const *argv, const char *cwd,
            int timeout_ms, size_t max_output) {
  return kl__run_io(res, argv, cwd, timeout_ms, max_output, NULL);
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* Append what a pipe has to `b`, up to `cap`; past it the bytes are read
 * and dropped (the child must not block on a full pipe). 1: end of file. */
static int drain(int fd, kl_buf *b, size_t cap, bool *truncated) {
  char chunk[4096];
  ssize_t got = read(fd, chunk, sizeof(chunk));
  if (got < 0) return errno == EINTR || errno == EAGAIN ? 0 : 1;
  if (got == 0) return 1;
  size_t keep = b->size < cap ? cap - b->size : 0;
  if ((size_t)got > keep) *truncated = true;
  if (keep &&
      kl__buf_put(b, chunk, (size_t)got < keep ? (size_t)got : keep) < 0)
    return KL_ENOMEM;
  return 0;
}

/* In the child: add "NAME=VALUE" entries to the environment. */
static void set_env(const char *const *env) {
  for (size_t i = 0; env && env[i]; i++) {
    const char *eq = strchr(env[i], '=');
    if (!eq || eq == env[i] || (size_t)(eq - env[i]) >= 256) continue;
    char name[256];
    memcpy(name, env[i], (size_t)(eq - env[i]));
    name[eq - env[i]] = '\0';
    setenv(name, eq + 1, 1);
  }
}

/* Why a child could not start, on its status pipe. */
enum { START_SANDBOX = 1, START_CWD, START_EXEC };

static void exit_status(kl__run_result *res, int status) {
  if (WIFEXITED(status)) {
    res->exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res->exit_code = -1;
    res->signal = WTERMSIG(status);
  }
}

/* The child shares our terminal: nothing to drain, so just wait. It stays
 * in our process group, so a ^C reaches it as it would without kernlab. */
static int run_inherited(kl__run_result *res, const char *const *argv,
                         const char *cwd, const char *const *env) {
  int probe[2];
  if (pipe2(probe, O_CLOEXEC) < 0)
    return kl__error_os(KL_EIO, argv[0], "cannot create a pipe");
  pid_t pid = fork();
  if (pid < 0) {
    close(probe[0]);
    close(probe[1]);
    return kl__error_os(KL_EIO, argv[0], "cannot fork");
  }
  if (pid == 0) {
    close(probe[0]);
    int why = 0;
    if (cwd && chdir(cwd) < 0) {
      why = errno;
    } else {
      set_env(env);
      execvp(argv[0], (char *const *)argv);
      why = errno;
    }
    /* tell the parent exec failed (the pipe closes on a good exec) */
    if (write(probe[1], &why, sizeof why) < 0) _exit(127);
    _exit(127);
  }
  close(probe[1]);
  int why = 0;
  ssize_t got;
  while ((got = read(probe[0], &why, sizeof why)) < 0 && errno == EINTR)
    ;
  close(probe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (got == (ssize_t)sizeof why) {
    errno = why;
    return kl__error_os(why == ENOENT ? KL_ENOTFOUND : KL_EIO,
                        cwd && why != ENOENT ? cwd : argv[0], "cannot run");
  }
  exit_status(res, status);
  return 0;
}

int kl__run_io(kl__run_result *res, const char *const *argv, const char *cwd,
               int timeout_ms, size_t max_output, const kl__run_extras *io) {
  memset(res, 0, sizeof(*res));
  if (io && io->inherit) return run_inherited(res, argv, cwd, io->env);
  int out[2] = {-1, -1}, err[2] = {-1, -1}, in[2] = {-1, -1};
  int status[2] = {-1, -1};
  bool split = io && io->errors, feed = io && io->input;
  if (pipe2(out, O_CLOEXEC) < 0 || (split && pipe2(err, O_CLOEXEC) < 0) ||
      (feed && pipe2(in, O_CLOEXEC) < 0) || pipe2(status, O_CLOEXEC) < 0) {
    int rc = kl__error_os(KL_EIO, argv[0], "cannot create a pipe");
    for (int i = 0; i < 2; i++)
      close_fd(&out[i]), close_fd(&err[i]), close_fd(&in[i]),
          close_fd(&status[i]);
    return rc;
  }
  pid_t pid = fork();
  if (pid < 0) {
    for (int i = 0; i < 2; i++)
      close_fd(&out[i]), close_fd(&err[i]), close_fd(&in[i]),
          close_fd(&status[i]);
    return kl__error_os(KL_EIO, argv[0], "cannot fork");
  }
  if (pid == 0) {
    close(status[0]);
    setpgid(0, 0);
    dup2(out[1], 1);
    dup2(split ? err[1] : out[1], 2);
    if (feed) {
      dup2(in[0], 0);
    } else {
      int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, 0);
    }
    const kl__sandbox *sb = io ? io->sandbox : NULL;
    int why[2] = {0, 0};
    if (sb && kl__sandbox_enter(sb) < 0)
      why[0] = START_SANDBOX;
    else if (cwd && chdir(cwd) < 0)
      why[0] = START_CWD;
    if (!why[0]) {
      if (sb) {
        execvpe(argv[0], (char *const *)argv, sb->envp);
      } else {
        set_env(io ? io->env : NULL);
        execvp(argv[0], (char *const *)argv);
      }
      why[0] = START_EXEC;
    }
    why[1] = errno;
    if (write(status[1], why, sizeof why) < 0) _exit(127);
    _exit(127);
  }
  setpgid(pid, pid);
  close_fd(&status[1]);
  close_fd(&out[1]);
  close_fd(&err[1]);
  close_fd(&in[0]);
  int why[2] = {0, 0};
  ssize_t got;
  while ((got = read(status[0], why, sizeof why)) < 0 && errno == EINTR)
    ;
  close_fd(&status[0]);
  if (got == (ssize_t)sizeof why) {
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
      ;
    for (int i = 0; i < 2; i++)
      close_fd(&out[i]), close_fd(&err[i]), close_fd(&in[i]);
    errno = why[1];
    if (why[0] == START_SANDBOX)
      return kl__error_os(KL_EIO, argv[0], "cannot enter the sandbox");
    if (why[0] == START_CWD)
      return kl__error_os(kl__errno_code(why[1], false), cwd,
                          "cannot run a program in this folder");
    if (why[1] == ENOENT)
      return kl__error(KL_ENOTFOUND, KL_DOMAIN_OS, "%s: cannot run (not found)",
                       argv[0]);
    return kl__error_os(KL_EIO, argv[0], "cannot run");
  }
  if (feed) fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
  /* a child that exits before reading its input must not kill us (only
   * feeding calls touch the process-wide disposition: the executors run
   * the others, compiles, from several threads at once) */
  struct sigaction ign = {0}, old;
  ign.sa_handler = SIG_IGN;
  if (feed) sigaction(SIGPIPE, &ign, &old);
  int64_t deadline = timeout_ms > 0 ? (int64_t)kl__now_ms() + timeout_ms : 0;
  size_t written = 0;
  int rc = 0;
  while (out[0] >= 0 || err[0] >= 0) {
    int wait = -1;
    if (deadline) {
      int64_t left = deadline - (int64_t)kl__now_ms();
      if (left <= 0) {
        res->timed_out = true;
        kill(-pid, SIGKILL);
        break;
      }
      wait = (int)left;
    }
    struct pollfd pfd[3];
    int np = 0, io_out = -1, io_err = -1, io_in = -1;
    if (out[0] >= 0) pfd[io_out = np++] = (struct pollfd){out[0], POLLIN, 0};
    if (err[0] >= 0) pfd[io_err = np++] = (struct pollfd){err[0], POLLIN, 0};
    if (in[1] >= 0) pfd[io_in = np++] = (struct pollfd){in[1], POLLOUT, 0};
    int n = poll(pfd, (nfds_t)np, wait);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue; /* the deadline check above ends it */
    if (io_in >= 0 && pfd[io_in].revents) {
      ssize_t w =
          (pfd[io_in].revents & POLLOUT)
              ? write(in[1], io->input + written, io->input_len - written)
              : -1;
      if (w > 0) written += (size_t)w;
      if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
          written == io->input_len)
        close_fd(&in[1]); /* all sent, or the child stopped reading */
    }
    int d;
    if (io_out >= 0 && pfd[io_out].revents &&
        (d = drain(out[0], &res->output, max_output, &res->truncated)) != 0) {
      if (d < 0) {
        rc = KL_ENOMEM;
        kill(-pid, SIGKILL);
        break;
      }
      close_fd(&out[0]);
    }
    if (io_err >= 0 && pfd[io_err].revents &&
        (d = drain(err[0], io->errors, max_output, &res->truncated)) != 0) {
      if (d < 0) {
        rc = KL_ENOMEM;
        kill(-pid, SIGKILL);
        break;
      }
      close_fd(&err[0]);
    }
    if (feed && in[1] >= 0 && written == io->input_len) close_fd(&in[1]);
  }
  for (int i = 0; i < 2; i++)
    close_fd(&out[i]), close_fd(&err[i]), close_fd(&in[i]);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
    ;
  if (feed) sigaction(SIGPIPE, &old, NULL);
  if (rc < 0) return kl__error_oom();
  exit_status(res, wstatus);
  return 0;
}
