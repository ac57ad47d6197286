/* kl_export's new text of the program's file: the best's section in place
 * of the entry's definition (or of the lines between // kl:begin and
 * // kl:end), made to live beside the program's own code.
 *
 * A section that keeps the entry's name replaces its definition, with what
 * the candidate added above it; a CUDA kernel that keeps its name is
 * renamed kl_export_NAME from there down when the file launches it. A
 * section that owns its launch (kernlab_launch) goes in whole after a
 * definition of kl_launch_ctx and a context maker, at file scope, and each
 * launch of the entry after it becomes a launcher call. Either way an
 * #include "x" the file already has above it is left out (a header
 * without a guard would be read twice), top-level names both define are
 * renamed around the section and macros both define saved and restored,
 * and the kernels the program will launch are named (x->kernels), for the
 * observation after to find. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "export_internal.h"
#include "kernlab/plugin.h"

/* Generated at build time from kernlab/plugin.h: the launch context's
 * definition is copied from it into an exported program. */
#include "embedded_plugin_h.h"

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

/* The names of the __global__ functions `clean` (blanked code) defines,
 * each made kl_export_NAME when `renamed` (sn.v[i] for both[i]) has it. */
static int section_kernels(exporter *x, const char *clean,
                           const kl__c_names *sn, const bool *both) {
  for (const char *p = strstr(clean, "__global__"); p;
       p = strstr(p + 1, "__global__")) {
    if ((p > clean && kl__c_ident_char(p[-1])) || kl__c_ident_char(p[10]))
      continue;
    const char *q = p + 10, *name = NULL;
    size_t len = 0;
    while (*q && *q != ';' && *q != '{') { /* to the parameter list */
      while (isspace((unsigned char)*q))
        q++;
      const char *w = q;
      while (kl__c_ident_char(*q))
        q++;
      if (q == w) {
        if (*q == '(' && name) break;
        if (*q && *q != ';' && *q != '{') q++;
        continue;
      }
      const char *after = q;
      while (isspace((unsigned char)*after))
        after++;
      if (*after == '(' && strncmp(w, "__launch_bounds__", 17) != 0) {
        name = w, len = (size_t)(q - w);
        break;
      }
      if (*after == '(') /* __launch_bounds__(...): over its arguments */
        for (int depth = 0; *after; after++) {
          depth += (*after == '(') - (*after == ')');
          if (depth == 0) break;
        }
      q = *after ? after + (*after == ')') : after;
    }
    if (!name) continue;
    /* a section that renames its own names (a dispatcher's variants,
     * `#define kern kl_v1_kern`) launches them by the new one */
    const char *alias = NULL;
    size_t alias_len = 0;
    for (const char *d = clean; d < p;) {
      const char *e = strchr(d, '\n');
      size_t n = e ? (size_t)(e - d) : strlen(d);
      const char *w = d;
      while (*w == ' ' || *w == '\t')
        w++;
      bool def = strncmp(w, "#define ", 8) == 0;
      bool undef = strncmp(w, "#undef ", 7) == 0;
      if (def || undef) {
        w += def ? 8 : 7;
        while (*w == ' ')
          w++;
        if (strncmp(w, name, len) == 0 && !kl__c_ident_char(w[len])) {
          const char *v = w + len;
          while (*v == ' ' || *v == '\t')
            v++;
          const char *ve = v;
          while (kl__c_ident_char(*ve))
            ve++;
          alias = def && ve > v ? v : NULL;
          alias_len = alias ? (size_t)(ve - v) : 0;
        }
      }
      d += n + (e != NULL);
      if (!e) break;
    }
    if (alias) name = alias, len = alias_len;
    bool apart = false;
    for (size_t i = 0; i < sn->n && !apart; i++)
      apart = both[i] && strlen(sn->v[i]) == len &&
              strncmp(sn->v[i], name, len) == 0;
    bool seen = false;
    for (size_t i = 0; i < x->nkernels && !seen; i++)
      seen = strncmp(x->kernels[i] + (apart ? 10 : 0), name, len) == 0 &&
             x->kernels[i][len + (apart ? 10 : 0)] == '\0';
    if (seen) continue;
    kl_buf b = KL_BUF_INIT;
    kl__buf_printf(&b, "%s%.*s", apart ? "kl_export_" : "", (int)len, name);
    char **grown = kl__realloc(x->kernels, (x->nkernels + 1) * sizeof *grown);
    if (!grown || kl__buf_status(&b) < 0) {
      kl_buf_dispose(&b);
      return kl__error_oom();
    }
    x->kernels = grown;
    x->kernels[x->nkernels++] = kl__buf_detach(&b);
  }
  return 0;
}

