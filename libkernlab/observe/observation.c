/* Observation files read back (the format kl_observe writes; see
 * docs/observe.md).
 *
 * The whole file is parsed with json-c and every launch is checked before
 * it is kept: geometry within CUDA's limits, argument bytes as hex of the
 * declared size, kernel indices in range. Observation files come from
 * other machines and other versions, so a bad one is an error located at
 * its line and column (the first occurrence of the offending key), never a
 * crash. */
#include <math.h>
#include <regex.h>
#include <string.h>

#include "../core/json.h"
#include "observe_internal.h"

void kl_observation_free(kl_observation *o) {
  if (!o) return;
  for (size_t i = 0; i < o->nlaunches; i++) {
    for (size_t a = 0; a < o->launches[i].nargs; a++) {
      kl__free(o->launches[i].args[a].bytes);
      kl__free(o->launches[i].args[a].word_at);
      kl__free(o->launches[i].args[a].word_left);
    }
    kl__free(o->launches[i].args);
  }
  for (size_t k = 0; k < o->nkernels; k++) {
    kl__free(o->kernels[k].name);
    kl__free(o->kernels[k].demangled);
    kl__free(o->kernels[k].param_names);
    kl__free(o->kernels[k].param_float);
  }
  kl__free(o->launches);
  kl__free(o->kernels);
  json_object_put(o->python);
  kl__free(o->path);
  kl__free(o->device);
  kl__free(o->cc);
  kl__free(o->program);
  kl__free(o->program_cwd);
  kl__names_free(o->libraries, o->nlibraries);
  kl__free(o->output);
  kl__free(o);
}

int kl_observation_exit_code(const kl_observation *o) {
  return o->exit_code;
}
const char *kl_observation_program_output(const kl_observation *o) {
  return o->output ? o->output : "";
}
size_t kl_observation_launch_count(const kl_observation *o) {
  return o->nlaunches;
}

uint64_t kl__obs_arg_u64(const kl__obs_arg *a) {
  uint64_t v = 0;
  for (uint32_t i = 0; a->bytes && i < a->size && i < 8; i++)
    v |= (uint64_t)a->bytes[i] << (8 * i);
  return v;
}

int64_t kl__obs_arg_i64(const kl__obs_arg *a) {
  uint64_t v = kl__obs_arg_u64(a);
  if (a->size < 8 && a->size > 0 && (v >> (8 * a->size - 1)) & 1)
    v |= ~0ull << (8 * a->size);
  return (int64_t)v;
}

/* ---- reading ------------------------------------------------------------ */

typedef struct reader {
  const char *text, *path;
} reader;

static int bad(const reader *r, const char *key, const char *message) {
  return kl__json_error_at_key(r->text, r->path, key, "%s", message);
}

static bool get_int(json_object *o, const char *key, int64_t lo, int64_t hi,
                    int64_t *out) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v) ||
      !json_object_is_type(v, json_type_int))
    return false;
  *out = json_object_get_int64(v);
  return *out >= lo && *out <= hi;
}

/* A copy of o[key] in *out when it is a string (1), NULL when it is absent
 * or no string (0), KL_ENOMEM: a missing name and a failed copy are told
 * apart. */
static int get_string(char **out, json_object *o, const char *key) {
  json_object *v;
  *out = NULL;
  if (!json_object_object_get_ex(o, key, &v) ||
      !json_object_is_type(v, json_type_string))
    return 0;
  return (*out = kl__strdup(json_object_get_string(v))) ? 1 : kl__error_oom();
}

