/* A run's records: its folder, its iteration folders, the environment, the
 * memory of earlier runs, and resuming a run from what it recorded.
 *
 * Nothing is overwritten: files go in with O_EXCL, an iteration folder left
 * half-written by a killed run is set aside (renamed .aborted-N) before the
 * iteration is done again, and the ledgers only grow (core/ledger.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../bench/bench_internal.h"
#include "../case/case_internal.h"
#include "../core/sandbox.h"
#include "run_internal.h"

int kl__run_write(const char *dir, const char *name, const char *text) {
  char *path = kl__path_join(dir, name);
  if (!path)
    return kl__error_oom();
  int rc = kl__record_new_file(path, text, strlen(text));
  kl__free(path);
  return rc;
}

char *kl__run_config_text(char *const *config, const char *sep) {
  kl_buf b = KL_BUF_INIT;
  int rc = kl__buf_puts(&b, "");
  for (size_t i = 0; config && config[i]; i++)
    rc |= kl__buf_printf(&b, "%s%s", i ? sep : "", config[i]);
  if (rc) {
    kl_buf_dispose(&b);
    return NULL;
  }
  return kl__buf_detach(&b);
}

void kl__run_source_hash(const char *source, char hex[65]) {
  kl__sha256 h;
  kl__sha256_init(&h);
  kl__sha256_update(&h, source, strlen(source));
  kl__sha256_hex(&h, hex);
}

char *kl__run_key(const char *hash, char *const *config) {
  char *cfg = kl__run_config_text(config, ",");
  kl_buf b = KL_BUF_INIT;
  int rc = cfg ? kl__buf_printf(&b, "%.16s|%s", hash, cfg) : -1;
  kl__free(cfg);
  if (rc < 0) {
    kl_buf_dispose(&b);
    return NULL;
  }
  return kl__buf_detach(&b);
}

/* The kernel with its settings written in front as #defines, so the file
 * alone builds the configuration that was measured. */
int kl__run_best_kernel_text(kl_buf *out, const char *source,
                             char *const *config) {
  int rc = 0;
  if (config && config[0])
    rc |= kl__buf_puts(out, "/* kernlab: the tunable settings this kernel "
                            "was measured with */\n");
  for (size_t i = 0; config && config[i]; i++) {
    const char *eq = strchr(config[i], '=');
    if (eq)
      rc |= kl__buf_printf(out, "#define %.*s %s\n", (int)(eq - config[i]),
                           config[i], eq + 1);
  }
  rc |= kl__buf_puts(out, source);
  return rc ? kl__error_oom() : 0;
}

/* ---- the case's lock ------------------------------------------------------------ */

int kl__run_lock(kl_run *r) {
  r->lock_fd = -1;
  char *path = kl__path_join(r->case_dir, ".kl-run.lock");
  if (!path)
    return kl__error_oom();
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    int rc = kl__error_os(kl__errno_code(errno, false), path, "cannot open");
    kl__free(path);
    return rc;
  }
  kl__free(path);
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    r->lock_fd = fd;
    return 0;
  }
  int err = errno;
  char holder[256] = "";
  ssize_t n = pread(fd, holder, sizeof(holder) - 1, 0);
  close(fd);
  if (err != EWOULDBLOCK)
    return kl__error(KL_EIO, KL_DOMAIN_OS, "%s/.kl-run.lock: cannot lock: %s",
                     r->case_dir, strerror(err));
  holder[n > 0 ? n : 0] = '\0';
  holder[strcspn(holder, "\n")] = '\0';
  long pid = 0;
  char run[200] = "";
  if (sscanf(holder, "%ld %199s", &pid, run) < 1)
    pid = 0;
  if (run[0])
    return kl__error(KL_EBUSY, KL_DOMAIN_NONE,
                     "case '%s' is being run by run %s (pid %ld): one run per "
                     "case at a time; wait for it, or stop it and kl run %s "
                     "--resume %s",
                     r->c->name, run, pid, r->case_dir, run);
  return kl__error(KL_EBUSY, KL_DOMAIN_NONE,
                   "case '%s' is being run by another kl run (pid %ld): one "
                   "run per case at a time",
                   r->c->name, pid);
}

