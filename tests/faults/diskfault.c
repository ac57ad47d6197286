/* LD_PRELOAD shim for the fault tests: once the file named by
 * $KL_FAULT_FLAG exists, writes to files under $KL_FAULT_DIR fail as on a
 * full disk (KL_FAULT=enospc) or a read-only file system (KL_FAULT=erofs,
 * which also refuses to create files and folders there). With
 * $KL_FAULT_AFTER=N the shim makes the flag itself, at the first write
 * there after $KL_FAULT_DIR/solutions.jsonl holds N lines (no race with a
 * fast run). Removing the flag file is "space is back". Built by
 * test_faults.py with the system cc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The lines of $KL_FAULT_DIR/solutions.jsonl (stdio's own open and read
 * are not the ones this shim replaces). */
static long recorded(void) {
  const char *dir = getenv("KL_FAULT_DIR");
  char path[4096];
  if (!dir) return 0;
  snprintf(path, sizeof(path), "%s/solutions.jsonl", dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  long n = 0;
  int c;
  while ((c = getc(f)) != EOF)
    n += c == '\n';
  fclose(f);
  return n;
}

static int active(void) {
  const char *flag = getenv("KL_FAULT_FLAG");
  if (!flag) return 0;
  if (access(flag, F_OK) == 0) return 1;
  const char *after = getenv("KL_FAULT_AFTER");
  if (!after || recorded() < strtol(after, NULL, 10)) return 0;
  FILE *f = fopen(flag, "w");
  if (f) fclose(f);
  return 1;
}

static int error_code(void) {
  const char *kind = getenv("KL_FAULT");
  return kind && strcmp(kind, "erofs") == 0 ? EROFS : ENOSPC;
}

static int under_dir(const char *path) {
  const char *dir = getenv("KL_FAULT_DIR");
  return dir && path && strncmp(path, dir, strlen(dir)) == 0;
}

static int fd_under_dir(int fd) {
  char link[64], path[4096];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof(path) - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  return under_dir(path);
}

ssize_t write(int fd, const void *buf, size_t n) {
  static ssize_t (*real)(int, const void *, size_t);
  if (!real)
    real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  if (fd > 2 && fd_under_dir(fd) && active()) {
    errno = error_code();
    return -1;
  }
  return real(fd, buf, n);
}

static int refuse_create(const char *path, int flags) {
  return (flags & (O_WRONLY | O_RDWR | O_CREAT)) && error_code() == EROFS &&
         under_dir(path) && active();
}

int open(const char *path, int flags, ...) {
  static int (*real)(const char *, int, ...);
  if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
  mode_t mode = 0;
  if (flags & O_CREAT) {
    va_list ap;
    va_start(ap, flags);
    mode = (mode_t)va_arg(ap, int);
    va_end(ap);
  }
  if (refuse_create(path, flags)) {
    errno = EROFS;
    return -1;
  }
  return real(path, flags, mode);
}

int mkdir(const char *path, mode_t mode) {
  static int (*real)(const char *, mode_t);
  if (!real) real = (int (*)(const char *, mode_t))dlsym(RTLD_NEXT, "mkdir");
  if (error_code() == EROFS && under_dir(path) && active()) {
    errno = EROFS;
    return -1;
  }
  return real(path, mode);
}
