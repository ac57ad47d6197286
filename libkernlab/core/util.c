/* Allocation with a test hook, kl_buf building, files and strings.
 *
 * All library allocations go through kl__malloc and friends so that the
 * out-of-memory tests can fail the n-th one and walk every error path. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

double kl__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- allocation --------------------------------------------------------- */

static _Thread_local long alloc_count, alloc_fail_at;

static bool alloc_should_fail(void) {
  alloc_count++;
  return alloc_fail_at > 0 && alloc_count >= alloc_fail_at;
}

long kl__alloc_fail_after(long n) {
  long ran = alloc_count;
  alloc_count = 0;
  alloc_fail_at = n;
  return ran;
}

void *kl__malloc(size_t n) {
  return alloc_should_fail() ? NULL : malloc(n ? n : 1);
}

void *kl__calloc(size_t count, size_t size) {
  return alloc_should_fail() ? NULL : calloc(count ? count : 1, size ? size : 1);
}

void *kl__realloc(void *p, size_t n) {
  return alloc_should_fail() ? NULL : realloc(p, n ? n : 1);
}

char *kl__strndup(const char *s, size_t n) {
  char *p = kl__malloc(n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

char *kl__strdup(const char *s) {
  return s ? kl__strndup(s, strlen(s)) : NULL;
}

void kl__free(void *p) {
  free(p);
}

/* ---- buffers ------------------------------------------------------------ */

int kl_buf_set(kl_buf *b, const char *data, size_t n) {
  char *copy = kl__malloc(n + 1);
  if (!copy)
    return kl__error_oom();
  if (n)
    memcpy(copy, data, n);
  copy[n] = '\0';
  kl_buf_dispose(b);
  b->ptr = copy;
  b->size = n;
  b->reserved = n + 1;
  return 0;
}

void kl_buf_dispose(kl_buf *b) {
  if (!b)
    return;
  kl__free(b->ptr);
  b->ptr = NULL;
  b->size = b->reserved = 0;
}

int kl__buf_grow(kl_buf *b, size_t extra) {
  if (b->size + extra + 1 <= b->reserved)
    return 0;
  size_t want = b->reserved ? b->reserved : 64;
  while (want < b->size + extra + 1) {
    if (want > SIZE_MAX / 2)
      return kl__error_oom();
    want *= 2;
  }
  char *p = kl__realloc(b->ptr, want);
  if (!p)
    return kl__error_oom();
  b->ptr = p;
  b->reserved = want;
  return 0;
}

int kl__buf_put(kl_buf *b, const char *s, size_t n) {
  if (kl__buf_grow(b, n) < 0)
    return KL_ENOMEM;
  if (n)
    memcpy(b->ptr + b->size, s, n);
  b->size += n;
  b->ptr[b->size] = '\0';
  return 0;
}

int kl__buf_puts(kl_buf *b, const char *s) {
  return kl__buf_put(b, s, strlen(s));
}

int kl__buf_putc(kl_buf *b, char c) {
  return kl__buf_put(b, &c, 1);
}

int kl__buf_vprintf(kl_buf *b, const char *fmt, va_list ap) {
  va_list cp;
  va_copy(cp, ap);
  int n = vsnprintf(NULL, 0, fmt, cp);
  va_end(cp);
  if (n < 0)
    return kl__error(KL_ERROR, KL_DOMAIN_NONE, "bad format '%s'", fmt);
  if (kl__buf_grow(b, (size_t)n) < 0)
    return KL_ENOMEM;
  vsnprintf(b->ptr + b->size, (size_t)n + 1, fmt, ap);
  b->size += (size_t)n;
  return 0;
}

int kl__buf_printf(kl_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = kl__buf_vprintf(b, fmt, ap);
  va_end(ap);
  return rc;
}

int kl__buf_json_string(kl_buf *b, const char *s) {
  if (!s)
    return kl__buf_puts(b, "null");
  int rc = kl__buf_putc(b, '"');
  for (const unsigned char *p = (const unsigned char *)s; rc == 0 && *p; p++) {
    switch (*p) {
    case '"': rc = kl__buf_puts(b, "\\\""); break;
    case '\\': rc = kl__buf_puts(b, "\\\\"); break;
    case '\n': rc = kl__buf_puts(b, "\\n"); break;
    case '\r': rc = kl__buf_puts(b, "\\r"); break;
    case '\t': rc = kl__buf_puts(b, "\\t"); break;
    default:
      if (*p < 0x20)
        rc = kl__buf_printf(b, "\\u%04x", *p);
      else
        rc = kl__buf_putc(b, (char)*p);
    }
  }
  return rc ? rc : kl__buf_putc(b, '"');
}

char *kl__buf_detach(kl_buf *b) {
  char *p = b->ptr;
  if (!p)
    p = kl__strdup("");
  b->ptr = NULL;
  b->size = b->reserved = 0;
  return p;
}

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

char **kl__strv_dup(const char *const *v) {
  size_t n = 0;
  while (v && v[n])
    n++;
  char **out = kl__calloc(n + 1, sizeof(*out));
  for (size_t i = 0; out && i < n; i++)
    if (!(out[i] = kl__strdup(v[i]))) {
      kl__strv_free(out);
      return NULL;
    }
  return out;
}

void kl__strv_free(char **v) {
  for (size_t i = 0; v && v[i]; i++)
    kl__free(v[i]);
  kl__free(v);
}

void kl__names_free(char **names, size_t n) {
  for (size_t i = 0; names && i < n; i++)
    kl__free(names[i]);
  kl__free(names);
}

int kl__list_dir(char ***out, size_t *count, const char *dir,
                 const char *suffix, const char *what) {
  *out = NULL;
  *count = 0;
  DIR *d = opendir(dir);
  if (!d)
    return kl__error_os(errno == ENOENT ? KL_ENOTFOUND : KL_EIO, dir, what);
  char **names = NULL;
  size_t n = 0, slen = strlen(suffix);
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len <= slen || e->d_name[0] == '.' ||
        strcmp(e->d_name + len - slen, suffix) != 0)
      continue;
    char **more = kl__realloc(names, (n + 1) * sizeof(*more));
    if (!more || !(more[n] = kl__strdup(e->d_name))) {
      closedir(d);
      kl__names_free(more ? more : names, n);
      return kl__error_oom();
    }
    names = more;
    n++;
  }
  closedir(d);
  if (n > 1)
    qsort(names, n, sizeof(*names), cmp_names);
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
    if ((rc = kl__buf_grow(out, 65536)) < 0)
      break;
    ssize_t n = read(fd, out->ptr + out->size, out->reserved - out->size - 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      rc = kl__error_os(KL_EIO, path, "cannot read");
      break;
    }
    if (n == 0)
      break;
    out->size += (size_t)n;
    out->ptr[out->size] = '\0';
  }
  close(fd);
  return rc;
}

