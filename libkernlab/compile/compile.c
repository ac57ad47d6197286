/* The compile cache.
 *
 * The text key = SHA-256(generated source, the headers of the case's
 * folder, compiler path, compiler banner, flags, defines, target). An
 * entry's name adds the files the last build of that text read (deps.c:
 * the headers its translation unit included from target.include, the
 * files of target.libs), as they are now: <cache>/<name>.so is a compiled
 * plugin; <name>.log the compiler's output; <name>.fail marks a build that
 * failed, so the same broken candidate is never compiled twice either;
 * <text key>.deps lists the files and <text key>.c is the generated
 * source. New entries are written under a temporary name and renamed into
 * place, so concurrent processes never see half a file.
 *
 * A candidate's source is candidate code from its first byte: an
 * `#include` of a key file, a #pragma, a compiler plugin. The compiler runs in
 * the sandbox the worker runs in (core/sandbox.c: an allow-listed environment,
 * no network, no reads where secrets live, writes only to its own folder
 * and the cache), and what it printed is redacted before it is kept. */
#define _GNU_SOURCE /* realpath */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../case/case_view.h"
#include "../harness/python_case.h"
#include "../core/sandbox.h"
#include "deps.h"
#include "kernlab/compile.h"
#include "kernlab/harness.h"

/* The caller's options, whatever their version, over this library's
 * defaults: KL__OPTIONS_FUNCTIONS defines it at the end of this file, the
 * only one that takes them. */
int kl__compile_options_take(kl_compile_options *full,
                             const kl_compile_options *given);

struct kl_artifact {
  bool ok, cached;
  char key[65];
  char *path, *log, *first_error;
  double seconds;
};

void kl_artifact_free(kl_artifact *a) {
  if (!a) return;
  kl__free(a->path);
  kl__free(a->log);
  kl__free(a->first_error);
  kl__free(a);
}

int kl_artifact_ok(const kl_artifact *a) {
  return a->ok;
}
int kl_artifact_cached(const kl_artifact *a) {
  return a->cached;
}
const char *kl_artifact_path(const kl_artifact *a) {
  return a->ok ? a->path : NULL;
}
const char *kl_artifact_key(const kl_artifact *a) {
  return a->key;
}
const char *kl_artifact_log(const kl_artifact *a) {
  return a->log ? a->log : "";
}
const char *kl_artifact_first_error(const kl_artifact *a) {
  return a->first_error;
}
double kl_artifact_seconds(const kl_artifact *a) {
  return a->seconds;
}

int kl_compile_cache_dir(kl_buf *out, const kl_compile_options *given) {
  kl_compile_options opts;
  int rc = kl__compile_options_take(&opts, given);
  if (rc < 0) return rc;
  kl_buf dir = KL_BUF_INIT;
  rc = opts.cache_dir ? kl__buf_puts(&dir, opts.cache_dir)
                      : kl__cache_dir_default(&dir);
  if (rc == 0) rc = kl__mkdir_p(dir.ptr);
  if (rc < 0) {
    kl_buf_dispose(&dir);
    return rc;
  }
  /* absolute and resolved: the compiler runs elsewhere, and its sandbox's
   * rules name folders as the kernel resolves them */
  char *real = realpath(dir.ptr, NULL);
  if (real) {
    dir.size = 0;
    rc = kl__buf_puts(&dir, real);
    free(real);
    if (rc < 0) {
      kl_buf_dispose(&dir);
      return kl__error_oom();
    }
  }
  kl__buf_give(out, &dir);
  return 0;
}

/* `cc --version`'s first line, per compiler, once per process. */
static pthread_mutex_t banner_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char compiler[PATH_MAX];
  char banner[256];
} banners[8];
static size_t nbanners;