void kl__run_lock_name(kl_run *r) {
  if (r->lock_fd < 0 || !r->id)
    return;
  char line[256];
  int n = snprintf(line, sizeof(line), "%ld %s\n", (long)getpid(), r->id);
  if (n > 0 && ftruncate(r->lock_fd, 0) == 0)
    (void)!pwrite(r->lock_fd, line, (size_t)n, 0);
}

void kl__run_unlock(kl_run *r) {
  if (r->lock_fd >= 0)
    close(r->lock_fd); /* the lock goes with the descriptor */
  r->lock_fd = -1;
}

/* ---- benchmark rows and memory lines ------------------------------------------ */

#define BENCHMARK_HEADER                                                      \
  "run,iteration,id,shape,verdict,median_us,ci_low_us,ci_high_us,samples,"    \
  "sm_clock_mhz,against_median_us,speedup,speedup_ci_low,speedup_ci_high"

/* Does `have` (a '\n'-separated list of shape names, each line ended)
 * name `shape`? */
static bool listed(const char *have, const char *shape) {
  size_t n = strlen(shape);
  for (const char *p = have; p && *p;) {
    size_t len = strcspn(p, "\n");
    if (len == n && strncmp(p, shape, n) == 0)
      return true;
    p += len + (p[len] == '\n');
  }
  return false;
}

int kl__run_benchmark_rows(kl_run *r, int n, const char *id, kl_outcome o,
                           const kl_report *rep, const char *have) {
  char *path = kl__path_join(r->case_dir, "benchmark.csv");
  if (!path)
    return kl__error_oom();
  int rc = 0;
  for (size_t i = 0; rep && rc == 0 && i < kl_report_shape_count(rep); i++) {
    kl_shape_result s;
    if (kl_report_shape(&s, rep, i) < 0 || !s.timed || listed(have, s.name))
      continue;
    bool cmp = s.baseline.n > 0;
    kl_buf b = KL_BUF_INIT;
    rc = kl__buf_printf(&b, "%s,%d,%s,%s,%s,%.6g,%.6g,%.6g,%zu,%.1f,", r->id,
                        n, id, s.name, kl_outcome_name(o), s.time.median,
                        s.time.ci_low, s.time.ci_high, s.time.n,
                        s.sm_clock_mhz);
    if (cmp)
      rc |= kl__buf_printf(&b, "%.6g,%.6g,%.6g,%.6g", s.baseline.median,
                           s.speedup.speedup, s.speedup.ci_low,
                           s.speedup.ci_high);
    else
      rc |= kl__buf_puts(&b, ",,,");
    rc = rc ? kl__error_oom() : kl__ledger_append(path, b.ptr, BENCHMARK_HEADER);
    kl_buf_dispose(&b);
  }
  kl__free(path);
  return rc;
}

int kl__run_memory_line(kl_run *r, int n, const char *proposer,
                        const char *memo, kl_outcome o, bool timed,
                        double speedup, const char *reason) {
  kl_buf b = KL_BUF_INIT;
  int rc = kl__buf_puts(&b, "{\"case\":");
  rc |= kl__buf_json_string(&b, r->c->name);
  rc |= kl__buf_puts(&b, ",\"run\":");
  rc |= kl__buf_json_string(&b, r->id);
  rc |= kl__buf_printf(&b, ",\"iteration\":%d,\"proposer\":", n);
  rc |= kl__buf_json_string(&b, proposer);
  rc |= kl__buf_puts(&b, ",\"memo\":");
  rc |= kl__buf_json_string(&b, memo);
  rc |= kl__buf_printf(&b, ",\"verdict\":\"%s\"", kl_outcome_name(o));
  if (timed)
    rc |= kl__buf_printf(&b, ",\"speedup\":%.6g", speedup);
  rc |= kl__buf_puts(&b, ",\"reason\":");
  rc |= kl__buf_json_string(&b, reason);
  rc |= kl__buf_printf(&b, ",\"time\":%lld}", (long long)time(NULL));
  char *path = rc ? NULL : kl__path_join(r->case_dir, "memory.jsonl");
  rc = path ? kl__ledger_append(path, b.ptr, NULL) : kl__error_oom();
  kl__free(path);
  kl_buf_dispose(&b);
  return rc;
}

/* ---- a new run ------------------------------------------------------------- */

