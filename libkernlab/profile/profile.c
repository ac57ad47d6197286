/* Profiles: from raw counters to catalog values and a bottleneck verdict.
 *
 * A profile keeps its inputs (the raw values of the main kernel keyed by
 * CUPTI or perf names, the kernel's launch and occupancy facts, the timed
 * duration, the roofline) and computes everything else from them, the same
 * way whether the inputs came from the worker a moment ago or from a JSON
 * profile recorded on another machine. The verdict is a short decision
 * list over a handful of values (see classify_device), with the numbers
 * that decided it. */
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../core/internal.h"
#include "../core/json.h"
#include "kernel_info_fields.h"
#include "kernlab/plugin.h"
#include "profile_internal.h"

#define MAX_EVIDENCE 6

typedef struct raw_value {
  char *name;
  double value;
} raw_value;

typedef struct raw_stand_in {
  char *name, *source;
} raw_stand_in;

struct kl_profile {
  char *set, *backend, *chip, *replay, *note, *verdict, *limiter;
  size_t passes, kernels;
  double init_ms, config_ms, setup_ms, collect_ms, first_pass_ms, decode_ms,
      wall_ms;
  double time_us;
  bool has_roofline;
  double bytes, flops;
  bool has_kernel;
  kl_plugin_kernel_info kernel;
  raw_value *raw;
  size_t nraw;
  double *values; /* one per catalog entry; NAN when absent */
  kl_bottleneck bottleneck;
  char *name;         /* a part's kernel name, or NULL */
  kl_profile **parts; /* every kernel of a launch that ran several */
  size_t nparts;
  kl_ncu_advice *advice; /* Nsight Compute's rule results, ranked */
  size_t nadvice, cap_advice;
  raw_stand_in *stand_ins; /* values taken from a stand-in, and which */
  size_t nstand_ins, cap_stand_ins;
};

const char *kl_bottleneck_name(kl_bottleneck b) {
  switch (b) {
  case KL_BOTTLENECK_MEMORY:
    return "memory_bound";
  case KL_BOTTLENECK_COMPUTE:
    return "compute_bound";
  case KL_BOTTLENECK_LATENCY:
    return "latency_bound";
  case KL_BOTTLENECK_LAUNCH:
    return "launch_bound";
  case KL_BOTTLENECK_UNKNOWN:
    break;
  }
  return "unknown";
}

void kl_profile_free(kl_profile *p) {
  if (!p) return;
  for (size_t i = 0; i < p->nraw; i++)
    kl__free(p->raw[i].name);
  kl__free(p->raw);
  kl__free(p->values);
  kl__free(p->set);
  kl__free(p->backend);
  kl__free(p->chip);
  kl__free(p->replay);
  kl__free(p->note);
  kl__free(p->verdict);
  kl__free(p->limiter);
  kl__free(p->name);
  for (size_t i = 0; i < p->nparts; i++)
    kl_profile_free(p->parts[i]);
  kl__free(p->parts);
  for (size_t i = 0; i < p->nadvice; i++)
    kl__ncu_advice_dispose(&p->advice[i]);
  kl__free(p->advice);
  for (size_t i = 0; i < p->nstand_ins; i++) {
    kl__free(p->stand_ins[i].name);
    kl__free(p->stand_ins[i].source);
  }
  kl__free(p->stand_ins);
  kl__free(p);
}

int kl__profile_add_stand_in(kl_profile *p, const char *name,
                             const char *source) {
  if (KL__GROW(p->stand_ins, p->cap_stand_ins, p->nstand_ins + 1) < 0)
    return KL_ENOMEM;
  raw_stand_in *s = &p->stand_ins[p->nstand_ins];
  if (!(s->name = kl__strdup(name)) || !(s->source = kl__strdup(source))) {
    kl__free(s->name);
    return kl__error_oom();
  }
  p->nstand_ins++;
  return 0;
}

const char *kl_profile_stand_in(const kl_profile *p, const char *name) {
  const kl_metric_info *m = name ? kl_metric_find(name) : NULL;
  for (size_t i = 0; p && name && i < p->nstand_ins; i++)
    if (strcmp(p->stand_ins[i].name, name) == 0 ||
        (m && strcmp(p->stand_ins[i].name, m->name) == 0))
      return p->stand_ins[i].source;
  return NULL;
}

void kl__ncu_advice_dispose(kl_ncu_advice *a) {
  kl__free((char *)a->rule);
  kl__free((char *)a->type);
  kl__free((char *)a->section);
  kl__free((char *)a->text);
  kl__free((char *)a->speedup_type);
  memset(a, 0, sizeof(*a));
}

/* Ranked: the largest estimated speedup first, those without one last, in
 * the order ncu gave them. */
static bool ranks_before(const kl_ncu_advice *a, const kl_ncu_advice *b) {
  if (isnan(b->speedup_pct)) return !isnan(a->speedup_pct);
  return !isnan(a->speedup_pct) && a->speedup_pct > b->speedup_pct;
}

int kl__profile_add_advice(kl_profile *p, const kl_ncu_advice *a) {
  if (KL__GROW(p->advice, p->cap_advice, p->nadvice + 1) < 0) return KL_ENOMEM;
  kl_ncu_advice c = {0};
  c.speedup_pct = a->speedup_pct;
  if (!(c.rule = kl__strdup(a->rule ? a->rule : "")) ||
      !(c.type = kl__strdup(a->type ? a->type : "")) ||
      !(c.section = kl__strdup(a->section ? a->section : "")) ||
      !(c.text = kl__strdup(a->text ? a->text : "")) ||
      !(c.speedup_type = kl__strdup(a->speedup_type ? a->speedup_type : ""))) {
    kl__ncu_advice_dispose(&c);
    return kl__error_oom();
  }
  size_t at = p->nadvice;
  while (at > 0 && ranks_before(&c, &p->advice[at - 1]))
    at--;
  memmove(&p->advice[at + 1], &p->advice[at],
          (p->nadvice - at) * sizeof(*p->advice));
  p->advice[at] = c;
  p->nadvice++;
  return 0;
}

