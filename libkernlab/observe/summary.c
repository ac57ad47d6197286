/* kl_observation_summary: the kernels of an observation by GPU time and
 * one kernel's representative configurations, as a table or as JSON
 * (fields in docs/observe.md). */
#include <stddef.h>
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "../core/json.h"
#include "observe_internal.h"

static const char *kernel_label(const kl__obs_kernel *k) {
  return k->demangled ? k->demangled : k->name;
}

/* A kernel's name for a table, at most `n` - 1 bytes: a long one (a
 * PyTorch template's runs to kilobytes) with the insides of its template
 * arguments and parameters left out, "ns::kern<...>(...)", then cut with
 * "..." if still too long. The JSON keeps the whole name. */
static const char *short_label(const kl__obs_kernel *k, char *buf, size_t n) {
  const char *name = kernel_label(k);
  if (strlen(name) < n && strlen(name) <= 100) return name;
  size_t at = 0;
  int depth = 0;
  for (const char *p = name; *p && at + 4 < n; p++) {
    bool open = *p == '<' || *p == '(', close = *p == '>' || *p == ')';
    if (close && depth > 0) depth--;
    if (depth == 0) {
      buf[at++] = *p;
      if (open) {
        memcpy(buf + at, "...", 3);
        at += 3;
      }
    }
    if (open) depth++;
  }
  buf[at] = '\0';
  if (strlen(name) > at && at + 4 >= n) memcpy(buf + n - 4, "...", 4);
  return buf;
}

static bool integer_sized(const kl__obs_arg *a) {
  return a->bytes &&
         (a->size == 1 || a->size == 2 || a->size == 4 || a->size == 8);
}

/* The i-th parameter type of a demangled name "k(float*, int)" when it
 * is float or double: 4 or 8; else 0 (shown as an integer). */
static int float_param(const char *demangled, size_t i) {
  const char *p = demangled ? strchr(demangled, '(') : NULL;
  for (size_t k = 0; p && k < i; k++) {
    int depth = 0;
    for (p++; *p && (depth || *p != ','); p++)
      depth += (*p == '<' || *p == '(') - (*p == '>' || *p == ')');
    if (*p != ',') return 0;
  }
  if (!p) return 0;
  p++;
  while (*p == ' ')
    p++;
  size_t n = strcspn(p, ",)");
  if (n == 5 && strncmp(p, "float", 5) == 0) return 4;
  if (n == 6 && strncmp(p, "double", 6) == 0) return 8;
  return 0;
}

/* ---- parameters from the source ------------------------------------------
 */

/* The kernel's parameters as `source` (blanked: clean) defines them. */
static int kernel_params(kl__obs_kernel *k, const char *clean,
                         const kl__src_types *st) {
  char call[256];
  if (!kl__c_call_name(call, sizeof call,
                       k->demangled ? k->demangled : k->name))
    snprintf(call, sizeof call, "%s", k->name);
  char *entry = kl__c_entry_function(call), *params = NULL;
  if (!entry) return kl__error_oom();
  int rc = kl__c_definition_params(&params, clean, entry);
  kl__free(entry);
  if (rc < 0 || !params) return rc < 0 ? rc : 0;
  char items[256][128];
  size_t n = kl__c_split_items(items, 256, params, strlen(params));
  kl__free(params);
  k->param_names = kl__calloc(n ? n : 1, sizeof *k->param_names);
  k->param_float = kl__calloc(n ? n : 1, 1);
  if (!k->param_names || !k->param_float) return kl__error_oom();
  k->nparams = n;
  for (size_t i = 0; i < n; i++) {
    /* the last identifier is the name; the one before it the type */
    const char *it = items[i], *name = NULL, *type = NULL;
    size_t nlen = 0, tlen = 0;
    for (const char *p = it; *p;) {
      if (!kl__c_ident_char(*p) || isdigit((unsigned char)*p)) {
        if (*p == '=') break; /* a default argument */
        p++;
        continue;
      }
      const char *w = p;
      while (kl__c_ident_char(*p))
        p++;
      type = name, tlen = nlen;
      name = w, nlen = (size_t)(p - w);
    }
    snprintf(k->param_names[i], sizeof k->param_names[i], "%.*s",
             (int)(nlen < 63 ? nlen : 63), name ? name : "");
    if (!type || strchr(it, '*') || strchr(it, '&')) continue;
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)(tlen < 63 ? tlen : 63), type);
    const char *real = word;
    for (int hops = 0; hops < 8; hops++) { /* through typedefs */
      const char *next = kl__src_types_alias(st, real);
      if (!next || strchr(next, '*')) break;
      real = next;
    }
    k->param_float[i] = strcmp(real, "float") == 0    ? 4
                        : strcmp(real, "double") == 0 ? 8
                                                      : 0;
  }
  return 0;
}

