/* kl knowledge add --from RUN/ITER: an entry made from one recorded
 * iteration of a case, with its evidence.
 *
 * Everything comes from the case's records, read through the records
 * module: the iteration's solutions.jsonl line (verdict, reason, memo,
 * parent, speedups, the measurement with its shapes, the environment's
 * card), the rules that fired on its parent (what the change was aimed
 * at: the parent's rules.json) and its kernel.diff. An accepted version
 * becomes an optimization, any other candidate an anti-pattern; the
 * baseline changed nothing and is refused. The file is new or nothing:
 * an entry with the same id is never overwritten. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "../core/json.h"
#include "../records/records.h"
#include "knowledge_internal.h"

#define DIFF_LINES 60

static const size_t add_sizes[] = {0, sizeof(kl_knowledge_add_options)};

int kl_knowledge_add_options_init(kl_knowledge_add_options *opts,
                                  unsigned version) {
  const kl_knowledge_add_options d = KL_KNOWLEDGE_ADD_OPTIONS_INIT;
  return kl__options_init(opts, &d, version, add_sizes,
                          KL_ARRAY_SIZE(add_sizes), "kl_knowledge_add_options");
}

/* What the iteration's line says, copied out of the reader's callback. */
typedef struct found {
  const char *run;
  int iteration;
  bool hit;
  kl_outcome outcome;
  char *id, *parent, *memo, *reason, *dir, *config, *measurement, *env;
  bool timed, diff;
  kl_speedup vs_parent, vs_base;
  bool has_vs_base;
} found;

static void found_dispose(found *f) {
  char **s[] = {&f->id,  &f->parent, &f->memo,        &f->reason,
                &f->dir, &f->config, &f->measurement, &f->env};
  for (size_t i = 0; i < KL_ARRAY_SIZE(s); i++)
    kl__free(*s[i]);
}

static bool dup(char **dst, const char *s) {
  kl__free(*dst);
  *dst = NULL;
  return !s || (*dst = kl__strdup(s));
}

static int take(const kl__solution *s, int line, void *payload) {
  (void)line;
  found *f = payload;
  if (!s->run || strcmp(s->run, f->run) != 0 || s->iteration != f->iteration)
    return 0;
  f->hit = true; /* the last line of it wins (a resumed iteration) */
  f->outcome = s->outcome;
  f->timed = s->timed;
  f->diff = s->diff;
  f->vs_parent = s->vs_parent;
  f->has_vs_base = s->has_vs_baseline;
  f->vs_base = s->vs_baseline;
  char *cfg = s->config && s->config[0] ? kl__strv_join(s->config, " ") : NULL;
  bool ok = (!(s->config && s->config[0]) || cfg) && dup(&f->id, s->id) &&
            dup(&f->parent, s->parent) && dup(&f->memo, s->memo) &&
            dup(&f->reason, s->reason) && dup(&f->dir, s->dir) &&
            dup(&f->config, cfg) && dup(&f->measurement, s->measurement) &&
            dup(&f->env, s->environment);
  kl__free(cfg);
  return ok ? 0 : kl__error_oom();
}

/* "RUN/ITER" (ITER a number, "001" or "1") into its parts. */
static int parse_from(char **run, int *iteration, const char *from) {
  const char *slash = from ? strrchr(from, '/') : NULL;
  char *end = NULL;
  long n = slash ? strtol(slash + 1, &end, 10) : -1;
  if (!slash || slash == from || !slash[1] || *end || n < 0 || n > 99999)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "--from wants RUN/ITER (e.g. 20261128-145927-5ab4/3), "
                     "not '%s'",
                     from ? from : "");
  *iteration = (int)n;
  *run = kl__strndup(from, (size_t)(slash - from));
  return *run ? 0 : kl__error_oom();
}

/* The shapes of the measurement, and per shape its speedup. */
static void shapes_of(kn_entry *e, kl_buf *per_shape, const char *measurement) {
  json_object *m = measurement ? json_tokener_parse(measurement) : NULL;
  json_object *shapes = kl__json_get(m, "shapes");
  size_t n = json_object_is_type(shapes, json_type_array)
                 ? json_object_array_length(shapes)
                 : 0;
  kl_buf names = KL_BUF_INIT;
  for (size_t i = 0; i < n; i++) {
    json_object *s = json_object_array_get_idx(shapes, i);
    const char *name = kl__json_text(s, "name");
    double sp, lo = 0, hi = 0;
    if (!name) continue;
    kl__buf_printf(&names, "%s%s", names.size ? ", " : "", name);
    if (kl__json_number(s, "speedup", &sp)) {
      kl__json_pair(s, "ci", &lo, &hi);
      kl__buf_printf(per_shape, "%s%s x%.3f [%.3f, %.3f]",
                     per_shape->size ? ", " : "Per shape: ", name, sp, lo, hi);
    }
  }
  if (per_shape->size) kl__buf_puts(per_shape, ".\n");
  e->ev_shapes = kl__buf_detach(&names); /* NULL: none (or out of memory) */
  json_object_put(m);
}

