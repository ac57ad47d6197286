/* kl_observe: run a program under the injection library and write one
 * observation file.
 *
 * The program runs with CUDA_INJECTION64_PATH naming libkernlab-inject.so
 * and KL_OBSERVE_OUT naming a fresh temporary folder; each process of the
 * program that initialises CUDA writes obs-<pid>.json there at exit
 * (inject.c). Those files are merged here: kernels by name (their counts
 * and times summed), launches re-indexed and tagged with their pid. The
 * program, its arguments, the time, its exit status and the limits are
 * added, and the result is written through a temp name and read back with
 * kl_observation_load, so what the caller gets is what a later reader
 * will see.
 *
 * Python programs: PYTHONPATH gains python-observe/ beside the injection
 * library, whose sitecustomize.py records each Triton kernel call by
 * configuration (tensors' layouts, scalars, constexprs, grid) and writes
 * py-<pid>.json to the same folder; those configurations, tagged with
 * their pid, become the file's "python_launches" and the process's Python
 * versions and errors join its "processes" entry. */
#define _GNU_SOURCE /* dladdr, mkdtemp */
#include <stddef.h>
#include <dlfcn.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/json.h"
#include "observe_internal.h"

#ifndef KL_INSTALL_LIBEXEC_DIR
#define KL_INSTALL_LIBEXEC_DIR "/usr/local/libexec/kernlab"
#endif
#ifndef KL_BUILD_INJECT
#define KL_BUILD_INJECT ""
#endif

#define INJECT_NAME "libkernlab-inject.so"

static char *find_inject(void) {
  const char *env = getenv("KERNLAB_INJECT");
  if (env && env[0]) return kl__is_file(env) ? kl__strdup(env) : NULL;
  Dl_info info;
  if (dladdr((void *)&kl_observe, &info) && info.dli_fname) {
    char *dir = kl__path_dir(info.dli_fname);
    char *cand =
        dir ? kl__path_join(dir, "../libexec/kernlab/" INJECT_NAME) : NULL;
    kl__free(dir);
    if (cand && kl__is_file(cand)) return cand;
    kl__free(cand);
  }
  if (kl__is_file(KL_INSTALL_LIBEXEC_DIR "/" INJECT_NAME))
    return kl__strdup(KL_INSTALL_LIBEXEC_DIR "/" INJECT_NAME);
  if (KL_BUILD_INJECT[0] && kl__is_file(KL_BUILD_INJECT))
    return kl__strdup(KL_BUILD_INJECT);
  return NULL;
}

/* ---- merging the processes' files ---------------------------------------- */

typedef struct merged {
  json_object *kernels;   /* array of merged kernel objects */
  json_object *python;    /* array: Triton calls by configuration */
  json_object *launches;  /* array */
  json_object *processes; /* array */
  json_object *devices;   /* array, by id */
  json_object *libraries; /* array of paths: the CUDA libraries mapped */
} merged;

