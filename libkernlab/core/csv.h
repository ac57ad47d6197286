/* Comma-separated values as Nsight Compute and spreadsheets write them
 * (RFC 4180): fields split at commas, a field in double quotes may hold
 * commas, line breaks and "" for a quote; CRLF or LF ends a record. The
 * reader walks a text in place, one record at a time, keeping each field's
 * line and column for located errors (csv.c). */
#ifndef KL_CORE_CSV_H
#define KL_CORE_CSV_H

#include <stddef.h>

typedef struct kl_csv_field {
  char *text; /* unquoted, NUL-terminated; owned by the record */
  int line, column;
} kl_csv_field;

typedef struct kl_csv_record {
  kl_csv_field *fields;
  size_t count, cap;
  int line; /* where the record starts */
} kl_csv_record;

typedef struct kl_csv_reader {
  const char *text, *pos, *end;
  int line;
  const char *line_start;
} kl_csv_reader;

void kl__csv_init(kl_csv_reader *r, const char *text, size_t len);
/* The next record into rec (its old fields freed first). @return 1 with a
 * record, 0 at the end of the text, KL_EINVALID located at path (a quote
 * never closed, text after a closing quote), KL_ENOMEM. */
int kl__csv_next(kl_csv_reader *r, kl_csv_record *rec, const char *path);
/* Skip to the start of the next line (a line that is no CSV record: a
 * program's own output ahead of ncu's header). @return 0 at the end. */
int kl__csv_skip_line(kl_csv_reader *r);
void kl__csv_record_free(kl_csv_record *rec);

#endif /* KL_CORE_CSV_H */
