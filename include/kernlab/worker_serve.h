/* kl-worker's request loop, callable in process.
 *
 * libkernlab-worker.so (installed in libexec/kernlab, not a part of
 * libkernlab) exports two functions: the loop kl-worker runs, for a process
 * that makes its plugins itself, and the sandbox's entry for a worker
 * forked by the warm Python worker's parent. The Python worker is one: it
 * builds a kl_plugin from a case's Python module and its candidates (ctypes
 * callbacks) and calls kl_worker_serve, so its candidates are checked,
 * sampled and timed by the same C code as compiled ones: the CUPTI
 * activity timer, the sampler, the statistics. */
#ifndef KERNLAB_WORKER_SERVE_H
#define KERNLAB_WORKER_SERVE_H

#include <stddef.h>

#include "kernlab/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Makes the plugin a "load" request names. NULL, with why in err, when it
 *  cannot. */
typedef const kl_plugin *(*kl_plugin_loader)(const char *path, char *err,
                                             size_t errlen);

/** Reads requests from fd 3 and answers them (load, check, time, profile,
 *  device; kl-worker/serve.c lists them) until the parent goes away or
 *  says quit; returns 0 then. `load` makes the plugins (NULL: dlopen the
 *  path, as kl-worker does). */
int kl_worker_serve(kl_plugin_loader load);

/** In a process forked to become a worker (not exec'd): enter the sandbox
 *  a client prepared, from its wire text and its Landlock ruleset's file
 *  descriptor (-1: none). 0, or -1 when it cannot (the process must not
 *  serve). */
int kl_worker_enter_sandbox(const char *wire, int ruleset);

#ifdef __cplusplus
}
#endif

#endif /* KERNLAB_WORKER_SERVE_H */