int kl__profile_set_name(kl_profile *p, const char *name) {
  char *copy = name ? kl__strdup(name) : NULL;
  if (name && !copy) return kl__error_oom();
  kl__free(p->name);
  p->name = copy;
  return 0;
}

size_t kl_profile_advice_count(const kl_profile *p) {
  return p ? p->nadvice : 0;
}

const kl_ncu_advice *kl_profile_advice(const kl_profile *p, size_t i) {
  return p && i < p->nadvice ? &p->advice[i] : NULL;
}

static void derive_operator(kl_profile *p);

int kl__profile_add_part(kl_profile *p, kl_profile *part, const char *name) {
  kl_profile **grown =
      kl__realloc(p->parts, (p->nparts + 1) * sizeof(*p->parts));
  if (!grown || (name && !(part->name = kl__strdup(name)))) {
    if (grown) p->parts = grown;
    kl_profile_free(part);
    return kl__error_oom();
  }
  p->parts = grown;
  p->parts[p->nparts++] = part;
  derive_operator(p);
  return 0;
}

size_t kl_profile_part_count(const kl_profile *p) {
  return p ? p->nparts : 0;
}

const kl_profile *kl_profile_part(const kl_profile *p, size_t i) {
  return p && i < p->nparts ? p->parts[i] : NULL;
}

const char *kl_profile_name(const kl_profile *p) {
  return p ? p->name : NULL;
}

double kl_profile_time_us(const kl_profile *p) {
  return p && p->time_us > 0 ? p->time_us : NAN;
}

/* ---- set specs ------------------------------------------------------------
 */

void kl__profile_names_free(char **names, size_t n) {
  for (size_t i = 0; names && i < n; i++)
    kl__free(names[i]);
  kl__free(names);
}

static int add_name(char ***names, size_t *n, size_t *cap, const char *name,
                    size_t len) {
  for (size_t i = 0; i < *n; i++)
    if (strlen((*names)[i]) == len && strncmp((*names)[i], name, len) == 0)
      return 0;
  if (!kl__array_reserve(names, cap, *n + 1, sizeof(**names)))
    return kl__error_oom();
  if (!((*names)[*n] = kl__strndup(name, len))) return kl__error_oom();
  (*n)++;
  return 0;
}

int kl__profile_names(char ***out, size_t *nout, const char *spec) {
  size_t ncat, n = 0, cap = 0;
  const kl_metric_info *cat = kl_metric_catalog(&ncat);
  char **names = NULL;
  int rc = add_name(&names, &n, &cap, "gpu__time_duration.sum", 22);
  unsigned set = strcmp(spec, "quick") == 0      ? KL_METRIC_SET_QUICK
                 : strcmp(spec, "standard") == 0 ? KL_METRIC_SET_STANDARD
                                                 : 0;
  for (size_t i = 0; rc == 0 && set && i < ncat; i++)
    if ((cat[i].sets & set) && strcmp(cat[i].source, "cupti") == 0)
      rc = add_name(&names, &n, &cap, cat[i].ncu_name, strlen(cat[i].ncu_name));
  for (const char *p = spec; rc == 0 && !set && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *next = end ? end + 1 : p + len;
    char word[256];
    while (len && (*p == ' ' || *p == '\t'))
      p++, len--;
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
      len--;
    if (len == 0 || len >= sizeof(word)) {
      rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "--set: an empty or over-long metric name in '%s'", spec);
      break;
    }
    memcpy(word, p, len);
    word[len] = '\0';
    const kl_metric_info *m = kl_metric_find(word);
    if (m && strcmp(m->source, "cupti") == 0)
      rc = add_name(&names, &n, &cap, m->ncu_name, strlen(m->ncu_name));
    else if (m)
      rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "--set: '%s' is computed by kernlab (%s), not "
                     "collected: ask for the set it comes with",
                     word, m->source);
    else if (strstr(word, "__"))
      rc = add_name(&names, &n, &cap, word, len); /* the chip decides */
    else {
      const char *cands[256];
      size_t k = 0;
      for (size_t i = 0; i < ncat && k < 256; i++)
        cands[k++] = cat[i].name;
      const char *near = kl__suggest(word, cands, k);
      rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "--set: unknown metric '%s'%s%s%s (use quick, standard, "
                     "catalog names or CUPTI names like "
                     "dram__bytes_read.sum)",
                     word, near ? " (did you mean '" : "", near ? near : "",
                     near ? "'?)" : "");
    }
    p = next;
  }
  if (rc < 0) {
    kl__profile_names_free(names, n);
    return rc;
  }
  *out = names;
  *nout = n;
  return 0;
}

/* ---- values -----------------------------------------------------------------
 */

static const double *raw_get(const kl_profile *p, const char *name) {
  for (size_t i = 0; name && i < p->nraw; i++)
    if (strcmp(p->raw[i].name, name) == 0) return &p->raw[i].value;
  return NULL;
}

static size_t cat_index(const char *name) {
  size_t n;
  const kl_metric_info *cat = kl_metric_catalog(&n);
  const kl_metric_info *m = kl_metric_find(name);
  return m ? (size_t)(m - cat) : n;
}

static double get(const kl_profile *p, const char *name) {
  size_t ncat;
  kl_metric_catalog(&ncat);
  size_t i = cat_index(name);
  return i < ncat ? p->values[i] : NAN;
}

static void set(kl_profile *p, const char *name, double v) {
  size_t ncat;
  kl_metric_catalog(&ncat);
  size_t i = cat_index(name);
  if (i < ncat && isfinite(v)) p->values[i] = v;
}

/* The operator a launch is: how many kernels it ran and the longest one's
 * share of their profiled time (100 for one kernel). A chain of short
 * kernels of similar length is a fusion candidate. */
static void derive_operator(kl_profile *p) {
  if (!p->values) return; /* parts before the values: at compute() */
  double sum = 0, most = 0;
  for (size_t i = 0; i < p->nparts; i++) {
    double t = p->parts[i]->time_us;
    if (!(t > 0)) return; /* a part without a duration: no share */
    sum += t;
    most = t > most ? t : most;
  }
  size_t n = p->nparts > p->kernels ? p->nparts : p->kernels;
  set(p, "kernels", (double)(n ? n : 1));
  set(p, "largest_kernel_pct", p->nparts > 1 ? 100.0 * most / sum : 100.0);
}