/* The section's text made to live in the target: a `#include "x"` the
 * target already has above the section made a comment (a header without
 * a guard, llm.c's common.h, would be read twice), each top-level name the
 * target also defines (llm.c's file holds every version of a kernel and
 * its launcher: the candidate brings one of them again) renamed
 * kl_export_NAME by #defines around it, and each macro both define saved,
 * undefined, and restored after it (#pragma push_macro). The entry's own
 * definition, which the section replaces, does not count. */
static int apart_from_target(exporter *x, kl_buf *out, const char *text,
                             const char *target, const span *t) {
  kl_buf once = KL_BUF_INIT;
  int dropped = 0;
  int rc = kl__c_include_dropped(&once, text, target, t->start, &dropped);
  char *sclean =
      rc == 0 ? kl__c_blank(once.ptr ? once.ptr : "", once.size, false) : NULL;
  char *tclean = rc == 0 ? kl__c_blank(target, strlen(target), false) : NULL;
  kl__c_names sn = {0}, sm = {0}, tn = {0}, tm = {0};
  if (rc == 0 && (!sclean || !tclean)) rc = kl__error_oom();
  if (rc == 0) {
    memset(tclean + t->start, ' ', t->end - t->start); /* newlines go too */
    rc = kl__c_top_level_names(&sn, &sm, sclean);
  }
  if (rc == 0) rc = kl__c_top_level_names(&tn, &tm, tclean);
  bool *both = rc == 0 ? kl__calloc(sn.n + sm.n + 1, sizeof *both) : NULL;
  if (rc == 0 && !both) rc = kl__error_oom();
  int renamed = 0, saved = 0;
  for (size_t i = 0; rc == 0 && i < sn.n + sm.n; i++) {
    bool macro = i >= sn.n;
    const char *name = macro ? sm.v[i - sn.n] : sn.v[i];
    const kl__c_names *other = macro ? &tm : &tn;
    bool own_rename = false; /* the section renames it itself */
    for (size_t j = 0; !macro && j < sm.n && !own_rename; j++)
      own_rename = strcmp(sm.v[j], name) == 0;
    if (own_rename) continue;
    for (size_t j = 0; j < other->n && !both[i]; j++)
      both[i] =
          strcmp(other->v[j], name) == 0 && strcmp(name, KL_LAUNCHER_NAME) != 0;
    if (!both[i]) continue;
    if (macro) {
      kl__buf_printf(out, "#pragma push_macro(\"%s\")\n#undef %s\n", name,
                     name);
      saved++;
    } else {
      kl__buf_printf(out, "#define %s kl_export_%s\n", name, name);
      renamed++;
    }
  }
  if (rc == 0) {
    kl__buf_puts(out, once.ptr ? once.ptr : "");
    if (once.size && once.ptr[once.size - 1] != '\n') kl__buf_putc(out, '\n');
    for (size_t i = 0; i < sn.n + sm.n; i++) {
      if (!both[i]) continue;
      if (i >= sn.n)
        kl__buf_printf(out, "#undef %s\n#pragma pop_macro(\"%s\")\n",
                       sm.v[i - sn.n], sm.v[i - sn.n]);
      else
        kl__buf_printf(out, "#undef %s\n", sn.v[i]);
    }
    rc = kl__buf_status(out);
  }
  if (rc == 0 && x->own_launch) rc = section_kernels(x, sclean, &sn, both);
  if (rc == 0 && (dropped || renamed || saved))
    kl__export_step(
        x,
        "the section beside the program's own code: %d #include%s the "
        "program has above it left out, %d name%s it also defines renamed "
        "kl_export_*, %d macro%s of both kept apart",
        dropped, dropped == 1 ? "" : "s", renamed, renamed == 1 ? "" : "s",
        saved, saved == 1 ? "" : "s");
  kl__free(both);
  kl__c_names_dispose(&sn);
  kl__c_names_dispose(&sm);
  kl__c_names_dispose(&tn);
  kl__c_names_dispose(&tm);
  kl__free(sclean);
  kl__free(tclean);
  kl_buf_dispose(&once);
  return rc;
}

/* ---- a section that owns its launch ---------------------------------------
 */

