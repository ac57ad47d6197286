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
 *   $TMPDIR/kl-<what>-<boot>-<pid namespace>-<pid>-XXXXXX
 *
 * and the first folder a process makes sweeps away, before it, those of
 * makers that are gone: the same user's, made on this machine since it
 * booted (<boot>: the first 8 hex digits of the kernel's boot_id; a
 * $TMPDIR on a shared file system is seen by other machines, whose pids
 * say nothing here), in the same pid namespace (the inode of
 * /proc/self/ns/pid; a container that shares /tmp numbers its processes
 * apart), by a pid no process has (kill(pid, 0) fails with ESRCH). A pid
 * taken again by another process keeps its folder until that one ends
 * too: the sweep errs toward keeping. A folder meant to outlive its maker
 * (the warm Python parent's, which removes its own when it ends idle) is
 * made without these (kl__sandbox_dir_lasting) and never swept; so are
 * folders of the old form, whose maker cannot be told, and all of them
 * where /proc cannot say who this process is. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "sandbox.h"

#define SUFFIX 6     /* mkdtemp's XXXXXX */
#define BOOT 8       /* hex digits of the boot_id */
#define MAX_DEPTH 64 /* folders in folders a removal follows */

/* Remove what the child left in its folder (it may have made anything:
 * folders it cannot list or write to, a chain of folders deep enough to
 * exhaust a recursion), then the folder. Best effort: leftovers are not
 * an error. True when the folder is gone. */
static bool remove_tree(int parent, const char *name, int depth) {
  int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = openat(parent, name, flags);
  /* a folder without read permission (O_NOFOLLOW: not a link) */
  if (fd < 0 && errno == EACCES && fchmodat(parent, name, 0700, 0) == 0)
    fd = openat(parent, name, flags);
  if (fd >= 0) {
    fchmod(fd, 0700); /* entries of a folder without write permission */
    DIR *d = fdopendir(fd);
    struct dirent *e;
    while (d && (e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      if (unlinkat(fd, e->d_name, 0) != 0 &&
          (errno == EISDIR || errno == EPERM) && depth < MAX_DEPTH)
        remove_tree(fd, e->d_name, depth + 1);
    }
    if (d)
      closedir(d);
    else
      close(fd);
  }
  return unlinkat(parent, name, AT_REMOVEDIR) == 0;
}

void kl__sandbox_dir_remove(const char *dir) {
  if (dir) remove_tree(AT_FDCWD, dir, 0);
}

static const char *tmp_root(void) {
  const char *tmp = getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

/* Who this process is, as folder names say it: the boot's 8 hex digits
 * ("0" when unknown) and the pid namespace's inode (0 when unknown). */
static struct {
  char boot[BOOT + 1];
  unsigned long long ns;
} self;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;
static void read_self(void) {
  snprintf(self.boot, sizeof(self.boot), "0");
  char text[64];
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    size_t n = fread(text, 1, BOOT, f);
    fclose(f);
    bool hex = n == BOOT;
    for (size_t i = 0; hex && i < BOOT; i++)
      hex = isxdigit((unsigned char)text[i]) != 0;
    if (hex) {
      for (size_t i = 0; i < BOOT; i++)
        self.boot[i] = (char)tolower((unsigned char)text[i]);
      self.boot[BOOT] = '\0';
    }
  }
  ssize_t n = readlink("/proc/self/ns/pid", text, sizeof(text) - 1);
  if (n > 0) {
    text[n] = '\0';
    const char *open = strchr(text, '[');
    self.ns = open ? strtoull(open + 1, NULL, 10) : 0;
  }
}

/* The field that ends at `end` (exclusive): its start, when it is 1 to
 * `max` characters that `ok` accepts, preceded by a '-' that lies after
 * `floor`; else NULL. */
static const char *field_before(const char *floor, const char *end, size_t max,
                                int (*ok)(int)) {
  const char *p = end;
  while (p > floor && end - p < (ptrdiff_t)max + 1 && ok((unsigned char)p[-1]))
    p--;
  return p < end && end - p <= (ptrdiff_t)max && p - 1 > floor && p[-1] == '-'
             ? p
             : NULL;
}

bool kl__sandbox_dir_owner(const char *name, char boot[9],
                           unsigned long long *ns, long *pid) {
  size_t len = strlen(name);
  if (strncmp(name, "kl-", 3) != 0 || len < 3 + SUFFIX) return false;
  const char *suffix = name + len - SUFFIX;
  /* "kl-" + what + "-": the what is never empty */
  const char *floor = name + 3;
  if (suffix - 1 <= floor || suffix[-1] != '-') return false;
  const char *p = field_before(floor, suffix - 1, 10, isdigit);
  const char *n = p ? field_before(floor, p - 1, 20, isdigit) : NULL;
  const char *b = n ? field_before(floor, n - 1, BOOT, isxdigit) : NULL;
  if (!b || n - 1 - b != BOOT) return false;
  long long v = strtoll(p, NULL, 10);
  if (v <= 0 || v > INT_MAX) return false;
  *pid = (long)v;
  *ns = strtoull(n, NULL, 10);
  memcpy(boot, b, BOOT);
  boot[BOOT] = '\0';
  return *ns > 0;
}

int kl__sandbox_dir_sweep(const char *root) {
  pthread_once(&self_once, read_self);
  if (self.ns == 0 || strlen(self.boot) != BOOT) return 0;
  DIR *d = opendir(root ? root : tmp_root());
  if (!d) return 0;
  int fd = dirfd(d), removed = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    char boot[BOOT + 1];
    unsigned long long ns;
    long pid;
    struct stat st;
    if (!kl__sandbox_dir_owner(e->d_name, boot, &ns, &pid) ||
        strcmp(boot, self.boot) != 0 || ns != self.ns || pid == (long)getpid())
      continue;
    if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
      continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    removed += remove_tree(fd, e->d_name, 0);
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
  pthread_once(&self_once, read_self);
  pthread_once(&swept, sweep_tmp);
  kl_buf b = KL_BUF_INIT;
  if (kl__buf_printf(&b, "%s/kl-%s-%s-%llu-%ld-XXXXXX", tmp_root(), what,
                     self.boot, self.ns, (long)getpid()) < 0)
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
