/* kl best --dispatch: the best recorded kernel for each shape, as one
 * kernel section whose launcher picks a variant by the shape's values.
 *
 * Every timed candidate of every run has, per shape, a speedup against the
 * kernel it was compared with (its parent: the best when it ran) in
 * benchmark.csv. Chained through the parents down to a baseline, that is a
 * per-shape estimate against the baseline (the intervals' ends multiplied:
 * wide, and only used to choose). A shape takes the candidate with the
 * largest estimate whose chained interval lies above 1 and that gains at
 * least the case's min_gain_pct; otherwise the baseline. What the
 * dispatcher is worth is then measured as one candidate, directly against
 * the baseline (kl compare), never read off these products.
 *
 * The variants live in one translation unit: each one's #include lines are
 * hoisted to the top, its own top-level names (functions, types, tags,
 * variables) are renamed with a prefix by #defines around its text, and its
 * macros and tunables are #undef'd after it. The launcher then calls each
 * variant's own launcher, or launches its entry with the case's geometry
 * for that shape. A call with values no shape has goes to a variant that
 * owns its launch (the geometry of an entry-only one is a property of the
 * case's shapes; a host variant needs none); when no chosen variant does,
 * it stops the program with a message rather than launch at a wrong
 * geometry. Shapes with the same values (they differ only in what the
 * launcher cannot see, like the program's block size) share one branch
 * and one variant: the best of their choices over all of them. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../case/case_view.h"
#include "../prompt/prompt_internal.h"
#include "../records/records.h"
#include "kernlab/plugin.h"
#include "run_internal.h"

#define MAX_SHAPES 256

typedef struct cand {
  char *id, *parent, *run, *dir, *kernel, *memo, *proposer;
  char **config;
  int iteration;
  bool usable; /* BASELINE, ACCEPTED or REJECTED: checked and timed */
  bool baseline;
  /* per shape: the speedup against the parent, from benchmark.csv */
  bool have[MAX_SHAPES];
  kl_speedup vs_parent[MAX_SHAPES];
  /* per shape, chained to a baseline: 0 not yet, 1 done, -1 none */
  int state[MAX_SHAPES];
  double est[MAX_SHAPES], lo[MAX_SHAPES], hi[MAX_SHAPES];
  double median[MAX_SHAPES]; /* its median time there, 0 unknown */
} cand;

typedef struct pool {
  const kl_case *c;
  cand *v;
  size_t n, cap;
} pool;

static void cand_free(cand *x) {
  kl__free(x->id);
  kl__free(x->parent);
  kl__free(x->run);
  kl__free(x->dir);
  kl__free(x->kernel);
  kl__free(x->memo);
  kl__free(x->proposer);
  kl__strv_free(x->config);
}

static char *dup_or_null(const char *s) {
  return s ? kl__strdup(s) : NULL;
}

static int take_solution(const kl__solution *s, int line, void *payload) {
  (void)line;
  pool *p = payload;
  if (KL__GROW(p->v, p->cap, p->n + 1) < 0) return KL_ENOMEM;
  cand *x = &p->v[p->n];
  memset(x, 0, sizeof(*x));
  x->id = dup_or_null(s->id);
  x->parent = dup_or_null(s->parent);
  x->run = dup_or_null(s->run);
  x->dir = dup_or_null(s->dir);
  x->kernel = dup_or_null(s->kernel);
  x->memo = dup_or_null(s->memo);
  x->proposer = dup_or_null(s->proposer);
  x->config = kl__strv_dup((const char *const *)s->config);
  x->iteration = s->iteration;
  x->baseline = s->outcome == KL_OUTCOME_BASELINE;
  x->usable = x->baseline || s->outcome == KL_OUTCOME_ACCEPTED ||
              s->outcome == KL_OUTCOME_REJECTED;
  p->n++;
  if (!x->id || !x->run || !x->dir || !x->kernel || (s->config && !x->config) ||
      (s->parent && !x->parent) || (s->memo && !x->memo) ||
      (s->proposer && !x->proposer))
    return kl__error_oom();
  return 0;
}

