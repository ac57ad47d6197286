/* Prompt assembly: sections with budgets, joined into a system block
 * (stable within a run, cacheable) and a user block (per iteration).
 *
 * Each section is built in full, then fitted to its budget (tokens
 * estimated as characters / 4): a section is cut at a line boundary from
 * its least important end (the end of a text, the oldest attempts, the
 * lowest-ranked findings and skills come last in their lists or first for
 * attempts), and a line saying what was cut takes the place of what went.
 * The best kernel is never cut. The focus shape, whose verdict, findings
 * and metrics the user block shows, is the heaviest shape (by weight) that
 * has a profile. */
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernlab/plugin.h"
#include "prompt_internal.h"

typedef enum cut_from { CUT_END, CUT_START, CUT_NEVER } cut_from;

typedef struct section {
  const char *name, *title;
  int system;
  size_t budget; /* tokens */
  cut_from cut;
  kl_buf text;
  size_t cut_chars;
} section;

struct kl_prompt {
  section *s;
  size_t n;
  char *system, *user;
};

static size_t tokens(size_t chars) {
  return (chars + 3) / 4;
}

void kl_prompt_free(kl_prompt *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n; i++)
    kl_buf_dispose(&p->s[i].text);
  kl__free(p->s);
  kl__free(p->system);
  kl__free(p->user);
  kl__free(p);
}

/* ---- the sections
 * ------------------------------------------------------------- */

/* The launcher's declaration: the entry's parameters (a template's types
 * bound), then the context. */
static int launcher_declaration(kl_buf *b, const kl_case *c, bool cuda) {
  char *params = NULL;
  int rc = kl__launcher_params(&params, c);
  if (rc < 0) return rc;
  kl__buf_printf(b, "%svoid %s(%s%sconst kl_launch_ctx *ctx)",
                 cuda ? "extern \"C\" " : "", KL_LAUNCHER_NAME, params,
                 params[0] ? ", " : "");
  kl__free(params);
  return kl__buf_status(b);
}

/* A python case's rules: the file, forward's contract, what is timed. */
static int python_rules(kl_buf *b, const kl_case *c, const char *sig) {
  const char *device = kl_case_python_device(c);
  bool host = device && strcmp(device, "host") == 0;
  kl_buf module = KL_BUF_INIT;
  char *adapt = NULL; /* forward_of: candidates may define ModelNew */
  int rc = kl__read_file(&module, kl_case_kernel_path(c));
  if (rc == 0)
    rc = kl__py_def_params(&adapt, module.ptr ? module.ptr : "", "forward_of");
  kl_buf_dispose(&module);
  if (rc < 0) return rc;
  bool model_new = adapt != NULL;
  kl__free(adapt);
  return kl__buf_printf(
      b,
      "You make the Python operator of the case '%s' faster without "
      "changing what it computes. kernlab checks every reply on fresh random "
      "inputs against the case's oracle, then times it against the current "
      "best with cold caches; only a statistically clear gain is kept.\n\n"
      "Rules for every reply:\n"
      "- Send the complete candidate file in one fenced ```python block: "
      "its imports, every kernel and helper it needs, and forward. No "
      "elisions (\"rest unchanged\", \"...\"), no stubs, no TODOs: such "
      "replies are rejected unread.\n"
      "- Keep forward at the top level, taking the case's inputs and inouts "
      "in order:\n    %s\n"
      "  It returns the outputs (one value, or a tuple in the case's order) "
      "and updates inouts in place. %s\n%s"
      "- Write the kernels in whatever is importable there: Triton, CuTe "
      "DSL, cuTile, CuPy raw kernels, torch.utils.cpp_extension, PyTorch. "
      "JIT compilation and autotuning happen in warm-up calls, which are "
      "not timed; everything after is timed as it runs, allocations "
      "included. Results kept from an earlier call are caught (fresh "
      "inputs, outputs compared after timing).\n"
      "- Plain ASCII only, in code and comments.\n"
      "- Add one line `MEMO: <rule or idea>` naming the finding or idea this "
      "version targets (e.g. `MEMO: fuse the five kernels into one Triton "
      "kernel`).\n"
      "- A module constant you are unsure of may be left to a search: "
      "assign its default at the top level (`BLOCK = 1024`) and declare its "
      "candidates in a comment line `# @tunable BLOCK: 256, 512, 1024`; "
      "kernlab measures them for you.\n",
      kl_case_name(c), sig,
      host ? "Its values are host buffers (numpy arrays, array.array); "
             "the call is timed on the host."
           : "Its values are torch tensors on the GPU; every kernel it "
             "launches, on any stream, is timed by CUPTI, copies and "
             "memsets included.",
      model_new ? "- Or, in KernelBench's format, define `class "
                  "ModelNew(nn.Module)` taking the problem's Model's "
                  "constructor arguments, its forward taking the same "
                  "inputs; it is built once, after torch.manual_seed(42) "
                  "like Model, so parameters made in the same order get "
                  "the same weights.\n"
                : "");
}