/* [x, y, z] with each within [1, hi[i]] */
static bool get_dim3(json_object *o, const char *key, const int64_t hi[3],
                     int64_t out[3]) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v) ||
      !json_object_is_type(v, json_type_array) ||
      json_object_array_length(v) != 3)
    return false;
  for (size_t i = 0; i < 3; i++) {
    json_object *e = json_object_array_get_idx(v, i);
    if (!json_object_is_type(e, json_type_int)) return false;
    out[i] = json_object_get_int64(e);
    if (out[i] < 1 || out[i] > hi[i]) return false;
  }
  return true;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int read_arg(const reader *r, json_object *jo, kl__obs_arg *a) {
  int64_t off, size;
  if (!json_object_is_type(jo, json_type_object) ||
      !get_int(jo, "offset", 0, 1 << 16, &off) ||
      !get_int(jo, "size", 0, 1 << 16, &size))
    return bad(r, "args",
               "an argument needs \"offset\" and \"size\" "
               "(whole numbers up to 65536)");
  a->offset = (uint32_t)off;
  a->size = (uint32_t)size;
  json_object *v;
  const char *hex = json_object_object_get_ex(jo, "hex", &v) &&
                            json_object_is_type(v, json_type_string)
                        ? json_object_get_string(v)
                        : NULL;
  if (!hex) return bad(r, "hex", "an argument needs \"hex\", its bytes");
  size_t n = strlen(hex);
  if (n != 0 && n != 2 * (size_t)size)
    return bad(r, "hex", "an argument's \"hex\" must hold \"size\" bytes");
  if (n) {
    if (!(a->bytes = kl__malloc((size_t)size ? (size_t)size : 1)))
      return kl__error_oom();
    for (size_t i = 0; i < (size_t)size; i++) {
      int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
      if (hi < 0 || lo < 0)
        return bad(r, "hex", "an argument's \"hex\" is not hexadecimal");
      a->bytes[i] = (uint8_t)(hi << 4 | lo);
    }
  }
  a->pointer = json_object_object_get_ex(jo, "pointer", &v) &&
               json_object_get_boolean(v);
  int64_t left = 0;
  if (a->pointer && get_int(jo, "alloc_bytes_left", 0, INT64_MAX, &left))
    a->alloc_left = (uint64_t)left;
  json_object *ws;
  if (!json_object_object_get_ex(jo, "pointers", &ws)) return 0;
  size_t nw = json_object_is_type(ws, json_type_array)
                  ? json_object_array_length(ws)
                  : (size_t)-1;
  if (nw == (size_t)-1 || nw > (size_t)size / 8)
    return bad(r, "pointers",
               "an argument's \"pointers\" is a list of at most size/8 "
               "{\"at\", \"alloc_bytes_left\"}");
  if (nw && (!(a->word_at = kl__calloc(nw, sizeof *a->word_at)) ||
             !(a->word_left = kl__calloc(nw, sizeof *a->word_left))))
    return kl__error_oom();
  for (size_t w = 0; w < nw; w++) {
    json_object *e = json_object_array_get_idx(ws, w);
    int64_t at;
    if (!json_object_is_type(e, json_type_object) ||
        !get_int(e, "at", 0, size - 8, &at) || at % 8 ||
        !get_int(e, "alloc_bytes_left", 0, INT64_MAX, &left))
      return bad(r, "pointers",
                 "a pointer in an argument needs \"at\" (a multiple of 8 "
                 "inside it) and \"alloc_bytes_left\"");
    a->word_at[w] = (uint32_t)at;
    a->word_left[w] = (uint64_t)left;
    a->nwords++;
  }
  return 0;
}

