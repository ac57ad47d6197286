/* The worker's sandbox: what a process running model-written code may do.
 *
 * Applied in the forked child just before exec, so the worker and every
 * plugin it loads inherit it: resource limits (CPU seconds, file size,
 * open files; no core files), no new privileges (set-uid programs it runs
 * gain nothing), a working directory of its own, and, where the kernel has
 * Landlock, no writes anywhere but that directory, /dev (the GPU's device
 * files, /dev/null), /dev/shm and its own /proc entries: the case's ledgers, its runs and the
 * user's files are read-only to it. The address-space limit is the
 * worker's own to set once it knows its plugins are host code (kl-worker's
 * op_load): the CUDA driver reserves address space by the terabyte. Only
 * raw system calls between fork and exec. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../core/internal.h"
#include "sandbox.h"

#define CPU_SECONDS 3600              /* a worker's whole life */
#define FILE_BYTES (1ull << 30)       /* its log and anything it writes */
#define OPEN_FILES 1024

void kl__sandbox_limit(int resource, rlim_t soft, rlim_t hard) {
  struct rlimit now;
  if (getrlimit(resource, &now) != 0)
    return;
  /* only ever lower what the parent already had */
  struct rlimit want = {soft, hard};
  if (now.rlim_max != RLIM_INFINITY && want.rlim_max > now.rlim_max)
    want.rlim_max = now.rlim_max;
  if (now.rlim_cur != RLIM_INFINITY && want.rlim_cur > now.rlim_cur)
    want.rlim_cur = now.rlim_cur;
  if (want.rlim_cur > want.rlim_max)
    want.rlim_cur = want.rlim_max;
  setrlimit(resource, &want);
}

#ifdef LANDLOCK_ACCESS_FS_MAKE_SYM
static int allow_beneath(int ruleset, const char *path, __u64 access) {
  struct landlock_path_beneath_attr pb = {0};
  pb.allowed_access = access;
  pb.parent_fd = open(path, O_PATH | O_CLOEXEC);
  if (pb.parent_fd < 0)
    return 0; /* a path this machine lacks needs no rule */
  int rc = (int)syscall(SYS_landlock_add_rule, ruleset,
                        LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
  close(pb.parent_fd);
  return rc;
}

/* Writes confined to `dir`, /dev and /dev/shm. 0, or -1 where Landlock is
 * missing or refused (the rest of the sandbox still holds). */
static int confine_writes(const char *dir) {
  int abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0,
                         LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1)
    return -1;
  __u64 write = LANDLOCK_ACCESS_FS_WRITE_FILE |
                LANDLOCK_ACCESS_FS_REMOVE_DIR |
                LANDLOCK_ACCESS_FS_REMOVE_FILE |
                LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
                LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
                LANDLOCK_ACCESS_FS_MAKE_FIFO |
                LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
#ifdef LANDLOCK_ACCESS_FS_REFER
  if (abi >= 2)
    write |= LANDLOCK_ACCESS_FS_REFER;
#endif
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
  if (abi >= 3)
    write |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
  struct landlock_ruleset_attr attr = {0};
  attr.handled_access_fs = write;
  int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr,
                             sizeof(attr), 0);
  if (ruleset < 0)
    return -1;
  __u64 dev_write = LANDLOCK_ACCESS_FS_WRITE_FILE;
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
  if (abi >= 3)
    dev_write |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
  int rc = allow_beneath(ruleset, dir, write);
  if (rc == 0)
    rc = allow_beneath(ruleset, "/dev", dev_write);
  if (rc == 0)
    rc = allow_beneath(ruleset, "/dev/shm", write);
  /* the CUDA driver writes to its own /proc entries (cuInit fails with
   * CUDA_ERROR_OPERATING_SYSTEM otherwise); /proc/self is this process's,
   * and Landlock keeps it from ptrace-class access to any process outside
   * the sandbox, the parent included */
  if (rc == 0)
    rc = allow_beneath(ruleset, "/proc/self", write);
  if (rc == 0)
    rc = (int)syscall(SYS_landlock_restrict_self, ruleset, 0);
  close(ruleset);
  return rc;
}
#else
static int confine_writes(const char *dir) {
  (void)dir;
  return -1;
}
#endif

int kl__sandbox_enter(const char *dir) {
  kl__sandbox_limit(RLIMIT_CORE, 0, 0);
  kl__sandbox_limit(RLIMIT_CPU, CPU_SECONDS, CPU_SECONDS + 10);
  kl__sandbox_limit(RLIMIT_FSIZE, FILE_BYTES, FILE_BYTES);
  kl__sandbox_limit(RLIMIT_NOFILE, OPEN_FILES, OPEN_FILES);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return -1;
  if (chdir(dir) != 0)
    return -1;
  return confine_writes(dir) == 0 ? 1 : 0;
}

/* ---- the directory ------------------------------------------------------- */

int kl__sandbox_dir(char **out) {
  const char *tmp = getenv("TMPDIR");
  kl_buf b = KL_BUF_INIT;
  if (kl__buf_printf(&b, "%s/kl-worker-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
    return kl__error_oom();
  if (!mkdtemp(b.ptr)) {
    int rc = kl__error_os(KL_EIO, b.ptr, "cannot make the worker's folder");
    kl_buf_dispose(&b);
    return rc;
  }
  *out = kl__buf_detach(&b);
  return 0;
}

/* Remove what the worker left in its folder (it may have made anything),
 * then the folder. Best effort: a worker's leftovers are not an error. */
static void remove_tree(int parent, const char *name) {
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    DIR *d = fdopendir(fd);
    struct dirent *e;
    while (d && (e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      if (unlinkat(fd, e->d_name, 0) != 0 && (errno == EISDIR || errno == EPERM))
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
  if (dir)
    remove_tree(AT_FDCWD, dir);
}