int kl_observation_read_source(kl_observation *o, const char *source) {
  if (!o || !source)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no observation or source");
  kl_buf text = KL_BUF_INIT;
  kl__src_types *st = NULL;
  int rc = kl__read_file(&text, source);
  char *clean =
      rc == 0 ? kl__c_blank(text.ptr ? text.ptr : "", text.size, false) : NULL;
  if (rc == 0 && !clean) rc = kl__error_oom();
  if (rc == 0) rc = kl__src_types_read(&st, source, NULL, NULL);
  for (size_t k = 0; rc == 0 && k < o->nkernels; k++) {
    kl__obs_kernel *kn = &o->kernels[k];
    kl__free(kn->param_names);
    kl__free(kn->param_float);
    kn->param_names = NULL;
    kn->param_float = NULL;
    kn->nparams = 0;
    rc = kernel_params(kn, clean, st);
  }
  kl__src_types_free(st);
  kl__free(clean);
  kl_buf_dispose(&text);
  return rc;
}

static int text_args(kl_buf *b, const kl__obs_launch *l,
                     const kl__obs_kernel *k) {
  const char *demangled = k->demangled;
  if (!l->args_known) return kl__buf_puts(b, "(arguments not read)");
  for (size_t i = 0; i < l->nargs; i++) {
    const kl__obs_arg *a = &l->args[i];
    if (a->pointer) continue;
    bool named = i < k->nparams && k->param_names[i][0];
    const char *sep = b->size && b->ptr[b->size - 1] != ' ' ? " " : "";
    if (named)
      kl__buf_printf(b, "%s%s=", sep, k->param_names[i]);
    else
      kl__buf_printf(b, "%sarg%zu=", sep, i);
    int fl = !a->bytes                 ? 0
             : i < k->nparams && named ? k->param_float[i]
                                       : float_param(demangled, i);
    if (fl == 4 && a->size == 4) {
      uint32_t u = (uint32_t)kl__obs_arg_u64(a);
      float f;
      memcpy(&f, &u, 4);
      kl__buf_printf(b, "%.9gf", f);
    } else if (fl == 8 && a->size == 8) {
      uint64_t u = kl__obs_arg_u64(a);
      double f;
      memcpy(&f, &u, 8);
      kl__buf_printf(b, "%.17g", f);
    } else if (integer_sized(a)) {
      kl__buf_printf(b, "%" PRId64, kl__obs_arg_i64(a));
    } else {
      kl__buf_puts(b, "0x");
      for (uint32_t j = 0; a->bytes && j < a->size; j++)
        kl__buf_printf(b, "%02x", a->bytes[a->size - 1 - j]);
    }
  }
  return kl__buf_status(b);
}

/* The Triton kernels the Python observer saw, each once: its file and
 * line, configurations, the program's calls and an autotuner's tries. */