static int make_id(kl_run *r) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  for (int attempt = 0; attempt < 16; attempt++) {
    unsigned short rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
      rnd = (unsigned short)(getpid() + attempt);
    char id[48];
    snprintf(id, sizeof(id), "%04d%02d%02d-%02d%02d%02d-%04x",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, rnd);
    kl_buf dir = KL_BUF_INIT;
    if (kl__buf_printf(&dir, "%s/runs/%s", r->case_dir, id) < 0)
      return kl__error_oom();
    if (!kl__is_dir(dir.ptr)) {
      r->dir = kl__buf_detach(&dir);
      r->id = kl__strdup(id);
      return r->dir && r->id ? 0 : kl__error_oom();
    }
    kl_buf_dispose(&dir);
  }
  return kl__error(KL_EIO, KL_DOMAIN_NONE, "no free run id in %s/runs",
                   r->case_dir);
}

/* A run is made whole or not at all: its folder is built under a hidden
 * name (.ID.new, which every lister skips) with its run.json, then renamed
 * into place, so a run that exists can always be resumed. A hidden folder
 * left by a process killed on the way holds nothing else. */
int kl__run_record_start(kl_run *r) {
  char *runs = kl__path_join(r->case_dir, "runs");
  if (!runs)
    return kl__error_oom();
  int rc = kl__mkdir_p(runs);
  kl__free(runs);
  if (rc < 0 || (rc = make_id(r)) < 0)
    return rc;
  kl_buf b = KL_BUF_INIT, hidden = KL_BUF_INIT;
  rc = kl__buf_puts(&b, "{\"run\":");
  rc |= kl__buf_json_string(&b, r->id);
  rc |= kl__buf_puts(&b, ",\"case\":");
  rc |= kl__buf_json_string(&b, r->c->name);
  rc |= kl__buf_printf(&b,
                       ",\"seed\":%llu,\"proposer\":\"%s\",\"strategy\":\"%s\","
                       "\"iterations\":%lld,\"patience\":%lld,"
                       "\"min_gain_pct\":%g,\"max_wall_s\":%g,"
                       "\"max_worker_s\":%g,\"max_usd\":%g,"
                       "\"started\":%lld,\"kernlab\":\"%s\"",
                       (unsigned long long)r->seed, r->proposer, r->strategy,
                       (long long)r->max_iterations, (long long)r->patience,
                       r->c->budget.min_gain_pct, r->o.max_wall_s,
                       r->o.max_worker_s, r->o.max_usd, (long long)time(NULL),
                       KL_VERSION);
  rc |= kl__buf_printf(&b, ",\"sandbox\":%s", kl__sandbox_summary());
  rc |= kl__buf_printf(&b, ",\"batch\":%d,\"executor\":", r->batch);
  rc |= kl__buf_json_string(&b, kl_executor_describe(r->ex));
  if (r->replay_dir) {
    rc |= kl__buf_puts(&b, ",\"replay\":");
    rc |= kl__buf_json_string(&b, r->replay_dir);
  }
  rc |= kl__buf_puts(&b, "}\n");
  rc |= kl__buf_printf(&hidden, "%s/runs/.%s.new", r->case_dir, r->id);
  if (rc) {
    kl_buf_dispose(&b);
    kl_buf_dispose(&hidden);
    return kl__error_oom();
  }
  rc = kl__record_mkdir(hidden.ptr);
  if (rc == 0)
    rc = kl__run_write(hidden.ptr, "run.json", b.ptr);
  if (rc == 0)
    rc = kl__record_rename(hidden.ptr, r->dir);
  kl_buf_dispose(&b);
  kl_buf_dispose(&hidden);
  return rc;
}

int kl__run_iter_dir(char **out, kl_run *r, int iteration) {
  kl_buf b = KL_BUF_INIT;
  if (kl__buf_printf(&b, "%s/iter_%03d", r->dir, iteration) < 0)
    return kl__error_oom();
  /* a folder from a killed attempt at this iteration: keep it, aside */
  for (int k = 1; kl__is_dir(b.ptr) && k < 1000; k++) {
    kl_buf aside = KL_BUF_INIT;
    if (kl__buf_printf(&aside, "%s.aborted-%d", b.ptr, k) < 0) {
      kl_buf_dispose(&b);
      return kl__error_oom();
    }
    int rc = kl__is_dir(aside.ptr) ? 0 : kl__record_rename(b.ptr, aside.ptr);
    kl_buf_dispose(&aside);
    if (rc < 0) {
      kl_buf_dispose(&b);
      return rc;
    }
  }
  int rc = kl__record_mkdir(b.ptr);
  if (rc < 0) {
    kl_buf_dispose(&b);
    return rc;
  }
  *out = kl__buf_detach(&b);
  return *out ? 0 : kl__error_oom();
}