static double ratio(double a, double b) {
  return isfinite(a) && isfinite(b) && b > 0 ? a / b : NAN;
}

/* Sectors touched over sectors needed, from ncu's share of each sector's
 * bytes used; a kernel without such accesses has nothing uncoalesced (1). */
static double sector_ratio(double efficiency_pct, double requests) {
  if (requests == 0 && efficiency_pct == 0) return 1.0;
  return ratio(100.0, efficiency_pct);
}

static double max2(double a, double b) {
  if (!isfinite(a)) return b;
  return isfinite(b) && b > a ? b : a;
}

/* Theoretical occupancy as the CUDA occupancy calculator computes it, and
 * which resource binds; the occupancy API's answer wins where they differ. */
static int occupancy(kl_profile *p) {
  const kl_plugin_kernel_info *k = &p->kernel;
  double threads =
      (double)k->block[0] * (double)k->block[1] * (double)k->block[2];
  double grid = (double)k->grid[0] * (double)k->grid[1] * (double)k->grid[2];
  set(p, "grid_size", grid);
  set(p, "block_size", threads);
  set(p, "registers_per_thread", k->registers);
  set(p, "static_smem_per_block", k->static_smem);
  set(p, "dynamic_smem_per_block", (double)k->dynamic_smem);
  set(p, "local_bytes_per_thread", k->local_bytes);
  if (k->warp_size <= 0 || threads <= 0 || k->max_threads_per_sm <= 0) return 0;
  double warps = ceil(threads / k->warp_size);
  double max_warps = (double)k->max_threads_per_sm / k->warp_size;
  struct {
    const char *name, *metric;
    double blocks;
  } lim[4] = {
      {"warps", "occupancy_limit_warps", floor(max_warps / warps)},
      {"blocks", "occupancy_limit_blocks", (double)k->max_blocks_per_sm},
      {"registers", "occupancy_limit_registers", INFINITY},
      {"shared memory", "occupancy_limit_shared_mem", INFINITY},
  };
  if (k->registers > 0) {
    /* registers are allocated per warp in units of 256 */
    double per_warp = ceil(k->registers * (double)k->warp_size / 256.0) * 256;
    lim[2].blocks = floor(floor(k->regs_per_sm / per_warp) / warps);
  }
  double smem = (double)k->static_smem + (double)k->dynamic_smem;
  if (smem > 0) {
    double per_block = ceil((smem + k->reserved_smem_per_block) / 128.0) * 128;
    lim[3].blocks = floor(k->smem_per_sm / per_block);
  }
  double best = INFINITY;
  for (int i = 0; i < 4; i++) {
    if (isfinite(lim[i].blocks)) set(p, lim[i].metric, lim[i].blocks);
    if (lim[i].blocks < best) best = lim[i].blocks;
  }
  double blocks = k->active_blocks_per_sm > 0 ? k->active_blocks_per_sm : best;
  kl_buf who = KL_BUF_INIT;
  for (int i = 0; i < 4; i++)
    if (lim[i].blocks == blocks)
      kl__buf_printf(&who, "%s%s", who.size ? " and " : "", lim[i].name);
  if (!who.size)
    kl__buf_printf(&who,
                   "the occupancy API (%g blocks per SM; the "
                   "calculator says %g)",
                   blocks, best);
  if (!(p->limiter = kl__buf_detach(&who))) /* NULL when a write failed */
    return KL_ENOMEM;
  set(p, "active_blocks_per_sm", blocks);
  set(p, "theoretical_occupancy_pct", 100.0 * blocks * warps / max_warps);
  if (blocks > 0 && k->sms > 0)
    set(p, "waves_per_sm", grid / (blocks * k->sms));
  return p->limiter ? 0 : kl__error_oom();
}

static const char *const stall_reasons[] = {"long_scoreboard",
                                            "short_scoreboard",
                                            "mio_throttle",
                                            "lg_throttle",
                                            "tex_throttle",
                                            "math_pipe_throttle",
                                            "barrier",
                                            "membar",
                                            "wait",
                                            "drain",
                                            "dispatch_stall",
                                            "imc_miss",
                                            "no_instruction",
                                            "branch_resolving",
                                            "sleeping",
                                            "misc",
                                            "gmma",
                                            "not_selected",
                                            "selected"};
#define NSTALLS (sizeof(stall_reasons) / sizeof(stall_reasons[0]))

const char *const *kl__profile_stall_reasons(size_t *n) {
  *n = NSTALLS;
  return stall_reasons;
}

/* The busiest SM unit and what it is: ncu's sm__throughput where it was
 * collected, else the largest of its cheaper parts (issue slots, the
 * pipes); L1/shared throughput counts as SM-side too. NAN when none. */
static double busiest_sm_unit(const kl_profile *p, const char **what) {
  static const char *const parts[] = {"issue_active_pct", "pipe_fma_pct",
                                      "pipe_alu_pct",     "pipe_fp64_pct",
                                      "pipe_tensor_pct",  "pipe_lsu_pct"};
  double sm = get(p, "sm_throughput_pct");
  *what = "SM throughput";
  for (size_t i = 0; !isfinite(get(p, "sm_throughput_pct")) &&
                     i < sizeof(parts) / sizeof(parts[0]);
       i++)
    if (isfinite(get(p, parts[i])) && !(get(p, parts[i]) <= sm)) {
      sm = get(p, parts[i]);
      *what = parts[i];
    }
  double l1 = get(p, "l1tex_throughput_pct");
  if (!isfinite(l1)) l1 = get(p, "l1_wavefronts_pct"); /* the quick set */
  if (isfinite(l1) && !(l1 <= sm)) {
    sm = l1;
    *what = "L1/shared throughput";
  }
  return sm;
}

