/* kl_buf: the growable byte buffer every module builds text in and hands
 * to its caller. Contents stay NUL-terminated.
 *
 * A failed write is sticky (as curl's dynbuf): the buffer frees what it
 * held and is marked failed (reserved == FAILED, ptr NULL), every later
 * write fails at once, kl__buf_detach gives NULL, and kl__buf_status says
 * KL_ENOMEM. So a function writes its text without checking each write and
 * asks once, at its end: `return kl__buf_status(b);`. kl_buf_dispose (or
 * kl__buf_give) makes the buffer usable again. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- buffers ------------------------------------------------------------ */

#define FAILED SIZE_MAX

static int fail(kl_buf *b) {
  kl__free(b->ptr);
  b->ptr = NULL;
  b->size = 0;
  b->reserved = FAILED;
  return kl__error_oom();
}

int kl__buf_status(const kl_buf *b) {
  return b->reserved == FAILED ? kl__error_oom() : 0;
}

void kl__buf_give(kl_buf *to, kl_buf *from) {
  kl_buf_dispose(to);
  *to = *from;
  from->ptr = NULL;
  from->size = from->reserved = 0;
}

int kl_buf_set(kl_buf *b, const char *data, size_t n) {
  char *copy = kl__malloc(n + 1);
  if (!copy) return kl__error_oom();
  if (n) memcpy(copy, data, n);
  copy[n] = '\0';
  kl_buf_dispose(b);
  b->ptr = copy;
  b->size = n;
  b->reserved = n + 1;
  return 0;
}

void kl_buf_dispose(kl_buf *b) {
  if (!b) return;
  kl__free(b->ptr);
  b->ptr = NULL;
  b->size = b->reserved = 0;
}

int kl__buf_grow(kl_buf *b, size_t extra) {
  if (b->reserved == FAILED) return KL_ENOMEM;
  if (extra < SIZE_MAX - 1 - b->size && b->size + extra + 1 <= b->reserved)
    return 0;
  if (extra >= SIZE_MAX / 2 - b->size) return fail(b);
  size_t want = b->reserved ? b->reserved : 64;
  while (want < b->size + extra + 1)
    want *= 2;
  char *p = kl__realloc(b->ptr, want);
  if (!p) return fail(b);
  b->ptr = p;
  b->reserved = want;
  return 0;
}

int kl__buf_put(kl_buf *b, const char *s, size_t n) {
  if (kl__buf_grow(b, n) < 0) return KL_ENOMEM;
  if (n) memcpy(b->ptr + b->size, s, n);
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
  if (n < 0) {
    fail(b);
    return kl__error(KL_ERROR, KL_DOMAIN_NONE, "bad format '%s'", fmt);
  }
  if (kl__buf_grow(b, (size_t)n) < 0) return KL_ENOMEM;
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
  return s ? kl__buf_json_string_n(b, s, strlen(s)) : kl__buf_puts(b, "null");
}

int kl__buf_json_string_n(kl_buf *b, const char *s, size_t n) {
  kl__buf_putc(b, '"');
  for (const unsigned char *p = (const unsigned char *)s;
       p < (const unsigned char *)s + n; p++) {
    switch (*p) {
    case '"':
      kl__buf_puts(b, "\\\"");
      break;
    case '\\':
      kl__buf_puts(b, "\\\\");
      break;
    case '\n':
      kl__buf_puts(b, "\\n");
      break;
    case '\r':
      kl__buf_puts(b, "\\r");
      break;
    case '\t':
      kl__buf_puts(b, "\\t");
      break;
    default:
      if (*p < 0x20)
        kl__buf_printf(b, "\\u%04x", *p);
      else
        kl__buf_putc(b, (char)*p);
    }
  }
  kl__buf_putc(b, '"');
  return b->reserved == FAILED ? KL_ENOMEM : 0;
}

char *kl__buf_detach(kl_buf *b) {
  if (b->reserved == FAILED) {
    b->reserved = 0;
    kl__error_oom();
    return NULL;
  }
  char *p = b->ptr;
  if (!p) p = kl__strdup("");
  b->ptr = NULL;
  b->size = b->reserved = 0;
  return p;
}
