/* The harness generator (host backend).
 *
 * Output, in order: a header comment; the plugin ABI (kernlab/plugin.h,
 * verbatim, so a standalone file needs nothing but libc); the tunables'
 * baseline values as overridable defines; for a standalone candidate whose
 * oracle is the baseline, the baseline with every top-level name renamed
 * (its includes hoisted, its macros undone after it); the host
 * reference, if the case has one; the KERNEL SECTION (the candidate
 * verbatim, under #line 1 "<its name>"); the case's tables, evaluated by the
 * loader for every shape; the typed calls; the frozen runtime
 * (host_runtime.inc, verbatim). Nothing depends on time or the machine, so
 * the same inputs give the same bytes (golden files test this). */
#include <stdio.h>
#include <string.h>

#include "../case/case_view.h"
#include "kernlab/harness.h"
#include "kernlab/plugin.h"

/* Generated at build time from host_runtime.inc and kernlab/plugin.h. */
#include "embedded_plugin_h.h"
#include "embedded_runtime_common.h"
#include "embedded_cuda_probes.h"
#include "embedded_runtime_cuda.h"
#include "embedded_runtime_host.h"

/* The caller's options, whatever their version, over this library's
 * defaults: KL__OPTIONS_FUNCTIONS defines it at the end of this file, the
 * only one that takes them. */
int kl__harness_options_take(kl_harness_options *full,
                             const kl_harness_options *given);

/* The C type of a dtype in the generated code. Host harnesses see 16-bit
 * floats as raw storage (void *); CUDA harnesses as CUDA's own types. */