/* What an exported launcher needs in the program: kl_launch_ctx (copied
 * from kernlab/plugin.h) and kl_export_ctx(), whose scratch regions are
 * made when first asked for (or grown) and kept for the process. */
static const char launch_support_cuda[] =
    "static struct {\n  void *p[16];\n  uint64_t n[16];\n  int next;\n"
    "} kl_export_scratch_regions;\n"
    "static void *kl_export_scratch(const kl_launch_ctx *ctx, uint64_t "
    "bytes) {\n"
    "  int k = kl_export_scratch_regions.next++;\n"
    "  if (k >= 16) return NULL;\n"
    "  if (kl_export_scratch_regions.n[k] < bytes || "
    "!kl_export_scratch_regions.p[k]) {\n"
    "    if (kl_export_scratch_regions.p[k]) "
    "cudaFree(kl_export_scratch_regions.p[k]);\n"
    "    kl_export_scratch_regions.n[k] = 0;\n"
    "    if (cudaMalloc(&kl_export_scratch_regions.p[k], bytes ? bytes : 1) "
    "!= cudaSuccess) {\n"
    "      kl_export_scratch_regions.p[k] = NULL;\n      return NULL;\n"
    "    }\n"
    "    cudaMemsetAsync(kl_export_scratch_regions.p[k], 0, bytes ? bytes : "
    "1, (cudaStream_t)ctx->stream);\n"
    "    kl_export_scratch_regions.n[k] = bytes;\n  }\n"
    "  return kl_export_scratch_regions.p[k];\n}\n"
    "static const kl_launch_ctx *kl_export_ctx(cudaStream_t stream) {\n"
    "  static kl_launch_ctx ctx;\n  static cudaDeviceProp prop;\n"
    "  static int dev = -1;\n  int d = 0;\n  cudaGetDevice(&d);\n"
    "  if (d != dev && cudaGetDeviceProperties(&prop, d) == cudaSuccess) {\n"
    "    dev = d;\n    memset(&ctx, 0, sizeof ctx);\n"
    "    ctx.struct_size = (uint32_t)sizeof ctx;\n"
    "    ctx.device_prop = &prop;\n    ctx.device = d;\n"
    "    ctx.sms = prop.multiProcessorCount;\n"
    "    ctx.max_threads_per_block = prop.maxThreadsPerBlock;\n"
    "    ctx.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;\n"
    "    ctx.smem_per_block_optin = (int32_t)prop.sharedMemPerBlockOptin;\n"
    "    ctx.l2_bytes = prop.l2CacheSize;\n"
    "    ctx.cc_major = prop.major;\n    ctx.cc_minor = prop.minor;\n"
    "    ctx.host_threads = 1;\n    ctx.scratch = kl_export_scratch;\n"
    "  }\n"
    "  ctx.shape = -1; /* not one of the case's shapes */\n"
    "  ctx.stream = (void *)stream;\n"
    "  kl_export_scratch_regions.next = 0;\n  return &ctx;\n}\n";

static const char launch_support_host[] =
    "#include <stdlib.h>\n#include <unistd.h>\n"
    "static struct {\n  void *p[16];\n  uint64_t n[16];\n  int next;\n"
    "} kl_export_scratch_regions;\n"
    "static void *kl_export_scratch(const kl_launch_ctx *ctx, uint64_t "
    "bytes) {\n  (void)ctx;\n"
    "  int k = kl_export_scratch_regions.next++;\n"
    "  if (k >= 16) return NULL;\n"
    "  if (kl_export_scratch_regions.n[k] < bytes || "
    "!kl_export_scratch_regions.p[k]) {\n"
    "    free(kl_export_scratch_regions.p[k]);\n"
    "    kl_export_scratch_regions.p[k] = calloc(1, bytes ? bytes : 1);\n"
    "    kl_export_scratch_regions.n[k] = "
    "kl_export_scratch_regions.p[k] ? bytes : 0;\n  }\n"
    "  return kl_export_scratch_regions.p[k];\n}\n"
    "static const kl_launch_ctx *kl_export_ctx(void) {\n"
    "  static kl_launch_ctx ctx;\n"
    "  if (!ctx.scratch) {\n"
    "    long cpus = sysconf(_SC_NPROCESSORS_ONLN);\n"
    "    ctx.struct_size = (uint32_t)sizeof ctx;\n    ctx.device = -1;\n"
    "    ctx.host_threads = cpus > 0 ? (int32_t)cpus : 1;\n"
    "    ctx.scratch = kl_export_scratch;\n  }\n"
    "  ctx.shape = -1; /* not one of the case's shapes */\n"
    "  kl_export_scratch_regions.next = 0;\n  return &ctx;\n}\n";

