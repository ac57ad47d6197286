/* The ledgers beside solutions.jsonl, each with its one writer and one
 * reader:
 *   CASE/benchmark.csv    per iteration, one row per timed shape; its
 *                         header line is its version
 *   CASE/memory.jsonl     what each attempt tried and how it ended (the
 *                         prompts of later runs read it)
 *   RUN/executor.jsonl    the batches an executor evaluated
 *   CASE/export.jsonl     the steps of kl export */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/json.h"
#include "records.h"

#define MEMORY_VERSION 1
#define EXECUTOR_VERSION 1
#define EXPORT_VERSION 1

/* ---- benchmark.csv
 * -------------------------------------------------------------- */

#define BENCHMARK_HEADER_V1                                                    \
  "run,iteration,id,shape,verdict,median_us,ci_low_us,ci_high_us,samples,"     \
  "sm_clock_mhz,against_median_us,speedup,speedup_ci_low,speedup_ci_high"
/* Version 2 adds the GPU's idleness around the timing (NVML; empty where
 * it could not be read): a file begun with version 1's header keeps
 * getting version 1's rows, so that every row of a file has its header's
 * columns. */
#define GPU_COLUMNS                                                            \
  ",gpu_util_pct_before,gpu_util_pct_after,gpu_mem_used_mib_before,"           \
  "gpu_mem_used_mib_after,gpu_other_processes"
#define BENCHMARK_HEADER BENCHMARK_HEADER_V1 GPU_COLUMNS
/* A command case's rows are its metrics, in their own units; the columns
 * keep their places so one reader reads both. */
#define BENCHMARK_HEADER_METRICS                                               \
  "run,iteration,id,metric,verdict,median,ci_low,ci_high,runs,"                \
  "sm_clock_mhz,against_median,improvement,improvement_ci_low,"                \
  "improvement_ci_high"

/* Does the file at path begin with version 1's header (no GPU columns)? */
static bool header_v1(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[512] = "";
  bool v1 =
      fgets(line, sizeof line, f) &&
      strncmp(line, BENCHMARK_HEADER_V1 "\n", sizeof(BENCHMARK_HEADER_V1)) == 0;
  fclose(f);
  return v1;
}

/* The GPU columns of a row: the readings, or empty fields. */
static void gpu_fields(kl_buf *b, const kl_report *rep) {
  double util[2], mem[2];
  int others[2], known[2];
  for (int a = 0; a < 2; a++)
    known[a] = kl_report_gpu_reading(rep, a, &util[a], &mem[a], &others[a]);
  for (int a = 0; a < 2; a++) /* utilisation before, after */
    if (known[a])
      kl__buf_printf(b, ",%.0f", util[a]);
    else
      kl__buf_putc(b, ',');
  for (int a = 0; a < 2; a++) /* memory in use before, after */
    if (known[a])
      kl__buf_printf(b, ",%.0f", mem[a]);
    else
      kl__buf_putc(b, ',');
  int most = -1; /* other processes: the more of the two readings */
  for (int a = 0; a < 2; a++)
    if (known[a] && others[a] > most) most = others[a];
  if (most >= 0)
    kl__buf_printf(b, ",%d", most);
  else
    kl__buf_putc(b, ',');
}

/* Does `have` ('\n'-ended names) name `shape`? */
static bool listed(const char *have, const char *shape) {
  size_t n = strlen(shape);
  for (const char *p = have; p && *p;) {
    size_t len = strcspn(p, "\n");
    if (len == n && strncmp(p, shape, n) == 0) return true;
    p += len + (p[len] == '\n');
  }
  return false;
}