/* The card: the GPU's name, or the host's for a host case. */
static char *card_of(const char *env) {
  json_object *o = env ? json_tokener_parse(env) : NULL;
  const char *gpu = kl__json_text(o, "gpu"), *host = kl__json_text(o, "host");
  kl_buf b = KL_BUF_INIT;
  if (gpu)
    kl__buf_puts(&b, gpu);
  else if (host)
    kl__buf_printf(&b, "host CPU (%s)", host);
  json_object_put(o);
  return kl__buf_detach(&b);
}

/* An id from the case, run and iteration: letters, digits, '.', '_', '-'. */
static char *make_id(const char *case_name, const char *run, int iteration) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_printf(&b, "%s-%s-%03d", case_name, run, iteration);
  for (size_t i = 0; b.ptr && i < b.size; i++)
    if (!isalnum((unsigned char)b.ptr[i]) && !strchr("._-", b.ptr[i]))
      b.ptr[i] = '-';
  return kl__buf_detach(&b);
}

/* The folder the entry goes to (see kl_knowledge_add_options.dir). */
static char *target_dir(const kl_case *c, const char *given) {
  if (given) return kl__strdup(given);
  const char *env = getenv("KERNLAB_KNOWLEDGE");
  if (env && *env) return kl__strndup(env, strcspn(env, ":"));
  char **dirs = NULL;
  if (kl__kn_search_path(&dirs, c) < 0) return NULL;
  /* the project's folder when there is one: it comes before the share */
  char *share =
      kl__path_join(kl_share_dir() ? kl_share_dir() : "", "knowledge");
  char *out = NULL;
  if (share && dirs[0] && strcmp(dirs[0], share) != 0)
    out = kl__strdup(dirs[0]);
  else if (share) {
    char *parent = kl__path_dir(kl_case_dir(c));
    out = parent ? kl__path_join(parent, "knowledge") : NULL;
    kl__free(parent);
  }
  kl__free(share);
  kl__strv_free(dirs);
  return out;
}

/* The body: what was tried and how it ended (the first paragraph, which
 * the prompt shows), the numbers, where the evidence is, the diff. */
static void body(kl_buf *b, const found *f, const kl_case *c,
                 const char *per_shape, const char *diff) {
  kl__buf_printf(b, "%s\nVerdict %s: %s\n\n", f->memo ? f->memo : "(no memo)",
                 kl_outcome_name(f->outcome), f->reason ? f->reason : "-");
  if (f->timed)
    kl__buf_printf(b, "Against its parent (%s): x%.3f [%.3f, %.3f].\n",
                   f->parent ? f->parent : "-", f->vs_parent.speedup,
                   f->vs_parent.ci_low, f->vs_parent.ci_high);
  if (f->has_vs_base)
    kl__buf_printf(b, "Against the baseline: x%.3f [%.3f, %.3f].\n",
                   f->vs_base.speedup, f->vs_base.ci_low, f->vs_base.ci_high);
  kl__buf_puts(b, per_shape);
  if (f->config) kl__buf_printf(b, "Settings: %s.\n", f->config);
  kl__buf_printf(b, "Records: %s/%s (kernel, verdict.json, report.json).\n",
                 kl_case_dir(c), f->dir ? f->dir : "-");
  if (!diff) return;
  kl__buf_puts(b, "\nThe change against its parent:\n\n```diff\n");
  const char *p = diff;
  int lines = 0;
  for (; *p && lines < DIFF_LINES; lines++) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) + 1 : strlen(p);
    kl__buf_put(b, p, len);
    p += len;
  }
  if (b->size && b->ptr[b->size - 1] != '\n') kl__buf_putc(b, '\n');
  if (*p) kl__buf_puts(b, "[... the rest is in kernel.diff]\n");
  kl__buf_puts(b, "```\n");
}