/* ---- environment ----------------------------------------------------------- */

/* The first line of `prog --version` that names a release (nvcc's "release
 * 13.0, V13.0.48"), else its first line. */
static char *tool_version(const char *prog) {
  const char *argv[] = {prog, "--version", NULL};
  kl__run_result res;
  memset(&res, 0, sizeof(res));
  if (kl__run(&res, argv, NULL, 10000, 1 << 16) < 0 || !res.output.ptr) {
    kl_error_clear();
    kl_buf_dispose(&res.output);
    return NULL;
  }
  char *text = res.output.ptr, *pick = NULL;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (!pick)
      pick = line;
    if (strstr(line, "release")) {
      pick = line;
      break;
    }
  }
  char *out = pick ? kl__strdup(pick) : NULL;
  kl_buf_dispose(&res.output);
  return out;
}

/* The NVIDIA kernel module's version ("580.159.04"), or NULL. */
static char *driver_version(void) {
  kl_buf b = KL_BUF_INIT;
  if (kl__read_file(&b, "/proc/driver/nvidia/version") < 0) {
    kl_error_clear();
    return NULL;
  }
  char *out = NULL;
  const char *p = b.ptr ? strstr(b.ptr, "Kernel Module") : NULL;
  if (p) {
    p += strlen("Kernel Module");
    while (*p == ' ' || *p == '\t')
      p++;
    size_t n = strcspn(p, " \t\n");
    out = kl__strndup(p, n);
  }
  kl_buf_dispose(&b);
  return out;
}

int kl__run_environment(kl_run *r, const kl_report *rep) {
  if (r->env_json)
    return 0;
  kl_device_info dev;
  bool has_dev = rep && kl_report_device(&dev, rep) == 0;
  const char *compiler = kl_case_compiler(r->c);
  char *tool = tool_version(compiler ? compiler
                            : r->c->backend == KL_BACKEND_CUDA ? "nvcc"
                                                                : "cc");
  char *drv = has_dev ? driver_version() : NULL;
  kl_buf b = KL_BUF_INIT;
  int rc = kl__buf_puts(&b, "{\"gpu\":");
  rc |= kl__buf_json_string(&b, has_dev ? dev.name : NULL);
  rc |= kl__buf_puts(&b, ",\"driver\":");
  rc |= kl__buf_json_string(&b, drv);
  rc |= kl__buf_puts(&b, ",\"toolkit\":");
  rc |= kl__buf_json_string(&b, tool);
  char host[128] = "";
  gethostname(host, sizeof(host) - 1);
  rc |= kl__buf_puts(&b, ",\"host\":");
  rc |= kl__buf_json_string(&b, host);
  /* where candidate code ran: what the worker's sandbox held */
  const char *sb = kl__report_sandbox(rep);
  rc |= kl__buf_printf(&b, ",\"sandbox\":%s", sb ? sb : kl__sandbox_summary());
  rc |= kl__buf_printf(&b, ",\"kernlab\":\"%s\"}", KL_VERSION);
  kl__free(tool);
  kl__free(drv);
  if (rc) {
    kl_buf_dispose(&b);
    return kl__error_oom();
  }
  r->env_json = kl__buf_detach(&b);
  return 0;
}

/* ---- memory of earlier runs ------------------------------------------------ */

/* Past this many characters the memory goes to the prompt compacted: every
 * accepted idea with its gain, then counts per verdict and the most recent
 * rejected ideas. The compaction is written to memory.summary.md. */
#define MEMORY_BUDGET 6000

typedef struct memory_acc {
  const char *run;
  kl_buf full, accepted, recent;
  int counts[KL_OUTCOME_COUNT];
  int entries;
} memory_acc;

static kl_outcome outcome_from_name(const char *s) {
  for (int o = 0; o < KL_OUTCOME_COUNT; o++)
    if (s && strcmp(s, kl_outcome_name((kl_outcome)o)) == 0)
      return (kl_outcome)o;
  return KL_OUTCOME_REJECTED;
}

