/* JSON documents: parsed whole with located errors, and small accessors
 * over json-c objects (json.c). Ledgers, JSON Lines files that grow, are
 * the records module's (libkernlab/records). */
#ifndef KL_CORE_JSON_H
#define KL_CORE_JSON_H

#include <json-c/json.h>

#include "internal.h"

/* Parse a whole JSON document that must be an object (`what` names it in
 * the error); a syntax error is located "path:line:column". */
int kl__json_parse(json_object **out, const char *text, const char *path,
                   const char *what);
/* A JSON file, parsed whole (kl__json_parse); KL_ENOTFOUND when absent. */
int kl__json_read_file(json_object **out, const char *path, const char *what);
/* o[key], or NULL (o may be NULL). */
json_object *kl__json_get(json_object *o, const char *key);
/* o[key] as a number; 0 when absent (json-c's reading of other types). */
double kl__json_num(json_object *o, const char *key);
/* o[key] as a number into *out; false when absent or not a number. */
bool kl__json_number(json_object *o, const char *key, double *out);
/* o[key] when it is a string, else NULL. */
const char *kl__json_text(json_object *o, const char *key);
/* *dst = a copy of o[key] when it is a string, else NULL; KL_ENOMEM only
 * when the copy failed. */
int kl__json_dup(char **dst, json_object *o, const char *key);
/* o[key] as [low, high]; false when it is not a pair of numbers. */
bool kl__json_pair(json_object *o, const char *key, double *lo, double *hi);
/* The JSON object a program printed last: the last line of `text` that
 * starts an object parsing to the end of the text (earlier output may be
 * anything); NULL when there is none. The caller puts it. */
json_object *kl__json_last_object(const char *text);
/* doc's field at a dotted path ("ttft_ms.p90": a nested object's field; a
 * name with no such object is looked up whole first), or NULL. */
json_object *kl__json_path(json_object *doc, const char *path);
/* KL_EINVALID located at the first "key" in text (json-c keeps no
 * positions; 1:1 when absent), message fmt with one string argument. */
int kl__json_error_at_key(const char *text, const char *path, const char *key,
                          const char *fmt, const char *arg);

/* Run python3 -c script PATH [ARG] (core/python_script.c): its one JSON
 * object of output, or its {"error", "line", "column"} as the error
 * `path:line:column: message` (KL_EINVALID); KL_ENOTFOUND without
 * python3. */
int kl__python_script(json_object **out, const char *script, const char *path,
                      const char *arg, size_t max_output);

#endif /* KL_CORE_JSON_H */