int kl_knowledge_add(kl_buf *path, const kl_case *c,
                     const kl_knowledge_add_options *given) {
  kl_knowledge_add_options o;
  const kl_knowledge_add_options d = KL_KNOWLEDGE_ADD_OPTIONS_INIT;
  o = d;
  int rc = kl__options_take(&o, given, add_sizes, KL_ARRAY_SIZE(add_sizes),
                            "kl_knowledge_add_options");
  if (rc < 0) return rc;
  if (!path || !c)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_knowledge_add: a path buffer and a case");
  found f;
  memset(&f, 0, sizeof(f));
  kn_entry e;
  memset(&e, 0, sizeof(e));
  char *run = NULL, *run_dir = NULL, *dir = NULL;
  char **fired = NULL;
  kl_buf diff = KL_BUF_INIT, shapes = KL_BUF_INIT, text = KL_BUF_INIT,
         where = KL_BUF_INIT;
  if ((rc = parse_from(&run, &f.iteration, o.from)) < 0) goto done;
  f.run = run;
  if ((rc = kl__solutions_read(kl_case_dir(c), take, &f)) < 0) goto done;
  if (!f.hit) {
    rc = kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                   "case '%s' has no iteration %d of run '%s' in "
                   "solutions.jsonl",
                   kl_case_name(c), f.iteration, run);
    goto done;
  }
  if (f.outcome == KL_OUTCOME_BASELINE) {
    rc =
        kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                  "%s is the baseline: it changed nothing to learn from", f.id);
    goto done;
  }
  if ((rc = kl__run_dir(&run_dir, kl_case_dir(c), run)) < 0) goto done;
  const char *pslash = f.parent ? strrchr(f.parent, '/') : NULL;
  if (pslash && (rc = kl__iteration_fired(
                     &fired, run_dir, (int)strtol(pslash + 1, NULL, 10))) < 0)
    goto done;
  if (f.diff &&
      kl__iteration_read(&diff, run_dir, f.iteration, "kernel.diff") < 0)
    kl_error_clear(); /* named but gone: the entry says less */
  e.kind = kl__strdup(f.outcome == KL_OUTCOME_ACCEPTED ? "optimization"
                                                       : "anti-pattern");
  e.id = o.id ? kl__strdup(o.id) : make_id(kl_case_name(c), run, f.iteration);
  e.title = kl__strdup(o.title  ? o.title
                       : f.memo ? f.memo
                                : kl_outcome_name(f.outcome));
  e.rules = fired ? fired : kl__calloc(1, sizeof(char *));
  fired = NULL;
  e.operator_name =
      kl__strdup(o.operator_name ? o.operator_name : kl_case_name(c));
  e.language = kl__strdup(o.language ? o.language : kl__kn_case_language(c));
  e.card = card_of(f.env);
  e.ev_case = kl__strdup(kl_case_name(c));
  e.ev_run = kl__strdup(run);
  e.has_iter = true;
  e.ev_iter = f.iteration;
  if ((e.has_speedup = f.timed)) e.ev_speedup = f.vs_parent.speedup;
  shapes_of(&e, &shapes, f.measurement);
  body(&text, &f, c, shapes.ptr ? shapes.ptr : "", diff.ptr);
  e.body = kl__buf_detach(&text);
  if (!e.kind || !e.id || !e.title || !e.rules || !e.operator_name ||
      !e.language || !e.ev_case || !e.ev_run || !e.body ||
      (rc = kl__buf_status(&shapes)) < 0) {
    rc = kl__error_oom();
    goto done;
  }
  /* a given id must read back: the same check as a file's */
  for (const char *s = e.id; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("._-", *s)) {
      rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "id '%s' may hold only letters, digits, '.', '_', '-'",
                     e.id);
      goto done;
    }
  if (!(dir = target_dir(c, o.dir))) {
    rc = kl__error_oom();
    goto done;
  }
  kl__buf_printf(&where, "%s/%s", dir, kl__kn_kind_dir(e.kind));
  if ((rc = kl__buf_status(&where)) < 0 || (rc = kl__mkdir_p(where.ptr)) < 0)
    goto done;
  kl__buf_printf(&where, "/%s.md", e.id);
  if ((rc = kl__buf_status(&where)) < 0 ||
      (rc = kl__kn_entry_format(&text, &e)) < 0 ||
      (rc = kl__write_new_file(where.ptr, text.ptr, text.size)) < 0)
    goto done;
  kl__buf_give(path, &where);
done:
  kl__kn_entry_dispose(&e);
  found_dispose(&f);
  kl__strv_free(fired);
  kl__free(run);
  kl__free(run_dir);
  kl__free(dir);
  kl_buf_dispose(&diff);
  kl_buf_dispose(&shapes);
  kl_buf_dispose(&text);
  kl_buf_dispose(&where);
  return rc;
}