/* A command case: the candidate is a whole file the case's own benchmark
 * builds and runs; kernlab reads its metrics. */
static int command_rules(kl_buf *b, const kl_case *c) {
  const char *path = kl_case_kernel_path(c), *name = strrchr(path, '/');
  name = name ? name + 1 : path;
  kl__buf_printf(b,
                 "You improve the file `%s` of the case '%s'. kernlab runs "
                 "the case's own benchmark on every reply (below: its "
                 "command, build and the metrics it reports, each better "
                 "higher or lower) in A B B A order against the current "
                 "best; only a statistically clear gain on the metrics' "
                 "weighted geometric mean is kept. A run that fails, hangs "
                 "or reports no metrics is rejected.\n\n"
                 "Rules for every reply:\n"
                 "- Send the complete new `%s` in one fenced code block: "
                 "every line of it. No elisions (\"rest unchanged\", "
                 "\"...\"), no stubs, no TODOs: such replies are rejected "
                 "unread.\n"
                 "- Plain ASCII only.\n"
                 "- Outside the block, add one line `MEMO: <idea>` naming "
                 "what this version changes and why.\n",
                 name, kl_case_name(c), name);
  return kl__buf_status(b);
}

static int rules_of_the_game(kl_buf *b, const kl_case *c, const char *sig) {
  if (kl_case_backend(c) == KL_BACKEND_PYTHON) return python_rules(b, c, sig);
  if (kl_case_backend(c) == KL_BACKEND_COMMAND) return command_rules(b, c);
  bool cuda = kl_case_backend(c) == KL_BACKEND_CUDA;
  kl_buf launcher = KL_BUF_INIT;
  int rc = launcher_declaration(&launcher, c, cuda);
  if (rc < 0) {
    kl_buf_dispose(&launcher);
    return rc;
  }
  rc = kl__buf_printf(
      b,
      "You make the %s kernel of the case '%s' faster without changing what "
      "it computes. kernlab checks every reply on fresh random inputs against "
      "the case's oracle, then times it against the current best with cold "
      "caches; only a statistically clear gain is kept.\n\n"
      "Rules for every reply:\n"
      "- Send the complete kernel section in one fenced code block: every "
      "function it needs, every line. No elisions (\"rest unchanged\", "
      "\"...\"), no stubs, no TODOs: such replies are rejected unread.\n"
      "- Either keep the entry point and its signature exactly:\n    %s\n"
      "%s"
      "- Or own the launch: define\n    %s\n"
      "  and kernlab calls it for every launch instead. The parameters are "
      "the entry's, in order; ctx (kernlab/plugin.h, already included) "
      "gives %s, and ctx->scratch(ctx, bytes) for workspace (the n-th call "
      "of a launch returns region n, made once, zeroed, before timing; the "
      "sizes must not change between launches). %s\n"
      "- Plain ASCII only, in code and comments.\n"
      "- Add one line `MEMO: <rule or idea>` naming the finding or idea this "
      "version targets (e.g. `MEMO: uncoalesced_stores: tile through shared "
      "memory`).\n"
      "- A compile-time parameter you are unsure of may be left to a search: "
      "give it a default with #ifndef NAME / #define NAME v / #endif and "
      "declare its candidates in a comment line `// @tunable NAME: v1, v2, "
      "v3`; kernlab measures them for you.\n",
      cuda ? "CUDA" : "C", kl_case_name(c), sig,
      cuda ? "  Then the launch geometry (grid, block, dynamic shared memory) "
             "is the case's, per shape, below. Tunables, where the case has "
             "them, are compile-time macros.\n"
           : "  Then the function is called once per launch on the host, "
             "single-threaded.\n",
      launcher.ptr ? launcher.ptr : "",
      cuda ? "the stream (ctx->stream, a void * holding the cudaStream_t: "
             "launch with <<<grid, block, smem, (cudaStream_t)ctx->stream>>>), "
             "the shape "
             "(ctx->shape, ctx->shape_name) and the device (ctx->sms, "
             "ctx->device_prop, a const cudaDeviceProp *)"
           : "the shape (ctx->shape, ctx->shape_name) and "
             "ctx->host_threads",
      cuda ? "It may launch any number of kernels with any geometry on that "
             "stream (or streams it forks from it and joins back); it must "
             "not allocate or free memory, synchronise, or copy to or from "
             "the host: such a launch fails."
           : "It may start threads but must join them before it returns.");
  kl_buf_dispose(&launcher);
  return rc;
}

