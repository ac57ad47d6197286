/* Every write of a record, and the ledgers' reader (see records.h).
 *
 * A ledger line is one write() of the whole line and its newline, fsync'd
 * before the call returns, so a killed writer leaves the whole record or
 * none of it; a torn tail (a power cut, a full disk) is cut back to the
 * last complete line when the file is next appended to, and skipped by
 * readers, so every file stays parseable. Each write first passes a fault
 * point (fault.c), so a test can kill, tear or fail the run at any one. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernlab/history.h"
#include "records.h"

/* Cut a torn last line (no newline) back to the last complete one. */
static int repair_tail(int fd, const char *path) {
  struct stat st;
  if (fstat(fd, &st) < 0) return kl__error_os(KL_EIO, path, "stat");
  off_t end = st.st_size;
  if (end == 0) return 0;
  char c;
  if (pread(fd, &c, 1, end - 1) != 1) return kl__error_os(KL_EIO, path, "read");
  if (c == '\n') return 0;
  char buf[4096];
  off_t pos = end;
  while (pos > 0) {
    size_t n = pos > (off_t)sizeof(buf) ? sizeof(buf) : (size_t)pos;
    pos -= (off_t)n;
    if (pread(fd, buf, n, pos) != (ssize_t)n)
      return kl__error_os(KL_EIO, path, "read");
    for (size_t i = n; i-- > 0;)
      if (buf[i] == '\n') {
        if (ftruncate(fd, pos + (off_t)i + 1) < 0)
          return kl__error_os(KL_EIO, path, "truncate a torn line");
        return 0;
      }
  }
  if (ftruncate(fd, 0) < 0)
    return kl__error_os(KL_EIO, path, "truncate a torn line");
  return 0;
}

/* A fault point's answer as an error (fail) or a torn write (torn: half
 * the bytes, then the process dies). 0: go on. */
static int fault(const char *op, const char *path) {
  int f = kl__fault_point(op, path);
  if (f == KL__FAULT_FAIL) return kl__error_os(KL_EIO, path, op);
  return f == KL__FAULT_TORN ? 1 : 0;
}

static void torn_write(int fd, const char *data, size_t n) {
  if (n > 1) (void)!write(fd, data, n / 2);
  fsync(fd);
  kl__fault_die();
}

int kl__ledger_append(const char *path, const char *line, const char *header) {
  int torn = fault("append", path);
  if (torn < 0) return torn;
  int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return kl__error_os(KL_EIO, path, "open");
  kl_buf b = KL_BUF_INIT;
  struct stat st;
  int rc = repair_tail(fd, path);
  if (rc < 0) goto done;
  if (fstat(fd, &st) < 0) {
    rc = kl__error_os(KL_EIO, path, "stat");
    goto done;
  }
  if (st.st_size == 0 && header) {
    kl__buf_puts(&b, header);
    kl__buf_putc(&b, '\n');
  }
  kl__buf_puts(&b, line);
  kl__buf_putc(&b, '\n');
  if ((rc = kl__buf_status(&b)) < 0) goto done;
  if (torn) torn_write(fd, b.ptr, b.size);
  /* one write: a kill leaves the whole record or none of it */
  if (kl__write_all(fd, b.ptr, b.size) < 0)
    rc = kl__error_os(KL_EIO, path, "write");
  else if (fsync(fd) < 0)
    rc = kl__error_os(KL_EIO, path, "fsync");
done:
  kl_buf_dispose(&b);
  if (close(fd) < 0 && rc == 0) rc = kl__error_os(KL_EIO, path, "close");
  return rc;
}

