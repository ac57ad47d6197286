/* Reading Python source for the prompt and the reply checks: a top-level
 * function's parameters, how many positional arguments it accepts, and the
 * kernel languages a file imports.
 *
 * This is not a Python parser: it reads lines at column 0 (where a module's
 * own definitions and imports stand) and, inside a definition's parentheses,
 * skips strings, comments and nested brackets, which is all a `def` line
 * holds. The syntax itself is checked by the compile step (python3's ast),
 * whose error is the candidate's COMPILE_ERROR. */
#include <ctype.h>
#include <string.h>

#include "prompt_internal.h"

static bool ident_char(char c) {
  return isalnum((unsigned char)c) || c == '_';
}

static size_t line_after(const char *s, size_t i) {
  while (s[i] && s[i] != '\n')
    i++;
  return s[i] ? i + 1 : i;
}

/* The parameters between the parentheses that open at src[open]: white
 * space collapsed, comments dropped; to the end of src when they never
 * close (the compile step reports that). NULL when out of memory. */
static char *params_from(const char *src, size_t open) {
  kl_buf b = KL_BUF_INIT;
  int depth = 0;
  char quote = 0;
  size_t i = open;
  for (; src[i]; i++) {
    char ch = src[i];
    if (quote) {
      if (ch == '\\' && src[i + 1]) {
        kl__buf_putc(&b, ch);
        ch = src[++i];
      } else if (ch == quote) {
        quote = 0;
      }
    } else if (ch == '#') {
      while (src[i + 1] && src[i + 1] != '\n')
        i++;
      continue;
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
    } else if (ch == '(' || ch == '[' || ch == '{') {
      if (depth++ == 0) continue;
    } else if (ch == ')' || ch == ']' || ch == '}') {
      if (--depth == 0) break;
    }
    bool space = isspace((unsigned char)ch);
    if (space && (b.size == 0 || b.ptr[b.size - 1] == ' ')) continue;
    kl__buf_putc(&b, space ? ' ' : ch);
  }
  while (b.size && b.ptr[b.size - 1] == ' ')
    b.ptr[--b.size] = '\0';
  if (kl__buf_status(&b) < 0) return NULL;
  return b.ptr ? kl__buf_detach(&b) : kl__strdup("");
}

int kl__py_def_params(char **out, const char *src, const char *name) {
  *out = NULL;
  size_t n = strlen(name);
  for (size_t i = 0; src[i]; i = line_after(src, i)) {
    size_t p = i;
    if (strncmp(src + p, "async ", 6) == 0) p += 6;
    if (strncmp(src + p, "def", 3) != 0 || !isspace((unsigned char)src[p + 3]))
      continue;
    p += 3;
    while (src[p] == ' ' || src[p] == '\t')
      p++;
    if (strncmp(src + p, name, n) != 0 || ident_char(src[p + n])) continue;
    p += n;
    while (src[p] == ' ' || src[p] == '\t')
      p++;
    if (src[p] != '(') continue;
    char *params = params_from(src, p);
    if (!params) return kl__error_oom();
    kl__free(*out); /* the last definition is the one Python keeps */
    *out = params;
  }
  return 0;
}

bool kl__py_defines_class(const char *src, const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; src[i]; i = line_after(src, i))
    if (strncmp(src + i, "class", 5) == 0 &&
        (src[i + 5] == ' ' || src[i + 5] == '\t')) {
      size_t p = i + 5;
      while (src[p] == ' ' || src[p] == '\t')
        p++;
      if (strncmp(src + p, name, n) == 0 && !ident_char(src[p + n]))
        return true;
    }
  return false;
}

int kl__py_arity(const char *params, size_t *required, size_t *most) {
  *required = *most = 0;
  if (!params[0]) return 0;
  int depth = 0;
  char quote = 0;
  bool keyword_only = false, first = true;
  size_t start = 0;
  for (size_t i = 0;; i++) {
    char ch = params[i];
    if (quote) {
      if (ch == '\\' && params[i + 1])
        i++;
      else if (ch == quote)
        quote = 0;
      continue;
    }
    if (ch == '\'' || ch == '"') {
      quote = ch;
      continue;
    }
    if (ch == '(' || ch == '[' || ch == '{') depth++;
    if (ch == ')' || ch == ']' || ch == '}') depth--;
    if (ch && (ch != ',' || depth > 0)) continue;
    /* one parameter: params[start, i) */
    const char *p = params + start;
    size_t len = i - start;
    while (len && *p == ' ')
      p++, len--;
    if (len == 0) {
    } else if (len == 1 && *p == '/') { /* positional-only marker */
    } else if (*p == '*' && len > 1 && p[1] == '*') {
      /* **kwargs */
    } else if (*p == '*') {
      if (len > 1) *most = SIZE_MAX; /* *args takes any number */
      keyword_only = true;
    } else if (!keyword_only) {
      bool self = first && len >= 4 && strncmp(p, "self", 4) == 0 &&
                  (len == 4 || !ident_char(p[4]));
      if (!self) {
        bool has_default = memchr(p, '=', len) != NULL;
        if (*most != SIZE_MAX) ++*most;
        if (!has_default) ++*required;
      }
    }
    first = false;
    if (!ch) break;
    start = i + 1;
  }
  return 0;
}

/* The languages a module may import, each with its KL__PY_* bit
 * (prompt_internal.h); a longer module name before one it starts with. */
static const struct {
  const char *module, *name;
  unsigned bit;
} known[] = {
    {"triton", "Triton", KL__PY_TRITON},
    {"cutlass", "CuTe DSL (CUTLASS Python)", KL__PY_CUTE},
    {"cuda.tile", "cuTile", KL__PY_CUTILE},
    {"cupy", "CuPy", KL__PY_CUPY},
    {"torch.utils.cpp_extension", "PyTorch C++/CUDA extension",
     KL__PY_CPP_EXTENSION},
    {"numba", "Numba", KL__PY_NUMBA},
    {"torch", "PyTorch", KL__PY_TORCH},
    {"numpy", "NumPy", KL__PY_NUMPY},
};

unsigned kl__py_languages(const char *src) {
  unsigned seen = 0;
  for (size_t i = 0; src[i]; i = line_after(src, i)) {
    size_t p = i;
    if (strncmp(src + p, "import ", 7) == 0)
      p += 7;
    else if (strncmp(src + p, "from ", 5) == 0)
      p += 5;
    else
      continue;
    while (src[p] == ' ')
      p++;
    for (size_t k = 0; k < KL_ARRAY_SIZE(known); k++) {
      size_t n = strlen(known[k].module);
      if (strncmp(src + p, known[k].module, n) == 0 &&
          (src[p + n] == '.' || !ident_char(src[p + n]))) {
        seen |= known[k].bit;
        break;
      }
    }
  }
  return seen;
}

int kl__py_dsls(kl_buf *out, const char *src) {
  unsigned seen = kl__py_languages(src);
  size_t written = 0;
  for (size_t k = 0; k < KL_ARRAY_SIZE(known); k++)
    if (seen & known[k].bit)
      kl__buf_printf(out, "%s%s", written++ ? ", " : "", known[k].name);
  if (written == 0) kl__buf_puts(out, "plain Python");
  return kl__buf_status(out);
}