static int skill_catalog(kl_buf *b, const kl_rules *rs) {
  if (!rs) return kl__buf_puts(b, "(no skills loaded)\n");
  kl_buf cat = KL_BUF_INIT;
  int rc = kl_rules_skill_catalog(&cat, rs);
  if (rc == 0)
    rc = kl__buf_printf(b,
                        "Short notes on GPU bottlenecks; the full text of "
                        "those that fired follows.\n%s",
                        cat.ptr ? cat.ptr : "");
  kl_buf_dispose(&cat);
  return rc;
}

/* The heaviest shape with a profile. */
static const kl_prompt_shape *focus(const kl_prompt_inputs *in) {
  const kl_prompt_shape *best = NULL;
  double w = -1;
  for (size_t i = 0; i < in->nshapes; i++) {
    int k =
        in->shapes[i].name ? kl_case_shape_find(in->c, in->shapes[i].name) : -1;
    double wi = k >= 0 ? kl_case_shape_weight(in->c, (size_t)k) : 1;
    if (in->shapes[i].profile && wi > w) {
      w = wi;
      best = &in->shapes[i];
    }
  }
  return best;
}

static int program_md(kl_buf *b, const kl_case *c) {
  const char *path = kl_case_program_path(c);
  if (!path) return kl__buf_puts(b, "(the case has no program.md)\n");
  kl_buf t = KL_BUF_INIT;
  int rc = kl__read_file(&t, path);
  if (rc == 0) rc = kl__buf_puts(b, t.ptr ? t.ptr : "");
  kl_buf_dispose(&t);
  return rc;
}

static int best_kernel(kl_buf *b, const kl_prompt_inputs *in) {
  kl_buf t = KL_BUF_INIT;
  const char *code = in->best_code;
  if (!code) {
    int rc = kl__read_file(&t, kl_case_kernel_path(in->c));
    if (rc < 0) return rc;
    code = t.ptr ? t.ptr : "";
  }
  if (kl_case_backend(in->c) == KL_BACKEND_COMMAND) {
    const char *path = kl_case_kernel_path(in->c), *name = strrchr(path, '/');
    kl__buf_printf(b, "%s `%s`:\n```\n%s%s```\n",
                   in->best_code ? "The current best"
                                 : "The baseline, the best "
                                   "so far:",
                   name ? name + 1 : path, code,
                   code[0] && code[strlen(code) - 1] == '\n' ? "" : "\n");
    kl_buf_dispose(&t);
    return kl__buf_status(b);
  }
  if (kl_case_backend(in->c) == KL_BACKEND_PYTHON) {
    kl__buf_printf(b, "%s (Python; uses ",
                   in->best_code ? "The current best candidate"
                                 : "The case's module, its forward the "
                                   "baseline and the best so far");
    kl__py_dsls(b, code);
    kl__buf_printf(b, "):\n```python\n%s%s```\n", code,
                   code[0] && code[strlen(code) - 1] == '\n' ? "" : "\n");
    kl_buf_dispose(&t);
    return kl__buf_status(b);
  }
  kl__buf_printf(b, "%s (%s):\n```%s\n%s%s```\n",
                 in->best_code ? "The current best kernel"
                               : "The baseline kernel, the best so far",
                 kl_case_entry(in->c),
                 kl_case_backend(in->c) == KL_BACKEND_CUDA ? "cuda" : "c", code,
                 code[0] && code[strlen(code) - 1] == '\n' ? "" : "\n");
  kl_buf_dispose(&t);
  return kl__buf_status(b);
}

