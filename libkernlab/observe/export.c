/* kl_export: the case's best kernel back into the program, kept only when
 * the program got faster.
 *
 * Steps, each appended to the case's export.jsonl as it happens (so a kill
 * at any moment leaves the story up to that point, and the backup's path):
 *   1. with --observe: rebuild the program as it is (verify) and observe it
 *      `repeat` times: the "before" times, taken from the same build steps
 *      the "after" will take;
 *   2. back the target file up under exports/<id>/ in the case folder;
 *   3. write the best's kernel section into it: the lines between
 *      `// kl:begin` and `// kl:end` when the target has them, else the
 *      entry's definition; the text written is the best's own section
 *      (markers, or the definition with any lines the candidate added
 *      above it), with the tunable settings as #defines around it, made
 *      to live beside the program's own code (export_section.c);
 *   4. verify; a failure restores the file (and rebuilds);
 *   5. observe `repeat` times: the "after" times;
 *   6. keep the change when median(before) / median(after) - 1 reaches the
 *      case's min_gain_pct; otherwise restore and rebuild.
 * Times are the kernel's total GPU time in the program (every launch of
 * every instantiation of the entry), from the observations. With --measure
 * instead of --observe, steps 1 and 5 run the program's own benchmark
 * (a model server's tokens/s through kl serve-bench, say) and the number
 * it prints under --metric must get better (higher or lower) by
 * min_gain_pct. Commands run from argv lists, never a shell. */
#define _GNU_SOURCE
#include <stddef.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/json.h"
#include "../records/records.h"
#include "kernlab/plugin.h"
#include "kernlab/run.h"
#include "export_internal.h"

/* One export.jsonl record (records/ledgers.c): the step and its fields. */
static int record(exporter *x, const char *what, json_object *rest) {
  return kl__export_line_write(x->ledger, x->id, kl_case_name(x->c), what,
                               rest);
}

/* A number for the ledger; null when it is none (NaN, infinite). */
static json_object *number(double v) {
  return isfinite(v) ? json_object_new_double(v) : NULL;
}

static json_object *fields(const char *k1, json_object *v1, const char *k2,
                           json_object *v2) {
  json_object *o = json_object_new_object();
  if (k1) json_object_object_add(o, k1, v1);
  if (k2) json_object_object_add(o, k2, v2);
  return o;
}

static json_object *argv_json(const char *const *argv) {
  json_object *a = json_object_new_array();
  for (size_t i = 0; argv && argv[i]; i++)
    json_object_array_add(a, json_object_new_string(argv[i]));
  return a;
}

/* The last line of a command's output, for an error message. */
static const char *last_line(kl_buf *out, char *buf, size_t n) {
  size_t end = out->size;
  while (end && (out->ptr[end - 1] == '\n' || out->ptr[end - 1] == '\r'))
    end--;
  size_t s = end;
  while (s && out->ptr[s - 1] != '\n')
    s--;
  snprintf(buf, n, "%.*s", (int)(end - s), out->ptr ? out->ptr + s : "");
  return buf;
}

/* Does line [s, e) say something (a letter or digit), rather than draw a
 * compiler's caret or margin ("      | ")? */
static bool says_something(const char *s, const char *e) {
  for (; s < e; s++)
    if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
        (*s >= '0' && *s <= '9'))
      return true;
  return false;
}

/* Why a verify command failed, in a line: the first three error lines a
 * compiler wrote (gcc and clang's "file:line:col: error: ...", nvcc's
 * "file(line): error: ...", a linker's "undefined reference"), joined by
 * "; "; without one, the last line that says something. */
static const char *why_failed(kl_buf *out, char *buf, size_t n) {
  size_t at = 0, found = 0;
  buf[0] = '\0';
  const char *p = out->ptr ? out->ptr : "", *end = p + out->size;
  while (p < end && found < 3) {
    const char *e = memchr(p, '\n', (size_t)(end - p));
    if (!e) e = end;
    size_t len = (size_t)(e - p);
    char line[600];
    snprintf(line, sizeof line, "%.*s", (int)(len < 599 ? len : 599), p);
    if (strstr(line, ": error") || strstr(line, ": fatal error") ||
        strstr(line, "undefined reference") || strstr(line, "): error")) {
      int w = snprintf(buf + at, n - at, "%s%s", found ? "; " : "", line);
      if (w > 0) at += (size_t)w < n - at ? (size_t)w : n - at - 1;
      found++;
    }
    p = e + 1;
  }
  if (found) return buf;
  /* none: the last line that says something */
  const char *s = out->ptr ? out->ptr : "", *e = s + out->size;
  while (e > s) {
    const char *b = e;
    while (b > s && b[-1] != '\n')
      b--;
    if (says_something(b, e)) {
      snprintf(buf, n, "%.*s", (int)(e - b), b);
      return buf;
    }
    e = b > s ? b - 1 : s;
  }
  return buf;
}

