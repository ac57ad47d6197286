/* CASE/devlog.md: the case's development log, one entry per accepted
 * version, for people and for the prompt.
 *
 * An entry is made from the version's solutions.jsonl line alone (its id,
 * parent, memo, settings, speedups and the measurement object that says
 * how each shape was checked and timed), so a resume can write the entry a
 * kill left out exactly as the live run would have. Each entry starts with
 * a level-two heading naming the version's id ("## RUN/NNN: ..."); that
 * heading is how the writer's caller asks whether an entry is there
 * already. The file is appended to through the ledger writer (one write,
 * fsync'd); a torn last entry (a killed writer's, without its final
 * newline) counts as absent and is cut off, heading and all, before the
 * next append, so a resume writes it whole.
 * The prompt gets the file's tail: the newest whole entries that fit. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../core/json.h"
#include "records.h"

#define DEVLOG_HEADER                                                          \
  "# Devlog\n\n"                                                               \
  "One entry per accepted version of this case, appended by kl run: what "     \
  "changed\n(the proposer's memo), how it was checked, and the numbers. "      \
  "kernlab reads the\nheadings; the rest is for people."

static char *devlog_path(const char *case_dir) {
  return kl__path_join(case_dir, "devlog.md");
}

static bool flag(json_object *o, const char *key) {
  json_object *v = kl__json_get(o, key);
  return v && json_object_get_boolean(v);
}

/* How the version was checked: shapes checked and correct, the largest
 * relative L2 error, seeds and gates, from the measurement object. */
static void correctness(kl_buf *b, json_object *m) {
  json_object *shapes = kl__json_get(m, "shapes");
  size_t n = json_object_is_type(shapes, json_type_array)
                 ? json_object_array_length(shapes)
                 : 0;
  size_t checked = 0, correct = 0;
  double worst = -1;
  for (size_t i = 0; i < n; i++) {
    json_object *s = json_object_array_get_idx(shapes, i);
    double e;
    if (flag(s, "checked")) checked++;
    if (flag(s, "correct")) correct++;
    if (kl__json_number(s, "rel_l2", &e) && e > worst) worst = e;
  }
  if (!m || n == 0) {
    kl__buf_puts(b, "- Correctness: passed the case's checks (no details "
                    "were recorded)\n");
    return;
  }
  kl__buf_printf(b, "- Correctness: %zu of %zu shapes checked, %zu correct",
                 checked, n, correct);
  if (worst >= 0) kl__buf_printf(b, "; largest relative L2 error %.3g", worst);
  json_object *seeds = kl__json_get(m, "seeds");
  if (json_object_is_type(seeds, json_type_array))
    kl__buf_printf(b, "; %zu seeds", json_object_array_length(seeds));
  json_object *gates = kl__json_get(m, "gates");
  size_t ng = json_object_is_type(gates, json_type_array)
                  ? json_object_array_length(gates)
                  : 0;
  for (size_t i = 0; i < ng; i++)
    kl__buf_printf(b, "%s%s", i ? ", " : "; gates passed: ",
                   json_object_get_string(json_object_array_get_idx(gates, i)));
  kl__buf_putc(b, '\n');
}

/* Each timed shape: its median and its speedup against the parent. */
static void shape_table(kl_buf *b, json_object *m) {
  json_object *shapes = kl__json_get(m, "shapes");
  size_t n = json_object_is_type(shapes, json_type_array)
                 ? json_object_array_length(shapes)
                 : 0;
  bool head = false;
  for (size_t i = 0; i < n; i++) {
    json_object *s = json_object_array_get_idx(shapes, i);
    double med, sp, lo = 0, hi = 0;
    if (!kl__json_number(s, "median_us", &med)) continue;
    if (!head) {
      kl__buf_puts(b, "\n| shape | median (us) | against the parent |\n"
                      "|---|---:|---|\n");
      head = true;
    }
    const char *name = kl__json_text(s, "name");
    kl__buf_printf(b, "| %s | %.4g | ", name ? name : "?", med);
    if (kl__json_number(s, "speedup", &sp)) {
      kl__json_pair(s, "ci", &lo, &hi);
      kl__buf_printf(b, "x%.3f [%.3f, %.3f] |\n", sp, lo, hi);
    } else {
      kl__buf_puts(b, "- |\n");
    }
  }
}