static void derive_device(kl_profile *p) {
  double t_s = p->time_us > 0 ? p->time_us * 1e-6 : NAN;
  set(p, "time_us", p->time_us > 0 ? p->time_us : NAN);
  double peak_bw = get(p, "dram_peak_bytes_per_cycle") * get(p, "dram_clock");
  double peak_fl = 2.0 * get(p, "ffma_peak_per_cycle") * get(p, "sm_clock");
  set(p, "peak_bandwidth", peak_bw / 1e9);
  set(p, "peak_flops_fp32", peak_fl / 1e9);
  if (p->has_roofline) {
    set(p, "achieved_bandwidth", p->bytes / t_s / 1e9);
    set(p, "achieved_flops", p->flops / t_s / 1e9);
    if (p->bytes > 0) set(p, "arithmetic_intensity", p->flops / p->bytes);
    set(p, "roofline_bytes", p->bytes);
    set(p, "roofline_flops", p->flops);
    double bound = max2(p->bytes > 0 ? p->bytes / peak_bw : 0,
                        p->flops > 0 ? p->flops / peak_fl : 0);
    if (bound > 0) set(p, "roofline_pct", 100.0 * bound / t_s);
  }
  set(p, "sectors_per_load_request",
      ratio(get(p, "global_load_sectors"), get(p, "global_load_requests")));
  set(p, "sectors_per_store_request",
      ratio(get(p, "global_store_sectors"), get(p, "global_store_requests")));
  set(p, "load_sector_ratio",
      sector_ratio(get(p, "global_load_efficiency_pct"),
                   get(p, "global_load_requests")));
  set(p, "store_sector_ratio",
      sector_ratio(get(p, "global_store_efficiency_pct"),
                   get(p, "global_store_requests")));
  set(p, "dram_bytes", get(p, "dram_bytes_read") + get(p, "dram_bytes_write"));
  const char *what;
  set(p, "sm_busy_pct", busiest_sm_unit(p, &what));
  /* no shared-memory traffic has no conflicts: 0, not unknown */
  double conflicts = get(p, "shared_load_bank_conflicts") +
                     get(p, "shared_store_bank_conflicts");
  double wavefronts =
      get(p, "shared_load_wavefronts") + get(p, "shared_store_wavefronts");
  set(p, "shared_bank_conflict_pct",
      wavefronts == 0 && conflicts == 0 ? 0
                                        : 100.0 * ratio(conflicts, wavefronts));
  double total = 0;
  bool all = true;
  for (size_t i = 0; i < NSTALLS; i++) {
    char name[64];
    snprintf(name, sizeof(name), "stall_%s", stall_reasons[i]);
    double v = get(p, name);
    all &= isfinite(v);
    if (isfinite(v)) total += v;
  }
  if (all) {
    set(p, "stall_total", total);
    for (size_t i = 0; i < NSTALLS && total > 0; i++) {
      char name[64], share[80];
      snprintf(name, sizeof(name), "stall_%s", stall_reasons[i]);
      snprintf(share, sizeof(share), "stall_%s_pct", stall_reasons[i]);
      set(p, share, 100.0 * get(p, name) / total);
    }
  }
  if (p->kernels) set(p, "kernels", (double)p->kernels);
  derive_operator(p);
}

static void derive_host(kl_profile *p) {
  set(p, "time_us", p->time_us > 0 ? p->time_us : NAN);
  double cyc = get(p, "host_cycles"), ins = get(p, "host_instructions");
  set(p, "host_ipc", ratio(ins, cyc));
  set(p, "host_cache_miss_pct",
      100.0 *
          ratio(get(p, "host_cache_misses"), get(p, "host_cache_references")));
  set(p, "host_mpki", ratio(get(p, "host_cache_misses"), ins / 1000.0));
  set(p, "host_branch_miss_pct",
      100.0 * ratio(get(p, "host_branch_misses"), get(p, "host_branches")));
  if (p->has_roofline) {
    set(p, "roofline_bytes", p->bytes);
    set(p, "roofline_flops", p->flops);
  }
  if (p->has_roofline && p->time_us > 0) {
    set(p, "achieved_bandwidth", p->bytes / (p->time_us * 1e-6) / 1e9);
    set(p, "achieved_flops", p->flops / (p->time_us * 1e-6) / 1e9);
    if (p->bytes > 0) set(p, "arithmetic_intensity", p->flops / p->bytes);
  }
}

/* ---- the verdict
 * -------------------------------------------------------------- */

/* ncu calls a unit the limiter above 60% of its peak; so does kernlab. */
#define BUSY_PCT 60.0
/* Shorter than about two host launches (3.9-4.2 us each on the H200), a
 * kernel's own speed matters less than the launches around it. */
#define LAUNCH_US_DEVICE 8.0
#define LAUNCH_US_HOST 2.0

static int verdict(kl_profile *p, kl_bottleneck b, const char *fmt, ...)
    KL_PRINTF(3, 4);
static int verdict(kl_profile *p, kl_bottleneck b, const char *fmt, ...) {
  kl_buf t = KL_BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  kl__buf_printf(&t, "%s: ", kl_bottleneck_name(b));
  kl__buf_vprintf(&t, fmt, ap);
  va_end(ap);
  char *text = kl__buf_detach(&t); /* NULL when a write failed */
  if (!text) return KL_ENOMEM;
  p->bottleneck = b;
  p->verdict = text;
  return 0;
}

/* The largest stall share, for the latency verdict. */
static const char *top_stall(const kl_profile *p, double *share) {
  const char *best = NULL;
  *share = -1;
  for (size_t i = 0; i < NSTALLS; i++) {
    if (strcmp(stall_reasons[i], "selected") == 0) continue;
    char name[80];
    snprintf(name, sizeof(name), "stall_%s_pct", stall_reasons[i]);
    double v = get(p, name);
    if (isfinite(v) && v > *share) {
      *share = v;
      best = stall_reasons[i];
    }
  }
  return best;
}