static const char *ctype(kl_dtype t, kl_backend backend) {
  switch (t) {
  case KL_DTYPE_F64:
    return "double";
  case KL_DTYPE_F32:
    return "float";
  case KL_DTYPE_F16:
    return backend == KL_BACKEND_CUDA ? "__half" : "void";
  case KL_DTYPE_BF16:
    return backend == KL_BACKEND_CUDA ? "__nv_bfloat16" : "void";
  case KL_DTYPE_I64:
    return "int64_t";
  case KL_DTYPE_I32:
    return "int32_t";
  case KL_DTYPE_I16:
    return "int16_t";
  case KL_DTYPE_I8:
    return "int8_t";
  case KL_DTYPE_U64:
    return "uint64_t";
  case KL_DTYPE_U32:
    return "uint32_t";
  case KL_DTYPE_U16:
    return "uint16_t";
  case KL_DTYPE_U8:
    return "uint8_t";
  default:
    return NULL;
  }
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* A file's text between #line markers, so diagnostics name the file. */
/* Sections, numbered for their #include guards (kl__c_include_once): a
 * header is included by the first section that includes it, and only
 * there, whether or not it has a guard of its own. */
enum {
  SECTION_VERBATIM,
  SECTION_HOISTED,
  SECTION_BASELINE,
  SECTION_REFERENCE,
  SECTION_KERNEL
};

/* A source that is a whole program (PolyBench's, llm.c's dev/cuda files)
 * defines main, which the standalone harness defines too: the section's
 * own is renamed klh_section<N>_main while it is pasted. */
static int emit_section(kl_buf *b, const char *title, const char *name,
                        const char *text, int section) {
  bool has_main = false;
  if (section != SECTION_VERBATIM && kl__c_defines(&has_main, text, "main") < 0)
    return kl__error_oom();
  kl__buf_printf(b, "\n/* ==== %s ==== */\n", title);
  if (has_main)
    kl__buf_printf(b, "#define main klh_section%d_main /* its own */\n",
                   section);
  kl__buf_printf(b, "#line 1 \"%s\"\n", name);
  if (section == SECTION_VERBATIM)
    kl__buf_puts(b, text);
  else if (kl__c_include_once(b, text, name, section) < 0)
    return kl__error_oom();
  if (text[0] && text[strlen(text) - 1] != '\n') kl__buf_putc(b, '\n');
  if (has_main) kl__buf_puts(b, "#undef main\n");
  kl__buf_printf(b, "/* ==== END %s ==== */\n", title);
  return kl__buf_status(b);
}

/* How a generated wrapper calls its function. */
typedef enum call_kind {
  CALL_PLAIN,    /* a host function: the host reference */
  CALL_HOST,     /* a host kernel, called once */
  CALL_GEOMETRY, /* a CUDA kernel at the case's launch geometry */
  CALL_LAUNCHER  /* the section's own launcher, with the context */
} call_kind;

/* One buffer or scalar param as the call's argument (or a field's value). */
static void emit_value(kl_buf *b, const kl_case *c, size_t p, bool array) {
  const case_param *pa = &kl__case_params(c)[p];
  const char *t = ctype(pa->dtype, kl_case_backend(c));
  if (pa->is_pointer && array)
    kl__buf_printf(b, "(void *)b[%zu]", p);
  else if (pa->is_pointer)
    kl__buf_printf(b, "(%s *)b[%zu]", t, p);
  else if (kl_dtype_is_float(pa->dtype))
    kl__buf_printf(b, "(%s)klh_scalar_f[s][%zu]", t, p);
  else
    kl__buf_printf(b, "(%s)klh_scalar_i[s][%zu]", t, p);
}

/* The call's arguments, taken from the buffers and the tables (a struct
 * from its builder, klh_<builders>make_<arg>), and its closing
 * parenthesis. */
static void emit_args(kl_buf *b, const kl_case *c, call_kind kind,
                      const char *indent, const char *builders,
                      uint64_t arrays) {
  const case_arg *args = kl__case_args(c);
  size_t nargs = kl__case_arg_count(c);
  for (size_t a = 0; a < nargs; a++) {
    if (a) kl__buf_printf(b, ",\n%s", indent);
    if (args[a].struct_type)
      kl__buf_printf(b, "klh_%smake_%s(b, s)", builders, args[a].name);
    else
      emit_value(b, c, args[a].first, a < 64 && (arrays >> a & 1));
  }
  if (kind == CALL_LAUNCHER) kl__buf_puts(b, nargs ? ", ctx" : "ctx");
  kl__buf_puts(b, ");\n");
}

/* The spelling of a struct type with its name after `prefix`
 * ("struct klh_baseline_params", "ns::klh_baseline_P<float>"). */
/* The identifier of a struct's spelling that a rename of the text that
 * defines it changes: its outermost qualifier ("ns" of "ns::P<float>"),
 * else its name ("P" of "struct P"); its offset and length. */
static size_t renamed_part(const char *spelling, size_t *len) {
  if (strstr(spelling, "::")) {
    size_t at = 0;
    for (;;) {
      while (spelling[at] && !kl__c_ident_char(spelling[at]))
        at++;
      size_t n = 0;
      while (kl__c_ident_char(spelling[at + n]))
        n++;
      bool kw = (n == 6 && strncmp(spelling + at, "struct", 6) == 0) ||
                (n == 5 && strncmp(spelling + at, "class", 5) == 0);
      if (!kw || !n) {
        *len = n;
        return at;
      }
      at += n;
    }
  }
  size_t at = strcspn(spelling, "<");
  while (at && !kl__c_ident_char(spelling[at - 1]))
    at--;
  size_t e = at;
  while (at && kl__c_ident_char(spelling[at - 1]))
    at--;
  *len = e - at;
  return at;
}

static int renamed_type(kl_buf *b, const char *spelling, const char *prefix) {
  size_t len, at = renamed_part(spelling, &len);
  (void)len;
  kl__buf_printf(b, "%.*s%s%s", (int)at, spelling, prefix, spelling + at);
  return kl__buf_status(b);
}

/* For each struct the kernel takes by value, klh_<builders>make_<arg>:
 * the struct (its name after `rename` when not NULL), zeroed, with every
 * field set from the buffers and tables. */
static int emit_builders(kl_buf *b, const kl_case *c, const char *builders,
                         const char *rename) {
  for (size_t a = 0; a < kl__case_arg_count(c); a++) {
    const case_arg *arg = &kl__case_args(c)[a];
    if (!arg->struct_type) continue;
    kl_buf type = KL_BUF_INIT;
    if (rename)
      renamed_type(&type, arg->struct_type, rename);
    else
      kl__buf_puts(&type, arg->struct_type);
    if (kl__buf_status(&type) < 0) {
      kl_buf_dispose(&type);
      return kl__error_oom();
    }
    kl__buf_printf(b,
                   "static %s klh_%smake_%s(void *const *b, int32_t s) {\n"
                   "  %s v;\n  memset(&v, 0, sizeof v);\n",
                   type.ptr, builders, arg->name, type.ptr);
    for (size_t f = arg->first; f < arg->first + arg->count; f++) {
      kl__buf_printf(
          b, "  v.%s = ", kl__case_params(c)[f].name + strlen(arg->name) + 1);
      emit_value(b, c, f, false);
      kl__buf_puts(b, ";\n");
    }
    kl__buf_puts(b, "  (void)b;\n  (void)s;\n  return v;\n}\n");
    kl_buf_dispose(&type);
  }
  return kl__buf_status(b);
}

/* Whether the text of a section defines one of the structs the kernel
 * takes (then an embedded copy of it renames them, so that the
 * candidate's own definition does not clash). */
static int defines_a_struct(bool *out, const kl_case *c, const char *text) {
  const case_arg *args = kl__case_args(c);
  *out = false;
  char *clean = kl__c_blank(text, strlen(text), false);
  if (!clean) return kl__error_oom();
  for (size_t a = 0; a < kl__case_arg_count(c) && !*out; a++) {
    if (!args[a].struct_type) continue;
    char *name = kl__c_type_name(args[a].struct_type);
    size_t o, e;
    if (!name) {
      kl__free(clean);
      return kl__error_oom();
    }
    *out = kl__c_struct_body(clean, name, &o, &e);
    kl__free(name);
  }
  kl__free(clean);
  return 0;
}

/* The baseline inside a standalone harness, beside the candidate: every
 * name its text defines at top level (kernel, helpers, structs, its
 * launcher) renamed klh_baseline_NAME by #defines around it, its
 * preprocessor lines up to its last #include hoisted above them (so a
 * shared header is read once, unrenamed, configured as the baseline
 * configures it, and only there: kl__c_include_once), and its own macros
 * #undef'd after it (not the tunables,
 * which the harness set): in plugin form each section is compiled alone,
 * and so is each here. *structs: the kernel's structs are among the
 * renamed names. */
static int emit_embedded_baseline(kl_buf *b, const kl_case *c, const char *text,
                                  bool *structs) {
  const case_arg *args = kl__case_args(c);
  *structs = false;
  char *clean = kl__c_blank(text, strlen(text), false);
  kl__c_names ns = {0}, macros = {0};
  int rc = clean ? kl__c_top_level_names(&ns, &macros, clean) : kl__error_oom();
  if (rc < 0) goto done;
  kl__buf_puts(b, "\n");
  /* hoisted: the preprocessor lines up to the last #include, as written,
   * so that the macros a header is configured by come along
   * (`#define ENABLE_BF16` before `#include "common.h"`, llm.c's gelu) */
  kl_buf hoisted = KL_BUF_INIT;
  size_t total = strlen(text), last = 0;
  for (size_t at = 0; at < total;) { /* the end of the last #include line */
    size_t n = strcspn(clean + at, "\n");
    const char *q = clean + at;
    while (*q == ' ' || *q == '\t')
      q++;
    if (*q == '#') {
      q++;
      while (*q == ' ' || *q == '\t')
        q++;
      if (strncmp(q, "include", 7) == 0) last = at + n;
    }
    at += n + (at + n < total);
  }
  bool directive = false; /* continued from the line before */
  for (size_t at = 0; at < last;) {
    size_t n = strcspn(clean + at, "\n");
    const char *q = clean + at;
    while (*q == ' ' || *q == '\t')
      q++;
    if (directive || *q == '#')
      kl__buf_printf(&hoisted, "%.*s\n", (int)n, text + at);
    directive = (directive || *q == '#') && n && clean[at + n - 1] == '\\';
    at += n + (at + n < total);
  }
  /* guarded: the baseline's own #include lines, below, find them read */
  if (hoisted.ptr &&
      kl__c_include_once(b, hoisted.ptr, base_name(kl_case_kernel_path(c)),
                         SECTION_HOISTED) < 0)
    rc = kl__error_oom();
  kl_buf_dispose(&hoisted);
  if (rc < 0) goto done;
  /* an unqualified kernel is renamed wherever it is defined (an
   * anonymous namespace's is not at top level) */
  char *entry = strstr(kl_case_entry(c), "::")
                    ? NULL
                    : kl__c_entry_name(kl_case_entry(c));
  for (size_t i = 0; entry && i < ns.n; i++)
    if (strcmp(ns.v[i], entry) == 0) {
      kl__free(entry);
      entry = NULL;
    }
  if (entry) kl__buf_printf(b, "#define %s klh_baseline_%s\n", entry, entry);
  for (size_t i = 0; i < ns.n; i++)
    kl__buf_printf(b, "#define %s klh_baseline_%s\n", ns.v[i], ns.v[i]);
  int section =
      emit_section(b, "BASELINE SECTION (the oracle)",
                   base_name(kl_case_kernel_path(c)), text, SECTION_BASELINE);
  if (entry) kl__buf_printf(b, "#undef %s\n", entry);
  kl__free(entry);
  for (size_t i = 0; i < ns.n; i++)
    kl__buf_printf(b, "#undef %s\n", ns.v[i]);
  for (size_t i = 0; i < macros.n; i++) {
    bool tunable = false;
    for (size_t t = 0; t < kl_case_tunable_count(c) && !tunable; t++)
      tunable = strcmp(kl_case_tunable_name(c, t), macros.v[i]) == 0;
    if (!tunable) kl__buf_printf(b, "#undef %s\n", macros.v[i]);
  }
  for (size_t a = 0; a < kl__case_arg_count(c) && !*structs; a++) {
    if (!args[a].struct_type) continue;
    size_t len, at = renamed_part(args[a].struct_type, &len);
    for (size_t i = 0; i < ns.n && !*structs; i++)
      *structs = strlen(ns.v[i]) == len &&
                 strncmp(ns.v[i], args[a].struct_type + at, len) == 0;
  }
  rc = section < 0 ? section : kl__buf_status(b);
done:
  kl__free(clean);
  kl__c_names_dispose(&ns);
  kl__c_names_dispose(&macros);
  return rc;
}

/* #define (or, undo, #undef) each struct's name to its renamed one. */
static int emit_struct_renames(kl_buf *b, const kl_case *c, const char *prefix,
                               bool undo) {
  const case_arg *args = kl__case_args(c);
  for (size_t a = 0; a < kl__case_arg_count(c); a++) {
    if (!args[a].struct_type) continue;
    char *name = kl__c_type_name(args[a].struct_type);
    if (!name) return kl__error_oom();
    if (undo)
      kl__buf_printf(b, "#undef %s\n", name);
    else
      kl__buf_printf(b, "#define %s %s%s\n", name, prefix, name);
    kl__free(name);
  }
  return kl__buf_status(b);
}

/* Whether some shape launches its own instantiation of the entry. */
static bool per_shape_entries(const kl_case *c) {
  for (size_t s = 0; s < kl_case_shape_count(c); s++)
    if (kl__case_shapes(c)[s].entry) return true;
  return false;
}

/* A CUDA launch of shape s's entry (its name after `prefix`: the embedded
 * baseline's is renamed) at the case's geometry, `in` spaces in. */
static void emit_geometry_launch(kl_buf *b, const kl_case *c, size_t s,
                                 const char *prefix, int in,
                                 const char *builders) {
  kl__buf_printf(b, "%*s", in, "");
  /* a renamed baseline's namespace is renamed, not its kernel */
  const char *entry = kl_case_shape_entry(c, s);
  kl__c_entry_renamed(b, entry, prefix, prefix[0] && strstr(entry, "::"));
  kl__buf_printf(b,
                 "<<<dim3((unsigned)klh_grid[s][0], (unsigned)klh_grid[s][1], "
                 "(unsigned)klh_grid[s][2]),\n"
                 "%*s    dim3((unsigned)klh_block[s][0], "
                 "(unsigned)klh_block[s][1], (unsigned)klh_block[s][2]),\n"
                 "%*s    (size_t)klh_shared[s], st>>>(",
                 in, "", in, "");
  emit_args(b, c, CALL_GEOMETRY, in == 2 ? "      " : "        ", builders, 0);
}

/* Which of fn's parameters, as `text` (C) defines it, are arrays (`double
 * A[ni][nk]`) or may be (a declaration through a macro, as PolyBench's
 * `DATA_TYPE POLYBENCH_2D(A, NI, NK, ni, nk)`, which the source is not
 * expanded to tell): a host buffer goes to them as a void *, which C
 * converts to whatever pointer the parameter is, where a cast to double *
 * is an error since GCC 14 (a warning before). Every other pointer keeps
 * its cast, and with it the compiler's check of the case's dtype. One bit
 * a parameter, the first 64; 0 where fn is not found. */
static int array_params(uint64_t *bits, const char *text, const char *fn) {
  *bits = 0;
  if (!text) return 0;
  char *clean = kl__c_blank(text, strlen(text), false), *params = NULL;
  if (!clean) return kl__error_oom();
  int rc = kl__c_definition_params(&params, clean, fn);
  kl__free(clean);
  if (rc != 0) return kl__error_oom();
  int depth = 0, at = 0;
  for (const char *q = params; q && *q && at < 64; q++) {
    if ((*q == '[' || *q == '(') && depth == 0) *bits |= (uint64_t)1 << at;
    if (*q == '(' || *q == '{') depth++;
    if (*q == ')' || *q == '}') depth--;
    if (*q == ',' && depth == 0) at++;
  }
  kl__free(params);
  return 0;
}

/* The wrapper `wrapper` calling `fn` with every param taken from the
 * buffers or the tables. Kernels' wrappers all take the launch context (a
 * launcher gets it as its last argument; the others ignore it) and, on
 * CUDA, the stream. A CUDA kernel at the case's geometry is the entry
 * (renamed after `prefix`), or per shape its own instantiation. `text`
 * defines fn, as `named` where that is not NULL (array_params). */
static int emit_call(kl_buf *b, const kl_case *c, const char *wrapper,
                     const char *fn, call_kind kind, const char *prefix,
                     const char *builders, const char *text,
                     const char *named) {
  uint64_t arrays = 0;
  if (kl_case_backend(c) == KL_BACKEND_HOST &&
      array_params(&arrays, text, named ? named : fn) < 0)
    return kl__error_oom();
  bool cuda = kl_case_backend(c) == KL_BACKEND_CUDA;
  if (kind == CALL_PLAIN)
    kl__buf_printf(b, "static void %s(void *const *b, int32_t s) {\n  %s(",
                   wrapper, fn);
  else
    kl__buf_printf(b,
                   "static void %s(void *const *b, int32_t s,%s "
                   "const kl_launch_ctx *ctx) {\n",
                   wrapper, cuda ? " cudaStream_t st," : "");
  if (kind == CALL_HOST)
    kl__buf_printf(b, "  (void)ctx;\n  %s(", fn);
  else if (kind == CALL_LAUNCHER)
    kl__buf_printf(b, "%s  %s(", cuda ? "  (void)st;\n" : "", fn);
  if (kind == CALL_GEOMETRY && per_shape_entries(c)) {
    kl__buf_puts(b, "  (void)ctx;\n  switch (s) {\n");
    for (size_t s = 0; s < kl_case_shape_count(c); s++) {
      kl__buf_printf(b, "  case %zu:\n", s);
      emit_geometry_launch(b, c, s, prefix, 4, builders);
      kl__buf_puts(b, "    break;\n");
    }
    kl__buf_puts(b, "  }\n");
  } else if (kind == CALL_GEOMETRY) {
    kl__buf_puts(b, "  (void)ctx;\n");
    emit_geometry_launch(b, c, 0, prefix, 2, builders);
  } else {
    emit_args(b, c, kind, "      ", builders, arrays);
  }
  if (kind == CALL_PLAIN && kl__case_arg_count(c) == 0)
    kl__buf_puts(b, "  (void)b;\n");
  if (kind == CALL_PLAIN || kind == CALL_HOST) kl__buf_puts(b, "  (void)s;\n");
  kl__buf_puts(b, "}\n");
  return kl__buf_status(b);
}

/* CUDA: calls a launcher must not make, redirected for the kernel section
 * to a guard that notes the first one (the runtime fails the launch that
 * made it) and then makes the call, so that the program stays correct. */
static const char *const forbidden_calls[] = {"cudaMalloc",
                                              "cudaMallocAsync",
                                              "cudaMallocManaged",
                                              "cudaMallocHost",
                                              "cudaHostAlloc",
                                              "cudaMallocPitch",
                                              "cudaMalloc3D",
                                              "cudaFree",
                                              "cudaFreeAsync",
                                              "cudaFreeHost",
                                              "cudaDeviceSynchronize",
                                              "cudaStreamSynchronize",
                                              "cudaEventSynchronize",
                                              "cudaMemcpy",
                                              "cudaMemcpy2D",
                                              "cudaMemset",
                                              "cudaMemcpyToSymbol",
                                              "cudaMemcpyFromSymbol",
                                              "cudaDeviceReset",
                                              "cudaDeviceSetLimit"};

static int emit_guards(kl_buf *b) {
  kl__buf_puts(b, "\n/* The launch contract (kernlab/plugin.h, kl_launch_ctx): "
                  "these calls are\n * noted and fail the launch that makes "
                  "them. */\n"
                  "static const char *klh_forbidden_call;\n"
                  "static inline int klh_forbid(const char *name) {\n"
                  "  if (!klh_forbidden_call)\n    klh_forbidden_call = name;\n"
                  "  return 0;\n}\n");
  for (size_t i = 0; i < KL_ARRAY_SIZE(forbidden_calls); i++)
    kl__buf_printf(b, "#define %s(...) (klh_forbid(\"%s\"), %s(__VA_ARGS__))\n",
                   forbidden_calls[i], forbidden_calls[i], forbidden_calls[i]);
  return kl__buf_status(b);
}

static int emit_unguard(kl_buf *b) {
  for (size_t i = 0; i < KL_ARRAY_SIZE(forbidden_calls); i++)
    kl__buf_printf(b, "#undef %s\n", forbidden_calls[i]);
  return kl__buf_status(b);
}

/* Launch geometry per shape (CUDA cases). */
static int emit_launch_tables(kl_buf *b, const kl_case *c) {
  const case_shape *shapes = kl__case_shapes(c);
  const char *names[2] = {"klh_grid", "klh_block"};
  for (int t = 0; t < 2; t++) {
    kl__buf_printf(b, "static const int64_t %s[KLH_NSHAPES][3] = {\n",
                   names[t]);
    for (size_t s = 0; s < kl_case_shape_count(c); s++) {
      const int64_t *d = t ? shapes[s].launch.block : shapes[s].launch.grid;
      kl__buf_printf(b, "  {%lldLL, %lldLL, %lldLL}, /* %s */\n",
                     (long long)d[0], (long long)d[1], (long long)d[2],
                     kl_case_shape_name(c, s));
    }
    kl__buf_puts(b, "};\n");
  }
  kl__buf_puts(b, "static const int64_t klh_shared[KLH_NSHAPES] = {");
  for (size_t s = 0; s < kl_case_shape_count(c); s++)
    kl__buf_printf(b, "%s%lldLL", s ? ", " : "",
                   (long long)shapes[s].launch.shared_bytes);
  kl__buf_puts(b, "};\n");
  return kl__buf_status(b);
}

/* The kernel each shape launches, for its attributes and occupancy. */
static int emit_entry_table(kl_buf *b, const kl_case *c) {
  kl__buf_puts(b, "static const void *const klh_entry_fns[KLH_NSHAPES] = {");
  for (size_t s = 0; s < kl_case_shape_count(c); s++) {
    kl__buf_puts(b, s ? ",\n    (const void *)&" : "\n    (const void *)&");
    kl__buf_puts(b, kl_case_shape_entry(c, s));
  }
  kl__buf_puts(b, "};\n");
  return kl__buf_status(b);
}

static int emit_string_table(kl_buf *b, const char *name, size_t n,
                             const char *(*get)(const kl_case *, size_t),
                             const kl_case *c) {
  kl__buf_printf(b, "static const char *const %s[] = {", name);
  for (size_t i = 0; i < n; i++) {
    kl__buf_puts(b, i ? ", " : "");
    kl__buf_json_string(b, get(c, i)); /* JSON escapes are C escapes */
  }
  kl__buf_puts(b, "};\n");
  return kl__buf_status(b);
}

static const char *shape_name_at(const kl_case *c, size_t i) {
  return kl_case_shape_name(c, i);
}

static const char *param_name_at(const kl_case *c, size_t i) {
  return kl__case_params(c)[i].name;
}

/* The leading axis of a buffer whose count is a product: `rows*cols` (or
 * `B*H*S*D`) reads as rows (B) rows of the rest. 1 where the count is no
 * product, or the factor does not divide it. The correctness check's
 * trivial outputs (row means, rows rolled, the transpose) use it. */
static int64_t leading_rows(const case_param *pa, const case_shape *sh,
                            int64_t elements) {
  const char *src = pa->count ? kl_expr_source(pa->count) : NULL;
  if (!src) return 1;
  int depth = 0;
  const char *star = NULL;
  for (const char *s = src; *s && !star; s++) {
    if (*s == '(') depth++;
    if (*s == ')') depth--;
    if (*s == '*' && depth == 0 && s[1] != '*') star = s;
    if ((*s == '+' || *s == '-' || *s == '/' || *s == '%') && depth == 0)
      return 1; /* a sum or quotient at the top: no leading factor */
  }
  if (!star || star == src) return 1;
  char left[256];
  size_t n = (size_t)(star - src);
  if (n >= sizeof(left)) return 1;
  memcpy(left, src, n);
  left[n] = '\0';
  kl_expr *e = NULL;
  kl_value v;
  int64_t rows = 1;
  if (kl_expr_compile(&e, left, NULL) == 0 &&
      kl_expr_eval(&v, e, sh->vars) == 0 && v.is_int && v.i > 1 &&
      v.i < elements && elements % v.i == 0)
    rows = v.i;
  kl_expr_free(e);
  return rows;
}

static int emit_tables(kl_buf *b, const kl_case *c) {
  size_t nshapes = kl_case_shape_count(c);
  size_t nparams = kl_case_param_count(c);
  const case_param *params = kl__case_params(c);
  const kl_reference_info *ref = kl__case_reference(c);
  const case_shape *shapes = kl__case_shapes(c);
  kl__buf_printf(b,
                 "\n#line 1 \"kernlab-harness\"\n"
                 "/* ==== HARNESS SECTION (frozen) ==== */\n"
                 "#define KLH_NSHAPES %zu\n#define KLH_NPARAMS %zu\n",
                 nshapes, nparams);
  kl__buf_puts(b, "static const char klh_case_name[] = ");
  kl__buf_json_string(b, kl_case_name(c));
  kl__buf_puts(b, ";\nstatic const char klh_entry[] = ");
  kl__buf_json_string(b, kl_case_entry(c));
  kl__buf_puts(b, ";\n");
  emit_string_table(b, "klh_shape_names", nshapes, shape_name_at, c);
  emit_string_table(b, "klh_param_names", nparams, param_name_at, c);
  const char *int_tables[3] = {"klh_roles", "klh_dtypes", "klh_init_kind"};
  for (int t = 0; t < 3; t++) {
    kl__buf_printf(b, "static const int32_t %s[] = {", int_tables[t]);
    for (size_t p = 0; p < nparams; p++) {
      const case_param *pa = &params[p];
      int v = t == 0 ? (int)pa->role : t == 1 ? (int)pa->dtype : (int)pa->init;
      kl__buf_printf(b, "%s%d", p ? ", " : "", v);
    }
    kl__buf_puts(b, "};\n");
  }
  const char *dbl_tables[2] = {"klh_init_a", "klh_init_b"};
  for (int t = 0; t < 2; t++) {
    kl__buf_printf(b, "static const double %s[] = {", dbl_tables[t]);
    for (size_t p = 0; p < nparams; p++)
      kl__buf_printf(b, "%s%.17g", p ? ", " : "",
                     t ? params[p].init_b : params[p].init_a);
    kl__buf_puts(b, "};\n");
  }
  kl__buf_printf(b,
                 "static const double klh_atol = %.17g, klh_rtol = "
                 "%.17g;\n",
                 ref->atol, ref->rtol);
  /* Per shape: element counts, and scalar values as integer and double. */
  const char *shape_tables[3] = {"int64_t klh_elems", "int64_t klh_scalar_i",
                                 "double klh_scalar_f"};
  for (int t = 0; t < 3; t++) {
    kl__buf_printf(b, "static const %s[KLH_NSHAPES][KLH_NPARAMS] = {\n",
                   shape_tables[t]);
    for (size_t s = 0; s < nshapes; s++) {
      const case_shape *sh = &shapes[s];
      kl__buf_puts(b, "  {");
      for (size_t p = 0; p < nparams; p++) {
        kl__buf_puts(b, p ? ", " : "");
        if (t == 0)
          kl__buf_printf(b, "%lldLL", (long long)sh->elements[p]);
        else if (t == 1)
          kl__buf_printf(b, "%lldLL",
                         (long long)(params[p].is_pointer ? 0
                                     : sh->scalars[p].is_int
                                         ? sh->scalars[p].i
                                         : (int64_t)sh->scalars[p].f));
        else
          kl__buf_printf(b, "%.17g",
                         params[p].is_pointer ? 0.0 : sh->scalars[p].f);
      }
      kl__buf_printf(b, "}, /* %s */\n", sh->name);
    }
    kl__buf_puts(b, "};\n");
  }
  /* Per shape: each buffer's leading axis (rows of its count's product). */
  kl__buf_puts(b,
               "static const int64_t klh_rows[KLH_NSHAPES][KLH_NPARAMS] = {\n");
  for (size_t s = 0; s < nshapes; s++) {
    const case_shape *sh = &shapes[s];
    kl__buf_puts(b, "  {");
    for (size_t p = 0; p < nparams; p++)
      kl__buf_printf(
          b, "%s%lldLL", p ? ", " : "",
          (long long)(params[p].is_pointer
                          ? leading_rows(&params[p], sh, sh->elements[p])
                          : 0));
    kl__buf_printf(b, "}, /* %s */\n", sh->name);
  }
  kl__buf_puts(b, "};\n");
  return kl__buf_status(b);
}

static int check_supported(const kl_case *c) {
  const case_param *params = kl__case_params(c);
  if (kl_case_backend(c) != KL_BACKEND_HOST &&
      kl_case_backend(c) != KL_BACKEND_CUDA)
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_CASE,
                     "%s: the %s backend has no harness generator",
                     kl_case_name(c), kl_backend_name(kl_case_backend(c)));
  for (size_t p = 0;
       kl_case_backend(c) == KL_BACKEND_HOST && p < kl_case_param_count(c); p++)
    if (!params[p].is_pointer &&
        (params[p].dtype == KL_DTYPE_F16 || params[p].dtype == KL_DTYPE_BF16))
      return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_CASE,
                       "%s: scalar '%s' is %s; host kernels take 16-bit "
                       "floats only through buffers",
                       kl_case_name(c), params[p].name,
                       kl_dtype_name(params[p].dtype));
  return 0;
}