/* A python device case's guide to kernel languages: the table, and the
 * idioms of those its module and the current best import. */
static int languages(kl_buf *b, const kl_prompt_inputs *in) {
  const char *device = kl_case_python_device(in->c);
  if (kl_case_backend(in->c) != KL_BACKEND_PYTHON ||
      (device && strcmp(device, "host") == 0))
    return 0;
  kl_buf src = KL_BUF_INIT;
  int rc = kl__read_file(&src, kl_case_kernel_path(in->c));
  if (rc == 0 && in->best_code)
    rc = kl__buf_printf(&src, "\n%s", in->best_code);
  if (rc == 0) rc = kl__py_language_guide(b, src.ptr ? src.ptr : "");
  kl_buf_dispose(&src);
  return rc;
}

static int launch_geometry(kl_buf *b, const kl_case *c, const char *sig) {
  if (kl_case_backend(c) == KL_BACKEND_COMMAND)
    return kl_case_command_describe(b, c);
  kl__buf_printf(b, "Signature: %s\n", sig);
  for (size_t i = 0; i < kl_case_shape_count(c); i++) {
    kl_launch l;
    kl_vars *v = NULL;
    kl__buf_printf(b, "- %s (weight %g):", kl_case_shape_name(c, i),
                   kl_case_shape_weight(c, i));
    int rc = kl_case_shape_vars(&v, c, i);
    if (rc < 0) return rc;
    for (size_t k = 0; k < kl_vars_count(v); k++) {
      kl_value x;
      kl_vars_get(&x, v, kl_vars_name(v, k));
      if (x.is_int)
        kl__buf_printf(b, " %s=%lld", kl_vars_name(v, k), (long long)x.i);
      else
        kl__buf_printf(b, " %s=%g", kl_vars_name(v, k), x.f);
    }
    kl_vars_free(v);
    if (kl_case_launch(&l, c, i) == 0)
      kl__buf_printf(b,
                     "; grid (%lld, %lld, %lld), block (%lld, %lld, "
                     "%lld), %lld B dynamic shared memory",
                     (long long)l.grid[0], (long long)l.grid[1],
                     (long long)l.grid[2], (long long)l.block[0],
                     (long long)l.block[1], (long long)l.block[2],
                     (long long)l.shared_bytes);
    kl__buf_putc(b, '\n');
  }
  bool python = kl_case_backend(c) == KL_BACKEND_PYTHON;
  for (size_t i = 0; i < kl_case_tunable_count(c); i++) {
    kl__buf_printf(b, "%s %s:",
                   i        ? ";"
                   : python ? "Tunables (module constants):"
                            : "Tunables (macros):",
                   kl_case_tunable_name(c, i));
    for (size_t j = 0; j < kl_case_tunable_value_count(c, i); j++)
      kl__buf_printf(b, " %s", kl_case_tunable_value(c, i, j));
    if (i + 1 == kl_case_tunable_count(c)) kl__buf_putc(b, '\n');
  }
  return kl__buf_status(b);
}

static int verdict(kl_buf *b, const kl_prompt_shape *f) {
  if (!f)
    return kl__buf_puts(b, "No profile yet: the verdict comes with the first "
                           "measured profile.\n");
  return kl__buf_printf(b, "At shape %s: %s\n", f->name ? f->name : "?",
                        kl_profile_verdict(f->profile)
                            ? kl_profile_verdict(f->profile)
                            : "no verdict");
}

