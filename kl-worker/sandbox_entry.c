/* The sandbox, entered from Python: the warm Python worker's parent
 * (kl_pyworker.py --zygote) forks each worker from an interpreter that has
 * torch and triton imported, and the child enters here the sandbox its
 * client prepared (libkernlab/worker/zygote.c sends it; core/sandbox.c
 * owns the wire text) before it serves. */
#include "kernlab/worker_serve.h"
#include "../libkernlab/core/sandbox.h"

__attribute__((visibility("default"))) int
kl_worker_enter_sandbox(const char *wire, int ruleset) {
  return kl__sandbox_enter_wire(wire, ruleset);
}
