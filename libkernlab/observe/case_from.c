/* kl_case_from_observation: a case whose shapes are what a real program
 * launched.
 *
 * The kernel's signature is read from its source (signature.c: the
 * entry's definition, comments blanked) and checked against the observed
 * arguments: same count, each size equal to its type's, pointers where the
 * driver saw addresses. Each representative configuration becomes a shape
 * holding the exact scalar values and the exact launch geometry (grid_x ..
 * block_z, smem, so a 2-D block stays 2-D); its weight is its launch count and
 * the objective total_time, so the case's score is the time those launches
 * take. A buffer's count is the observed allocation (bytes left from the
 * pointer) in elements: written as a product of integer scalars when one
 * matches at every shape, else as a per-shape value; either way marked for
 * the user to confirm, like the guessed role of each non-const buffer.
 *
 * The case's kernel.cu is the source up to the end of the entry's
 * definition (a `main` in it left out), so helpers above the kernel come
 * along and the program's host code does not. The written case is loaded
 * back and its launch geometry and scalars compared with the observation
 * for every shape: a case that would launch differently is an error. */
#define _GNU_SOURCE /* realpath */
#include <stddef.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "kernlab/expr.h"
#include "observe_internal.h"

#include "signature.h"

/* ---- the values of one configuration --------------------------------------
 */

