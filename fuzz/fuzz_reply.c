/* libFuzzer target: reply parsing, which reads whatever a model sends.
 * The bytes are a reply to the transpose_f32 case; the case is loaded once.
 * Built by scripts/fuzz.sh; replayed under ctest by fuzz/replay.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text.h"
#include "kernlab/kernlab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static kl_case *tcase;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!tcase &&
      kl_case_load(&tcase, KL_SOURCE_DIR "/cases/transpose_f32", NULL) != 0) {
    fprintf(stderr, "fuzz_reply: %s\n", kl_error_last()->message);
    abort();
  }
  char *text = fuzz_text(data, size);
  if (!text) return 0;
  kl_reply *r;
  if (kl_reply_parse(&r, text, tcase) == 0) {
    /* what comes back is consistent: code and memo when ok, a reason when
     * not */
    if (kl_reply_ok(r) && (!kl_reply_code(r) || !kl_reply_memo(r))) abort();
    if (!kl_reply_ok(r) && !kl_reply_reason(r)) abort();
    kl_reply_free(r);
  }
  free(text);
  return 0;
}