static int compiler_banner(const char *compiler, char *out, size_t n) {
  pthread_mutex_lock(&banner_lock);
  for (size_t i = 0; i < nbanners; i++)
    if (strcmp(banners[i].compiler, compiler) == 0) {
      snprintf(out, n, "%s", banners[i].banner);
      pthread_mutex_unlock(&banner_lock);
      return 0;
    }
  pthread_mutex_unlock(&banner_lock);
  const char *argv[] = {compiler, "--version", NULL};
  kl__run_result r;
  int rc = kl__run(&r, argv, NULL, 30000, 4096);
  if (rc < 0)
    return kl__error(rc, KL_DOMAIN_OS,
                     "compiler '%s' cannot be run; set target.compiler in "
                     "the case or $CC",
                     compiler);
  const char *text = r.output.ptr ? r.output.ptr : "";
  snprintf(out, n, "%.*s", (int)strcspn(text, "\n"), text);
  kl_buf_dispose(&r.output);
  if (r.exit_code != 0)
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_OS,
                     "compiler '%s --version' failed (exit %d)", compiler,
                     r.exit_code);
  pthread_mutex_lock(&banner_lock);
  if (nbanners < KL_ARRAY_SIZE(banners)) {
    snprintf(banners[nbanners].compiler, sizeof(banners[0].compiler), "%s",
             compiler);
    snprintf(banners[nbanners].banner, sizeof(banners[0].banner), "%s", out);
    nbanners++;
  }
  pthread_mutex_unlock(&banner_lock);
  return 0;
}

/* The words a case adds to a compile line, '\0'-separated into *out: -I
 * for each target.include folder, then each target.libs entry (-lNAME,
 * or a file) and, for a shared library file, an rpath to its folder
 * (nvcc: -Xlinker=-rpath,DIR). Returns the count. */
static size_t link_argv(kl_buf *out, const kl_case *c) {
  bool cuda = kl_case_backend(c) == KL_BACKEND_CUDA;
  size_t n = 0;
  for (size_t i = 0; i < kl_case_include_count(c); i++, n++)
    kl__buf_printf(out, "-I%s%c", kl_case_include(c, i), 0);
  for (size_t i = 0; i < kl_case_lib_count(c); i++, n++) {
    const char *lib = kl_case_lib(c, i);
    kl__buf_printf(out, "%s%c", lib, 0);
    const char *slash = strrchr(lib, '/');
    if (lib[0] == '/' && slash && strstr(slash, ".so")) {
      kl__buf_printf(out, "%s-rpath,%.*s%c", cuda ? "-Xlinker=" : "-Wl,",
                     (int)(slash - lib), lib, 0);
      n++;
    }
  }
  return kl__buf_status(out) == 0 ? n : 0;
}

/* Split flags on spaces into argv (no quoting: flags are plain words). */
static size_t split_words(char *s, const char **argv, size_t max) {
  size_t n = 0;
  for (char *tok = s; *tok && n < max;) {
    while (*tok == ' ' || *tok == '\t')
      tok++;
    if (!*tok) break;
    argv[n++] = tok;
    while (*tok && *tok != ' ' && *tok != '\t')
      tok++;
    if (*tok) *tok++ = '\0';
  }
  return n;
}