static float half_to_float(uint16_t h, bool bf16) {
  if (bf16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0    ? ldexpf((float)m, -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : ldexpf((float)(m | 1024), e - 25);
  return (h & 0x8000) ? -v : v;
}

/* A scalar's value as exact expression text; false for NaN or infinity. */
static bool scalar_text(char *out, size_t n, const kl__obs_arg *a, kl_dtype t) {
  uint64_t u = kl__obs_arg_u64(a);
  double f;
  switch (t) {
  case KL_DTYPE_F32: {
    float x;
    uint32_t b = (uint32_t)u;
    memcpy(&x, &b, 4);
    f = x;
    break;
  }
  case KL_DTYPE_F64:
    memcpy(&f, &u, 8);
    break;
  case KL_DTYPE_F16:
  case KL_DTYPE_BF16:
    f = half_to_float((uint16_t)u, t == KL_DTYPE_BF16);
    break;
  case KL_DTYPE_U64:
  case KL_DTYPE_U32:
  case KL_DTYPE_U16:
  case KL_DTYPE_U8:
    snprintf(out, n, "%" PRIu64, u);
    return true;
  default: /* signed integers; check_args made the sizes agree */
    snprintf(out, n, "%" PRId64, kl__obs_arg_i64(a));
    return true;
  }
  if (!isfinite(f)) return false;
  snprintf(out, n, t == KL_DTYPE_F64 ? "%.17g" : "%.9g", f);
  return true;
}

/* ---- buffer counts ---------------------------------------------------------
 */

typedef struct shape_vals {
  const kl__obs_config *cfg;
  int64_t ints[64]; /* integer scalar values by param index (when scalar) */
} shape_vals;

/* A product of one to three integer scalars equal to `elements[s]` at every
 * shape, written to expr; false when none. */
static bool count_expression(char *expr, size_t n, const sig_param *ps,
                             size_t np, const shape_vals *sv, size_t ns,
                             const int64_t *elements) {
  size_t idx[64], ni = 0;
  for (size_t i = 0; i < np && i < 64; i++)
    if (!ps[i].pointer && !kl_dtype_is_float(ps[i].dtype)) idx[ni++] = i;
  for (size_t a = 0; a < ni; a++)
    for (size_t b = a; b <= ni; b++)
      for (size_t c = b; c <= ni; c++) {
        if ((b == ni) != (c == ni) && c != ni) continue;
        bool ok = true;
        for (size_t s = 0; s < ns && ok; s++) {
          int64_t v = sv[s].ints[idx[a]]; /* a product past 64 bits: no */
          if (b < ni && __builtin_mul_overflow(v, sv[s].ints[idx[b]], &v))
            ok = false;
          if (ok && c < ni && b < ni &&
              __builtin_mul_overflow(v, sv[s].ints[idx[c]], &v))
            ok = false;
          ok = ok && v == elements[s];
        }
        if (!ok) continue;
        snprintf(expr, n, "%s%s%s%s%s", ps[idx[a]].name, b < ni ? "*" : "",
                 b < ni ? ps[idx[b]].name : "", c < ni && b < ni ? "*" : "",
                 c < ni && b < ni ? ps[idx[c]].name : "");
        return true;
      }
  return false;
}

/* ---- writing the case -------------------------------------------------------
 */

/* The case's kernel.cu: the source up to the end of the entry's
 * definition, a `main` defined before it left out. */
/* ---- templates and namespaces ------------------------------------------ */

/* `types` (NAME=DTYPE, the user's) and each type parameter of the template
 * bound to the dtype its argument in `inst` names: "T=f32". */
static int bind_template(char ***out, const char *const *types,
                         char names[][64], size_t nnames, const char *inst,
                         const kl__src_types *st) {
  size_t nt = 0;
  while (types && types[nt])
    nt++;
  char **all = kl__calloc(nt + nnames + 1, sizeof *all);
  if (!all) return kl__error_oom();
  size_t k = 0;
  for (size_t i = 0; i < nt; i++)
    all[k++] = (char *)types[i];
  const char *lt = strchr(inst, '<');
  char args[32][128];
  size_t na = lt ? kl__c_split_items(args, 32, lt + 1, strlen(lt + 1) - 1) : 0;
  for (size_t i = 0; i < nnames && i < na; i++) {
    kl_dtype dt;
    int stars = 0;
    bool is_const = false;
    if (!names[i][0] ||
        !kl__sig_resolve_type(args[i], &dt, &stars, &is_const, st, types) ||
        stars)
      continue;
    char bound[96];
    snprintf(bound, sizeof bound, "%.63s=%.16s", names[i], kl_dtype_name(dt));
    if (!(all[k++] = kl__strdup(bound))) {
      *out = all;
      return kl__error_oom();
    }
  }
  *out = all;
  return 0;
}

static void bound_free(char **all, const char *const *types) {
  size_t nt = 0;
  while (types && types[nt])
    nt++;
  for (size_t i = nt; all && all[i]; i++)
    kl__free(all[i]);
  kl__free(all);
}

/* The instantiation each kept configuration launched, spelled as a case
 * spells an entry ("ns::kern<float, 128>"; the given name for a kernel
 * with no C++ name), and the case's entry: that, or when shapes differ
 * the function they instantiate. */
static int instantiations(char (*inst)[256], char *entry, size_t n,
                          bool *per_shape, const kl__obs_configs *cs,
                          const kl_observation *o, const char *given) {
  *per_shape = false;
  for (size_t s = 0; s < cs->nkept; s++) {
    const kl__obs_kernel *k = &o->kernels[cs->all[s].first->kernel];
    if (!k->demangled)
      snprintf(inst[s], 256, "%s", given);
    else if (!kl__c_call_name(inst[s], 256, k->demangled) ||
             !kl__c_entry_valid(inst[s]))
      return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_NONE,
                       "%s: kernel '%s' is not a function a case can name "
                       "as its entry",
                       o->path, k->demangled);
    if (s && strcmp(inst[s], inst[0]) != 0) *per_shape = true;
  }
  if (!*per_shape) {
    snprintf(entry, n, "%s", cs->nkept ? inst[0] : given);
    return 0;
  }
  char *fn = kl__c_entry_function(inst[0]);
  if (!fn) return kl__error_oom();
  snprintf(entry, n, "%s", fn);
  kl__free(fn);
  return 0;
}

static int kernel_text(kl_buf *out, const char *src, const char *clean,
                       size_t end) {
  size_t ms = 0, mo = 0, me = 0;
  if (kl__c_definition_span(clean, "main", &ms, &mo, &me) == 0 && me <= end) {
    kl__buf_put(out, src, ms);
    kl__buf_puts(out, "/* (the program's main was left out) */");
    kl__buf_put(out, src + me, end - me);
  } else {
    kl__buf_put(out, src, end);
  }
  kl__buf_puts(out, "\n");
  for (int i = kl__c_scopes(clean, end, NULL, 0); i > 0; i--)
    kl__buf_puts(out, "} /* closed by kernlab: the rest of the source was "
                      "left out */\n");
  return kl__buf_status(out);
}

static const char *geometry_keys[7] = {
    "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "smem"};

/* No parameter name is reserved. The shapes' geometry values get a prefix
 * that no parameter has ("", "kl_", "kl_launch_", ...), and a scalar
 * called like a shape's own key (name, weight, values, entry) makes every shape
 * give its values under `values:` (docs/case-format.md). */
static void shape_naming(const sig_param *ps, size_t np, char *prefix, size_t n,
                         bool *escape) {
  static const char *const prefixes[] = {"", "kl_", "kl_launch_", "klx_"};
  *escape = false;
  for (size_t i = 0; i < np; i++)
    if (!ps[i].pointer &&
        (strcmp(ps[i].name, "name") == 0 || strcmp(ps[i].name, "weight") == 0 ||
         strcmp(ps[i].name, "values") == 0 || strcmp(ps[i].name, "entry") == 0))
      *escape = true;
  for (size_t k = 0; k < KL_ARRAY_SIZE(prefixes); k++) {
    bool clash = false;
    for (size_t i = 0; i < np && !clash; i++)
      for (size_t g = 0; g < 7 && !clash; g++) {
        size_t pl = strlen(prefixes[k]);
        clash = strncmp(ps[i].name, prefixes[k], pl) == 0 &&
                strcmp(ps[i].name + pl, geometry_keys[g]) == 0;
      }
    snprintf(prefix, n, "%s", prefixes[k]);
    if (!clash) return;
  }
}

/* Param p's value in launch l: the argument itself, or the bytes of a
 * struct's field (an address where the observation found one there). */
static kl__obs_arg leaf(const kl__obs_launch *l, const sig_arg *as,
                        const sig_param *p) {
  const kl__obs_arg *a = &l->args[p->arg];
  if (!as[p->arg].is_struct) return *a;
  kl__obs_arg v = {0};
  v.size = p->pointer ? 8 : (uint32_t)kl_dtype_size(p->dtype);
  v.bytes = a->bytes && p->at + v.size <= a->size ? a->bytes + p->at : NULL;
  for (size_t w = 0; w < a->nwords; w++)
    if (a->word_at[w] == p->at) {
      v.pointer = true;
      v.alloc_left = a->word_left[w];
    }
  return v;
}

/* Observed arguments against the signature: count, sizes, pointers (a
 * struct's by its layout). */
static int check_args(const kl__obs_launch *l, const signature *g,
                      const char *path, int line, const char *obs) {
  if (!l->args_known)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s: the arguments of this kernel were not recorded", obs);
  if (l->nargs != g->na)
    return kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, path, line, 1, NULL,
                        "the definition has %zu parameters; the observed "
                        "launches passed %zu arguments",
                        g->na, l->nargs);
  for (size_t i = 0; i < g->na; i++) {
    const sig_arg *a = &g->as[i];
    if (a->is_struct &&
        (l->args[i].size != a->size || !l->args[i].bytes || l->args[i].pointer))
      return kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, path, line, 1, NULL,
                          "parameter '%s' (struct %s) takes %u bytes as its "
                          "members are laid out; the observed argument %zu "
                          "had %u",
                          a->name, a->type, a->size, i + 1, l->args[i].size);
  }
  for (size_t i = 0; i < g->np; i++) {
    const sig_param *p = &g->ps[i];
    kl__obs_arg v = leaf(l, g->as, p);
    size_t want = p->pointer ? 8 : kl_dtype_size(p->dtype);
    if (v.size != want || !v.bytes)
      return kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, path, line, 1, NULL,
                          "parameter '%s' (%s) takes %zu bytes; the observed "
                          "argument %zu had %u",
                          p->name, p->type, want, p->arg + 1, v.size);
    if (p->pointer != v.pointer)
      return kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, path, line, 1, NULL,
                          p->pointer
                              ? "parameter '%s' is a pointer, but the observed "
                                "value was not an address the driver knew"
                              : "parameter '%s' is a scalar, but the observed "
                                "value was a device address",
                          p->name);
  }
  return 0;
}

