/* LD_PRELOAD shim for the fault tests: once the file named by
 * $KL_FAULT_FLAG exists, writes to files under $KL_FAULT_DIR fail as on a
 * full disk (KL_FAULT=enospc) or a read-only file system (KL_FAULT=erofs,
 * which also refuses to create files and folders there). Removing the flag
 * file is "space is back". Built by test_faults.py with the system cc. */
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

static int active(void) {
  const char *flag = getenv("KL_FAULT_FLAG");
  return flag && access(flag, F_OK) == 0;
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
  if (fd > 2 && active() && fd_under_dir(fd)) {
    errno = error_code();
    return -1;
  }
  return real(fd, buf, n);
}

static int refuse_create(const char *path, int flags) {
  return (flags & (O_WRONLY | O_RDWR | O_CREAT)) && active() &&
         error_code() == EROFS && under_dir(path);
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
  if (active() && error_code() == EROFS && under_dir(path)) {
    errno = EROFS;
    return -1;
  }
  return real(path, mode);
}
