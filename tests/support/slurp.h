/* A whole file as a NUL-terminated string (malloc'd), or NULL when it cannot
 * be read. Shared by the tests and the benchmarks, which read candidate
 * kernels and golden files. */
#ifndef KL_TEST_SLURP_H
#define KL_TEST_SLURP_H

#include <stdio.h>
#include <stdlib.h>

static inline char *kl_test_slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
      fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
      fread(buf, 1, (size_t)n, f) == (size_t)n) {
    buf[n] = '\0';
  } else {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  return buf;
}

#endif /* KL_TEST_SLURP_H */