static const char *jstr(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v)
                                               : NULL;
}

static int memory_line(json_object *rec, int line, void *payload) {
  (void)line;
  memory_acc *m = payload;
  const char *run = jstr(rec, "run");
  if (run && m->run && strcmp(run, m->run) == 0)
    return 0; /* this run's attempts go in as attempts */
  const char *memo = jstr(rec, "memo"), *verdict = jstr(rec, "verdict");
  json_object *v;
  double sp = json_object_object_get_ex(rec, "speedup", &v)
                  ? json_object_get_double(v) : 0;
  if (!memo || !verdict)
    return 0;
  kl_outcome o = outcome_from_name(verdict);
  m->counts[o]++;
  m->entries++;
  int rc = kl__buf_printf(&m->full, "- %s: %s", verdict, memo);
  if (sp > 0)
    rc |= kl__buf_printf(&m->full, " (x%.3f)", sp);
  rc |= kl__buf_putc(&m->full, '\n');
  if (o == KL_OUTCOME_ACCEPTED)
    rc |= kl__buf_printf(&m->accepted, "- ACCEPTED: %s (x%.3f)\n", memo, sp);
  else {
    /* keep the last 20 non-accepted lines */
    rc |= kl__buf_printf(&m->recent, "- %s: %s\n", verdict, memo);
    size_t lines = 0;
    for (size_t i = 0; i < m->recent.size; i++)
      lines += m->recent.ptr[i] == '\n';
    if (lines > 20) {
      char *nl = strchr(m->recent.ptr, '\n');
      size_t cut = (size_t)(nl - m->recent.ptr) + 1;
      memmove(m->recent.ptr, m->recent.ptr + cut, m->recent.size - cut + 1);
      m->recent.size -= cut;
    }
  }
  return rc ? kl__error_oom() : 0;
}

int kl__run_memory_load(kl_run *r) {
  char *path = kl__path_join(r->case_dir, "memory.jsonl");
  if (!path)
    return kl__error_oom();
  memory_acc m;
  memset(&m, 0, sizeof(m));
  m.run = r->id;
  int rc = kl__ledger_read(path, memory_line, &m);
  kl__free(path);
  if (rc == 0 && m.entries > 0) {
    if (m.full.size <= MEMORY_BUDGET) {
      r->memory_text = kl__buf_detach(&m.full);
    } else {
      kl_buf s = KL_BUF_INIT;
      rc |= kl__buf_printf(&s, "(compacted from %d attempts)\n", m.entries);
      rc |= kl__buf_puts(&s, m.accepted.ptr ? m.accepted.ptr : "");
      rc |= kl__buf_puts(&s, "counts:");
      for (int o = 1; o < KL_OUTCOME_COUNT; o++)
        if (m.counts[o])
          rc |= kl__buf_printf(&s, " %s %d", kl_outcome_name((kl_outcome)o),
                               m.counts[o]);
      rc |= kl__buf_puts(&s, "\nmost recent without acceptance:\n");
      rc |= kl__buf_puts(&s, m.recent.ptr ? m.recent.ptr : "");
      if (rc)
        rc = kl__error_oom();
      else {
        char *sum = kl__path_join(r->case_dir, "memory.summary.md");
        if (!sum || kl__write_file_atomic(sum, s.ptr, s.size) < 0)
          kl_error_clear(); /* the summary file is a convenience */
        kl__free(sum);
        r->memory_text = kl__buf_detach(&s);
      }
      kl_buf_dispose(&s);
    }
  }
  kl_buf_dispose(&m.full);
  kl_buf_dispose(&m.accepted);
  kl_buf_dispose(&m.recent);
  return rc;
}

/* ---- resume ----------------------------------------------------------------- */

typedef struct resume_acc {
  kl_run *r;
  int last_iteration;
  int rc;
  json_object *last; /* the run's last committed record (a reference) */
} resume_acc;

char **kl__run_config_from_json(json_object *arr) {
  size_t n = arr && json_object_is_type(arr, json_type_array)
                 ? json_object_array_length(arr) : 0;
  char **out = kl__calloc(n + 1, sizeof(*out));
  for (size_t i = 0; out && i < n; i++)
    if (!(out[i] = kl__strdup(
              json_object_get_string(json_object_array_get_idx(arr, i))))) {
      kl__strv_free(out);
      return NULL;
    }
  return out;
}