static int classify_device(kl_profile *p) {
  double t = p->time_us > 0 ? p->time_us : get(p, "duration_ns") / 1000.0;
  double dram = get(p, "dram_throughput_pct");
  double l2 = get(p, "l2_throughput_pct");
  if (!isfinite(l2)) l2 = get(p, "l2_xbar_pct"); /* the quick set */
  double offchip = max2(dram, l2);
  const char *sm_what;
  double sm = busiest_sm_unit(p, &sm_what);
  if (!isfinite(offchip) && !isfinite(sm))
    return verdict(p, KL_BOTTLENECK_UNKNOWN,
                   "no throughput counters in this set");
  if (isfinite(t) && t < LAUNCH_US_DEVICE)
    return verdict(p, KL_BOTTLENECK_LAUNCH,
                   "the kernel runs %.2f us, under %.0f us (about two host "
                   "launches); DRAM %.1f%%, %s %.1f%% of peak",
                   t, LAUNCH_US_DEVICE, dram, sm_what, sm);
  if (offchip >= BUSY_PCT && !(sm > offchip))
    return verdict(p, KL_BOTTLENECK_MEMORY,
                   "%s throughput %.1f%% of peak (>= %.0f%%) and above %s "
                   "%.1f%%; %.0f GB/s moved, L2 hit rate %.1f%%",
                   dram >= l2 || !isfinite(l2) ? "DRAM" : "L2", offchip,
                   BUSY_PCT, sm_what, sm, get(p, "dram_bandwidth") / 1e9,
                   get(p, "l2_hit_rate_pct"));
  if (sm >= BUSY_PCT && strcmp(sm_what, "L1/shared throughput") == 0)
    return verdict(p, KL_BOTTLENECK_COMPUTE,
                   "the SM's load/store path is the limit: L1/shared "
                   "throughput %.1f%% of peak (>= %.0f%%) while DRAM and L2 "
                   "are at %.1f%%; %.1f sectors per load request, LSU pipe "
                   "%.1f%%, IPC %.2f (uncoalesced or repeated L1 traffic: "
                   "coalesce, or stage through shared memory or registers)",
                   sm, BUSY_PCT, offchip, get(p, "sectors_per_load_request"),
                   get(p, "pipe_lsu_pct"), get(p, "ipc"));
  if (sm >= BUSY_PCT)
    return verdict(p, KL_BOTTLENECK_COMPUTE,
                   "%s %.1f%% of peak (>= %.0f%%) and above DRAM %.1f%%; "
                   "FMA pipe %.1f%%, ALU %.1f%%, LSU %.1f%%, IPC %.2f",
                   sm_what, sm, BUSY_PCT, offchip, get(p, "pipe_fma_pct"),
                   get(p, "pipe_alu_pct"), get(p, "pipe_lsu_pct"),
                   get(p, "ipc"));
  double share;
  const char *stall = top_stall(p, &share);
  /* theoretical occupancy and waves need the launch's attributes, which a
   * python case's kernels do not give: a clause only for what is known */
  char theo[48] = "", waves[32] = "", top[96] = "";
  double t_occ = get(p, "theoretical_occupancy_pct"),
         w = get(p, "waves_per_sm");
  if (isfinite(t_occ))
    snprintf(theo, sizeof(theo), " of %.1f%% theoretical", t_occ);
  if (isfinite(w)) snprintf(waves, sizeof(waves), ", %.2f waves", w);
  if (stall)
    snprintf(top, sizeof(top), "; top stall %s (%.1f%% of stalls)", stall,
             share);
  return verdict(p, KL_BOTTLENECK_LATENCY,
                 "nothing near peak (DRAM %.1f%%, %s %.1f%%, under %.0f%%); "
                 "achieved occupancy %.1f%%%s%s%s",
                 offchip, sm_what, sm, BUSY_PCT,
                 get(p, "achieved_occupancy_pct"), theo, waves, top);
}

static int classify_host(kl_profile *p) {
  double ipc = get(p, "host_ipc"), mpki = get(p, "host_mpki");
  double miss = get(p, "host_cache_miss_pct");
  if (!isfinite(ipc))
    return verdict(p, KL_BOTTLENECK_UNKNOWN, "no host counters here");
  if (p->time_us > 0 && p->time_us < LAUNCH_US_HOST)
    return verdict(p, KL_BOTTLENECK_LAUNCH,
                   "the call runs %.2f us, under %.0f us; IPC %.2f", p->time_us,
                   LAUNCH_US_HOST, ipc);
  if ((isfinite(mpki) && mpki >= 5.0) ||
      (isfinite(miss) && miss >= 30.0 && ipc < 1.0))
    return verdict(p, KL_BOTTLENECK_MEMORY,
                   "%.1f last-level misses per 1000 instructions (>= 5) or "
                   "%.1f%% of references missing with IPC %.2f",
                   mpki, miss, ipc);
  if (ipc >= 1.5)
    return verdict(p, KL_BOTTLENECK_COMPUTE,
                   "IPC %.2f (>= 1.5) with %.1f misses per 1000 "
                   "instructions",
                   ipc, mpki);
  return verdict(p, KL_BOTTLENECK_LATENCY,
                 "IPC %.2f (< 1.5) with few cache misses (%.1f per 1000 "
                 "instructions): dependencies or branches (%.1f%% "
                 "mispredicted)",
                 ipc, mpki, get(p, "host_branch_miss_pct"));
}

/* Without the kernel's attributes kernlab cannot compute occupancy; a
 * value recorded under Nsight Compute's name stands in for it, said so. */
static int occupancy_stand_ins(kl_profile *p) {
  static const char *const names[] = {
      "theoretical_occupancy_pct", "occupancy_limit_registers",
      "occupancy_limit_warps", "occupancy_limit_blocks", "waves_per_sm"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    const kl_metric_info *m = kl_metric_find(names[i]);
    if (!m || !m->ncu_name || !raw_get(p, m->ncu_name) ||
        kl_profile_stand_in(p, names[i]))
      continue;
    char source[200];
    snprintf(source, sizeof(source),
             "Nsight Compute's %s (no kernel attributes to compute it from)",
             m->ncu_name);
    int rc = kl__profile_add_stand_in(p, names[i], source);
    if (rc < 0) return rc;
  }
  return 0;
}