static int launch_support(kl_buf *out, bool cuda) {
  const char *h = kl_embedded_plugin_h;
  const char *a = strstr(h, "typedef struct kl_launch_ctx {");
  const char *b = a ? strstr(a, "} kl_launch_ctx;") : NULL;
  if (!a || !b)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kernlab/plugin.h has no kl_launch_ctx");
  kl__buf_puts(out, "#ifndef KL_LAUNCH_CTX_DEFINED\n"
                    "#define KL_LAUNCH_CTX_DEFINED\n#include <stdint.h>\n"
                    "#include <string.h>\n");
  kl__buf_put(out, a, (size_t)(b - a) + strlen("} kl_launch_ctx;"));
  kl__buf_puts(out, "\n#endif\n");
  kl__buf_puts(out, cuda ? launch_support_cuda : launch_support_host);
  return kl__buf_status(out);
}

/* `text` with every launch of `entry` (an unqualified name; a launch may
 * qualify it and give template arguments) from byte `from` on made a call
 * of the exported launcher: CUDA `entry<<<g, b[, smem[, stream]]>>>(args)`
 * becomes `kernlab_launch(args, kl_export_ctx(stream))`, a host call
 * `entry(args)` `kernlab_launch(args, kl_export_ctx())`. How many in
 * *count. */
static int rewrite_calls(kl_buf *out, const char *text, size_t from,
                         const char *entry, bool cuda, int *count) {
  char *clean = kl__c_blank(text, strlen(text), false);
  if (!clean) return kl__error_oom();
  size_t len = strlen(entry), at = 0;
  *count = 0;
  for (const char *p = strstr(clean + from, entry); p;
       p = strstr(p + 1, entry)) {
    size_t i = (size_t)(p - clean);
    if ((p > clean && kl__c_ident_char(p[-1])) || kl__c_ident_char(p[len]))
      continue;
    while (i >= 2 + from && clean[i - 1] == ':' && clean[i - 2] == ':') {
      size_t j = i - 2; /* a qualifier, `ns::kern` or `::kern` */
      while (j > from && kl__c_ident_char(clean[j - 1]))
        j--;
      i = j;
    }
    const char *q = p + len;
    while (isspace((unsigned char)*q))
      q++;
    const char *stream = NULL, *stream_end = NULL;
    if (cuda && *q == '<' && strncmp(q, "<<<", 3) != 0) {
      /* an instantiation, `kern<float, 128><<<...>>>` */
      for (int angle = 0; *q; q++) {
        angle += (*q == '<') - (*q == '>');
        if (angle == 0 || *q == ';' || *q == '{') break;
      }
      if (*q != '>') continue;
      for (q++; isspace((unsigned char)*q); q++)
        ;
    }
    if (cuda) {
      if (strncmp(q, "<<<", 3) != 0) continue;
      const char *close = strstr(q, ">>>");
      if (!close) continue;
      int depth = 0, comma = 0; /* the fourth launch argument */
      for (const char *r = q + 3; r < close; r++) {
        depth += (*r == '(') - (*r == ')');
        if (*r == ',' && depth == 0 && ++comma == 3) stream = r + 1;
      }
      if (stream) stream_end = close;
      q = close + 3;
      while (isspace((unsigned char)*q))
        q++;
    }
    if (*q != '(') continue;
    const char *args = q + 1, *e = q;
    for (int depth = 0; *e; e++) {
      depth += (*e == '(') - (*e == ')');
      if (depth == 0) break;
    }
    if (!*e) continue;
    const char *after = e + 1;
    while (isspace((unsigned char)*after))
      after++;
    if (!cuda && *after == '{') continue; /* a definition, not a call */
    kl__buf_put(out, text + at, i - at);
    kl__buf_printf(out, "%s(", KL_LAUNCHER_NAME);
    kl__buf_put(out, text + (args - clean), (size_t)(e - args));
    kl__buf_printf(out, "%skl_export_ctx(", e > args ? ", " : "");
    if (stream)
      kl__buf_put(out, text + (stream - clean), (size_t)(stream_end - stream));
    else if (cuda)
      kl__buf_puts(out, "0");
    kl__buf_puts(out, "))");
    at = (size_t)(e - clean) + 1;
    (*count)++;
  }
  kl__buf_puts(out, text + at);
  kl__free(clean);
  return kl__buf_status(out);
}

