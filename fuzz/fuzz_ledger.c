/* libFuzzer target: reading a JSON Lines ledger (solutions.jsonl,
 * memory.jsonl, export.jsonl, a run's iterations) that a crash, a full
 * disk or a hand edit may have left in any state. The bytes become the
 * file; every record handed back is walked and printed again; a line that
 * does not parse must be reported at its line, a torn tail skipped. Built
 * by scripts/fuzz.sh; replayed under ctest by fuzz/replay.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "records/records.h"
#include "fuzz_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int visit(json_object *rec, int line, void *payload) {
  int *last = payload;
  if (line <= *last) abort(); /* lines come in order, once each */
  *last = line;
  const char *s = json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN);
  return s ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[600];
  fuzz_write(path, sizeof(path), "ledger.jsonl", data, size);
  int last = 0;
  int rc = kl__ledger_read(path, visit, &last);
  if (rc < 0 && (!kl_error_last() || !kl_error_last()->message[0])) abort();
  return 0;
}