/* Read an iteration's kernel back (kernel.cu or kernel.c). */
static char *iter_kernel(kl_run *r, int iteration) {
  kl_buf path = KL_BUF_INIT, text = KL_BUF_INIT;
  if (kl__buf_printf(&path, "%s/iter_%03d/kernel.%s", r->dir, iteration,
                     r->kernel_ext) < 0)
    return NULL;
  int rc = kl__read_file(&text, path.ptr);
  kl_buf_dispose(&path);
  if (rc < 0)
    return NULL;
  return kl__buf_detach(&text);
}

static int resume_line(json_object *rec, int line, void *payload) {
  (void)line;
  resume_acc *a = payload;
  kl_run *r = a->r;
  const char *run = jstr(rec, "run");
  if (!run || strcmp(run, r->id) != 0)
    return 0;
  json_object *v;
  int it = json_object_object_get_ex(rec, "iteration", &v)
               ? json_object_get_int(v) : -1;
  if (it != a->last_iteration + 1)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "solutions.jsonl:%d: run %s jumps from iteration %d to "
                     "%d", line, r->id, a->last_iteration, it);
  a->last_iteration = it;
  json_object_put(a->last);
  a->last = json_object_get(rec);
  kl_outcome o = outcome_from_name(jstr(rec, "verdict"));
  double sp = json_object_object_get_ex(rec, "speedup", &v)
                  ? json_object_get_double(v) : 0;
  json_object *cost;
  if (json_object_object_get_ex(rec, "cost", &cost)) {
    if (json_object_object_get_ex(cost, "wall_s", &v))
      r->wall_before_s += json_object_get_double(v);
    if (json_object_object_get_ex(cost, "worker_s", &v))
      r->worker_s += json_object_get_double(v);
    if (json_object_object_get_ex(cost, "usd", &v))
      r->usd += json_object_get_double(v);
    if (json_object_object_get_ex(cost, "tokens_in", &v))
      r->tokens_in += (uint64_t)json_object_get_int64(v);
    if (json_object_object_get_ex(cost, "tokens_out", &v))
      r->tokens_out += (uint64_t)json_object_get_int64(v);
  }
  json_object *cfg = NULL;
  json_object_object_get_ex(rec, "config", &cfg);
  if (it == 0 || o == KL_OUTCOME_ACCEPTED) {
    char *src = iter_kernel(r, it);
    char **config = kl__run_config_from_json(cfg);
    if (!src || !config) {
      kl__free(src);
      kl__strv_free(config);
      return kl__error(KL_EIO, KL_DOMAIN_NONE,
                       "%s/iter_%03d: the kernel of a recorded %s is missing",
                       r->dir, it, it == 0 ? "baseline" : "acceptance");
    }
    kl__free(r->best_source);
    kl__strv_free(r->best_config);
    kl__free(r->best_id);
    r->best_source = src;
    r->best_config = config;
    r->best_id = kl__strdup(jstr(rec, "id") ? jstr(rec, "id") : "");
    r->best_iteration = it;
    json_object *vb;
    if (json_object_object_get_ex(rec, "vs_baseline", &vb)) {
      if (json_object_object_get_ex(vb, "speedup", &v))
        r->best_vs_base.speedup = json_object_get_double(v);
      if (json_object_object_get_ex(vb, "ci", &v) &&
          json_object_array_length(v) == 2) {
        r->best_vs_base.ci_low =
            json_object_get_double(json_object_array_get_idx(v, 0));
        r->best_vs_base.ci_high =
            json_object_get_double(json_object_array_get_idx(v, 1));
      }
    }
    if (!r->best_id)
      return kl__error_oom();
  }
  if (it == 0) {
    kl__free(r->baseline_key);
    r->baseline_key = jstr(rec, "key") ? kl__strdup(jstr(rec, "key")) : NULL;
    return 0;
  }
  r->counts[o]++;
  r->done++;
  r->since_accept = o == KL_OUTCOME_ACCEPTED ? 0 : r->since_accept + 1;
  run_attempt *na = kl__realloc(r->attempts,
                                (r->nattempts + 1) * sizeof(*na));
  if (!na)
    return kl__error_oom();
  r->attempts = na;
  run_attempt *at = &r->attempts[r->nattempts++];
  memset(at, 0, sizeof(*at));
  at->iteration = it;
  at->outcome = o;
  at->speedup = sp;
  at->memo = jstr(rec, "memo") ? kl__strdup(jstr(rec, "memo")) : NULL;
  at->reason = jstr(rec, "reason") ? kl__strdup(jstr(rec, "reason")) : NULL;
  at->key = jstr(rec, "key") ? kl__strdup(jstr(rec, "key")) : NULL;
  at->config = kl__run_config_from_json(cfg);
  if (json_object_object_get_ex(rec, "log_vs_baseline", &v))
    at->log_vs_base = json_object_get_double(v);
  return at->config ? 0 : kl__error_oom();
}