static cand *find(pool *p, const char *id) {
  for (size_t i = 0; id && i < p->n; i++)
    if (strcmp(p->v[i].id, id) == 0) return &p->v[i];
  return NULL;
}

static int take_row(const kl__benchmark_row *r, void *payload) {
  pool *p = payload;
  cand *x = find(p, r->id);
  int s = kl_case_shape_find(p->c, r->shape);
  if (!x || s < 0 || s >= MAX_SHAPES) return 0;
  x->median[s] = r->median_us;
  if (!r->compared) return 0;
  x->have[s] = true;
  x->vs_parent[s] = r->speedup;
  return 0;
}

/* The chained estimate of x at shape s against the baseline. */
static bool chain(pool *p, cand *x, int s, int depth) {
  if (x->state[s]) return x->state[s] > 0;
  x->state[s] = -1;
  if (depth > 10000 || !x->usable) return false;
  if (x->baseline) {
    x->est[s] = x->lo[s] = x->hi[s] = 1;
  } else {
    cand *parent = find(p, x->parent);
    if (!x->have[s] || !parent || !chain(p, parent, s, depth + 1)) return false;
    x->est[s] = parent->est[s] * x->vs_parent[s].speedup;
    x->lo[s] = parent->lo[s] * x->vs_parent[s].ci_low;
    x->hi[s] = parent->hi[s] * x->vs_parent[s].ci_high;
  }
  x->state[s] = 1;
  return true;
}

/* ---- writing the dispatcher -------------------------------------------- */

typedef struct variant {
  cand *x;    /* NULL: none */
  char *text; /* its kernel as recorded */
  bool launcher;
  int number;
} variant;

/* The variant's text with its #include lines moved to `includes` (once
 * each) and left as empty lines. */
static int hoist_includes(kl_buf *includes, kl_buf *body, const char *text) {
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    const char *s = p;
    while (s < p + n && (*s == ' ' || *s == '\t'))
      s++;
    bool inc = false;
    if (s < p + n && *s == '#') {
      const char *d = s + 1;
      while (*d == ' ' || *d == '\t')
        d++;
      inc = strncmp(d, "include", 7) == 0 || strncmp(d, "pragma once", 11) == 0;
    }
    if (inc && strncmp(s + 1, "pragma", 6) != 0) {
      kl_buf line = KL_BUF_INIT;
      kl__buf_put(&line, p, n);
      kl__buf_putc(&line, '\n');
      int rc = kl__buf_status(&line);
      if (rc == 0 && (!includes->ptr || !strstr(includes->ptr, line.ptr)))
        kl__buf_puts(includes, line.ptr);
      kl_buf_dispose(&line);
      if (rc < 0) return rc;
    }
    if (!inc) kl__buf_put(body, p, n);
    kl__buf_putc(body, '\n');
    p = nl ? nl + 1 : p + n;
  }
  return kl__buf_status(body) < 0 ? KL_ENOMEM : kl__buf_status(includes);
}

/* The structs the kernel takes by value are one type for every variant
 * (the dispatcher passes its argument on): the first variant that defines
 * one keeps its definition, under its own name; a later one's definition
 * is blanked from its text, and must read the same. `defs[a]` is argument
 * a's definition as first seen (spaces squeezed), or NULL. */
static char *squeezed(const char *s, size_t n) {
  char *out = kl__malloc(n + 1);
  size_t k = 0;
  for (size_t i = 0; out && i < n; i++)
    if (!isspace((unsigned char)s[i]))
      out[k++] = s[i];
    else if (k && out[k - 1] != ' ')
      out[k++] = ' ';
  if (out) out[k] = '\0';
  return out;
}