static int read_launch(const reader *r, json_object *jo, kl_observation *o,
                       kl__obs_launch *l) {
  static const int64_t grid_hi[3] = {2147483647, 65535, 65535};
  static const int64_t block_hi[3] = {1024, 1024, 64};
  int64_t kernel;
  l->us = NAN;
  if (!json_object_is_type(jo, json_type_object))
    return bad(r, "launches", "every launch must be an object");
  if (!get_int(jo, "kernel", 0, (int64_t)o->nkernels - 1, &kernel))
    return bad(r, "kernel", "a launch's \"kernel\" must index \"kernels\"");
  l->kernel = (size_t)kernel;
  get_int(jo, "pid", 0, INT64_MAX, &l->pid);
  if (!get_dim3(jo, "grid", grid_hi, l->grid))
    return bad(r, "grid",
               "a launch's \"grid\" must be [x, y, z] within "
               "CUDA's limits");
  if (!get_dim3(jo, "block", block_hi, l->block) ||
      l->block[0] * l->block[1] * l->block[2] > 1024)
    return bad(r, "block",
               "a launch's \"block\" must be [x, y, z] of at "
               "most 1024 threads");
  if (!get_int(jo, "shared_bytes", 0, INT32_MAX, &l->shared))
    return bad(r, "shared_bytes", "a launch needs \"shared_bytes\" >= 0");
  json_object *v;
  if (json_object_object_get_ex(jo, "duration_ns", &v) &&
      !json_object_is_type(v, json_type_null)) {
    int64_t ns;
    if (!get_int(jo, "duration_ns", 0, INT64_MAX, &ns))
      return bad(r, "duration_ns",
                 "\"duration_ns\" must be a whole number "
                 "or null");
    l->us = (double)ns / 1000.0;
  }
  if (!json_object_object_get_ex(jo, "args", &v) ||
      json_object_is_type(v, json_type_null))
    return 0;
  if (!json_object_is_type(v, json_type_array) ||
      json_object_array_length(v) > 4096)
    return bad(r, "args", "\"args\" must be a list (or null)");
  size_t n = json_object_array_length(v);
  if (n && !(l->args = kl__calloc(n, sizeof *l->args))) return kl__error_oom();
  l->nargs = n;
  l->args_known = true;
  for (size_t i = 0; i < n; i++) {
    int rc = read_arg(r, json_object_array_get_idx(v, i), &l->args[i]);
    if (rc < 0) return rc;
  }
  return 0;
}

static int read_kernel(const reader *r, json_object *jo, kl__obs_kernel *k) {
  int64_t total_ns = 0;
  int rc = json_object_is_type(jo, json_type_object)
               ? get_string(&k->name, jo, "name")
               : 0;
  if (rc == 0) return bad(r, "kernels", "every kernel needs a \"name\"");
  if (rc < 0 || (rc = get_string(&k->demangled, jo, "demangled")) < 0)
    return rc;
  json_object *v;
  k->matched = json_object_object_get_ex(jo, "matched", &v) &&
               json_object_get_boolean(v);
  if (!get_int(jo, "launches", 0, INT64_MAX, &k->launches) ||
      !get_int(jo, "total_ns", 0, INT64_MAX, &total_ns))
    return bad(r, "total_ns", "a kernel needs \"launches\" and \"total_ns\"");
  get_int(jo, "recorded", 0, INT64_MAX, &k->recorded);
  k->total_us = (double)total_ns / 1000.0;
  return 0;
}

/* One argument of a Triton call: a tensor's layout or a plain value. */
static int read_python_arg(const reader *r, json_object *a) {
  json_object *t, *v;
  char *name = NULL;
  int rc = json_object_is_type(a, json_type_object)
               ? get_string(&name, a, "name")
               : 0;
  kl__free(name);
  if (rc <= 0)
    return rc < 0 ? rc
                  : bad(r, "args",
                        "a python launch's argument needs a "
                        "\"name\"");
  if (!json_object_object_get_ex(a, "tensor", &t))
    return json_object_object_get_ex(a, "value", &v)
               ? 0
               : bad(r, "args",
                     "an argument is a \"tensor\" or has a "
                     "\"value\"");
  json_object *shape, *stride, *dtype;
  if (!json_object_is_type(t, json_type_object) ||
      !json_object_object_get_ex(t, "shape", &shape) ||
      !json_object_object_get_ex(t, "stride", &stride) ||
      !json_object_object_get_ex(t, "dtype", &dtype) ||
      !json_object_is_type(shape, json_type_array) ||
      !json_object_is_type(stride, json_type_array) ||
      !json_object_is_type(dtype, json_type_string) ||
      json_object_array_length(shape) != json_object_array_length(stride) ||
      json_object_array_length(shape) > 16)
    return bad(r, "tensor",
               "a tensor needs \"shape\" and \"stride\" of the same "
               "length (at most 16) and a \"dtype\"");
  for (size_t i = 0; i < json_object_array_length(shape); i++) {
    json_object *n = json_object_array_get_idx(shape, i);
    json_object *s = json_object_array_get_idx(stride, i);
    if (!json_object_is_type(n, json_type_int) ||
        !json_object_is_type(s, json_type_int) ||
        json_object_get_int64(n) < 0 || json_object_get_int64(s) < 0 ||
        json_object_get_int64(n) > ((int64_t)1 << 40) ||
        json_object_get_int64(s) > ((int64_t)1 << 40))
      return bad(r, "shape",
                 "a tensor's sizes and strides are whole numbers from 0 to "
                 "2^40");
  }
  return 0;
}

