/* The names of a run's outcomes, as records spell them. */
#include <string.h>

#include "records.h"

const char *kl_outcome_name(kl_outcome o) {
  static const char *const names[KL_OUTCOME_COUNT] = {
      "BASELINE", "ACCEPTED",      "REJECTED",      "INCORRECT", "CRASHED",
      "TIMEOUT",  "COMPILE_ERROR", "INVALID_REPLY", "CHEAT"};
  return (unsigned)o < KL_OUTCOME_COUNT ? names[o] : "?";
}

int kl__outcome_index(const char *name) {
  for (int o = 0; name && o < KL_OUTCOME_COUNT; o++)
    if (strcmp(name, kl_outcome_name((kl_outcome)o)) == 0) return o;
  return -1;
}

kl_outcome kl__outcome_from_name(const char *name) {
  int o = kl__outcome_index(name);
  return o >= 0 ? (kl_outcome)o : KL_OUTCOME_REJECTED;
}
