#define _GNU_SOURCE /* pipe2 */
/* Run a program from an argv list (never through a shell), with its
 * standard output and error captured together, a time limit, and an
 * optional working folder. Used for compilers now and verify commands
 * later. The child gets its own process group so a timeout kills
 * everything it started. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

int kl__run(kl__run_result *res, const char *const *argv, const char *cwd,
            int timeout_ms, size_t max_output) {
  memset(res, 0, sizeof(*res));
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0)
    return kl__error_os(KL_EIO, argv[0], "cannot create a pipe");
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return kl__error_os(KL_EIO, argv[0], "cannot fork");
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
      dup2(devnull, 0);
    if (cwd && chdir(cwd) < 0)
      _exit(126);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  setpgid(pid, pid);
  close(fds[1]);
  int64_t deadline = timeout_ms > 0 ? (int64_t)kl__now_ms() + timeout_ms : 0;
  char chunk[4096];
  for (;;) {
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
    struct pollfd pfd = {fds[0], POLLIN, 0};
    int n = poll(&pfd, 1, wait);
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 0)
      continue; /* the deadline check above ends it */
    ssize_t got = read(fds[0], chunk, sizeof(chunk));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break;
    if (res->output.size < max_output &&
        kl__buf_put(&res->output, chunk, (size_t)got) < 0) {
      kill(-pid, SIGKILL);
      close(fds[0]);
      waitpid(pid, NULL, 0);
      return KL_ENOMEM;
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(status)) {
    res->exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res->exit_code = -1;
    res->signal = WTERMSIG(status);
  }
  if (res->exit_code == 127 && !res->timed_out && res->output.size == 0)
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_OS, "%s: cannot run (not found)",
                     argv[0]);
  return 0;
}