static int python_kernels(kl_buf *b, const kl_observation *o, bool json) {
  size_t n = o->python ? json_object_array_length(o->python) : 0;
  if (!n) return 0;
  kl__buf_puts(b, json ? ", \"python\": ["
                       : "\nTriton kernels the Python "
                         "program called:\n");
  bool first = true;
  for (size_t i = 0; i < n; i++) {
    json_object *r = json_object_array_get_idx(o->python, i), *v;
    json_object_object_get_ex(r, "kernel", &v);
    const char *name = json_object_get_string(v);
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++) {
      json_object *w;
      json_object_object_get_ex(json_object_array_get_idx(o->python, j),
                                "kernel", &w);
      seen = strcmp(json_object_get_string(w), name) == 0;
    }
    if (seen) continue;
    int64_t configs = 0, calls = 0, tries = 0;
    for (size_t j = i; j < n; j++) {
      json_object *x = json_object_array_get_idx(o->python, j), *w;
      json_object_object_get_ex(x, "kernel", &w);
      if (strcmp(json_object_get_string(w), name)) continue;
      configs++;
      if (json_object_object_get_ex(x, "calls", &w))
        calls += json_object_get_int64(w);
      if (json_object_object_get_ex(x, "tries", &w))
        tries += json_object_get_int64(w);
    }
    json_object *file, *line;
    json_object_object_get_ex(r, "file", &file);
    json_object_object_get_ex(r, "line", &line);
    if (json) {
      kl__buf_puts(b, first ? "{\"kernel\": " : ", {\"kernel\": ");
      kl__buf_json_string(b, name);
      kl__buf_puts(b, ", \"file\": ");
      kl__buf_json_string(b, json_object_get_string(file));
      kl__buf_printf(b,
                     ", \"line\": %" PRId64 ", \"configs\": %" PRId64
                     ", \"calls\": %" PRId64 ", \"tries\": %" PRId64 "}",
                     json_object_get_int64(line), configs, calls, tries);
    } else {
      kl__buf_printf(b,
                     "  %-24s %s:%" PRId64 "  %" PRId64
                     " configuration%s, %" PRId64 " call%s",
                     name, json_object_get_string(file),
                     json_object_get_int64(line), configs,
                     configs == 1 ? "" : "s", calls, calls == 1 ? "" : "s");
      if (tries) kl__buf_printf(b, ", %" PRId64 " autotuning tries", tries);
      kl__buf_puts(b, "\n");
    }
    first = false;
  }
  kl__buf_puts(b, json ? "]"
                       : "a python case of one: kl case "
                         "from-observation FILE --entry NAME -o DIR\n");
  return kl__buf_status(b);
}

/* ---- which kernel to work on first ---------------------------------------
 * Each kernel's headroom: its GPU time less the time its bytes would take
 * at the device's DRAM peak (no counters are read: the bytes are what its
 * buffers hold, the allocations its pointer arguments point into from the
 * pointer on, averaged over its recorded launches; an upper bound on what
 * it moves, so the headroom errs low). Ranked by headroom, the first is
 * where a faster kernel can save the most of the program's GPU time. */
static int json_num(kl_buf *b, double v);

typedef struct rank {
  size_t kernel;
  double bytes;    /* per launch; NAN: no recorded launch */
  double at_peak;  /* µs for all its launches at the DRAM peak; NAN */
  double headroom; /* µs */
} rank;

static int ranking(rank **out, const kl_observation *o) {
  rank *r = kl__calloc(o->nkernels ? o->nkernels : 1, sizeof *r);
  if (!r) return kl__error_oom();
  for (size_t k = 0; k < o->nkernels; k++) {
    double sum = 0;
    int64_t n = 0;
    for (size_t i = 0; i < o->nlaunches; i++) {
      const kl__obs_launch *l = &o->launches[i];
      if (l->kernel != k || !l->args_known) continue;
      for (size_t a = 0; a < l->nargs; a++) {
        if (l->args[a].pointer) sum += (double)l->args[a].alloc_left;
        for (size_t w = 0; w < l->args[a].nwords; w++)
          sum += (double)l->args[a].word_left[w];
      }
      n++;
    }
    const kl__obs_kernel *kn = &o->kernels[k];
    r[k].kernel = k;
    r[k].bytes = n ? sum / (double)n : NAN;
    r[k].at_peak =
        n && o->dram_peak_gbs > 0
            ? r[k].bytes * (double)kn->launches / (o->dram_peak_gbs * 1e3)
            : NAN;
    r[k].headroom = isfinite(r[k].at_peak)
                        ? fmax(0, kn->total_us - r[k].at_peak)
                        : kn->total_us;
  }
  /* largest headroom first (insertion: a program has few kernels) */
  for (size_t i = 1; i < o->nkernels; i++)
    for (size_t j = i; j > 0 && r[j].headroom > r[j - 1].headroom; j--) {
      rank t = r[j];
      r[j] = r[j - 1];
      r[j - 1] = t;
    }
  *out = r;
  return 0;
}

