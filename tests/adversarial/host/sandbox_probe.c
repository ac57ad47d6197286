/* Not a cheat: an honest product that checks the worker's sandbox from the
 * inside and spoils its own result when a limit is missing, so the test
 * sees OK only when every part holds: CPU, file-size and open-file limits,
 * an address-space limit (host code; NEED_AS 0 for an ASan build), no new
 * privileges, a working folder of its own, and (when LANDLOCK is 1) no way
 * to append to the case's ledger at LEDGER, which the test fills in. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#ifndef LEDGER
#define LEDGER "/nonexistent"
#endif
#ifndef LANDLOCK
#define LANDLOCK 0
#endif
#ifndef NEED_AS
#define NEED_AS 1
#endif

static int limited(int resource) {
  struct rlimit r;
  return getrlimit(resource, &r) == 0 && r.rlim_cur != RLIM_INFINITY;
}

static int sandboxed(void) {
  char cwd[4096];
  if (!limited(RLIMIT_CPU) || !limited(RLIMIT_FSIZE) ||
      !limited(RLIMIT_NOFILE) || (NEED_AS && !limited(RLIMIT_AS)))
    return 0;
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
    return 0;
  if (!getcwd(cwd, sizeof(cwd)) || !strstr(cwd, "/kl-worker-"))
    return 0;
  int fd = open(LEDGER, O_WRONLY | O_APPEND);
  if (fd >= 0) {
    (void)!write(fd, "{\"forged\":true}\n", 16);
    close(fd);
    if (LANDLOCK)
      return 0;
  }
  return 1;
}

void matmul(float *c, const float *a, const float *b, int n) {
  int ok = sandboxed();
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = ok ? acc : -1.0f;
    }
}
