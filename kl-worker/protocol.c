/* The protocol's two ends in the worker: request lines in, reply lines
 * out, both on fd 3 (KL_WORKER_FD); and the small readers of a request's
 * fields every operation uses. */
#define _GNU_SOURCE
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "worker_internal.h"

#define KL_WORKER_FD 3

char *klw_read_line(void) {
  static char *buf;
  static size_t cap, len, start;
  for (;;) {
    char *nl = len > start ? memchr(buf + start, '\n', len - start) : NULL;
    if (nl) {
      *nl = '\0';
      char *line = buf + start;
      start = (size_t)(nl - buf) + 1;
      return line;
    }
    if (start > 0) {
      memmove(buf, buf + start, len - start);
      len -= start;
      start = 0;
    }
    if (len + 65536 > cap) {
      cap = (len + 65536) * 2;
      char *nb = realloc(buf, cap);
      if (!nb) return NULL;
      buf = nb;
    }
    ssize_t n = read(KL_WORKER_FD, buf + len, cap - len - 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return NULL;
    len += (size_t)n;
  }
}

void klw_reply(json_object *o) {
  const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(KL_WORKER_FD, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) exit(3);
    s += w;
    n -= (size_t)w;
  }
  if (write(KL_WORKER_FD, "\n", 1) != 1) exit(3);
  json_object_put(o);
}

void klw_reply_cheat(const char *gate, int culprit, const char *text) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(0));
  json_object_object_add(o, "error", json_object_new_string(text));
  json_object_object_add(o, "code", json_object_new_string("cheat"));
  json_object_object_add(o, "gate", json_object_new_string(gate));
  json_object_object_add(o, "culprit", json_object_new_int(culprit));
  klw_reply(o);
}

void klw_reply_error(const char *fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(0));
  json_object_object_add(o, "error", json_object_new_string(text));
  klw_reply(o);
}

json_object *klw_failure(const char *code, const char *msg) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(0));
  json_object_object_add(o, "error", json_object_new_string(msg));
  json_object_object_add(o, "code", json_object_new_string(code));
  return o;
}

void klw_reply_code(const char *code, const char *msg) {
  klw_reply(klw_failure(code, msg));
}

int64_t klw_get_int(json_object *req, const char *key, int64_t dflt) {
  json_object *v;
  return json_object_object_get_ex(req, key, &v) ? json_object_get_int64(v)
                                                 : dflt;
}

double klw_get_double(json_object *req, const char *key, double dflt) {
  json_object *v;
  return json_object_object_get_ex(req, key, &v) ? json_object_get_double(v)
                                                 : dflt;
}

double klw_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}