/* The per-shape value a buffer's count is when no product of scalars
 * gives it: `out_count`, `p_out_count` for a struct's field p.out. */
static void count_name(char *out, size_t n, const sig_param *p) {
  snprintf(out, n, "%s_count", p->name);
  for (char *q = out; *q; q++)
    if (*q == '.') *q = '_';
}

typedef struct writer {
  const kl_observation *o;
  const kl_case_from_observation_options *opts;
  const kl__obs_configs *cs;
  const sig_param *ps;
  size_t np;
  const sig_arg *as;
  size_t na;
  shape_vals *sv;
  int64_t (*elements)[64]; /* [shape][param] */
  kl_buf *report;
  char geo[16];      /* the geometry values' prefix */
  bool escape;       /* values under `values:` */
  const char *entry; /* the case's kernel.entry */
  char (*inst)[256]; /* [shape]: the instantiation it launched */
  bool per_shape;    /* shapes launch different instantiations */
  const char *name;  /* the case's name: the entry's own name */
  const kl__src_types *st;
} writer;

/* How the case links a library the program had mapped: its name
 * (cublasLt for .../libcublasLt.so.13) when the CUDA toolkit's own
 * library folder has it, where nvcc finds it; else the file itself. */
static void put_library(kl_buf *y, const char *path, const char *toolkit) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *so = strstr(base, ".so");
  size_t n = so && strncmp(base, "lib", 3) == 0 ? (size_t)(so - base) : 0;
  bool ours = false;
  if (n > 3 && toolkit) {
    kl_buf f = KL_BUF_INIT;
    kl__buf_printf(&f, "%s/%.*s.so", toolkit, (int)n, base);
    ours = f.ptr && kl__is_file(f.ptr);
    kl_buf_dispose(&f);
  }
  if (ours)
    kl__buf_printf(y, "%.*s", (int)(n - 3), base + 3);
  else
    kl__buf_json_string(y, path);
}