/* The command that makes a case of kernel k: its source guessed as the
 * program's name with .cu, in the folder it ran in, when that file is
 * there. */
static int case_command(kl_buf *b, const kl_observation *o, size_t k) {
  char call[256];
  const kl__obs_kernel *kn = &o->kernels[k];
  if (!kl__c_call_name(call, sizeof call, kernel_label(kn)))
    snprintf(call, sizeof call, "%s", kn->name);
  char *entry = kl__c_entry_function(call);
  kl_buf src = KL_BUF_INIT;
  const char *prog = o->program ? o->program : "";
  while (strncmp(prog, "./", 2) == 0)
    prog += 2;
  size_t n = strcspn(prog, " ");
  const char *base = prog;
  for (const char *p = prog; p < prog + n; p++)
    if (*p == '/') base = p + 1;
  if (n && o->program_cwd && prog[0] != '/')
    kl__buf_printf(&src, "%s/%.*s.cu", o->program_cwd, (int)n, prog);
  else if (n)
    kl__buf_printf(&src, "%.*s.cu", (int)n, prog);
  bool found = src.ptr && kl__is_file(src.ptr);
  kl__buf_puts(b, "kl case from-observation ");
  kl__buf_puts(b, o->path);
  kl__buf_printf(b, " --source %s --entry %s -o %.*s-case",
                 found ? src.ptr : "SOURCE.cu", entry ? entry : call,
                 (int)(prog + n - base), base);
  kl__free(entry);
  kl_buf_dispose(&src);
  return kl__buf_status(b);
}

static int ranking_text(kl_buf *b, const kl_observation *o, double all_us) {
  rank *r = NULL;
  int rc = ranking(&r, o);
  if (rc < 0 || !o->nkernels) {
    kl__free(r);
    return rc;
  }
  char label[160];
  if (o->dram_peak_gbs > 0)
    kl__buf_printf(b,
                   "\nwhere to start: the time each kernel has above what "
                   "its bytes take at the\ndevice's DRAM peak (%.0f GB/s; "
                   "bytes are what its buffers hold, an upper\nbound: no "
                   "counters read):\n    share   headroom us  at peak us  "
                   "MB/launch  kernel\n",
                   o->dram_peak_gbs);
  else
    kl__buf_puts(b, "\nwhere to start (the device's DRAM peak is not in the "
                    "observation: by time):\n    share   headroom us  "
                    "at peak us  MB/launch  kernel\n");
  for (size_t i = 0; i < o->nkernels && i < 10; i++) {
    const kl__obs_kernel *k = &o->kernels[r[i].kernel];
    kl__buf_printf(b, "  %6.1f%%  %12.1f  ",
                   all_us > 0 ? 100 * k->total_us / all_us : 0, r[i].headroom);
    if (isfinite(r[i].at_peak))
      kl__buf_printf(b, "%9.1f  ", r[i].at_peak);
    else
      kl__buf_puts(b, "        ?  ");
    if (isfinite(r[i].bytes))
      kl__buf_printf(b, "%9.1f  ", r[i].bytes / 1e6);
    else
      kl__buf_puts(b, "        ?  ");
    kl__buf_printf(b, "%s\n", short_label(k, label, sizeof label));
  }
  const kl__obs_kernel *k = &o->kernels[r[0].kernel];
  kl__buf_printf(b,
                 "first: %s: %.1f%% of the program's GPU time, %.1f us of it "
                 "above what its bytes need\n  ",
                 short_label(k, label, sizeof label),
                 all_us > 0 ? 100 * k->total_us / all_us : 0, r[0].headroom);
  case_command(b, o, r[0].kernel);
  kl__buf_puts(b, "\n");
  kl__free(r);
  return kl__buf_status(b);
}