/* "python_launches": each a Triton kernel's configuration as the Python
 * observer saw it (inject/python/sitecustomize.py). */
static int read_python(const reader *r, json_object *arr) {
  static const int64_t grid_hi[3] = {2147483647, 65535, 65535};
  if (!json_object_is_type(arr, json_type_array))
    return bad(r, "python_launches", "\"python_launches\" must be a list");
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *c = json_object_array_get_idx(arr, i), *v;
    int64_t n, g[3];
    if (!json_object_is_type(c, json_type_object) ||
        !json_object_object_get_ex(c, "kernel", &v) ||
        !json_object_is_type(v, json_type_string) ||
        !json_object_object_get_ex(c, "file", &v) ||
        !json_object_is_type(v, json_type_string))
      return bad(r, "python_launches",
                 "a python launch needs a \"kernel\" and its \"file\"");
    if (!get_int(c, "calls", 0, INT64_MAX, &n) ||
        !get_int(c, "line", 1, INT32_MAX, &n) ||
        !get_int(c, "pid", 0, INT64_MAX, &n))
      return bad(r, "calls",
                 "a python launch needs \"calls\", a \"line\" (from 1) "
                 "and a \"pid\"");
    if (!get_dim3(c, "grid", grid_hi, g))
      return bad(r, "grid",
                 "a python launch's \"grid\" must be [x, y, z] "
                 "within CUDA's limits");
    if (!json_object_object_get_ex(c, "args", &v) ||
        !json_object_is_type(v, json_type_array) ||
        json_object_array_length(v) > 4096)
      return bad(r, "args", "a python launch needs an \"args\" list");
    for (size_t a = 0; a < json_object_array_length(v); a++) {
      int rc = read_python_arg(r, json_object_array_get_idx(v, a));
      if (rc < 0) return rc;
    }
    if (json_object_object_get_ex(c, "options", &v) &&
        !json_object_is_type(v, json_type_object))
      return bad(r, "options",
                 "a python launch's \"options\" must be an "
                 "object");
    if (json_object_object_get_ex(c, "ordinals", &v)) {
      if (!json_object_is_type(v, json_type_array))
        return bad(r, "ordinals", "\"ordinals\" must be a list");
      for (size_t k = 0; k < json_object_array_length(v); k++) {
        json_object *x = json_object_array_get_idx(v, k);
        if (!json_object_is_type(x, json_type_int) ||
            json_object_get_int64(x) < 0)
          return bad(r, "ordinals", "\"ordinals\" are whole numbers from 0");
      }
    }
  }
  return 0;
}

