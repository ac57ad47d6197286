/* A run's folder and the files in it, and the case's lock.
 *
 * runs/<id>/ is made whole or not at all: it is built under a hidden name
 * (.ID.new, which every lister skips) with its run.json, then renamed into
 * place, so a run that exists can always be resumed. summary.json alone is
 * replaced, whole, at the end of each session; the iteration folders are
 * iteration.c's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "../core/json.h"
#include "records.h"

#define RUN_VERSION 1

/* ---- run.json
 * ----------------------------------------------------------------- */

/* run.json's "sampling": kl_time_options' settings, which a resumed run
 * samples with. The writer refuses a value the reader would, and the
 * reader refuses a field that is there and not what the writer writes
 * (not a default: the run would sample otherwise than recorded); a field
 * that is not there is the default. */
#define SAMPLING_FIELDS 6
static const struct {
  const char *name;
  double max;
  bool whole;
} sampling_fields[SAMPLING_FIELDS] = {
    {"warmup", 2147483647.0, true},      {"min_samples", 1e15, true},
    {"max_samples", 1e15, true},         {"target_rel_ci", 1, false},
    {"time_cap_ms", 2147483647.0, true}, {"block_rounds", 1e15, true}};

static void sampling_values(double v[SAMPLING_FIELDS],
                            const kl_time_options *o) {
  v[0] = o->warmup;
  v[1] = (double)o->min_samples;
  v[2] = (double)o->max_samples;
  v[3] = o->target_rel_ci;
  v[4] = o->time_cap_ms;
  v[5] = (double)o->block_rounds;
}

/* The first field whose value is out of range (NaN included), or NULL. */
static const char *sampling_bad(const double v[SAMPLING_FIELDS]) {
  for (int i = 0; i < SAMPLING_FIELDS; i++)
    if (!(v[i] >= 0) ||
        !(sampling_fields[i].whole ? v[i] <= sampling_fields[i].max
                                   : v[i] < sampling_fields[i].max) ||
        (sampling_fields[i].whole && v[i] != (double)(long long)v[i]))
      return sampling_fields[i].name;
  return NULL;
}

/* The sampling object t into *o; NULL, or the field that is not what the
 * writer writes ("sampling" when t is no object). */
static const char *sampling_read(kl_time_options *o, json_object *t) {
  kl_time_options defaults = KL_TIME_OPTIONS_INIT;
  *o = defaults;
  if (!json_object_is_type(t, json_type_object)) return "sampling";
  json_object *cold = kl__json_get(t, "cold");
  if (cold && !json_object_is_type(cold, json_type_boolean))
    return "sampling.cold";
  double v[SAMPLING_FIELDS];
  sampling_values(v, o);
  for (int i = 0; i < SAMPLING_FIELDS; i++)
    if (kl__json_get(t, sampling_fields[i].name) &&
        !kl__json_number(t, sampling_fields[i].name, &v[i]))
      v[i] = -1; /* not a number */
  const char *bad = sampling_bad(v);
  if (bad) return bad;
  if (cold) o->cold = json_object_get_boolean(cold);
  o->warmup = (int)v[0];
  o->min_samples = (size_t)v[1];
  o->max_samples = (size_t)v[2];
  o->target_rel_ci = v[3];
  o->time_cap_ms = (int)v[4];
  o->block_rounds = (size_t)v[5];
  return NULL;
}

static int meta_json(kl_buf *b, const kl__run_meta *m) {
  kl__buf_printf(b, "{\"v\":%d,\"run\":", RUN_VERSION);
  kl__buf_json_string(b, m->run);
  kl__buf_puts(b, ",\"case\":");
  kl__buf_json_string(b, m->case_name);
  kl__buf_printf(b,
                 ",\"seed\":%llu,\"proposer\":", (unsigned long long)m->seed);
  kl__buf_json_string(b, m->proposer);
  kl__buf_puts(b, ",\"strategy\":");
  kl__buf_json_string(b, m->strategy);
  kl__buf_printf(b,
                 ",\"iterations\":%lld,\"patience\":%lld,"
                 "\"min_gain_pct\":%g,\"max_wall_s\":%g,"
                 "\"max_worker_s\":%g,\"max_usd\":%g,"
                 "\"started\":%lld,\"kernlab\":\"%s\"",
                 m->iterations, m->patience, m->min_gain_pct, m->max_wall_s,
                 m->max_worker_s, m->max_usd, m->started, KL_VERSION);
  kl__buf_printf(b, ",\"sandbox\":%s", m->sandbox ? m->sandbox : "null");
  kl__buf_printf(b, ",\"batch\":%d,\"executor\":", m->batch);
  kl__buf_json_string(b, m->executor);
  if (m->replay) {
    kl__buf_puts(b, ",\"replay\":");
    kl__buf_json_string(b, m->replay);
  }
  if (m->has_sampling) {
    const kl_time_options *t = &m->sampling;
    double v[SAMPLING_FIELDS];
    sampling_values(v, t);
    const char *bad = sampling_bad(v);
    if (bad)
      return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                       "the run's time options: %s is out of range", bad);
    kl__buf_printf(b,
                   ",\"sampling\":{\"cold\":%s,\"warmup\":%d,"
                   "\"min_samples\":%zu,\"max_samples\":%zu,"
                   "\"target_rel_ci\":%.17g,\"time_cap_ms\":%d,"
                   "\"block_rounds\":%zu}",
                   t->cold ? "true" : "false", t->warmup, t->min_samples,
                   t->max_samples, t->target_rel_ci, t->time_cap_ms,
                   t->block_rounds);
  }
  kl__buf_puts(b, "}\n");
  return kl__buf_status(b);
}

