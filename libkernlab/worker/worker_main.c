/* kl-worker: the child process that runs candidate code.
 *
 * It reads one JSON request per line from fd KL_WORKER_FD (3) and writes one
 * JSON response per line back; its stdout and stderr are the parent's log
 * file, so a candidate that prints cannot corrupt the protocol. Requests:
 *   {"op":"load","path":P}                       -> {"ok":true,"id":N,...}
 *   {"op":"check","plugin":N,"oracle":M|-1,"shape":S,"seeds":[...]}
 *   {"op":"time","plugins":[N(,M)],"shape":S,"cold":b,"warmup":k,
 *    "min_samples":a,"max_samples":b,"target_rel_ci":x,"time_cap_ms":t,
 *    "seed":s}                                   -> {"ok":true,"samples":[[..]]}
 *   {"op":"profile","plugin":N,"shape":S,"metrics":[...],"seed":s,"cold":b}
 *                                                -> counters (op_profile.c)
 *   {"op":"metric_passes","metrics":[...],"chip":C} -> {"passes":P}
 *   {"op":"device"(,"memory":1)}                 -> devices (op_device)
 *   {"op":"quit"}
 * Failures the worker survives answer {"ok":false,"error":"..."}; a crash
 * or hang is the parent's to notice. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kernlab/plugin.h"
#include "kernlab/stats.h"
#include "../core/sandbox.h"
#include "worker_internal.h"
#ifdef KL_HAVE_CUPTI
#include <cuda.h>
#include "cupti_timer.h"
#endif

#define KL_WORKER_FD 3

/* A time request's parameters, parsed and clamped once for both paths. */
typedef struct time_req {
  int shape, cold, warmup;
  size_t min_n, max_n, block_rounds;
  double target, cap_us, decide_gain;
  uint64_t seed;
  int verify; /* re-check the timed outputs against oracle (see verify_timed) */
  int oracle; /* plugin id, or -1: the timed plugin's own reference */
} time_req;

#ifdef KL_HAVE_CUPTI
static void op_time_device(const time_req *tr, const kl_plugin **pl,
                           void **inst, int np);
#endif
#define MAX_PLUGINS 64

static const kl_plugin *plugins[MAX_PLUGINS];
static int nplugins;

/* ---- I/O ----------------------------------------------------------------- */

static char *read_line(void) {
  static char *buf;
  static size_t cap, len, start;
  for (;;) {
    char *nl = len > start ? memchr(buf + start, '\n', len - start) : NULL;
    if (nl) {
      *nl = '\0';
      char *line = buf + start;
      start = (size_t)(nl - buf) + 1;
      return line;
    }
    if (start > 0) {
      memmove(buf, buf + start, len - start);
      len -= start;
      start = 0;
    }
    if (len + 65536 > cap) {
      cap = (len + 65536) * 2;
      char *nb = realloc(buf, cap);
      if (!nb)
        return NULL;
      buf = nb;
    }
    ssize_t n = read(KL_WORKER_FD, buf + len, cap - len - 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return NULL;
    len += (size_t)n;
  }
}

void klw_reply(json_object *o) {
  const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(KL_WORKER_FD, s, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      exit(3);
    s += w;
    n -= (size_t)w;
  }
  if (write(KL_WORKER_FD, "\n", 1) != 1)
    exit(3);
  json_object_put(o);
}

void klw_reply_error(const char *fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(0));
  json_object_object_add(o, "error", json_object_new_string(text));
  klw_reply(o);
}

int64_t klw_get_int(json_object *req, const char *key, int64_t dflt) {
  json_object *v;
  return json_object_object_get_ex(req, key, &v) ? json_object_get_int64(v)
                                                 : dflt;
}

double klw_get_double(json_object *req, const char *key, double dflt) {
  json_object *v;
  return json_object_object_get_ex(req, key, &v) ? json_object_get_double(v)
                                                 : dflt;
}

const kl_plugin *klw_plugin_at(int64_t id) {
  return id >= 0 && id < nplugins ? plugins[id] : NULL;
}

/* ---- load ---------------------------------------------------------------- */

/* Host code gets an address-space limit (half the machine's memory, at
 * least 4 GiB) once the first host plugin is loaded; device workers do not:
 * the CUDA driver reserves address space far beyond any memory. Not under
 * AddressSanitizer, whose shadow memory is a reservation of the same kind. */
static void limit_address_space(void) {
#if defined(__SANITIZE_ADDRESS__)
  return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return;
#endif
#endif
  static int done;
  if (done++)
    return;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0)
    return;
  rlim_t half = (rlim_t)pages * (rlim_t)page / 2, floor = (rlim_t)4 << 30;
  rlim_t as = half > floor ? half : floor;
  kl__sandbox_limit(RLIMIT_AS, as, as);
}

static void op_load(json_object *req) {
  json_object *p;
  if (!json_object_object_get_ex(req, "path", &p)) {
    klw_reply_error("load: no path");
    return;
  }
  const char *path = json_object_get_string(p);
  if (nplugins == MAX_PLUGINS) {
    klw_reply_error("load: too many plugins (%d)", MAX_PLUGINS);
    return;
  }
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    klw_reply_error("load: %s", dlerror());
    return;
  }
  kl_plugin_entry_fn entry = (kl_plugin_entry_fn)dlsym(h, KL_PLUGIN_SYMBOL);
  const kl_plugin *pl = entry ? entry() : NULL;
  if (!pl) {
    klw_reply_error("load: %s exports no %s", path, KL_PLUGIN_SYMBOL);
    return;
  }
  if (pl->abi_version != KL_PLUGIN_ABI_VERSION ||
      pl->struct_size < offsetof(kl_plugin, kernel_info)) {
    klw_reply_error("load: %s has plugin ABI %u (size %u); this worker speaks %d",
                path, pl->abi_version, pl->struct_size, KL_PLUGIN_ABI_VERSION);
    return;
  }
  if (strcmp(pl->backend, "host") == 0)
    limit_address_space();
  plugins[nplugins] = pl;
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  json_object_object_add(o, "id", json_object_new_int(nplugins));
  json_object_object_add(o, "case", json_object_new_string(pl->case_name));
  json_object_object_add(o, "nshapes", json_object_new_int(pl->nshapes));
  json_object_object_add(o, "nparams", json_object_new_int(pl->nparams));
  nplugins++;
  klw_reply(o);
}

/* ---- check ----------------------------------------------------------------- */

typedef struct tally {
  uint64_t mismatches, unwritten, nonfinite;
  double max_abs_err;
  char detail[160];
} tally;