static int findings(kl_buf *b, const kl_diagnosis *d) {
  if (!d) return kl__buf_puts(b, "(no findings: no profile or no rules)\n");
  for (size_t i = 0; i < kl_diagnosis_fired_count(d); i++) {
    kl_finding f = KL_FINDING_INIT;
    kl_diagnosis_fired(&f, d, i);
    kl__buf_printf(b, "- [%s] %s: %s\n  Action: %s\n",
                   kl_severity_name(f.severity), f.id, f.finding, f.action);
  }
  if (kl_diagnosis_fired_count(d) == 0) kl__buf_puts(b, "No rule fired.\n");
  /* Nsight Compute's own recommendations, where the profile came from an
   * ncu report: the first few it expects most from */
  size_t shown = 0;
  for (size_t i = 0; i < kl_diagnosis_advice_count(d) && shown < 6; i++) {
    const char *agrees;
    const kl_ncu_advice *a = kl_diagnosis_advice(d, i, &agrees, NULL);
    if (strcmp(a->type, "INF") == 0) continue;
    if (shown++ == 0)
      kl__buf_puts(b, "Nsight Compute's own advice (by its estimated "
                      "speedup):\n");
    kl__buf_printf(b, "- [ncu %s %s", a->type, a->rule);
    if (!isnan(a->speedup_pct))
      kl__buf_printf(b, ", est. %.3g%%", a->speedup_pct);
    kl__buf_printf(b, "] %s%s%s%s\n", a->text, agrees ? " (kernlab's " : "",
                   agrees ? agrees : "", agrees ? " agrees)" : "");
  }
  return kl__buf_status(b);
}

static const char *const table_metrics[] = {"time_us",
                                            "roofline_pct",
                                            "achieved_bandwidth",
                                            "dram_throughput_pct",
                                            "l2_throughput_pct",
                                            "sm_busy_pct",
                                            "l1_hit_rate_pct",
                                            "l2_hit_rate_pct",
                                            "load_sector_ratio",
                                            "store_sector_ratio",
                                            "achieved_occupancy_pct",
                                            "theoretical_occupancy_pct",
                                            "waves_per_sm",
                                            "registers_per_thread",
                                            "ipc",
                                            "stall_long_scoreboard_pct",
                                            "stall_short_scoreboard_pct",
                                            "stall_barrier_pct",
                                            "shared_bank_conflict_pct",
                                            "host_ipc",
                                            "host_mpki",
                                            "host_cache_miss_pct"};

static int metric_table(kl_buf *b, const kl_prompt_shape *f) {
  if (!f) return kl__buf_puts(b, "(no profile yet)\n");
  for (size_t i = 0; i < KL_ARRAY_SIZE(table_metrics); i++) {
    double v;
    const kl_metric_info *m = kl_metric_find(table_metrics[i]);
    if (m && kl_profile_value(&v, f->profile, table_metrics[i]) == 0)
      kl__buf_printf(b, "%-28s %12.4g %s\n", m->name, v, m->unit);
  }
  return kl__buf_status(b);
}

static int shape_times(kl_buf *b, const kl_prompt_inputs *in) {
  bool any = false;
  for (size_t i = 0; i < in->nshapes; i++) {
    double t, roof;
    const kl_profile *p = in->shapes[i].profile;
    if (!p || kl_profile_value(&t, p, "time_us") != 0) continue;
    any = true;
    kl__buf_printf(b, "- %s: %.4g us",
                   in->shapes[i].name ? in->shapes[i].name : "?", t);
    if (kl_profile_value(&roof, p, "roofline_pct") == 0)
      kl__buf_printf(b,
                     "; the roofline bound is %.4g us (%.0f%% of the "
                     "time)",
                     t * roof / 100.0, roof);
    kl__buf_putc(b, '\n');
  }
  if (!any) kl__buf_puts(b, "(not timed yet)\n");
  return kl__buf_status(b);
}

/* A launch that ran several kernels (its own launcher): each with its share
 * of their time, its verdict and the rules that fired on it. */