uint64_t kl__derive_seed(uint64_t base, uint64_t k) {
  uint64_t z = base + k * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) | 1;
}

int kl__write_all(int fd, const char *data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
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
  if (close(fd) < 0)
    return kl__error_os(KL_EIO, path, "cannot write");
  return 0;
}

char *kl__path_join(const char *a, const char *b) {
  if (b[0] == '/' || !a || !a[0] || strcmp(a, ".") == 0)
    return kl__strdup(b);
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

char *kl__path_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    return kl__strdup(".");
  if (slash == path)
    return kl__strdup("/");
  return kl__strndup(path, (size_t)(slash - path));
}

/* ---- strings ------------------------------------------------------------ */

bool kl__is_ident(const char *s) {
  if (!s || !(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
    return false;
  for (s++; *s; s++)
    if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
          (*s >= '0' && *s <= '9')))
      return false;
  return true;
}

/* Optimal string alignment distance: insertions, deletions, substitutions
 * and transpositions of neighbours ("mni" is one step from "min"). */
size_t kl__edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64)
    return la > lb ? la : lb;
  size_t d[65][65];
  for (size_t i = 0; i <= la; i++)
    d[i][0] = i;
  for (size_t j = 0; j <= lb; j++)
    d[0][j] = j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      size_t best = d[i - 1][j - 1] + cost;
      if (d[i - 1][j] + 1 < best)
        best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best)
        best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[la][lb];
}

const char *kl__suggest(const char *word, const char *const *candidates,
                        size_t n) {
  const char *best = NULL;
  size_t best_d = (size_t)-1;
  size_t limit = strlen(word) <= 3 ? 1 : 2;
  for (size_t i = 0; i < n; i++) {
    size_t d = kl__edit_distance(word, candidates[i]);
    if (d < best_d) {
      best_d = d;
      best = candidates[i];
    }
  }
  return best_d <= limit ? best : NULL;
}

int kl__mkdir_p(const char *path) {
  char *p = kl__strdup(path);
  if (!p)
    return kl__error_oom();
  int rc = 0;
  for (char *q = p + 1;; q++) {
    if (*q != '/' && *q != '\0')
      continue;
    char saved = *q;
    *q = '\0';
    if (mkdir(p, 0755) < 0 && errno != EEXIST) {
      rc = kl__error_os(KL_EIO, p, "cannot create folder");
      break;
    }
    *q = saved;
    if (saved == '\0')
      break;
  }
  kl__free(p);
  if (rc == 0 && !kl__is_dir(path))
    rc = kl__error(KL_EIO, KL_DOMAIN_OS, "%s: exists and is not a folder",
                   path);
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