static int is_checked(const kl_plugin *pl, int p) {
  return pl->param_roles[p] == KL_PLUGIN_ROLE_OUTPUT ||
         pl->param_roles[p] == KL_PLUGIN_ROLE_INOUT;
}

/* Compare every output `inst` holds with want, adding to *t (the first
 * problem goes to t->detail). 0, or -1 with t->detail when a comparison
 * could not run. */
static int compare_outputs(const kl_plugin *pl, void *inst, void *const *want,
                           tally *t) {
  for (int p = 0; p < pl->nparams; p++) {
    if (!is_checked(pl, p))
      continue;
    kl_plugin_check r;
    if (pl->check(inst, p, want[p], &r)) {
      snprintf(t->detail, sizeof(t->detail), "%s", pl->last_error(inst));
      return -1;
    }
    if (r.mismatches && !t->detail[0])
      snprintf(t->detail, sizeof(t->detail), "%s[%lld]: %s",
               pl->param_names[p], (long long)r.first_bad,
               r.unwritten ? "unwritten or wrong" : "mismatch");
    t->mismatches += r.mismatches;
    t->unwritten += r.unwritten;
    t->nonfinite += r.nonfinite;
    if (r.max_abs_err > t->max_abs_err)
      t->max_abs_err = r.max_abs_err;
  }
  return 0;
}

/* Launch the candidate on inputs of `seed` with poison pattern `poison` and
 * compare every output with want. */
static int run_and_compare(const kl_plugin *pl, void *inst, uint64_t seed,
                           int poison, void **want, tally *t) {
  memset(t, 0, sizeof(*t));
  if (pl->prepare(inst, seed, poison) || pl->launch(inst) || pl->sync(inst)) {
    snprintf(t->detail, sizeof(t->detail), "%s", pl->last_error(inst));
    return -1;
  }
  return compare_outputs(pl, inst, want, t);
}

/* ---- work after return ---------------------------------------------------- */

/* Threads of this process that are running (state R) or in an
 * uninterruptible wait (D), the calling thread excluded. */
static int busy_threads(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return 0;
  pid_t self = (pid_t)syscall(SYS_gettid);
  int busy = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == self)
      continue;
    char path[320], buf[256];
    snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close_paren = strrchr(buf, ')'); /* comm may hold spaces */
    if (close_paren && (close_paren[2] == 'R' || close_paren[2] == 'D'))
      busy++;
  }
  closedir(d);
  return busy;
}

/* The outputs must be final once launch and sync have returned: read them,
 * wait a while (twice the launch, 2 ms to 100 ms), read them again. Bytes
 * that changed were written by work the call did not wait for (a thread it
 * left running, a stream nobody synchronised), which no timer of the call
 * sees. Host plugins also may not leave threads running. Adds to
 * *late_bytes and *threads. */
static void settle_check(const kl_plugin *pl, void *inst, double launch_us,
                         uint64_t *late_bytes, int *threads) {
  void *before[256] = {0};
  for (int p = 0; p < pl->nparams; p++) {
    if (!is_checked(pl, p))
      continue;
    uint64_t bytes = pl->buffer_bytes(inst, p);
    if ((before[p] = malloc(bytes ? (size_t)bytes : 1)))
      pl->read(inst, p, before[p], bytes);
  }
  double wait_us = 2 * launch_us;
  wait_us = wait_us < 2000 ? 2000 : wait_us > 100000 ? 100000 : wait_us;
  struct timespec ts = {0, (long)(wait_us * 1000)};
  nanosleep(&ts, NULL);
  if (strcmp(pl->backend, "host") == 0)
    *threads += busy_threads();
  for (int p = 0; p < pl->nparams; p++) {
    if (!before[p])
      continue;
    uint64_t bytes = pl->buffer_bytes(inst, p);
    unsigned char *after = malloc(bytes ? (size_t)bytes : 1);
    if (after && pl->read(inst, p, after, bytes) == 0)
      for (uint64_t i = 0; i < bytes; i++)
        *late_bytes += after[i] != ((unsigned char *)before[p])[i];
    free(after);
    free(before[p]);
  }
}