static char *first_error_line(const char *log) {
  for (const char *p = log; p && *p;) {
    size_t len = strcspn(p, "\n");
    const char *hit = strstr(p, "error:");
    if (hit && hit < p + len) return kl__strndup(p, len);
    p += len;
    if (*p) p++;
  }
  return NULL;
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) +
         (double)(t1.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* The installation a compiler belongs to: <prefix>/bin/cc -> <prefix>,
 * resolved; NULL when it is not found. */
static char *tool_prefix(const char *compiler) {
  char *lib = kl__tool_lib_dir(compiler); /* <prefix>/lib64, resolved */
  char *prefix = lib ? kl__path_dir(lib) : NULL;
  kl__free(lib);
  return prefix;
}

/* Run the compiler in a sandbox: its own folder, the cache writable, the
 * case's folder (local headers) and the compiler's installation readable. */
static int compile_sandboxed(kl__run_result *r, const char *const *argv,
                             const kl_case *c, const char *cache,
                             const char *compiler, int timeout) {
  char *dir = NULL, *prefix = tool_prefix(compiler);
  int rc = kl__sandbox_dir_named(&dir, "compile");
  if (rc < 0) {
    kl__free(prefix);
    return rc;
  }
  const char *writable[] = {cache, NULL};
  /* the cache, the case, the compiler's prefix, and the case's header
   * folders and library files (target.include, target.libs) */
  const char *readable[4 + 2 * KL__CASE_MAX_LINK] = {cache, kl_case_dir(c),
                                                     prefix};
  size_t nr = prefix ? 3 : 2;
  for (size_t i = 0; i < kl_case_include_count(c); i++)
    readable[nr++] = kl_case_include(c, i);
  for (size_t i = 0; i < kl_case_lib_count(c); i++)
    if (kl_case_lib(c, i)[0] == '/') readable[nr++] = kl_case_lib(c, i);
  readable[nr] = NULL;
  kl__sandbox_spec spec = {
      .dir = dir, .writable = writable, .readable = readable, .limits = true};
  kl__sandbox sb;
  rc = kl__sandbox_prepare(&sb, &spec);
  if (rc == 0) {
    kl__run_extras io;
    memset(&io, 0, sizeof(io));
    io.sandbox = &sb;
    rc = kl__run_io(r, argv, NULL, timeout, 1 << 20, &io);
    kl__sandbox_dispose(&sb);
  }
  kl__sandbox_dir_remove(dir);
  kl__free(dir);
  kl__free(prefix);
  return rc;
}

/* The headers of a case (its folder, three levels down): the kernel
 * section may include them (the compiler gets -I<case folder>), so their
 * names and bytes are part of the key. */
static bool is_header(const char *name) {
  static const char *const ext[] = {".h",   ".cuh", ".hpp", ".hh",
                                    ".hxx", ".inc", ".inl", ".tcc"};
  size_t len = strlen(name);
  for (size_t i = 0; i < KL_ARRAY_SIZE(ext); i++) {
    size_t e = strlen(ext[i]);
    if (len > e && strcmp(name + len - e, ext[i]) == 0) return true;
  }
  return false;
}

static int hash_headers(kl__sha256 *h, const char *dir, const char *rel,
                        int depth) {
  char **names = NULL;
  size_t n = 0;
  int rc = kl__list_dir(&names, &n, dir, "", "the case folder");
  for (size_t i = 0; rc == 0 && i < n; i++) {
    char *path = kl__path_join(dir, names[i]);
    kl_buf sub = KL_BUF_INIT;
    kl__buf_printf(&sub, "%s%s%s", rel, *rel ? "/" : "", names[i]);
    if (!path || (rc = kl__buf_status(&sub)) < 0) {
      rc = rc < 0 ? rc : kl__error_oom();
    } else if (depth > 0 && kl__is_dir(path)) {
      rc = hash_headers(h, path, sub.ptr, depth - 1);
    } else if (is_header(names[i]) && kl__is_file(path)) {
      kl_buf text = KL_BUF_INIT;
      if ((rc = kl__read_file(&text, path)) == 0) {
        kl__sha256_update(h, sub.ptr, sub.size + 1);
        kl__sha256_update(h, text.ptr ? text.ptr : "", text.size);
      }
      kl_buf_dispose(&text);
    }
    kl_buf_dispose(&sub);
    kl__free(path);
  }
  kl__names_free(names, n);
  return rc;
}

/* A source file among target.libs (compiled with the kernel): by its
 * extension. */
static bool is_source(const char *word) {
  static const char *const ext[] = {".c", ".cc", ".cpp", ".cxx", ".cu"};
  size_t len = strlen(word);
  if (word[0] == '-') return false;
  for (size_t i = 0; i < KL_ARRAY_SIZE(ext); i++) {
    size_t e = strlen(ext[i]);
    if (len > e && strcmp(word + len - e, ext[i]) == 0) return true;
  }
  return false;
}

/* An entry's name: the key of its text and the fingerprint of the files
 * its build read (deps.c). */
static int entry_key(char out[65], const char *text_key, const kl__deps *d) {
  kl__sha256 h;
  kl__sha256_init(&h);
  kl__sha256_update(&h, text_key, 64);
  int rc = kl__deps_hash(&h, d);
  if (rc == 0) kl__sha256_hex(&h, out);
  return rc;
}

/* The files a build read: the headers of the compiler's make rule (tmp_d,
 * removed here), less the generated source and, for nvcc, the toolkit's
 * own headers (its version is in the key already), then the files of
 * target.libs. *known: the compiler wrote the rule (a failed compile may
 * not). */
static int build_deps(kl__deps *d, bool *known, const kl_case *c,
                      const char *tmp_d, const char *path_c,
                      const char *compiler, bool cuda) {
  kl_buf rule = KL_BUF_INIT;
  int rc = 0;
  *known = kl__is_file(tmp_d);
  if (*known && (rc = kl__read_file(&rule, tmp_d)) < 0) {
    if (rc == KL_ENOMEM) return rc;
    kl_error_clear();
    *known = false;
    rc = 0;
  }
  unlink(tmp_d);
  char *prefix = cuda ? tool_prefix(compiler) : NULL;
  char resolved[PATH_MAX];
  const char *skip = prefix && realpath(prefix, resolved) ? resolved : prefix;
  if (*known)
    rc = kl__deps_from_make(d, rule.ptr ? rule.ptr : "", path_c, skip);
  for (size_t i = 0; rc == 0 && i < kl_case_lib_count(c); i++)
    if (kl__is_file(kl_case_lib(c, i)))
      rc = kl__deps_add(d, kl_case_lib(c, i), NULL);
  kl__free(prefix);
  kl_buf_dispose(&rule);
  return rc;
}

/* A cached entry of base: the artifact (<base><ext>) or a failure kept as
 * <base>.fail, with its log redacted again. 1 when found, 0 when not. */
static int read_cached(kl_artifact *a, const char *base, const char *ext) {
  char path[PATH_MAX];
  kl_buf log = KL_BUF_INIT;
  snprintf(path, sizeof(path), "%s.log", base);
  if (kl__is_file(path) && kl__read_file(&log, path) < 0)
    kl_error_clear();         /* a missing log is no reason to recompile */
  if (kl__redact(&log) < 0) { /* secrets known now and not then */
    kl_buf_dispose(&log);
    return KL_ENOMEM;
  }
  a->log = kl__buf_detach(&log);
  snprintf(path, sizeof(path), "%s%s", base, ext);
  if (kl__is_file(path)) {
    a->ok = a->cached = true;
    a->path = kl__strdup(path);
    return a->path && a->log ? 1 : kl__error_oom();
  }
  snprintf(path, sizeof(path), "%s.fail", base);
  if (kl__is_file(path)) {
    a->cached = true;
    a->first_error = first_error_line(a->log);
    return a->log ? 1 : kl__error_oom();
  }
  kl__free(a->log);
  a->log = NULL;
  return 0;
}

/* The tool's output as a's log, redacted, also kept as <base>.log. */
static int keep_log(kl_artifact *a, kl__run_result *r, const char *base) {
  if (kl__redact(&r->output) < 0) {
    kl_buf_dispose(&r->output);
    return KL_ENOMEM;
  }
  if (!(a->log = kl__buf_detach(&r->output))) return kl__error_oom();
  char log_path[PATH_MAX];
  snprintf(log_path, sizeof(log_path), "%s.log", base);
  kl__write_file_atomic(log_path, a->log, strlen(a->log));
  return 0;
}

/* A failed build, kept (<base>.fail) so that the same input fails at once. */
static void keep_failure(kl_artifact *a, const char *base) {
  char fail_path[PATH_MAX];
  snprintf(fail_path, sizeof(fail_path), "%s.fail", base);
  kl__write_file_atomic(fail_path, "", 0);
  a->first_error = first_error_line(a->log);
}

/* A python case: nothing to compile. The candidate goes into the cache
 * (<key>.py, its syntax checked by the interpreter, a failure kept as
 * <key>.fail with the log) beside the description kl-pyworker loads
 * (<key>.json: the artifact's path). The key covers the description and
 * the candidate; the module is read when loaded, not copied. */
static int prepare_python(kl_artifact **out, const kl_case *c,
                          const char *candidate,
                          const kl_compile_options *opts) {
  kl_buf desc = KL_BUF_INIT, dir = KL_BUF_INIT, module = KL_BUF_INIT;
  kl_artifact *a = NULL;
  int rc = 0;
  /* the baseline under tunables: the module's text is the candidate */
  if (!candidate && opts->defines && opts->defines[0]) {
    if ((rc = kl__read_file(&module, kl_case_kernel_path(c))) < 0) return rc;
    candidate = module.ptr ? module.ptr : "";
  }
  rc = kl__python_case_describe(&desc, c, NULL);
  if (rc < 0 || (rc = kl_compile_cache_dir(&dir, opts)) < 0) goto done;
  if (!(a = kl__calloc(1, sizeof(*a)))) {
    rc = kl__error_oom();
    goto done;
  }
  kl__sha256 h;
  kl__sha256_init(&h);
  kl__sha256_update(&h, "python-plugin\n", 14);
  kl__sha256_update(&h, desc.ptr, desc.size + 1);
  if (candidate) kl__sha256_update(&h, candidate, strlen(candidate) + 1);
  for (size_t i = 0; opts->defines && opts->defines[i]; i++)
    kl__sha256_update(&h, opts->defines[i], strlen(opts->defines[i]) + 1);
  kl__sha256_hex(&h, a->key);
  char base[PATH_MAX / 2], path_py[PATH_MAX], path_json[PATH_MAX];
  if (dir.size + 66 >= sizeof(base)) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_OS, "%s: cache folder path too long",
                   dir.ptr);
    goto done;
  }
  snprintf(base, sizeof(base), "%s/%s", dir.ptr, a->key);
  snprintf(path_py, sizeof(path_py), "%s.py", base);
  snprintf(path_json, sizeof(path_json), "%s.json", base);
  if ((rc = read_cached(a, base, ".json")) != 0) {
    rc = rc < 0 ? rc : 0;
    goto done;
  }
  if (candidate) {
    if ((rc = kl__write_file_atomic(path_py, candidate, strlen(candidate))) < 0)
      goto done;
    /* a syntax error is the candidate's compile error; tunables replace
     * the values of the file's top-level assignments to their names */
    const char *argv[8 + 64] = {
        "python3",
        "-c",
        "import ast, sys\n"
        "path, name, defs = sys.argv[1], sys.argv[2], sys.argv[3:]\n"
        "src = open(path, 'rb').read()\n"
        "def fail(line, col, msg):\n"
        "    print('%s:%s:%s: error: %s' % (name, line, col, msg))\n"
        "    sys.exit(1)\n"
        "try:\n"
        "    tree = ast.parse(src, name)\n"
        "except SyntaxError as e:\n"
        "    fail(e.lineno, e.offset, e.msg)\n"
        "starts = [0]\n"
        "for l in src.splitlines(True):\n"
        "    starts.append(starts[-1] + len(l))\n"
        "edits = []\n"
        "for d in defs:\n"
        "    key, _, val = d.partition('=')\n"
        "    try:\n"
        "        ast.parse(val, mode='eval')\n"
        "    except SyntaxError:\n"
        "        fail(1, 1, 'tunable %s: %r is not a Python expression' % "
        "(key, val))\n"
        "    hits = [n.value for n in tree.body if n.__class__.__name__ in "
        "('Assign', 'AnnAssign') and n.value is not None and any("
        "getattr(t, 'id', None) == key for t in getattr(n, 'targets', "
        "[getattr(n, 'target', None)]))]\n"
        "    if not hits:\n"
        "        print('%s: note: tunable %s: not applied, the file assigns "
        "no %s at the top level' % (name, key, key))\n"
        "    for v in hits:\n"
        "        edits.append((starts[v.lineno - 1] + v.col_offset, "
        "starts[v.end_lineno - 1] + v.end_col_offset, val.encode()))\n"
        "for a, b, v in sorted(edits, reverse=True):\n"
        "    src = src[:a] + v + src[b:]\n"
        "if edits:\n"
        "    open(path, 'wb').write(src)\n",
        path_py,
        opts->candidate_name ? opts->candidate_name : "candidate.py",
        NULL};
    size_t na = 5; /* after the file's name */
    for (size_t i = 0; opts->defines && opts->defines[i]; i++) {
      if (na + 2 >= KL_ARRAY_SIZE(argv)) {
        rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                       "more than 64 tunables for one candidate");
        goto done;
      }
      argv[na++] = opts->defines[i];
    }
    argv[na] = NULL;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kl__run_result r;
    if ((rc = compile_sandboxed(&r, argv, c, dir.ptr, "python3", 60000)) < 0)
      goto done;
    a->seconds = seconds_since(&t0);
    if ((rc = keep_log(a, &r, base)) < 0) goto done;
    if (r.timed_out) { /* not kept: it may pass next time */
      a->first_error = first_error_line(a->log);
      goto done;
    }
    if (r.exit_code != 0) {
      keep_failure(a, base);
      goto done;
    }
  } else if (!(a->log = kl__strdup(""))) {
    rc = kl__error_oom();
    goto done;
  }
  kl_buf_dispose(&desc);
  if ((rc = kl__python_case_describe(&desc, c, candidate ? path_py : NULL)) <
          0 ||
      (rc = kl__write_file_atomic(path_json, desc.ptr, desc.size)) < 0)
    goto done;
  a->ok = true;
  if (!(a->path = kl__strdup(path_json))) rc = kl__error_oom();
  kl_error_clear();
