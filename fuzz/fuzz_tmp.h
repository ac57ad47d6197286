/* A private folder for fuzz targets whose reader takes a path, not text:
 * the input is written to a file in it before each call. Made once per
 * process under $TMPDIR (or /tmp), removed with what the reader left in it
 * when the process exits (a crash leaves it). */
#ifndef KL_FUZZ_TMP_H
#define KL_FUZZ_TMP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sandbox.h"

char *mkdtemp(char *template);

static char fuzz_dir_path[512];

static inline void fuzz_dir_remove(void) {
  kl__sandbox_dir_remove(fuzz_dir_path);
}

/* The folder, made on first use; aborts when it cannot be (the fuzzer
 * would otherwise test nothing). */
static inline const char *fuzz_dir(void) {
  char *dir = fuzz_dir_path;
  if (!dir[0]) {
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof(fuzz_dir_path), "%s/kl-fuzz-XXXXXX",
             t && *t ? t : "/tmp");
    if (!mkdtemp(dir)) {
      perror("fuzz: mkdtemp");
      abort();
    }
    atexit(fuzz_dir_remove);
  }
  return dir;
}

/* Write bytes to dir/name (replacing it); its path in `path`. */
static inline void fuzz_write(char *path, size_t cap, const char *name,
                              const uint8_t *data, size_t size) {
  snprintf(path, cap, "%s/%s", fuzz_dir(), name);
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    perror(path);
    abort();
  }
}

#endif /* KL_FUZZ_TMP_H */
