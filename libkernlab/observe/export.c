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
 *      above it), with the tunable settings as #defines around it;
 *   4. verify; a failure restores the file (and rebuilds);
 *   5. observe `repeat` times: the "after" times;
 *   6. keep the change when median(before) / median(after) - 1 reaches the
 *      case's min_gain_pct; otherwise restore and rebuild.
 * Times are the kernel's total GPU time in the program (every launch of
 * every instantiation of the entry), from the observations. Commands run
 * from argv lists, never a shell. */
#define _GNU_SOURCE
#include <stddef.h>
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
#include "kernlab/run.h"
#include "observe_internal.h"

typedef struct exporter {
  const kl_case *c;
  kl_export_options o;
  char id[48];
  char *dir;       /* <case>/exports/<id> */
  char *ledger;    /* <case>/export.jsonl */
  char *backup;    /* dir/<basename>.orig */
  kl_buf original; /* the target as it was */
  double before[32], after[32];
  int nbefore, nafter;
} exporter;

static void step(exporter *x, const char *fmt, ...) KL_PRINTF(2, 3);
static void step(exporter *x, const char *fmt, ...) {
  if (!x->o.on_step) return;
  kl_buf b = KL_BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  int rc = kl__buf_vprintf(&b, fmt, ap);
  va_end(ap);
  if (rc == 0) x->o.on_step(b.ptr, x->o.payload);
  kl_buf_dispose(&b);
}

