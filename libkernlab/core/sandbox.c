/* The sandbox of a process that runs candidate code (see sandbox.h).
 *
 * Environment. The child's environment is built, never inherited: the
 * variables the toolchain, the CUDA driver and the C library need (PATH,
 * locale, CUDA_* and NVIDIA_*, the loader's and the compiler's search
 * paths, OpenMP and sanitizer settings), a private HOME and TMPDIR, and
 * what the caller adds. A name that says it is a secret (*_API_KEY,
 * *TOKEN*, *SECRET*, *WEBHOOK* ...: kl__secret_name) never passes, even
 * under an allowed prefix.
 *
 * Network. Probed once per process, in a throw-away child, in this order:
 * a network namespace of its own (unshare(CLONE_NEWNET), as root or with
 * CAP_SYS_ADMIN), the same inside a user namespace of its own (an ordinary
 * user where the kernel allows it), else a seccomp filter that refuses
 * socket() for every family but AF_UNIX and AF_NETLINK (the driver's) and
 * io_uring, which could open sockets behind seccomp's back. In a namespace
 * of its own a process has only a loopback device that is down: no
 * address, its host's included, can be reached. Where Landlock has network
 * rules (ABI 4) TCP bind and connect are refused as well. A machine where
 * none of these works runs no candidate code. A sandbox with a loopback of
 * its own (a serving benchmark: a server and its client in one sandbox)
 * brings that device up and leaves TCP to Landlock unhandled: 127.0.0.1 is
 * the namespace's own, and nothing else has a route. It needs a namespace;
 * the seccomp fallback, which refuses inet sockets, cannot give one.
 *
 * Files (Landlock, where the kernel has it). Writes only to the process's
 * own folder, the folders the caller names, /dev and /dev/shm and its own
 * /proc entries. Reads everywhere but where secrets live: the user's home
 * and every home (/root, /home), /run/user (agents' sockets), /run/secrets,
 * /etc/ssh, /etc/shadow and /etc/gshadow; folders the child must read
 * there (the case, the compile cache, a toolchain under the home: every
 * PATH and library-path entry's prefix) are allowed again one by one. So
 * `#include "/home/u/.ssh/id_rsa"` in a candidate is a compile error that
 * shows nothing of the file. Landlock also keeps the child from ptrace-class
 * access to any process outside it (the parent's /proc/PID/environ), and
 * from ABI 6 from signalling one or reaching an abstract socket outside.
 * Landlock allows, never denies, so "all but these" is built as the
 * siblings of every folder on the way down to each denied path.
 *
 * Privileges. No new privileges (set-uid programs it runs gain nothing),
 * and a child of root drops every capability: a root process keeps what
 * Landlock and the namespace take from it only without them (with
 * CAP_SYS_ADMIN it may still read its parent's /proc/PID/environ; with
 * CAP_SYS_MODULE load a kernel module). The worker keeps CAP_SYS_ADMIN
 * alone where the NVIDIA driver lets only admins read GPU counters
 * (RmProfilingAdminOnly); the parent's environment block then shows no
 * secret values (kl__secrets_hide_environ).
 *
 * Limits. CPU seconds, file size, open files; no core files.
 *
 * The parent builds everything (allocation, readdir, realpath); the child
 * between fork and exec makes only system calls. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <net/if.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "sandbox.h"

#define CPU_SECONDS 3600        /* a worker's whole life */
#define FILE_BYTES (1ull << 30) /* its log and anything it writes */
#define OPEN_FILES 1024

extern char **environ;

void kl__sandbox_limit(int resource, rlim_t soft, rlim_t hard) {
  struct rlimit now;
  if (getrlimit(resource, &now) != 0) return;
  /* only ever lower what the parent already had */
  struct rlimit want = {soft, hard};
  if (now.rlim_max != RLIM_INFINITY && want.rlim_max > now.rlim_max)
    want.rlim_max = now.rlim_max;
  if (now.rlim_cur != RLIM_INFINITY && want.rlim_cur > now.rlim_cur)
    want.rlim_cur = now.rlim_cur;
  if (want.rlim_cur > want.rlim_max) want.rlim_cur = want.rlim_max;
  setrlimit(resource, &want);
}

/* ---- the environment ------------------------------------------------------
 */

