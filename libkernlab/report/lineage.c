/* The versions of a case as a tree (kl history --lineage), and the two
 * ledger views of solutions.jsonl (--attempts, --improvements).
 *
 * Every line of solutions.jsonl names its parent: the best the candidate
 * was compared with (the baseline has none). The tree of a run is those
 * edges; a rejected candidate is a leaf under the version it failed to
 * beat. Across runs, a run's baseline is the case's kernel as it was when
 * the run started: where that kernel is an earlier run's accepted version
 * (the same kernel and settings, or the file kl best wrote from it, with
 * the settings in front), the baseline "continues" that version and its
 * tree hangs under it; otherwise each run is a tree of its own. The diff
 * against the parent is the iteration's kernel.diff; its added and removed
 * lines are counted here. The attempt ledger is every line, failures included;
 * the optimization ledger only the baselines and the accepted versions. The
 * devlog, for people and prompts, is read through records/devlog.c. */
#include <stdio.h>
#include <string.h>

#include "../records/records.h"
#include "report_internal.h"

typedef struct node {
  char *id, *parent, *run, *proposer, *reason, *gate, *memo, *key, *dir;
  char *kernel, *config, *continues;
  char **settings; /* NULL-ended */
  int iteration;
  kl_outcome outcome;
  bool timed, has_vs_base, diff;
  kl_speedup vs_parent, vs_base;
  int added, removed; /* lines of the diff; -1: no diff */
} node;

typedef struct nodes {
  node *v;
  size_t n, cap;
  const char *run; /* NULL: every run */
} nodes;

static void nodes_dispose(nodes *ns) {
  for (size_t i = 0; i < ns->n; i++) {
    node *x = &ns->v[i];
    char **f[] = {&x->id,     &x->parent, &x->run,    &x->proposer,
                  &x->reason, &x->gate,   &x->memo,   &x->key,
                  &x->dir,    &x->kernel, &x->config, &x->continues};
    for (size_t k = 0; k < KL_ARRAY_SIZE(f); k++)
      kl__free(*f[k]);
    kl__strv_free(x->settings);
  }
  kl__free(ns->v);
}

static bool dup(char **dst, const char *s) {
  *dst = NULL;
  return !s || (*dst = kl__strdup(s));
}

static int take(const kl__solution *s, int line, void *payload) {
  (void)line;
  nodes *ns = payload;
  if (!s->id || (ns->run && (!s->run || strcmp(s->run, ns->run) != 0)))
    return 0;
  if (KL__GROW(ns->v, ns->cap, ns->n + 1) < 0) return KL_ENOMEM;
  node *x = &ns->v[ns->n++];
  memset(x, 0, sizeof(*x));
  x->iteration = s->iteration;
  x->outcome = s->outcome;
  x->timed = s->timed;
  x->vs_parent = s->vs_parent;
  x->has_vs_base = s->has_vs_baseline;
  x->vs_base = s->vs_baseline;
  x->diff = s->diff;
  x->added = x->removed = -1;
  if (!dup(&x->id, s->id) || !dup(&x->parent, s->parent) ||
      !dup(&x->run, s->run) || !dup(&x->proposer, s->proposer) ||
      !dup(&x->reason, s->reason) || !dup(&x->gate, s->gate) ||
      !dup(&x->memo, s->memo) || !dup(&x->key, s->key) ||
      !dup(&x->dir, s->dir) || !dup(&x->kernel, s->kernel) ||
      (s->config && s->config[0] &&
       !(x->config = kl__strv_join(s->config, " "))) ||
      !(x->settings = kl__strv_dup(
            (const char *const *)(s->config ? s->config : (char *[]){NULL}))))
    return kl__error_oom();
  return 0;
}

/* Lines added and removed by the iteration's kernel.diff. */
static int count_diff(node *x, const char *case_dir) {
  if (!x->diff || !x->run) return 0;
  char *run_dir = NULL;
  kl_buf t = KL_BUF_INIT;
  int rc = kl__run_dir(&run_dir, case_dir, x->run);
  if (rc < 0) return rc;
  if (kl__iteration_read(&t, run_dir, x->iteration, "kernel.diff") < 0) {
    kl_error_clear(); /* named but gone: shown without counts */
  } else {
    x->added = x->removed = 0;
    for (const char *p = t.ptr ? t.ptr : ""; *p;) {
      const char *e = strchr(p, '\n');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      bool header =
          len >= 3 && (strncmp(p, "+++", 3) == 0 || strncmp(p, "---", 3) == 0);
      if (!header && p[0] == '+') x->added++;
      if (!header && p[0] == '-') x->removed++;
      p += len + (e ? 1 : 0);
    }
  }
  kl_buf_dispose(&t);
  kl__free(run_dir);
  return 0;
}