int kl__ledger_read(const char *path, kl__ledger_fn fn, void *payload) {
  kl_buf text = KL_BUF_INIT;
  int rc = kl__read_file(&text, path);
  if (rc == KL_ENOTFOUND) {
    kl_error_clear();
    return 0;
  }
  if (rc < 0) return rc;
  json_tokener *tok = json_tokener_new();
  if (!tok) {
    kl_buf_dispose(&text);
    return kl__error_oom();
  }
  const char *p = text.ptr ? text.ptr : "";
  int line = 0;
  while (*p && rc >= 0) {
    const char *nl = strchr(p, '\n');
    line++;
    if (!nl) break; /* a torn last line: not a record */
    size_t len = (size_t)(nl - p);
    if (len == 0 || (len == 1 && p[0] == '\r')) {
      p = nl + 1;
      continue;
    }
    json_tokener_reset(tok);
    json_object *rec = json_tokener_parse_ex(tok, p, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    if (!rec || jerr != json_tokener_success ||
        !json_object_is_type(rec, json_type_object)) {
      json_object_put(rec);
      size_t col = json_tokener_get_parse_end(tok) + 1;
      /* a line in the middle is never cut on resume: say what is wrong
       * and what to do (json-c's own word for a cut line is "continue") */
      const char *why = rec ? "valid JSON, but not an object"
                        : jerr == json_tokener_continue
                            ? "not valid JSON: the line ends inside a value"
                            : json_tokener_error_desc(jerr);
      rc = kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, path, line,
                        (int)(col > len ? len : col), NULL,
                        "%s%s; each line of a ledger is one JSON object. "
                        "kl run --resume cuts only a torn last line: move "
                        "or mend this one to go on",
                        rec || jerr == json_tokener_continue ? ""
                                                             : "not valid "
                                                               "JSON: ",
                        why);
      break;
    }
    rc = fn(rec, line, payload);
    json_object_put(rec);
    p = nl + 1;
  }
  json_tokener_free(tok);
  kl_buf_dispose(&text);
  return rc < 0 ? rc : 0;
}

int kl__record_replace(const char *path, const char *data, size_t n) {
  int torn = fault("replace", path);
  if (torn < 0) return torn;
  return kl__write_file_atomic_with(path, data, n, torn ? torn_write : NULL);
}

int kl__record_new_file(const char *path, const char *data, size_t n) {
  int torn = fault("create", path);
  if (torn < 0) return torn;
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return kl__error_os(errno == EEXIST ? KL_EEXISTS
                                        : kl__errno_code(errno, true),
                        path, "cannot create");
  if (torn) torn_write(fd, data, n);
  int rc = 0;
  if (kl__write_all(fd, data, n) < 0 || fsync(fd) < 0)
    rc = kl__error_os(KL_EIO, path, "cannot write");
  if (close(fd) < 0 && rc == 0) rc = kl__error_os(KL_EIO, path, "cannot write");
  return rc;
}

int kl__record_mkdir(const char *path) {
  int rc = fault("mkdir", path);
  if (rc < 0) return rc;
  if (rc) kl__fault_die(); /* a folder is made whole or not at all */
  if (mkdir(path, 0755) < 0)
    return kl__error_os(errno == EEXIST ? KL_EEXISTS
                                        : kl__errno_code(errno, true),
                        path, "cannot create");
  return 0;
}

int kl__record_rename(const char *from, const char *to) {
  int rc = fault("rename", to);
  if (rc < 0) return rc;
  if (rc) kl__fault_die();
  if (rename(from, to) < 0) return kl__error_os(KL_EIO, from, "cannot rename");
  return 0;
}

/* ---- any ledger, for the public API (kernlab/history.h) ------------------ */

typedef struct ledger_relay {
  kl_ledger_fn fn;
  void *payload;
} ledger_relay;

static int relay_line(json_object *rec, int line, void *payload) {
  ledger_relay *lr = payload;
  const char *text =
      json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN);
  if (!text) return kl__error_oom();
  return lr->fn(text, line, lr->payload);
}

int kl_ledger_read(const char *path, kl_ledger_fn fn, void *payload) {
  if (!path || !fn)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_ledger_read: no path or no function");
  ledger_relay lr = {fn, payload};
  return kl__ledger_read(path, relay_line, &lr);
}