bool kl__sandbox_env_allowed(const char *name) {
  static const char *const exact[] = {"PATH",
                                      "LANG",
                                      "LANGUAGE",
                                      "TZ",
                                      "USER",
                                      "LOGNAME",
                                      "LD_LIBRARY_PATH",
                                      "LD_PRELOAD",
                                      "CPATH",
                                      "C_INCLUDE_PATH",
                                      "CPLUS_INCLUDE_PATH",
                                      "LIBRARY_PATH",
                                      "NVCC_PREPEND_FLAGS",
                                      "NVCC_APPEND_FLAGS",
                                      "NVCC_CCBIN",
                                      "PYTHONPATH",
                                      "SOURCE_DATE_EPOCH",
                                      "KERNLAB_CUPTI",
                                      "KERNLAB_TRACE",
                                      "KERNLAB_HOST_CHECKS",
                                      "KERNLAB_GATES_OFF",
                                      "KERNLAB_PROFILE_REPLAY"};
  static const char *const prefix[] = {
      "LC_",  "CUDA_", "NVIDIA_", "OMP_",  "GOMP_", "KMP_", "OPENBLAS_",
      "MKL_", "ASAN_", "UBSAN_",  "LSAN_", "MSAN_", "TSAN_"};
  if (kl__secret_name(name)) return false;
  /* a library the driver would load into the worker: the caller's
   * business in its own programs (kl observe), never in the worker */
  if (strcmp(name, "CUDA_INJECTION64_PATH") == 0) return false;
  for (size_t i = 0; i < KL_ARRAY_SIZE(exact); i++)
    if (strcmp(name, exact[i]) == 0) return true;
  for (size_t i = 0; i < KL_ARRAY_SIZE(prefix); i++)
    if (strncmp(name, prefix[i], strlen(prefix[i])) == 0) return true;
  return false;
}

/* The child's environment as it is built: n entries, NULL-ended when
 * done. */
typedef struct env_list {
  char **v;
  size_t n, cap;
} env_list;

/* Add a copy of NAME=VALUE unless NAME is set already (the first setting
 * wins). */
static int envp_add(env_list *l, const char *entry) {
  size_t len = strcspn(entry, "=");
  for (size_t i = 0; i < l->n; i++)
    if (strncmp(l->v[i], entry, len) == 0 && l->v[i][len] == '=') return 0;
  int rc = KL__GROW(l->v, l->cap, l->n + 2);
  if (rc < 0) return rc;
  if (!(l->v[l->n] = kl__strdup(entry))) return kl__error_oom();
  l->v[++l->n] = NULL;
  return 0;
}

static int build_envp(kl__sandbox *sb, const kl__sandbox_spec *spec) {
  env_list l = {NULL, 0, 0};
  kl_buf entry = KL_BUF_INIT;
  int rc = 0;
  /* the caller's settings first: they win over ours and over inherited */
  for (size_t i = 0; spec->env && spec->env[i]; i++)
    if (strchr(spec->env[i], '=') && (rc = envp_add(&l, spec->env[i])) < 0)
      goto fail;
  const char *own[] = {"HOME", "TMPDIR"};
  for (size_t i = 0; spec->dir && i < KL_ARRAY_SIZE(own); i++) {
    entry.size = 0;
    kl__buf_printf(&entry, "%s=%s", own[i], spec->dir);
    if ((rc = kl__buf_status(&entry)) < 0 || (rc = envp_add(&l, entry.ptr)) < 0)
      goto fail;
  }
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    char name[256];
    if (!eq || (size_t)(eq - *e) >= sizeof(name)) continue;
    memcpy(name, *e, (size_t)(eq - *e));
    name[eq - *e] = '\0';
    if (kl__sandbox_env_allowed(name) && (rc = envp_add(&l, *e)) < 0) goto fail;
  }
  if (!l.v && (rc = KL__GROW(l.v, l.cap, 1)) < 0) goto fail;
  l.v[l.n] = NULL;
  kl_buf_dispose(&entry);
  sb->envp = l.v;
  sb->cap_envp = l.cap;
  return 0;
fail:
  kl_buf_dispose(&entry);
  for (size_t i = 0; i < l.n; i++)
    kl__free(l.v[i]);
  kl__free(l.v);
  return rc;
}

/* ---- the network ------------------------------------------------------------
 */

