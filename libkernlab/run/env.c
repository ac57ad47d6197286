/* The environment a run records with every iteration: the GPU and its
 * driver, the toolkit, the host, kernlab's version, and the sandbox its
 * candidates ran in. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../bench/bench_internal.h"
#include "../core/sandbox.h"
#include "run_internal.h"

/* The first line of `prog --version` that names a release (nvcc's "release
 * 13.0, V13.0.48"), else its first line. */
static char *tool_version(const char *prog) {
  const char *argv[] = {prog, "--version", NULL};
  kl__run_result res;
  memset(&res, 0, sizeof(res));
  if (kl__run(&res, argv, NULL, 10000, 1 << 16) < 0 || !res.output.ptr) {
    kl_error_clear();
    kl_buf_dispose(&res.output);
    return NULL;
  }
  const char *text = res.output.ptr, *pick = NULL;
  size_t pick_len = 0;
  for (const char *line = text; *line;) {
    size_t len = strcspn(line, "\n");
    if (len && (!pick || memmem(line, len, "release", 7))) {
      bool release = memmem(line, len, "release", 7) != NULL;
      pick = line;
      pick_len = len;
      if (release) break;
    }
    line += len + (line[len] == '\n');
  }
  char *out = pick ? kl__strndup(pick, pick_len) : NULL;
  kl_buf_dispose(&res.output);
  return out;
}

/* The NVIDIA kernel module's version ("580.159.04"), or NULL. */
static char *driver_version(void) {
  kl_buf b = KL_BUF_INIT;
  if (kl__read_file(&b, "/proc/driver/nvidia/version") < 0) {
    kl_error_clear();
    return NULL;
  }
  char *out = NULL;
  const char *p = b.ptr ? strstr(b.ptr, "Kernel Module") : NULL;
  if (p) {
    p += strlen("Kernel Module");
    while (*p == ' ' || *p == '\t')
      p++;
    size_t n = strcspn(p, " \t\n");
    out = kl__strndup(p, n);
  }
  kl_buf_dispose(&b);
  return out;
}

int kl__run_environment(kl_run *r, const kl_report *rep) {
  if (r->env_json) return 0;
  kl_device_info dev = KL_DEVICE_INFO_INIT;
  bool has_dev = rep && kl_report_device(&dev, rep) == 0;
  const char *compiler = kl_case_compiler(r->c);
  char *tool =
      tool_version(compiler                                     ? compiler
                   : kl_case_backend(r->c) == KL_BACKEND_CUDA   ? "nvcc"
                   : kl_case_backend(r->c) == KL_BACKEND_PYTHON ? "python3"
                                                                : "cc");
  char *drv = has_dev ? driver_version() : NULL;
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "{\"gpu\":");
  kl__buf_json_string(&b, has_dev ? dev.name : NULL);
  kl__buf_puts(&b, ",\"driver\":");
  kl__buf_json_string(&b, drv);
  kl__buf_puts(&b, ",\"toolkit\":");
  kl__buf_json_string(&b, tool);
  char host[128] = "";
  gethostname(host, sizeof(host) - 1);
  kl__buf_puts(&b, ",\"host\":");
  kl__buf_json_string(&b, host);
  /* where candidate code ran: what the worker's sandbox held */
  const char *sb = kl__report_sandbox(rep);
  kl__buf_printf(&b, ",\"sandbox\":%s", sb ? sb : kl__sandbox_summary());
  kl__buf_printf(&b, ",\"kernlab\":\"%s\"}", KL_VERSION);
  kl__free(tool);
  kl__free(drv);
  r->env_json = kl__buf_detach(&b); /* NULL when a write failed */
  return r->env_json ? 0 : KL_ENOMEM;
}
