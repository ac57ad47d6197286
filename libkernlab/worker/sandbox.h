/* The worker's sandbox (sandbox.c): shared by the client, which enters it
 * in the forked child, and kl-worker, which lowers its own address space
 * once it knows its plugins are host code. */
#ifndef KL_WORKER_SANDBOX_H
#define KL_WORKER_SANDBOX_H

#include <sys/resource.h>

/* A private folder under $TMPDIR for one worker (*out: its path). */
int kl__sandbox_dir(char **out);
/* Remove the folder and whatever the worker left in it (best effort). */
void kl__sandbox_dir_remove(const char *dir);
/* In the forked child before exec: limits, no_new_privs, `dir` as cwd and,
 * where the kernel allows, Landlock. 1 with writes confined, 0 without,
 * -1 when the sandbox could not be entered (the child must not run). */
int kl__sandbox_enter(const char *dir);
/* Set a resource limit to `soft`/`hard`, never above what the process
 * already has (a limit is only ever lowered). */
void kl__sandbox_limit(int resource, rlim_t soft, rlim_t hard);

#endif /* KL_WORKER_SANDBOX_H */
