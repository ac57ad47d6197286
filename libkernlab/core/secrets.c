/* The secrets kernlab knows of, and the redactor that blots them out.
 *
 * A secret is a value kernlab read for itself (a provider's API key, a
 * webhook URL and the token inside it) or found in its own environment
 * under a name that says it is one (*_API_KEY, *_TOKEN, *SECRET*,
 * *PASSWORD*, *_WEBHOOK_URL ...). Whatever comes back from a process that
 * ran candidate code (the worker's replies and log, a compiler's output)
 * passes through kl__redact before it reaches an error, a report or a
 * record, so even a value a candidate managed to print stops here. Each
 * secret is matched as it is and as it reads inside a JSON string (quotes,
 * backslashes and slashes escaped), since replies are JSON.
 *
 * The list is process-wide and only grows; a mutex guards it, so the
 * executors' threads may redact while another thread registers.
 *
 * kl__secrets_hide_environ also blanks the secrets' values in the block
 * the process's environment came in, which /proc/PID/environ shows: a
 * sandboxed child that may still read it (root's, where the GPU counters
 * keep CAP_SYS_ADMIN) finds the names and no values. getenv() keeps
 * working: the values move to the heap first. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MIN_SECRET 8 /* shorter values are words, not secrets */
#define MAX_SECRETS 256

extern char **environ;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *secrets[MAX_SECRETS];
static size_t nsecrets;
static bool scanned;

static bool known(const char *v) {
  for (size_t i = 0; i < nsecrets; i++)
    if (strcmp(secrets[i], v) == 0) return true;
  return false;
}

/* Called with the lock held. The value and its JSON-escaped forms. */
static void add_locked(const char *value) {
  if (!value || strlen(value) < MIN_SECRET) return;
  kl_buf esc = KL_BUF_INIT, slash = KL_BUF_INIT;
  /* JSON escaping: json-c writes '/' as "\/" unless told not to */
  for (const char *p = value; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '"' || c == '\\') {
      kl__buf_putc(&esc, '\\');
      kl__buf_putc(&slash, '\\');
    } else if (c == '/') {
      kl__buf_putc(&slash, '\\');
    }
    kl__buf_putc(&esc, (char)c);
    kl__buf_putc(&slash, (char)c);
  }
  const char *forms[3] = {value, esc.ptr, slash.ptr};
  for (size_t i = 0; i < 3; i++) {
    if (!forms[i] || known(forms[i]) || nsecrets == MAX_SECRETS) continue;
    char *copy = strdup(forms[i]); /* never freed: lives with the process */
    if (!copy) continue;
    /* longest first: a secret that holds another is blotted out whole */
    size_t at = nsecrets, len = strlen(copy);
    while (at > 0 && strlen(secrets[at - 1]) < len) {
      secrets[at] = secrets[at - 1];
      at--;
    }
    secrets[at] = copy;
    nsecrets++;
  }
  kl_buf_dispose(&esc);
  kl_buf_dispose(&slash);
}

/* A value and the parts of a URL that are tokens: a webhook URL carries
 * its token in its path or query. */
static void add_with_parts_locked(const char *value) {
  add_locked(value);
  const char *p = value ? strstr(value, "://") : NULL;
  if (!p) return;
  p = strchr(p + 3, '/');
  while (p && *p) {
    p++;
    size_t n = strcspn(p, "/?&=#");
    if (n >= 16) { /* ids and tokens; short parts are path words */
      char part[512];
      if (n < sizeof(part)) {
        memcpy(part, p, n);
        part[n] = '\0';
        add_locked(part);
      }
    }
    p += n;
  }
}

bool kl__secret_name(const char *name) {
  static const char *const words[] = {
      "API_KEY", "APIKEY",  "TOKEN",      "SECRET",      "PASSWORD",
      "PASSWD",  "WEBHOOK", "CREDENTIAL", "PRIVATE_KEY", "ACCESS_KEY"};
  char up[128];
  size_t n = strlen(name);
  if (n >= sizeof(up)) n = sizeof(up) - 1;
  for (size_t i = 0; i < n; i++)
    up[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
  up[n] = '\0';
  for (size_t i = 0; i < KL_ARRAY_SIZE(words); i++)
    if (strstr(up, words[i])) return true;
  /* FOO_KEY, but not KEYBOARD or a MONKEY */
  return n > 4 && strcmp(up + n - 4, "_KEY") == 0;
}

/* Every variable of the environment whose name says it is a secret. */
static void scan_locked(void) {
  if (scanned) return;
  scanned = true;
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    char name[128];
    if (!eq || (size_t)(eq - *e) >= sizeof(name)) continue;
    memcpy(name, *e, (size_t)(eq - *e));
    name[eq - *e] = '\0';
    if (kl__secret_name(name)) add_with_parts_locked(eq + 1);
  }
}

