/* Small helpers with no other home: the monotonic clock, fresh and derived
 * seeds, the launch modes' names, identifiers, edit distance and "did you
 * mean", and the caret snippet located errors carry. */
#define _GNU_SOURCE /* getrandom */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

double kl__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

uint64_t kl__fresh_seed(void) {
  uint64_t s = 0;
  if (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
        ((uint64_t)getpid() << 40);
  }
  return s ? s : 1;
}

uint64_t kl__derive_seed(uint64_t base, uint64_t k) {
  uint64_t z = base + k * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) | 1;
}

/* ---- strings ------------------------------------------------------------ */

bool kl__is_ident(const char *s) {
  if (!s ||
      !(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
    return false;
  for (s++; *s; s++)
    if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
          (*s >= '0' && *s <= '9')))
      return false;
  return true;
}

/* Optimal string alignment distance: insertions, deletions, substitutions
 * and transpositions of neighbours ("mni" is one step from "min"). */
size_t kl__edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return la > lb ? la : lb;
  size_t d[65][65];
  for (size_t i = 0; i <= la; i++)
    d[i][0] = i;
  for (size_t j = 0; j <= lb; j++)
    d[0][j] = j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      size_t best = d[i - 1][j - 1] + cost;
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[la][lb];
}

const char *kl__suggest(const char *word, const char *const *candidates,
                        size_t n) {
  const char *best = NULL;
  size_t best_d = (size_t)-1;
  size_t limit = strlen(word) <= 3 ? 1 : 2;
  for (size_t i = 0; i < n; i++) {
    size_t d = kl__edit_distance(word, candidates[i]);
    if (d < best_d) {
      best_d = d;
      best = candidates[i];
    }
  }
  return best_d <= limit ? best : NULL;
}

char *kl__snippet(const char *text, int line, int column) {
  if (!text || line < 1 || column < 1) return NULL;
  const char *p = text;
  for (int l = 1; l < line && *p; l++) {
    p = strchr(p, '\n');
    if (!p) return NULL;
    p++;
  }
  size_t len = strcspn(p, "\r\n");
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "  ");
  kl__buf_put(&b, p, len);
  kl__buf_puts(&b, "\n  ");
  /* Keep tabs so the caret lines up under tab-indented text. */
  for (int c = 1; c < column && (size_t)(c - 1) < len; c++)
    kl__buf_putc(&b, p[c - 1] == '\t' ? '\t' : ' ');
  if (kl__buf_putc(&b, '^') < 0) {
    kl_buf_dispose(&b);
    return NULL;
  }
  return kl__buf_detach(&b);
}

char *kl__strv_join(char *const *v, const char *sep) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "");
  for (size_t i = 0; v && v[i]; i++)
    kl__buf_printf(&b, "%s%s", i ? sep : "", v[i]);
  return kl__buf_detach(&b); /* NULL when a write failed */
}

/* ---- versioned structs
 * ------------------------------------------------------- */

int kl__options_init(void *opts, const void *defaults, unsigned version,
                     const size_t *sizes, size_t nsizes, const char *what) {
  if (!opts || version == 0 || version >= nsizes)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s: version %u is not one this library knows (1 to %zu)",
                     what, version, nsizes - 1);
  memcpy(opts, defaults, sizes[version]);
  *(unsigned *)opts = version;
  return 0;
}

int kl__options_take(void *full, const void *given, const size_t *sizes,
                     size_t nsizes, const char *what) {
  if (!given) return 0;
  unsigned version = *(const unsigned *)given;
  if (version == 0 || version >= nsizes)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s: version %u is not one this library knows (1 to %zu; "
                     "set it with the _INIT macro or %s_init)",
                     what, version, nsizes - 1, what);
  memcpy(full, given, sizes[version]);
  *(unsigned *)full = (unsigned)(nsizes - 1); /* now a current struct */
  return 0;
}

int kl__result_give(void *out, const void *full, size_t full_size,
                    size_t min_size, const char *what) {
  size_t size = *(const size_t *)out;
  if (size < min_size)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s: size %zu, not at least %zu (set it with the "
                     "struct's _INIT macro)",
                     what, size, min_size);
  if (size > full_size) size = full_size;
  memcpy((char *)out + sizeof(size_t), (const char *)full + sizeof(size_t),
         size - sizeof(size_t));
  return 0;
}

static const char *const launch_names[] = {"stream", "graph", "both"};

const char *kl_launch_name(int launch) {
  return launch >= 0 && launch < (int)KL_ARRAY_SIZE(launch_names)
             ? launch_names[launch]
             : NULL;
}

int kl_launch_parse(const char *name) {
  for (size_t i = 0; name && i < KL_ARRAY_SIZE(launch_names); i++)
    if (strcmp(name, launch_names[i]) == 0) return (int)i;
  return -2; /* not KL_LAUNCH_CASE */
}