static int shared_structs(kl__c_names *ns, kl_buf *body, const char *clean,
                          const kl_case *c, const variant *v, char **defs) {
  const case_arg *args = kl__case_args(c);
  for (size_t a = 0; a < kl__case_arg_count(c); a++) {
    if (!args[a].struct_type) continue;
    char *name = kl__c_type_name(args[a].struct_type);
    if (!name) return kl__error_oom();
    size_t start, end;
    bool has = kl__c_struct_statement(clean, name, &start, &end);
    for (size_t i = 0; has && i < ns->n; i++) /* not renamed */
      if (strcmp(ns->v[i], name) == 0) {
        kl__free(ns->v[i]);
        ns->v[i] = ns->v[--ns->n];
      }
    int rc = 0;
    if (has) {
      char *def = squeezed(clean + start, end - start);
      if (!def)
        rc = kl__error_oom();
      else if (!defs[a])
        defs[a] = def, def = NULL;
      else if (strcmp(defs[a], def) != 0)
        rc = kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                       "%s: variant %d (%s) defines struct %s differently "
                       "from an earlier variant; the dispatcher passes one "
                       "struct to every variant",
                       kl_case_name(c), v->number, v->x->id, name);
      else /* blank it, lines kept */
        for (size_t i = start; i < end; i++)
          if (body->ptr[i] != '\n') body->ptr[i] = ' ';
      kl__free(def);
    }
    kl__free(name);
    if (rc < 0) return rc;
  }
  return 0;
}

static int emit_variant(kl_buf *out, kl_buf *includes, const kl_case *c,
                        variant *v, char **defs) {
  kl_buf body = KL_BUF_INIT;
  kl__c_names ns = {0}, macros = {0};
  int rc = hoist_includes(includes, &body, v->text);
  char *clean =
      rc == 0 ? kl__c_blank(body.ptr ? body.ptr : "", body.size, false) : NULL;
  if (rc == 0 && !clean) rc = kl__error_oom();
  if (rc == 0) rc = kl__c_top_level_names(&ns, &macros, clean);
  if (rc == 0) rc = shared_structs(&ns, &body, clean, c, v, defs);
  if (rc < 0) goto done;
  kl__buf_printf(out, "\n/* ==== variant %d: %s (%s%s%s) ==== */\n", v->number,
                 v->x->id, v->x->proposer ? v->x->proposer : "?",
                 v->x->memo ? ": " : "", v->x->memo ? v->x->memo : "");
  for (size_t i = 0; v->x->config && v->x->config[i]; i++) {
    const char *eq = strchr(v->x->config[i], '=');
    if (!eq) continue;
    kl__buf_printf(out, "#undef %.*s\n#define %.*s %s\n",
                   (int)(eq - v->x->config[i]), v->x->config[i],
                   (int)(eq - v->x->config[i]), v->x->config[i], eq + 1);
  }
  for (size_t i = 0; i < ns.n; i++)
    kl__buf_printf(out, "#define %s kl_v%d_%s\n", ns.v[i], v->number, ns.v[i]);
  kl__buf_printf(out, "#line 1 \"variant%d\"\n", v->number);
  kl__buf_puts(out, body.ptr ? body.ptr : "");
  kl__buf_puts(out, "#line 1 \"kernlab-dispatch\"\n");
  for (size_t i = 0; i < ns.n; i++)
    kl__buf_printf(out, "#undef %s\n", ns.v[i]);
  for (size_t i = 0; i < macros.n; i++)
    kl__buf_printf(out, "#undef %s\n", macros.v[i]);
  for (size_t i = 0; i < kl_case_tunable_count(c); i++) /* the section's */
    kl__buf_printf(out, "#undef %s\n#define %s %s\n",
                   kl_case_tunable_name(c, i), kl_case_tunable_name(c, i),
                   kl_case_tunable_current(c, i));
  rc = kl__buf_status(out);
done:
  kl__free(clean);
  kl_buf_dispose(&body);
  kl__c_names_dispose(&ns);
  kl__c_names_dispose(&macros);
  return rc;
}

/* The call of variant v at shape s (its launcher, or its entry at the
 * shape's geometry). */