/* target: the observed device's architecture, the program's defines, the
 * CUDA libraries it had mapped (its kernels' source may call them: llm.c's
 * common.h calls cuBLAS) and the include folders a header was found in. */
static void yaml_target(kl_buf *y, const writer *w) {
  bool arch = w->o->cc && strlen(w->o->cc) == 3 && w->o->cc[1] == '.';
  bool dirs = false;
  for (size_t i = 0; w->opts->include_dirs && w->opts->include_dirs[i]; i++)
    dirs |= kl__src_types_dir_used(w->st, i);
  if (!arch && !w->o->nlibraries && !dirs) return;
  kl__buf_puts(y, "target:\n");
  if (arch) kl__buf_printf(y, "  arch: sm_%c%c\n", w->o->cc[0], w->o->cc[2]);
  if (w->opts->defines && w->opts->defines[0]) {
    kl__buf_puts(y, "  flags: [-O3, -lineinfo");
    for (size_t i = 0; w->opts->defines[i]; i++)
      kl__buf_printf(y, ", \"-D%s\"", w->opts->defines[i]);
    kl__buf_puts(y, "]\n");
  }
  if (w->o->nlibraries) {
    char *toolkit = kl__tool_lib_dir("nvcc");
    kl__buf_puts(y, "  # the CUDA libraries the program had loaded\n  libs: [");
    for (size_t i = 0; i < w->o->nlibraries; i++) {
      if (i) kl__buf_puts(y, ", ");
      put_library(y, w->o->libraries[i], toolkit);
    }
    kl__buf_puts(y, "]\n");
    kl__free(toolkit);
  }
  if (dirs) {
    kl__buf_puts(y, "  include: [");
    bool first = true;
    for (size_t i = 0; w->opts->include_dirs[i]; i++) {
      if (!kl__src_types_dir_used(w->st, i)) continue;
      char real[4096];
      const char *d = w->opts->include_dirs[i];
      kl__buf_puts(y, first ? "" : ", ");
      kl__buf_json_string(y, realpath(d, real) ? real : d);
      first = false;
    }
    kl__buf_puts(y, "]\n");
  }
}

