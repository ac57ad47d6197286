/* A profile's values and verdict, computed from its inputs (profile.c keeps
 * them): the catalog's values from the raw counters (occupancy, the
 * busiest unit, the host's), the operator's from the timed duration and
 * the roofline, and the verdict, a short decision list over a handful of
 * values (classify_device, classify_host) with the numbers that decided
 * it, and the values taken from a stand-in (an ncu export's nearest
 * metric) with their source. The same code whether the inputs came from
 * the worker a moment ago or from a profile recorded on another machine. */
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../core/internal.h"
#include "kernel_info_fields.h"
#include "profile_internal.h"

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

int kl__profile_add_stand_in(kl_profile *p, const char *name,
                             const char *source) {
  if (KL__GROW(p->stand_ins, p->cap_stand_ins, p->nstand_ins + 1) < 0)
    return KL_ENOMEM;
  kl__profile_stand_in_of *s = &p->stand_ins[p->nstand_ins];
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

/* ---- values -----------------------------------------------------------------
 */

const double *kl__profile_raw_get(const kl_profile *p, const char *name) {
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

double kl__profile_get(const kl_profile *p, const char *name) {
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
void kl__profile_derive_operator(kl_profile *p) {
  if (!p->values)
    return; /* parts before the values: at kl__profile_compute() */
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
  double sm = kl__profile_get(p, "sm_throughput_pct");
  *what = "SM throughput";
  for (size_t i = 0; !isfinite(kl__profile_get(p, "sm_throughput_pct")) &&
                     i < sizeof(parts) / sizeof(parts[0]);
       i++)
    if (isfinite(kl__profile_get(p, parts[i])) &&
        !(kl__profile_get(p, parts[i]) <= sm)) {
      sm = kl__profile_get(p, parts[i]);
      *what = parts[i];
    }
  double l1 = kl__profile_get(p, "l1tex_throughput_pct");
  if (!isfinite(l1))
    l1 = kl__profile_get(p, "l1_wavefronts_pct"); /* the quick set */
  if (isfinite(l1) && !(l1 <= sm)) {
    sm = l1;
    *what = "L1/shared throughput";
  }
  return sm;
}

static void derive_device(kl_profile *p) {
  double t_s = p->time_us > 0 ? p->time_us * 1e-6 : NAN;
  set(p, "time_us", p->time_us > 0 ? p->time_us : NAN);
  double peak_bw = kl__profile_get(p, "dram_peak_bytes_per_cycle") *
                   kl__profile_get(p, "dram_clock");
  double peak_fl = 2.0 * kl__profile_get(p, "ffma_peak_per_cycle") *
                   kl__profile_get(p, "sm_clock");
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
      ratio(kl__profile_get(p, "global_load_sectors"),
            kl__profile_get(p, "global_load_requests")));
  set(p, "sectors_per_store_request",
      ratio(kl__profile_get(p, "global_store_sectors"),
            kl__profile_get(p, "global_store_requests")));
  set(p, "load_sector_ratio",
      sector_ratio(kl__profile_get(p, "global_load_efficiency_pct"),
                   kl__profile_get(p, "global_load_requests")));
  set(p, "store_sector_ratio",
      sector_ratio(kl__profile_get(p, "global_store_efficiency_pct"),
                   kl__profile_get(p, "global_store_requests")));
  set(p, "dram_bytes",
      kl__profile_get(p, "dram_bytes_read") +
          kl__profile_get(p, "dram_bytes_write"));
  const char *what;
  set(p, "sm_busy_pct", busiest_sm_unit(p, &what));
  /* no shared-memory traffic has no conflicts: 0, not unknown */
  double conflicts = kl__profile_get(p, "shared_load_bank_conflicts") +
                     kl__profile_get(p, "shared_store_bank_conflicts");
  double wavefronts = kl__profile_get(p, "shared_load_wavefronts") +
                      kl__profile_get(p, "shared_store_wavefronts");
  set(p, "shared_bank_conflict_pct",
      wavefronts == 0 && conflicts == 0 ? 0
                                        : 100.0 * ratio(conflicts, wavefronts));
  double total = 0;
  bool all = true;
  for (size_t i = 0; i < NSTALLS; i++) {
    char name[64];
    snprintf(name, sizeof(name), "stall_%s", stall_reasons[i]);
    double v = kl__profile_get(p, name);
    all &= isfinite(v);
    if (isfinite(v)) total += v;
  }
  if (all) {
    set(p, "stall_total", total);
    for (size_t i = 0; i < NSTALLS && total > 0; i++) {
      char name[64], share[80];
      snprintf(name, sizeof(name), "stall_%s", stall_reasons[i]);
      snprintf(share, sizeof(share), "stall_%s_pct", stall_reasons[i]);
      set(p, share, 100.0 * kl__profile_get(p, name) / total);
    }
  }
  if (p->kernels) set(p, "kernels", (double)p->kernels);
  kl__profile_derive_operator(p);
}

static void derive_host(kl_profile *p) {
  set(p, "time_us", p->time_us > 0 ? p->time_us : NAN);
  double cyc = kl__profile_get(p, "host_cycles"),
         ins = kl__profile_get(p, "host_instructions");
  set(p, "host_ipc", ratio(ins, cyc));
  set(p, "host_cache_miss_pct",
      100.0 * ratio(kl__profile_get(p, "host_cache_misses"),
                    kl__profile_get(p, "host_cache_references")));
  set(p, "host_mpki",
      ratio(kl__profile_get(p, "host_cache_misses"), ins / 1000.0));
  set(p, "host_branch_miss_pct",
      100.0 * ratio(kl__profile_get(p, "host_branch_misses"),
                    kl__profile_get(p, "host_branches")));
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
    double v = kl__profile_get(p, name);
    if (isfinite(v) && v > *share) {
      *share = v;
      best = stall_reasons[i];
    }
  }
  return best;
}

static int classify_device(kl_profile *p) {
  double t =
      p->time_us > 0 ? p->time_us : kl__profile_get(p, "duration_ns") / 1000.0;
  double dram = kl__profile_get(p, "dram_throughput_pct");
  double l2 = kl__profile_get(p, "l2_throughput_pct");
  if (!isfinite(l2)) l2 = kl__profile_get(p, "l2_xbar_pct"); /* the quick set */
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
                   BUSY_PCT, sm_what, sm,
                   kl__profile_get(p, "dram_bandwidth") / 1e9,
                   kl__profile_get(p, "l2_hit_rate_pct"));
  if (sm >= BUSY_PCT && strcmp(sm_what, "L1/shared throughput") == 0)
    return verdict(
        p, KL_BOTTLENECK_COMPUTE,
        "the SM's load/store path is the limit: L1/shared "
        "throughput %.1f%% of peak (>= %.0f%%) while DRAM and L2 "
        "are at %.1f%%; %.1f sectors per load request, LSU pipe "
        "%.1f%%, IPC %.2f (uncoalesced or repeated L1 traffic: "
        "coalesce, or stage through shared memory or registers)",
        sm, BUSY_PCT, offchip, kl__profile_get(p, "sectors_per_load_request"),
        kl__profile_get(p, "pipe_lsu_pct"), kl__profile_get(p, "ipc"));
  if (sm >= BUSY_PCT)
    return verdict(
        p, KL_BOTTLENECK_COMPUTE,
        "%s %.1f%% of peak (>= %.0f%%) and above DRAM %.1f%%; "
        "FMA pipe %.1f%%, ALU %.1f%%, LSU %.1f%%, IPC %.2f",
        sm_what, sm, BUSY_PCT, offchip, kl__profile_get(p, "pipe_fma_pct"),
        kl__profile_get(p, "pipe_alu_pct"), kl__profile_get(p, "pipe_lsu_pct"),
        kl__profile_get(p, "ipc"));
  double share;
  const char *stall = top_stall(p, &share);
  /* theoretical occupancy and waves need the launch's attributes, which a
   * python case's kernels do not give: a clause only for what is known */
  char theo[48] = "", waves[32] = "", top[96] = "";
  double t_occ = kl__profile_get(p, "theoretical_occupancy_pct"),
         w = kl__profile_get(p, "waves_per_sm");
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
                 kl__profile_get(p, "achieved_occupancy_pct"), theo, waves,
                 top);
}

static int classify_host(kl_profile *p) {
  double ipc = kl__profile_get(p, "host_ipc"),
         mpki = kl__profile_get(p, "host_mpki");
  double miss = kl__profile_get(p, "host_cache_miss_pct");
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
                 ipc, mpki, kl__profile_get(p, "host_branch_miss_pct"));
}

/* Without the kernel's attributes kernlab cannot compute occupancy; a
 * value recorded under Nsight Compute's name stands in for it, said so. */
static int occupancy_stand_ins(kl_profile *p) {
  static const char *const names[] = {
      "theoretical_occupancy_pct", "occupancy_limit_registers",
      "occupancy_limit_warps", "occupancy_limit_blocks", "waves_per_sm"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    const kl_metric_info *m = kl_metric_find(names[i]);
    if (!m || !m->ncu_name || !kl__profile_raw_get(p, m->ncu_name) ||
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
int kl__profile_compute(kl_profile *p) {
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
    const double *v = kl__profile_raw_get(p, key);
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
  int rc = kl__profile_compute(p);
  if (rc == 0) kl__profile_derive_operator(p);
  return rc;
}
