/** @file kernlab/kernlab.h  The umbrella header: include this one.
 *
 * kernlab is a lab for making GPU kernels faster without fooling yourself.
 *
 * Threading: a handle (kl_vars, kl_worker, kl_run, kl_executor, kl_llm,
 * kl_webhook; each header says its own) is used by one thread at a time.
 * Immutable objects (kl_case, kl_expr, a loaded kl_rules) may be shared
 * between threads once created. The last error is kept per thread.
 * kl_init/kl_shutdown are reference-counted and thread-safe. CUPTI is
 * process-wide, so there is at most one profiler per process.
 */
#ifndef KERNLAB_H
#define KERNLAB_H

#include "common.h"
#include "expr.h"
#include "case.h"
#include "harness.h"
#include "compile.h"
#include "stats.h"
#include "worker.h"
#include "bench.h"
#include "profile.h"
#include "rules.h"
#include "prompt.h"
#include "transport.h"
#include "llm.h"
#include "run.h"
#include "history.h"
#include "knowledge.h"
#include "webhook.h"
#include "observe.h"
#include "serve.h"
#include "mcp.h"
#include "executor.h"

#endif /* KERNLAB_H */