static int kernels(kl_buf *b, const kl_prompt_inputs *in,
                   const kl_prompt_shape *f) {
  size_t n = f ? kl_profile_part_count(f->profile) : 0;
  if (n == 0)
    return kl__buf_puts(b,
                        f ? "One kernel per launch.\n" : "(no profile yet)\n");
  double total = 0;
  for (size_t i = 0; i < n; i++) {
    double t = kl_profile_time_us(kl_profile_part(f->profile, i));
    if (isfinite(t)) total += t;
  }
  kl__buf_printf(b, "%zu kernels at shape %s, in launch order:\n", n,
                 f->name ? f->name : "?");
  for (size_t i = 0; i < n; i++) {
    const kl_profile *k = kl_profile_part(f->profile, i);
    double t = kl_profile_time_us(k);
    kl__buf_printf(b, "- %s: ", kl_profile_name(k) ? kl_profile_name(k) : "?");
    if (isfinite(t) && total > 0)
      kl__buf_printf(b, "%.4g us (%.0f%%), ", t, 100 * t / total);
    kl__buf_printf(
        b, "%s", kl_profile_verdict(k) ? kl_profile_verdict(k) : "no verdict");
    kl_diagnosis *d = NULL;
    int rc = in->rules ? kl_rules_evaluate(&d, in->rules, k) : 0;
    if (rc < 0) return rc;
    for (size_t j = 0; d && j < kl_diagnosis_fired_count(d); j++) {
      kl_finding fi = KL_FINDING_INIT;
      kl_diagnosis_fired(&fi, d, j);
      kl__buf_printf(b, "%s%s", j ? ", " : "; rules fired: ", fi.id);
    }
    kl_diagnosis_free(d);
    kl__buf_putc(b, '\n');
  }
  return kl__buf_status(b);
}

static int attempts(kl_buf *b, const kl_prompt_inputs *in) {
  if (in->nattempts == 0)
    return kl__buf_puts(b, "None yet: this is the first attempt.\n");
  for (size_t i = 0; i < in->nattempts; i++) {
    const kl_prompt_attempt *a = &in->attempts[i];
    kl__buf_printf(b, "- #%d %s", a->iteration, a->verdict ? a->verdict : "?");
    if (a->speedup > 0) kl__buf_printf(b, " (%.3fx)", a->speedup);
    kl__buf_printf(b, ": %s", a->memo ? a->memo : "(no memo)");
    if (a->reason) kl__buf_printf(b, " -- %s", a->reason);
    kl__buf_putc(b, '\n');
  }
  return kl__buf_status(b);
}

/* ---- budgets
 * -------------------------------------------------------------------- */

/* Cut text to `chars` at a line boundary, from the end or the start, and
 * say so. */
static int fit(section *s, size_t budget_tokens) {
  size_t max = budget_tokens * 4;
  if (s->cut == CUT_NEVER || s->text.size <= max) return 0;
  kl_buf *t = &s->text;
  char note[160];
  snprintf(note, sizeof(note),
           "[... %s cut here to fit its budget of %zu "
           "tokens]\n",
           s->cut == CUT_END ? "the rest" : "the oldest entries",
           budget_tokens);
  size_t keep = max > strlen(note) ? max - strlen(note) : 0;
  kl_buf o = KL_BUF_INIT;
  if (s->cut == CUT_END) {
    size_t e = keep;
    while (e > 0 && t->ptr[e - 1] != '\n')
      e--;
    kl__buf_put(&o, t->ptr, e);
    kl__buf_puts(&o, note);
    s->cut_chars = t->size - e;
  } else {
    size_t st = t->size - keep;
    while (st < t->size && t->ptr[st - 1] != '\n')
      st++;
    kl__buf_puts(&o, note);
    kl__buf_put(&o, t->ptr + st, t->size - st);
    s->cut_chars = st;
  }
  int rc = kl__buf_status(&o);
  if (rc == 0) kl__buf_give(t, &o);
  return rc;
}