static int emit_call(kl_buf *out, const kl_case *c, const variant *v, int s) {
  size_t nargs = kl__case_arg_count(c);
  bool cuda = kl_case_backend(c) == KL_BACKEND_CUDA;
  if (v->launcher)
    kl__buf_printf(out, "kl_v%d_%s(", v->number, KL_LAUNCHER_NAME);
  else if (cuda) {
    /* the variant's outermost name was renamed: its namespace, or the
     * kernel itself */
    const kl_launch *l = &kl__case_shapes(c)[s].launch;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "kl_v%d_", v->number);
    kl__c_entry_renamed(out, kl_case_shape_entry(c, (size_t)s), prefix, true);
    kl__buf_printf(out,
                   "<<<dim3(%lldu, %lldu, %lldu), dim3(%lldu, %lldu, "
                   "%lldu), %lld, (cudaStream_t)ctx->stream>>>(",
                   (long long)l->grid[0], (long long)l->grid[1],
                   (long long)l->grid[2], (long long)l->block[0],
                   (long long)l->block[1], (long long)l->block[2],
                   (long long)l->shared_bytes);
  } else {
    kl__buf_printf(out, "kl_v%d_%s(", v->number, kl_case_entry(c));
  }
  for (size_t i = 0; i < nargs; i++) /* a struct is passed whole */
    kl__buf_printf(out, "%s%s", i ? ", " : "", kl__case_args(c)[i].name);
  if (v->launcher) kl__buf_printf(out, "%sctx", nargs ? ", " : "");
  return kl__buf_puts(out, ");\n");
}

/* `name == value && ...` over the shape's integer and 32/64-bit float
 * scalars; "1" when it has none. */
static int emit_condition(kl_buf *out, const kl_case *c, int s) {
  size_t before = out->size;
  for (size_t i = 0; i < kl_case_param_count(c); i++) {
    const case_param *p = &kl__case_params(c)[i];
    if (p->is_pointer || p->dtype == KL_DTYPE_F16 || p->dtype == KL_DTYPE_BF16)
      continue;
    const kl_value *v = &kl__case_shapes(c)[s].scalars[i];
    kl__buf_puts(out, out->size > before ? " && " : "");
    char num[48];
    if (p->dtype == KL_DTYPE_F32 || p->dtype == KL_DTYPE_F64) {
      snprintf(num, sizeof num, p->dtype == KL_DTYPE_F32 ? "%.9g" : "%.17g",
               p->dtype == KL_DTYPE_F32 ? (double)(float)v->f : v->f);
      size_t len = strlen(num);
      if (!strpbrk(num, ".en")) /* "-1" is an integer; "-1f" no number */
        snprintf(num + len, sizeof num - len, ".0");
    }
    if (p->dtype == KL_DTYPE_F32)
      kl__buf_printf(out, "%s == %sf", p->name, num);
    else if (p->dtype == KL_DTYPE_F64)
      kl__buf_printf(out, "%s == %s", p->name, num);
    else
      kl__buf_printf(out, "%s == %lldLL", p->name,
                     (long long)(v->is_int ? v->i : (int64_t)v->f));
  }
  if (out->size == before) kl__buf_puts(out, "1");
  return kl__buf_status(out);
}

static int read_variant(variant *v, const kl_case *c) {
  kl_buf path = KL_BUF_INIT, text = KL_BUF_INIT;
  kl__buf_printf(&path, "%s/%s/%s", kl_case_dir(c), v->x->dir, v->x->kernel);
  int rc = kl__buf_status(&path);
  if (rc == 0) rc = kl__read_file(&text, path.ptr);
  kl_buf_dispose(&path);
  if (rc < 0) {
    kl_buf_dispose(&text);
    return rc;
  }
  v->text = text.ptr ? kl__buf_detach(&text) : kl__strdup("");
  if (!v->text) return kl__error_oom();
  return kl__c_defines(&v->launcher, v->text, KL_LAUNCHER_NAME);
}