enum { NET_UNKNOWN, NET_NETNS, NET_USERNS, NET_SECCOMP, NET_NONE };
static const char *const net_names[] = {"?", "netns", "userns+netns", "seccomp",
                                        "none"};

/* Decimal digits of v into out (no allocation, no stdio). */
static size_t utoa(char *out, unsigned long v) {
  char tmp[24];
  size_t n = 0, k = 0;
  do
    tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10) && n < sizeof(tmp));
  while (n)
    out[k++] = tmp[--n];
  return k;
}

static int write_proc(const char *path, const char *text, size_t n) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t w = write(fd, text, n);
  close(fd);
  return w == (ssize_t)n ? 0 : -1;
}

/* A user namespace of our own with our ids mapped to themselves, and a
 * network namespace inside it. */
static int enter_userns(void) {
  unsigned long uid = (unsigned long)getuid(), gid = (unsigned long)getgid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) return -1;
  char map[64];
  size_t n = utoa(map, uid);
  map[n++] = ' ';
  n += utoa(map + n, uid);
  memcpy(map + n, " 1\n", 3);
  n += 3;
  if (write_proc("/proc/self/uid_map", map, n) != 0) return -1;
  if (write_proc("/proc/self/setgroups", "deny", 4) != 0 && errno != ENOENT)
    return -1;
  n = utoa(map, gid);
  map[n++] = ' ';
  n += utoa(map + n, gid);
  memcpy(map + n, " 1\n", 3);
  n += 3;
  return write_proc("/proc/self/gid_map", map, n);
}

#if defined(__x86_64__)
#define KL_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define KL_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* socket() only for AF_UNIX and AF_NETLINK; no io_uring; system calls of
 * another architecture (x86's int 0x80, x32) refused outright. */
static int enter_seccomp(void) {
#ifdef KL_AUDIT_ARCH
  struct sock_filter prog[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, KL_AUDIT_ARCH, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#endif
#ifdef __NR_io_uring_setup
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
#endif
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 2, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog fprog = {(unsigned short)KL_ARRAY_SIZE(prog), prog};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) == 0 ? 0 : -1;
#else
  return -1;
#endif
}

static int enter_net(int method) {
  switch (method) {
  case NET_NETNS:
    return unshare(CLONE_NEWNET);
  case NET_USERNS:
    return enter_userns();
  case NET_SECCOMP:
    return enter_seccomp();
  default:
    return -1;
  }
}

/* The namespace's loopback device up (its addresses come with it). */
static int loopback_up(void) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof(ifr));
  memcpy(ifr.ifr_name, "lo", 3);
  int rc = ioctl(s, SIOCGIFFLAGS, &ifr);
  if (rc == 0) {
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    rc = ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  close(s);
  return rc;
}

/* In a child: does `method` take the network away here? */
static bool net_works(int method) {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (enter_net(method) != 0) _exit(1);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s >= 0) {
      /* in a namespace of its own: loopback is down, 127.0.0.1 unreachable */
      struct sockaddr_in a;
      memset(&a, 0, sizeof(a));
      a.sin_family = AF_INET;
      a.sin_port = htons(9);
      a.sin_addr.s_addr = htonl(0x7f000001);
      int c = connect(s, (struct sockaddr *)&a, sizeof(a));
      int why = errno;
      close(s);
      _exit(c != 0 && (why == ENETUNREACH || why == EACCES || why == EPERM)
                ? 0
                : 2);
    }
    _exit(errno == EACCES || errno == EPERM ? 0 : 3);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int net_method = NET_UNKNOWN;

static void probe_net(void) {
  static const int order[] = {NET_NETNS, NET_USERNS, NET_SECCOMP};
  const char *force = getenv("KL_SANDBOX_NET"); /* tests: the fallbacks */
  for (size_t i = 0; i < KL_ARRAY_SIZE(order); i++) {
    if (force && strcmp(force, net_names[order[i]]) != 0) continue;
    if (net_works(order[i])) {
      net_method = order[i];
      return;
    }
  }
  net_method = NET_NONE;
}

/* ---- Landlock
 * ---------------------------------------------------------------- */

/* The ABI's numbers, spelled here so an older <linux/landlock.h> builds a
 * sandbox the running kernel fully supports. */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_REMOVE_DIR (1ull << 4)
