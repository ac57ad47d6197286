/* Files and paths: existence, whole-file reads and writes, folder
 * listings, joining and splitting paths, mkdir -p, the compile cache's
 * default place. Failures are reported with the path and the reason. */
#define _GNU_SOURCE /* gettid */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* ---- files -------------------------------------------------------------- */

bool kl__is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool kl__is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int kl__list_dir(char ***out, size_t *count, const char *dir,
                 const char *suffix, const char *what) {
  *out = NULL;
  *count = 0;
  DIR *d = opendir(dir);
  if (!d)
    return kl__error_os(errno == ENOENT ? KL_ENOTFOUND : KL_EIO, dir, what);
  char **names = NULL;
  size_t n = 0, cap = 0, slen = strlen(suffix);
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len <= slen || e->d_name[0] == '.' ||
        strcmp(e->d_name + len - slen, suffix) != 0)
      continue;
    if (KL__GROW(names, cap, n + 1) < 0 ||
        !(names[n] = kl__strdup(e->d_name))) {
      closedir(d);
      kl__names_free(names, n);
      return kl__error_oom();
    }
    n++;
  }
  closedir(d);
  if (n > 1) qsort(names, n, sizeof(*names), cmp_names);
  *out = names;
  *count = n;
  return 0;
}

int kl__read_file(kl_buf *out, const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return kl__error_os(kl__errno_code(errno, false), path, "cannot open");
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return kl__error(KL_EINVALID, KL_DOMAIN_OS, "%s: is a folder, not a file",
                     path);
  }
  int rc = 0;
  for (;;) {
    if ((rc = kl__buf_grow(out, 65536)) < 0) break;
    out->ptr[out->size] = '\0'; /* an empty file reads as "" */
    ssize_t n = read(fd, out->ptr + out->size, out->reserved - out->size - 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      rc = kl__error_os(KL_EIO, path, "cannot read");
      break;
    }
    if (n == 0) break;
    out->size += (size_t)n;
    out->ptr[out->size] = '\0';
  }
  close(fd);
  return rc;
}

int kl__write_all(int fd, const char *data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    data += w;
    n -= (size_t)w;
  }
  return 0;
}

int kl__write_new_file(const char *path, const char *data, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return kl__error_os(errno == EEXIST ? KL_EEXISTS
                                        : kl__errno_code(errno, true),
                        path, "cannot create");
  if (kl__write_all(fd, data, n) < 0) {
    int rc = kl__error_os(KL_EIO, path, "cannot write");
    close(fd);
    return rc;
  }
  if (close(fd) < 0) return kl__error_os(KL_EIO, path, "cannot write");
  return 0;
}

char *kl__path_join(const char *a, const char *b) {
  if (b[0] == '/' || !a || !a[0] || strcmp(a, ".") == 0) return kl__strdup(b);
  size_t la = strlen(a);
  kl_buf out = KL_BUF_INIT;
  if (kl__buf_put(&out, a, la) < 0 ||
      (a[la - 1] != '/' && kl__buf_putc(&out, '/') < 0) ||
      kl__buf_puts(&out, b) < 0) {
    kl_buf_dispose(&out);
    return NULL;
  }
  return kl__buf_detach(&out);
}

char *kl__path_absolute(const char *path) {
  if (path[0] == '/') return kl__strdup(path);
  char *cwd = getcwd(NULL, 0);
  if (!cwd) return NULL;
  char *out =
      strcmp(path, ".") == 0 ? kl__strdup(cwd) : kl__path_join(cwd, path);
  free(cwd);
  return out;
}

char *kl__path_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return kl__strdup(".");
  if (slash == path) return kl__strdup("/");
  return kl__strndup(path, (size_t)(slash - path));
}