static int join(char **out, const kl_prompt *p, int system,
                const kl_prompt_inputs *in) {
  kl_buf b = KL_BUF_INIT;
  if (!system) kl__buf_printf(&b, "# Iteration %d\n\n", in->iteration);
  for (size_t i = 0; i < p->n; i++)
    if (p->s[i].system == system && p->s[i].text.size) /* empty: n/a */
      kl__buf_printf(&b, "## %s\n\n%s\n", p->s[i].title,
                     p->s[i].text.ptr ? p->s[i].text.ptr : "");
  return (*out = kl__buf_detach(&b)) ? 0 : KL_ENOMEM;
}

/* Section i of the plan, in full (fit cuts it to its budget). */
static int fill(kl_buf *b, size_t i, const kl_prompt_inputs *in,
                const char *sig, const kl_prompt_shape *f,
                const kl_diagnosis *d) {
  /* a command case has no kernel of kernlab's to profile: no skills,
   * bottleneck, findings, metrics or kernels (sections left empty) */
  static const bool profiled[] = {0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 0};
  if (kl_case_backend(in->c) == KL_BACKEND_COMMAND &&
      i < KL_ARRAY_SIZE(profiled) && profiled[i])
    return 0;
  switch (i) {
  case 0:
    return rules_of_the_game(b, in->c, sig);
  case 1:
    return skill_catalog(b, in->rules);
  case 2: {
    int rc = d ? kl_diagnosis_skills(b, d, in->rules, 5)
               : kl__buf_puts(b, "(none: no profile yet)\n");
    if (rc == 0 && b->size == 0) rc = kl__buf_puts(b, "(no rule fired)\n");
    return rc;
  }
  case 3:
    return kl__buf_puts(b, in->patterns ? in->patterns : "(none yet)\n");
  case 4:
    return kl__buf_puts(b, in->memory ? in->memory : "(none yet)\n");
  case 5:
    return program_md(b, in->c);
  case 6:
    return best_kernel(b, in);
  case 7:
    return launch_geometry(b, in->c, sig);
  case 8:
    return verdict(b, f);
  case 9:
    return findings(b, d);
  case 10:
    return metric_table(b, f);
  case 11:
    return shape_times(b, in);
  case 12:
    return kernels(b, in, f);
  case 13:
    return attempts(b, in);
  case 14: /* absent: no section */
    return in->devlog ? kl__buf_puts(b, in->devlog) : 0;
  case 15:
    return in->prior_art ? kl__buf_puts(b, in->prior_art) : 0;
  default:
    return languages(b, in);
  }
}

int kl_prompt_build(kl_prompt **out, const kl_prompt_inputs *given) {
  *out = NULL;
  kl_prompt_inputs full;
  int taken = kl__prompt_inputs_take(&full, given);
  if (taken < 0) return taken;
  const kl_prompt_inputs *in = &full;
  if (!given || !in->c)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "a prompt needs a case");
  static const struct {
    const char *name, *title;
    int system;
    size_t budget;
    cut_from cut;
  } plan[] = {
      {"rules", "How to reply", 1, 600, CUT_NEVER},
      {"skill_catalog", "Skills", 1, 1500, CUT_END},
      {"fired_skills", "Skills that fired on this kernel", 1, 2500, CUT_END},
      {"patterns", "What worked on other cases", 1, 800, CUT_END},
      {"memory", "This case's memory from earlier runs", 1, 800, CUT_END},
      {"program", "The case (program.md)", 0, 1500, CUT_END},
      {"best_kernel", "Current best kernel", 0, 6000, CUT_NEVER},
      {"launch", "Signature and launch geometry per shape", 0, 500, CUT_END},
      {"verdict", "Bottleneck", 0, 200, CUT_END},
      {"findings", "Findings and actions", 0, 1200, CUT_END},
      {"metrics", "Metrics at the focus shape", 0, 500, CUT_END},
      {"times", "Times per shape", 0, 400, CUT_END},
      {"kernels", "Kernels of the launch at the focus shape", 0, 800, CUT_END},
      {"attempts", "This run's attempts", 0, 1200, CUT_START},
      {"devlog", "This case's devlog (the latest accepted versions)", 1, 800,
       CUT_START},
      {"prior_art", "Prior art (the knowledge base)", 0, 1000, CUT_END},
      {"languages", "Kernel languages", 1, 900, CUT_END},
  };
  kl_prompt *p = kl__calloc(1, sizeof(*p));
  if (!p || !(p->s = kl__calloc(KL_ARRAY_SIZE(plan), sizeof(section)))) {
    kl__free(p);
    return kl__error_oom();
  }
  p->n = KL_ARRAY_SIZE(plan);
  double scale = in->budget_scale > 0 ? in->budget_scale : 1.0;
  const kl_prompt_shape *f = focus(in);
  kl_diagnosis *d = NULL;
  char *sig = NULL; /* read from the baseline once, shown twice */
  int rc;
  if ((rc = kl__entry_signature(&sig, in->c)) < 0 ||
      (in->rules && f &&
       (rc = kl_rules_evaluate(&d, in->rules, f->profile)) < 0))
    goto done;
  for (size_t i = 0; i < p->n; i++) {
    section *s = &p->s[i];
    s->name = plan[i].name;
    s->title = plan[i].title;
    if (kl_case_backend(in->c) == KL_BACKEND_COMMAND && i == 6)
      s->title = "Current best file";
    if (kl_case_backend(in->c) == KL_BACKEND_COMMAND && i == 7)
      s->title = "The case's benchmark";
    s->system = plan[i].system;
    s->budget = (size_t)ceil((double)plan[i].budget * scale);
    s->cut = plan[i].cut;
    if ((rc = fill(&s->text, i, in, sig, f, d)) < 0 ||
        (rc = fit(s, s->budget)) < 0)
      goto done;
  }
  if ((rc = join(&p->system, p, 1, in)) < 0 ||
      (rc = join(&p->user, p, 0, in)) < 0)
    goto done;
  *out = p;
  p = NULL;
