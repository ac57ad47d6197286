/* Feeds files to a libFuzzer target without libFuzzer: the regression run
 * of the fuzz targets under ctest (and any compiler). usage: replay FILE... */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) {
      perror(argv[i]);
      return 2;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
      if (n == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 4096)))
        return 2;
      size_t got = fread(buf + n, 1, cap - n, f);
      if (got == 0) break;
      n += got;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
  }
  printf("replayed %d inputs\n", argc - 1);
  return 0;
}