/* A version's kernel as kl best writes it (settings as #defines in
 * front; a command case's file as it is); *out NULL when its file is gone. */
static int as_written(char **out, const node *x, const kl_case *c) {
  *out = NULL;
  char *run_dir = NULL;
  kl_buf src = KL_BUF_INIT, b = KL_BUF_INIT;
  int rc =
      x->run && x->kernel ? kl__run_dir(&run_dir, kl_case_dir(c), x->run) : 0;
  if (rc == 0 && run_dir &&
      kl__iteration_read(&src, run_dir, x->iteration, x->kernel) < 0)
    kl_error_clear(); /* its folder is gone: no link through it */
  else if (rc == 0 && run_dir &&
           (rc = kl__kernel_with_settings(
                &b, src.ptr ? src.ptr : "", x->settings,
                kl_case_backend(c) != KL_BACKEND_COMMAND)) == 0)
    *out = kl__buf_detach(&b);
  kl_buf_dispose(&src);
  kl_buf_dispose(&b);
  kl__free(run_dir);
  return rc;
}

/* A run's baseline continues an earlier run's accepted version when it is
 * that version: the same kernel and settings (its key), or the kernel kl
 * best wrote from it (settings in front) and the case then ran from. The
 * latest such version wins. */
static int link_runs(nodes *ns, const kl_case *c) {
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < ns->n; i++) {
    node *b = &ns->v[i];
    if (b->outcome != KL_OUTCOME_BASELINE || !b->key || !b->run) continue;
    char *text = NULL;
    kl_buf mine = KL_BUF_INIT;
    char *run_dir = NULL;
    if ((rc = kl__run_dir(&run_dir, kl_case_dir(c), b->run)) < 0) break;
    if (b->kernel &&
        kl__iteration_read(&mine, run_dir, b->iteration, b->kernel) < 0)
      kl_error_clear();
    kl__free(run_dir);
    for (size_t j = i; rc == 0 && j-- > 0;) {
      node *a = &ns->v[j];
      if (a->outcome != KL_OUTCOME_ACCEPTED || !a->run ||
          strcmp(a->run, b->run) == 0)
        continue;
      bool same = a->key && strcmp(a->key, b->key) == 0;
      if (!same && mine.ptr && (rc = as_written(&text, a, c)) == 0 && text)
        same = strcmp(text, mine.ptr) == 0;
      kl__free(text);
      text = NULL;
      if (rc == 0 && same) {
        if (!(b->continues = kl__strdup(a->id))) rc = kl__error_oom();
        break;
      }
    }
    kl_buf_dispose(&mine);
  }
  return rc;
}

static int gather(nodes *ns, const kl_case *c, const char *run) {
  ns->run = run;
  int rc = kl__solutions_read(kl_case_dir(c), take, ns);
  for (size_t i = 0; rc == 0 && i < ns->n; i++)
    rc = count_diff(&ns->v[i], kl_case_dir(c));
  if (rc == 0) rc = link_runs(ns, c);
  if (rc == 0 && run && ns->n == 0)
    rc = kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                   "case '%s' has no run '%s' in solutions.jsonl",
                   kl_case_name(c), run);
  return rc;
}

/* The node's parent in the tree: its recorded parent, or for a baseline
 * the version it continues. */
static const char *up(const node *x) {
  return x->parent ? x->parent : x->continues;
}

/* The index of node i's parent, which is always an earlier line; -1 for
 * a root (none, or one that does not come before it: hand-edited records
 * cannot make a cycle). */
static long above(const nodes *ns, size_t i) {
  const char *id = up(&ns->v[i]);
  for (size_t j = 0; id && j < i; j++)
    if (strcmp(ns->v[j].id, id) == 0) return (long)j;
  return -1;
}

/* ---- JSON -------------------------------------------------------------------
 */

static void json_str_or_null(kl_buf *b, const char *key, const char *s) {
  kl__buf_printf(b, ",\"%s\":", key);
  kl__buf_json_string(b, s);
}

