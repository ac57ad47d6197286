/* libFuzzer target: recorded metrics (kl profile --json, profile objects,
 * flat exports, Nsight Compute's CSV pages: the CSV reader and ncu.c),
 * read from files users pass to kl rules --metrics; every profile read is
 * also diagnosed by the default rules. Built by
 * scripts/fuzz.sh; replayed under ctest by fuzz/replay.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text.h"
#include "kernlab/kernlab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static kl_rules *rules;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!rules) {
    if (!getenv("KERNLAB_SHARE_DIR"))
      setenv("KERNLAB_SHARE_DIR", KL_SOURCE_DIR "/share/kernlab", 1);
    if (kl_rules_create(&rules, NULL) != 0 || kl_rules_add_defaults(rules) != 0)
      abort();
  }
  char *text = fuzz_text(data, size);
  if (!text) return 0;
  kl_profile_list *l;
  if (kl_profile_list_from_text(&l, text, "fuzz.metrics") == 0) {
    for (size_t i = 0; i < kl_profile_list_count(l); i++) {
      kl_diagnosis *d;
      kl_buf b = KL_BUF_INIT;
      if (kl_rules_evaluate(&d, rules, kl_profile_list_get(l, i)) == 0) {
        kl_diagnosis_json(&b, d);
        kl_diagnosis_free(d);
      }
      kl_profile_json(&b, kl_profile_list_get(l, i), KL_PROFILE_NCU_NAMES);
      kl_buf_dispose(&b);
    }
    kl_profile_list_free(l);
  }
  free(text);
  return 0;
}