/* One export.jsonl record (records/ledgers.c): the step and its fields. */
static int record(exporter *x, const char *what, json_object *rest) {
  return kl__export_line_write(x->ledger, x->id, kl_case_name(x->c), what,
                               rest);
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
  char line[512];
  step(x, "%s: %s%s%s", label, ok ? "ok" : "FAILED", ok ? "" : ": ",
       ok ? "" : last_line(&res.output, line, sizeof line));
  if (!ok)
    rc = kl__error(KL_EREJECTED, KL_DOMAIN_NONE, "%s failed (%s): %s", label,
                   res.timed_out ? "timed out" : "exit status",
                   last_line(&res.output, line, sizeof line));
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

/* One observation of the program: the kernel's total µs and launches,
 * recorded in the export's ledger either way. */
static int observe_once(exporter *x, const char *side, int i,
                        const char *filter, double *t, int64_t *launches) {
  const char *entry = kl_case_entry(x->c);
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
  if (kl_observation_kernel_time(t, launches, ob, entry) == KL_ENOTFOUND) {
    rc =
        kl__error(KL_EREJECTED, KL_DOMAIN_NONE,
                  "the observed program never launched '%s' (%s)", entry, side);
    goto failed;
  }
  json_object *f = fields("kernel_us", json_object_new_double(*t), "launches",
                          json_object_new_int64(*launches));
  json_object_object_add(f, "observation", json_object_new_string(path.ptr));
  record(x, side, f);
  step(x, "observe %s %d/%d: %s %.1f us over %lld launches", side, i + 1,
       x->o.repeat, entry, *t, (long long)*launches);
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
  kl__buf_printf(&filter, "^%s($|[(<])", kl_case_entry(x->c));
  int rc = kl__buf_status(&filter);
  for (int i = 0; rc == 0 && i < x->o.repeat; i++) {
    int64_t launches = 0;
    double t = 0;
    if ((rc = observe_once(x, side, i, filter.ptr, &t, &launches)) < 0) break;
    us[(*n)++] = t;
  }
  kl_buf_dispose(&filter);
  return rc;
}

/* ---- the kernel section -----------------------------------------------------
 */

typedef struct span {
  size_t start, end;
  bool marked;
} span;

/* Lines "// kl:begin" .. "// kl:end": the bytes between them. */
static bool markers(const char *text, span *s) {
  const char *b = strstr(text, "// kl:begin");
  const char *e = b ? strstr(b, "// kl:end") : NULL;
  if (!b || !e) return false;
  const char *nl = strchr(b, '\n');
  if (!nl || nl > e) return false;
  s->start = (size_t)(nl + 1 - text);
  size_t at = (size_t)(e - text);
  while (at > s->start && text[at - 1] != '\n')
    at--;
  s->end = at;
  s->marked = true;
  return true;
}

/* The entry's section of text: the marked lines, else its definition. */
static int section(const char *text, const char *entry, span *s) {
  memset(s, 0, sizeof *s);
  if (markers(text, s)) return 0;
  char *clean = kl__c_blank(text, strlen(text), false);
  if (!clean) return kl__error_oom();
  size_t open;
  int rc = kl__c_definition_span(clean, entry, &s->start, &open, &s->end);
  kl__free(clean);
  return rc;
}

/* Lines of `best` before its section that the baseline's text before its
 * section does not start with: what the candidate added above the kernel
 * (helpers, constants). */
static int added_prelude(kl_buf *out, const char *best, size_t best_at,
                         const char *base, size_t base_at) {
  size_t i = 0, j = 0;
  while (i < best_at && j < base_at) {
    size_t li = strcspn(best + i, "\n"), lj = strcspn(base + j, "\n");
    if (li != lj || memcmp(best + i, base + j, li) != 0) break;
    i += li + (best[i + li] == '\n');
    j += lj + (base[j + lj] == '\n');
  }
  return i < best_at ? kl__buf_put(out, best + i, best_at - i) : 0;
}

/* The new text of the target: its own text around the best's section. */
static int new_target(exporter *x, kl_buf *out, const char *best_source,
                      char *const *config) {
  const char *entry = kl_case_entry(x->c);
  const char *target = x->original.ptr ? x->original.ptr : "";
  span t, b, base_span;
  if (section(target, entry, &t) < 0)
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                     "%s: no definition of '%s' (and no // kl:begin / "
                     "// kl:end lines)",
                     x->o.to, entry);
  if (section(best_source, entry, &b) < 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "the best kernel has no definition of '%s'", entry);
  kl_buf base = KL_BUF_INIT;
  int rc = kl__read_file(&base, kl_case_kernel_path(x->c));
  if (rc < 0) return rc;
  kl__buf_put(out, target, t.start);
  kl__buf_printf(out,
                 "%s/* kernlab export %s: the best kernel of "
                 "case %s */\n",
                 t.marked ? "" : "", x->id, kl_case_name(x->c));
  if (!b.marked && section(base.ptr ? base.ptr : "", entry, &base_span) == 0)
    added_prelude(out, best_source, b.start, base.ptr, base_span.start);
  for (size_t i = 0; config && config[i]; i++) {
    const char *eq = strchr(config[i], '=');
    if (eq)
      kl__buf_printf(out, "#undef %.*s\n#define %.*s %s\n",
                     (int)(eq - config[i]), config[i], (int)(eq - config[i]),
                     config[i], eq + 1);
  }
  kl__buf_put(out, best_source + b.start, b.end - b.start);
  if (!b.marked) kl__buf_puts(out, "\n");
  for (size_t i = 0; config && config[i]; i++) {
    const char *eq = strchr(config[i], '=');
    if (eq)
      kl__buf_printf(out, "#undef %.*s\n", (int)(eq - config[i]), config[i]);
  }
  kl__buf_puts(out, target + t.end);
  kl_buf_dispose(&base);
  return kl__buf_status(out);
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
  /* recorded against its parent; against the baseline as a log */
  *o->speedup = s->timed ? exp(s->log_vs_baseline) : NAN;
  return 0;
}

static int best_kernel(exporter *x, kl_buf *source, char ***config,
                       char **best_id, double *speedup) {
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
  step(x, "restored %s from %s (%s)", x->o.to, x->backup, why);
  if (rc == 0 && x->o.verify) verify(x, "verify (restored)");
  return rc;
}

static int make_dirs(exporter *x) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  snprintf(x->id, sizeof x->id, "%04d%02d%02d-%02d%02d%02d-%05d",
           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
           tm.tm_sec, (int)(getpid() % 100000));
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