int kl__mkdir_p(const char *path) {
  char *p = kl__strdup(path);
  if (!p) return kl__error_oom();
  int rc = 0;
  for (char *q = p + 1;; q++) {
    if (*q != '/' && *q != '\0') continue;
    char saved = *q;
    *q = '\0';
    if (mkdir(p, 0755) < 0 && errno != EEXIST) {
      rc = kl__error_os(KL_EIO, p, "cannot create folder");
      break;
    }
    *q = saved;
    if (saved == '\0') break;
  }
  kl__free(p);
  if (rc == 0 && !kl__is_dir(path))
    rc =
        kl__error(KL_EIO, KL_DOMAIN_OS, "%s: exists and is not a folder", path);
  return rc;
}

int kl__cache_dir_default(kl_buf *out) {
  const char *env;
  int rc;
  if ((env = getenv("KERNLAB_CACHE_DIR")) && env[0])
    rc = kl__buf_puts(out, env);
  else if ((env = getenv("XDG_CACHE_HOME")) && env[0])
    rc = kl__buf_printf(out, "%s/kernlab", env);
  else if ((env = getenv("HOME")) && env[0])
    rc = kl__buf_printf(out, "%s/.cache/kernlab", env);
  else
    rc = kl__buf_printf(out, "/tmp/kernlab-cache-%ld", (long)getuid());
  return rc < 0 ? kl__error_oom() : 0;
}

int kl__write_file_atomic(const char *path, const char *data, size_t n) {
  return kl__write_file_atomic_with(path, data, n, NULL);
}

int kl__write_file_atomic_with(const char *path, const char *data, size_t n,
                               void (*first)(int fd, const char *data,
                                             size_t n)) {
  kl_buf tmp = KL_BUF_INIT;
  if (kl__buf_printf(&tmp, "%s.tmp.%ld.%ld", path, (long)getpid(),
                     (long)gettid()) < 0)
    return kl__error_oom();
  int fd = open(tmp.ptr, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int rc = 0;
  if (fd < 0)
    rc = kl__error_os(KL_EIO, tmp.ptr, "open");
  else {
    if (first) first(fd, data, n);
    if (kl__write_all(fd, data, n) < 0)
      rc = kl__error_os(KL_EIO, tmp.ptr, "write");
    else if (fsync(fd) < 0)
      rc = kl__error_os(KL_EIO, tmp.ptr, "fsync");
    if (close(fd) < 0 && rc == 0) rc = kl__error_os(KL_EIO, tmp.ptr, "close");
    if (rc == 0 && rename(tmp.ptr, path) < 0)
      rc = kl__error_os(KL_EIO, path, "rename");
    if (rc < 0) unlink(tmp.ptr);
  }
  kl_buf_dispose(&tmp);
  return rc;
}

/* A compiler's library folder, found from where it is on PATH (or its
 * path): <bin>/../lib64, resolved; NULL when there is none. For nvcc, the
 * CUDA toolkit's libraries (cuBLAS among them). */
char *kl__tool_lib_dir(const char *compiler) {
  char found[PATH_MAX];
  if (strchr(compiler, '/')) {
    snprintf(found, sizeof(found), "%s", compiler);
  } else {
    const char *path = getenv("PATH");
    found[0] = '\0';
    for (const char *p = path; p && *p && !found[0];) {
      size_t len = strcspn(p, ":");
      char cand[PATH_MAX];
      snprintf(cand, sizeof(cand), "%.*s/%s", (int)len, p, compiler);
      if (access(cand, X_OK) == 0) snprintf(found, sizeof(found), "%s", cand);
      p += len + (p[len] == ':');
    }
  }
  char real[PATH_MAX];
  if (!found[0] || !realpath(found, real)) return NULL;
  char *bin = kl__path_dir(real);
  char *lib = bin ? kl__path_join(bin, "../lib64") : NULL;
  kl__free(bin);
  if (lib && !realpath(lib, real)) {
    kl__free(lib);
    return NULL;
  }
  kl__free(lib);
  return kl__strdup(real);
}
