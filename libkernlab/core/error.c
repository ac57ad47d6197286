/* The error model: a per-thread last error plus owned diagnostic lists.
 *
 * A failing function records what went wrong in thread-local storage and
 * returns a negative KL_E* code; callers pass the code up without touching
 * the record, so the first, most precise message survives. Messages are one
 * line in GNU style ("path:line:column: text"); the optional snippet holds
 * the source line and a caret line for the CLI to print underneath. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct error_slot {
  kl_error e;
  char *message, *text, *path, *snippet;
} error_slot;

static _Thread_local error_slot last;

static void slot_reset(error_slot *s) {
  free(s->message);
  free(s->text);
  free(s->path);
  free(s->snippet);
  memset(s, 0, sizeof(*s));
}

/* A thread's last error is released when the thread exits: a key whose
 * destructor resets the slot, registered the first time a thread fails. */
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static _Thread_local int exit_key_set;

static void release_at_exit(void *slot) {
  slot_reset(slot);
}

static void make_exit_key(void) {
  pthread_key_create(&exit_key, release_at_exit);
}

static void arm_release(void) {
  if (exit_key_set) return;
  pthread_once(&exit_key_once, make_exit_key);
  exit_key_set = pthread_setspecific(exit_key, &last) == 0;
}

/* The error slot must work when allocation fails, so it uses the plain
 * allocator (never the test hook) and degrades to static strings. */
static char *plain_strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

