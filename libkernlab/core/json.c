/* JSON documents with positions, and small accessors (see json.h). */
#include <stdio.h>
#include <string.h>

#include "json.h"

/* Line and column of byte `off` of `text`. */
static void position(const char *text, size_t off, int *line, int *col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < off && text[i]; i++, (*col)++)
    if (text[i] == '\n') (*line)++, *col = 0;
}

int kl__json_error_at_key(const char *text, const char *path, const char *key,
                          const char *fmt, const char *arg) {
  int line = 1, col = 1;
  char quoted[300];
  if (key && strlen(key) < sizeof(quoted) - 2) {
    snprintf(quoted, sizeof(quoted), "\"%s\"", key);
    const char *at = strstr(text, quoted);
    if (at) position(text, (size_t)(at - text), &line, &col);
  }
  return kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, path, line, col, NULL, fmt,
                      arg);
}

int kl__json_parse(json_object **out, const char *text, const char *path,
                   const char *what) {
  *out = NULL;
  json_tokener *tok = json_tokener_new();
  if (!tok) return kl__error_oom();
  json_object *o = json_tokener_parse_ex(tok, text, (int)strlen(text));
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  if (!o || jerr != json_tokener_success) {
    int line, col;
    position(text, json_tokener_get_parse_end(tok), &line, &col);
    json_tokener_free(tok);
    json_object_put(o);
    return kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, path, line, col, NULL,
                        "not JSON: %s", json_tokener_error_desc(jerr));
  }
  json_tokener_free(tok);
  if (!json_object_is_type(o, json_type_object)) {
    json_object_put(o);
    return kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, path, 1, 1, NULL,
                        "%s must be a JSON object", what);
  }
  *out = o;
  return 0;
}

json_object *kl__json_get(json_object *o, const char *key) {
  json_object *v = NULL;
  return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

double kl__json_num(json_object *o, const char *key) {
  json_object *v = kl__json_get(o, key);
  return v ? json_object_get_double(v) : 0;
}

const char *kl__json_text(json_object *o, const char *key) {
  json_object *v = kl__json_get(o, key);
  return v && json_object_is_type(v, json_type_string)
             ? json_object_get_string(v)
             : NULL;
}

int kl__json_dup(char **dst, json_object *o, const char *key) {
  const char *t = kl__json_text(o, key);
  *dst = NULL;
  return !t || (*dst = kl__strdup(t)) ? 0 : kl__error_oom();
}

int kl__json_read_file(json_object **out, const char *path, const char *what) {
  *out = NULL;
  kl_buf t = KL_BUF_INIT;
  int rc = kl__read_file(&t, path);
  if (rc == 0) rc = kl__json_parse(out, t.ptr ? t.ptr : "", path, what);
  kl_buf_dispose(&t);
  return rc;
}

bool kl__json_number(json_object *o, const char *key, double *out) {
  json_object *v = kl__json_get(o, key);
  if (!v || !(json_object_is_type(v, json_type_double) ||
              json_object_is_type(v, json_type_int)))
    return false;
  *out = json_object_get_double(v);
  return true;
}

bool kl__json_pair(json_object *o, const char *key, double *lo, double *hi) {
  json_object *v = kl__json_get(o, key);
  if (!v || !json_object_is_type(v, json_type_array) ||
      json_object_array_length(v) != 2)
    return false;
  *lo = json_object_get_double(json_object_array_get_idx(v, 0));
  *hi = json_object_get_double(json_object_array_get_idx(v, 1));
  return true;
}

json_object *kl__json_last_object(const char *text) {
  for (size_t i = strlen(text); i-- > 0;)
    if (text[i] == '{' && (i == 0 || text[i - 1] == '\n')) {
      json_object *o = json_tokener_parse(text + i);
      if (o && json_object_is_type(o, json_type_object)) return o;
      json_object_put(o);
    }
  return NULL;
}

json_object *kl__json_path(json_object *doc, const char *path) {
  json_object *v = kl__json_get(doc, path);
  if (v) return v;
  const char *dot = strchr(path, '.');
  if (!dot || dot == path) return NULL;
  char head[128];
  size_t n = (size_t)(dot - path);
  if (n >= sizeof head) return NULL;
  memcpy(head, path, n);
  head[n] = '\0';
  json_object *inner = kl__json_get(doc, head);
  return inner && json_object_is_type(inner, json_type_object)
             ? kl__json_path(inner, dot + 1)
             : NULL;
}