void kl__secret_add(const char *value) {
  pthread_mutex_lock(&lock);
  add_with_parts_locked(value);
  pthread_mutex_unlock(&lock);
}

/* Replace every secret in b (in place). */
static int redact_locked(kl_buf *b) {
  static const char mark[] = "[redacted]";
  for (size_t i = 0; i < nsecrets; i++) {
    size_t n = strlen(secrets[i]);
    char *hit;
    size_t from = 0;
    while (b->ptr && from < b->size &&
           (hit = strstr(b->ptr + from, secrets[i])) != NULL) {
      size_t at = (size_t)(hit - b->ptr);
      kl_buf out = KL_BUF_INIT;
      if (kl__buf_put(&out, b->ptr, at) < 0 || kl__buf_puts(&out, mark) < 0 ||
          kl__buf_puts(&out, b->ptr + at + n) < 0) {
        kl_buf_dispose(&out);
        return KL_ENOMEM;
      }
      kl__buf_give(b, &out);
      from = at + sizeof(mark) - 1;
    }
  }
  return 0;
}

int kl__redact(kl_buf *b) {
  pthread_mutex_lock(&lock);
  scan_locked();
  int rc = nsecrets ? redact_locked(b) : 0;
  pthread_mutex_unlock(&lock);
  return rc < 0 ? kl__error_oom() : 0;
}

void kl__redact_inplace(char *s, size_t cap) {
  if (!s || !cap) return;
  kl_buf b = KL_BUF_INIT;
  if (kl__buf_puts(&b, s) < 0) {
    kl_buf_dispose(&b);
    kl_error_clear();
    s[0] = '\0'; /* out of memory: say nothing rather than a secret */
    return;
  }
  if (kl__redact(&b) < 0) {
    kl_error_clear();
    s[0] = '\0';
  } else {
    size_t n = b.size < cap - 1 ? b.size : cap - 1;
    memcpy(s, b.ptr, n);
    s[n] = '\0';
  }
  kl_buf_dispose(&b);
}

char *kl__redact_dup(const char *s) {
  if (!s) return NULL;
  kl_buf b = KL_BUF_INIT;
  if (kl__buf_puts(&b, s) < 0 || kl__redact(&b) < 0) {
    kl_buf_dispose(&b);
    return NULL;
  }
  return kl__buf_detach(&b);
}

/* The process's original environment block, from /proc/self/stat (fields
 * 50 and 51: env_start, env_end). */
static bool env_block(char **start, char **end) {
  FILE *f = fopen("/proc/self/stat", "re");
  if (!f) return false;
  char buf[4096];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* the name may hold spaces */
  if (!p) return false;
  unsigned long long v[64] = {0};
  int field = 2; /* ')' ends field 2 */
  for (p++; *p && field < 52;) {
    while (*p == ' ')
      p++;
    if (!*p) break;
    field++;
    char *q;
    unsigned long long x = strtoull(p, &q, 10);
    if (q == p) x = 0;
    if (field < 64) v[field] = x;
    while (*q && *q != ' ')
      q++;
    p = q;
  }
  if (field < 51 || !v[50] || v[51] <= v[50]) return false;
  *start = (char *)(uintptr_t)v[50];
  *end = (char *)(uintptr_t)v[51];
  /* only where the environment still lies there: under valgrind, say,
   * the program's environment is a copy elsewhere and the kernel's
   * numbers name memory that is not the program's */
  for (char **e = environ; e && *e; e++)
    if (*e >= *start && *e < *end) return true;
  return false;
}

static void hide_environ(void) {
  char *start, *end;
  pthread_mutex_lock(&lock);
  scan_locked();
  pthread_mutex_unlock(&lock);
  if (!env_block(&start, &end)) return;
  for (char *e = start; e < end; e += strlen(e) + 1) {
    char *eq = strchr(e, '=');
    if (!eq || eq - e >= 128) continue;
    char name[128];
    memcpy(name, e, (size_t)(eq - e));
    name[eq - e] = '\0';
    if (!kl__secret_name(name) || !eq[1]) continue;
    char *now = getenv(name);
    if (now && now >= start && now < end) {
      char *copy = strdup(now); /* setenv copies again; keep it simple */
      if (!copy || setenv(name, copy, 1) != 0) {
        free(copy);
        continue; /* keep the value readable rather than lose it */
      }
      free(copy);
    }
    memset(eq + 1, 0, strlen(eq + 1));
  }
}

void kl__secrets_hide_environ(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, hide_environ);
}