static char *vformat(const char *fmt, va_list ap) {
  va_list cp;
  va_copy(cp, ap);
  int n = vsnprintf(NULL, 0, fmt, cp);
  va_end(cp);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

static char *aformat(const char *fmt, ...) KL_PRINTF(1, 2);
static char *aformat(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vformat(fmt, ap);
  va_end(ap);
  return s;
}

static char *format_message(const char *path, int line, int column,
                            const char *text) {
  if (path && line > 0 && column > 0)
    return aformat("%s:%d:%d: %s", path, line, column, text);
  if (path && line > 0) return aformat("%s:%d: %s", path, line, text);
  if (path) return aformat("%s: %s", path, text);
  return plain_strdup(text);
}

static int set_fields(int code, int domain, const char *path, int line,
                      int column, const char *snippet, const char *text,
                      int sys_errno) {
  slot_reset(&last);
  arm_release();
  last.text = plain_strdup(text);
  last.path = plain_strdup(path);
  last.snippet = plain_strdup(snippet);
  last.message = format_message(path, line, column, text);
  last.e.code = code;
  last.e.domain = domain;
  last.e.text = last.text ? last.text : "out of memory";
  last.e.message = last.message ? last.message : last.e.text;
  last.e.path = last.path;
  last.e.line = line;
  last.e.column = column;
  last.e.snippet = last.snippet;
  last.e.sys_errno = sys_errno;
  return code;
}

int kl__error(int code, int domain, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *text = vformat(fmt, ap);
  va_end(ap);
  set_fields(code, domain, NULL, 0, 0, NULL, text ? text : fmt, 0);
  free(text);
  return code;
}

int kl__error_at(int code, int domain, const char *path, int line, int column,
                 const char *snippet, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *text = vformat(fmt, ap);
  va_end(ap);
  set_fields(code, domain, path, line, column, snippet, text ? text : fmt, 0);
  free(text);
  return code;
}

int kl__error_os(int code, const char *path, const char *what) {
  int err = errno;
  char text[512];
  snprintf(text, sizeof(text), "%s: %s", what, strerror(err));
  return set_fields(code, KL_DOMAIN_OS, path, 0, 0, NULL, text, err);
}

int kl__errno_code(int err, bool mid_work) {
  switch (err) {
  case ENOENT:
    return KL_ENOTFOUND;
  case EISDIR:
  case ENOTDIR:
  case ELOOP:
  case ENAMETOOLONG:
    return KL_EINVALID;
  case EACCES:
  case EPERM:
  case EROFS:
    return mid_work ? KL_EIO : KL_EINVALID;
  default:
    return KL_EIO;
  }
}

int kl__error_oom(void) {
  return set_fields(KL_ENOMEM, KL_DOMAIN_NONE, NULL, 0, 0, NULL,
                    "out of memory", 0);
}

int kl__error_set(const kl_error *e) {
  set_fields(e->code, e->domain, e->path, e->line, e->column, e->snippet,
             e->text, e->sys_errno);
  return e->code;
}

const kl_error *kl_error_last(void) {
  return last.e.code ? &last.e : NULL;
}

void kl_error_clear(void) {
  slot_reset(&last);
}

const char *kl_strerror(int code) {
  switch (code) {
  case KL_OK:
    return "success";
  case KL_ERROR:
    return "failure";
  case KL_ENOMEM:
    return "out of memory";
  case KL_EINVALID:
    return "invalid input";
  case KL_ENOTFOUND:
    return "not found";
  case KL_EIO:
    return "input/output error";
  case KL_EBUSY:
    return "resource busy";
  case KL_EUSER:
    return "stopped by a callback";
  case KL_EUNSUPPORTED:
    return "not supported";
  case KL_EEXISTS:
    return "already exists";
  case KL_ENODEVICE:
    return "no usable device";
  case KL_ETIMEOUT:
    return "timed out";
  case KL_ECRASHED:
    return "crashed";
  case KL_EREJECTED:
    return "rejected";
  default:
    return "unknown error";
  }
}

/* ---- diagnostic lists ---------------------------------------------------- */

void kl__diag_addv(kl__diag_list *l, int code, int domain, const char *path,
                   int line, int column, const char *snippet, const char *fmt,
                   va_list ap) {
  if (!kl__array_reserve(&l->items, &l->cap, l->count + 1, sizeof(*l->items))) {
    l->oom = true;
    return;
  }
  /* the library's allocator: the out-of-memory sweeps reach this too */
  va_list cp;
  va_copy(cp, ap);
  int n = vsnprintf(NULL, 0, fmt, cp);
  va_end(cp);
  char *text = n >= 0 ? kl__malloc((size_t)n + 1) : NULL;
  if (!text) {
    l->oom = true;
    return;
  }
  vsnprintf(text, (size_t)n + 1, fmt, ap);
  kl__diag *d = &l->items[l->count];
  memset(d, 0, sizeof(*d));
  d->e.code = code;
  d->e.domain = domain;
  d->e.line = line;
  d->e.column = column;
  d->e.text = text;
  d->e.path = path ? kl__strdup(path) : NULL;
  d->e.snippet = snippet ? kl__strdup(snippet) : NULL;
  d->e.message = format_message(path, line, column, d->e.text);
  if (!d->e.text || (path && !d->e.path) || (snippet && !d->e.snippet) ||
      !d->e.message) {
    kl__free((void *)d->e.text);
    kl__free((void *)d->e.path);
    kl__free((void *)d->e.snippet);
    free((void *)d->e.message);
    l->oom = true;
    return;
  }
  d->order = (long)l->count;
  l->count++;
}

void kl__diag_add(kl__diag_list *l, int code, int domain, const char *path,
                  int line, int column, const char *snippet, const char *fmt,
                  ...) {
  va_list ap;
  va_start(ap, fmt);
  kl__diag_addv(l, code, domain, path, line, column, snippet, fmt, ap);
  va_end(ap);
}

static int diag_cmp(const void *pa, const void *pb) {
  const kl__diag *a = pa, *b = pb;
  if (a->e.line != b->e.line) return a->e.line < b->e.line ? -1 : 1;
  if (a->e.column != b->e.column) return a->e.column < b->e.column ? -1 : 1;
  return a->order < b->order ? -1 : a->order > b->order;
}

void kl__diag_sort(kl__diag_list *l) {
  if (l->count > 1) qsort(l->items, l->count, sizeof(*l->items), diag_cmp);
}

int kl__diag_report(kl__diag_list *l, kl_diag_fn on_diag, void *payload) {
  if (l->oom) return kl__error_oom();
  if (l->count == 0) return 0;
  kl__diag_sort(l);
  for (size_t i = 0; i < l->count; i++)
    if (on_diag && on_diag(&l->items[i].e, payload)) break;
  kl_error first = l->items[0].e;
  char text[1024];
  if (l->count > 1) {
    snprintf(text, sizeof(text), "%s (and %zu more error%s)", first.text,
             l->count - 1, l->count > 2 ? "s" : "");
    first.text = text;
  }
  return kl__error_set(&first);
}

void kl__diag_clear(kl__diag_list *l) {
  for (size_t i = 0; i < l->count; i++) {
    kl__free((void *)l->items[i].e.text);
    kl__free((void *)l->items[i].e.path);
    kl__free((void *)l->items[i].e.snippet);
    free((void *)l->items[i].e.message);
  }
  kl__free(l->items);
  memset(l, 0, sizeof(*l));
}
