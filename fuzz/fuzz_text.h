/* The fuzz input as the NUL-terminated text kernlab's readers take (a NUL
 * inside ends it, as it would in a file); NULL when out of memory. */
#ifndef KL_FUZZ_TEXT_H
#define KL_FUZZ_TEXT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline char *fuzz_text(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text) {
    memcpy(text, data, size);
    text[size] = '\0';
  }
  return text;
}

#endif /* KL_FUZZ_TEXT_H */