int kl__benchmark_rows_write(const char *case_dir, const char *run, int n,
                             const char *id, kl_outcome o, const kl_report *rep,
                             const char *have) {
  char *path = kl__path_join(case_dir, "benchmark.csv");
  if (!path) return kl__error_oom();
  int rc = 0;
  bool v1 = header_v1(path);
  for (size_t i = 0; rep && rc == 0 && i < kl_report_shape_count(rep); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    if (kl_report_shape(&s, rep, i) < 0 || !s.timed || listed(have, s.name))
      continue;
    bool cmp = s.baseline.n > 0;
    kl_buf b = KL_BUF_INIT;
    kl__buf_printf(&b, "%s,%d,%s,%s,%s,%.6g,%.6g,%.6g,%zu,%.1f,", run, n, id,
                   s.name, kl_outcome_name(o), s.time.median, s.time.ci_low,
                   s.time.ci_high, s.time.n, s.sm_clock_mhz);
    if (cmp)
      kl__buf_printf(&b, "%.6g,%.6g,%.6g,%.6g", s.baseline.median,
                     s.speedup.speedup, s.speedup.ci_low, s.speedup.ci_high);
    else
      kl__buf_puts(&b, ",,,");
    if (!v1 && !kl_report_shape_better(rep, i)) gpu_fields(&b, rep);
    if ((rc = kl__buf_status(&b)) == 0)
      rc = kl__ledger_append(path, b.ptr,
                             kl_report_shape_better(rep, i)
                                 ? BENCHMARK_HEADER_METRICS
                                 : BENCHMARK_HEADER);
    kl_buf_dispose(&b);
  }
  kl__free(path);
  return rc;
}

typedef struct rows_of_ctx {
  kl_buf *shapes;
  const char *run;
  int n;
} rows_of_ctx;

static int take_shape(const kl__benchmark_row *r, void *payload) {
  rows_of_ctx *x = payload;
  if (r->iteration != x->n || strcmp(r->run, x->run) != 0) return 0;
  kl__buf_puts(x->shapes, r->shape);
  kl__buf_putc(x->shapes, '\n');
  return kl__buf_status(x->shapes);
}

int kl__benchmark_rows_of(kl_buf *shapes, const char *case_dir, const char *run,
                          int n) {
  rows_of_ctx x = {shapes, run, n};
  return kl__benchmark_read(case_dir, take_shape, &x);
}

/* Every complete row of CASE/benchmark.csv, header skipped, in order. A
 * row whose fields do not parse is skipped (the file is read by people and
 * spreadsheets too); a missing file has no rows. */
int kl__benchmark_read(const char *case_dir, kl__benchmark_fn fn,
                       void *payload) {
  char *path = kl__path_join(case_dir, "benchmark.csv");
  kl_buf text = KL_BUF_INIT;
  int rc = path ? kl__read_file(&text, path) : kl__error_oom();
  kl__free(path);
  if (rc == KL_ENOTFOUND) {
    kl_error_clear();
    return 0;
  }
  for (const char *p = text.ptr; rc == 0 && p && *p;) {
    const char *nl = strchr(p, '\n');
    if (!nl) break; /* a torn tail: not a row */
    char line[1024], *f[14];
    size_t n = (size_t)(nl - p), nf = 0;
    if (n < sizeof line && strncmp(p, "run,", 4) != 0) {
      memcpy(line, p, n);
      line[n] = '\0';
      for (char *q = line; nf < 14; q++) {
        f[nf++] = q;
        q = strchr(q, ',');
        if (!q) break;
        *q = '\0';
      }
    }
    if (nf == 14) {
      kl__benchmark_row r = {f[0],
                             (int)strtol(f[1], NULL, 10),
                             f[2],
                             f[3],
                             f[4],
                             strtod(f[5], NULL),
                             f[11][0] != '\0',
                             {0, 0, 0, 0, KL_DECISION_SAME}};
      r.speedup.speedup = strtod(f[11], NULL);
      r.speedup.ci_low = strtod(f[12], NULL);
      r.speedup.ci_high = strtod(f[13], NULL);
      rc = fn(&r, payload);
    }
    p = nl + 1;
  }
  kl_buf_dispose(&text);
  return rc;
}

/* ---- memory.jsonl
 * ---------------------------------------------------------------- */

int kl__memory_write(const char *case_dir, const kl__memory_line *m) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_printf(&b, "{\"v\":%d,\"case\":", MEMORY_VERSION);
  kl__buf_json_string(&b, m->case_name);
  kl__buf_puts(&b, ",\"run\":");
  kl__buf_json_string(&b, m->run);
  kl__buf_printf(&b, ",\"iteration\":%d,\"proposer\":", m->iteration);
  kl__buf_json_string(&b, m->proposer);
  kl__buf_puts(&b, ",\"memo\":");
  kl__buf_json_string(&b, m->memo);
  kl__buf_printf(&b, ",\"verdict\":\"%s\"", kl_outcome_name(m->outcome));
  if (m->timed) kl__buf_printf(&b, ",\"speedup\":%.6g", m->speedup);
  kl__buf_puts(&b, ",\"reason\":");
  kl__buf_json_string(&b, m->reason);
  kl__buf_printf(&b, ",\"time\":%lld}", (long long)time(NULL));
  char *path = NULL;
  int rc = kl__buf_status(&b);
  if (rc == 0)
    rc = (path = kl__path_join(case_dir, "memory.jsonl"))
             ? kl__ledger_append(path, b.ptr, NULL)
             : kl__error_oom();
  kl__free(path);
  kl_buf_dispose(&b);
  return rc;
}