static int yaml_case(kl_buf *y, const writer *w) {
  const kl__obs_kernel *k = &w->o->kernels[w->cs->kernel];
  size_t ns = w->cs->nkept;
  kl__buf_printf(
      y,
      "# Made by kl case from-observation from %s: the %zu launch "
      "configurations\n# of %s%s that cover %.1f%% of its recorded GPU time.\n"
      "# Lines marked 'confirm' are guesses: check them before trusting a "
      "result.\nkernlab: 1\nname: %s\nbackend: cuda\n",
      w->o->path, ns,
      w->per_shape   ? w->entry
      : k->demangled ? k->demangled
                     : k->name,
      w->per_shape ? " (each shape its instantiation)" : "",
      100 * w->cs->kept_share, w->name);
  yaml_target(y, w);
  const char *g = w->geo;
  const char *quote = kl__is_ident(w->entry) ? "" : "\"";
  kl__buf_printf(y,
                 "kernel:\n  source: kernel.cu\n  entry: %s%s%s\n  launch:\n"
                 "    grid: [%sgrid_x, %sgrid_y, %sgrid_z]\n"
                 "    block: [%sblock_x, %sblock_y, %sblock_z]\n"
                 "    shared_bytes: %ssmem\nparams:\n",
                 quote, w->entry, quote, g, g, g, g, g, g, g);
  kl_buf roof = KL_BUF_INIT;
  bool allocations = false; /* a count that is an allocation's size */
  for (size_t i = 0; i < w->np; i++) {
    const sig_param *p = &w->ps[i];
    const sig_arg *a = &w->as[p->arg];
    const char *dt = kl_dtype_name(p->dtype);
    /* a struct's fields are listed under it, by their own names */
    const char *in = a->is_struct ? "    " : "";
    const char *own = a->is_struct ? p->name + strlen(a->name) + 1 : p->name;
    if (a->is_struct && i == a->first)
      kl__buf_printf(y,
                     "  - name: %s\n    type: %s  # passed by value\n"
                     "    fields:\n",
                     a->name, a->type);
    if (!p->pointer) {
      kl__buf_printf(y, "%s  - { name: %s, type: %s }\n", in, own, dt);
      continue;
    }
    int64_t el[256];
    for (size_t s = 0; s < ns && s < 256; s++)
      el[s] = w->elements[s][i];
    char expr[256];
    bool product =
        count_expression(expr, sizeof expr, w->ps, w->np, w->sv, ns, el);
    if (!product) count_name(expr, sizeof expr, p);
    const char *role = p->is_const ? "input" : "inout";
    kl__buf_printf(y,
                   "%s  - { name: %s, type: %s*, role: %s, count: %s }"
                   "  # confirm: %s%s\n",
                   in, own, dt, role, expr,
                   product ? "the allocation held exactly this many "
                             "elements at every shape"
                           : "the allocation's size at each shape (the "
                             "kernel may use fewer)",
                   p->is_const ? ""
                               : "; role guessed (inout: read "
                                 "and written; output if only "
                                 "written)");
    kl__buf_printf(&roof, "%s%zu*(%s)", roof.size ? " + " : "",
                   kl_dtype_size(p->dtype), expr);
    if (!product) allocations = true;
  }
  kl__buf_puts(y, "shapes:\n");
  for (size_t s = 0; s < ns; s++) {
    const kl__obs_config *f = w->sv[s].cfg;
    const kl__obs_launch *l = f->first;
    kl__buf_printf(
        y, "  # %.1f%% of the time, %" PRId64 " launches, p50 %.2f us%s%s\n",
        100 * f->share, f->launches, f->p50, *f->half ? ", the " : "",
        *f->half ? (strcmp(f->half, "fast") == 0 ? "fast half of a wide bucket"
                                                 : "slow half of a wide bucket")
                 : "");
    kl__buf_printf(y, "  - { name: obs%zu, weight: %" PRId64, s + 1,
                   f->launches > 0 ? f->launches : 1);
    if (w->per_shape) kl__buf_printf(y, ", entry: \"%s\"", w->inst[s]);
    kl__buf_puts(y, w->escape ? ", values: {" : "");
    const int64_t geo[7] = {l->grid[0],  l->grid[1],  l->grid[2], l->block[0],
                            l->block[1], l->block[2], l->shared};
    for (size_t q = 0; q < 7; q++)
      kl__buf_printf(y, "%s%s%s: %" PRId64, w->escape && q == 0 ? " " : ", ",
                     w->geo, geometry_keys[q], geo[q]);
    for (size_t i = 0; i < w->np; i++) {
      const sig_param *p = &w->ps[i];
      if (p->pointer) continue;
      char v[64];
      kl__obs_arg x = leaf(l, w->as, p);
      scalar_text(v, sizeof v, &x, p->dtype);
      kl__buf_printf(y, ", %s: %s", p->name, v);
    }
    kl__buf_puts(y, w->escape ? " } }\n" : " }\n");
  }
  kl__buf_puts(y, "reference: { kind: baseline }\n");
  /* bytes summed over allocations larger than what the kernel touches would
   * make the roofline gate call an honest kernel too fast: no roofline
   * then, until the counts are confirmed */
  if (roof.size && !allocations)
    kl__buf_printf(y,
                   "roofline: { bytes: \"%s\" }  # confirm: every "
                   "buffer moved once\n",
                   roof.ptr);
  else if (roof.size)
    kl__buf_printf(y,
                   "# roofline: { bytes: \"%s\" }  # left out: some counts "
                   "are allocation sizes, which may exceed what the kernel "
                   "moves (the roofline gate would read an honest kernel as "
                   "too fast); confirm the counts, then add it\n",
                   roof.ptr);
  kl__buf_puts(y, "objective: total_time\n");
  int rc = kl__buf_status(&roof);
  kl_buf_dispose(&roof);
  return rc < 0 ? rc : kl__buf_status(y);
}

/* Per-shape `<buffer>_count` values, added to each shape line (yaml_case
 * wrote the counts' names; a product needs none). */
static int add_count_values(kl_buf *y, const writer *w) {
  size_t ns = w->cs->nkept;
  for (size_t i = w->np; i-- > 0;) { /* each goes first: param order */
    const sig_param *p = &w->ps[i];
    if (!p->pointer) continue;
    char count[80], name[96];
    count_name(count, sizeof count, p);
    snprintf(name, sizeof name, "count: %s ", count);
    if (!strstr(y->ptr, name)) continue;
    for (size_t s = 0; s < ns; s++) {
      char shape[32], add[128];
      snprintf(shape, sizeof shape, "name: obs%zu,", s + 1);
      snprintf(add, sizeof add, " %s: %" PRId64 ",", count, w->elements[s][i]);
      char *at = strstr(y->ptr, shape);
      if (!at) continue;
      size_t off = (size_t)(at - y->ptr) + strlen(shape);
      kl_buf n = KL_BUF_INIT;
      kl__buf_put(&n, y->ptr, off);
      kl__buf_puts(&n, add);
      kl__buf_puts(&n, y->ptr + off);
      int rc = kl__buf_status(&n);
      if (rc < 0) return rc;
      kl__buf_give(y, &n);
    }
  }
  return 0;
}

/* Shape s of the written case launches as observed, with the observed
 * scalars. */