static void op_check(json_object *req) {
  const kl_plugin *pl = klw_plugin_at(klw_get_int(req, "plugin", -1));
  int64_t oracle_id = klw_get_int(req, "oracle", -1);
  const kl_plugin *orc = oracle_id >= 0 ? klw_plugin_at(oracle_id) : NULL;
  int shape = (int)klw_get_int(req, "shape", 0);
  json_object *seeds;
  if (!pl || (oracle_id >= 0 && !orc) ||
      !json_object_object_get_ex(req, "seeds", &seeds)) {
    klw_reply_error("check: bad plugin, oracle or seeds");
    return;
  }
  if (orc && orc->nparams != pl->nparams) {
    klw_reply_error("check: oracle and candidate have different signatures");
    return;
  }
  void *inst = NULL, *oinst = NULL;
  void *want[256] = {0};
  if (pl->nparams > 256 || pl->create(&inst, shape)) {
    klw_reply_error("check: create: %s", pl->last_error(NULL));
    return;
  }
  if (orc && orc->create(&oinst, shape)) {
    klw_reply_error("check: create oracle: %s", orc->last_error(NULL));
    pl->destroy(inst);
    return;
  }
  for (int p = 0; p < pl->nparams; p++) {
    if (!is_checked(pl, p))
      continue;
    uint64_t bytes = pl->buffer_bytes(inst, p);
    if (orc && orc->buffer_bytes(oinst, p) != bytes) {
      klw_reply_error("check: oracle's %s has another size", pl->param_names[p]);
      goto done;
    }
    if (!(want[p] = malloc(bytes ? (size_t)bytes : 1))) {
      klw_reply_error("check: out of memory");
      goto done;
    }
  }
  json_object *results = json_object_new_array();
  size_t nseeds = json_object_array_length(seeds);
  for (size_t i = 0; i < nseeds; i++) {
    uint64_t seed = (uint64_t)json_object_get_int64(
        json_object_array_get_idx(seeds, i));
    /* the oracle's outputs on the same inputs */
    if (orc) {
      if (orc->prepare(oinst, seed, 0) || orc->launch(oinst) ||
          orc->sync(oinst)) {
        json_object_put(results);
        klw_reply_error("check: oracle failed: %s", orc->last_error(oinst));
        goto done;
      }
      for (int p = 0; p < pl->nparams; p++)
        if (want[p])
          orc->read(oinst, p, want[p], orc->buffer_bytes(oinst, p));
    } else {
      pl->prepare(inst, seed, 0);
      int rc = pl->reference(inst, want);
      if (rc == KL_PLUGIN_NO_REFERENCE) {
        json_object_put(results);
        klw_reply_error("check: the case's oracle is the baseline: load it and "
                    "pass it as the oracle");
        goto done;
      }
      if (rc) {
        json_object_put(results);
        klw_reply_error("check: reference failed: %s", pl->last_error(inst));
        goto done;
      }
    }
    tally t, t2;
    double t0 = klw_now_us();
    if (run_and_compare(pl, inst, seed, 0, want, &t)) {
      json_object_put(results);
      klw_reply_error("check: %s", t.detail);
      goto done;
    }
    uint64_t late_bytes = 0;
    int threads = 0;
    settle_check(pl, inst, klw_now_us() - t0, &late_bytes, &threads);
    uint64_t inputs_written = 0;
    char input_detail[160] = "";
    for (int p = 0; p < pl->nparams; p++)
      if (pl->param_roles[p] == KL_PLUGIN_ROLE_INPUT &&
          !pl->input_intact(inst, p)) {
        if (!inputs_written)
          snprintf(input_detail, sizeof(input_detail),
                   "%s: input written by the kernel", pl->param_names[p]);
        inputs_written++;
      }
    /* An element equal to the first poison pattern may be a real result:
     * run once more with the second pattern and keep the smaller count. */
    if (t.unwritten > 0 && run_and_compare(pl, inst, seed, 1, want, &t2) == 0 &&
        t2.unwritten < t.unwritten)
      t = t2;
    json_object *r = json_object_new_object();
    json_object_object_add(r, "seed", json_object_new_int64((int64_t)seed));
    json_object_object_add(r, "correct", json_object_new_boolean(
                                             !t.mismatches && !inputs_written));
    json_object_object_add(r, "mismatches",
                           json_object_new_int64((int64_t)t.mismatches));
    json_object_object_add(r, "unwritten",
                           json_object_new_int64((int64_t)t.unwritten));
    json_object_object_add(r, "nonfinite",
                           json_object_new_int64((int64_t)t.nonfinite));
    json_object_object_add(r, "inputs_written",
                           json_object_new_int64((int64_t)inputs_written));
    json_object_object_add(r, "max_abs_err",
                           json_object_new_double(t.max_abs_err));
    json_object_object_add(r, "late_bytes",
                           json_object_new_int64((int64_t)late_bytes));
    json_object_object_add(r, "busy_threads", json_object_new_int(threads));
    json_object_object_add(r, "detail",
                           json_object_new_string(t.detail[0] ? t.detail
                                                              : input_detail));
    json_object_array_add(results, r);
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  json_object_object_add(o, "results", results);
  klw_reply(o);
done:
  for (int p = 0; p < pl->nparams; p++)
    free(want[p]);
  pl->destroy(inst);
  if (orc)
    orc->destroy(oinst);
}

/* ---- time ------------------------------------------------------------------ */

/* The inputs of placement block b: block 0 keeps the request's seed, later
 * blocks get fresh inputs, so a kernel that hands back a result it computed
 * earlier (during the warm-up, say) leaves stale outputs behind. */
static uint64_t block_seed(uint64_t seed, size_t b) {
  if (b == 0)
    return seed;
  uint64_t z = seed + b * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
  return (z ^ (z >> 29)) | 1;
}

/* After timing: compare the outputs `inst` holds from its last timed launch
 * with the oracle's outputs on the same inputs (plugin `orc` run on `seed`,
 * or, when orc is NULL, the plugin's own reference), adding to *t. Returns
 * 0, or -1 with t->detail when the comparison itself could not run. */
static int verify_timed(const kl_plugin *pl, void *inst, int shape,
                        const kl_plugin *orc, uint64_t seed, tally *t) {
  void *want[256] = {0}, *oinst = NULL;
  int rc = -1;
  if (pl->nparams > 256) {
    snprintf(t->detail, sizeof(t->detail), "too many params");
    return -1;
  }
  for (int p = 0; p < pl->nparams; p++) {
    uint64_t bytes = pl->buffer_bytes(inst, p);
    if (is_checked(pl, p) && !(want[p] = malloc(bytes ? (size_t)bytes : 1))) {
      snprintf(t->detail, sizeof(t->detail), "out of memory");
      goto done;
    }
  }
  if (orc) {
    if (orc->create(&oinst, shape) || orc->prepare(oinst, seed, 0) ||
        orc->launch(oinst) || orc->sync(oinst)) {
      snprintf(t->detail, sizeof(t->detail), "oracle: %s",
               orc->last_error(oinst));
      goto done;
    }
    for (int p = 0; p < pl->nparams; p++)
      if (want[p])
        orc->read(oinst, p, want[p], pl->buffer_bytes(inst, p));
  } else if (pl->reference(inst, want)) {
    snprintf(t->detail, sizeof(t->detail), "reference: %s",
             pl->last_error(inst));
    goto done;
  }
  if (compare_outputs(pl, inst, want, t) < 0)
    goto done;
  if (t->mismatches) {
    char first[sizeof(t->detail)];
    snprintf(first, sizeof(first), "%s", t->detail);
    snprintf(t->detail, sizeof(t->detail), "%.100s, after timing, on the "
             "inputs of seed %llu", first, (unsigned long long)seed);
  }
  rc = 0;
done:
  for (int p = 0; p < pl->nparams; p++)
    free(want[p]);
  if (oinst)
    orc->destroy(oinst);
  return rc;
}

/* The stale_outputs gate for the timed candidate: the outputs its last
 * placement block left (inputs of block_seed(seed, block)) are checked
 * against the oracle; restore() re-poisons outputs before every sample, so
 * work skipped in the last sample shows. When that block is the first one,
 * whose inputs the warm-up also saw, the instance first gets fresh inputs
 * and two more launches on them, as timing would: a result kept from the
 * warm-up cannot pass, nor can a kernel that does less when its inputs
 * repeat. */
static int verify_last(const kl_plugin *pl, void *inst, int shape,
                       const kl_plugin *orc, uint64_t seed, size_t block,
                       tally *t) {
  if (block == 0) {
    block = 1;
    if (pl->prepare(inst, block_seed(seed, block), 0) || pl->restore(inst) ||
        pl->launch(inst) || pl->sync(inst) || pl->restore(inst) ||
        pl->launch(inst) || pl->sync(inst)) {
      snprintf(t->detail, sizeof(t->detail), "%s", pl->last_error(inst));
      return -1;
    }
  }
  return verify_timed(pl, inst, shape, orc, block_seed(seed, block), t);
}

/* The "verify" member of a time reply: one entry per timed plugin. */
static json_object *verify_json(const tally *t, int np) {
  json_object *arr = json_object_new_array();
  for (int k = 0; k < np; k++) {
    json_object *v = json_object_new_object();
    json_object_object_add(v, "correct",
                           json_object_new_boolean(t[k].mismatches == 0));
    json_object_object_add(v, "mismatches",
                           json_object_new_int64((int64_t)t[k].mismatches));
    json_object_object_add(v, "unwritten",
                           json_object_new_int64((int64_t)t[k].unwritten));
    json_object_object_add(v, "detail", json_object_new_string(t[k].detail));
    json_object_array_add(arr, v);
  }
  return arr;
}

double klw_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* A cold sample starts after reading a buffer twice the size of the last
 * level cache: reads evict without leaving dirty lines behind (a writing
 * flush would make the kernel pay for write-backs). */
static unsigned char *flush_buf;
static size_t flush_size;
static volatile uint64_t flush_sink;

/* The last-level cache one core sees: sysfs gives the size of the cache
 * instance (e.g. 32 MiB of one CCX); sysconf can report the whole socket's
 * (384 MiB on a VM slice of an EPYC), which would make every flush read
 * gigabytes for nothing. */
static size_t llc_bytes(void) {
  size_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 8; i++) {
    char path[96], text[32];
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    int level = fgets(text, sizeof(text), f) ? (int)strtol(text, NULL, 10) : 0;
    fclose(f);
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (!(f = fopen(path, "r")))
      continue;
    size_t size = 0;
    if (fgets(text, sizeof(text), f)) {
      char *end;
      size = strtoul(text, &end, 10);
      if (*end == 'K')
        size <<= 10;
      else if (*end == 'M')
        size <<= 20;
    }
    fclose(f);
    if (level >= best_level && size > 0) {
      best_level = level;
      best = size;
    }
  }
  if (best == 0) {
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    best = l3 > 0 ? (size_t)l3 : l2 > 0 ? (size_t)l2 : (size_t)32 << 20;
  }
  return best > ((size_t)256 << 20) ? (size_t)256 << 20 : best;
}