/* Shapes whose values are the same (they differ only in what the
 * launcher cannot see, such as the program's block size) are one problem
 * at several geometries, and reach one branch. The group takes, among its
 * shapes' choices and the baseline, the variant and the shape whose
 * geometry give the least estimated time (the baseline's median there
 * over the variant's chained estimate), so an entry-only variant launches
 * at the geometry that was measured fastest. group[s]: the group's first
 * shape; geo[s]: the shape whose geometry its branch launches. */
static int share_indistinct(pool *p, cand *base, cand **bests, int *group,
                            int *geo) {
  const kl_case *c = p->c;
  size_t nshapes = kl_case_shape_count(c);
  char **cond = kl__calloc(nshapes, sizeof *cond);
  int rc = cond ? 0 : kl__error_oom();
  for (size_t s = 0; rc == 0 && s < nshapes; s++) {
    kl_buf b = KL_BUF_INIT;
    emit_condition(&b, c, (int)s);
    if ((rc = kl__buf_status(&b)) == 0) cond[s] = kl__buf_detach(&b);
    group[s] = geo[s] = (int)s;
    for (size_t e = 0; rc == 0 && e < s && group[s] == (int)s; e++)
      if (strcmp(cond[e], cond[s]) == 0) group[s] = group[e];
  }
  for (size_t g = 0; rc == 0 && g < nshapes; g++) {
    if (group[g] != (int)g) continue;
    cand *pick = NULL;
    int at = (int)g;
    double least = INFINITY;
    for (size_t u = g; u <= nshapes; u++) {
      cand *x = u < nshapes ? bests[u] : base;
      if (u < nshapes && group[u] != (int)g) continue;
      for (size_t t = g; t < nshapes; t++) {
        if (group[t] != (int)g || !(base->median[t] > 0) ||
            !chain(p, x, (int)t, 0) || !(x->est[t] > 0))
          continue;
        double time = base->median[t] / x->est[t];
        if (time < least) {
          least = time;
          pick = x;
          at = (int)t;
        }
      }
    }
    for (size_t t = g; pick && t < nshapes; t++)
      if (group[t] == (int)g) {
        bests[t] = pick;
        geo[t] = at;
      }
  }
  kl__names_free(cond, nshapes);
  return rc;
}