/* What benchmark.csv and memory.jsonl already hold of one iteration. */
typedef struct have_acc {
  const char *run;
  int iteration;
  kl_buf shapes; /* '\n'-ended names */
  bool memory;
} have_acc;

static int memory_has(json_object *rec, int line, void *payload) {
  (void)line;
  have_acc *h = payload;
  json_object *v;
  const char *run = jstr(rec, "run");
  if (run && strcmp(run, h->run) == 0 &&
      json_object_object_get_ex(rec, "iteration", &v) &&
      json_object_get_int(v) == h->iteration)
    h->memory = true;
  return 0;
}

static int benchmark_has(have_acc *h, const char *path) {
  kl_buf text = KL_BUF_INIT;
  int rc = kl__read_file(&text, path);
  if (rc == KL_ENOTFOUND) {
    kl_error_clear();
    return 0;
  }
  if (rc < 0)
    return rc;
  char prefix[160];
  int np = snprintf(prefix, sizeof(prefix), "%s,%d,", h->run, h->iteration);
  for (const char *p = text.ptr; rc == 0 && p && *p;) {
    const char *nl = strchr(p, '\n');
    if (!nl)
      break; /* a torn tail: not a row */
    if (np > 0 && (size_t)np < sizeof(prefix) &&
        strncmp(p, prefix, (size_t)np) == 0) {
      /* run,iteration,id,shape,... */
      const char *f = strchr(p + np, ',');
      const char *e = f ? strchr(f + 1, ',') : NULL;
      if (e && e < nl && (kl__buf_put(&h->shapes, f + 1, (size_t)(e - f - 1)) |
                          kl__buf_putc(&h->shapes, '\n')))
        rc = kl__error_oom();
    }
    p = nl + 1;
  }
  kl_buf_dispose(&text);
  return rc;
}

/* The records that follow an iteration's commit (its benchmark rows, its
 * memory line) are written after its solutions.jsonl line: a run stopped
 * between them has its last committed iteration's completed here, from
 * what the iteration recorded (report.json, the solutions line). */
static int complete_commit(kl_run *r, json_object *rec) {
  json_object *v;
  int n = json_object_object_get_ex(rec, "iteration", &v)
              ? json_object_get_int(v) : -1;
  const char *id = jstr(rec, "id");
  if (n < 0 || !id)
    return 0;
  have_acc h = {r->id, n, KL_BUF_INIT, false};
  char *bench = kl__path_join(r->case_dir, "benchmark.csv");
  char *mem = kl__path_join(r->case_dir, "memory.jsonl");
  kl_buf rpath = KL_BUF_INIT, rtext = KL_BUF_INIT;
  int rc = bench && mem ? benchmark_has(&h, bench) : kl__error_oom();
  if (rc == 0 && n > 0)
    rc = kl__ledger_read(mem, memory_has, &h);
  kl_outcome o = outcome_from_name(jstr(rec, "verdict"));
  if (rc == 0 &&
      kl__buf_printf(&rpath, "%s/iter_%03d/report.json", r->dir, n) < 0)
    rc = kl__error_oom();
  if (rc == 0 && kl__is_file(rpath.ptr)) {
    json_object *doc = NULL;
    kl_report *rep = NULL;
    if ((rc = kl__read_file(&rtext, rpath.ptr)) == 0 &&
        (rc = kl__json_parse(&doc, rtext.ptr ? rtext.ptr : "", rpath.ptr,
                             "report.json")) == 0 &&
        (rc = kl__report_from_json(&rep, doc, rpath.ptr)) == 0)
      rc = kl__run_benchmark_rows(r, n, id, o, rep,
                                  h.shapes.ptr ? h.shapes.ptr : "");
    kl_report_free(rep);
    json_object_put(doc);
  }
  if (rc == 0 && n > 0 && !h.memory) {
    json_object *sp = NULL;
    bool timed = json_object_object_get_ex(rec, "speedup", &sp) && sp &&
                 !json_object_is_type(sp, json_type_null);
    rc = kl__run_memory_line(r, n, jstr(rec, "proposer"), jstr(rec, "memo"),
                             o, timed, timed ? json_object_get_double(sp) : 0,
                             jstr(rec, "reason"));
  }
  kl_buf_dispose(&h.shapes);
  kl_buf_dispose(&rpath);
  kl_buf_dispose(&rtext);
  kl__free(bench);
  kl__free(mem);
  return rc;
}