int kl__devlog_entry(kl_buf *out, const kl__solution *s) {
  kl_buf b = KL_BUF_INIT;
  json_object *m = s->measurement ? json_tokener_parse(s->measurement) : NULL;
  char when[32] = "-";
  time_t t = (time_t)s->time;
  struct tm tm;
  if (s->time > 0 && gmtime_r(&t, &tm))
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%SZ", &tm);
  kl__buf_printf(&b, "\n## %s: ", s->id ? s->id : "?");
  if (s->has_vs_baseline)
    kl__buf_printf(&b, "x%.3f against the baseline\n\n",
                   s->vs_baseline.speedup);
  else
    kl__buf_puts(&b, "accepted\n\n");
  kl__buf_printf(&b, "- When: %s, run %s, iteration %d, proposed by %s\n", when,
                 s->run ? s->run : "?", s->iteration,
                 s->proposer ? s->proposer : "?");
  kl__buf_printf(&b, "- Parent: %s\n", s->parent ? s->parent : "(none)");
  kl__buf_printf(&b, "- What changed: %s\n",
                 s->memo && s->memo[0] ? s->memo : "(no memo)");
  if (s->config && s->config[0]) {
    kl__buf_puts(&b, "- Settings:");
    for (size_t i = 0; s->config[i]; i++)
      kl__buf_printf(&b, " %s", s->config[i]);
    kl__buf_putc(&b, '\n');
  }
  if (s->dir)
    kl__buf_printf(&b, "- Kernel: %s/%s%s%s%s\n", s->dir,
                   s->kernel ? s->kernel : "", s->diff ? " (diff: " : "",
                   s->diff ? s->dir : "", s->diff ? "/kernel.diff)" : "");
  correctness(&b, m);
  if (s->timed)
    kl__buf_printf(&b, "- Against the parent: x%.3f [%.3f, %.3f]\n",
                   s->vs_parent.speedup, s->vs_parent.ci_low,
                   s->vs_parent.ci_high);
  if (s->has_vs_baseline)
    kl__buf_printf(&b, "- Against the baseline: x%.3f [%.3f, %.3f] (%s)\n",
                   s->vs_baseline.speedup, s->vs_baseline.ci_low,
                   s->vs_baseline.ci_high, s->method ? s->method : "direct");
  shape_table(&b, m);
  json_object_put(m);
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}

/* The length of text without a torn last entry: a killed writer leaves
 * the text without its final newline, and what it left of its entry
 * (from the entry's heading on) is not an entry. */
static size_t whole(const char *text, size_t n) {
  if (n == 0 || text[n - 1] == '\n') return n;
  size_t keep = 0;
  for (const char *p = strstr(text, "\n## "); p; p = strstr(p + 1, "\n## "))
    keep = (size_t)(p - text); /* the blank line before it goes too */
  return keep;
}

/* Cut a torn last entry off the file (the ledger writer alone would keep
 * its complete lines, heading included, and the entry would look whole). */
static int cut_torn(const char *path) {
  kl_buf t = KL_BUF_INIT;
  int rc = kl__is_file(path) ? kl__read_file(&t, path) : 0;
  if (rc == 0 && t.size && whole(t.ptr, t.size) < t.size)
    rc = kl__record_replace(path, t.ptr, whole(t.ptr, t.size));
  kl_buf_dispose(&t);
  return rc;
}

int kl__devlog_append(const char *case_dir, const kl__solution *s) {
  kl_buf entry = KL_BUF_INIT;
  char *path = devlog_path(case_dir);
  int rc = path ? kl__devlog_entry(&entry, s) : kl__error_oom();
  if (rc == 0) rc = cut_torn(path);
  if (rc == 0) {
    /* the ledger writer adds the newline after the entry's last line */
    if (entry.size && entry.ptr[entry.size - 1] == '\n')
      entry.ptr[--entry.size] = '\0';
    rc = kl__ledger_append(path, entry.ptr, DEVLOG_HEADER);
  }
  kl_buf_dispose(&entry);
  kl__free(path);
  return rc;
}

int kl__devlog_read(kl_buf *out, const char *case_dir) {
  char *path = devlog_path(case_dir);
  if (!path) return kl__error_oom();
  int rc = kl__is_file(path) ? kl__read_file(out, path) : 0;
  kl__free(path);
  return rc;
}

/* Where the entry with this heading starts in text, or NULL. */
static const char *entry_of(const char *text, const char *id) {
  size_t n = strlen(id);
  for (const char *p = strstr(text, "\n## "); p; p = strstr(p + 1, "\n## "))
    if (strncmp(p + 4, id, n) == 0 && p[4 + n] == ':') return p + 1;
  return NULL;
}

int kl__devlog_has(bool *has, const char *case_dir, const char *id) {
  kl_buf t = KL_BUF_INIT;
  int rc = kl__devlog_read(&t, case_dir);
  if (rc == 0 && t.ptr) t.ptr[t.size = whole(t.ptr, t.size)] = '\0';
  *has = rc == 0 && t.ptr && entry_of(t.ptr, id);
  kl_buf_dispose(&t);
  return rc;
}

int kl__devlog_tail(kl_buf *out, const char *case_dir, size_t max_chars) {
  kl_buf t = KL_BUF_INIT;
  int rc = kl__devlog_read(&t, case_dir);
  if (rc < 0 || !t.ptr) goto done;
  t.ptr[t.size = whole(t.ptr, t.size)] = '\0';
  /* the newest entries whole: walk back over headings while they fit */
  const char *start = NULL;
  const char *first = strstr(t.ptr, "\n## ");
  for (const char *p = first; p; p = strstr(p + 1, "\n## ")) {
    size_t left = t.size - (size_t)(p + 1 - t.ptr);
    if (left <= max_chars) {
      start = p + 1;
      break;
    }
  }
  if (start) {
    if (start != first + 1)
      kl__buf_puts(out, "(older entries left out; devlog.md has them all)\n\n");
    kl__buf_puts(out, start);
    rc = kl__buf_status(out);
  }
done:
  kl_buf_dispose(&t);
  return rc;
}