/* Catalog values from the raw ones, then derived values and the verdict. */
static int compute(kl_profile *p) {
  size_t ncat;
  const kl_metric_info *cat = kl_metric_catalog(&ncat);
  if (!(p->values = kl__malloc(ncat * sizeof(double)))) return kl__error_oom();
  for (size_t i = 0; i < ncat; i++) {
    p->values[i] = NAN;
    /* derived entries with an ncu name start from a value recorded under
     * it (a flat ncu export); computing them here overrides it */
    const char *key = strcmp(cat[i].source, "perf") == 0
                          ? cat[i].name + 5 /* "host_cycles" -> "cycles" */
                          : cat[i].ncu_name;
    const double *v = raw_get(p, key);
    if (v) p->values[i] = *v;
  }
  bool device = p->backend && strcmp(p->backend, "cuda") == 0;
  int rc = 0;
  if (device && p->has_kernel) rc = occupancy(p);
  if (rc < 0) return rc;
  if (device)
    derive_device(p);
  else
    derive_host(p);
  if (device && !p->has_kernel && (rc = occupancy_stand_ins(p)) < 0) return rc;
  if (p->nraw == 0)
    return verdict(p, KL_BOTTLENECK_UNKNOWN, "%s",
                   p->note ? p->note : "no counters were collected");
  return device ? classify_device(p) : classify_host(p);
}

int kl__profile_set_roofline(kl_profile *p, double bytes, double flops) {
  p->has_roofline = true;
  p->bytes = bytes;
  p->flops = flops;
  kl__free(p->values);
  kl__free(p->verdict);
  kl__free(p->limiter);
  p->values = NULL;
  p->verdict = p->limiter = NULL;
  int rc = compute(p);
  if (rc == 0) derive_operator(p);
  return rc;
}

/* ---- building
 * ------------------------------------------------------------------- */

static int add_raw(kl_profile *p, const char *name, double v, size_t *cap) {
  if (KL__GROW(p->raw, *cap, p->nraw + 1) < 0) return KL_ENOMEM;
  if (!(p->raw[p->nraw].name = kl__strdup(name))) return kl__error_oom();
  p->raw[p->nraw++].value = v;
  return 0;
}

/* A recorded number as an integer field of `size` bytes: NaN is 0, the
 * rest clamped into range (a file may say anything). */
static int64_t to_int(double v, size_t size) {
  double hi = size == 4 ? 2147483647.0 : 9e18;
  if (isnan(v)) return 0;
  return (int64_t)(v < -hi ? -hi : v > hi ? hi : v);
}