static int read_observation(const reader *r, json_object *root,
                            kl_observation *o) {
  json_object *v, *kernels, *launches;
  if (!json_object_object_get_ex(root, "kernlab_observation", &v) ||
      json_object_get_int(v) != 1)
    return bad(r, "kernlab_observation",
               "not a kernlab observation (\"kernlab_observation\": 1)");
  if (json_object_object_get_ex(root, "program", &v) &&
      json_object_is_type(v, json_type_object)) {
    int64_t code = 0;
    if (get_int(v, "exit_code", -1, 255, &code)) o->exit_code = (int)code;
    int rc = get_string(&o->program_cwd, v, "cwd");
    if (rc < 0) return rc;
    json_object *argv;
    if (json_object_object_get_ex(v, "argv", &argv) &&
        json_object_is_type(argv, json_type_array)) {
      kl_buf b = KL_BUF_INIT;
      for (size_t i = 0; i < json_object_array_length(argv); i++)
        if (kl__buf_printf(&b, "%s%s", i ? " " : "",
                           json_object_get_string(
                               json_object_array_get_idx(argv, i))) < 0) {
          kl_buf_dispose(&b);
          return kl__error_oom();
        }
      o->program = kl__buf_detach(&b);
    }
  }
  if (json_object_object_get_ex(root, "devices", &v) &&
      json_object_is_type(v, json_type_array) &&
      json_object_array_length(v) > 0) {
    json_object *dev = json_object_array_get_idx(v, 0);
    json_object *peak;
    if (json_object_object_get_ex(dev, "dram_peak_gbs", &peak) &&
        (json_object_is_type(peak, json_type_double) ||
         json_object_is_type(peak, json_type_int)) &&
        json_object_get_double(peak) > 0)
      o->dram_peak_gbs = json_object_get_double(peak);
    int rc = get_string(&o->device, dev, "name");
    if (rc < 0 || (rc = get_string(&o->cc, dev, "compute_capability")) < 0)
      return rc;
  }
  if (json_object_object_get_ex(root, "libraries", &v)) {
    size_t n = json_object_is_type(v, json_type_array)
                   ? json_object_array_length(v)
                   : 0;
    for (size_t i = 0; i < n; i++)
      if (!json_object_is_type(json_object_array_get_idx(v, i),
                               json_type_string))
        n = 0;
    if (!json_object_is_type(v, json_type_array) ||
        n != json_object_array_length(v))
      return bad(r, "libraries", "\"libraries\" must be a list of paths");
    if (n && !(o->libraries = kl__calloc(n, sizeof *o->libraries)))
      return kl__error_oom();
    for (; o->nlibraries < n; o->nlibraries++)
      if (!(o->libraries[o->nlibraries] = kl__strdup(json_object_get_string(
                json_object_array_get_idx(v, o->nlibraries)))))
        return kl__error_oom();
  }
  if (!json_object_object_get_ex(root, "kernels", &kernels) ||
      !json_object_is_type(kernels, json_type_array))
    return bad(r, "kernels", "an observation needs a \"kernels\" list");
  if (!json_object_object_get_ex(root, "launches", &launches) ||
      !json_object_is_type(launches, json_type_array))
    return bad(r, "launches", "an observation needs a \"launches\" list");
  size_t nk = json_object_array_length(kernels);
  size_t nl = json_object_array_length(launches);
  if ((nk && !(o->kernels = kl__calloc(nk, sizeof *o->kernels))) ||
      (nl && !(o->launches = kl__calloc(nl, sizeof *o->launches))))
    return kl__error_oom();
  for (; o->nkernels < nk; o->nkernels++) {
    int rc = read_kernel(r, json_object_array_get_idx(kernels, o->nkernels),
                         &o->kernels[o->nkernels]);
    if (rc < 0) {
      o->nkernels++; /* freed with the others */
      return rc;
    }
  }
  for (; o->nlaunches < nl; o->nlaunches++) {
    int rc = read_launch(r, json_object_array_get_idx(launches, o->nlaunches),
                         o, &o->launches[o->nlaunches]);
    if (rc < 0) {
      o->nlaunches++;
      return rc;
    }
  }
  if (json_object_object_get_ex(root, "python_launches", &v)) {
    int rc = read_python(r, v);
    if (rc < 0) return rc;
    o->python = json_object_get(v);
  }
  return 0;
}

int kl_observation_load(kl_observation **out, const char *path) {
  *out = NULL;
  if (!path)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no observation file given");
  kl_buf text = KL_BUF_INIT;
  int rc = kl__read_file(&text, path);
  if (rc < 0) return rc;
  json_object *root = NULL;
  kl_observation *o = NULL;
  reader r = {text.ptr, path};
  if ((rc = kl__json_parse(&root, text.ptr ? text.ptr : "", path,
                           "an observation")) < 0)
    goto done;
  if (!(o = kl__calloc(1, sizeof *o)) || !(o->path = kl__strdup(path))) {
    rc = kl__error_oom();
    goto done;
  }
  if ((rc = read_observation(&r, root, o)) < 0) goto done;
  *out = o;
  o = NULL;
done:
  kl_observation_free(o);
  json_object_put(root);
  kl_buf_dispose(&text);
  return rc;
}

/* ---- kernels by name --------------------------------------------------- */