static int check_shape(const kl_case *c, const writer *w, size_t s) {
  const kl__obs_launch *l = w->sv[s].cfg->first;
  kl_launch got;
  int rc = kl_case_launch(&got, c, s);
  if (rc < 0) return rc;
  for (int d = 0; d < 3; d++)
    if (got.grid[d] != l->grid[d] || got.block[d] != l->block[d])
      return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                       "%s: shape obs%zu launches grid [%" PRId64 ",%" PRId64
                       ",%" PRId64 "] block [%" PRId64 ",%" PRId64 ",%" PRId64
                       "], observed grid [%" PRId64 ",%" PRId64 ",%" PRId64
                       "] block [%" PRId64 ",%" PRId64 ",%" PRId64 "]",
                       kl_case_path(c), s + 1, got.grid[0], got.grid[1],
                       got.grid[2], got.block[0], got.block[1], got.block[2],
                       l->grid[0], l->grid[1], l->grid[2], l->block[0],
                       l->block[1], l->block[2]);
  if (got.shared_bytes != l->shared)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                     "%s: shape obs%zu has %" PRId64 " shared bytes, "
                     "observed %" PRId64,
                     kl_case_path(c), s + 1, got.shared_bytes, l->shared);
  for (size_t i = 0; i < w->np; i++) {
    if (w->ps[i].pointer) continue;
    kl_value v;
    char want[64], have[64];
    if ((rc = kl_case_scalar_value(&v, c, i, s)) < 0) return rc;
    kl__obs_arg x = leaf(l, w->as, &w->ps[i]);
    scalar_text(want, sizeof want, &x, w->ps[i].dtype);
    if (v.is_int)
      snprintf(have, sizeof have, "%" PRId64, v.i);
    else
      snprintf(have, sizeof have,
               w->ps[i].dtype == KL_DTYPE_F64 ? "%.17g" : "%.9g",
               w->ps[i].dtype == KL_DTYPE_F64 ? v.f : (double)(float)v.f);
    if (strcmp(want, have) != 0)
      return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                       "%s: shape obs%zu gives %s = %s, observed %s",
                       kl_case_path(c), s + 1, w->ps[i].name, have, want);
  }
  return 0;
}

/* The written case launches as observed at every shape. */
static int cross_check(const char *dir, const writer *w) {
  kl_case *c = NULL;
  int rc = kl_case_load(&c, dir, NULL);
  for (size_t s = 0; rc == 0 && s < w->cs->nkept; s++)
    rc = check_shape(c, w, s);
  kl_case_free(c);
  return rc;
}

/* Shape s's element counts and integer scalars, from its first launch. */
static int shape_values(shape_vals *sv, int64_t *elements,
                        const kl__obs_launch *l, const signature *g,
                        const kl_observation *o) {
  const sig_param *ps = g->ps;
  for (size_t i = 0; i < g->np; i++) {
    char v[64];
    kl__obs_arg x = leaf(l, g->as, &ps[i]);
    if (ps[i].pointer) {
      elements[i] = (int64_t)(x.alloc_left / kl_dtype_size(ps[i].dtype));
      if (elements[i] < 1)
        return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                         "%s: '%s' pointed at less than one element", o->path,
                         ps[i].name);
    } else if (!scalar_text(v, sizeof v, &x, ps[i].dtype)) {
      return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                       "%s: scalar '%s' was not a finite number", o->path,
                       ps[i].name);
    } else if (!kl_dtype_is_float(ps[i].dtype)) {
      sv->ints[i] = strtoll(v, NULL, 10);
    }
  }
  return 0;
}

/* The local headers the source includes, copied to the same place
 * relative to the case's kernel.cu. */
static int copy_headers(const char *dir, const char *source,
                        const kl__src_types *st) {
  char *from_dir = kl__path_dir(source);
  int rc = from_dir ? 0 : kl__error_oom();
  for (size_t i = 0; rc == 0 && i < kl__src_types_include_count(st); i++) {
    const char *rel = kl__src_types_include(st, i);
    char *from = kl__path_join(from_dir, rel), *to = kl__path_join(dir, rel);
    char *to_dir = to ? kl__path_dir(to) : NULL;
    kl_buf text = KL_BUF_INIT;
    if (!from || !to || !to_dir) rc = kl__error_oom();
    if (rc == 0) rc = kl__mkdir_p(to_dir);
    if (rc == 0) rc = kl__read_file(&text, from);
    if (rc == 0)
      rc = kl__write_new_file(to, text.ptr ? text.ptr : "", text.size);
    kl_buf_dispose(&text);
    kl__free(from);
    kl__free(to);
    kl__free(to_dir);
  }
  kl__free(from_dir);
  return rc;
}

/* The entry's signature with each template type parameter bound as the
 * observed instantiations bind it: one set of types for every shape, or an
 * error naming two instantiations that differ. */