static void read_kernel(kl_profile *p, json_object *k) {
  json_object *g, *b;
  kl_plugin_kernel_info *ki = &p->kernel;
  if (!k || !json_object_object_get_ex(k, "grid", &g) ||
      !json_object_object_get_ex(k, "block", &b) ||
      !json_object_is_type(g, json_type_array) ||
      !json_object_is_type(b, json_type_array) ||
      json_object_array_length(g) != 3 || json_object_array_length(b) != 3)
    return;
  for (size_t d = 0; d < 3; d++) {
    ki->grid[d] =
        to_int(json_object_get_double(json_object_array_get_idx(g, d)),
               sizeof(ki->grid[d]));
    ki->block[d] =
        to_int(json_object_get_double(json_object_array_get_idx(b, d)),
               sizeof(ki->block[d]));
  }
#define F(name)                                                                \
  ki->name =                                                                   \
      (__typeof__(ki->name))to_int(kl__json_num(k, #name), sizeof(ki->name));
  KL_KERNEL_INFO_FIELDS(F)
#undef F
  p->has_kernel = true;
}

static kl_profile *new_profile(const kl_profile_inputs *in) {
  kl_profile *p = kl__calloc(1, sizeof(*p));
  if (!p) return NULL;
  p->set = kl__strdup(in->set ? in->set : "standard");
  p->time_us = in->time_us;
  p->has_roofline = in->has_roofline;
  p->bytes = in->bytes;
  p->flops = in->flops;
  p->wall_ms = in->wall_ms;
  if (!p->set) {
    kl_profile_free(p);
    return NULL;
  }
  return p;
}

int kl__profile_unavailable(kl_profile **out, const kl_profile_inputs *in,
                            const char *backend, const char *why) {
  *out = NULL;
  kl_profile *p = new_profile(in);
  if (!p || !(p->backend = kl__strdup(backend)) ||
      !(p->note = kl__strdup(why))) {
    kl_profile_free(p);
    return kl__error_oom();
  }
  int rc = compute(p);
  if (rc < 0) {
    kl_profile_free(p);
    return rc;
  }
  *out = p;
  return 0;
}

/* The metrics of the main kernel: the range that ran longest. Replies and
 * recorded files alike may be malformed: every type is checked. */
static int add_range_metrics(kl_profile *p, json_object *reply,
                             const kl_profile_inputs *in, size_t *cap) {
  json_object *names, *ranges;
  if (!json_object_object_get_ex(reply, "metrics", &names) ||
      !json_object_object_get_ex(reply, "ranges", &ranges) ||
      !json_object_is_type(names, json_type_array) ||
      !json_object_is_type(ranges, json_type_array))
    return 0;
  size_t nr = json_object_array_length(ranges), best = 0;
  size_t nm = json_object_array_length(names), dur = nm;
  for (size_t i = 0; i < nm; i++) {
    const char *n = json_object_get_string(json_object_array_get_idx(names, i));
    if (n && strcmp(n, "gpu__time_duration.sum") == 0) dur = i;
  }
  double longest = -1;
  for (size_t r = 0; r < nr && dur < nm; r++) {
    json_object *row = json_object_array_get_idx(ranges, r);
    if (!json_object_is_type(row, json_type_array) ||
        json_object_array_length(row) <= dur)
      continue;
    double d = json_object_get_double(json_object_array_get_idx(row, dur));
    if (d > longest) {
      longest = d;
      best = r;
    }
  }
  p->kernels = in->kernels ? in->kernels : nr;
  json_object *vals = nr ? json_object_array_get_idx(ranges, best) : NULL;
  if (!json_object_is_type(vals, json_type_array)) return 0;
  for (size_t i = 0; i < nm; i++) {
    const char *n = json_object_get_string(json_object_array_get_idx(names, i));
    int rc;
    if (n && i < json_object_array_length(vals) &&
        (rc = add_raw(
             p, n, json_object_get_double(json_object_array_get_idx(vals, i)),
             cap)) < 0)
      return rc;
  }
  return 0;
}

/* A launch that ran several kernels: each range (kernel) as a profile of
 * its own, named, timed by its own duration, without the operator's
 * roofline; the main profile stays the longest kernel's. */
static int add_parts(kl_profile *p, json_object *reply,
                     const kl_profile_inputs *in) {
  json_object *names, *ranges, *rnames = NULL;
  if (!json_object_object_get_ex(reply, "metrics", &names) ||
      !json_object_object_get_ex(reply, "ranges", &ranges) ||
      !json_object_is_type(ranges, json_type_array) ||
      json_object_array_length(ranges) < 2)
    return 0;
  json_object_object_get_ex(reply, "range_names", &rnames);
  size_t nm = json_object_array_length(names), dur = nm;
  for (size_t i = 0; i < nm; i++) {
    const char *n = json_object_get_string(json_object_array_get_idx(names, i));
    if (n && strcmp(n, "gpu__time_duration.sum") == 0) dur = i;
  }
  for (size_t r = 0; r < json_object_array_length(ranges); r++) {
    json_object *row = json_object_array_get_idx(ranges, r);
    if (!json_object_is_type(row, json_type_array)) continue;
    json_object *sub = json_object_new_object(), *one = json_object_new_array();
    if (!sub || !one) {
      json_object_put(sub);
      json_object_put(one);
      return kl__error_oom();
    }
    const char *keys[] = {"backend", "chip", "replay", "passes"};
    for (size_t k = 0; k < KL_ARRAY_SIZE(keys); k++) {
      json_object *v;
      if (json_object_object_get_ex(reply, keys[k], &v))
        json_object_object_add(sub, keys[k], json_object_get(v));
    }
    json_object_object_add(sub, "metrics", json_object_get(names));
    json_object_array_add(one, json_object_get(row));
    json_object_object_add(sub, "ranges", one);
    kl_profile_inputs pin = {0};
    pin.set = in->set;
    pin.kernels = 1;
    if (dur < nm && dur < json_object_array_length(row))
      pin.time_us =
          json_object_get_double(json_object_array_get_idx(row, dur)) / 1e3;
    kl_profile *part = NULL;
    int rc = kl__profile_from_reply(&part, sub, &pin);
    json_object_put(sub);
    if (rc < 0) return rc;
    json_object *nm_obj = rnames && json_object_is_type(rnames, json_type_array)
                              ? json_object_array_get_idx(rnames, r)
                              : NULL;
    const char *name = json_object_is_type(nm_obj, json_type_string)
                           ? json_object_get_string(nm_obj)
                           : NULL;
    char fallback[32];
    snprintf(fallback, sizeof fallback, "kernel %zu", r + 1);
    if ((rc = kl__profile_add_part(p, part, name ? name : fallback)) < 0)
      return rc;
  }
  return 0;
}

int kl__profile_from_reply(kl_profile **out, json_object *reply,
                           const kl_profile_inputs *in) {
  *out = NULL;
  kl_profile *p = new_profile(in);
  if (!p) return kl__error_oom();
  size_t cap = 0;
  int rc;
  if ((rc = kl__json_dup(&p->backend, reply, "backend")) < 0 ||
      (rc = kl__json_dup(&p->chip, reply, "chip")) < 0 ||
      (rc = kl__json_dup(&p->replay, reply, "replay")) < 0 ||
      (rc = kl__json_dup(&p->note, reply, "note")) < 0)
    goto fail;
  json_object *tr, *events, *k;
  if (!p->note && json_object_object_get_ex(reply, "tracing_on", &tr) &&
      json_object_get_boolean(tr) &&
      !(p->note = kl__strdup("kernel tracing was on in this worker: "
                             "instruction counts include CUPTI's "
                             "instrumentation (profile before timing, as "
                             "kl_bench_run does)"))) {
    rc = kl__error_oom();
    goto fail;
  }
  int64_t passes = to_int(kl__json_num(reply, "passes"), 4);
  p->passes = passes > 0 ? (size_t)passes : 0;
  p->init_ms = kl__json_num(reply, "init_ms");
  p->config_ms = kl__json_num(reply, "config_ms");
  p->collect_ms = kl__json_num(reply, "collect_ms");
  /* newer than the rest: null (NAN) in what older workers recorded */
  if (!kl__json_number(reply, "setup_ms", &p->setup_ms)) p->setup_ms = NAN;
  if (!kl__json_number(reply, "first_pass_ms", &p->first_pass_ms))
    p->first_pass_ms = NAN;
  p->decode_ms = kl__json_num(reply, "decode_ms");
  if (!p->backend) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE, "profile: no backend");
    goto fail;
  }
  if ((rc = add_range_metrics(p, reply, in, &cap)) < 0) goto fail;
  if (json_object_object_get_ex(reply, "events", &events) &&
      json_object_is_type(events, json_type_object)) {
    json_object_object_foreach(events, key, val) {
      if ((rc = add_raw(p, key, json_object_get_double(val), &cap)) < 0)
        goto fail;
    }
  }
  if (json_object_object_get_ex(reply, "kernel", &k)) read_kernel(p, k);
  if ((rc = compute(p)) < 0) goto fail;
  if ((rc = add_parts(p, reply, in)) < 0) goto fail;
  *out = p;
  return 0;
fail:
  kl_profile_free(p);
  return rc;
}

/* ---- reading
 * -------------------------------------------------------------------- */

kl_bottleneck kl_profile_bottleneck(const kl_profile *p) {
  return p->bottleneck;
}
const char *kl_profile_verdict(const kl_profile *p) {
  return p->verdict;
}
const char *kl_profile_note(const kl_profile *p) {
  return p->note;
}
size_t kl_profile_passes(const kl_profile *p) {
  return p->passes;
}