/* The fields both views share. */
static void node_json(kl_buf *b, const node *x) {
  kl__buf_puts(b, "{\"id\":");
  kl__buf_json_string(b, x->id);
  json_str_or_null(b, "parent", x->parent);
  json_str_or_null(b, "run", x->run);
  kl__buf_printf(b, ",\"iteration\":%d", x->iteration);
  json_str_or_null(b, "proposer", x->proposer);
  kl__buf_printf(b, ",\"verdict\":\"%s\"", kl_outcome_name(x->outcome));
  json_str_or_null(b, "reason", x->reason);
  json_str_or_null(b, "gate", x->gate);
  json_str_or_null(b, "memo", x->memo);
  json_str_or_null(b, "config", x->config);
  if (x->timed)
    kl__buf_printf(b, ",\"speedup\":%.6g,\"speedup_ci\":[%.6g,%.6g]",
                   x->vs_parent.speedup, x->vs_parent.ci_low,
                   x->vs_parent.ci_high);
  else
    kl__buf_puts(b, ",\"speedup\":null,\"speedup_ci\":null");
  if (x->has_vs_base)
    kl__buf_printf(b, ",\"vs_baseline\":{\"speedup\":%.6g,\"ci\":[%.6g,%.6g]}",
                   x->vs_base.speedup, x->vs_base.ci_low, x->vs_base.ci_high);
  else
    kl__buf_puts(b, ",\"vs_baseline\":null");
  kl__buf_puts(b, ",\"kernel\":");
  if (x->dir && x->kernel)
    kl__buf_printf(b, "\"%s/%s\"", x->dir, x->kernel);
  else
    kl__buf_puts(b, "null");
  kl__buf_puts(b, ",\"diff\":");
  if (x->dir && x->diff)
    kl__buf_printf(b, "\"%s/kernel.diff\"", x->dir);
  else
    kl__buf_puts(b, "null");
}

static void lineage_json(kl_buf *b, const nodes *ns, const kl_case *c) {
  kl__buf_puts(b, "{\"case\":");
  kl__buf_json_string(b, kl_case_name(c));
  json_str_or_null(b, "run", ns->run);
  kl__buf_puts(b, ",\"roots\":[");
  int k = 0;
  for (size_t i = 0; i < ns->n; i++)
    if (above(ns, i) < 0) {
      kl__buf_puts(b, k++ ? "," : "");
      kl__buf_json_string(b, ns->v[i].id);
    }
  kl__buf_puts(b, "],\"versions\":[");
  for (size_t i = 0; i < ns->n; i++) {
    const node *x = &ns->v[i];
    kl__buf_puts(b, i ? "," : "");
    node_json(b, x);
    json_str_or_null(b, "continues", x->continues);
    if (x->added >= 0)
      kl__buf_printf(b, ",\"diff_lines\":{\"added\":%d,\"removed\":%d}",
                     x->added, x->removed);
    else
      kl__buf_puts(b, ",\"diff_lines\":null");
    kl__buf_puts(b, ",\"children\":[");
    k = 0;
    for (size_t j = i + 1; j < ns->n; j++) {
      if (above(ns, j) == (long)i) {
        kl__buf_puts(b, k++ ? "," : "");
        kl__buf_json_string(b, ns->v[j].id);
      }
    }
    kl__buf_puts(b, "]}");
  }
  kl__buf_puts(b, "]}\n");
}

/* ---- text -------------------------------------------------------------------
 */

/* One version on one line: id, verdict, speedups, diff size, memo; a
 * rejection's reason on the next. */
static void node_text(kl_buf *b, const node *x, const char *pre,
                      const char *cont) {
  kl__buf_printf(b, "%s%s %-10s", pre, x->id, kl_outcome_name(x->outcome));
  if (x->timed)
    kl__buf_printf(b, " x%.3f [%.3f, %.3f] vs parent", x->vs_parent.speedup,
                   x->vs_parent.ci_low, x->vs_parent.ci_high);
  if (x->has_vs_base && x->outcome != KL_OUTCOME_BASELINE)
    kl__buf_printf(b, ", x%.3f vs baseline", x->vs_base.speedup);
  if (x->added >= 0) kl__buf_printf(b, " (+%d -%d)", x->added, x->removed);
  if (x->continues) kl__buf_printf(b, " continues %s", x->continues);
  const char *what = x->outcome == KL_OUTCOME_BASELINE ? "the case's kernel"
                     : x->memo                         ? x->memo
                                                       : x->config;
  if (what) kl__buf_printf(b, "  %s", what);
  kl__buf_putc(b, '\n');
  if (x->reason && x->outcome != KL_OUTCOME_ACCEPTED &&
      x->outcome != KL_OUTCOME_BASELINE)
    kl__buf_printf(b, "%s    %s\n", cont, x->reason);
}

static int tree_text(kl_buf *b, const nodes *ns, size_t i, const char *pre,
                     const char *cont) {
  node_text(b, &ns->v[i], pre, cont);
  size_t last = i;
  for (size_t j = i + 1; j < ns->n; j++)
    if (above(ns, j) == (long)i) last = j;
  for (size_t j = i + 1; j <= last; j++) {
    if (above(ns, j) != (long)i) continue;
    kl_buf p = KL_BUF_INIT, q = KL_BUF_INIT;
    kl__buf_printf(&p, "%s%s", cont, j == last ? "`-- " : "|-- ");
    kl__buf_printf(&q, "%s%s", cont, j == last ? "    " : "|   ");
    int rc = kl__buf_status(&p);
    if (rc == 0) rc = kl__buf_status(&q);
    if (rc == 0) rc = tree_text(b, ns, j, p.ptr, q.ptr);
    kl_buf_dispose(&p);
    kl_buf_dispose(&q);
    if (rc < 0) return rc;
  }
  return 0;
}