int klw_flush_host_caches(void) {
  if (!flush_buf) {
    flush_size = 2 * llc_bytes();
    if (flush_size < (8u << 20))
      flush_size = 8u << 20;
    flush_buf = malloc(flush_size);
    if (!flush_buf)
      return -1;
    memset(flush_buf, 1, flush_size); /* fault the pages in once */
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < flush_size; i += 64)
    sum += flush_buf[i];
  flush_sink += sum;
  return 0;
}

/* 1: the interval is narrow enough; 2: (two plugins) the decision at
 * decide_gain_pct can no longer change; 0: keep sampling. */
static int converged(double **us, int np, size_t n, size_t block,
                     size_t placements, double target,
                     double decide_gain_pct) {
  if (np == 1) {
    kl_summary s;
    return kl_stats_summarize(&s, us[0], n) == 0 && s.rel_ci <= target;
  }
  kl_speedup sp;
  if (kl_stats_speedup_blocked(&sp, us[0], us[1], n, block, placements, 0) !=
      0)
    return 0;
  if ((log(sp.ci_high) - log(sp.ci_low)) / 2.0 <= target)
    return 1;
  /* Deciding early needs the placement spread: three placements at least. */
  size_t units = block ? n / block : 0;
  if (placements && placements < units)
    units = placements;
  if (decide_gain_pct >= 0 && units >= 3) {
    double g = 1.0 + decide_gain_pct / 100.0;
    if (sp.ci_low > g || sp.ci_high < 1.0 / g ||
        (sp.ci_low > 1.0 / g && sp.ci_high < g))
      return 2;
  }
  return 0;
}

static time_req parse_time_req(json_object *req) {
  time_req t;
  t.shape = (int)klw_get_int(req, "shape", 0);
  t.cold = (int)klw_get_int(req, "cold", 1);
  t.warmup = (int)klw_get_int(req, "warmup", 2);
  t.min_n = (size_t)klw_get_int(req, "min_samples", 10);
  t.max_n = (size_t)klw_get_int(req, "max_samples", 1000);
  t.target = klw_get_double(req, "target_rel_ci", 0.005);
  t.cap_us = klw_get_double(req, "time_cap_ms", 2000) * 1000.0;
  t.seed = (uint64_t)klw_get_int(req, "seed", 1);
  t.block_rounds = (size_t)klw_get_int(req, "block_rounds", 16);
  t.decide_gain = klw_get_double(req, "decide_gain_pct", -1);
  t.verify = (int)klw_get_int(req, "verify", 0);
  t.oracle = (int)klw_get_int(req, "oracle", -1);
  if (t.block_rounds < 1)
    t.block_rounds = 1;
  if (t.min_n < 1)
    t.min_n = 1;
  if (t.max_n < t.min_n)
    t.max_n = t.min_n;
  return t;
}