#define LL_FS_REMOVE_FILE (1ull << 5)
#define LL_FS_MAKE_CHAR (1ull << 6)
#define LL_FS_MAKE_DIR (1ull << 7)
#define LL_FS_MAKE_REG (1ull << 8)
#define LL_FS_MAKE_SOCK (1ull << 9)
#define LL_FS_MAKE_FIFO (1ull << 10)
#define LL_FS_MAKE_BLOCK (1ull << 11)
#define LL_FS_MAKE_SYM (1ull << 12)
#define LL_FS_REFER (1ull << 13)    /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14) /* ABI 3 */
#define LL_NET_BIND_TCP (1ull << 0) /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ull << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ull << 1)

struct ll_ruleset_attr {
  uint64_t handled_access_fs, handled_access_net, scoped;
};
struct ll_path_beneath {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

static int landlock_abi(void) {
  static int abi = -2;
  if (abi == -2) {
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0,
                     LL_CREATE_RULESET_VERSION);
    abi = v > 0 ? (int)v : 0;
  }
  return abi;
}

static uint64_t write_rights(int abi) {
  uint64_t w = LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE |
               LL_FS_MAKE_CHAR | LL_FS_MAKE_DIR | LL_FS_MAKE_REG |
               LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO | LL_FS_MAKE_BLOCK |
               LL_FS_MAKE_SYM;
  if (abi >= 2) w |= LL_FS_REFER;
  if (abi >= 3) w |= LL_FS_TRUNCATE;
  return w;
}

#define READ_RIGHTS (LL_FS_READ_FILE | LL_FS_READ_DIR)

/* Allow `access` beneath `path` (a file gets the file rights only). A path
 * this machine lacks needs no rule. */
static int allow_path(int ruleset, const char *path, uint64_t access) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
    access &= LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE;
  struct ll_path_beneath pb = {access, fd};
  long rc = access ? syscall(SYS_landlock_add_rule, ruleset,
                             LL_RULE_PATH_BENEATH, &pb, 0)
                   : 0;
  close(fd);
  return rc == 0 ? 0 : -1;
}

/* a is b or an ancestor of b */
static bool covers(const char *a, const char *b) {
  size_t n = strlen(a);
  if (n == 1 && a[0] == '/') return true;
  return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == '/');
}

/* The paths nothing sandboxed reads, resolved, that exist. */
typedef struct path_list {
  char **items;
  size_t n, cap;
} path_list;

static void paths_free(path_list *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->items[i]);
  free(l->items);
  l->items = NULL;
  l->n = 0;
}

static void paths_add(path_list *l, const char *path) {
  char *real = path && path[0] ? realpath(path, NULL) : NULL;
  if (!real) return;
  /* never the whole tree, nor a folder holding the system */
  if (covers(real, "/usr")) {
    free(real);
    return;
  }
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->items[i], real) == 0) {
      free(real);
      return;
    }
  if (!kl__array_reserve(&l->items, &l->cap, l->n + 1, sizeof(*l->items))) {
    free(real); /* a path left out is only a read not denied */
    return;
  }
  l->items[l->n++] = real;
}

static bool denied(const path_list *d, const char *p) {
  for (size_t i = 0; i < d->n; i++)
    if (covers(d->items[i], p)) return true;
  return false;
}

static bool above_denied(const path_list *d, const char *p) {
  for (size_t i = 0; i < d->n; i++)
    if (covers(p, d->items[i]) && strcmp(p, d->items[i]) != 0) return true;
  return false;
}

/* Read access to everything under `path` but the denied paths: the folder
 * whole where nothing below it is denied, else each of its entries. */
static int allow_all_but(int ruleset, const char *path, const path_list *d,
                         int depth) {
  if (denied(d, path)) return 0;
  if (!above_denied(d, path) || depth > 32)
    return allow_path(ruleset, path, READ_RIGHTS);
  DIR *dir = opendir(path);
  if (!dir) return 0;
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(dir))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char child[4096];
    if ((size_t)snprintf(child, sizeof(child), "%s%s%s", path,
                         strcmp(path, "/") ? "/" : "",
                         e->d_name) >= sizeof(child))
      continue;
    struct stat st;
    if (lstat(child, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      /* a link is followed by the rule: allowed only where it leads to
       * nothing denied (/var/run -> /run is reached as /run) */
      char *to = realpath(child, NULL);
      if (to && !denied(d, to) && !above_denied(d, to))
        rc = allow_path(ruleset, child, READ_RIGHTS);
      free(to);
    } else if (S_ISDIR(st.st_mode)) {
      rc = allow_all_but(ruleset, child, d, depth + 1);
    } else {
      rc = allow_path(ruleset, child, READ_RIGHTS);
    }
  }
  closedir(dir);
  return rc;
}

