/* kl-worker: the child process that runs candidate code, compiled into
 * plugins it dlopens. It starts in the sandbox the parent built
 * (libkernlab/core/sandbox.c) and serves requests until the parent goes
 * away (serve.c). */
#include "kernlab/worker_serve.h"

int main(void) {
  return kl_worker_serve(NULL);
}
