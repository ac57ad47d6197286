/* libFuzzer target: the rule file loader, then evaluation, over arbitrary
 * bytes. One rule set lives for the whole run (its skills are read once);
 * every input is added to it as a rule file, and whatever loads is
 * evaluated against the healthy profile fixture, so fuzzed expressions and
 * templates run too. Built by scripts/fuzz.sh (clang, -fsanitize=fuzzer);
 * fuzz/replay.c feeds files to the same function under ctest. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text.h"
#include "kernlab/kernlab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static kl_rules *rules;
static kl_profile *profile;

static void setup(void) {
  if (!getenv("KERNLAB_SHARE_DIR"))
    setenv("KERNLAB_SHARE_DIR", KL_SOURCE_DIR "/share/kernlab", 1);
  FILE *f = fopen(KL_SOURCE_DIR "/tests/rules/fixtures/healthy.json", "rb");
  char buf[1 << 16];
  size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
  buf[n] = '\0';
  if (f) fclose(f);
  if (kl_rules_create(&rules, NULL) != 0 ||
      kl_profile_from_json(&profile, buf, "healthy.json") != 0) {
    fprintf(stderr, "fuzz_rules: setup failed: %s\n",
            kl_error_last() ? kl_error_last()->message : "?");
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!rules) setup();
  char *text = fuzz_text(data, size);
  if (!text) return 0;
  if (kl_rules_add_string(rules, text, "fuzz.yaml") == 0) {
    kl_diagnosis *d;
    kl_buf b = KL_BUF_INIT;
    if (kl_rules_evaluate(&d, rules, profile) == 0) {
      kl_diagnosis_json(&b, d);
      kl_diagnosis_skills(&b, d, rules, 5);
      kl_diagnosis_free(d);
    }
    kl_buf_dispose(&b);
  }
  free(text);
  return 0;
}