/* A list's entries' prefixes ("/x/venv/bin" -> "/x/venv"): a toolchain
 * under a home reads its include and lib folders beside bin. */
static void allow_search_path(int ruleset, const char *value) {
  for (const char *p = value; p && *p;) {
    size_t len = strcspn(p, ":");
    char entry[4096];
    if (len > 0 && len < sizeof(entry)) {
      memcpy(entry, p, len);
      entry[len] = '\0';
      char *real = realpath(entry, NULL);
      if (real) {
        char *base = strrchr(real, '/');
        if (base && base != real &&
            (strcmp(base, "/bin") == 0 || strcmp(base, "/sbin") == 0 ||
             strcmp(base, "/lib") == 0 || strcmp(base, "/lib64") == 0 ||
             strcmp(base, "/include") == 0))
          *base = '\0';
        allow_path(ruleset, real, READ_RIGHTS);
        free(real);
      }
    }
    p += len + (p[len] == ':');
  }
}

/* The places nothing sandboxed reads (resolved, those that exist). */
static void hidden_places(path_list *deny) {
  paths_add(deny, getenv("HOME"));
  struct passwd pwd, *pw = NULL;
  char pwbuf[4096];
  if (getpwuid_r(getuid(), &pwd, pwbuf, sizeof(pwbuf), &pw) == 0 && pw)
    paths_add(deny, pw->pw_dir);
  static const char *const secret_places[] = {"/root",
                                              "/home",
                                              "/run/user",
                                              "/run/secrets",
                                              "/var/run/secrets",
                                              "/etc/ssh",
                                              "/etc/shadow",
                                              "/etc/gshadow"};
  for (size_t i = 0; i < KL_ARRAY_SIZE(secret_places); i++)
    paths_add(deny, secret_places[i]);
}

bool kl__sandbox_hidden(const char *path) {
  path_list deny = {NULL, 0, 0};
  hidden_places(&deny);
  char *real = realpath(path, NULL);
  bool hidden = real && denied(&deny, real);
  free(real);
  paths_free(&deny);
  return hidden;
}

static int build_ruleset(kl__sandbox *sb, const kl__sandbox_spec *spec) {
  int abi = landlock_abi();
  sb->ruleset = -1;
  if (abi < 1) return 0;
  struct ll_ruleset_attr attr = {READ_RIGHTS | write_rights(abi), 0, 0};
  size_t size = sizeof(uint64_t);
  if (abi >= 4 && !spec->loopback) { /* loopback: the namespace is all */
    attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
    size = sizeof(attr);
  }
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (rs < 0) return 0; /* refused: the rest of the sandbox still holds */
  path_list deny = {NULL, 0, 0};
  hidden_places(&deny);
  int rc = allow_all_but(rs, "/", &deny, 0);
  paths_free(&deny);
  if (rc < 0) goto refused;
  /* what it must read where reading is denied */
  static const char *const search[] = {
      "PATH",           "LD_LIBRARY_PATH",    "CPATH",
      "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH"};
  for (size_t i = 0; i < KL_ARRAY_SIZE(search); i++)
    allow_search_path(rs, getenv(search[i]));
  for (size_t i = 0; spec->readable && spec->readable[i]; i++)
    if ((rc = allow_path(rs, spec->readable[i], READ_RIGHTS)) < 0) goto refused;
  uint64_t rw = READ_RIGHTS | write_rights(abi);
  if (spec->dir && (rc = allow_path(rs, spec->dir, rw)) < 0) goto refused;
  for (size_t i = 0; spec->writable && spec->writable[i]; i++)
    if ((rc = allow_path(rs, spec->writable[i], rw)) < 0) goto refused;
  /* the GPU's device files and /dev/null; shared memory */
  uint64_t dev =
      READ_RIGHTS | LL_FS_WRITE_FILE | (abi >= 3 ? LL_FS_TRUNCATE : 0);
  if ((rc = allow_path(rs, "/dev", dev)) < 0 ||
      (rc = allow_path(rs, "/dev/shm", rw)) < 0)
    goto refused;
  sb->ruleset = rs;
  return 0;
refused:
  close(rs);
  return 0; /* a rule the kernel refused: no Landlock rather than a ruleset
               with a hole in it */
}