static int ranking_json(kl_buf *b, const kl_observation *o) {
  rank *r = NULL;
  int rc = ranking(&r, o);
  if (rc < 0) return rc;
  kl__buf_puts(b, ", \"dram_peak_gbs\": ");
  json_num(b, o->dram_peak_gbs > 0 ? o->dram_peak_gbs : NAN);
  kl__buf_puts(b, ", \"ranking\": [");
  for (size_t i = 0; i < o->nkernels; i++) {
    kl__buf_puts(b, i ? ", {\"name\": " : "{\"name\": ");
    kl__buf_json_string(b, o->kernels[r[i].kernel].name);
    kl__buf_puts(b, ", \"headroom_us\": ");
    json_num(b, r[i].headroom);
    kl__buf_puts(b, ", \"at_peak_us\": ");
    json_num(b, r[i].at_peak);
    kl__buf_puts(b, ", \"bytes_per_launch\": ");
    json_num(b, r[i].bytes);
    kl__buf_puts(b, "}");
  }
  kl__buf_puts(b, "], \"first\": ");
  if (o->nkernels) {
    kl_buf cmd = KL_BUF_INIT;
    case_command(&cmd, o, r[0].kernel);
    kl__buf_puts(b, "{\"name\": ");
    kl__buf_json_string(b, o->kernels[r[0].kernel].name);
    kl__buf_puts(b, ", \"command\": ");
    kl__buf_json_string(b, cmd.ptr);
    kl__buf_puts(b, "}");
    kl_buf_dispose(&cmd);
  } else {
    kl__buf_puts(b, "null");
  }
  kl__free(r);
  return kl__buf_status(b);
}

static int summary_text(kl_buf *b, const kl_observation *o,
                        const kl__obs_configs *c, double target) {
  char label[160];
  double all_us = 0;
  for (size_t k = 0; k < o->nkernels; k++)
    all_us += o->kernels[k].total_us;
  kl__buf_printf(b,
                 "observation %s: %zu launches recorded%s%s, "
                 "program exit %d\n",
                 o->path, o->nlaunches, o->device ? " on " : "",
                 o->device ? o->device : "", o->exit_code);
  kl__buf_puts(b, "kernels by GPU time:\n    share      total us  "
                  "launches  recorded  kernel\n");
  /* largest first, without sorting the observation */
  bool *shown = kl__calloc(o->nkernels ? o->nkernels : 1, sizeof *shown);
  if (!shown) return kl__error_oom();
  for (size_t r = 0; r < o->nkernels && r < 20; r++) {
    size_t best = SIZE_MAX;
    for (size_t k = 0; k < o->nkernels; k++)
      if (!shown[k] && (best == SIZE_MAX ||
                        o->kernels[k].total_us > o->kernels[best].total_us))
        best = k;
    shown[best] = true;
    const kl__obs_kernel *k = &o->kernels[best];
    kl__buf_printf(b, "  %6.1f%%  %12.1f  %8" PRId64 "  %8" PRId64 "  %s\n",
                   all_us > 0 ? 100 * k->total_us / all_us : 0, k->total_us,
                   k->launches, k->recorded,
                   short_label(k, label, sizeof label));
  }
  kl__free(shown);
  ranking_text(b, o, all_us);
  const kl__obs_kernel *k = &o->kernels[c->kernel];
  kl__buf_printf(b,
                 "\nconfigurations of %s (%.1f us over its recorded "
                 "launches%s):\n",
                 short_label(k, label, sizeof label), c->recorded_us,
                 c->untimed ? ", some without a duration" : "");
  kl__buf_puts(b, "   #   share    cum  launches    p50 us  p95/p25  "
                  "grid              block          smem  scalars\n");
  double cum = 0;
  for (size_t i = 0; i < c->nall && i < 30; i++) {
    const kl__obs_config *f = &c->all[i];
    const kl__obs_launch *l = f->first;
    cum += f->share;
    char grid[48], block[48];
    snprintf(grid, sizeof grid, "[%" PRId64 ",%" PRId64 ",%" PRId64 "]",
             l->grid[0], l->grid[1], l->grid[2]);
    snprintf(block, sizeof block, "[%" PRId64 ",%" PRId64 ",%" PRId64 "]",
             l->block[0], l->block[1], l->block[2]);
    kl__buf_printf(b,
                   "%s%3zu  %5.1f%%  %5.1f%%  %8" PRId64
                   "  %8.2f  %7.2f  %-16s  %-13s  %5" PRId64 "  ",
                   i < c->nkept ? "*" : " ", i + 1, 100 * f->share, 100 * cum,
                   f->launches, f->p50, f->p25 > 0 ? f->p95 / f->p25 : NAN,
                   grid, block, l->shared);
    text_args(b, l, k);
    kl__buf_printf(b, "%s%s\n", *f->half ? " " : "", *f->half ? f->half : "");
  }
  if (c->nall > 30) kl__buf_printf(b, "  ... %zu more\n", c->nall - 30);
  kl__buf_printf(b,
                 "kept %zu configuration%s (*) covering %.1f%% of "
                 "the kernel's recorded time (target %.0f%%); "
                 "K=3/5/7 would cover %.1f/%.1f/%.1f%%\n",
                 c->nkept, c->nkept == 1 ? "" : "s", 100 * c->kept_share,
                 100 * target, 100 * kl__obs_cover(c, 3),
                 100 * kl__obs_cover(c, 5), 100 * kl__obs_cover(c, 7));
  python_kernels(b, o, false);
  return kl__buf_status(b);
}

