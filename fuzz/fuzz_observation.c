/* libFuzzer target: observation files (kl observe -o, read back by kl
 * observe --show, kl case from-observation and kl export). The bytes become
 * the file; what loads is summarised as text and JSON, which buckets its
 * launches into representative configurations. Built by scripts/fuzz.sh;
 * replayed under ctest by fuzz/replay.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_tmp.h"
#include "kernlab/kernlab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[600];
  fuzz_write(path, sizeof(path), "obs.json", data, size);
  kl_observation *o;
  if (kl_observation_load(&o, path) != 0) {
    if (!kl_error_last() || !kl_error_last()->message[0])
      abort(); /* every failure says why */
    return 0;
  }
  kl_configs_options co = KL_CONFIGS_OPTIONS_INIT;
  kl_buf b = KL_BUF_INIT;
  kl_observation_summary(&b, o, &co, "text");
  kl_buf_dispose(&b);
  co.max_configs = 2;
  kl_observation_summary(&b, o, &co, "json");
  kl_buf_dispose(&b);
  kl_observation_free(o);
  return 0;
}