/* ---- capabilities
 * ----------------------------------------------------------------- */

/* Does the NVIDIA driver let only admins read GPU counters? */
static bool counters_admin_only(void) {
  kl_buf b = KL_BUF_INIT;
  bool only = false;
  if (kl__read_file(&b, "/proc/driver/nvidia/params") == 0 && b.ptr) {
    const char *p = strstr(b.ptr, "RmProfilingAdminOnly:");
    only = p && strtol(p + strlen("RmProfilingAdminOnly:"), NULL, 10) != 0;
  }
  kl_error_clear();
  kl_buf_dispose(&b);
  return only;
}

/* Every capability but `keep`, from the bounding set too (so an exec'd
 * root program gets no more), and none ambient. */
static int drop_caps(unsigned long long keep) {
  for (int c = 0; c < 64; c++)
    if (!(keep & (1ull << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 &&
        errno != EINVAL)
      return -1;
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  memset(d, 0, sizeof(d));
  d[0].effective = d[0].permitted = (uint32_t)keep;
  d[1].effective = d[1].permitted = (uint32_t)(keep >> 32);
  return syscall(SYS_capset, &h, d) == 0 ? 0 : -1;
}

/* ---- prepare, enter
 * ------------------------------------------------------------ */

static char summary[192];

static void describe(char *out, size_t cap, int net, bool loopback, bool files,
                     bool limits, const char *caps) {
  snprintf(out, cap,
           "{\"environment\":\"allow-list\",\"network\":\"%s%s\","
           "\"files\":\"%s\",\"landlock_abi\":%d,\"capabilities\":\"%s\","
           "\"limits\":%s}",
           net_names[net], loopback ? "+loopback" : "",
           files ? "landlock" : "unconfined", landlock_abi(), caps,
           limits ? "true" : "false");
}

static const char *caps_name(bool dropped, unsigned long long keep) {
  return !dropped ? "unprivileged" : keep ? "sys_admin" : "none";
}

const char *kl__sandbox_summary(void) {
  pthread_once(&probe_once, probe_net);
  if (!summary[0])
    describe(summary, sizeof(summary), net_method, false, landlock_abi() >= 1,
             true, caps_name(geteuid() == 0, 0));
  return summary;
}

void kl__sandbox_dispose(kl__sandbox *sb) {
  if (!sb) return;
  for (char **e = sb->envp; e && *e; e++)
    kl__free(*e);
  kl__free(sb->envp);
  kl__free(sb->dir);
  if (sb->ruleset >= 0) close(sb->ruleset);
  memset(sb, 0, sizeof(*sb));
  sb->ruleset = -1;
}

int kl__sandbox_prepare(kl__sandbox *sb, const kl__sandbox_spec *spec) {
  memset(sb, 0, sizeof(*sb));
  sb->ruleset = -1;
  pthread_once(&probe_once, probe_net);
  if (net_method == NET_NONE)
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_OS,
                     "this machine cannot take the network away from "
                     "candidate code (no network namespace, user namespace "
                     "or seccomp filter works here): nothing is run");
  if (spec->loopback && net_method != NET_NETNS && net_method != NET_USERNS)
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_OS,
                     "a loopback of its own needs a network namespace, and "
                     "this machine gives none (root or user namespaces "
                     "refused); only its seccomp filter works, which refuses "
                     "every inet socket: nothing is run");
  kl__secrets_hide_environ();
  sb->net = net_method;
  sb->loopback = spec->loopback;
  sb->limits = spec->limits;
  sb->drop_caps = geteuid() == 0;
  if (sb->drop_caps && spec->gpu_counters && counters_admin_only())
    sb->keep_caps = 1ull << CAP_SYS_ADMIN;
  if (spec->dir && !(sb->dir = kl__strdup(spec->dir))) return kl__error_oom();
  int rc = build_envp(sb, spec);
  if (rc == 0) rc = build_ruleset(sb, spec);
  if (rc < 0) {
    kl__sandbox_dispose(sb);
    return rc;
  }
  describe(sb->describe, sizeof(sb->describe), sb->net, sb->loopback,
           sb->ruleset >= 0, sb->limits,
           caps_name(sb->drop_caps, sb->keep_caps));
  return 0;
}