static void op_time(json_object *req) {
  json_object *ids;
  if (!json_object_object_get_ex(req, "plugins", &ids)) {
    klw_reply_error("time: no plugins");
    return;
  }
  int np = (int)json_object_array_length(ids);
  if (np < 1 || np > 2) {
    klw_reply_error("time: one or two plugins, not %d", np);
    return;
  }
  time_req tr = parse_time_req(req);
  int shape = tr.shape, cold = tr.cold, warmup = tr.warmup;
  size_t min_n = tr.min_n, max_n = tr.max_n, block_rounds = tr.block_rounds;
  double target = tr.target, cap_us = tr.cap_us, decide_gain = tr.decide_gain;
  uint64_t seed = tr.seed;
  const kl_plugin *pl[2] = {0};
  void *inst[2] = {0};
  double *us[2] = {0};
  for (int k = 0; k < np; k++) {
    pl[k] = klw_plugin_at(json_object_get_int64(json_object_array_get_idx(ids, k)));
    if (!pl[k]) {
      klw_reply_error("time: no plugin %d",
                  (int)json_object_get_int64(json_object_array_get_idx(ids, k)));
      goto done;
    }
    if (pl[k]->create(&inst[k], shape)) {
      klw_reply_error("time: create: %s", pl[k]->last_error(NULL));
      goto done;
    }
    if (pl[k]->prepare(inst[k], seed, 0)) {
      klw_reply_error("time: prepare: %s", pl[k]->last_error(inst[k]));
      goto done;
    }
    if (!(us[k] = malloc(max_n * sizeof(double)))) {
      klw_reply_error("time: out of memory");
      goto done;
    }
  }
  if (pl[0]->flush) { /* a device plugin: CUPTI times it */
    for (int k = 1; k < np; k++)
      if (!pl[k]->flush) {
        klw_reply_error("time: a device and a host plugin cannot be compared");
        goto done;
      }
#ifdef KL_HAVE_CUPTI
    op_time_device(&tr, pl, inst, np);
#else
    klw_reply_error("time: this kl-worker was built without CUPTI, so it cannot "
                "time device kernels");
#endif
    goto done;
  }
  if (cold && klw_flush_host_caches() < 0) {
    klw_reply_error("time: out of memory for the cache flush buffer");
    goto done;
  }
  /* Warm up, and time one round (flushes included) to size the blocks. */
  double round_us = 0;
  for (int k = 0; k < np; k++)
    for (int i = 0; i < (warmup > 0 ? warmup : 1); i++) {
      pl[k]->restore(inst[k]);
      double t0 = klw_now_us();
      if (cold)
        klw_flush_host_caches();
      pl[k]->launch(inst[k]);
      pl[k]->sync(inst[k]);
      if (i == (warmup > 0 ? warmup : 1) - 1)
        round_us += klw_now_us() - t0;
    }
  /* At least six placement blocks in the rounds the budget allows: with
   * fewer than three, an interval knows nothing of placement, and a short
   * time cap would otherwise read a placement effect as a speedup. */
  double expected = round_us > 0 ? cap_us / round_us : (double)max_n;
  if (expected > (double)max_n)
    expected = (double)max_n;
  size_t fit = (size_t)(expected / 6.0);
  if (fit < 1)
    fit = 1;
  if (fit < block_rounds)
    block_rounds = fit;
  const char *reason = "max_samples";
  double start = klw_now_us();
  size_t n = 0, next_look = min_n;
  uint64_t last_seed = seed;
  while (n < max_n) {
    /* Where buffers land (pages, cache sets, alignment between them)
     * changes a kernel's time by a few percent, and one placement would be
     * measured throughout. Fresh instances every block of rounds make
     * placement a random effect that both sides sample alike. */
    if (n > 0 && n % block_rounds == 0) {
      last_seed = block_seed(seed, n / block_rounds);
      for (int j = 0; j < np; j++) {
        int k = (n / block_rounds) % 2 && np == 2 ? 1 - j : j;
        pl[k]->destroy(inst[k]);
        inst[k] = NULL;
        if (pl[k]->create(&inst[k], shape) ||
            pl[k]->prepare(inst[k], last_seed, 0)) {
          klw_reply_error("time: create: %s", pl[k]->last_error(inst[k]));
          goto done;
        }
        pl[k]->restore(inst[k]);
        pl[k]->launch(inst[k]); /* touch the new pages before timing */
        pl[k]->sync(inst[k]);
      }
    }
    for (int j = 0; j < np; j++) {
      int k = (n % 2 && np == 2) ? 1 - j : j; /* A B, then B A */
      pl[k]->restore(inst[k]);
      if (cold)
        klw_flush_host_caches();
      double t0 = klw_now_us();
      if (pl[k]->launch(inst[k]) || pl[k]->sync(inst[k])) {
        klw_reply_error("time: launch: %s", pl[k]->last_error(inst[k]));
        goto done;
      }
      us[k][n] = klw_now_us() - t0;
    }
    n++;
    if (klw_now_us() - start > cap_us && n >= 3) {
      reason = "time_cap";
      break;
    }
    if (n >= next_look) {
      int done_why =
          converged(us, np, n, block_rounds, 0, target, decide_gain);
      if (done_why) {
        reason = done_why == 1 ? "converged" : "decided";
        break;
      }
      next_look = n + (n / 8 > 1 ? n / 8 : 1);
    }
  }
  tally vt[2];
  memset(vt, 0, sizeof(vt));
  if (tr.verify &&
      verify_last(pl[np - 1], inst[np - 1], shape,
                  tr.oracle >= 0 ? klw_plugin_at(tr.oracle) : NULL, seed,
                  n > block_rounds ? (n - 1) / block_rounds : 0,
                  &vt[np - 1]) < 0) {
    klw_reply_error("time: verify: %s", vt[np - 1].detail);
    goto done;
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  if (tr.verify)
    json_object_object_add(o, "verify", verify_json(vt, np));
  json_object *all = json_object_new_array();
  for (int k = 0; k < np; k++) {
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < n; i++)
      json_object_array_add(arr, json_object_new_double(us[k][i]));
    json_object_array_add(all, arr);
  }
  json_object_object_add(o, "samples", all);
  json_object_object_add(o, "stop_reason", json_object_new_string(reason));
  json_object_object_add(o, "wall_ms",
                         json_object_new_double((klw_now_us() - start) / 1000.0));
  json_object_object_add(o, "flush_bytes",
                         json_object_new_double(cold ? (double)flush_size : 0));
  json_object_object_add(o, "block_rounds",
                         json_object_new_int64((int64_t)block_rounds));
  klw_reply(o);
done:
  for (int k = 0; k < np; k++) {
    if (pl[k] && inst[k])
      pl[k]->destroy(inst[k]);
    free(us[k]);
  }
}


/* ---- devices (CUDA) ---------------------------------------------------------- */

/* Device-to-device copy bandwidth in GB/s (bytes read plus bytes written),
 * the best of three 256 MiB copies timed with events; 0 when any call
 * fails. The driver's memory-clock attribute reads 0 on recent drivers, so
 * the roofline gate's bound is measured, once per worker, when asked
 * ({"op":"device","memory":1}). */
static double copy_gbps(void *h, int dev) {
  typedef int (*fn)();
  fn ctx_retain = (fn)dlsym(h, "cuDevicePrimaryCtxRetain"),
     ctx_set = (fn)dlsym(h, "cuCtxSetCurrent"),
     alloc = (fn)dlsym(h, "cuMemAlloc_v2"), mfree = (fn)dlsym(h, "cuMemFree_v2"),
     copy = (fn)dlsym(h, "cuMemcpyDtoDAsync_v2"),
     ev_create = (fn)dlsym(h, "cuEventCreate"),
     ev_record = (fn)dlsym(h, "cuEventRecord"),
     ev_sync = (fn)dlsym(h, "cuEventSynchronize"),
     ev_elapsed = (fn)dlsym(h, "cuEventElapsedTime"),
     ev_destroy = (fn)dlsym(h, "cuEventDestroy_v2");
  if (!ctx_retain || !ctx_set || !alloc || !mfree || !copy || !ev_create ||
      !ev_record || !ev_sync || !ev_elapsed || !ev_destroy)
    return 0;
  void *ctx = NULL, *e0 = NULL, *e1 = NULL;
  unsigned long long a = 0, b = 0;
  size_t bytes = (size_t)256 << 20;
  double best = 0;
  if (ctx_retain(&ctx, dev) || ctx_set(ctx) || alloc(&a, bytes) ||
      alloc(&b, bytes) || ev_create(&e0, 0) || ev_create(&e1, 0))
    goto done;
  for (int i = 0; i < 4; i++) {
    float ms = 0;
    if (ev_record(e0, NULL) || copy(b, a, bytes, NULL) ||
        ev_record(e1, NULL) || ev_sync(e1) || ev_elapsed(&ms, e0, e1))
      goto done;
    double gbps = 2.0 * (double)bytes / (ms * 1e6);
    if (i > 0 && ms > 0 && gbps > best)
      best = gbps;
  }
done:
  if (e0)
    ev_destroy(e0);
  if (e1)
    ev_destroy(e1);
  if (a)
    mfree(a);
  if (b)
    mfree(b);
  return best;
}