int kl_history_lineage(kl_buf *out, const kl_case *c, const char *run,
                       const char *format) {
  bool json = format && strcmp(format, "json") == 0;
  if (!out || !c || (format && !json && strcmp(format, "text") != 0))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_history_lineage: format is \"text\" or \"json\"");
  nodes ns = {0};
  kl_buf b = KL_BUF_INIT;
  int rc = gather(&ns, c, run);
  if (rc < 0) goto done;
  if (json) {
    lineage_json(&b, &ns, c);
  } else {
    for (size_t i = 0; rc == 0 && i < ns.n; i++)
      if (above(&ns, i) < 0) {
        kl__buf_printf(&b, "%srun %s\n", b.size ? "\n" : "",
                       ns.v[i].run ? ns.v[i].run : "?");
        rc = tree_text(&b, &ns, i, "", "");
      }
    if (ns.n == 0) kl__buf_puts(&b, "(no versions yet)\n");
  }
  if (rc == 0 && (rc = kl__buf_status(&b)) == 0) kl__buf_give(out, &b);
done:
  nodes_dispose(&ns);
  kl_buf_dispose(&b);
  return rc;
}

/* ---- the two ledgers --------------------------------------------------------
 */

int kl_history_ledger(kl_buf *out, const kl_case *c, const char *view,
                      const char *run, const char *format) {
  bool json = format && strcmp(format, "json") == 0;
  bool all = view && strcmp(view, "attempts") == 0;
  if (!out || !c || (format && !json && strcmp(format, "text") != 0) ||
      (!all && (!view || strcmp(view, "improvements") != 0)))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_history_ledger: view is \"attempts\" or "
                     "\"improvements\", format \"text\" or \"json\"");
  nodes ns = {0};
  kl_buf b = KL_BUF_INIT;
  int rc = gather(&ns, c, run);
  if (rc < 0) goto done;
  if (json) {
    kl__buf_puts(&b, "{\"case\":");
    kl__buf_json_string(&b, kl_case_name(c));
    kl__buf_printf(&b, ",\"view\":\"%s\"", view);
    json_str_or_null(&b, "run", run);
    kl__buf_puts(&b, ",\"entries\":[");
  } else {
    kl__buf_printf(&b, "%-26s %-10s %-9s %-26s %-10s %s\n", "version",
                   "verdict", "proposer", "vs parent [95%]", "vs base",
                   all ? "memo / reason" : "memo");
  }
  int k = 0;
  for (size_t i = 0; i < ns.n; i++) {
    const node *x = &ns.v[i];
    if (!all && x->outcome != KL_OUTCOME_ACCEPTED &&
        x->outcome != KL_OUTCOME_BASELINE)
      continue;
    if (json) {
      kl__buf_puts(&b, k++ ? "," : "");
      node_json(&b, x);
      kl__buf_putc(&b, '}');
      continue;
    }
    char vp[64] = "-", vb[32] = "-";
    if (x->timed)
      snprintf(vp, sizeof(vp), "x%.3f [%.3f, %.3f]", x->vs_parent.speedup,
               x->vs_parent.ci_low, x->vs_parent.ci_high);
    if (x->has_vs_base) snprintf(vb, sizeof(vb), "x%.3f", x->vs_base.speedup);
    const char *what = x->outcome == KL_OUTCOME_BASELINE ? "the case's kernel"
                       : x->memo                         ? x->memo
                       : x->config                       ? x->config
                                                         : "";
    kl__buf_printf(&b, "%-26s %-10s %-9s %-26s %-10s %s\n", x->id,
                   kl_outcome_name(x->outcome), x->proposer ? x->proposer : "-",
                   vp, vb, what);
    if (all && x->reason && x->outcome != KL_OUTCOME_ACCEPTED)
      kl__buf_printf(&b, "%-26s %s\n", "", x->reason);
  }
  if (json)
    kl__buf_puts(&b, "]}\n");
  else if (ns.n == 0)
    kl__buf_puts(&b, "(no versions yet)\n");
  if ((rc = kl__buf_status(&b)) == 0) kl__buf_give(out, &b);
done:
  nodes_dispose(&ns);
  kl_buf_dispose(&b);
  return rc;
}

int kl_history_devlog(kl_buf *out, const kl_case *c, size_t max_chars) {
  if (!out || !c)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_history_devlog: a buffer and a case");
  kl_buf b = KL_BUF_INIT;
  int rc = max_chars ? kl__devlog_tail(&b, kl_case_dir(c), max_chars)
                     : kl__devlog_read(&b, kl_case_dir(c));
  if (rc == 0) kl__buf_give(out, &b);
  kl_buf_dispose(&b);
  return rc;
}
