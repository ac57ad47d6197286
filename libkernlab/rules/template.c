/* Finding and action templates: text with {expression:format} holes.
 *
 * A hole holds any expression of the expression language (a metric name
 * is the usual one) and an optional format after the colon, as in Python:
 * [width][.precision][f|e|g|d|%] ("%" prints the value times 100 with a
 * percent sign). "{{" and "}}" are literal braces. Expressions cannot hold
 * braces or colons, so the first "}" closes a hole and its first ":" starts
 * the format. Rendering never fails on a value: a name that was not
 * collected, or a division by zero, prints "n/a". */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rules_internal.h"

void kl__template_free(kl__template *t) {
  if (!t) return;
  for (size_t i = 0; i < t->count; i++) {
    kl__free(t->parts[i].text);
    kl_expr_free(t->parts[i].expr);
  }
  kl__free(t->parts);
  kl__free(t);
}

size_t kl__text_offset(const char *src, int line, int column) {
  size_t off = 0;
  for (int l = 1; l < line && src[off]; off++)
    if (src[off] == '\n') l++;
  for (int c = 1; c < column && src[off] && src[off] != '\n'; c++)
    off++;
  return off;
}

static tpl_part *add_part(kl__template *t) {
  if (!kl__array_reserve(&t->parts, &t->cap, t->count + 1, sizeof(*t->parts)))
    return NULL; /* the caller reports it */
  memset(&t->parts[t->count], 0, sizeof(t->parts[0]));
  return &t->parts[t->count++];
}

static int syntax(tpl_error *err, size_t offset, const char *fmt,
                  const char *arg) {
  err->offset = offset;
  snprintf(err->message, sizeof(err->message), fmt, arg);
  return KL_EINVALID;
}

/* [width][.precision][type] */
static bool valid_spec(const char *s) {
  while (*s >= '0' && *s <= '9')
    s++;
  if (*s == '.') {
    s++;
    if (!(*s >= '0' && *s <= '9')) return false;
    while (*s >= '0' && *s <= '9')
      s++;
  }
  if (*s && strchr("fegd%", *s)) s++;
  return *s == '\0';
}

/* A literal piece with "{{" and "}}" folded. */
static int add_literal(kl__template *t, const char *src, size_t start,
                       size_t end) {
  tpl_part *p = add_part(t);
  if (!p || !(p->text = kl__malloc(end - start + 1))) return KL_ENOMEM;
  size_t n = 0;
  for (size_t i = start; i < end; i++) {
    p->text[n++] = src[i];
    if ((src[i] == '{' || src[i] == '}') && i + 1 < end && src[i + 1] == src[i])
      i++;
  }
  p->text[n] = '\0';
  p->offset = start;
  return 0;
}

static int add_hole(kl__template *t, const char *src, size_t open, size_t close,
                    tpl_error *err) {
  size_t start = open + 1, colon = start;
  while (colon < close && src[colon] != ':')
    colon++;
  char *expr_src = kl__strndup(src + start, colon - start);
  if (!expr_src) return KL_ENOMEM;
  bool empty = strspn(expr_src, " \t\n") == strlen(expr_src);
  if (empty) {
    kl__free(expr_src);
    return syntax(err, open, "%s",
                  "empty {} in a template: name a value, "
                  "as in {dram_throughput_pct:.1f} (write "
                  "{{ for a brace)");
  }
  size_t spec_len = colon < close ? close - colon - 1 : 0;
  char spec[16] = "";
  bool bad = spec_len >= sizeof(spec);
  if (!bad) {
    memcpy(spec, src + colon + 1, spec_len);
    spec[spec_len] = '\0';
    bad = !valid_spec(spec);
  }
  if (bad) {
    char shown[40];
    snprintf(shown, sizeof(shown), "%.*s", (int)(spec_len < 32 ? spec_len : 32),
             src + colon + 1);
    kl__free(expr_src);
    return syntax(err, colon + 1,
                  "bad format '%s' (expected [width][.precision][f|e|g|d|%%], "
                  "as in .1f)",
                  shown);
  }
  kl_expr *e = NULL;
  int rc = kl_expr_compile(&e, expr_src, NULL);
  if (rc < 0) {
    const kl_error *x = kl_error_last();
    if (rc == KL_ENOMEM || !x) {
      kl__free(expr_src);
      return KL_ENOMEM;
    }
    err->offset = start + kl__text_offset(expr_src, x->line, x->column);
    snprintf(err->message, sizeof(err->message), "%s", x->text);
    kl__free(expr_src);
    kl_error_clear();
    return KL_EINVALID;
  }
  kl__free(expr_src);
  tpl_part *p = add_part(t);
  if (!p) {
    kl_expr_free(e);
    return KL_ENOMEM;
  }
  p->expr = e;
  p->offset = start;
  memcpy(p->spec, spec, sizeof(spec));
  return 0;
}

