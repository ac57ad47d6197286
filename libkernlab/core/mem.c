/* Allocation: every allocation of the library goes through kl__malloc and
 * friends, so that the out-of-memory tests can fail the n-th one and walk
 * every error path; and the owned lists of strings built on them. Nothing
 * here reports an error: a NULL is the caller's to turn into KL_ENOMEM. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static _Thread_local long alloc_count, alloc_fail_at;

static bool alloc_should_fail(void) {
  alloc_count++;
  return alloc_fail_at > 0 && alloc_count >= alloc_fail_at;
}

long kl__alloc_fail_after(long n) {
  long ran = alloc_count;
  alloc_count = 0;
  alloc_fail_at = n;
  return ran;
}

void *kl__malloc(size_t n) {
  return alloc_should_fail() ? NULL : malloc(n ? n : 1);
}

void *kl__calloc(size_t count, size_t size) {
  return alloc_should_fail() ? NULL
                             : calloc(count ? count : 1, size ? size : 1);
}

void *kl__realloc(void *p, size_t n) {
  return alloc_should_fail() ? NULL : realloc(p, n ? n : 1);
}

char *kl__strndup(const char *s, size_t n) {
  char *p = kl__malloc(n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

char *kl__strdup(const char *s) {
  return s ? kl__strndup(s, strlen(s)) : NULL;
}

void kl__free(void *p) {
  free(p);
}

bool kl__array_reserve(void *items, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return true;
  size_t n = *cap < 8 ? 8 : *cap;
  while (n < need)
    n = n > SIZE_MAX / 3 ? need : n + n / 2;
  if (size && n > SIZE_MAX / size) return false;
  void *grown = kl__realloc(*(void **)items, n * size);
  if (!grown) return false;
  *(void **)items = grown;
  *cap = n;
  return true;
}

char **kl__strv_dup(const char *const *v) {
  size_t n = 0;
  while (v && v[n])
    n++;
  char **out = kl__calloc(n + 1, sizeof(*out));
  for (size_t i = 0; out && i < n; i++)
    if (!(out[i] = kl__strdup(v[i]))) {
      kl__strv_free(out);
      return NULL;
    }
  return out;
}

void kl__strv_free(char **v) {
  for (size_t i = 0; v && v[i]; i++)
    kl__free(v[i]);
  kl__free(v);
}

void kl__names_free(char **names, size_t n) {
  for (size_t i = 0; names && i < n; i++)
    kl__free(names[i]);
  kl__free(names);
}
