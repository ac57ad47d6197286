/* Fault injection at record writes, for tests.
 *
 * Every write of a record (records/io.c: a ledger line, a new file of an
 * iteration, a file replaced whole, a run's or an iteration's folder, a
 * folder set aside) first calls kl__fault_point. In the library everyone
 * gets, it does nothing. The test build of the CLI (kl-faulty, never
 * installed) compiles this file again with KL_FAULT_INJECTION, and then
 * the environment drives it:
 *   KL_FAULT_LOG=FILE  append "N OP PATH" for every point reached, so a
 *                      test learns how many there are and what they are
 *   KL_FAULT_AT=N      at the N-th point (1-based, counted per process):
 *   KL_FAULT_MODE=kill   the process is killed (SIGKILL) before the write
 *                torn    half the bytes are written, then it is killed
 *                fail    the write fails (EIO), as a full disk's would
 * so a test can stop a run at every record write in turn and resume it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "records.h"

#ifdef KL_FAULT_INJECTION

static atomic_long points;

int kl__fault_point(const char *op, const char *path) {
  long n = atomic_fetch_add(&points, 1) + 1;
  const char *log = getenv("KL_FAULT_LOG");
  if (log && log[0]) {
    char line[4200];
    int len = snprintf(line, sizeof(line), "%ld %s %s\n", n, op, path);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      if (len > 0) /* a test's log: a failed write has nothing to undo */
        (void)!write(fd, line,
                     (size_t)len < sizeof(line) ? (size_t)len
                                                : sizeof(line) - 1);
      close(fd);
    }
  }
  const char *at = getenv("KL_FAULT_AT");
  if (!at || strtol(at, NULL, 10) != n) return KL__FAULT_NONE;
  const char *mode = getenv("KL_FAULT_MODE");
  if (mode && strcmp(mode, "fail") == 0) {
    errno = EIO;
    return KL__FAULT_FAIL;
  }
  if (mode && strcmp(mode, "torn") == 0) return KL__FAULT_TORN;
  kl__fault_die();
  return KL__FAULT_NONE;
}

void kl__fault_die(void) {
  raise(SIGKILL);
  _exit(137);
}

#else

int kl__fault_point(const char *op, const char *path) {
  (void)op;
  (void)path;
  return KL__FAULT_NONE;
}

void kl__fault_die(void) {}

#endif