static int json_dim3(kl_buf *b, const char *key, const int64_t v[3]) {
  return kl__buf_printf(b, "\"%s\": [%" PRId64 ", %" PRId64 ", %" PRId64 "]",
                        key, v[0], v[1], v[2]);
}

static int json_num(kl_buf *b, double v) {
  return isfinite(v) ? kl__buf_printf(b, "%.17g", v) : kl__buf_puts(b, "null");
}

static int summary_json(kl_buf *b, const kl_observation *o,
                        const kl__obs_configs *c, double target) {
  kl__buf_puts(b, "{\"observation\": ");
  kl__buf_json_string(b, o->path);
  kl__buf_puts(b, ", \"device\": ");
  kl__buf_json_string(b, o->device);
  kl__buf_printf(b, ", \"exit_code\": %d, \"kernels\": [", o->exit_code);
  for (size_t k = 0; k < o->nkernels; k++) {
    kl__buf_puts(b, k ? ", {\"name\": " : "{\"name\": ");
    kl__buf_json_string(b, o->kernels[k].name);
    kl__buf_puts(b, ", \"demangled\": ");
    kl__buf_json_string(b, o->kernels[k].demangled);
    kl__buf_printf(b,
                   ", \"launches\": %" PRId64 ", \"recorded\": %" PRId64
                   ", \"total_us\": ",
                   o->kernels[k].launches, o->kernels[k].recorded);
    json_num(b, o->kernels[k].total_us);
    kl__buf_puts(b, "}");
  }
  kl__buf_puts(b, "]");
  ranking_json(b, o);
  kl__buf_puts(b, ", \"kernel\": ");
  kl__buf_json_string(b, o->kernels[c->kernel].name);
  kl__buf_puts(b, ", \"recorded_us\": ");
  json_num(b, c->recorded_us);
  kl__buf_printf(b,
                 ", \"untimed\": %" PRId64 ", \"target_share\": ", c->untimed);
  json_num(b, target);
  kl__buf_printf(b, ", \"kept\": %zu, \"kept_share\": ", c->nkept);
  json_num(b, c->kept_share);
  kl__buf_puts(b, ", \"cover\": {\"3\": ");
  json_num(b, kl__obs_cover(c, 3));
  kl__buf_puts(b, ", \"5\": ");
  json_num(b, kl__obs_cover(c, 5));
  kl__buf_puts(b, ", \"7\": ");
  json_num(b, kl__obs_cover(c, 7));
  kl__buf_puts(b, "}, \"configs\": [");
  for (size_t i = 0; i < c->nall; i++) {
    const kl__obs_config *f = &c->all[i];
    const kl__obs_launch *l = f->first;
    kl__buf_printf(b,
                   "%s{\"rank\": %zu, \"kept\": %s, \"half\": ", i ? ", " : "",
                   i + 1, i < c->nkept ? "true" : "false");
    kl__buf_json_string(b, *f->half ? f->half : NULL);
    kl__buf_printf(b,
                   ", \"launches\": %" PRId64 ", \"total_us\": ", f->launches);
    json_num(b, f->total_us);
    kl__buf_puts(b, ", \"share\": ");
    json_num(b, f->share);
    kl__buf_puts(b, ", \"p25_us\": ");
    json_num(b, f->p25);
    kl__buf_puts(b, ", \"p50_us\": ");
    json_num(b, f->p50);
    kl__buf_puts(b, ", \"p95_us\": ");
    json_num(b, f->p95);
    kl__buf_puts(b, ", ");
    json_dim3(b, "grid", l->grid);
    kl__buf_puts(b, ", ");
    json_dim3(b, "block", l->block);
    kl__buf_printf(b, ", \"shared_bytes\": %" PRId64 ", \"args\": ", l->shared);
    if (!l->args_known) kl__buf_puts(b, "null");
    for (size_t a = 0; l->args_known && a < l->nargs; a++) {
      const kl__obs_arg *g = &l->args[a];
      kl__buf_printf(b, "%s{\"size\": %u, \"pointer\": %s", a ? ", " : "[",
                     g->size, g->pointer ? "true" : "false");
      if (!g->pointer && integer_sized(g))
        kl__buf_printf(b, ", \"int\": %" PRId64, kl__obs_arg_i64(g));
      const kl__obs_kernel *kn = &o->kernels[c->kernel];
      if (a < kn->nparams && kn->param_names[a][0]) { /* --source */
        kl__buf_puts(b, ", \"name\": ");
        kl__buf_json_string(b, kn->param_names[a]);
        if (!g->pointer && kn->param_float[a] == g->size && g->size == 4) {
          uint32_t u = (uint32_t)kl__obs_arg_u64(g);
          float fv;
          memcpy(&fv, &u, 4);
          kl__buf_puts(b, ", \"float\": ");
          json_num(b, fv);
        } else if (!g->pointer && kn->param_float[a] == 8 && g->size == 8) {
          uint64_t u = kl__obs_arg_u64(g);
          double fv;
          memcpy(&fv, &u, 8);
          kl__buf_puts(b, ", \"float\": ");
          json_num(b, fv);
        }
      }
      kl__buf_puts(b, "}");
    }
    if (l->args_known) kl__buf_puts(b, l->nargs ? "]" : "[]");
    kl__buf_puts(b, "}");
  }
  kl__buf_puts(b, "]");
  python_kernels(b, o, true);
  kl__buf_puts(b, "}\n");
  return kl__buf_status(b);
}

int kl_observation_summary(kl_buf *out, const kl_observation *o,
                           const kl_configs_options *given,
                           const char *format) {
  kl_configs_options full;
  int taken = kl__configs_options_take(&full, given);
  if (taken < 0) return taken;
  const kl_configs_options *opts = &full;
  bool json = format && strcmp(format, "json") == 0;
  if (format && !json && strcmp(format, "text") != 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "unknown format '%s' (text or json)", format);
  kl__obs_configs c;
  int rc = kl__obs_configs_make(&c, o, opts);
  if (rc < 0) return rc;
  double target = opts->share > 0 ? opts->share : 0.9;
  rc = json ? summary_json(out, o, &c, target)
            : summary_text(out, o, &c, target);
  kl__obs_configs_dispose(&c);
  return rc;
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t configs_options_sizes[] = {0, sizeof(kl_configs_options)};

KL__OPTIONS_FUNCTIONS(kl_configs_options, kl_configs_options_init,
                      kl__configs_options_take, KL_CONFIGS_OPTIONS_INIT,
                      configs_options_sizes)