/* The driver is opened at run time: a worker built with CUDA must still run
 * host cases where there is no driver. */
static void op_device(json_object *req) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  int count = 0;
  char name[256] = "", why[256] = "";
  int clock_khz = 0, sms = 0, mem_khz = 0, bus_bits = 0, l2 = 0;
  double copy = 0;
  if (!h) {
    snprintf(why, sizeof(why), "no CUDA driver (libcuda.so.1: %s)", dlerror());
  } else {
    int (*cu_init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*cu_count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
    int (*cu_get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
    int (*cu_name)(char *, int, int) =
        (int (*)(char *, int, int))dlsym(h, "cuDeviceGetName");
    int (*cu_attr)(int *, int, int) =
        (int (*)(int *, int, int))dlsym(h, "cuDeviceGetAttribute");
    int rc = cu_init ? cu_init(0) : -1;
    if (rc != 0) {
      snprintf(why, sizeof(why), "cuInit failed (CUDA error %d)", rc);
    } else if (!cu_count || cu_count(&count) != 0 || count == 0) {
      snprintf(why, sizeof(why), "the driver sees no CUDA device");
      count = 0;
    } else {
      int dev = 0;
      if (cu_get && cu_get(&dev, 0) == 0) {
        if (cu_name)
          cu_name(name, sizeof(name), dev);
        if (cu_attr) {
          cu_attr(&clock_khz, 13 /* CLOCK_RATE */, dev);
          cu_attr(&sms, 16 /* MULTIPROCESSOR_COUNT */, dev);
          cu_attr(&mem_khz, 36 /* MEMORY_CLOCK_RATE */, dev);
          cu_attr(&bus_bits, 37 /* GLOBAL_MEMORY_BUS_WIDTH */, dev);
          cu_attr(&l2, 38 /* L2_CACHE_SIZE */, dev);
          /* only for the roofline gate, and only where the driver gives
           * no memory clock: 512 MiB and a few copies, once per worker */
          static double measured = -1;
          if (klw_get_int(req, "memory", 0) && mem_khz * bus_bits == 0 &&
              measured < 0)
            measured = copy_gbps(h, dev);
          copy = measured > 0 ? measured : 0;
        }
      }
    }
  }
  json_object_object_add(o, "count", json_object_new_int(count));
  json_object_object_add(o, "name", json_object_new_string(name));
  json_object_object_add(o, "max_sm_clock_mhz",
                         json_object_new_double(clock_khz / 1000.0));
  json_object_object_add(o, "sms", json_object_new_int(sms));
  /* double data rate: two transfers per memory clock; where the driver
   * gives no clock, what a device copy achieves */
  double peak = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  json_object_object_add(o, "memory_peak_gbps",
                         json_object_new_double(peak > copy ? peak : copy));
  json_object_object_add(o, "copy_gbps", json_object_new_double(copy));
  json_object_object_add(o, "l2_bytes", json_object_new_double(l2));
  json_object_object_add(o, "sandbox",
                         json_object_new_string(getenv("KL_WORKER_SANDBOX")
                                                    ? getenv("KL_WORKER_SANDBOX")
                                                    : "none"));
  json_object_object_add(o, "why", json_object_new_string(why));
  json_object_object_add(
      o, "visible_devices",
      json_object_new_string(getenv("CUDA_VISIBLE_DEVICES")
                                 ? getenv("CUDA_VISIBLE_DEVICES")
                                 : ""));
  klw_reply(o);
}

#ifdef KL_HAVE_CUPTI
/* Device samples without a host round trip per sample: each round queues,
 * per plugin, [restore][flush][marker/clock probe][kernel ...] on one shared
 * stream; blocks rotate through a pool of instance sets made up front (the
 * placements); the device is synchronised once per block, and the
 * kernel records are cut into samples at the markers in launch
 * (correlation) order. A sample's time is the span from its first kernel's
 * start to its last kernel's end, on any stream: work a candidate hides on
 * another stream is counted. */
typedef struct dev_sample_ref {
  int plugin;
  size_t index; /* sample index within the plugin */
} dev_sample_ref;

static int cmp_correlation(const void *a, const void *b) {
  const klw_kernel *x = a, *y = b;
  if (x->correlation != y->correlation)
    return x->correlation < y->correlation ? -1 : 1;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* Durations of the flush kernels (us), for reporting what a cold sample
 * costs beyond the kernel. */
static double flush_us_sum;
static size_t flush_count;

/* Cut this block's records into samples; 0 or -1 with a message. */
static int attribute(klw_kernel *k, size_t nk, const dev_sample_ref *refs,
                     size_t nrefs, double **us, char *err, size_t errlen) {
  for (size_t i = 0; i < nk; i++)
    if (k[i].kind == KLW_FLUSH && k[i].end > k[i].start) {
      flush_us_sum += (double)(k[i].end - k[i].start) / 1000.0;
      flush_count++;
    }
  bool by_corr = true;
  for (size_t i = 0; i < nk; i++)
    if (k[i].correlation == 0)
      by_corr = false;
  if (by_corr)
    qsort(k, nk, sizeof(*k), cmp_correlation);
  size_t s = 0;
  long cur = -1;
  uint64_t lo = 0, hi = 0;
  for (size_t i = 0; i <= nk; i++) {
    bool end = i == nk;
    if (end || k[i].kind == KLW_PROBE) {
      if (cur >= 0) {
        if (hi <= lo) {
          snprintf(err, errlen,
                   "sample %ld launched no timed kernel (did launch() run "
                   "any work?)",
                   cur);
          return -1;
        }
        us[refs[cur].plugin][refs[cur].index] = (double)(hi - lo) / 1000.0;
      }
      if (end)
        break;
      if (s >= nrefs) {
        snprintf(err, errlen, "more sample markers (%zu) than samples (%zu)",
                 s + 1, nrefs);
        return -1;
      }
      cur = (long)s++;
      lo = UINT64_MAX;
      hi = 0;
    } else if (k[i].kind == KLW_WORK && cur >= 0) {
      if (k[i].start == 0 && k[i].end == 0) {
        snprintf(err, errlen, "a kernel record has no timestamps");
        return -1;
      }
      if (k[i].start < lo)
        lo = k[i].start;
      if (k[i].end > hi)
        hi = k[i].end;
    }
  }
  if (s != nrefs) {
    snprintf(err, errlen, "found %zu sample markers for %zu samples%s", s,
             nrefs, by_corr ? "" : " (records without correlation ids)");
    return -1;
  }
  return 0;
}

static int share_stream(const kl_plugin **pl, void **inst, int np) {
  for (int k = 1; k < np; k++)
    if (pl[k]->set_stream(inst[k], pl[0]->stream(inst[0])))
      return k;
  return 0;
}

static void op_time_device(const time_req *tr, const kl_plugin **pl,
                           void **inst, int np) {
  int shape = tr->shape, cold = tr->cold, warmup = tr->warmup;
  size_t min_n = tr->min_n, max_n = tr->max_n, block_rounds = tr->block_rounds;
  double target = tr->target, cap_us = tr->cap_us, decide_gain = tr->decide_gain;
  uint64_t seed = tr->seed;
  char err[512];
  double *us[2] = {0}, *mhz[2] = {0};
  void **pool = NULL; /* npool sets of np instances; set 0 is inst[] */
  size_t npool = 0;
  dev_sample_ref *refs = NULL;
  klw_kernel *recs = NULL;
  size_t nrecs = 0, dropped = 0;
  if (klw_cupti_start(err, sizeof(err)) < 0) {
    klw_reply_error("time: %s", err);
    return;
  }
  for (int k = 0; k < np; k++)
    if (!(us[k] = calloc(max_n, sizeof(double))) ||
        !(mhz[k] = calloc(max_n, sizeof(double)))) {
      klw_reply_error("time: out of memory");
      goto done;
    }
  if (!(refs = calloc(np * (block_rounds + 1), sizeof(*refs)))) {
    klw_reply_error("time: out of memory");
    goto done;
  }
  int bad = share_stream(pl, inst, np);
  if (bad) {
    klw_reply_error("time: set_stream: %s", pl[bad]->last_error(inst[bad]));
    goto done;
  }
  /* warm up; one round timed on the host sizes the placement blocks */
  double round_us = 0;
  for (int i = 0; i < (warmup > 0 ? warmup : 1); i++) {
    double t0 = klw_now_us();
    for (int k = 0; k < np; k++) {
      if (pl[k]->restore(inst[k]) || (cold && pl[k]->flush(inst[k])) ||
          pl[k]->clock_mark(inst[k], 2000) || pl[k]->launch(inst[k])) {
        klw_reply_error("time: warm-up: %s", pl[k]->last_error(inst[k]));
        goto done;
      }
    }
    if (pl[0]->sync(inst[0])) {
      klw_reply_error("time: warm-up: %s", pl[0]->last_error(inst[0]));
      goto done;
    }
    round_us = klw_now_us() - t0;
  }
  for (int k = 0; k < np; k++) {
    uint64_t got;
    if (k == 0 || pl[k] != pl[0])
      pl[k]->clock_read(inst[k], mhz[k], max_n, &got);
  }
  klw_cupti_take(&recs, &nrecs, &dropped);
  free(recs);
  recs = NULL;
  double expected = round_us > 0 ? cap_us / round_us : (double)max_n;
  if (expected > (double)max_n)
    expected = (double)max_n;
  size_t fit = (size_t)(expected / 6.0);
  if (fit < 1)
    fit = 1;
  if (fit < block_rounds)
    block_rounds = fit;

  size_t window = block_rounds * (128 / block_rounds > 1 ? 128 / block_rounds
                                                        : 1);
  free(refs);
  if (!(refs = calloc((size_t)np * (window + 1), sizeof(*refs)))) {
    klw_reply_error("time: out of memory");
    goto done;
  }
  /* The pool: up to six sets of instances, each prepared once and warmed
   * up, all on one stream. Rotating through them per block varies memory
   * placement without allocating or copying anything while sampling. */
  uint64_t set_bytes = 0;
  for (int k = 0; k < np; k++)
    for (int q = 0; q < pl[k]->nparams; q++)
      set_bytes += pl[k]->buffer_bytes(inst[k], q);
  npool = set_bytes ? (size_t)((8ull << 30) / set_bytes) : 6;
  if (npool > 6)
    npool = 6;
  if (npool < 1)
    npool = 1;
  if (!(pool = calloc(npool * (size_t)np, sizeof(void *)))) {
    klw_reply_error("time: out of memory");
    goto done;
  }
  for (int k = 0; k < np; k++)
    pool[k] = inst[k];
  for (size_t b = 1; b < npool; b++)
    for (int k = 0; k < np; k++) {
      void **slot = &pool[b * (size_t)np + (size_t)k];
      if (pl[k]->create(slot, shape) ||
          pl[k]->prepare(*slot, block_seed(seed, b), 0) ||
          pl[k]->set_stream(*slot, pl[0]->stream(inst[0])) ||
          pl[k]->restore(*slot) || pl[k]->clock_mark(*slot, 0) ||
          pl[k]->launch(*slot)) {
        klw_reply_error("time: placement pool: %s", pl[k]->last_error(*slot));
        goto done;
      }
    }
  if (pl[0]->sync(inst[0])) {
    klw_reply_error("time: %s", pl[0]->last_error(inst[0]));
    goto done;
  }
  for (int k = 0; k < np; k++) {
    uint64_t got;
    if (k == 0 || pl[k] != pl[0])
      pl[k]->clock_read(inst[k], mhz[k], max_n, &got);
  }
  klw_cupti_take(&recs, &nrecs, &dropped);
  free(recs);
  recs = NULL;

  const char *reason = "max_samples";
  double start = klw_now_us();
  size_t n = 0, next_look = min_n, throttle_probe = 0;
  while (n < max_n) {
    void **set = pool;
    /* One collection window holds whole placement blocks, about 128
     * rounds: the device is synchronised and CUPTI flushed once per
     * window, not per block. */
    size_t rounds = window;
    if (n + rounds > max_n)
      rounds = max_n - n;
    size_t nrefs = 0;
    for (size_t r = 0; r < rounds; r++) {
      set = pool + (size_t)(((n + r) / block_rounds) % npool) * np;
      for (int j = 0; j < np; j++) {
        int k = ((n + r) % 2 && np == 2) ? 1 - j : j; /* A B, then B A */
        /* the clock is measured before every cold sample; in hot mode
         * before one round in eight (each probe costs ~2 us of device
         * time), and a bare marker before the others */
        int spin = cold || throttle_probe++ % 8 == 0 ? 2000 : 0;
        if (pl[k]->restore(set[k]) || (cold && pl[k]->flush(set[k])) ||
            pl[k]->clock_mark(set[k], spin) || pl[k]->launch(set[k])) {
          klw_reply_error("time: launch: %s", pl[k]->last_error(set[k]));
          goto done;
        }
        refs[nrefs].plugin = k;
        refs[nrefs].index = n + r;
        nrefs++;
      }
    }
    if (pl[0]->sync(inst[0])) { /* every set shares inst[0]'s stream */
      klw_reply_error("time: %s", pl[0]->last_error(inst[0]));
      goto done;
    }
    /* Clock readings live in the plugin's shared object: two plugins may
     * be one object (an A/A comparison compiles to one cache entry), so
     * read each object once and hand its readings out in launch order. */
    for (int k = 0; k < np; k++) {
      if (k > 0 && pl[k] == pl[0])
        continue;
      double got_mhz[2 * 4096];
      uint64_t got = 0, want = 0, at = 0;
      for (size_t i = 0; i < nrefs; i++)
        want += pl[refs[i].plugin] == pl[k];
      if (pl[k]->clock_read(inst[k], got_mhz,
                            sizeof(got_mhz) / sizeof(got_mhz[0]), &got) ||
          got != want) {
        klw_reply_error("time: %llu clock readings for %llu samples",
                    (unsigned long long)got, (unsigned long long)want);
        goto done;
      }
      for (size_t i = 0; i < nrefs; i++)
        if (pl[refs[i].plugin] == pl[k])
          mhz[refs[i].plugin][refs[i].index] = got_mhz[at++];
    }
    klw_cupti_take(&recs, &nrecs, &dropped);
    if (dropped) {
      klw_reply_error("time: CUPTI dropped %zu records", dropped);
      goto done;
    }
    if (attribute(recs, nrecs, refs, nrefs, us, err, sizeof(err)) < 0) {
      klw_reply_error("time: %s", err);
      goto done;
    }
    free(recs);
    recs = NULL;
    n += rounds;
    if (klw_now_us() - start > cap_us && n >= 3) {
      reason = "time_cap";
      break;
    }
    if (n >= next_look) {
      int why =
          converged(us, np, n, block_rounds, npool, target, decide_gain);
      if (why) {
        reason = why == 1 ? "converged" : "decided";
        break;
      }
      next_look = n + (n / 8 > 1 ? n / 8 : 1);
    }
  }
  /* hot mode measures the clock every eighth round: carry it forward */
  for (int k = 0; k < np; k++)
    for (size_t i = 1; i < n; i++)
      if (mhz[k][i] == 0)
        mhz[k][i] = mhz[k][i - 1];
  /* the candidate's last placement set holds its last timed outputs */
  tally vt[2];
  memset(vt, 0, sizeof(vt));
  size_t last = n > 0 ? ((n - 1) / block_rounds) % npool : 0;
  if (tr->verify &&
      verify_last(pl[np - 1], pool[last * (size_t)np + (size_t)(np - 1)],
                  shape, tr->oracle >= 0 ? klw_plugin_at(tr->oracle) : NULL,
                  seed, last, &vt[np - 1]) < 0) {
    klw_reply_error("time: verify: %s", vt[np - 1].detail);
    goto done;
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  if (tr->verify)
    json_object_object_add(o, "verify", verify_json(vt, np));
  json_object *all = json_object_new_array(), *clocks = json_object_new_array();
  for (int k = 0; k < np; k++) {
    json_object *arr = json_object_new_array(), *carr = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
      json_object_array_add(arr, json_object_new_double(us[k][i]));
      json_object_array_add(carr, json_object_new_double(mhz[k][i]));
    }
    json_object_array_add(all, arr);
    json_object_array_add(clocks, carr);
  }
  json_object_object_add(o, "samples", all);
  json_object_object_add(o, "sm_clock_mhz", clocks);
  json_object_object_add(o, "timer", json_object_new_string("cupti"));
  json_object_object_add(
      o, "flush_us",
      json_object_new_double(flush_count ? flush_us_sum / flush_count : 0));
  flush_us_sum = 0;
  flush_count = 0;
  json_object_object_add(o, "stop_reason", json_object_new_string(reason));
  json_object_object_add(o, "wall_ms",
                         json_object_new_double((klw_now_us() - start) / 1000.0));
  json_object_object_add(o, "flush_bytes", json_object_new_double(0));
  json_object_object_add(o, "block_rounds",
                         json_object_new_int64((int64_t)block_rounds));
  json_object_object_add(o, "placements", json_object_new_int64((int64_t)npool));
  klw_reply(o);
done:
  for (size_t b = 1; pool && b < npool; b++)
    for (int k = 0; k < np; k++)
      if (pool[b * (size_t)np + (size_t)k])
        pl[k]->destroy(pool[b * (size_t)np + (size_t)k]);
  free(pool);
  free(recs);
  free(refs);
  for (int k = 0; k < np; k++) {
    free(us[k]);
    free(mhz[k]);
  }
}
#endif /* KL_HAVE_CUPTI */

int main(void) {
  for (;;) {
    char *line = read_line();
    if (!line)
      return 0; /* the parent went away */
    json_object *req = json_tokener_parse(line);
    json_object *op;
    if (!req || !json_object_object_get_ex(req, "op", &op)) {
      klw_reply_error("bad request");
      json_object_put(req);
      continue;
    }
    const char *name = json_object_get_string(op);
    if (strcmp(name, "load") == 0)
      op_load(req);
    else if (strcmp(name, "check") == 0)
      op_check(req);
    else if (strcmp(name, "time") == 0)
      op_time(req);
    else if (strcmp(name, "device") == 0)
      op_device(req);
    else if (strcmp(name, "profile") == 0)
      klw_op_profile(req);
    else if (strcmp(name, "metric_passes") == 0)
      klw_op_metric_passes(req);
    else if (strcmp(name, "quit") == 0) {
      json_object_put(req);
      return 0;
    } else
      klw_reply_error("unknown op '%s'", name);
    json_object_put(req);
    /* what a candidate printed goes out before the next request */
    fflush(stdout);
  }
}
