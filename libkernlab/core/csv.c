/* A CSV reader for what Nsight Compute writes (csv.h). Records are read
 * one at a time from a text held in memory; each field is copied out
 * unquoted. A field that starts with a quote runs to the matching quote
 * ("" inside is one quote) and may span lines; anything but a comma or the
 * end of the line after it is an error at its column. */
#include <string.h>

#include "csv.h"
#include "internal.h"

void kl__csv_init(kl_csv_reader *r, const char *text, size_t len) {
  r->text = r->pos = r->line_start = text;
  r->end = text + len;
  r->line = 1;
}

void kl__csv_record_free(kl_csv_record *rec) {
  for (size_t i = 0; i < rec->count; i++)
    kl__free(rec->fields[i].text);
  kl__free(rec->fields);
  memset(rec, 0, sizeof(*rec));
}

static void clear(kl_csv_record *rec) {
  for (size_t i = 0; i < rec->count; i++)
    kl__free(rec->fields[i].text);
  rec->count = 0;
}

static int column(const kl_csv_reader *r, const char *at) {
  return (int)(at - r->line_start) + 1;
}

static void newline(kl_csv_reader *r, const char *after) {
  r->line++;
  r->line_start = after;
}

/* One field starting at r->pos; leaves r->pos on the comma, the line end
 * or the end of the text. */
static int read_field(kl_csv_reader *r, kl_csv_record *rec, const char *path) {
  kl_buf b = KL_BUF_INIT;
  int line = r->line, col = column(r, r->pos);
  const char *p = r->pos;
  if (p < r->end && *p == '"') {
    p++;
    for (;;) {
      if (p >= r->end) {
        kl_buf_dispose(&b);
        return kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, path, line, col, NULL,
                            "a quoted field is never closed");
      }
      if (*p == '"') {
        if (p + 1 < r->end && p[1] == '"') {
          kl__buf_putc(&b, '"');
          p += 2;
          continue;
        }
        p++;
        break;
      }
      if (*p == '\n') newline(r, p + 1);
      kl__buf_putc(&b, *p);
      p++;
    }
    if (p < r->end && *p == '\r') p++;
    if (p < r->end && *p != ',' && *p != '\n') {
      kl_buf_dispose(&b);
      return kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, path, r->line,
                          column(r, p), NULL,
                          "text after a quoted field's closing quote");
    }
  } else {
    const char *s = p;
    while (p < r->end && *p != ',' && *p != '\n')
      p++;
    size_t n = (size_t)(p - s);
    if (n > 0 && s[n - 1] == '\r' && (p >= r->end || *p == '\n')) n--;
    kl__buf_put(&b, s, n);
  }
  r->pos = p;
  if (kl__buf_status(&b) < 0 ||
      KL__GROW(rec->fields, rec->cap, rec->count + 1) < 0) {
    kl_buf_dispose(&b);
    return kl__error_oom();
  }
  char *text = kl__buf_detach(&b);
  if (!text && !(text = kl__strdup(""))) return kl__error_oom();
  rec->fields[rec->count++] = (kl_csv_field){text, line, col};
  return 0;
}

int kl__csv_next(kl_csv_reader *r, kl_csv_record *rec, const char *path) {
  clear(rec);
  if (r->pos >= r->end) return 0;
  rec->line = r->line;
  for (;;) {
    int rc = read_field(r, rec, path);
    if (rc < 0) return rc;
    if (r->pos >= r->end) return 1;
    if (*r->pos == '\n') {
      r->pos++;
      newline(r, r->pos);
      return 1;
    }
    r->pos++; /* the comma */
  }
}

int kl__csv_skip_line(kl_csv_reader *r) {
  const char *nl = memchr(r->pos, '\n', (size_t)(r->end - r->pos));
  if (!nl) {
    r->pos = r->end;
    return 0;
  }
  r->pos = nl + 1;
  newline(r, r->pos);
  return r->pos < r->end;
}
