/* The agent proposer's inbox: candidates an outside agent hands to a
 * running `kl run --proposer agent`, and which iteration took each.
 *
 *   CASE/agent/inbox/<stamp>-<sha256>.<ext>        a candidate, waiting
 *   CASE/agent/inbox/<stamp>-<sha256>.<ext>.memo   its one-line memo
 *   CASE/agent/inbox/STOP                          no more proposals
 *   RUN/agent/NNN-<name>[.memo]                    taken by iteration NNN
 *
 * The stamp (nanoseconds since the epoch, zero-padded) makes name order
 * arrival order. A candidate is written under a dot name and renamed into
 * place, its memo first, so a taker never sees half a file or a kernel
 * without its memo. Taking is a rename into the run's folder named by the
 * iteration, before the proposal is evaluated: a run killed before that
 * iteration's commit finds it there when it resumes and proposes it
 * again, so no proposal is lost or taken twice. One reader, one writer:
 * both are here (docs/architecture.md, Records). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "records.h"

static char *inbox_dir(const char *case_dir) {
  return kl__path_join(case_dir, "agent/inbox");
}

static int mkdir_if_missing(const char *path) {
  int rc = kl__record_mkdir(path);
  return rc == KL_EEXISTS ? 0 : rc;
}

int kl__inbox_put(kl_buf *name, const char *case_dir, const char *source,
                  const char *memo, const char *ext) {
  char *agent = kl__path_join(case_dir, "agent"), *dir = inbox_dir(case_dir);
  kl_buf base = KL_BUF_INIT, path = KL_BUF_INIT, tmp = KL_BUF_INIT;
  int rc = 0;
  if (!agent || !dir) {
    rc = kl__error_oom();
    goto done;
  }
  if ((rc = mkdir_if_missing(agent)) < 0 || (rc = mkdir_if_missing(dir)) < 0)
    goto done;
  kl__sha256 h;
  char hex[65];
  kl__sha256_init(&h);
  kl__sha256_update(&h, source, strlen(source));
  kl__sha256_hex(&h, hex);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  kl__buf_printf(&base, "%020lld-%.16s%s",
                 (long long)now.tv_sec * 1000000000LL + now.tv_nsec, hex,
                 ext ? ext : "");
  if ((rc = kl__buf_status(&base)) < 0) goto done;
  if (memo && memo[0]) {
    kl__buf_printf(&tmp, "%s/.%s.memo", dir, base.ptr);
    kl__buf_printf(&path, "%s/%s.memo", dir, base.ptr);
    if ((rc = kl__buf_status(&tmp)) < 0 || (rc = kl__buf_status(&path)) < 0 ||
        (rc = kl__record_new_file(tmp.ptr, memo, strlen(memo))) < 0 ||
        (rc = kl__record_rename(tmp.ptr, path.ptr)) < 0)
      goto done;
  }
  tmp.size = path.size = 0;
  kl__buf_printf(&tmp, "%s/.%s", dir, base.ptr);
  kl__buf_printf(&path, "%s/%s", dir, base.ptr);
  if ((rc = kl__buf_status(&tmp)) < 0 || (rc = kl__buf_status(&path)) < 0 ||
      (rc = kl__record_new_file(tmp.ptr, source, strlen(source))) < 0 ||
      (rc = kl__record_rename(tmp.ptr, path.ptr)) < 0)
    goto done;
  kl__buf_give(name, &base);
done:
  kl__free(agent);
  kl__free(dir);
  kl_buf_dispose(&base);
  kl_buf_dispose(&path);
  kl_buf_dispose(&tmp);
  return rc;
}

int kl__inbox_stop(const char *case_dir) {
  char *agent = kl__path_join(case_dir, "agent"), *dir = inbox_dir(case_dir);
  kl_buf path = KL_BUF_INIT;
  int rc = 0;
  if (!agent || !dir)
    rc = kl__error_oom();
  else if ((rc = mkdir_if_missing(agent)) == 0 &&
           (rc = mkdir_if_missing(dir)) == 0) {
    kl__buf_printf(&path, "%s/STOP", dir);
    if ((rc = kl__buf_status(&path)) == 0) {
      rc = kl__record_new_file(path.ptr, "", 0);
      if (rc == KL_EEXISTS) rc = 0;
    }
  }
  kl__free(agent);
  kl__free(dir);
  kl_buf_dispose(&path);
  return rc;
}

static bool is_memo(const char *name) {
  size_t n = strlen(name);
  return n > 5 && strcmp(name + n - 5, ".memo") == 0;
}

/* the first name in `dir` (name order) that is a candidate: not hidden,
 * not a memo, not STOP; with `prefix`, the first that starts with it.
 * NULL: none (or no folder). */
static char *first_candidate(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  if (!d) return NULL;
  char *best = NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *n = e->d_name;
    if (n[0] == '.' || is_memo(n) || strcmp(n, "STOP") == 0) continue;
    if (prefix && strncmp(n, prefix, strlen(prefix)) != 0) continue;
    if (!best || strcmp(n, best) < 0) {
      char *copy = kl__strdup(n);
      if (!copy) break;
      kl__free(best);
      best = copy;
    }
  }
  closedir(d);
  return best;
}

