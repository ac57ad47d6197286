/* The private folders of sandboxed children, and those a killed process
 * left behind.
 *
 * A process that runs something in a sandbox (a worker, a compiler, a
 * command benchmark) gives it a folder of its own under $TMPDIR, made by
 * mkdtemp, and removes it with whatever the child left in it when the
 * child is done. A process killed before that (an MCP client's cancel is
 * a SIGKILL of the call's kl, and so is the OOM killer's) cannot, and a
 * day of use left thousands of empty folders in /tmp. So the name says
 * whose a folder is:
 *
 *   $TMPDIR/kl-<what>-<pid namespace>-<pid>-XXXXXX
 *
 * and the first folder a process makes sweeps away, before it, those of
 * makers that are gone: the same user's, made in the same pid namespace
 * (the inode of /proc/self/ns/pid; a container that shares /tmp numbers
 * its processes apart, so its pids say nothing here), by a pid no process
 * has (kill(pid, 0) fails with ESRCH). A pid taken again by another
 * process keeps its folder until that one ends too: the sweep errs toward
 * keeping. A folder meant to outlive its maker (the warm Python parent's,
 * which removes its own when it ends idle) is made without the pid
 * (kl__sandbox_dir_lasting) and never swept; so are folders of the old
 * form, whose maker cannot be told. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "sandbox.h"

#define SUFFIX 6 /* mkdtemp's XXXXXX */

/* Remove what the child left in its folder (it may have made anything),
 * then the folder. Best effort: leftovers are not an error. */
static void remove_tree(int parent, const char *name) {
  int fd =
      openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    DIR *d = fdopendir(fd);
    struct dirent *e;
    while (d && (e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      if (unlinkat(fd, e->d_name, 0) != 0 &&
          (errno == EISDIR || errno == EPERM))
        remove_tree(fd, e->d_name);
    }
    if (d)
      closedir(d);
    else
      close(fd);
  }
  unlinkat(parent, name, AT_REMOVEDIR);
}

void kl__sandbox_dir_remove(const char *dir) {
  if (dir) remove_tree(AT_FDCWD, dir);
}

static const char *tmp_root(void) {
  const char *tmp = getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

/* This process's pid namespace, as the inode /proc names it; 0 when
 * /proc cannot say (then nothing is swept). */
static unsigned long long pid_namespace(void) {
  char link[64];
  ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
  if (n <= 0) return 0;
  link[n] = '\0';
  const char *open = strchr(link, '[');
  return open ? strtoull(open + 1, NULL, 10) : 0;
}

/* The digits that end at `end` (exclusive), preceded by a '-' after
 * `floor`: their start, or NULL. */
static const char *digits_before(const char *floor, const char *end) {
  const char *p = end;
  while (p > floor && isdigit((unsigned char)p[-1]))
    p--;
  return p < end && end - p <= 20 && p - 1 > floor && p[-1] == '-' ? p : NULL;
}

bool kl__sandbox_dir_owner(const char *name, unsigned long long *ns,
                           long *pid) {
  size_t len = strlen(name);
  if (strncmp(name, "kl-", 3) != 0 || len < 3 + 2 + 2 + 2 + SUFFIX)
    return false;
  const char *suffix = name + len - SUFFIX;
  if (suffix[-1] != '-') return false;
  /* "kl-" + what + "-": the what is never empty */
  const char *floor = name + 4;
  const char *p = digits_before(floor, suffix - 1);
  const char *n = p ? digits_before(floor, p - 1) : NULL;
  if (!n) return false;
  *pid = strtol(p, NULL, 10);
  *ns = strtoull(n, NULL, 10);
  return *pid > 0 && *ns > 0;
}

int kl__sandbox_dir_sweep(const char *root) {
  unsigned long long ns = pid_namespace();
  if (ns == 0) return 0;
  DIR *d = opendir(root ? root : tmp_root());
  if (!d) return 0;
  int fd = dirfd(d), removed = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    unsigned long long owner_ns;
    long pid;
    struct stat st;
    if (!kl__sandbox_dir_owner(e->d_name, &owner_ns, &pid) || owner_ns != ns ||
        pid == (long)getpid())
      continue;
    if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
      continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    remove_tree(fd, e->d_name);
    removed++;
  }
  closedir(d);
  return removed;
}

static pthread_once_t swept = PTHREAD_ONCE_INIT;
static void sweep_tmp(void) {
  kl__sandbox_dir_sweep(NULL);
}

/* mkdtemp of root/name, resolved: the child's rules and paths must name
 * it as the kernel does. */
static int make_dir(char **out, kl_buf *path) {
  if (!mkdtemp(path->ptr)) {
    int rc = kl__error_os(KL_EIO, path->ptr, "cannot make a private folder");
    kl_buf_dispose(path);
    return rc;
  }
  char *real = realpath(path->ptr, NULL);
  if (real) {
    kl_buf_dispose(path);
    *out = kl__strdup(real);
    free(real);
    return *out ? 0 : kl__error_oom();
  }
  *out = kl__buf_detach(path);
  return 0;
}

int kl__sandbox_dir_named(char **out, const char *what) {
  pthread_once(&swept, sweep_tmp);
  kl_buf b = KL_BUF_INIT;
  if (kl__buf_printf(&b, "%s/kl-%s-%llu-%ld-XXXXXX", tmp_root(), what,
                     pid_namespace(), (long)getpid()) < 0)
    return kl__error_oom();
  return make_dir(out, &b);
}

int kl__sandbox_dir_lasting(char **out, const char *what) {
  kl_buf b = KL_BUF_INIT;
  if (kl__buf_printf(&b, "%s/kl-%s-XXXXXX", tmp_root(), what) < 0)
    return kl__error_oom();
  return make_dir(out, &b);
}

int kl__sandbox_dir(char **out) {
  return kl__sandbox_dir_named(out, "worker");
}
