/* Append-only ledgers: JSON Lines and CSV files that survive a kill at any
 * instant.
 *
 * A record is one line, written with a single write() and fsync'd before
 * the call returns, so a killed writer leaves either the whole line or none
 * of it. A torn tail (a power cut, a full disk) is cut back to the last
 * complete line when the file is next appended to, and skipped by readers,
 * so every file stays parseable.
 *
 * Every write of a record goes through this file (ledger lines, new files,
 * whole files replaced, folders, renames), and each through one fault
 * point (fault.c), so a test can stop a run at any record write. */
#ifndef KL_CORE_LEDGER_H
#define KL_CORE_LEDGER_H

#include <json-c/json.h>

#include "internal.h"

/* Append `line` (no newline; one is added) to `path`, creating the file
 * with `header` as its first line when it is new (NULL: none). KL_EIO with
 * the path and the reason. */
int kl__ledger_append(const char *path, const char *line, const char *header);

/* Call fn for each complete JSON line of `path` (1-based line numbers); a
 * missing file has no lines. A complete line that does not parse is
 * KL_EINVALID "path:line:column: message"; fn's negative return stops the
 * reading and is returned. */
typedef int (*kl__ledger_fn)(json_object *rec, int line, void *payload);
int kl__ledger_read(const char *path, kl__ledger_fn fn, void *payload);

/* Write a whole file through a temporary name and rename(), fsync'd. */
int kl__write_file_atomic(const char *path, const char *data, size_t n);

/* The other writes of records, each through a fault point (fault.c) like
 * the two above: a new file (KL_EEXISTS when it is there), fsync'd; a
 * folder; a rename (of a folder set aside, or of a run made whole). */
int kl__record_new_file(const char *path, const char *data, size_t n);
int kl__record_mkdir(const char *path);
int kl__record_rename(const char *from, const char *to);

/* Parse a whole JSON document that must be an object (`what` names it in
 * the error); a syntax error is located "path:line:column". */
int kl__json_parse(json_object **out, const char *text, const char *path,
                   const char *what);
/* o[key], or NULL (o may be NULL). */
json_object *kl__json_get(json_object *o, const char *key);
/* o[key] as a number; 0 when absent (json-c's reading of other types). */
double kl__json_num(json_object *o, const char *key);
/* o[key] when it is a string, else NULL. */
const char *kl__json_text(json_object *o, const char *key);
/* *dst = a copy of o[key] when it is a string, else NULL; KL_ENOMEM only
 * when the copy failed. */
int kl__json_dup(char **dst, json_object *o, const char *key);
/* KL_EINVALID located at the first "key" in text (json-c keeps no
 * positions; 1:1 when absent), message fmt with one string argument. */
int kl__json_error_at_key(const char *text, const char *path, const char *key,
                          const char *fmt, const char *arg);

#endif /* KL_CORE_LEDGER_H */