int kl__template_compile(kl__template **out, const char *src, tpl_error *err) {
  *out = NULL;
  kl__template *t = kl__calloc(1, sizeof(*t));
  if (!t) return KL_ENOMEM;
  size_t lit = 0, i = 0;
  int rc = 0;
  while (src[i]) {
    if ((src[i] == '{' || src[i] == '}') && src[i + 1] == src[i]) {
      i += 2;
      continue;
    }
    if (src[i] == '}') {
      rc = syntax(err, i, "%s",
                  "a single '}' in a template (write }} for a "
                  "brace)");
      goto fail;
    }
    if (src[i] != '{') {
      i++;
      continue;
    }
    size_t close = i + 1;
    while (src[close] && src[close] != '}' && src[close] != '{')
      close++;
    if (src[close] != '}') {
      rc = syntax(err, i, "%s",
                  "a '{' without its '}' (write {{ for a "
                  "brace)");
      goto fail;
    }
    if ((i > lit && (rc = add_literal(t, src, lit, i)) < 0) ||
        (rc = add_hole(t, src, i, close, err)) < 0)
      goto fail;
    i = lit = close + 1;
  }
  if (i > lit && (rc = add_literal(t, src, lit, i)) < 0) goto fail;
  *out = t;
  return 0;
fail:
  kl__template_free(t);
  return rc;
}

/* One value by its format. */
static int put_value(kl_buf *out, const kl_value *v, const char *spec) {
  int width = 0, prec = -1;
  const char *s = spec;
  while (*s >= '0' && *s <= '9')
    width = width * 10 + (*s++ - '0');
  if (*s == '.') {
    prec = 0;
    for (s++; *s >= '0' && *s <= '9'; s++)
      prec = prec * 10 + (*s - '0');
  }
  char type = *s;
  if (width > 64) width = 64;
  if (prec > 20) prec = 20;
  switch (type) {
  case 'd':
    return kl__buf_printf(out, "%*.0f", width, round(v->f));
  case '%':
    return kl__buf_printf(out, "%*.*f%%", width > 0 ? width - 1 : 0,
                          prec < 0 ? 0 : prec, v->f * 100.0);
  case 'f':
  case 'e':
  case 'g': {
    char fmt[8] = {'%', '*', '.', '*', type, '\0'};
    return kl__buf_printf(out, fmt, width, prec < 0 ? 6 : prec, v->f);
  }
  default:
    if (prec >= 0) return kl__buf_printf(out, "%*.*g", width, prec, v->f);
    if (v->is_int) return kl__buf_printf(out, "%*lld", width, (long long)v->i);
    return kl__buf_printf(out, "%*.6g", width, v->f);
  }
}

int kl__template_render(kl_buf *out, const kl__template *t,
                        const kl_vars *vars) {
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < t->count; i++) {
    const tpl_part *p = &t->parts[i];
    if (p->text) {
      rc = kl__buf_puts(out, p->text);
      continue;
    }
    kl_value v;
    if (kl_expr_eval(&v, p->expr, vars) < 0 || !isfinite(v.f)) {
      kl_error_clear();
      rc = kl__buf_puts(out, "n/a");
    } else {
      rc = put_value(out, &v, p->spec);
    }
  }
  return rc < 0 ? kl__error_oom() : 0;
}