/* A fresh run id: the time in UTC and four random hex digits. */
static int new_id(char **dir, char **id, const char *case_dir) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  for (int attempt = 0; attempt < 16; attempt++) {
    unsigned short rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
      rnd = (unsigned short)(getpid() + attempt);
    char name[48];
    snprintf(name, sizeof(name), "%04d%02d%02d-%02d%02d%02d-%04x",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, rnd);
    kl_buf b = KL_BUF_INIT;
    if (kl__buf_printf(&b, "%s/runs/%s", case_dir, name) < 0)
      return kl__error_oom();
    if (!kl__is_dir(b.ptr)) {
      *dir = kl__buf_detach(&b);
      *id = kl__strdup(name);
      return *dir && *id ? 0 : kl__error_oom();
    }
    kl_buf_dispose(&b);
  }
  return kl__error(KL_EIO, KL_DOMAIN_NONE, "no free run id in %s/runs",
                   case_dir);
}

int kl__run_create(char **dir, char **id, const char *case_dir,
                   kl__run_meta *meta) {
  *dir = *id = NULL;
  char *runs = kl__path_join(case_dir, "runs");
  if (!runs) return kl__error_oom();
  int rc = kl__mkdir_p(runs);
  kl__free(runs);
  if (rc < 0 || (rc = new_id(dir, id, case_dir)) < 0) return rc;
  meta->run = *id;
  kl_buf b = KL_BUF_INIT, hidden = KL_BUF_INIT;
  kl__buf_printf(&hidden, "%s/runs/.%s.new", case_dir, *id);
  if ((rc = meta_json(&b, meta)) < 0 || (rc = kl__buf_status(&hidden)) < 0 ||
      (rc = kl__record_mkdir(hidden.ptr)) < 0 ||
      (rc = kl__iteration_write(hidden.ptr, "run.json", b.ptr)) < 0)
    goto done;
  rc = kl__record_rename(hidden.ptr, *dir);
done:
  kl_buf_dispose(&b);
  kl_buf_dispose(&hidden);
  if (rc < 0) {
    kl__free(*dir);
    kl__free(*id);
    *dir = *id = NULL;
  }
  return rc;
}

int kl__run_meta_read(const char *run_dir, kl__run_meta_fn fn, void *payload) {
  char *path = kl__path_join(run_dir, "run.json");
  json_object *m = NULL;
  int rc = path ? kl__json_read_file(&m, path, "run.json") : kl__error_oom();
  kl__free(path);
  if (rc < 0) return rc;
  kl__run_meta meta;
  memset(&meta, 0, sizeof(meta));
  double d;
  meta.run = kl__json_text(m, "run");
  meta.case_name = kl__json_text(m, "case");
  /* the whole uint64 range (json-c keeps those beyond 2^63 as uint64,
   * which json_object_get_int64 would clamp to 2^63 - 1) */
  if (kl__json_number(m, "seed", &d))
    meta.seed = json_object_get_uint64(kl__json_get(m, "seed"));
  meta.proposer = kl__json_text(m, "proposer");
  meta.strategy = kl__json_text(m, "strategy");
  meta.iterations = kl__json_number(m, "iterations", &d) ? (long long)d : 0;
  meta.patience = kl__json_number(m, "patience", &d) ? (long long)d : 0;
  kl__json_number(m, "min_gain_pct", &meta.min_gain_pct);
  kl__json_number(m, "max_wall_s", &meta.max_wall_s);
  kl__json_number(m, "max_worker_s", &meta.max_worker_s);
  kl__json_number(m, "max_usd", &meta.max_usd);
  meta.started = kl__json_number(m, "started", &d) ? (long long)d : 0;
  meta.batch = kl__json_number(m, "batch", &d) ? (int)d : 0;
  meta.executor = kl__json_text(m, "executor");
  meta.replay = kl__json_text(m, "replay");
  json_object *t = kl__json_get(m, "sampling");
  if (t) meta.sampling_bad = sampling_read(&meta.sampling, t);
  meta.has_sampling = t && !meta.sampling_bad;
  rc = fn(&meta, payload);
  json_object_put(m);
  return rc;
}

