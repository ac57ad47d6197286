/* #include lines where kernel sections meet.
 *
 * A generated file puts several kernels' texts one after the other (the
 * baseline beside a candidate in a standalone harness, a dispatcher's
 * variants) and kl export puts a kernel's text into the program's own
 * file. Each text includes its headers as if it were alone, and a header
 * without an include guard (llm.c's dev/cuda/common.h) included twice
 * redefines everything in it. Two remedies, both keeping every line of
 * the text where it was:
 *   - kl__c_include_once: each quoted #include of a section becomes a
 *     guarded one: the first section to include a header owns it (a macro
 *     KLH_ONCE_<header> set to the section's number) and only the owner
 *     includes it again; #line gives the #include its own line number
 *     and the next line its own.
 *     The owner may include it as often as it likes (an X-macro file).
 *   - kl__c_include_dropped: a quoted #include of a header the text before
 *     it already includes becomes a comment line.
 * Only "quoted" headers are touched: <system> headers have guards, and the
 * compiler's own are no business of ours. Lines are found in the text with
 * its comments blanked, so an #include in a comment is left alone. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

bool kl__c_quoted_include(const char *line, size_t n, const char **name,
                          size_t *len) {
  const char *p = line, *end = line + n;
  while (p < end && (*p == ' ' || *p == '\t'))
    p++;
  if (p >= end || *p++ != '#') return false;
  while (p < end && (*p == ' ' || *p == '\t'))
    p++;
  if ((size_t)(end - p) < 7 || strncmp(p, "include", 7) != 0) return false;
  for (p += 7; p < end && (*p == ' ' || *p == '\t');)
    p++;
  if (p >= end || *p != '"') return false;
  const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
  if (!q || q == p + 1) return false;
  *name = p + 1;
  *len = (size_t)(q - p - 1);
  return true;
}

/* The guard macro's name for a header: KLH_ONCE_ and the name with every
 * character that is no identifier's made '_' ("../common.h" and
 * "common.h" are different spellings and get different guards). */
static void guard_name(kl_buf *out, const char *name, size_t len) {
  kl__buf_puts(out, "KLH_ONCE_");
  for (size_t i = 0; i < len; i++)
    kl__buf_putc(out, kl__c_ident_char(name[i]) ? name[i] : '_');
}

int kl__c_include_once(kl_buf *out, const char *text, const char *file,
                       int section) {
  size_t total = strlen(text);
  char *clean = kl__c_blank(text, total, true);
  if (!clean) return kl__error_oom();
  int line = 0;
  for (size_t at = 0; at < total;) {
    size_t n = strcspn(clean + at, "\n");
    bool nl = at + n < total;
    const char *name;
    size_t len;
    line++;
    if (!kl__c_quoted_include(clean + at, n, &name, &len)) {
      kl__buf_put(out, text + at, n + nl);
    } else {
      kl_buf g = KL_BUF_INIT;
      guard_name(&g, name, len);
      const char *m = g.ptr ? g.ptr : "";
      /* the #include keeps its own line number: a diagnostic inside the
       * header says "included from kernel.c:2", not the line the guard
       * lines pushed it to */
      kl__buf_printf(out,
                     "#if !defined(%s) || %s == %d\n#ifndef %s\n"
                     "#define %s %d\n#endif\n#line %d \"%s\"\n",
                     m, m, section, m, m, section, line, file);
      kl__buf_put(out, text + at, n);
      kl__buf_printf(out, "\n#endif\n#line %d \"%s\"\n", line + 1, file);
      kl_buf_dispose(&g);
    }
    at += n + nl;
  }
  kl__free(clean);
  return kl__buf_status(out);
}

/* Whether the code `clean` (comments blanked) has `#include "name"`. */
static bool includes(const char *clean, size_t total, const char *name,
                     size_t len) {
  for (size_t at = 0; at < total;) {
    size_t n = strcspn(clean + at, "\n");
    const char *other;
    size_t olen;
    if (kl__c_quoted_include(clean + at, n, &other, &olen) && olen == len &&
        strncmp(other, name, len) == 0)
      return true;
    at += n + (at + n < total);
  }
  return false;
}

int kl__c_include_dropped(kl_buf *out, const char *text, const char *before,
                          size_t before_len, int *dropped) {
  size_t total = strlen(text);
  char *clean = kl__c_blank(text, total, true);
  char *prior = kl__c_blank(before, before_len, true);
  *dropped = 0;
  if (!clean || !prior) {
    kl__free(clean);
    kl__free(prior);
    return kl__error_oom();
  }
  for (size_t at = 0; at < total;) {
    size_t n = strcspn(clean + at, "\n");
    bool nl = at + n < total;
    const char *name;
    size_t len;
    if (kl__c_quoted_include(clean + at, n, &name, &len) &&
        includes(prior, before_len, name, len)) {
      kl__buf_printf(out, "// kernlab: \"%.*s\" is included above%s", (int)len,
                     name, nl ? "\n" : "");
      (*dropped)++;
    } else {
      kl__buf_put(out, text + at, n + nl);
    }
    at += n + nl;
  }
  kl__free(clean);
  kl__free(prior);
  return kl__buf_status(out);
}