static int typed_signature(signature *g, const char *params, const char *decl,
                           size_t decl_len, char (*inst)[256], size_t ns,
                           const kl_case_from_observation_options *opts,
                           int line, const kl__src_types *st) {
  char names[32][64];
  size_t nn = kl__c_template_types(names, 32, decl, decl_len);
  int rc = 0;
  memset(g, 0, sizeof *g);
  for (size_t s = 0; rc == 0 && s < (ns ? ns : 1); s++) {
    if (s && strcmp(inst[s], inst[s - 1]) == 0) continue;
    char **types = NULL;
    signature other = {0};
    rc = bind_template(&types, opts->types, names, nn, ns ? inst[s] : "", st);
    if (rc == 0)
      rc = kl__sig_parse(s ? &other : g, params, opts->source, line, st,
                         (const char *const *)types);
    bound_free(types, opts->types);
    for (size_t i = 0; rc == 0 && s && i < other.np && i < g->np; i++)
      if (other.ps[i].dtype != g->ps[i].dtype)
        rc = kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, opts->source, line, 1,
                          NULL,
                          "parameter '%s' is %s in %s but %s in %s: make a "
                          "case of one instantiation (--entry '%s')",
                          g->ps[i].name, kl_dtype_name(g->ps[i].dtype), inst[0],
                          kl_dtype_name(other.ps[i].dtype), inst[s], inst[0]);
    kl__sig_dispose(&other);
  }
  size_t *np = &g->np;
  if (rc == 0 && *np > 64)
    rc = kl__error(KL_EINVALID, KL_DOMAIN_CASE, "%s: more than 64 parameters",
                   opts->source);
  return rc;
}

static int make_case(const kl_observation *o,
                     const kl_case_from_observation_options *opts,
                     kl_buf *report, const char *src, size_t src_len) {
  char *clean = kl__c_blank(src, src_len, false);
  char *params = NULL;
  size_t start = 0, open = 0, end = 0, ns = 0;
  signature g = {0};
  kl__obs_configs cs = {0};
  shape_vals *sv = NULL;
  int64_t(*elements)[64] = NULL;
  kl__src_types *st = NULL;
  char(*inst)[256] = NULL;
  char entry[256], *name = NULL;
  bool per_shape = false;
  kl_buf yaml = KL_BUF_INIT, kernel = KL_BUF_INIT, brief = KL_BUF_INIT;
  int rc = clean ? kl__c_definition_params(&params, clean, opts->entry)
                 : kl__error_oom();
  if (rc < 0) goto done;
  if (!params ||
      kl__c_definition_span(clean, opts->entry, &start, &open, &end) < 0) {
    rc = kl__error(KL_ENOTFOUND, KL_DOMAIN_CASE, "%s: no definition of '%s'",
                   opts->source, opts->entry);
    goto done;
  }
  int line = kl__sig_line_of(src, open);
  kl_configs_options co = opts->configs;
  co.version = KL_CONFIGS_OPTIONS_VERSION;
  if (!co.kernel) co.kernel = opts->entry;
  if ((rc = kl__src_types_read(&st, opts->source, opts->defines,
                               opts->include_dirs)) < 0 ||
      (rc = kl__obs_configs_make(&cs, o, &co)) < 0)
    goto done;
  ns = cs.nkept;
  if (ns > 256) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE, "at most 256 shapes");
    goto done;
  }
  if (!(sv = kl__calloc(ns ? ns : 1, sizeof *sv)) ||
      !(elements = kl__calloc(ns ? ns : 1, sizeof *elements)) ||
      !(inst = kl__calloc(ns ? ns : 1, sizeof *inst))) {
    rc = kl__error_oom();
    goto done;
  }
  if ((rc = instantiations(inst, entry, sizeof entry, &per_shape, &cs, o,
                           opts->entry)) < 0 ||
      (rc = typed_signature(&g, params, clean + start, open - start, inst, ns,
                            opts, line, st)) < 0)
    goto done;
  for (size_t s = 0; s < ns; s++) {
    const kl__obs_launch *l = cs.all[s].first;
    sv[s].cfg = &cs.all[s];
    if ((rc = check_args(l, &g, opts->source, line, o->path)) < 0 ||
        (rc = shape_values(&sv[s], elements[s], l, &g, o)) < 0)
      goto done;
  }
  if (!(name = kl__c_entry_name(entry))) {
    rc = kl__error_oom();
    goto done;
  }
  writer w = {o,      opts, &cs,   g.ps,  g.np, g.as,      g.na, sv, elements,
              report, "",   false, entry, inst, per_shape, name, st};
  shape_naming(g.ps, g.np, w.geo, sizeof w.geo, &w.escape);
  kernel_text(&kernel, src, clean, end);
  kl__buf_printf(&brief,
                 "# %s, from a real program\n\nMade from the observation "
                 "%s of `%s` and the source %s. The shapes are the "
                 "program's own launch configurations (scalars and "
                 "geometry exact); the buffer sizes and roles marked "
                 "'confirm' in case.yaml are inferred.\n",
                 opts->entry, o->path, o->program ? o->program : "?",
                 opts->source);
  if ((rc = yaml_case(&yaml, &w)) < 0 ||
      (rc = add_count_values(&yaml, &w)) < 0 ||
      (rc = kl__buf_status(&kernel)) < 0 || (rc = kl__buf_status(&brief)) < 0)
    goto done;
  if (mkdir(opts->dir, 0777) < 0) {
    rc = kl__error_os(errno == EEXIST ? KL_EEXISTS : KL_EIO, opts->dir,
                      "cannot create the case folder");
    goto done;
  }
  if ((rc = kl__obs_write_new(opts->dir, "case.yaml", yaml.ptr, yaml.size)) <
          0 ||
      (rc = kl__obs_write_new(opts->dir, "kernel.cu", kernel.ptr,
                              kernel.size)) < 0 ||
      (rc = kl__obs_write_new(opts->dir, "program.md", brief.ptr, brief.size)) <
          0 ||
      (rc = copy_headers(opts->dir, opts->source, st)) < 0 ||
      (rc = cross_check(opts->dir, &w)) < 0 || !report)
    goto done;
  kl__buf_printf(report,
                 "wrote %s: %zu shape%s covering %.1f%% of %s's recorded "
                 "GPU time (K=3/5/7 would cover %.1f/%.1f/%.1f%%); its "
                 "launch geometry and scalars match the observation at "
                 "every shape\nconfirm in %s/case.yaml: the lines marked "
                 "'confirm' (buffer counts and roles)\n",
                 opts->dir, ns, ns == 1 ? "" : "s", 100 * cs.kept_share,
                 opts->entry, 100 * kl__obs_cover(&cs, 3),
                 100 * kl__obs_cover(&cs, 5), 100 * kl__obs_cover(&cs, 7),
                 opts->dir);
  rc = kl__buf_status(report);