int kl_best_dispatch(kl_buf *source, kl_buf *evidence, const kl_case *c) {
  size_t nshapes = kl_case_shape_count(c);
  size_t nargs = kl__case_arg_count(c);
  if (kl_case_backend(c) == KL_BACKEND_COMMAND ||
      kl_case_backend(c) == KL_BACKEND_PYTHON)
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_CASE,
                     "%s: a dispatcher is C or CUDA code choosing a kernel "
                     "per shape; a %s case has no such kernels",
                     kl_case_name(c), kl_backend_name(kl_case_backend(c)));
  pool p = {c, NULL, 0, 0};
  variant vars[MAX_SHAPES + 1];
  int chosen[MAX_SHAPES], group[MAX_SHAPES], geo[MAX_SHAPES];
  size_t nv = 0;
  char *sig = NULL;
  kl_buf out = KL_BUF_INIT, includes = KL_BUF_INIT, body = KL_BUF_INIT,
         ev = KL_BUF_INIT;
  memset(vars, 0, sizeof(vars));
  int rc = 0;
  if (nshapes > MAX_SHAPES) {
    rc = kl__error(KL_EUNSUPPORTED, KL_DOMAIN_CASE,
                   "%s: a dispatcher covers at most %d shapes", kl_case_name(c),
                   MAX_SHAPES);
    goto done;
  }
  if ((rc = kl__solutions_read(kl_case_dir(c), take_solution, &p)) < 0 ||
      (rc = kl__benchmark_read(kl_case_dir(c), take_row, &p)) < 0)
    goto done;
  cand *base = NULL;
  for (size_t i = 0; i < p.n && !base; i++)
    if (p.v[i].baseline) base = &p.v[i];
  if (!base) {
    rc = kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                   "case '%s' has no run yet (run kl run)", kl_case_name(c));
    goto done;
  }
  /* per shape: the largest chained estimate that clears the bar */
  double gain = 1 + kl__case_budget(c)->min_gain_pct / 100.0;
  cand *bests[MAX_SHAPES];
  for (size_t s = 0; s < nshapes; s++) {
    cand *best = base;
    for (size_t i = 0; i < p.n; i++) {
      cand *x = &p.v[i];
      if (x->baseline || !chain(&p, x, (int)s, 0)) continue;
      if (x->lo[s] > 1 && x->est[s] >= gain &&
          (best == base || x->est[s] > best->est[s]))
        best = x;
    }
    chain(&p, base, (int)s, 0);
    bests[s] = best;
  }
  if ((rc = share_indistinct(&p, base, bests, group, geo)) < 0) goto done;
  for (size_t s = 0; s < nshapes; s++) {
    cand *best = bests[s];
    size_t k = 0;
    while (k < nv && vars[k].x != best)
      k++;
    if (k == nv) {
      vars[nv].x = best;
      vars[nv].number = (int)nv + 1;
      if ((rc = read_variant(&vars[nv], c)) < 0) goto done;
      nv++;
    }
    chosen[s] = (int)k;
  }
  /* the fallback: a variant that owns its launch, the heaviest shape's
   * first */
  int fallback = -1;
  double heaviest = -1;
  bool cuda = kl_case_backend(c) == KL_BACKEND_CUDA;
  for (size_t s = 0; s < nshapes; s++) /* a host call has no geometry */
    if ((vars[chosen[s]].launcher || !cuda) &&
        kl_case_shape_weight(c, s) > heaviest) {
      heaviest = kl_case_shape_weight(c, s);
      fallback = chosen[s];
    }
  if ((rc = kl__launcher_params(&sig, c)) < 0) goto done;
  /* evidence */
  kl__buf_printf(&ev, "{\"v\":1,\"case\":");
  kl__buf_json_string(&ev, kl_case_name(c));
  kl__buf_puts(&ev, ",\"branches\":[");
  kl__buf_printf(&out,
                 "/* kernlab dispatcher of case '%s' (kl best --dispatch).\n"
                 " * Per shape, the variant with the largest speedup over the "
                 "baseline\n * recorded for it (chained through the runs' "
                 "comparisons; measure the\n * dispatcher itself with kl "
                 "compare, directly against the baseline):\n",
                 kl_case_name(c));
  for (size_t s = 0; s < nshapes; s++) {
    variant *v = &vars[chosen[s]];
    cand *x = v->x;
    /* at another shape's geometry: its estimate, in this shape's time */
    int g = geo[s];
    double scale = g == (int)s ? 1 : base->median[s] / base->median[g];
    double est = scale * x->est[g], lo = scale * x->lo[g],
           hi = scale * x->hi[g];
    kl__buf_printf(&out, " *   %-12s variant %d: %s, x%.3f [%.3f, %.3f]%s%s\n",
                   kl_case_shape_name(c, s), v->number, x->id, est, lo, hi,
                   g != (int)s ? ", at the geometry of " : "",
                   g != (int)s ? kl_case_shape_name(c, g) : "");
    kl__buf_printf(&ev, "%s{\"shape\":", s ? "," : "");
    kl__buf_json_string(&ev, kl_case_shape_name(c, s));
    kl__buf_printf(&ev, ",\"variant\":%d,\"id\":", v->number);
    kl__buf_json_string(&ev, x->id);
    kl__buf_puts(&ev, ",\"run\":");
    kl__buf_json_string(&ev, x->run);
    kl__buf_printf(&ev,
                   ",\"iteration\":%d,\"baseline\":%s,\"speedup\":%.6g,"
                   "\"ci\":[%.6g,%.6g],\"method\":\"chained\",\"own_launch\":"
                   "%s}",
                   x->iteration, x->baseline ? "true" : "false", est, lo, hi,
                   v->launcher ? "true" : "false");
    bool shared = false;
    for (size_t t = 0; t < nshapes && !shared; t++)
      shared = t != s && group[t] == group[s];
    if (shared) {
      ev.size--; /* the branch is shared: say with which shape it is */
      kl__buf_puts(&ev, ",\"same_values_as\":");
      kl__buf_json_string(&ev, kl_case_shape_name(c, group[s]));
      kl__buf_puts(&ev, ",\"geometry_of\":");
      kl__buf_json_string(&ev, kl_case_shape_name(c, g));
      kl__buf_putc(&ev, '}');
    }
  }
  kl__buf_printf(&ev, "],\"variants\":%zu,\"fallback\":", nv);
  if (fallback >= 0)
    kl__buf_json_string(&ev, vars[fallback].x->id);
  else
    kl__buf_puts(&ev, "null");
  kl__buf_puts(&ev, "}");
  kl__buf_printf(&out, " * Other values: %s.\n */\n",
                 fallback >= 0 ? "the heaviest shape's variant (one that "
                                 "owns its launch, on CUDA)"
                               : "no variant owns its launch, so the "
                                 "dispatcher stops the program");
  char **defs = kl__calloc(nargs ? nargs : 1, sizeof *defs);
  if (!defs) rc = kl__error_oom();
  for (size_t k = 0; k < nv && rc == 0; k++)
    rc = emit_variant(&body, &includes, c, &vars[k], defs);
  kl__names_free(defs, nargs);
  if (rc < 0) goto done;
  if (fallback < 0)
    kl__buf_puts(&includes, cuda ? "#include <cstdio>\n#include <cstdlib>\n"
                                 : "#include <stdio.h>\n#include <stdlib.h>\n");
  kl__buf_puts(&out, includes.ptr ? includes.ptr : "");
  kl__buf_puts(&out, body.ptr ? body.ptr : "");
  kl__buf_printf(&out, "\n/* ==== the dispatcher ==== */\n%svoid %s(",
                 cuda ? "extern \"C\" " : "", KL_LAUNCHER_NAME);
  kl__buf_printf(&out, "%s%sconst kl_launch_ctx *ctx) {\n", sig,
                 sig[0] ? ", " : "");
  for (size_t s = 0; s < nshapes; s++) {
    if (group[s] != (int)s) continue; /* its group's first shape's branch */
    kl__buf_puts(&out, "  if (");
    emit_condition(&out, c, (int)s);
    kl__buf_printf(&out, ") { /* %s */\n    ", kl_case_shape_name(c, s));
    emit_call(&out, c, &vars[chosen[s]], geo[s]);
    kl__buf_puts(&out, "    return;\n  }\n");
  }
  if (fallback >= 0) {
    kl__buf_puts(&out, "  ");
    emit_call(&out, c, &vars[fallback], 0);
  } else {
    kl__buf_printf(&out,
                   "  fprintf(stderr, \"kernlab dispatcher of '%s': no "
                   "variant for these values\\n\");\n  abort();\n",
                   kl_case_name(c));
  }
  for (size_t i = 0; i < nargs; i++) /* names a branch may not use */
    kl__buf_printf(&out, "  (void)%s;\n", kl__case_args(c)[i].name);
  kl__buf_puts(&out, "  (void)ctx;\n}\n");
  if ((rc = kl__buf_status(&out)) < 0 || (rc = kl__buf_status(&ev)) < 0)
    goto done;
  kl__buf_give(source, &out);
  if (evidence) kl__buf_give(evidence, &ev);
done:
  for (size_t k = 0; k < nv; k++)
    kl__free(vars[k].text);
  for (size_t i = 0; i < p.n; i++)
    cand_free(&p.v[i]);
  kl__free(p.v);
  kl__free(sig);
  kl_buf_dispose(&out);
  kl_buf_dispose(&includes);
  kl_buf_dispose(&body);
  kl_buf_dispose(&ev);
  return rc;
}