/* The section's text less its definitions of the structs the kernel takes
 * by value that the target already defines before the section (the
 * program's own type is the one its callers pass; lines are kept). */
static int without_known_structs(kl_buf *out, const kl_case *c,
                                 const char *target, size_t before,
                                 const char *source) {
  kl__buf_puts(out, source);
  int rc = kl__buf_status(out);
  char *tclean = rc == 0 ? kl__c_blank(target, before, false) : NULL;
  char *sclean = rc == 0 ? kl__c_blank(source, strlen(source), false) : NULL;
  if (rc == 0 && (!tclean || !sclean)) rc = kl__error_oom();
  for (size_t i = 0; rc == 0 && i < kl_case_param_count(c); i++) {
    kl_param_info p = KL_PARAM_INFO_INIT;
    if (kl_case_param(&p, c, i) < 0 || !p.struct_type) continue;
    char *name = kl__c_type_name(p.struct_type);
    size_t s, e;
    if (!name)
      rc = kl__error_oom();
    else if (kl__c_struct_statement(tclean, name, &s, &e) &&
             kl__c_struct_statement(sclean, name, &s, &e))
      for (size_t k = s; k < e; k++) {
        if (out->ptr[k] != '\n') out->ptr[k] = ' ';
        sclean[k] = ' '; /* found once */
      }
    kl__free(name);
  }
  kl__free(tclean);
  kl__free(sclean);
  return rc;
}

/* The new text of a target for a section that owns its launch: the section
 * whole (after the context's support) where the entry's section was, and
 * the entry's launches after it made calls of the launcher. */
static int new_target_launcher(exporter *x, kl_buf *out, const char *source,
                               char *const *config, const span *t) {
  const char *target = x->original.ptr ? x->original.ptr : "";
  bool cuda = kl_case_backend(x->c) == KL_BACKEND_CUDA;
  kl_buf head = KL_BUF_INIT;
  /* the section is a file of its own: at file scope, out of the namespaces
   * the entry was defined in, which reopen after it */
  kl__c_scope scopes[16];
  char *clean = kl__c_blank(target, strlen(target), false);
  if (!clean) return kl__error_oom();
  int nscopes = kl__c_scopes(clean, t->start, scopes, 16);
  kl__free(clean);
  if (nscopes > 16)
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_NONE,
                     "%s: '%s' is defined %d namespaces deep", x->o.to,
                     kl_case_entry(x->c), nscopes);
  kl__buf_put(&head, target, t->start);
  for (int i = nscopes; i-- > 0;)
    kl__buf_printf(&head, "} /* %.*s: closed by kernlab export %s */\n",
                   (int)(scopes[i].brace - scopes[i].head),
                   target + scopes[i].head, x->id);
  kl__buf_printf(&head,
                 "/* kernlab export %s: case %s's kernel section, which owns "
                 "its launch */\n",
                 x->id, kl_case_name(x->c));
  int rc = launch_support(&head, cuda);
  for (size_t i = 0; config && config[i]; i++) {
    const char *eq = strchr(config[i], '=');
    if (eq)
      kl__buf_printf(&head, "#undef %.*s\n#define %.*s %s\n",
                     (int)(eq - config[i]), config[i], (int)(eq - config[i]),
                     config[i], eq + 1);
  }
  kl_buf own = KL_BUF_INIT;
  if (rc == 0) rc = without_known_structs(&own, x->c, target, t->start, source);
  if (rc == 0)
    rc = apart_from_target(x, &head, own.ptr ? own.ptr : "", target, t);
  if (rc == 0 && x->nkernels) {
    kl_buf names = KL_BUF_INIT;
    for (size_t i = 0; i < x->nkernels; i++)
      kl__buf_printf(&names, "%s%s", i ? ", " : "", x->kernels[i]);
    kl__export_step(
        x, "the section's kernels, as the program will launch them: %s",
        names.ptr ? names.ptr : "");
    kl_buf_dispose(&names);
  }
  kl_buf_dispose(&own);
  for (size_t i = 0; config && config[i]; i++) {
    const char *eq = strchr(config[i], '=');
    if (eq)
      kl__buf_printf(&head, "#undef %.*s\n", (int)(eq - config[i]), config[i]);
  }
  for (int i = 0; i < nscopes; i++)
    kl__buf_printf(&head, "%.*s{ /* reopened by kernlab export %s */\n",
                   (int)(scopes[i].brace - scopes[i].head),
                   target + scopes[i].head, x->id);
  size_t from = head.size;
  kl__buf_puts(&head, target + t->end);
  int calls = 0;
  if (rc == 0 && (rc = kl__buf_status(&head)) == 0)
    rc = rewrite_calls(out, head.ptr, from, x->name, cuda, &calls);
  kl_buf_dispose(&head);
  if (rc == 0 && calls == 0)
    rc = kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                   "%s: no launch of '%s' after its definition to make a "
                   "call of the exported launcher",
                   x->o.to, kl_case_entry(x->c));
  if (rc == 0)
    kl__export_step(x, "launches of %s made launcher calls: %d",
                    kl_case_entry(x->c), calls);
  return rc;
}