done:
  kl_buf_dispose(&desc);
  kl_buf_dispose(&dir);
  kl_buf_dispose(&module);
  if (rc < 0) {
    kl_artifact_free(a);
    return rc;
  }
  *out = a;
  return 0;
}

int kl_compile_plugin(kl_artifact **out, const kl_case *c,
                      const char *candidate, const kl_compile_options *given) {
  *out = NULL;
  kl_compile_options full;
  int rc = kl__compile_options_take(&full, given);
  if (rc < 0) return rc;
  const kl_compile_options *opts = &full;
  if (kl_case_backend(c) == KL_BACKEND_PYTHON)
    return prepare_python(out, c, candidate, opts);
  kl_harness_options hopts = KL_HARNESS_OPTIONS_INIT;
  hopts.form = KL_HARNESS_PLUGIN;
  hopts.candidate_name = opts->candidate_name;
  kl_buf src = KL_BUF_INIT, dir = KL_BUF_INIT, key_text = KL_BUF_INIT;
  kl_buf link_words = KL_BUF_INIT; /* the case's -I, library and rpath words */
  kl__deps deps = {0};             /* the files the entry was built from */
  kl_artifact *a = NULL;
  char *flags_copy = NULL;
  rc = kl_harness_generate(&src, c, candidate, &hopts);
  if (rc < 0) goto done;
  if ((rc = kl_compile_cache_dir(&dir, opts)) < 0) goto done;
  bool cuda = kl_case_backend(c) == KL_BACKEND_CUDA;
  const char *env_cc = getenv(cuda ? "NVCC" : "CC");
  const char *compiler = opts->compiler        ? opts->compiler
                         : kl_case_compiler(c) ? kl_case_compiler(c)
                         : env_cc && env_cc[0] ? env_cc
                         : cuda                ? "nvcc"
                                               : "cc";
  const char *flags = opts->flags        ? opts->flags
                      : kl_case_flags(c) ? kl_case_flags(c)
                      : cuda             ? "-O3 -lineinfo"
                                         : "-O3 -march=native";
  char banner[256];
  if ((rc = compiler_banner(compiler, banner, sizeof(banner))) < 0) goto done;
  /* The key covers everything that changes the object. */
  kl__sha256 h;
  kl__sha256_init(&h);
  kl__sha256_update(&h, src.ptr, src.size + 1);
  if ((rc = hash_headers(&h, kl_case_dir(c), "", 3)) < 0) goto done;
  rc = kl__buf_printf(&key_text, "%s\n%s\n%s\n%s-plugin\n%s\n", compiler,
                      banner, flags, cuda ? "cuda" : "host",
                      cuda ? kl_case_arch(c) : "");
  for (size_t i = 0; rc == 0 && i < kl_case_include_count(c); i++)
    rc = kl__buf_printf(&key_text, "-I%s\n", kl_case_include(c, i));
  for (size_t i = 0; rc == 0 && i < kl_case_lib_count(c); i++)
    rc = kl__buf_printf(&key_text, "%s\n", kl_case_lib(c, i));
  for (size_t i = 0; rc == 0 && opts->defines && opts->defines[i]; i++)
    rc = kl__buf_printf(&key_text, "-D%s\n", opts->defines[i]);
  if (rc < 0) goto done;
  kl__sha256_update(&h, key_text.ptr, key_text.size);
  if (!(a = kl__calloc(1, sizeof(*a)))) {
    rc = kl__error_oom();
    goto done;
  }
  char text_key[65];
  kl__sha256_hex(&h, text_key);
  /* base is at most half of PATH_MAX, so every name derived from it fits */
  char text_base[PATH_MAX / 2], base[PATH_MAX / 2], path_c[PATH_MAX],
      path_so[PATH_MAX], tmp_so[PATH_MAX], tmp_d[PATH_MAX], deps_path[PATH_MAX];
  if (dir.size + 66 >= sizeof(base)) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_OS, "%s: cache folder path too long",
                   dir.ptr);
    goto done;
  }
  /* The files the last build of this text read, as they are now, name the
   * entry (deps.c). */
  snprintf(text_base, sizeof(text_base), "%s/%s", dir.ptr, text_key);
  snprintf(deps_path, sizeof(deps_path), "%s.deps", text_base);
  bool listed;
  if ((rc = kl__deps_read(&deps, deps_path, &listed)) < 0 ||
      (rc = entry_key(a->key, text_key, &deps)) < 0)
    goto done;
  snprintf(base, sizeof(base), "%s/%s", dir.ptr, a->key);
  if (listed && (rc = read_cached(a, base, ".so")) != 0) {
    rc = rc < 0 ? rc : 0;
    goto done;
  }
  /* Compile: source next to the object, so a log's paths lead to it. */
  snprintf(path_c, sizeof(path_c), "%s.%s", text_base, cuda ? "cu" : "c");
  snprintf(tmp_so, sizeof(tmp_so), "%s.so.tmp.%ld.%ld", text_base,
           (long)getpid(), (long)gettid());
  snprintf(tmp_d, sizeof(tmp_d), "%s.d.tmp.%ld.%ld", text_base, (long)getpid(),
           (long)gettid());
  if ((rc = kl__write_file_atomic(path_c, src.ptr, src.size)) < 0) goto done;
  if (!(flags_copy = kl__strdup(flags))) {
    rc = kl__error_oom();
    goto done;
  }
  /* argv: compiler, the flags' words, one -DNAME=VALUE per define, then
   * the fixed plugin options. */
  const char *argv[128 + 3 * KL__CASE_MAX_LINK];
  size_t n = 0;
  argv[n++] = compiler;
  n += split_words(flags_copy, argv + n, 64);
  size_t ndefs = 0;
  while (opts->defines && opts->defines[ndefs] && ndefs < 48)
    ndefs++;
  char **def_words = kl__calloc(ndefs ? ndefs : 1, sizeof(char *));
  for (size_t i = 0; def_words && i < ndefs; i++) {
    kl_buf word = KL_BUF_INIT;
    if (kl__buf_printf(&word, "-D%s", opts->defines[i]) < 0) {
      kl_buf_dispose(&word);
      break;
    }
    def_words[i] = kl__buf_detach(&word);
    argv[n++] = def_words[i];
  }
  bool defs_ok = def_words != NULL;
  for (size_t i = 0; defs_ok && i < ndefs; i++)
    defs_ok = def_words[i] != NULL;
  char arch_flag[64], rpath_flag[PATH_MAX + 32], include_flag[PATH_MAX + 8];
  /* the case's header folders (target.include), then its own folder */
  size_t nlink = link_argv(&link_words, c);
  char *lw = link_words.ptr;
  for (size_t i = 0; lw && i < kl_case_include_count(c);
       i++, lw += strlen(lw) + 1)
    argv[n++] = lw;
  /* headers that live beside the kernel, the folder from the root: the
   * compiler runs in a folder of its own */
  char *case_dir = kl__path_absolute(kl_case_dir(c));
  snprintf(include_flag, sizeof(include_flag), "-I%s",
           case_dir ? case_dir : kl_case_dir(c));
  kl__free(case_dir);
  argv[n++] = include_flag;
  argv[n++] = "-shared";
  if (cuda) {
    /* one shared CUDA runtime for every plugin of a worker, so that
     * streams pass between plugins; found again through an rpath */
    snprintf(arch_flag, sizeof(arch_flag), "-arch=%s", kl_case_arch(c));
    argv[n++] = arch_flag;
    argv[n++] = "-Xcompiler";
    argv[n++] = "-fPIC";
    argv[n++] = "-cudart";
    argv[n++] = "shared";
    char *libdir = kl__tool_lib_dir(compiler);
    if (libdir) {
      snprintf(rpath_flag, sizeof(rpath_flag), "-Xlinker=-rpath,%s", libdir);
      argv[n++] = rpath_flag;
      kl__free(libdir);
    }
  } else {
    argv[n++] = "-fPIC";
    /* a call of a function nobody declared (a candidate that misspells
     * the entry) fails here, where the compiler says so and what it
     * meant, not at load as an undefined symbol (an error since GCC 14) */
    argv[n++] = "-Werror=implicit-function-declaration";
  }
  /* the headers the kernel's translation unit reads, as a make rule: the
   * last source's, so the generated one goes after the sources of
   * target.libs, and before its archives and libraries, which the linker
   * reads in order */
  argv[n++] = "-MMD";
  argv[n++] = "-MF";
  argv[n++] = tmp_d;
  argv[n++] = "-o";
  argv[n++] = tmp_so;
  const char *libs_from = lw;
  for (size_t i = kl_case_include_count(c); lw && i < nlink;
       i++, lw += strlen(lw) + 1)
    if (is_source(lw)) argv[n++] = lw;
  argv[n++] = path_c;
  /* the case's libraries (target.libs) after the source that needs them,
   * with an rpath to each library file's folder */
  lw = (char *)libs_from;
  for (size_t i = kl_case_include_count(c); lw && i < nlink;
       i++, lw += strlen(lw) + 1)
    if (!is_source(lw)) argv[n++] = lw;
  argv[n++] = "-lm";
  argv[n] = NULL;
  struct timespec t0, began; /* began: the clock of file times */
  clock_gettime(CLOCK_MONOTONIC, &t0);
  clock_gettime(CLOCK_REALTIME_COARSE, &began);
  kl__run_result r;
  int timeout = opts->timeout_ms > 0 ? opts->timeout_ms : 120000;
  rc = defs_ok ? compile_sandboxed(&r, argv, c, dir.ptr, compiler, timeout)
               : kl__error_oom();
  for (size_t i = 0; def_words && i < ndefs; i++)
    kl__free(def_words[i]);
  kl__free(def_words);
  if (rc < 0) {
    unlink(tmp_d);
    goto done;
  }
  a->seconds = seconds_since(&t0);
  /* what this build read: the list kept for the next lookup, and the
   * entry's name from it. Kept only where the compiler wrote its rule and
   * no file changed while it ran (the result would name bytes it may not
   * have read): else used once and left under its temporary name. */
  bool known = false;
  kl__deps_dispose(&deps);
  if ((rc = build_deps(&deps, &known, c, tmp_d, path_c, compiler, cuda)) < 0 ||
      (rc = entry_key(a->key, text_key, &deps)) < 0) {
    kl_buf_dispose(&r.output);
    unlink(tmp_so);
    goto done;
  }
  bool keep = known && !r.timed_out && kl__deps_settled(&deps, &began);
  if (keep && (rc = kl__deps_write(&deps, deps_path)) < 0) {
    if (rc == KL_ENOMEM) {
      kl_buf_dispose(&r.output);
      unlink(tmp_so);
      goto done;
    }
    keep = false; /* a cache left unwritten: built again next time */
  }
  snprintf(base, sizeof(base), "%s/%s", dir.ptr, a->key);
  snprintf(path_so, sizeof(path_so), "%s.so", base);
  if ((rc = keep_log(a, &r, base)) < 0) {
    unlink(tmp_so);
    goto done;
  }
  if (r.timed_out) {
    /* a slow compile is not cached as a failure: it may pass next time */
    unlink(tmp_so);
    rc = kl__error(KL_ETIMEOUT, KL_DOMAIN_OS,
                   "the compiler ran past %d ms on %s", timeout, path_c);
    goto done;
  }
  if (r.exit_code == 0) {
    /* a rename refused leaves it usable where it is, uncached */
    bool kept = keep && rename(tmp_so, path_so) == 0;
    a->ok = true;
    if (!(a->path = kl__strdup(kept ? path_so : tmp_so))) {
      rc = kl__error_oom();
      goto done;
    }
  } else {
    unlink(tmp_so);
    /* a failure is kept only where its headers are known, else a header
     * mended would still be answered with the old error */
    if (keep)
      keep_failure(a, base);
    else
      a->first_error = first_error_line(a->log);
  }
  kl_error_clear();
  rc = 0;
done:
  kl__deps_dispose(&deps);
  kl__free(flags_copy);
  kl_buf_dispose(&link_words);
  kl_buf_dispose(&src);
  kl_buf_dispose(&dir);
  kl_buf_dispose(&key_text);
  if (rc < 0) {
    kl_artifact_free(a);
    return rc;
  }
  *out = a;
  return 0;
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t compile_options_sizes[] = {0, sizeof(kl_compile_options)};

KL__OPTIONS_FUNCTIONS(kl_compile_options, kl_compile_options_init,
                      kl__compile_options_take, KL_COMPILE_OPTIONS_INIT,
                      compile_options_sizes)