static int64_t int_of(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

static void add_int(json_object *o, const char *key, int64_t more) {
  json_object_object_add(o, key, json_object_new_int64(int_of(o, key) + more));
}

/* Index of the merged kernel named like k, adding it when new; -1 OOM. */
static int64_t merge_kernel(merged *m, json_object *k) {
  json_object *name, *v;
  if (!json_object_object_get_ex(k, "name", &name)) return -1;
  size_t n = json_object_array_length(m->kernels);
  for (size_t i = 0; i < n; i++) {
    json_object *e = json_object_array_get_idx(m->kernels, i);
    json_object *en;
    json_object_object_get_ex(e, "name", &en);
    if (strcmp(json_object_get_string(en), json_object_get_string(name)))
      continue;
    static const char *const sums[] = {"launches", "timed", "total_ns",
                                       "recorded", "not_recorded"};
    for (size_t s = 0; s < KL_ARRAY_SIZE(sums); s++)
      add_int(e, sums[s], int_of(k, sums[s]));
    if (json_object_object_get_ex(k, "matched", &v) &&
        json_object_get_boolean(v))
      json_object_object_add(e, "matched", json_object_new_boolean(1));
    return (int64_t)i;
  }
  json_object_array_add(m->kernels, json_object_get(k));
  return (int64_t)n;
}

/* The processes entry of pid, added when new. */
static json_object *process_of(merged *m, int64_t pid) {
  for (size_t i = 0; i < json_object_array_length(m->processes); i++) {
    json_object *p = json_object_array_get_idx(m->processes, i);
    if (int_of(p, "pid") == pid) return p;
  }
  json_object *p = json_object_new_object();
  json_object_object_add(p, "pid", json_object_new_int64(pid));
  json_object_array_add(m->processes, p);
  return p;
}

/* A Python process's record (py-<pid>.json): its configurations, its
 * versions and what went wrong in the observer. */
static int merge_python(merged *m, json_object *root) {
  json_object *v;
  int64_t pid = int_of(root, "pid");
  json_object *proc = process_of(m, pid);
  if (json_object_object_get_ex(root, "versions", &v))
    json_object_object_add(proc, "python", json_object_get(v));
  if (json_object_object_get_ex(root, "errors", &v))
    json_object_object_add(proc, "python_errors", json_object_get(v));
  if (json_object_object_get_ex(root, "dropped_configs", &v))
    json_object_object_add(proc, "python_dropped_configs", json_object_get(v));
  if (json_object_object_get_ex(root, "configs", &v) &&
      json_object_is_type(v, json_type_array))
    for (size_t i = 0; i < json_object_array_length(v); i++) {
      json_object *c = json_object_array_get_idx(v, i);
      if (!json_object_is_type(c, json_type_object)) continue;
      json_object_object_add(c, "pid", json_object_new_int64(pid));
      json_object_array_add(m->python, json_object_get(c));
    }
  return 0;
}

static int merge_file(merged *m, const char *path) {
  kl_buf text = KL_BUF_INIT;
  int rc = kl__read_file(&text, path);
  json_object *root = NULL, *v;
  if (rc == 0)
    rc = kl__json_parse(&root, text.ptr ? text.ptr : "", path,
                        "an injection record");
  kl_buf_dispose(&text);
  if (rc < 0) return rc;
  json_object *tag;
  if (json_object_object_get_ex(root, "kernlab_python_launches", &tag)) {
    rc = merge_python(m, root);
    json_object_put(root);
    return rc;
  }
  json_object *proc = process_of(m, int_of(root, "pid"));
  static const char *const keep[] = {"pid",
                                     "cupti_version",
                                     "kernel_records",
                                     "unmatched_records",
                                     "dropped_records",
                                     "errors"};
  for (size_t i = 0; i < KL_ARRAY_SIZE(keep); i++)
    if (json_object_object_get_ex(root, keep[i], &v))
      json_object_object_add(proc, keep[i], json_object_get(v));
  if (json_object_object_get_ex(root, "devices", &v))
    for (size_t i = 0; i < json_object_array_length(v); i++) {
      json_object *d = json_object_array_get_idx(v, i);
      int64_t id = int_of(d, "id");
      bool seen = false;
      for (size_t j = 0; j < json_object_array_length(m->devices); j++)
        seen |= int_of(json_object_array_get_idx(m->devices, j), "id") == id;
      if (!seen) json_object_array_add(m->devices, json_object_get(d));
    }
  if (json_object_object_get_ex(root, "libraries", &v) &&
      json_object_is_type(v, json_type_array))
    for (size_t i = 0; i < json_object_array_length(v); i++) {
      json_object *lib = json_object_array_get_idx(v, i);
      const char *lib_path = json_object_get_string(lib);
      bool seen = !json_object_is_type(lib, json_type_string);
      for (size_t j = 0; !seen && j < json_object_array_length(m->libraries);
           j++)
        seen = strcmp(json_object_get_string(
                          json_object_array_get_idx(m->libraries, j)),
                      lib_path) == 0;
      if (!seen) json_object_array_add(m->libraries, json_object_get(lib));
    }
  json_object *kernels = NULL, *launches = NULL;
  json_object_object_get_ex(root, "kernels", &kernels);
  json_object_object_get_ex(root, "launches", &launches);
  size_t nk = kernels ? json_object_array_length(kernels) : 0;
  int64_t *map = kl__calloc(nk ? nk : 1, sizeof *map);
  if (!map) {
    json_object_put(root);
    return kl__error_oom();
  }
  for (size_t i = 0; i < nk; i++)
    map[i] = merge_kernel(m, json_object_array_get_idx(kernels, i));
  int64_t pid = int_of(root, "pid");
  for (size_t i = 0; launches && i < json_object_array_length(launches); i++) {
    json_object *l = json_object_array_get_idx(launches, i);
    int64_t k = int_of(l, "kernel");
    if (k < 0 || (size_t)k >= nk || map[k] < 0) continue;
    json_object_object_add(l, "kernel", json_object_new_int64(map[k]));
    json_object_object_add(l, "pid", json_object_new_int64(pid));
    json_object_array_add(m->launches, json_object_get(l));
  }
  kl__free(map);
  json_object_put(root);
  return 0;
}

static int put_json(kl_buf *b, json_object *o) {
  return kl__buf_puts(
      b, json_object_to_json_string_ext(o, JSON_C_TO_STRING_SPACED |
                                               JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* One launch or kernel per line, so the file greps and diffs well. */
static int put_lines(kl_buf *b, const char *key, json_object *arr) {
  kl__buf_printf(b, ",\n\"%s\": [", key);
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    kl__buf_puts(b, i ? ",\n  " : "\n  ");
    put_json(b, json_object_array_get_idx(arr, i));
  }
  kl__buf_puts(b, "]");
  return kl__buf_status(b);
}

static int write_observation(const char *path, merged *m,
                             const char *const *argv,
                             const kl_observe_options *opts,
                             const kl__run_result *res, time_t started,
                             double wall_ms) {
  json_object *head = json_object_new_object();
  json_object *prog = json_object_new_object(), *args = json_object_new_array();
  for (size_t i = 0; argv[i]; i++)
    json_object_array_add(args, json_object_new_string(argv[i]));
  json_object_object_add(prog, "argv", args);
  char cwd[4096];
  const char *dir = opts->cwd ? opts->cwd : getcwd(cwd, sizeof cwd);
  json_object_object_add(prog, "cwd", dir ? json_object_new_string(dir) : NULL);
  json_object_object_add(prog, "exit_code",
                         json_object_new_int(res->exit_code));
  json_object_object_add(prog, "signal", json_object_new_int(res->signal));
  json_object_object_add(prog, "wall_s",
                         json_object_new_double(wall_ms / 1000.0));
  char when[32] = "";
  struct tm tm;
  if (gmtime_r(&started, &tm))
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  json_object *limits = json_object_new_object();
  json_object_object_add(limits, "max_launches",
                         json_object_new_int64(opts->max_launches));
  json_object_object_add(limits, "max_bytes",
                         json_object_new_int64(opts->max_bytes));
  kl_buf b = KL_BUF_INIT;
  kl__buf_printf(&b,
                 "{\"kernlab_observation\": 1, "
                 "\"kernlab_version\": \"%s\", \"time\": \"%s\""
                 ",\n\"program\": ",
                 kl_version_string(), when);
  put_json(&b, prog);
  kl__buf_puts(&b, ",\n\"kernel_filter\": ");
  kl__buf_json_string(&b, opts->kernel);
  kl__buf_puts(&b, ", \"limits\": ");
  put_json(&b, limits);
  kl__buf_puts(&b, ",\n\"devices\": ");
  put_json(&b, m->devices);
  kl__buf_puts(&b, ",\n\"libraries\": ");
  put_json(&b, m->libraries);
  kl__buf_puts(&b, ",\n\"processes\": ");
  put_json(&b, m->processes);
  put_lines(&b, "kernels", m->kernels);
  put_lines(&b, "launches", m->launches);
  if (json_object_array_length(m->python))
    put_lines(&b, "python_launches", m->python);
  kl__buf_puts(&b, "}\n");
  json_object_put(prog);
  json_object_put(limits);
  json_object_put(head);
  int rc = kl__buf_status(&b);
  if (rc == 0) rc = kl__write_file_atomic(path, b.ptr, b.size);
  kl_buf_dispose(&b);
  return rc;
}

static int merge_folder(merged *m, const char *dir) {
  char **names = NULL;
  size_t n = 0;
  int rc = kl__list_dir(&names, &n, dir, ".json", "injection records");
  for (size_t i = 0; rc == 0 && i < n; i++) {
    char *p = kl__path_join(dir, names[i]);
    rc = p ? merge_file(m, p) : kl__error_oom();
    kl__free(p);
  }
  /* the folder is ours: remove what is in it, whatever happened */
  for (size_t i = 0; i < n; i++) {
    char *p = kl__path_join(dir, names[i]);
    if (p) unlink(p);
    kl__free(p);
  }
  kl__names_free(names, n);
  return rc;
}

int kl_observe(kl_observation **out, const char *const *argv,
               const kl_observe_options *in) {
  *out = NULL;
  kl_observe_options opts;
  int taken = kl__observe_options_take(&opts, in);
  if (taken < 0) return taken;
  if (!in || !opts.output || !argv || !argv[0])
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_observe needs a program and an output file");
  if (!opts.max_launches) opts.max_launches = 100000;
  if (!opts.max_bytes) opts.max_bytes = 64 << 20;
  if (opts.max_launches < 0 || opts.max_bytes < 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "limits must be positive");
  if (opts.kernel) {
    regex_t re;
    if (regcomp(&re, opts.kernel, REG_EXTENDED | REG_NOSUB) != 0)
      return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                       "--kernel '%s': not a regular expression", opts.kernel);
    regfree(&re);
  }
  char *inject = find_inject();
  if (!inject)
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_NONE,
                     "no injection library (" INJECT_NAME "): kernlab was "
                     "built without CUPTI, or KERNLAB_INJECT names no file");
  const char *tmp = getenv("TMPDIR");
  char *dir = kl__path_join(tmp && *tmp ? tmp : "/tmp", "kl-observe-XXXXXX");
  if (!dir || !mkdtemp(dir)) {
    int rc = dir ? kl__error_os(KL_EIO, dir, "cannot create a folder")
                 : kl__error_oom();
    kl__free(dir);
    kl__free(inject);
    return rc;
  }
  kl_buf env[6] = {KL_BUF_INIT, KL_BUF_INIT, KL_BUF_INIT,
                   KL_BUF_INIT, KL_BUF_INIT, KL_BUF_INIT};
  kl__buf_printf(&env[0], "CUDA_INJECTION64_PATH=%s", inject);
  kl__buf_printf(&env[1], "KL_OBSERVE_OUT=%s", dir);
  kl__buf_printf(&env[2], "KL_OBSERVE_MAX_LAUNCHES=%lld",
                 (long long)opts.max_launches);
  kl__buf_printf(&env[3], "KL_OBSERVE_MAX_BYTES=%lld",
                 (long long)opts.max_bytes);
  kl__buf_printf(&env[4], "KL_OBSERVE_KERNEL=%s",
                 opts.kernel ? opts.kernel : "");
  /* python-observe/ beside the injection library, first on the path */
  char *inject_dir = kl__path_dir(inject);
  const char *pypath = getenv("PYTHONPATH");
  kl__buf_printf(&env[5], "PYTHONPATH=%s/python-observe%s%s",
                 inject_dir ? inject_dir : ".", pypath && *pypath ? ":" : "",
                 pypath ? pypath : "");
  kl__free(inject_dir);
  merged m = {json_object_new_array(), json_object_new_array(),
              json_object_new_array(), json_object_new_array(),
              json_object_new_array(), json_object_new_array()};
  kl__run_result res;
  memset(&res, 0, sizeof res);
  int rc = 0;
  for (size_t i = 0; i < KL_ARRAY_SIZE(env); i++)
    if ((rc = kl__buf_status(&env[i])) < 0) goto done;
  const char *envv[] = {env[0].ptr, env[1].ptr, env[2].ptr, env[3].ptr,
                        env[4].ptr, env[5].ptr, NULL};
  kl__run_extras io = {.env = envv, .inherit = !opts.capture_output};
  time_t started = time(NULL);
  double t0 = kl__now_ms();
  rc = kl__run_io(&res, argv, opts.cwd, 0, 4u << 20, &io);
  double wall = kl__now_ms() - t0;
  int merged_rc = merge_folder(&m, dir); /* empties the folder either way */
  if (rc < 0 || (rc = merged_rc) < 0 ||
      (rc = write_observation(opts.output, &m, argv, &opts, &res, started,
                              wall)) < 0 ||
      (rc = kl_observation_load(out, opts.output)) < 0)
    goto done;
  if (opts.capture_output) (*out)->output = kl__buf_detach(&res.output);
done:
  rmdir(dir);
  json_object_put(m.kernels);
  json_object_put(m.python);
  json_object_put(m.launches);
  json_object_put(m.processes);
  json_object_put(m.devices);
  json_object_put(m.libraries);
  for (size_t i = 0; i < KL_ARRAY_SIZE(env); i++)
    kl_buf_dispose(&env[i]);
  kl__free(dir);
  kl__free(inject);
  kl_buf_dispose(&res.output);
  return rc;
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t observe_options_sizes[] = {0, sizeof(kl_observe_options)};

KL__OPTIONS_FUNCTIONS(kl_observe_options, kl_observe_options_init,
                      kl__observe_options_take, KL_OBSERVE_OPTIONS_INIT,
                      observe_options_sizes)
