/* What identifies a candidate: the hash of its kernel and its settings
 * (the tuner never proposes a key twice; the records keep it). */
#include <stdio.h>
#include <string.h>

#include "run_internal.h"

void kl__run_source_hash(const char *source, char hex[65]) {
  kl__sha256 h;
  kl__sha256_init(&h);
  kl__sha256_update(&h, source, strlen(source));
  kl__sha256_hex(&h, hex);
}

char *kl__run_key(const char *hash, char *const *config) {
  char *cfg = kl__strv_join(config, ",");
  kl_buf b = KL_BUF_INIT;
  int rc = cfg ? kl__buf_printf(&b, "%.16s|%s", hash, cfg) : -1;
  kl__free(cfg);
  if (rc < 0) {
    kl_buf_dispose(&b);
    return NULL;
  }
  return kl__buf_detach(&b);
}