done:
  kl_diagnosis_free(d);
  kl__free(sig);
  kl_prompt_free(p);
  return rc;
}

const char *kl_prompt_system(const kl_prompt *p) {
  return p->system;
}
const char *kl_prompt_user(const kl_prompt *p) {
  return p->user;
}
size_t kl_prompt_section_count(const kl_prompt *p) {
  return p->n;
}

int kl_prompt_section(kl_prompt_section_info *into, const kl_prompt *p,
                      size_t i) {
  if (i >= p->n)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no section %zu (of %zu)", i,
                     p->n);
  kl_prompt_section_info full = {0};
  kl_prompt_section_info *out = &full;
  const section *s = &p->s[i];
  out->name = s->name;
  out->system = s->system;
  out->chars = s->text.size;
  out->tokens = tokens(s->text.size);
  out->budget = s->budget;
  out->cut_chars = s->cut_chars;
  return kl__result_give(into, &full, sizeof(full),
                         KL__SIZE_THROUGH(kl_prompt_section_info, cut_chars),
                         "kl_prompt_section_info");
}

int kl_prompt_json(kl_buf *out, const kl_prompt *p) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "{\"system\":");
  kl__buf_json_string(&b, p->system);
  kl__buf_puts(&b, ",\"user\":");
  kl__buf_json_string(&b, p->user);
  kl__buf_puts(&b, ",\"sections\":[");
  size_t total = 0;
  for (size_t i = 0; i < p->n; i++) {
    const section *s = &p->s[i];
    total += tokens(s->text.size);
    kl__buf_printf(&b,
                   "%s{\"name\":\"%s\",\"block\":\"%s\",\"chars\":%zu,"
                   "\"tokens\":%zu,\"budget\":%zu,\"cut_chars\":%zu}",
                   i ? "," : "", s->name, s->system ? "system" : "user",
                   s->text.size, tokens(s->text.size), s->budget, s->cut_chars);
  }
  kl__buf_printf(&b, "],\"tokens\":%zu}", total);
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}

/* ---- versioned inputs
 * -------------------------------------------------------- */

static const size_t prompt_inputs_sizes[] = {
    0, offsetof(kl_prompt_inputs, devlog), sizeof(kl_prompt_inputs)};

KL__OPTIONS_FUNCTIONS(kl_prompt_inputs, kl_prompt_inputs_init,
                      kl__prompt_inputs_take, KL_PROMPT_INPUTS_INIT,
                      prompt_inputs_sizes)