int kl__run_record_resume(kl_run *r, const char *id) {
  if (!id[0] || strchr(id, '/') || strcmp(id, ".") == 0 ||
      strcmp(id, "..") == 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "'%s' is not a run id", id);
  kl_buf dir = KL_BUF_INIT;
  if (kl__buf_printf(&dir, "%s/runs/%s", r->case_dir, id) < 0)
    return kl__error_oom();
  if (!kl__is_dir(dir.ptr)) {
    int rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                       "%s: no such run of case '%s'", dir.ptr, r->c->name);
    kl_buf_dispose(&dir);
    return rc;
  }
  r->dir = kl__buf_detach(&dir);
  r->id = kl__strdup(id);
  if (!r->dir || !r->id)
    return kl__error_oom();
  /* the run's settings, unless the caller gives new ones */
  kl_buf meta = KL_BUF_INIT;
  char *mpath = kl__path_join(r->dir, "run.json");
  int rc = mpath ? kl__read_file(&meta, mpath) : kl__error_oom();
  kl__free(mpath);
  if (rc < 0)
    return rc;
  json_object *m = json_tokener_parse(meta.ptr ? meta.ptr : "");
  kl_buf_dispose(&meta);
  if (!m)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "%s/run.json: not JSON",
                     r->dir);
  json_object *v;
  if (json_object_object_get_ex(m, "seed", &v))
    r->seed = (uint64_t)json_object_get_int64(v);
  if (json_object_object_get_ex(m, "proposer", &v))
    snprintf(r->proposer, sizeof(r->proposer), "%s", json_object_get_string(v));
  if (json_object_object_get_ex(m, "strategy", &v))
    snprintf(r->strategy, sizeof(r->strategy), "%s", json_object_get_string(v));
  if (!r->o.iterations && json_object_object_get_ex(m, "iterations", &v))
    r->max_iterations = json_object_get_int64(v);
  if (!r->batch && json_object_object_get_ex(m, "batch", &v))
    r->batch = (int)json_object_get_int64(v);
  if (!r->o.patience && json_object_object_get_ex(m, "patience", &v))
    r->patience = json_object_get_int64(v);
  if (!r->o.max_wall_s && json_object_object_get_ex(m, "max_wall_s", &v))
    r->o.max_wall_s = json_object_get_double(v);
  if (!r->o.max_worker_s && json_object_object_get_ex(m, "max_worker_s", &v))
    r->o.max_worker_s = json_object_get_double(v);
  if (!r->o.max_usd && json_object_object_get_ex(m, "max_usd", &v))
    r->o.max_usd = json_object_get_double(v);
  if (!r->replay_dir && json_object_object_get_ex(m, "replay", &v) &&
      !(r->replay_dir = kl__strdup(json_object_get_string(v)))) {
    json_object_put(m);
    return kl__error_oom();
  }
  json_object_put(m);
  resume_acc a = {r, -1, 0, NULL};
  char *path = kl__path_join(r->case_dir, "solutions.jsonl");
  if (!path)
    return kl__error_oom();
  rc = kl__ledger_read(path, resume_line, &a);
  kl__free(path);
  if (rc == 0 && a.last)
    rc = complete_commit(r, a.last);
  json_object_put(a.last);
  if (rc < 0)
    return rc;
  r->next_iteration = a.last_iteration + 1;
  return 0;
}