static int run_export(exporter *x, kl_buf *summary) {
  kl_buf best = KL_BUF_INIT, text = KL_BUF_INIT;
  char **config = NULL, *best_id = NULL;
  double best_speedup = NAN;
  int rc;
  if ((rc = kl__read_file(&x->original, x->o.to)) < 0 ||
      (rc = best_kernel(x, &best, &config, &best_id, &best_speedup)) < 0 ||
      (rc = new_target(x, &text, best.ptr ? best.ptr : "", config)) < 0 ||
      (rc = make_dirs(x)) < 0)
    goto done;
  json_object *f = fields("to", json_object_new_string(x->o.to), "best",
                          best_id ? json_object_new_string(best_id) : NULL);
  json_object_object_add(f, "best_speedup",
                         json_object_new_double(best_speedup));
  json_object_object_add(f, "verify",
                         x->o.verify ? argv_json(x->o.verify) : NULL);
  json_object_object_add(f, "observe",
                         x->o.observe ? argv_json(x->o.observe) : NULL);
  json_object_object_add(f, "repeat", json_object_new_int(x->o.repeat));
  if ((rc = record(x, "start", f)) < 0) goto done;
  step(x, "export %s: best %s of case %s into %s", x->id,
       best_id ? best_id : "?", kl_case_name(x->c), x->o.to);

  if (x->o.observe) {
    if ((rc = verify(x, "verify (before)")) < 0 ||
        (rc = observe(x, "before", x->before, &x->nbefore)) < 0) {
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
  step(x, "backup: %s", x->backup);
  rc = kl__write_file_atomic(x->o.to, text.ptr, text.size);
  record(x, "write",
         fields("bytes", json_object_new_int64((int64_t)text.size), "ok",
                json_object_new_boolean(rc == 0)));
  if (rc < 0) {
    restore(x, "the write failed");
    goto done;
  }
  step(x, "wrote the best's kernel into %s", x->o.to);
  if ((rc = verify(x, "verify")) < 0) {
    rc = roll_back(x, summary, best_id, "verify failed");
    goto done;
  }
  if (!x->o.observe) {
    rc = summarize(x, summary, "kept_unmeasured",
                   "no program to observe was given", best_id);
    goto done;
  }
  if ((rc = observe(x, "after", x->after, &x->nafter)) < 0) {
    rc = roll_back(x, summary, best_id, "observing failed");
    goto done;
  }
  kl_budget budget = KL_BUDGET_INIT;
  kl_case_budget(&budget, x->c);
  double mb = median(x->before, x->nbefore), ma = median(x->after, x->nafter);
  double gain = ma > 0 ? 100.0 * (mb / ma - 1.0) : 0;
  char why[256];
  snprintf(why, sizeof why,
           "%s: %.1f us -> %.1f us in the program (x%.3f, %+.1f%%; needs "
           "+%.1f%%)",
           kl_case_entry(x->c), mb, ma, ma > 0 ? mb / ma : 0, gain,
           budget.min_gain_pct);
  if (gain >= budget.min_gain_pct) {
    step(x, "kept: %s", why);
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
  if ((opts->verify && !opts->verify[0]) ||
      (opts->observe && !opts->observe[0]))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "an empty verify or observe command");
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
  int rc = run_export(&x, summary);
  kl_buf_dispose(&x.original);
  kl__free(x.dir);
  kl__free(x.ledger);
  kl__free(x.backup);
  return rc;
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t export_options_sizes[] = {0, sizeof(kl_export_options)};

int kl_export_options_init(kl_export_options *opts, unsigned version) {
  const kl_export_options defaults = KL_EXPORT_OPTIONS_INIT;
  return kl__options_init(opts, &defaults, version, export_options_sizes,
                          KL_ARRAY_SIZE(export_options_sizes),
                          "kl_export_options");
}

/* A caller's kl_export_options (of any version) over the defaults: what this
 * library reads from. */
int kl__export_options_take(kl_export_options *full,
                            const kl_export_options *given) {
  const kl_export_options defaults = KL_EXPORT_OPTIONS_INIT;
  *full = defaults;
  return kl__options_take(full, given, export_options_sizes,
                          KL_ARRAY_SIZE(export_options_sizes),
                          "kl_export_options");
}