done:
  kl_buf_dispose(&yaml);
  kl_buf_dispose(&kernel);
  kl_buf_dispose(&brief);
  kl__free(inst);
  kl__free(name);
  kl__free(sv);
  kl__free(elements);
  kl__obs_configs_dispose(&cs);
  kl__src_types_free(st);
  kl__sig_dispose(&g);
  kl__free(params);
  kl__free(clean);
  return rc;
}

static bool is_python_file(const char *path) {
  size_t n = strlen(path);
  return n > 3 && strcmp(path + n - 3, ".py") == 0;
}

int kl_case_from_observation(kl_buf *report, const kl_observation *o,
                             const kl_case_from_observation_options *given) {
  kl_case_from_observation_options full;
  int taken = kl__case_from_observation_options_take(&full, given);
  if (taken < 0) return taken;
  const kl_case_from_observation_options *opts = &full;
  if (o && given && opts->entry && opts->dir &&
      kl__obs_has_python(o, opts->entry) &&
      (!opts->source || is_python_file(opts->source))) {
    struct stat sp;
    if (stat(opts->dir, &sp) == 0)
      return kl__error(KL_EEXISTS, KL_DOMAIN_NONE, "%s: already exists",
                       opts->dir);
    return kl__case_from_python(report, o, opts);
  }
  if (o && opts->source && is_python_file(opts->source))
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                     "%s holds no Triton call of '%s': kl observe records a "
                     "Python program's @triton.jit calls (python_launches)",
                     o->path, opts->entry ? opts->entry : "?");
  if (!o || !given || !opts->entry || !opts->dir)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "a case from an observation needs the entry and the "
                     "folder to write");
  if (!opts->source)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s holds no Triton call of '%s': a CUDA kernel's case "
                     "needs its source (--source FILE.cu)",
                     o->path, opts->entry);
  if (!kl__c_entry_valid(opts->entry))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "'%s': the entry must be a function name (maybe "
                     "qualified, maybe with template arguments)",
                     opts->entry);
  struct stat sb;
  if (stat(opts->dir, &sb) == 0)
    return kl__error(KL_EEXISTS, KL_DOMAIN_NONE, "%s: already exists",
                     opts->dir);
  kl_buf src = KL_BUF_INIT;
  int rc = kl__read_file(&src, opts->source);
  if (rc == 0)
    rc = make_case(o, opts, report, src.ptr ? src.ptr : "", src.size);
  kl_buf_dispose(&src);
  return rc;
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t case_from_observation_options_sizes[] = {
    0, offsetof(kl_case_from_observation_options, defines),
    offsetof(kl_case_from_observation_options, include_dirs),
    sizeof(kl_case_from_observation_options)};

KL__OPTIONS_FUNCTIONS(kl_case_from_observation_options,
                      kl_case_from_observation_options_init,
                      kl__case_from_observation_options_take,
                      KL_CASE_FROM_OBSERVATION_OPTIONS_INIT,
                      case_from_observation_options_sizes)
