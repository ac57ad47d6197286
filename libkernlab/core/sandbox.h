/* The sandbox of every process that runs candidate code (sandbox.c): the
 * worker, which loads and runs candidates, and the compiler, since a
 * candidate's #include or static constructor is candidate code too.
 *
 * The parent prepares one (kl__sandbox_prepare: the child's whole
 * environment, built from an allow-list, and its file rules), forks, and
 * the child enters it (kl__sandbox_enter: only system calls) before it
 * execs with kl__sandbox.envp. */
#ifndef KL_CORE_SANDBOX_H
#define KL_CORE_SANDBOX_H

#include <stdbool.h>
#include <sys/resource.h>

#include "kernlab/common.h"

/* What one sandboxed process may have. */
typedef struct kl__sandbox_spec {
  const char *dir;             /* its own folder: cwd, HOME and TMPDIR,
                                  writable */
  const char *const *writable; /* more folders it may write (NULL-ended) */
  const char *const *readable; /* folders or files it must read even where
                                  they lie in a user's home (NULL-ended) */
  const char *const *env;      /* "NAME=VALUE" set on top (NULL-ended) */
  bool limits;                 /* CPU, file size, open files, no core */
  bool gpu_counters;           /* as root, keep CAP_SYS_ADMIN where the
                                  NVIDIA driver keeps counters to admins */
  bool loopback;               /* a loopback of its own, up: it may serve
                                  and connect on 127.0.0.1 and ::1 of its
                                  own namespace, and reach nothing else
                                  (a server and its benchmark inside);
                                  needs a network namespace */
} kl__sandbox_spec;

typedef struct kl__sandbox {
  char **envp; /* the child's environment, NULL-ended, owned */
  size_t cap_envp;
  char *dir;
  int ruleset; /* Landlock ruleset, -1 when the kernel has none */
  int net;     /* how the network is taken away (sandbox.c) */
  bool limits;
  bool loopback;  /* bring its namespace's loopback up */
  bool drop_caps; /* root: drop every capability but keep_caps */
  unsigned long long keep_caps;
  char describe[192]; /* JSON object: what holds, for the records */
} kl__sandbox;

/* Build a sandbox for one child. KL_ENOMEM; KL_EUNSUPPORTED when this
 * machine can take the network from no process, or a loopback of its own
 * was asked for where only the seccomp filter works (the error says why). */
int kl__sandbox_prepare(kl__sandbox *sb, const kl__sandbox_spec *spec);
void kl__sandbox_dispose(kl__sandbox *sb);
/* In the forked child before exec (system calls only): limits,
 * no_new_privs, no network, the file rules, `dir` as cwd. 0, or -1 when
 * the sandbox could not be entered (the child must not run). */
int kl__sandbox_enter(const kl__sandbox *sb);
/* A prepared sandbox entered by a process other than the one that forked
 * for it: the warm Python worker's parent forks each worker and the child
 * enters the sandbox its client prepared (worker/zygote.c). The wire text
 * is one line (how the network is taken, limits, capabilities, folder);
 * the environment and the Landlock ruleset (a file descriptor) travel
 * beside it. KL_ENOMEM. */
int kl__sandbox_wire(const kl__sandbox *sb, kl_buf *out);
/* In the forked child: enter the sandbox `wire` describes, with `ruleset`
 * (-1: none). 0, or -1 when the text is not a sandbox's or entering failed
 * (the child must not run). System calls only, as kl__sandbox_enter. */
int kl__sandbox_enter_wire(const char *wire, int ruleset);
/* Can nothing inside this sandbox reach an abstract Unix socket of ours?
 * True in a network namespace of its own (abstract names are per
 * namespace) or under Landlock's scope (ABI 6); not under the seccomp
 * filter alone, which leaves AF_UNIX open. */
bool kl__sandbox_walls_abstract_sockets(const kl__sandbox *sb);
/* Set NAME=VALUE in a prepared sandbox's environment (replacing NAME).
 * KL_ENOMEM. */
int kl__sandbox_setenv(kl__sandbox *sb, const char *entry);
/* Is `path` where a sandboxed process may not read unless a rule says
 * (a home, /root, /run/user ...)? */
bool kl__sandbox_hidden(const char *path);
/* What a sandbox of this process holds ({"environment": ..., "network":
 * ..., "files": ...}), as kl__sandbox.describe; static storage. */
const char *kl__sandbox_summary(void);

/* Private folders (sandbox_dir.c). A folder of this process under $TMPDIR
 * (*out: its path), kl-<what>-<boot>-<pid namespace>-<pid>-XXXXXX, which
 * this process removes (kl__sandbox_dir_remove) or, when it is killed
 * first, a later process's first folder sweeps away. */
int kl__sandbox_dir_named(char **out, const char *what);
/* The worker's folder: kl__sandbox_dir_named(out, "worker"). */
int kl__sandbox_dir(char **out);
/* A folder that outlives this process (kl-<what>-XXXXXX): never swept;
 * whoever uses it removes it. */
int kl__sandbox_dir_lasting(char **out, const char *what);
/* Remove the folder and whatever the child left in it (best effort). */
void kl__sandbox_dir_remove(const char *dir);
/* The maker a folder's name records: its boot's 8 hex digits, its pid
 * namespace and its pid; false for any other name. */
bool kl__sandbox_dir_owner(const char *name, char boot[9],
                           unsigned long long *ns, long *pid);
/* Remove the folders in root (NULL: $TMPDIR, else /tmp) whose maker, on
 * this machine since it booted, in this pid namespace and of this user,
 * is gone; how many. */
int kl__sandbox_dir_sweep(const char *root);
/* Set a resource limit to `soft`/`hard`, never above what the process
 * already has (a limit is only ever lowered). */
void kl__sandbox_limit(int resource, rlim_t soft, rlim_t hard);

/* The environment variables a sandboxed process keeps from ours: 1 for
 * NAME, else 0 (a name that says it is a secret never passes). */
bool kl__sandbox_env_allowed(const char *name);

#endif /* KL_CORE_SANDBOX_H */