/* the candidate at dir/name and its memo (dir/name.memo, may be absent) */
static int read_taken(char **source, char **memo, const char *dir,
                      const char *name) {
  kl_buf path = KL_BUF_INIT, text = KL_BUF_INIT;
  kl__buf_printf(&path, "%s/%s", dir, name);
  int rc = kl__buf_status(&path);
  if (rc == 0) rc = kl__read_file(&text, path.ptr);
  if (rc == 0) {
    *source = kl__buf_detach(&text);
    kl__buf_puts(&path, ".memo");
    if (kl__read_file(&text, path.ptr) == 0) *memo = kl__buf_detach(&text);
    kl_error_clear();
    rc = *source ? 0 : kl__error_oom();
  }
  kl_buf_dispose(&path);
  kl_buf_dispose(&text);
  return rc;
}

int kl__inbox_take(char **source, char **memo, const char *case_dir,
                   const char *run_dir, int iteration) {
  *source = *memo = NULL;
  char *taken_dir = kl__path_join(run_dir, "agent");
  char *dir = inbox_dir(case_dir);
  char prefix[16], *name = NULL;
  kl_buf from = KL_BUF_INIT, to = KL_BUF_INIT;
  int rc = 0;
  if (!taken_dir || !dir) {
    rc = kl__error_oom();
    goto done;
  }
  snprintf(prefix, sizeof(prefix), "%03d-", iteration);
  /* taken by this iteration before a kill: the same proposal again */
  if ((name = first_candidate(taken_dir, prefix))) {
    rc = read_taken(source, memo, taken_dir, name);
    goto done;
  }
  if (!(name = first_candidate(dir, NULL))) {
    kl__buf_printf(&from, "%s/STOP", dir);
    kl__buf_printf(&to, "%s/STOP-%03d", taken_dir, iteration);
    if ((rc = kl__buf_status(&from)) < 0 || (rc = kl__buf_status(&to)) < 0)
      goto done;
    struct stat st;
    if (stat(from.ptr, &st) != 0) {
      rc = 2; /* nothing yet */
      goto done;
    }
    if ((rc = mkdir_if_missing(taken_dir)) == 0 &&
        (rc = kl__record_rename(from.ptr, to.ptr)) == 0)
      rc = 1;
    goto done;
  }
  if ((rc = mkdir_if_missing(taken_dir)) < 0) goto done;
  kl__buf_printf(&from, "%s/%s.memo", dir, name);
  kl__buf_printf(&to, "%s/%s%s.memo", taken_dir, prefix, name);
  if ((rc = kl__buf_status(&from)) < 0 || (rc = kl__buf_status(&to)) < 0)
    goto done;
  struct stat st;
  if (stat(from.ptr, &st) == 0 &&
      (rc = kl__record_rename(from.ptr, to.ptr)) < 0)
    goto done;
  from.size = to.size = 0;
  kl__buf_printf(&from, "%s/%s", dir, name);
  kl__buf_printf(&to, "%s%s", prefix, name);
  if ((rc = kl__buf_status(&from)) < 0 || (rc = kl__buf_status(&to)) < 0)
    goto done;
  kl__free(name);
  name = kl__buf_detach(&to);
  kl__buf_printf(&to, "%s/%s", taken_dir, name);
  if ((rc = kl__buf_status(&to)) < 0 ||
      (rc = kl__record_rename(from.ptr, to.ptr)) < 0)
    goto done;
  rc = read_taken(source, memo, taken_dir, name);
done:
  kl__free(taken_dir);
  kl__free(dir);
  kl__free(name);
  kl_buf_dispose(&from);
  kl_buf_dispose(&to);
  return rc;
}

int kl__inbox_taken_by(char **run, int *iteration, const char *case_dir,
                       const char *name) {
  *run = NULL;
  *iteration = 0;
  char *runs = kl__path_join(case_dir, "runs");
  if (!runs) return kl__error_oom();
  DIR *d = opendir(runs);
  int rc = 2;
  struct dirent *e;
  while (d && rc == 2 && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    kl_buf dir = KL_BUF_INIT;
    kl__buf_printf(&dir, "%s/%s/agent", runs, e->d_name);
    DIR *taken = dir.ptr ? opendir(dir.ptr) : NULL;
    struct dirent *t;
    while (taken && rc == 2 && (t = readdir(taken))) {
      char *end = NULL;
      long n = strtol(t->d_name, &end, 10);
      if (end && end != t->d_name && *end == '-' &&
          strcmp(end + 1, name) == 0) {
        *iteration = (int)n;
        *run = kl__strdup(e->d_name);
        rc = *run ? 0 : kl__error_oom();
      }
    }
    if (taken) closedir(taken);
    kl_buf_dispose(&dir);
  }
  if (d) closedir(d);
  kl__free(runs);
  return rc;
}