/* Run verify; 0 passed, KL_EREJECTED failed (recorded either way). */
static int verify(exporter *x, const char *label) {
  if (!x->o.verify) return 0;
  kl__run_result res;
  int rc =
      kl__run(&res, x->o.verify, x->o.cwd, x->o.timeout_s * 1000, 64u << 10);
  if (rc < 0) {
    record(x, label,
           fields("error", json_object_new_string(kl_error_last()->message),
                  NULL, NULL));
    kl_buf_dispose(&res.output);
    return rc;
  }
  bool ok = res.exit_code == 0 && !res.timed_out;
  size_t tail = res.output.size > 4000 ? res.output.size - 4000 : 0;
  json_object *f = fields("ok", json_object_new_boolean(ok), "exit_code",
                          json_object_new_int(res.exit_code));
  json_object_object_add(f, "timed_out",
                         json_object_new_boolean(res.timed_out));
  json_object_object_add(
      f, "output_tail",
      json_object_new_string(res.output.ptr ? res.output.ptr + tail : ""));
  record(x, label, f);
  char line[1024];
  kl__export_step(x, "%s: %s%s%s", label, ok ? "ok" : "FAILED", ok ? "" : ": ",
                  ok ? "" : why_failed(&res.output, line, sizeof line));
  if (!ok)
    rc = kl__error(KL_EREJECTED, KL_DOMAIN_NONE, "%s failed (%s): %s", label,
                   res.timed_out ? "timed out" : "exit status",
                   why_failed(&res.output, line, sizeof line));
  kl_buf_dispose(&res.output);
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(const double *v, int n) {
  double s[32];
  memcpy(s, v, (size_t)n * sizeof *v);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* The GPU µs and launches of the kernels called `function` ("kern" or
 * "ns::kern", every instantiation) in an observation, matched as a whole
 * name: "kern" is not "kl_export_kern". None is 0 and 0. */
static int launches_of(const kl_observation *ob, const char *function,
                       double *us, int64_t *n) {
  kl_buf re = KL_BUF_INIT;
  kl__buf_puts(&re, "(^|[ :])");
  for (const char *p = function; *p; p++)
    kl__buf_printf(&re, strchr(".[]()*+?{}|^$\\", *p) ? "\\%c" : "%c", *p);
  kl__buf_puts(&re, "($|[(<])");
  int rc = kl__buf_status(&re);
  *us = 0;
  *n = 0;
  if (rc == 0) rc = kl_observation_kernel_time(us, n, ob, re.ptr);
  kl_buf_dispose(&re);
  return rc == KL_ENOTFOUND ? 0 : rc;
}

/* One observation of the program: the kernel's total µs and launches,
 * recorded in the export's ledger either way. */
static int observe_once(exporter *x, const char *side, int i,
                        const char *filter, double *t, int64_t *launches) {
  const char *entry = x->function; /* every instantiation of it */
  kl_buf path = KL_BUF_INIT;
  kl_observation *ob = NULL;
  kl__buf_printf(&path, "%s/%s-%d.json", x->dir, side, i + 1);
  int rc = kl__buf_status(&path);
  if (rc < 0) return rc;
  kl_observe_options oo = KL_OBSERVE_OPTIONS_INIT;
  oo.output = path.ptr;
  oo.kernel = filter;
  oo.cwd = x->o.cwd;
  oo.capture_output = 1;
  oo.max_launches = 10000;
  if ((rc = kl_observe(&ob, x->o.observe, &oo)) < 0) goto failed;
  if (kl_observation_exit_code(ob) != 0) {
    rc = kl__error(KL_EREJECTED, KL_DOMAIN_NONE,
                   "the observed program exited with %d (%s)",
                   kl_observation_exit_code(ob), side);
    goto failed;
  }
  bool after = strcmp(side, "after") == 0;
  double program = 0, entry_us = 0, exported_us = 0;
  int64_t all = 0, entry_n = 0, exported_n = 0;
  for (size_t k = 0; k < ob->nkernels; k++) {
    program += ob->kernels[k].total_us;
    all += ob->kernels[k].launches;
  }
  if ((rc = launches_of(ob, x->function, &entry_us, &entry_n)) < 0) goto failed;
  for (size_t k = 0; after && k < x->nkernels; k++) {
    double us = 0;
    int64_t n = 0;
    if ((rc = launches_of(ob, x->kernels[k], &us, &n)) < 0) goto failed;
    exported_us += us;
    exported_n += n;
  }
  if (!after && entry_n == 0) {
    rc =
        kl__error(KL_EREJECTED, KL_DOMAIN_NONE,
                  "the observed program never launched '%s' (%s)", entry, side);
    goto failed;
  }
  if (all == 0) {
    rc = kl__error(KL_EREJECTED, KL_DOMAIN_NONE,
                   "the observed program launched no kernel (%s)", side);
    goto failed;
  }
  (after ? x->program_after : x->program_before)[i] = program;
  x->entry_launches[after][i] = entry_n;
  if (after)
    x->exported_launches[i] = exported_n;
  else
    x->entry_before[i] = entry_us;
  /* what is compared: the launcher's kernels have their own names, so
   * with one the program's whole GPU time; else the entry's (its renamed
   * self's, after) */
  *t = x->own_launch ? program : after && x->renamed ? exported_us : entry_us;
  *launches = x->own_launch ? all : after && x->renamed ? exported_n : entry_n;
  json_object *f = fields("kernel_us", json_object_new_double(*t), "launches",
                          json_object_new_int64(*launches));
  json_object_object_add(f, "program_us", json_object_new_double(program));
  json_object_object_add(f, "entry_launches", json_object_new_int64(entry_n));
  if (after)
    json_object_object_add(f, "exported_launches",
                           json_object_new_int64(exported_n));
  json_object_object_add(f, "observation", json_object_new_string(path.ptr));
  record(x, side, f);
  kl__export_step(x, "observe %s %d/%d: %s %.1f us over %lld launches", side,
                  i + 1, x->o.repeat, x->own_launch ? "every kernel" : entry,
                  *t, (long long)*launches);
  goto done;
failed:
  record(x, side,
         fields("error", json_object_new_string(kl_error_last()->message), NULL,
                NULL));
done:
  kl_observation_free(ob);
  kl_buf_dispose(&path);
  return rc;
}

/* Observe the program `repeat` times; the kernel's total µs each time. */
static int observe(exporter *x, const char *side, double *us, int *n) {
  kl_buf filter = KL_BUF_INIT;
  kl__buf_printf(&filter, "^%s($|[(<])", x->function);
  int rc = kl__buf_status(&filter);
  for (int i = 0; rc == 0 && i < x->o.repeat; i++) {
    int64_t launches = 0;
    double t = 0;
    if ((rc = observe_once(x, side, i, x->own_launch ? NULL : filter.ptr, &t,
                           &launches)) < 0)
      break;
    us[(*n)++] = t;
  }
  kl_buf_dispose(&filter);
  return rc;
}

/* One run of the benchmark: the metric it printed, recorded either way. */
static int measure_once(exporter *x, const char *side, int i, double *v) {
  kl__run_result res;
  int rc =
      kl__run(&res, x->o.measure, x->o.cwd, x->o.timeout_s * 1000, 4u << 20);
  json_object *doc = NULL, *val = NULL;
  char line[512];
  if (rc == 0 && (res.timed_out || res.exit_code != 0))
    rc = kl__error(KL_EREJECTED, KL_DOMAIN_NONE,
                   "the measure command %s (%s): %s",
                   res.timed_out ? "timed out" : "failed", side,
                   last_line(&res.output, line, sizeof line));
  if (rc == 0) {
    doc = kl__json_last_object(res.output.ptr ? res.output.ptr : "");
    val = doc ? kl__json_path(doc, x->o.metric) : NULL;
    if (!val || !(json_object_is_type(val, json_type_double) ||
                  json_object_is_type(val, json_type_int)))
      rc = kl__error(KL_EREJECTED, KL_DOMAIN_NONE,
                     "the measure command printed no number '%s' in a JSON "
                     "object last on stdout (%s)",
                     x->o.metric, side);
    else
      *v = json_object_get_double(val);
  }
  json_object *f =
      rc == 0
          ? fields("metric", json_object_new_string(x->o.metric), "value",
                   json_object_new_double(*v))
          : fields("error", json_object_new_string(kl_error_last()->message),
                   NULL, NULL);
  record(x, side, f);
  if (rc == 0)
    kl__export_step(x, "measure %s %d/%d: %s %g", side, i + 1, x->o.repeat,
                    x->o.metric, *v);
  json_object_put(doc);
  kl_buf_dispose(&res.output);
  return rc;
}

/* Run the benchmark `repeat` times; the metric each time. */
static int measure(exporter *x, const char *side, double *v, int *n) {
  int rc = 0;
  for (int i = 0; rc == 0 && i < x->o.repeat; i++) {
    double value = 0;
    if ((rc = measure_once(x, side, i, &value)) == 0) v[(*n)++] = value;
  }
  return rc;
}

/* Before or after: the program observed, or its benchmark run. */
static int take_side(exporter *x, const char *side, double *v, int *n) {
  return x->o.measure ? measure(x, side, v, n) : observe(x, side, v, n);
}

/* The best's source (as recorded, without the settings prepended) and its
 * settings, from its solutions.jsonl record (records/solutions.c). */
typedef struct best_out {
  kl_buf *source;
  char ***config, **best_id;
  double *speedup;
} best_out;

static int take_best(const kl__solution *s, const char *source,
                     const char *line_json, void *payload) {
  (void)line_json;
  best_out *o = payload;
  if (kl__buf_puts(o->source, source) < 0 ||
      !(*o->config = kl__strv_dup((const char *const *)s->config)) ||
      (s->id && !(*o->best_id = kl__strdup(s->id))))
    return kl__error_oom();
  /* recorded against its parent; against the baseline as a log, and
   * directly (with its interval) when it was compared with it */
  o->speedup[0] = o->speedup[1] = o->speedup[2] =
      s->timed ? exp(s->log_vs_baseline) : NAN;
  if (s->has_vs_baseline && s->vs_baseline.speedup > 0) {
    o->speedup[0] = s->vs_baseline.speedup;
    o->speedup[1] = s->vs_baseline.ci_low;
    o->speedup[2] = s->vs_baseline.ci_high;
  }
  return 0;
}

static int best_kernel(exporter *x, kl_buf *source, char ***config,
                       char **best_id, double *speedup) { /* [3] */
  best_out o = {source, config, best_id, speedup};
  *config = NULL;
  *best_id = NULL;
  return kl__solution_best(kl_case_dir(x->c), kl_case_name(x->c), take_best,
                           &o);
}

static int restore(exporter *x, const char *why) {
  int rc = kl__write_file_atomic(
      x->o.to, x->original.ptr ? x->original.ptr : "", x->original.size);
  record(x, "restore",
         fields("reason", json_object_new_string(why), "ok",
                json_object_new_boolean(rc == 0)));
  kl__export_step(x, "restored %s from %s (%s)", x->o.to, x->backup, why);
  if (rc == 0 && x->o.verify) verify(x, "verify (restored)");
  return rc;
}

static void make_id(exporter *x) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  snprintf(x->id, sizeof x->id, "%04d%02d%02d-%02d%02d%02d-%05d",
           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
           tm.tm_sec, (int)(getpid() % 100000));
}

static int make_dirs(exporter *x) {
  kl_buf d = KL_BUF_INIT;
  const char *base = strrchr(x->o.to, '/');
  base = base ? base + 1 : x->o.to;
  int rc = kl__buf_printf(&d, "%s/exports/%s", kl_case_dir(x->c), x->id);
  x->dir = rc == 0 ? kl__buf_detach(&d) : NULL;
  x->ledger = kl__path_join(kl_case_dir(x->c), "export.jsonl");
  kl_buf bk = KL_BUF_INIT;
  if (x->dir && kl__buf_printf(&bk, "%s/%s.orig", x->dir, base) == 0)
    x->backup = kl__buf_detach(&bk);
  kl_buf_dispose(&bk);
  if (!x->dir || !x->ledger || !x->backup) return kl__error_oom();
  return kl__mkdir_p(x->dir);
}

static int summarize(exporter *x, kl_buf *summary, const char *result,
                     const char *reason, const char *best_id) {
  json_object *f = json_object_new_object();
  json_object_object_add(f, "result", json_object_new_string(result));
  json_object_object_add(f, "reason",
                         reason ? json_object_new_string(reason) : NULL);
  json_object_object_add(f, "to", json_object_new_string(x->o.to));
  json_object_object_add(f, "backup", json_object_new_string(x->backup));
  json_object_object_add(f, "best",
                         best_id ? json_object_new_string(best_id) : NULL);
  json_object *b = json_object_new_array(), *a = json_object_new_array();
  for (int i = 0; i < x->nbefore; i++)
    json_object_array_add(b, json_object_new_double(x->before[i]));
  for (int i = 0; i < x->nafter; i++)
    json_object_array_add(a, json_object_new_double(x->after[i]));
  json_object_object_add(f, "before_us", b);
  json_object_object_add(f, "after_us", a);
  if (x->nbefore && x->nafter) {
    double mb = median(x->before, x->nbefore), ma = median(x->after, x->nafter);
    json_object_object_add(f, "before_median_us", json_object_new_double(mb));
    json_object_object_add(f, "after_median_us", json_object_new_double(ma));
    json_object_object_add(f, "speedup",
                           json_object_new_double(ma > 0 ? mb / ma : 0));
  }
  kl_budget budget = KL_BUDGET_INIT;
  kl_case_budget(&budget, x->c);
  json_object_object_add(f, "threshold_pct",
                         json_object_new_double(budget.min_gain_pct));
  json_object_object_add(f, "export", json_object_new_string(x->id));
  if (x->engagement) {
    json_object_object_add(
        f, "engaged",
        json_object_new_boolean(strcmp(x->engagement, "engaged") == 0));
    json_object *k = json_object_new_array();
    for (size_t i = 0; i < x->nkernels; i++)
      json_object_array_add(k, json_object_new_string(x->kernels[i]));
    json_object_object_add(f, "exported_kernels", k);
  }
  static const char *const ends[3] = {"", "_low", "_high"};
  for (int e = 0; e < 3 && isfinite(x->measured[0]); e++) {
    char key[40];
    snprintf(key, sizeof key, "program_speedup%s", ends[e]);
    json_object_object_add(f, key, number(x->measured[e]));
    snprintf(key, sizeof key, "forecast%s", ends[e]);
    json_object_object_add(f, key, number(x->forecast[e]));
  }
  if (isfinite(x->measured[0])) {
    json_object_object_add(f, "entry_share", number(x->share));
    json_object_object_add(
        f, "forecast_gap",
        isfinite(x->forecast[0]) ? json_object_new_boolean(x->gap) : NULL);
  }
  int rc = 0;
  if (summary)
    rc = kl__buf_puts(summary, json_object_to_json_string_ext(
                                   f, JSON_C_TO_STRING_PLAIN |
                                          JSON_C_TO_STRING_NOSLASHESCAPE)) |
         kl__buf_puts(summary, "\n");
  record(x, "result", f);
  return rc ? kl__error_oom() : 0;
}

/* After a failed step: restore, record why (the last error), and fail
 * with KL_EREJECTED. */
static int roll_back(exporter *x, kl_buf *summary, const char *best_id,
                     const char *fallback) {
  char *why = kl__strdup(kl_error_last()->message);
  restore(x, why ? why : fallback);
  summarize(x, summary, "rolled_back", why ? why : fallback, best_id);
  kl__error(KL_EREJECTED, KL_DOMAIN_NONE, "%s; %s restored",
            why ? why : fallback, x->o.to);
  kl__free(why);
  return KL_EREJECTED;
}

/* Whether the program ran the exported section: in every run after, the
 * entry launched no more (a renamed or launcher-owned section; a kernel
 * that kept its name must launch as often as before) and the section's
 * kernels launched at least as often as the entry did before (as often,
 * for one kernel replacing one). Before's launch counts, when they vary
 * between runs, give the range. Otherwise *why says what was seen. */
static bool engaged(const exporter *x, char *why, size_t n) {
  int64_t lo = x->entry_launches[0][0], hi = lo;
  for (int i = 1; i < x->nbefore; i++) {
    if (x->entry_launches[0][i] < lo) lo = x->entry_launches[0][i];
    if (x->entry_launches[0][i] > hi) hi = x->entry_launches[0][i];
  }
  bool kept_name = x->nkernels == 1 && !x->own_launch && !x->renamed;
  bool one_for_one = !x->own_launch || x->nkernels == 1;
  for (int i = 0; i < x->nafter; i++) {
    int64_t entry = x->entry_launches[1][i], ours = x->exported_launches[i];
    if (kept_name ? entry < lo || entry > hi : entry > 0) {
      snprintf(why, n,
               "'%s' launched %lld times after the export (run %d), %lld "
               "before: %s",
               x->function, (long long)entry, i + 1, (long long)hi,
               kept_name ? "not as often as before"
                         : "the program still runs the old kernel (did "
                           "--verify rebuild what --observe runs?)");
      return false;
    }
    if (x->nkernels &&
        (ours < lo || (one_for_one && !kept_name && ours > hi))) {
      kl_buf names = KL_BUF_INIT;
      for (size_t k = 0; k < x->nkernels && k < 4; k++)
        kl__buf_printf(&names, "%s%s", k ? ", " : "", x->kernels[k]);
      snprintf(why, n,
               "the exported kernels (%s%s) launched %lld times after the "
               "export (run %d), where '%s' launched %lld times before",
               names.ptr ? names.ptr : "", x->nkernels > 4 ? ", ..." : "",
               (long long)ours, i + 1, x->function, (long long)hi);
      kl_buf_dispose(&names);
      return false;
    }
  }
  return true;
}

/* The median of a[i] / b[i] over the runs' ends: the lowest and highest
 * ratio any before and after run gives. */
static void ratio_range(const double *before, int nb, const double *after,
                        int na, double *lo, double *hi) {
  double bmin = INFINITY, bmax = 0, amin = INFINITY, amax = 0;
  for (int i = 0; i < nb; i++)
    bmin = fmin(bmin, before[i]), bmax = fmax(bmax, before[i]);
  for (int i = 0; i < na; i++)
    amin = fmin(amin, after[i]), amax = fmax(amax, after[i]);
  *lo = amax > 0 ? bmin / amax : NAN;
  *hi = amin > 0 ? bmax / amin : NAN;
}

/* What the case's speedup should do to the program (Amdahl: the entry's
 * share p of its GPU time made S times faster gives 1 / (1 - p + p / S)),
 * beside what the observations measured, as a step and a ledger record; a
 * gap beyond both intervals is said. */
static void forecast(exporter *x) {
  if (!x->o.observe || !x->nbefore || !x->nafter) return;
  double prog = median(x->program_before, x->nbefore);
  double entry = median(x->entry_before, x->nbefore);
  double p = prog > 0 ? entry / prog : NAN;
  double mb = prog, ma = median(x->program_after, x->nafter);
  double measured = ma > 0 ? mb / ma : NAN, mlo, mhi;
  ratio_range(x->program_before, x->nbefore, x->program_after, x->nafter, &mlo,
              &mhi);
  x->share = p;
  x->measured[0] = measured, x->measured[1] = mlo, x->measured[2] = mhi;
  json_object *f =
      fields("entry_share", number(p), "program_speedup", number(measured));
  json_object_object_add(f, "program_speedup_range", number(mlo));
  json_object_object_add(f, "program_speedup_range_high", number(mhi));
  if (isnan(x->speedup[0])) {
    kl__export_step(
        x,
        "forecast: none (the kernel's speedup on the case is not known: "
        "kl compare it and pass --speedup); measured: the program's GPU "
        "time x%.3f [%.3f, %.3f] (%.1f us -> %.1f us; '%s' was %.1f%% of it)",
        measured, mlo, mhi, mb, ma, x->function, 100 * p);
    record(x, "forecast", f);
    return;
  }
  double s = x->speedup[0], slo = x->speedup[1], shi = x->speedup[2];
  double fc = 1 / (1 - p + p / s), flo = 1 / (1 - p + p / slo),
         fhi = 1 / (1 - p + p / shi);
  json_object_object_add(f, "case_speedup", number(s));
  json_object_object_add(f, "forecast", number(fc));
  json_object_object_add(f, "forecast_low", number(flo));
  json_object_object_add(f, "forecast_high", number(fhi));
  bool gap = mhi < flo || mlo > fhi;
  x->forecast[0] = fc, x->forecast[1] = flo, x->forecast[2] = fhi;
  x->gap = gap;
  json_object_object_add(f, "gap", json_object_new_boolean(gap));
  kl__export_step(
      x,
      "forecast: the program's GPU time x%.3f [%.3f, %.3f] (the case's x%.3f "
      "[%.3f, %.3f] on '%s', %.1f%% of it); measured: x%.3f [%.3f, %.3f] "
      "(%.1f us -> %.1f us)%s",
      fc, flo, fhi, s, slo, shi, x->function, 100 * p, measured, mlo, mhi, mb,
      ma,
      gap ? "; the measured change is outside the forecast: the program "
            "runs the kernel at other shapes or with other data than the "
            "case, or its other kernels changed"
          : "");
  record(x, "forecast", f);
}

static int run_export(exporter *x, kl_buf *summary) {
  kl_buf best = KL_BUF_INIT, text = KL_BUF_INIT;
  char **config = NULL, *best_id = NULL;
  double best_speedup = NAN;
  int rc;
  if ((rc = kl__read_file(&x->original, x->o.to)) < 0) goto done;
  if (x->o.kernel) { /* a given section, e.g. a dispatcher */
    if ((rc = kl__read_file(&best, x->o.kernel)) < 0 ||
        !(best_id = kl__strdup(x->o.kernel))) {
      rc = rc < 0 ? rc : kl__error_oom();
      goto done;
    }
  } else if ((rc = best_kernel(x, &best, &config, &best_id, x->speedup)) < 0) {
    goto done;
  }
  best_speedup = x->speedup[0]; /* NAN for a file with no --speedup */
  make_id(x);                   /* the section written names it */
  if ((rc = kl__c_defines(&x->own_launch, best.ptr ? best.ptr : "",
                          KL_LAUNCHER_NAME)) < 0 ||
      (rc = kl__export_new_target(x, &text, best.ptr ? best.ptr : "", config)) <
          0 ||
      (rc = make_dirs(x)) < 0)
    goto done;
  json_object *f = fields("to", json_object_new_string(x->o.to), "best",
                          best_id ? json_object_new_string(best_id) : NULL);
  json_object_object_add(f, "best_speedup", number(best_speedup));
  json_object_object_add(f, "verify",
                         x->o.verify ? argv_json(x->o.verify) : NULL);
  json_object_object_add(f, "observe",
                         x->o.observe ? argv_json(x->o.observe) : NULL);
  json_object_object_add(f, "repeat", json_object_new_int(x->o.repeat));
  if (x->o.measure) {
    json_object_object_add(f, "measure", argv_json(x->o.measure));
    json_object_object_add(f, "metric", json_object_new_string(x->o.metric));
    json_object_object_add(
        f, "better", json_object_new_string(x->o.higher ? "higher" : "lower"));
  }
  if ((rc = record(x, "start", f)) < 0) goto done;
  kl__export_step(x, "export %s: best %s of case %s into %s", x->id,
                  best_id ? best_id : "?", kl_case_name(x->c), x->o.to);

  bool measured = x->o.observe || x->o.measure;
  if (measured) {
    if ((rc = verify(x, "verify (before)")) < 0 ||
        (rc = take_side(x, "before", x->before, &x->nbefore)) < 0) {
      summarize(x, summary, "failed", kl_error_last()->message, best_id);
      goto done; /* nothing was changed yet */
    }
  }
  if ((rc =
           kl__write_new_file(x->backup, x->original.ptr ? x->original.ptr : "",
                              x->original.size)) < 0 ||
      (rc = record(
           x, "backup",
           fields("path", json_object_new_string(x->backup), NULL, NULL))) < 0)
    goto done;
  kl__export_step(x, "backup: %s", x->backup);
  rc = kl__write_file_atomic(x->o.to, text.ptr, text.size);
  record(x, "write",
         fields("bytes", json_object_new_int64((int64_t)text.size), "ok",
                json_object_new_boolean(rc == 0)));
  if (rc < 0) {
    restore(x, "the write failed");
    goto done;
  }
  kl__export_step(x, "wrote the best's kernel into %s", x->o.to);
  if ((rc = verify(x, "verify")) < 0) {
    rc = roll_back(x, summary, best_id, "verify failed");
    goto done;
  }
  if (!measured) {
    rc = summarize(x, summary, "kept_unmeasured",
                   "no program to observe or measure was given", best_id);
    goto done;
  }
  if ((rc = take_side(x, "after", x->after, &x->nafter)) < 0) {
    rc = roll_back(x, summary, best_id,
                   x->o.measure ? "measuring failed" : "observing failed");
    goto done;
  }
  if (x->o.observe) {
    char not_engaged[512];
    x->engagement = "engaged";
    if (!engaged(x, not_engaged, sizeof not_engaged)) {
      x->engagement = "not engaged";
      restore(x, not_engaged);
      summarize(x, summary, "not_engaged", not_engaged, best_id);
      rc = kl__error(KL_EREJECTED, KL_DOMAIN_NONE,
                     "not engaged: %s; %s restored", not_engaged, x->o.to);
      goto done;
    }
  }
  forecast(x);
  kl_budget budget = KL_BUDGET_INIT;
  kl_case_budget(&budget, x->c);
  double mb = median(x->before, x->nbefore), ma = median(x->after, x->nafter);
  /* the improvement: less time, or more (fewer) of what is measured */
  double ratio = x->o.measure && x->o.higher ? (mb > 0 ? ma / mb : 0)
                                             : (ma > 0 ? mb / ma : 0);
  double gain = 100.0 * (ratio - 1.0);
  char why[256];
  if (x->o.measure)
    snprintf(why, sizeof why,
             "%s: %g -> %g (%s is better; x%.3f, %+.1f%%; needs +%.1f%%)",
             x->o.metric, mb, ma, x->o.higher ? "higher" : "lower", ratio, gain,
             budget.min_gain_pct);
  else
    snprintf(why, sizeof why,
             "%s: %.1f us -> %.1f us in the program (x%.3f, %+.1f%%; needs "
             "+%.1f%%)",
             kl_case_entry(x->c), mb, ma, ratio, gain, budget.min_gain_pct);
  if (gain >= budget.min_gain_pct) {
    kl__export_step(x, "kept: %s", why);
    rc = summarize(x, summary, "kept", why, best_id);
  } else {
    restore(x, why);
    summarize(x, summary, "rolled_back", why, best_id);
    rc = kl__error(KL_EREJECTED, KL_DOMAIN_NONE, "not faster: %s; %s restored",
                   why, x->o.to);
  }
done:
  kl_buf_dispose(&best);
  kl_buf_dispose(&text);
  kl__strv_free(config);
  kl__free(best_id);
  return rc;
}

int kl_export(kl_buf *summary, const kl_case *c,
              const kl_export_options *given) {
  kl_export_options full;
  int taken = kl__export_options_take(&full, given);
  if (taken < 0) return taken;
  const kl_export_options *opts = &full;
  if (!c || !given || !opts->to)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_export needs a case and the file to write");
  if (kl_case_backend(c) == KL_BACKEND_COMMAND || !kl_case_entry(c))
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_NONE,
                     "case '%s' runs a command: its best is a whole file, "
                     "which kl best %s -o FILE writes (kl export replaces a "
                     "kernel inside a program)",
                     kl_case_name(c), kl_case_dir(c));
  if ((opts->verify && !opts->verify[0]) ||
      (opts->observe && !opts->observe[0]) ||
      (opts->measure && !opts->measure[0]))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "an empty verify, observe or measure command");
  if (opts->measure && opts->observe)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "observe or measure, not both: one says what got faster");
  if (opts->measure && (!opts->metric || !opts->metric[0]))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "a measure command needs the metric it must improve "
                     "(--metric NAME: a field of its JSON, as tokens_per_s)");
  if (opts->repeat < 0 || opts->repeat > 32 || opts->timeout_s < 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "repeat must be 1 to 32 and the timeout positive");
  if (!kl__is_file(opts->to))
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE, "%s: no such file",
                     opts->to);
  exporter x;
  memset(&x, 0, sizeof x);
  x.c = c;
  x.o = *opts;
  if (!x.o.repeat) x.o.repeat = 3;
  if (!x.o.timeout_s) x.o.timeout_s = 600;
  x.share = x.forecast[0] = x.forecast[1] = x.forecast[2] = NAN;
  x.measured[0] = x.measured[1] = x.measured[2] = NAN;
  x.speedup[0] = opts->speedup > 0 ? opts->speedup : NAN;
  x.speedup[1] = opts->speedup_low > 0 ? opts->speedup_low : x.speedup[0];
  x.speedup[2] = opts->speedup_high > 0 ? opts->speedup_high : x.speedup[0];
  x.function = kl__c_entry_function(kl_case_entry(c));
  x.name = kl__c_entry_name(kl_case_entry(c));
  int rc = x.function && x.name ? run_export(&x, summary) : kl__error_oom();
  kl__free(x.function);
  kl__free(x.name);
  kl__names_free(x.kernels, x.nkernels);
  kl_buf_dispose(&x.original);
  kl__free(x.dir);
  kl__free(x.ledger);
  kl__free(x.backup);
  return rc;
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t export_options_sizes[] = {
    0, offsetof(kl_export_options, kernel),
    offsetof(kl_export_options, measure), offsetof(kl_export_options, speedup),
    sizeof(kl_export_options)};

KL__OPTIONS_FUNCTIONS(kl_export_options, kl_export_options_init,
                      kl__export_options_take, KL_EXPORT_OPTIONS_INIT,
                      export_options_sizes)