/* The new text of the target: its own text around the best's section. */
int kl__export_new_target(exporter *x, kl_buf *out, const char *best_source,
                          char *const *config) {
  const char *entry = kl_case_entry(x->c);
  const char *target = x->original.ptr ? x->original.ptr : "";
  span t, b, base_span;
  if (section(target, entry, &t) < 0)
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                     "%s: no definition of '%s' (and no // kl:begin / "
                     "// kl:end lines)",
                     x->o.to, entry);
  if (x->own_launch)
    return new_target_launcher(x, out, best_source, config, &t);
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
  /* a CUDA kernel that keeps its name gets one of its own, kl_export_NAME,
   * when this file launches it (from the section down): an observation
   * then shows which build ran. Launched only from other files, it keeps
   * the name they link to. */
  bool cuda = kl_case_backend(x->c) == KL_BACKEND_CUDA;
  int launches = 0;
  if (cuda) {
    kl_buf scratch = KL_BUF_INIT;
    rc = rewrite_calls(&scratch, target, t.end, x->name, true, &launches);
    kl_buf_dispose(&scratch);
    if (rc < 0) {
      kl_buf_dispose(&base);
      return rc;
    }
  }
  x->renamed = launches > 0;
  if (x->renamed)
    kl__buf_printf(out,
                   "/* renamed, for an observation to tell it from the "
                   "program's own */\n#define %s kl_export_%s\n",
                   x->name, x->name);
  if (cuda) { /* the kernel to find in the program after */
    const char *last = strrchr(x->function, ':');
    size_t at = last ? (size_t)(last + 1 - x->function) : 0;
    kl_buf k = KL_BUF_INIT;
    kl__buf_printf(&k, "%.*s%s%s", (int)at, x->function,
                   x->renamed ? "kl_export_" : "", x->function + at);
    if (!(x->kernels = kl__calloc(1, sizeof *x->kernels)) ||
        kl__buf_status(&k) < 0) {
      kl_buf_dispose(&k);
      kl_buf_dispose(&base);
      return kl__error_oom();
    }
    x->kernels[0] = kl__buf_detach(&k);
    x->nkernels = 1;
  }
  kl_buf sec = KL_BUF_INIT; /* what the candidate added above it, and it */
  if (!b.marked && section(base.ptr ? base.ptr : "", entry, &base_span) == 0)
    added_prelude(&sec, best_source, b.start, base.ptr, base_span.start);
  kl__buf_put(&sec, best_source + b.start, b.end - b.start);
  if (!b.marked) kl__buf_puts(&sec, "\n");
  for (size_t i = 0; config && config[i]; i++) {
    const char *eq = strchr(config[i], '=');
    if (eq)
      kl__buf_printf(out, "#undef %.*s\n#define %.*s %s\n",
                     (int)(eq - config[i]), config[i], (int)(eq - config[i]),
                     config[i], eq + 1);
  }
  rc = kl__buf_status(&sec);
  if (rc == 0) rc = apart_from_target(x, out, sec.ptr, target, &t);
  kl_buf_dispose(&sec);
  for (size_t i = 0; config && config[i]; i++) {
    const char *eq = strchr(config[i], '=');
    if (eq)
      kl__buf_printf(out, "#undef %.*s\n", (int)(eq - config[i]), config[i]);
  }
  kl__buf_puts(out, target + t.end);
  kl_buf_dispose(&base);
  return rc < 0 ? rc : kl__buf_status(out);
}