int kl_profile_value(double *v, const kl_profile *p, const char *name) {
  double x = get(p, name);
  if (!isfinite(x)) {
    const double *r = raw_get(p, name);
    if (!r) return KL_ENOTFOUND;
    x = *r;
  }
  *v = x;
  return 0;
}

int kl_profile_foreach(const kl_profile *p, kl_profile_visit_fn cb, void *ud) {
  size_t ncat;
  const kl_metric_info *cat = kl_metric_catalog(&ncat);
  for (size_t i = 0; i < ncat; i++)
    if (isfinite(p->values[i])) {
      int rc = cb(&cat[i], p->values[i], ud);
      if (rc) return rc;
    }
  for (size_t i = 0; i < p->nraw; i++) {
    if (kl_metric_find(p->raw[i].name)) continue;
    if (strcmp(p->backend, "host") == 0) /* perf names are in the catalog */
      continue;
    kl_metric_info tmp = {p->raw[i].name,      p->raw[i].name, "raw", "",
                          "Raw CUPTI metric.", "cupti",        0};
    int rc = cb(&tmp, p->raw[i].value, ud);
    if (rc) return rc;
  }
  return 0;
}

static int json_num(kl_buf *b, double v) {
  return isfinite(v) ? kl__buf_printf(b, "%.10g", v) : kl__buf_puts(b, "null");
}

static int json_opt_str(kl_buf *b, const char *key, const char *v) {
  if (!v) return 0;
  kl__buf_printf(b, ",\"%s\":", key);
  return kl__buf_json_string(b, v);
}

int kl_profile_json(kl_buf *out, const kl_profile *p, unsigned flags) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "{\"set\":");
  kl__buf_json_string(&b, p->set);
  json_opt_str(&b, "backend", p->backend);
  json_opt_str(&b, "chip", p->chip);
  json_opt_str(&b, "replay", p->replay);
  kl__buf_printf(&b, ",\"passes\":%zu,\"kernels\":%zu", p->passes, p->kernels);
  kl__buf_puts(&b, ",\"time_us\":");
  json_num(&b, p->time_us > 0 ? p->time_us : NAN);
  const struct {
    const char *key;
    double ms;
  } times[] = {
      {"wall_ms", p->wall_ms},       {"init_ms", p->init_ms},
      {"config_ms", p->config_ms},   {"setup_ms", p->setup_ms},
      {"collect_ms", p->collect_ms}, {"first_pass_ms", p->first_pass_ms},
      {"decode_ms", p->decode_ms}};
  for (size_t i = 0; i < KL_ARRAY_SIZE(times); i++) {
    kl__buf_printf(&b, ",\"%s\":", times[i].key);
    json_num(&b, isfinite(times[i].ms) ? round(times[i].ms * 1e4) / 1e4
                                       : times[i].ms);
  }
  if (p->has_roofline)
    kl__buf_printf(&b, ",\"roofline\":{\"bytes\":%.17g,\"flops\":%.17g}",
                   p->bytes, p->flops);
  kl__buf_printf(&b, ",\"bottleneck\":\"%s\"",
                 kl_bottleneck_name(p->bottleneck));
  json_opt_str(&b, "verdict", p->verdict);
  json_opt_str(&b, "occupancy_limiter", p->limiter);
  json_opt_str(&b, "note", p->note);
  if (p->has_kernel) {
    const kl_plugin_kernel_info *k = &p->kernel;
    kl__buf_printf(
        &b, ",\"kernel\":{\"grid\":[%lld,%lld,%lld],\"block\":[%lld,%lld,%lld]",
        (long long)k->grid[0], (long long)k->grid[1], (long long)k->grid[2],
        (long long)k->block[0], (long long)k->block[1], (long long)k->block[2]);
#define F(name) kl__buf_printf(&b, ",\"" #name "\":%lld", (long long)k->name);
    KL_KERNEL_INFO_FIELDS(F)
#undef F
    kl__buf_putc(&b, '}');
  }
  /* metrics, keyed by kernlab's names or by Nsight Compute's */
  size_t ncat;
  const kl_metric_info *cat = kl_metric_catalog(&ncat);
  bool ncu = flags & KL_PROFILE_NCU_NAMES;
  for (int pass = 0; pass < (ncu ? 2 : 1); pass++) {
    kl__buf_puts(&b, pass ? ",\"kernlab_only\":{" : ",\"metrics\":{");
    bool first = true;
    for (size_t i = 0; i < ncat; i++) {
      if (!isfinite(p->values[i])) continue;
      const char *key = cat[i].name;
      if (ncu && pass == 0 && !cat[i].ncu_name) continue;
      if (ncu && pass == 1 && cat[i].ncu_name) continue;
      if (ncu && pass == 0) key = cat[i].ncu_name;
      kl__buf_puts(&b, first ? "" : ",");
      kl__buf_json_string(&b, key);
      kl__buf_putc(&b, ':');
      json_num(&b, p->values[i]);
      first = false;
    }
    kl__buf_putc(&b, '}');
  }
  kl__buf_puts(&b, ",\"raw\":{");
  for (size_t i = 0; i < p->nraw; i++) {
    kl__buf_puts(&b, i ? "," : "");
    kl__buf_json_string(&b, p->raw[i].name);
    kl__buf_putc(&b, ':');
    json_num(&b, p->raw[i].value);
  }
  kl__buf_putc(&b, '}');
  json_opt_str(&b, "name", p->name);
  if (p->nparts) { /* every kernel of the launch, in launch order */
    kl__buf_puts(&b, ",\"parts\":[");
    for (size_t i = 0; i < p->nparts; i++) {
      kl_buf part = KL_BUF_INIT;
      int rc = kl_profile_json(&part, p->parts[i], flags);
      if (rc == 0) {
        kl__buf_puts(&b, i ? "," : "");
        kl__buf_put(&b, part.ptr, part.size);
      }
      kl_buf_dispose(&part);
      if (rc < 0) {
        kl_buf_dispose(&b);
        return rc;
      }
    }
    kl__buf_putc(&b, ']');
  }
  kl__buf_putc(&b, '}');
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}