int kl__sandbox_setenv(kl__sandbox *sb, const char *entry) {
  size_t len = strcspn(entry, "="), n = 0;
  while (sb->envp && sb->envp[n])
    n++;
  char *copy = kl__strdup(entry);
  if (!copy) return kl__error_oom();
  for (size_t i = 0; i < n; i++)
    if (strncmp(sb->envp[i], entry, len) == 0 && sb->envp[i][len] == '=') {
      kl__free(sb->envp[i]);
      sb->envp[i] = copy;
      return 0;
    }
  if (KL__GROW(sb->envp, sb->cap_envp, n + 2) < 0) {
    kl__free(copy);
    return KL_ENOMEM;
  }
  sb->envp[n] = copy;
  sb->envp[n + 1] = NULL;
  return 0;
}

int kl__sandbox_enter(const kl__sandbox *sb) {
  if (sb->limits) {
    kl__sandbox_limit(RLIMIT_CORE, 0, 0);
    kl__sandbox_limit(RLIMIT_CPU, CPU_SECONDS, CPU_SECONDS + 10);
    kl__sandbox_limit(RLIMIT_FSIZE, FILE_BYTES, FILE_BYTES);
    kl__sandbox_limit(RLIMIT_NOFILE, OPEN_FILES, OPEN_FILES);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  if (enter_net(sb->net) != 0) return -1;
  if (sb->loopback && loopback_up() != 0) return -1;
  if (sb->ruleset >= 0) {
    /* the CUDA driver writes to its own /proc entries (cuInit fails with
     * CUDA_ERROR_OPERATING_SYSTEM otherwise); /proc/self is this child's
     * only here, after the fork */
    if (allow_path(sb->ruleset, "/proc/self",
                   READ_RIGHTS | write_rights(landlock_abi())) != 0)
      return -1;
    if (syscall(SYS_landlock_restrict_self, sb->ruleset, 0) != 0) return -1;
  }
  if (sb->drop_caps && drop_caps(sb->keep_caps) != 0) return -1;
  if (sb->dir && chdir(sb->dir) != 0) return -1;
  return 0;
}

/* ---- entered elsewhere
 * ---------------------------------------------------------- */

#define WIRE_TAG "kl-sandbox/1"

int kl__sandbox_wire(const kl__sandbox *sb, kl_buf *out) {
  /* the folder last: it is the rest of the line, spaces and all */
  return kl__buf_printf(out, WIRE_TAG " %d %d %d %d %llu %s", sb->net,
                        sb->limits ? 1 : 0, sb->loopback ? 1 : 0,
                        sb->drop_caps ? 1 : 0, sb->keep_caps,
                        sb->dir ? sb->dir : "") < 0
             ? KL_ENOMEM
             : 0;
}

int kl__sandbox_enter_wire(const char *wire, int ruleset) {
  int net, limits, loopback, drop, at = -1;
  unsigned long long keep;
  if (sscanf(wire, WIRE_TAG " %d %d %d %d %llu %n", &net, &limits, &loopback,
             &drop, &keep, &at) != 5 ||
      at < 0 || net <= NET_UNKNOWN || net >= NET_NONE)
    return -1;
  kl__sandbox sb;
  memset(&sb, 0, sizeof(sb));
  sb.net = net;
  sb.limits = limits != 0;
  sb.loopback = loopback != 0;
  sb.drop_caps = drop != 0;
  sb.keep_caps = keep;
  sb.ruleset = ruleset;
  sb.dir = wire[at] ? (char *)(wire + at) : NULL; /* read, never freed */
  return kl__sandbox_enter(&sb);
}

bool kl__sandbox_walls_abstract_sockets(const kl__sandbox *sb) {
  return sb->net == NET_NETNS || sb->net == NET_USERNS ||
         (sb->ruleset >= 0 && landlock_abi() >= 6);
}