/* a and b equal but for spaces */
static bool same_spelling(const char *a, size_t an, const char *b) {
  size_t i = 0;
  for (; *b; b++) {
    if (*b == ' ') continue;
    while (i < an && a[i] == ' ')
      i++;
    if (i >= an || a[i++] != *b) return false;
  }
  while (i < an && a[i] == ' ')
    i++;
  return i == an;
}

/* "gemm" names "gemm(float*, int)", "ns::gemm(...)" and every
 * "void ns::gemm<...>(...)"; "ns::gemm<float, 4>" and "gemm<float,4>" one
 * instantiation. */
static bool same_name(const kl__obs_kernel *k, const char *name) {
  if (strcmp(k->name, name) == 0) return true;
  char inst[512];
  if (!k->demangled || !kl__c_call_name(inst, sizeof inst, k->demangled))
    return false;
  size_t off, len, args;
  if (!kl__c_entry_split(inst, &off, &len, &args)) off = 0, args = strlen(inst);
  return same_spelling(inst, strlen(inst), name) ||
         same_spelling(inst, args, name) ||
         same_spelling(inst + off, args - off, name) ||
         same_spelling(inst + off, strlen(inst + off), name);
}

bool kl__obs_same_name(const kl__obs_kernel *k, const char *name) {
  return same_name(k, name);
}

int kl__obs_pick_kernel(size_t *out, const kl_observation *o, const char *name,
                        bool recorded_only) {
  size_t best = SIZE_MAX;
  double best_us = -1;
  if (!name) {
    for (size_t k = 0; k < o->nkernels; k++) {
      double us = 0;
      bool any = false;
      for (size_t i = 0; i < o->nlaunches; i++)
        if (o->launches[i].kernel == k) {
          any = true;
          us += isnan(o->launches[i].us) ? 0 : o->launches[i].us;
        }
      if ((any || !recorded_only) &&
          (any ? us : o->kernels[k].total_us) > best_us)
        best = k, best_us = any ? us : o->kernels[k].total_us;
    }
    if (best == SIZE_MAX)
      return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                       "%s: no kernel launch was recorded", o->path);
    *out = best;
    return 0;
  }
  for (size_t k = 0; k < o->nkernels; k++)
    if (same_name(&o->kernels[k], name)) {
      *out = k;
      return 0;
    }
  regex_t re;
  if (regcomp(&re, name, REG_EXTENDED | REG_NOSUB) != 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "'%s': not a kernel name or regular expression", name);
  for (size_t k = 0; k < o->nkernels && best == SIZE_MAX; k++)
    if (regexec(&re, o->kernels[k].name, 0, NULL, 0) == 0 ||
        (o->kernels[k].demangled &&
         regexec(&re, o->kernels[k].demangled, 0, NULL, 0) == 0))
      best = k;
  regfree(&re);
  if (best == SIZE_MAX)
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                     "%s: no kernel named '%s' ran", o->path, name);
  *out = best;
  return 0;
}

int kl_observation_kernel_time(double *us, int64_t *launches,
                               const kl_observation *o, const char *name) {
  size_t first;
  int rc = kl__obs_pick_kernel(&first, o, name, false);
  if (rc < 0) return rc;
  /* every kernel the name stands for: all instantiations of a template */
  bool exact = name && same_name(&o->kernels[first], name);
  regex_t re;
  if (name && !exact && regcomp(&re, name, REG_EXTENDED | REG_NOSUB) != 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "'%s': bad regex", name);
  double total = 0;
  int64_t count = 0;
  for (size_t k = 0; k < o->nkernels; k++) {
    const kl__obs_kernel *kn = &o->kernels[k];
    bool hit =
        k == first || (name && exact && same_name(kn, name)) ||
        (name && !exact &&
         (regexec(&re, kn->name, 0, NULL, 0) == 0 ||
          (kn->demangled && regexec(&re, kn->demangled, 0, NULL, 0) == 0)));
    if (hit) total += kn->total_us, count += kn->launches;
  }
  if (name && !exact) regfree(&re);
  if (us) *us = total;
  if (launches) *launches = count;
  return 0;
}
