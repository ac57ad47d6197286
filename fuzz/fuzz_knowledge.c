/* libFuzzer target: a knowledge entry's file (front matter and body) over
 * arbitrary bytes. Whatever parses is written back by the format's one
 * writer and must parse again to the same fields: the reader and the
 * writer agree (a title with quotes, colons or a leading dash survives).
 * Built by scripts/fuzz.sh (clang, -fsanitize=fuzzer); fuzz/replay.c
 * feeds files to the same function under ctest. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text.h"
#include "kernlab/kernlab.h"
#include "knowledge/knowledge_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  if (!text) return 0;
  kn_entry e, back;
  memset(&back, 0, sizeof(back));
  kl_buf out = KL_BUF_INIT;
  if (kl__kn_entry_parse(&e, "fuzz.md", "optimization", text) == 0 &&
      kl__kn_entry_format(&out, &e) == 0) {
    if (kl__kn_entry_parse(&back, "again.md", "optimization", out.ptr) != 0 ||
        !same(e.id, back.id) || !same(e.title, back.title) ||
        !same(e.operator_name, back.operator_name) ||
        !same(e.language, back.language) || !same(e.card, back.card) ||
        !same(e.ev_case, back.ev_case) || !same(e.ev_run, back.ev_run) ||
        e.has_iter != back.has_iter || e.ev_iter != back.ev_iter) {
      fprintf(stderr, "fuzz_knowledge: the entry does not read back: %s\n%s\n",
              kl_error_last() ? kl_error_last()->message : "(fields differ)",
              out.ptr);
      abort();
    }
  }
  kl__kn_entry_dispose(&e);
  kl__kn_entry_dispose(&back);
  kl_buf_dispose(&out);
  free(text);
  return 0;
}
