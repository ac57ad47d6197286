/* The files a cached plugin's build read (deps.h).
 *
 * The compile runs with -MMD -MF: the compiler writes the headers the
 * kernel's translation unit included as a make rule (system headers left
 * out), at no cost. compile.c adds the files of target.libs, keeps the
 * list beside the entry as <text key>.deps, and names the artifact by the
 * text key and this list's fingerprint. A lookup reads the list the last
 * build left, fingerprints the files as they are now and looks for that
 * name: a header of the case's target.include edited, or a library
 * rebuilt at the same path, gives another name, so the plugin is built
 * again (before, such a change was served the stale plugin, and a
 * candidate that the new header made wrong was accepted). A path is kept
 * as the compiler named it and fingerprinted with where it leads now, so
 * a link moved to another file or folder counts as a change. Small files
 * count by their bytes (a header touched but unchanged costs nothing),
 * large ones, libraries, by their size, time and inode, as make would.
 *
 * Not seen (docs/case-format.md): the headers that only a source of
 * target.libs includes (a compiler writes one rule, the last source's,
 * which is the kernel's), and a header newly made where the compiler would
 * have found it before the one it read. */
#define _GNU_SOURCE /* realpath */
#include "deps.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* a file up to this size counts by its bytes, a larger one by its stat */
#define DEPS_HASHED_BYTES ((off_t)4 << 20)

void kl__deps_dispose(kl__deps *d) {
  for (size_t i = 0; i < d->n; i++)
    kl__free(d->paths[i]);
  kl__free(d->paths);
  d->paths = NULL;
  d->n = 0;
}

static bool under(const char *path, const char *dir) {
  size_t n = dir ? strlen(dir) : 0;
  return n && strncmp(path, dir, n) == 0 && (path[n] == '/' || !path[n]);
}

int kl__deps_add(kl__deps *d, const char *path, const char *skip_dir) {
  char resolved[PATH_MAX];
  if (!*path) return 0;
  if (skip_dir && under(realpath(path, resolved) ? resolved : path, skip_dir))
    return 0;
  for (size_t i = 0; i < d->n; i++)
    if (strcmp(d->paths[i], path) == 0) return 0;
  char **grown = kl__realloc(d->paths, (d->n + 1) * sizeof(char *));
  if (!grown) return kl__error_oom();
  d->paths = grown;
  if (!(d->paths[d->n] = kl__strdup(path))) return kl__error_oom();
  d->n++;
  return 0;
}

/* The next word of a make rule into w: *s moves past it. 0 at the end of
 * the rule (an unescaped newline, or the text's end). */
static int next_word(const char **s, kl_buf *w) {
  const char *p = *s;
  w->size = 0;
  if (w->ptr) w->ptr[0] = '\0';
  for (;;) { /* blanks and line continuations */
    if (*p == ' ' || *p == '\t' || *p == '\r')
      p++;
    else if (p[0] == '\\' && (p[1] == '\n' || (p[1] == '\r' && p[2] == '\n')))
      p += p[1] == '\n' ? 2 : 3;
    else
      break;
  }
  if (!*p || *p == '\n') {
    *s = p;
    return 0;
  }
  while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
    if (p[0] == '\\' && (p[1] == ' ' || p[1] == '#' || p[1] == '\\'))
      p++;
    else if (p[0] == '\\' && p[1] == '\n')
      break;
    else if (p[0] == '$' && p[1] == '$')
      p++;
    kl__buf_putc(w, *p++);
  }
  *s = p;
  return kl__buf_status(w) < 0 ? -1 : 1;
}