int kl_harness_generate(kl_buf *out, const kl_case *c, const char *candidate,
                        const kl_harness_options *given) {
  const kl_reference_info *ref = kl__case_reference(c);
  kl_harness_options opts;
  int rc = kl__harness_options_take(&opts, given);
  if (rc == 0) rc = check_supported(c);
  if (rc < 0) return rc;
  kl_harness_form form = opts.form;
  kl_buf baseline = KL_BUF_INIT, reference = KL_BUF_INIT, b = KL_BUF_INIT;
  if ((rc = kl__read_file(&baseline, kl_case_kernel_path(c))) < 0) goto done;
  if (ref->kind == KL_REFERENCE_HOST &&
      (rc = kl__read_file(&reference, ref->source)) < 0)
    goto done;
  const char *kernel_name = opts.candidate_name
                                ? opts.candidate_name
                                : base_name(kl_case_kernel_path(c));
  bool is_baseline = candidate == NULL;
  const char *kernel =
      is_baseline ? (baseline.ptr ? baseline.ptr : "") : candidate;
  bool embed_baseline = form == KL_HARNESS_STANDALONE && !is_baseline &&
                        ref->kind == KL_REFERENCE_BASELINE;

  bool cuda = kl_case_backend(c) == KL_BACKEND_CUDA;
  kl__buf_printf(
      &b,
      "/* kernlab %s harness of case '%s' (%s backend), form: %s.\n"
      " * Generated by kernlab %s; the same case and kernel give the same "
      "file.\n"
      " * The KERNEL SECTION is the candidate, verbatim; the HARNESS "
      "SECTION is\n"
      " * frozen: do not edit it.\n",
      cuda ? "CUDA" : "host", kl_case_name(c),
      kl_backend_name(kl_case_backend(c)),
      form == KL_HARNESS_PLUGIN ? "plugin" : "standalone", KL_VERSION);
  /* the case's own headers (`#include "common.h"`) are beside kernel.cu:
   * the folder from the root, so the line builds from any folder (a case
   * given as "." made it -I ., which held only there) */
  char inc[1200] = "";
  if (strstr(kernel, "#include \"") ||
      (baseline.ptr && embed_baseline && strstr(baseline.ptr, "#include \""))) {
    char *dir = kl__path_absolute(kl_case_dir(c));
    if (!dir) {
      rc = kl__error_oom();
      goto done;
    }
    snprintf(inc, sizeof inc, " -I %s", dir);
    kl__free(dir);
  }
  /* and what the case says its kernel needs (target.include, .libs) */
  kl_buf incs = KL_BUF_INIT, libs = KL_BUF_INIT;
  for (size_t i = 0; i < kl_case_include_count(c); i++)
    kl__buf_printf(&incs, " -I %s", kl_case_include(c, i));
  kl__buf_puts(&incs, inc);
  for (size_t i = 0; i < kl_case_lib_count(c); i++) {
    const char *lib = kl_case_lib(c, i), *slash = strrchr(lib, '/');
    kl__buf_printf(&libs, " %s", lib);
    if (lib[0] == '/' && slash && strstr(slash, ".so"))
      kl__buf_printf(&libs, " %s-rpath,%.*s", cuda ? "-Xlinker " : "-Wl,",
                     (int)(slash - lib), lib);
  }
  const char *I = incs.ptr ? incs.ptr : "", *L = libs.ptr ? libs.ptr : "";
  /* the case's target.flags replace the defaults, as kernlab compiles */
  const char *F = kl_case_flags(c);
  /* the file the line builds: the one it was written to (kl harness -o) */
  const char *file = opts.file_name ? base_name(opts.file_name)
                     : cuda         ? "harness.cu"
                                    : "harness.c";
  if (cuda && form == KL_HARNESS_PLUGIN)
    kl__buf_printf(&b,
                   " * Build: nvcc %s -arch=%s%s -shared -Xcompiler "
                   "-fPIC -cudart shared %s%s -o plugin.so\n"
                   " */\n",
                   F ? F : "-O3", kl_case_arch(c), I, file, L);
  else if (cuda)
    kl__buf_printf(&b,
                   " * Build and run: nvcc %s -arch=%s%s %s%s "
                   "-o harness && ./harness\n */\n",
                   F ? F : "-O3", kl_case_arch(c), I, file, L);
  else if (form == KL_HARNESS_PLUGIN)
    kl__buf_printf(&b,
                   " * Build: cc %s%s -shared -fPIC %s%s -lm -o "
                   "plugin.so\n */\n",
                   F ? F : "-O3", I, file, L);
  else
    kl__buf_printf(&b,
                   " * Build and run: cc %s%s %s%s "
                   "-lm && ./a.out\n */\n",
                   F ? F : "-O3 -march=native", I, file, L);
  kl_buf_dispose(&incs);
  kl_buf_dispose(&libs);
  /* The feature macros come before any header. A host harness asks for
   * every name glibc has, as a C program built on its own sees them (M_PI
   * and the BSD and GNU functions besides POSIX's): _POSIX_C_SOURCE alone
   * hid M_PI from llm.c's unedited train_gpt2.c. nvcc's C++ gets them
   * all anyway. */
  kl__buf_puts(&b, cuda ? "#define _POSIX_C_SOURCE 200809L\n"
                        : "#ifndef _GNU_SOURCE\n#define _GNU_SOURCE\n#endif\n");
  kl__buf_puts(&b, "#include <stdint.h>\n#include <stddef.h>\n");
  bool structs = false; /* the kernel takes a struct by value */
  for (size_t a = 0; a < kl__case_arg_count(c); a++)
    structs = structs || kl__case_args(c)[a].struct_type;
  if (structs) kl__buf_puts(&b, "#include <string.h>\n");
  if (cuda)
    kl__buf_puts(&b, "#include <cuda_runtime.h>\n#include <cuda_fp16.h>"
                     "\n#include <cuda_bf16.h>\n");
  emit_section(&b, "PLUGIN ABI (kernlab/plugin.h)", "kernlab/plugin.h",
               kl_embedded_plugin_h, SECTION_VERBATIM);
  if (kl_case_tunable_count(c) > 0) {
    kl__buf_puts(&b, "\n/* tunables at this configuration's values; "
                     "override with -DNAME=value */\n");
    for (size_t i = 0; i < kl_case_tunable_count(c); i++)
      kl__buf_printf(&b, "#ifndef %s\n#define %s %s\n#endif\n",
                     kl_case_tunable_name(c, i), kl_case_tunable_name(c, i),
                     kl_case_tunable_current(c, i));
  }
  bool launcher = false, baseline_launcher = false;
  if ((rc = kl__c_defines(&launcher, kernel, KL_LAUNCHER_NAME)) < 0 ||
      (embed_baseline &&
       (rc = kl__c_defines(&baseline_launcher, baseline.ptr ? baseline.ptr : "",
                           KL_LAUNCHER_NAME)) < 0))
    goto done;
  /* a host reference that defines the kernel's struct itself gets the
   * struct renamed */
  bool base_structs = false, ref_structs = false;
  if (ref->kind == KL_REFERENCE_HOST &&
      (rc = defines_a_struct(&ref_structs, c,
                             reference.ptr ? reference.ptr : "")) < 0)
    goto done;
  if (cuda) emit_guards(&b);
  if (embed_baseline &&
      (rc = emit_embedded_baseline(&b, c, baseline.ptr ? baseline.ptr : "",
                                   &base_structs)) < 0)
    goto done;
  if (ref_structs) emit_struct_renames(&b, c, "klh_reference_", false);
  if (ref->kind == KL_REFERENCE_HOST &&
      (rc = emit_section(
           &b, "REFERENCE SECTION (the oracle)", base_name(ref->source),
           reference.ptr ? reference.ptr : "", SECTION_REFERENCE)) < 0)
    goto done;
  if (ref_structs) emit_struct_renames(&b, c, "", true);
  if ((rc = emit_section(&b, "KERNEL SECTION (the candidate)", kernel_name,
                         kernel, SECTION_KERNEL)) < 0)
    goto done;
  if (cuda) emit_unguard(&b);
  emit_tables(&b, c);
  if (cuda) emit_launch_tables(&b, c);
  emit_builders(&b, c, "", NULL);
  if (base_structs) emit_builders(&b, c, "baseline_", "klh_baseline_");
  if (ref_structs) emit_builders(&b, c, "reference_", "klh_reference_");
  call_kind kernel_call = !cuda ? CALL_HOST : CALL_GEOMETRY;
  if ((rc = emit_call(
           &b, c, "klh_call", launcher ? KL_LAUNCHER_NAME : kl_case_entry(c),
           launcher ? CALL_LAUNCHER : kernel_call, "", "", kernel, NULL)) < 0)
    goto done;
  kl__buf_printf(&b, "#define KLH_HAS_LAUNCHER %d\n", launcher);
  if (cuda && !launcher) /* the kernel itself, for its attributes */
    emit_entry_table(&b, c);
  kl__buf_printf(&b, "#define KLH_HAS_REFERENCE %d\n",
                 ref->kind == KL_REFERENCE_HOST);
  if (ref->kind == KL_REFERENCE_HOST &&
      (rc = emit_call(&b, c, "klh_call_reference", ref->function, CALL_PLAIN,
                      "", ref_structs ? "reference_" : "",
                      reference.ptr ? reference.ptr : "", NULL)) < 0)
    goto done;
  kl__buf_printf(&b, "#define KLH_HAS_BASELINE %d\n", embed_baseline);
  if (embed_baseline) {
    char fn[256];
    snprintf(fn, sizeof(fn), "klh_baseline_%s",
             baseline_launcher ? KL_LAUNCHER_NAME : kl_case_entry(c));
    /* the baseline's text names it as the case does */
    if ((rc = emit_call(&b, c, "klh_call_baseline", fn,
                        baseline_launcher ? CALL_LAUNCHER : kernel_call,
                        "klh_baseline_", base_structs ? "baseline_" : "",
                        baseline.ptr ? baseline.ptr : "",
                        fn + strlen("klh_baseline_"))) < 0)
      goto done;
  }
  if (form == KL_HARNESS_STANDALONE)
    kl__buf_puts(&b, "#define KLH_STANDALONE 1\n");
  kl__buf_puts(&b, kl_embedded_runtime_common);
  if (cuda) kl__buf_puts(&b, kl_embedded_cuda_probes);
  kl__buf_puts(&b, cuda ? kl_embedded_runtime_cuda : kl_embedded_runtime_host);
  if ((rc = kl__buf_status(&b)) == 0) kl__buf_give(out, &b);
done:
  kl_buf_dispose(&b);
  kl_buf_dispose(&baseline);
  kl_buf_dispose(&reference);
  return rc;
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t harness_options_sizes[] = {
    0, offsetof(kl_harness_options, file_name), sizeof(kl_harness_options)};

KL__OPTIONS_FUNCTIONS(kl_harness_options, kl_harness_options_init,
                      kl__harness_options_take, KL_HARNESS_OPTIONS_INIT,
                      harness_options_sizes)