int kl__run_dir(char **out, const char *case_dir, const char *id) {
  *out = NULL;
  if (!id || !id[0] || strchr(id, '/') || strcmp(id, ".") == 0 ||
      strcmp(id, "..") == 0 || id[0] == '.')
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "'%s' is not a run id",
                     id ? id : "");
  kl_buf b = KL_BUF_INIT;
  if (kl__buf_printf(&b, "%s/runs/%s", case_dir, id) < 0)
    return kl__error_oom();
  *out = kl__buf_detach(&b);
  return *out ? 0 : kl__error_oom();
}

int kl__runs_list(char ***ids, size_t *n, const char *case_dir) {
  *ids = NULL;
  *n = 0;
  char *runs = kl__path_join(case_dir, "runs");
  if (!runs) return kl__error_oom();
  int rc = kl__is_dir(runs)
               ? kl__list_dir(ids, n, runs, "", "cannot list the runs")
               : 0;
  kl__free(runs);
  return rc;
}

/* ---- summary.json
 * ---------------------------------------------------------------- */

int kl__summary_write(const char *run_dir, const char *json) {
  char *path = kl__path_join(run_dir, "summary.json");
  int rc =
      path ? kl__record_replace(path, json, strlen(json)) : kl__error_oom();
  kl__free(path);
  return rc;
}

int kl__summary_read(const char *run_dir, char **stop_reason,
                     char **webhook_status, bool *found) {
  *stop_reason = *webhook_status = NULL;
  if (found) *found = false;
  char *path = kl__path_join(run_dir, "summary.json");
  if (!path) return kl__error_oom();
  json_object *s = NULL;
  bool is_file = kl__is_file(path);
  int rc = is_file ? kl__json_read_file(&s, path, "summary.json") : 0;
  kl__free(path);
  if (rc == 0 && (kl__json_dup(stop_reason, s, "stop_reason") < 0 ||
                  kl__json_dup(webhook_status, s, "webhook_status") < 0))
    rc = KL_ENOMEM;
  json_object_put(s);
  if (rc < 0) {
    kl__free(*stop_reason);
    kl__free(*webhook_status);
    *stop_reason = *webhook_status = NULL;
  } else if (found) {
    *found = is_file;
  }
  return rc;
}

/* ---- the case's lock
 * ------------------------------------------------------------ */

int kl__case_lock(int *out, const char *case_dir, const char *case_name) {
  *out = -1;
  char *path = kl__path_join(case_dir, ".kl-run.lock");
  if (!path) return kl__error_oom();
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    int rc = kl__error_os(kl__errno_code(errno, false), path, "cannot open");
    kl__free(path);
    return rc;
  }
  kl__free(path);
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    *out = fd;
    return 0;
  }
  int err = errno;
  char holder[256] = "";
  ssize_t n = pread(fd, holder, sizeof(holder) - 1, 0);
  close(fd);
  if (err != EWOULDBLOCK)
    return kl__error(KL_EIO, KL_DOMAIN_OS, "%s/.kl-run.lock: cannot lock: %s",
                     case_dir, strerror(err));
  holder[n > 0 ? n : 0] = '\0';
  holder[strcspn(holder, "\n")] = '\0';
  long pid = 0;
  char run[200] = "";
  if (sscanf(holder, "%ld %199s", &pid, run) < 1) pid = 0;
  if (run[0])
    return kl__error(KL_EBUSY, KL_DOMAIN_NONE,
                     "case '%s' is being run by run %s (pid %ld): one run per "
                     "case at a time; wait for it, or stop it and kl run %s "
                     "--resume %s",
                     case_name, run, pid, case_dir, run);
  return kl__error(KL_EBUSY, KL_DOMAIN_NONE,
                   "case '%s' is being run by another kl run (pid %ld): one "
                   "run per case at a time",
                   case_name, pid);
}

void kl__case_lock_name(int fd, const char *run) {
  if (fd < 0 || !run) return;
  char line[256];
  int n = snprintf(line, sizeof(line), "%ld %s\n", (long)getpid(), run);
  if (n > 0 && ftruncate(fd, 0) == 0) (void)!pwrite(fd, line, (size_t)n, 0);
}

void kl__case_unlock(int *fd) {
  if (*fd >= 0) close(*fd); /* the lock goes with the descriptor */
  *fd = -1;
}
