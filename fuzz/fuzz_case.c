/* libFuzzer target: the case loader over an arbitrary case.yaml. The
 * bytes become case.yaml in a private folder that also holds a CUDA and a
 * host kernel, a reference and a brief (copies of bundled cases'), so
 * inputs that name them get past the file checks into the signature,
 * shapes, expressions and tunables; a case that loads is also turned into
 * both harness forms. Built by scripts/fuzz.sh; replayed under ctest by
 * fuzz/replay.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_tmp.h"
#include "kernlab/kernlab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void copy_in(const char *from, const char *name) {
  FILE *f = fopen(from, "rb");
  char buf[1 << 16];
  size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
  if (!f) {
    perror(from);
    abort();
  }
  fclose(f);
  char path[600];
  fuzz_write(path, sizeof(path), name, (const uint8_t *)buf, n);
}

static void setup(void) {
  if (!getenv("KERNLAB_SHARE_DIR"))
    setenv("KERNLAB_SHARE_DIR", KL_SOURCE_DIR "/share/kernlab", 1);
  copy_in(KL_SOURCE_DIR "/cases/vector_add/kernel.cu", "kernel.cu");
  copy_in(KL_SOURCE_DIR "/cases/host_matmul/kernel.c", "kernel.c");
  copy_in(KL_SOURCE_DIR "/cases/host_matmul/reference.c", "reference.c");
  copy_in(KL_SOURCE_DIR "/cases/host_matmul/program.md", "program.md");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) {
    setup();
    ready = 1;
  }
  char path[600];
  fuzz_write(path, sizeof(path), "case.yaml", data, size);
  kl_case *c;
  if (kl_case_load(&c, path, NULL) == 0) {
    kl_harness_options o = KL_HARNESS_OPTIONS_INIT;
    kl_buf b = KL_BUF_INIT;
    kl_harness_generate(&b, c, NULL, &o);
    o.form = KL_HARNESS_PLUGIN;
    kl_buf_dispose(&b);
    kl_harness_generate(&b, c, NULL, &o);
    kl_buf_dispose(&b);
    kl_case_free(c);
  } else if (!kl_error_last() || !kl_error_last()->message[0]) {
    abort(); /* every failure says why */
  }
  return 0;
}