typedef struct memory_relay {
  kl__memory_fn fn;
  void *payload;
} memory_relay;

static int memory_line(json_object *rec, int line, void *payload) {
  (void)line;
  memory_relay *r = payload;
  kl__memory_line m;
  memset(&m, 0, sizeof(m));
  double d;
  m.case_name = kl__json_text(rec, "case");
  m.run = kl__json_text(rec, "run");
  m.iteration = kl__json_number(rec, "iteration", &d) ? (int)d : -1;
  m.proposer = kl__json_text(rec, "proposer");
  m.memo = kl__json_text(rec, "memo");
  m.outcome = kl__outcome_from_name(kl__json_text(rec, "verdict"));
  m.timed = kl__json_number(rec, "speedup", &m.speedup);
  m.reason = kl__json_text(rec, "reason");
  /* a line without a verdict is no attempt */
  return kl__json_text(rec, "verdict") ? r->fn(&m, r->payload) : 0;
}

int kl__memory_read(const char *case_dir, kl__memory_fn fn, void *payload) {
  char *path = kl__path_join(case_dir, "memory.jsonl");
  if (!path) return kl__error_oom();
  memory_relay r = {fn, payload};
  int rc = kl__ledger_read(path, memory_line, &r);
  kl__free(path);
  return rc;
}

int kl__memory_summary_write(const char *case_dir, const char *text) {
  char *path = kl__path_join(case_dir, "memory.summary.md");
  int rc =
      path ? kl__record_replace(path, text, strlen(text)) : kl__error_oom();
  kl__free(path);
  return rc;
}

/* ---- executor.jsonl
 * ------------------------------------------------------------- */

int kl__executor_line_write(const char *ledger, const char *executor,
                            const char *batch, int attempt, const char *state,
                            const char *job, const char *detail) {
  if (!ledger) return 0;
  kl_buf b = KL_BUF_INIT;
  kl__buf_printf(&b, "{\"v\":%d,\"executor\":", EXECUTOR_VERSION);
  kl__buf_json_string(&b, executor);
  kl__buf_puts(&b, ",\"batch\":");
  kl__buf_json_string(&b, batch);
  kl__buf_printf(&b, ",\"attempt\":%d,\"state\":", attempt);
  kl__buf_json_string(&b, state);
  kl__buf_puts(&b, ",\"job\":");
  kl__buf_json_string(&b, job);
  kl__buf_puts(&b, ",\"detail\":");
  kl__buf_json_string(&b, detail);
  kl__buf_printf(&b, ",\"time\":%lld}", (long long)time(NULL));
  int rc = kl__buf_status(&b);
  if (rc == 0) rc = kl__ledger_append(ledger, b.ptr, NULL);
  kl_buf_dispose(&b);
  return rc;
}

/* ---- export.jsonl
 * ----------------------------------------------------------------- */

int kl__export_line_write(const char *ledger, const char *export_id,
                          const char *case_name, const char *step,
                          json_object *rest) {
  json_object *r = json_object_new_object();
  json_object_object_add(r, "v", json_object_new_int(EXPORT_VERSION));
  json_object_object_add(r, "export", json_object_new_string(export_id));
  json_object_object_add(r, "case", json_object_new_string(case_name));
  json_object_object_add(r, "time", json_object_new_int64((int64_t)time(NULL)));
  json_object_object_add(r, "step", json_object_new_string(step));
  if (rest) {
    json_object_object_foreach(rest, k, v)
        json_object_object_add(r, k, json_object_get(v));
  }
  json_object_put(rest);
  int rc = kl__ledger_append(
      ledger,
      json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN |
                                            JSON_C_TO_STRING_NOSLASHESCAPE),
      NULL);
  json_object_put(r);
  return rc;
}
