/* kl_buf: the growable byte buffer every module builds text in and hands
 * to its caller. Contents stay NUL-terminated; a failed allocation is
 * KL_ENOMEM with the error set. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- buffers ------------------------------------------------------------ */

int kl_buf_set(kl_buf *b, const char *data, size_t n) {
  char *copy = kl__malloc(n + 1);
  if (!copy)
    return kl__error_oom();
  if (n)
    memcpy(copy, data, n);
  copy[n] = '\0';
  kl_buf_dispose(b);
  b->ptr = copy;
  b->size = n;
  b->reserved = n + 1;
  return 0;
}

void kl_buf_dispose(kl_buf *b) {
  if (!b)
    return;
  kl__free(b->ptr);
  b->ptr = NULL;
  b->size = b->reserved = 0;
}

int kl__buf_grow(kl_buf *b, size_t extra) {
  if (b->size + extra + 1 <= b->reserved)
    return 0;
  size_t want = b->reserved ? b->reserved : 64;
  while (want < b->size + extra + 1) {
    if (want > SIZE_MAX / 2)
      return kl__error_oom();
    want *= 2;
  }
  char *p = kl__realloc(b->ptr, want);
  if (!p)
    return kl__error_oom();
  b->ptr = p;
  b->reserved = want;
  return 0;
}

int kl__buf_put(kl_buf *b, const char *s, size_t n) {
  if (kl__buf_grow(b, n) < 0)
    return KL_ENOMEM;
  if (n)
    memcpy(b->ptr + b->size, s, n);
  b->size += n;
  b->ptr[b->size] = '\0';
  return 0;
}

int kl__buf_puts(kl_buf *b, const char *s) {
  return kl__buf_put(b, s, strlen(s));
}

int kl__buf_putc(kl_buf *b, char c) {
  return kl__buf_put(b, &c, 1);
}

int kl__buf_vprintf(kl_buf *b, const char *fmt, va_list ap) {
  va_list cp;
  va_copy(cp, ap);
  int n = vsnprintf(NULL, 0, fmt, cp);
  va_end(cp);
  if (n < 0)
    return kl__error(KL_ERROR, KL_DOMAIN_NONE, "bad format '%s'", fmt);
  if (kl__buf_grow(b, (size_t)n) < 0)
    return KL_ENOMEM;
  vsnprintf(b->ptr + b->size, (size_t)n + 1, fmt, ap);
  b->size += (size_t)n;
  return 0;
}

int kl__buf_printf(kl_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = kl__buf_vprintf(b, fmt, ap);
  va_end(ap);
  return rc;
}

int kl__buf_json_string(kl_buf *b, const char *s) {
  if (!s)
    return kl__buf_puts(b, "null");
  int rc = kl__buf_putc(b, '"');
  for (const unsigned char *p = (const unsigned char *)s; rc == 0 && *p; p++) {
    switch (*p) {
    case '"': rc = kl__buf_puts(b, "\\\""); break;
    case '\\': rc = kl__buf_puts(b, "\\\\"); break;
    case '\n': rc = kl__buf_puts(b, "\\n"); break;
    case '\r': rc = kl__buf_puts(b, "\\r"); break;
    case '\t': rc = kl__buf_puts(b, "\\t"); break;
    default:
      if (*p < 0x20)
        rc = kl__buf_printf(b, "\\u%04x", *p);
      else
        rc = kl__buf_putc(b, (char)*p);
    }
  }
  return rc ? rc : kl__buf_putc(b, '"');
}

char *kl__buf_detach(kl_buf *b) {
  char *p = b->ptr;
  if (!p)
    p = kl__strdup("");
  b->ptr = NULL;
  b->size = b->reserved = 0;
  return p;
}