int kl__deps_from_make(kl__deps *d, const char *rule, const char *skip_file,
                       const char *skip_dir) {
  char skip[PATH_MAX];
  if (!realpath(skip_file, skip)) snprintf(skip, sizeof(skip), "%s", skip_file);
  kl_buf w = KL_BUF_INIT;
  bool target = true; /* words before the first one ending in ':' */
  int got, rc = 0;
  while (rc == 0 && (got = next_word(&rule, &w)) > 0) {
    if (target) {
      target = w.ptr[w.size - 1] != ':';
      continue;
    }
    /* kl gives the compiler absolute paths only, so a relative name is
     * one of the generated source's #line names ("kernel.cu",
     * "kernlab-harness"), which nvcc lists as files */
    if (w.ptr[0] != '/') continue;
    char resolved[PATH_MAX];
    const char *p = realpath(w.ptr, resolved) ? resolved : w.ptr;
    if (strcmp(p, skip) != 0) rc = kl__deps_add(d, w.ptr, skip_dir);
  }
  if (rc == 0 && got < 0) rc = kl__error_oom();
  kl_buf_dispose(&w);
  return rc;
}

int kl__deps_read(kl__deps *d, const char *path, bool *found) {
  *found = false;
  if (!kl__is_file(path)) return 0;
  kl_buf text = KL_BUF_INIT;
  int rc = kl__read_file(&text, path);
  if (rc == KL_ENOMEM) return rc;
  if (rc < 0) { /* unreadable: as if absent, the build makes it anew */
    kl_error_clear();
    return 0;
  }
  *found = true;
  for (char *line = text.ptr; rc == 0 && line && *line;) {
    char *end = strchr(line, '\n');
    if (end) *end = '\0';
    if (*line) rc = kl__deps_add(d, line, NULL);
    line = end ? end + 1 : NULL;
  }
  kl_buf_dispose(&text);
  return rc;
}

int kl__deps_write(const kl__deps *d, const char *path) {
  kl_buf b = KL_BUF_INIT;
  for (size_t i = 0; i < d->n; i++)
    kl__buf_printf(&b, "%s\n", d->paths[i]);
  int rc = kl__buf_status(&b);
  if (rc == 0) rc = kl__write_file_atomic(path, b.ptr ? b.ptr : "", b.size);
  kl_buf_dispose(&b);
  return rc;
}

int kl__deps_hash(kl__sha256 *h, const kl__deps *d) {
  for (size_t i = 0; i < d->n; i++) {
    const char *p = d->paths[i];
    struct stat st;
    char line[96], resolved[PATH_MAX];
    kl__sha256_update(h, p, strlen(p) + 1);
    if (realpath(p, resolved)) /* where a link leads is part of it */
      kl__sha256_update(h, resolved, strlen(resolved) + 1);
    if (stat(p, &st) != 0) {
      kl__sha256_update(h, "missing\n", 8);
      continue;
    }
    if (S_ISREG(st.st_mode) && st.st_size <= DEPS_HASHED_BYTES) {
      kl_buf text = KL_BUF_INIT;
      int rc = kl__read_file(&text, p);
      if (rc == 0) {
        snprintf(line, sizeof(line), "bytes %zu\n", text.size);
        kl__sha256_update(h, line, strlen(line));
        kl__sha256_update(h, text.ptr ? text.ptr : "", text.size);
        kl_buf_dispose(&text);
        continue;
      }
      kl_buf_dispose(&text);
      if (rc == KL_ENOMEM) return rc;
      kl_error_clear(); /* unreadable now: its stat stands for it */
    }
    snprintf(line, sizeof(line), "stat %lld %lld.%09ld %llu\n",
             (long long)st.st_size, (long long)st.st_mtim.tv_sec,
             (long)st.st_mtim.tv_nsec, (unsigned long long)st.st_ino);
    kl__sha256_update(h, line, strlen(line));
  }
  return 0;
}

bool kl__deps_settled(const kl__deps *d, const struct timespec *since) {
  for (size_t i = 0; i < d->n; i++) {
    struct stat st;
    if (stat(d->paths[i], &st) != 0) continue;
    if (st.st_mtim.tv_sec > since->tv_sec ||
        (st.st_mtim.tv_sec == since->tv_sec &&
         st.st_mtim.tv_nsec >= since->tv_nsec))
      return false;
  }
  return true;
}
