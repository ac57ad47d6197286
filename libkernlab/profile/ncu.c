/* Nsight Compute's exports as recorded profiles.
 *
 * `ncu --csv --page raw` writes a header of columns (ID, Kernel Name,
 * Block Size, Grid Size, ..., then one per metric), a row of units, and a
 * row per profiled kernel. `--page details` writes a row per value or rule
 * result: Section Name, Metric Name, Metric Unit, Metric Value, Rule Name,
 * Rule Type, Rule Description, Estimated Speedup Type, Estimated Speedup
 * (with --print-details all also a Body Item Label, and tables whose rows
 * are raw metric names). ncu run live prints its own ==PROF== lines and the
 * program's output ahead of the header; lines before it are skipped.
 *
 * Each kernel (an ID) becomes one profile: values are brought to ncu's base
 * units (ns, byte, hz, per second) from whatever units the export has
 * ("Kbyte", "usecond", "Gbyte/s"; thousands separators dropped); a details
 * page's named values ("L2 Cache Throughput") are taken under the raw
 * metric they show, from a table checked against raw exports of the same
 * kernels; the launch section fills the kernel's geometry and limits; a
 * stall reason's warp count, which the full set reports only per issued
 * instruction, is that ratio times the issued instructions (its share of
 * all stalls, which the rules read, is exact). Rule results are kept as the
 * profile's Nsight Compute advice. */
#include <ctype.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* strncasecmp */

#include "../core/csv.h"
#include "../core/internal.h"
#include "../core/json.h"
#include "profile_internal.h"

/* A details page's values under the raw metrics they show: section (NULL:
 * any), metric name, unit ("": any), raw name. */
static const struct {
  const char *section, *name, *unit, *raw;
} details_names[] = {
    {NULL, "Duration", "", "gpu__time_duration.sum"},
    {NULL, "Elapsed Cycles", "", "gpc__cycles_elapsed.max"},
    {NULL, "DRAM Frequency", "", "dram__cycles_elapsed.avg.per_second"},
    {NULL, "SM Frequency", "", "gpc__cycles_elapsed.avg.per_second"},
    {"GPU Speed Of Light Throughput", "Memory Throughput", "%",
     "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"},
    {NULL, "DRAM Throughput", "%",
     "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"},
    {NULL, "L1/TEX Cache Throughput", "%",
     "l1tex__throughput.avg.pct_of_peak_sustained_active"},
    {NULL, "L2 Cache Throughput", "%",
     "lts__throughput.avg.pct_of_peak_sustained_elapsed"},
    {NULL, "SM Active Cycles", "", "sm__cycles_active.avg"},
    {NULL, "Compute (SM) Throughput", "%",
     "sm__throughput.avg.pct_of_peak_sustained_elapsed"},
    {NULL, "Executed Ipc Active", "", "sm__inst_executed.avg.per_cycle_active"},
    {NULL, "Executed Ipc Elapsed", "",
     "sm__inst_executed.avg.per_cycle_elapsed"},
    {NULL, "Issue Slots Busy", "",
     "sm__inst_issued.avg.pct_of_peak_sustained_elapsed"},
    {NULL, "SM Busy", "",
     "sm__instruction_throughput.avg.pct_of_peak_sustained_elapsed"},
    {"Memory Workload Analysis", "Memory Throughput", "",
     "dram__bytes.sum.per_second"},
    {NULL, "Mem Busy", "",
     "gpu__compute_memory_access_throughput.avg.pct_of_peak_sustained_"
     "elapsed"},
    {NULL, "Max Bandwidth", "",
     "gpu__compute_memory_request_throughput.avg.pct_of_peak_sustained_"
     "elapsed"},
    {NULL, "Mem Pipes Busy", "",
     "sm__memory_throughput.avg.pct_of_peak_sustained_elapsed"},
    {NULL, "L1/TEX Hit Rate", "", "l1tex__t_sector_hit_rate.pct"},
    {NULL, "L2 Hit Rate", "", "lts__t_sector_hit_rate.pct"},
    {NULL, "One or More Eligible", "",
     "smsp__issue_active.avg.pct_of_peak_sustained_active"},
    {NULL, "No Eligible", "",
     "smsp__issue_inst0.avg.pct_of_peak_sustained_active"},
    {NULL, "Active Warps Per Scheduler", "",
     "smsp__warps_active.avg.per_cycle_active"},
    {NULL, "Eligible Warps Per Scheduler", "",
     "smsp__warps_eligible.avg.per_cycle_active"},
    {"Scheduler Statistics", "Issued Warp Per Scheduler", "",
     "smsp__issue_active.avg.per_cycle_active"},
    {NULL, "Warp Cycles Per Issued Instruction", "",
     "smsp__average_warp_latency_per_inst_issued.ratio"},
    {NULL, "Warp Cycles Per Executed Instruction", "",
     "smsp__average_warps_active_per_inst_executed.ratio"},
    {NULL, "Avg. Active Threads Per Warp", "",
     "smsp__thread_inst_executed_per_inst_executed.ratio"},
    {NULL, "Avg. Not Predicated Off Threads Per Warp", "",
     "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio"},
    {"Instruction Statistics", "Executed Instructions", "",
     "smsp__inst_executed.sum"},
    {"Instruction Statistics", "Issued Instructions", "",
     "smsp__inst_issued.sum"},
    {NULL, "Avg. Executed Instructions Per Scheduler", "",
     "smsp__inst_executed.avg"},
    {NULL, "Avg. Issued Instructions Per Scheduler", "",
     "smsp__inst_issued.avg"},
    {"Launch Statistics", "Block Size", "", "launch__block_size"},
    {"Launch Statistics", "Grid Size", "", "launch__grid_size"},
    {"Launch Statistics", "Registers Per Thread", "",
     "launch__registers_per_thread"},
    {"Launch Statistics", "Dynamic Shared Memory Per Block", "",
     "launch__shared_mem_per_block_dynamic"},
    {"Launch Statistics", "Static Shared Memory Per Block", "",
     "launch__shared_mem_per_block_static"},
    {"Launch Statistics", "Threads", "", "launch__thread_count"},
    {"Launch Statistics", "Waves Per SM", "",
     "launch__waves_per_multiprocessor"},
    {"Launch Statistics", "# SMs", "", "launch__sm_count"},
    {"Occupancy", "Block Limit Registers", "",
     "launch__occupancy_limit_registers"},
    {"Occupancy", "Block Limit Shared Mem", "",
     "launch__occupancy_limit_shared_mem"},
    {"Occupancy", "Block Limit Warps", "", "launch__occupancy_limit_warps"},
    {"Occupancy", "Block Limit SM", "", "launch__occupancy_limit_blocks"},
    {"Occupancy", "Block Limit Barriers", "",
     "launch__occupancy_limit_barriers"},
    {"Occupancy", "Theoretical Occupancy", "",
     "sm__maximum_warps_per_active_cycle_pct"},
    {"Occupancy", "Theoretical Active Warps per SM", "",
     "sm__maximum_warps_avg_per_active_cycle"},
    {"Occupancy", "Achieved Occupancy", "",
     "sm__warps_active.avg.pct_of_peak_sustained_active"},
    {"Occupancy", "Achieved Active Warps Per SM", "",
     "sm__warps_active.avg.per_cycle_active"},
    {NULL, "Branch Efficiency", "",
     "smsp__sass_average_branch_targets_threads_uniform.pct"},
    {NULL, "Branch Instructions", "", "smsp__inst_executed_op_branch.sum"},
};

typedef struct ncu_kernel {
  char *id, *name, *block, *grid;
  int line; /* its first row, for errors */
  json_object *raw;
  kl_ncu_advice *advice;
  size_t nadvice, cap_advice;
} ncu_kernel;

typedef struct ncu_reader {
  const char *path;
  kl_csv_record header;
  /* columns; -1 when absent */
  int c_id, c_name, c_block, c_grid, c_section, c_label, c_metric, c_unit,
      c_value, c_rule, c_type, c_desc, c_sptype, c_speedup;
  bool details;
  ncu_kernel *kernels;
  size_t count, cap;
} ncu_reader;

/* ---- values and units */

/* "1,234.5" as 1234.5; false for anything that is no number ("n/a"). */
static bool parse_number(const char *s, double *out) {
  char buf[64];
  size_t n = 0;
  for (; *s && n + 1 < sizeof(buf); s++)
    if (*s != ',') buf[n++] = *s;
  if (*s) return false;
  buf[n] = '\0';
  char *end;
  *out = strtod(buf, &end);
  return n > 0 && *end == '\0' && isfinite(*out);
}

/* A unit word's factor to ncu's base unit: prefixes of bytes and hertz
 * (ncu's are decimal: Kbyte = 1000 bytes), times in nanoseconds. */
static double word_factor(const char *w, size_t n, bool *is_time) {
  static const struct {
    const char *word;
    double f;
  } times[] = {{"ns", 1},   {"nsecond", 1},   {"us", 1e3}, {"usecond", 1e3},
               {"ms", 1e6}, {"msecond", 1e6}, {"s", 1e9},  {"second", 1e9}};
  *is_time = false;
  for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
    if (strlen(times[i].word) == n && strncmp(times[i].word, w, n) == 0) {
      *is_time = true;
      return times[i].f;
    }
  static const char prefixes[] = "KMGTP";
  for (const char *base = "byte"; base;
       base = strcmp(base, "byte") == 0 ? "hz" : NULL) {
    size_t bl = strlen(base);
    if (n == bl + 1 && strncasecmp(w + 1, base, bl) == 0) {
      const char *p = strchr(prefixes, toupper((unsigned char)w[0]));
      if (p) return pow(1e3, (double)(p - prefixes + 1));
    }
  }
  return 1;
}

/* A value in `unit` as ncu's base unit: "Gbyte/s" to byte/s, "usecond" to
 * ns, "sector/ns" to sector/s. */
static double to_base(double v, const char *unit) {
  const char *slash = strchr(unit, '/');
  size_t n = slash ? (size_t)(slash - unit) : strlen(unit);
  bool t;
  double f = word_factor(unit, n, &t);
  if (slash) {
    const char *d = slash + 1;
    double g = word_factor(d, strlen(d), &t);
    /* per unit of time: base is per second */
    f = t ? f * (1e9 / g) : f / g;
  }
  return v * f;
}

/* ---- columns and kernels */

static const char *field(const kl_csv_record *rec, int c) {
  return c >= 0 && (size_t)c < rec->count ? rec->fields[c].text : "";
}

static int column_of(const kl_csv_record *h, const char *name) {
  for (size_t i = 0; i < h->count; i++)
    if (strcmp(h->fields[i].text, name) == 0) return (int)i;
  return -1;
}

static void kernel_dispose(ncu_kernel *k) {
  kl__free(k->id);
  kl__free(k->name);
  kl__free(k->block);
  kl__free(k->grid);
  json_object_put(k->raw);
  for (size_t i = 0; i < k->nadvice; i++)
    kl__ncu_advice_dispose(&k->advice[i]);
  kl__free(k->advice);
}

static void reader_dispose(ncu_reader *r) {
  kl__csv_record_free(&r->header);
  for (size_t i = 0; i < r->count; i++)
    kernel_dispose(&r->kernels[i]);
  kl__free(r->kernels);
}

/* A row of the kernels' table: its ID is a number and it has the columns
 * up to the kernel's name (and the value, on a details page). ncu writes
 * other tables in between (the details page's NUMA affinity, after each
 * kernel, with its own header and fewer columns); they are skipped. */
static bool kernel_row(const ncu_reader *r, const kl_csv_record *rec) {
  const char *id = field(rec, r->c_id);
  int need = r->c_name > r->c_value ? r->c_name : r->c_value;
  if (!*id || rec->count <= (size_t)need) return false;
  for (; *id; id++)
    if (!isdigit((unsigned char)*id)) return false;
  return true;
}

/* The kernel of a row, by its ID; made at its first row. */
static int kernel_of(ncu_kernel **out, ncu_reader *r,
                     const kl_csv_record *rec) {
  const char *id = field(rec, r->c_id);
  for (size_t i = 0; i < r->count; i++)
    if (strcmp(r->kernels[i].id, id) == 0) {
      *out = &r->kernels[i];
      return 0;
    }
  if (KL__GROW(r->kernels, r->cap, r->count + 1) < 0) return KL_ENOMEM;
  ncu_kernel *k = &r->kernels[r->count];
  memset(k, 0, sizeof(*k));
  k->line = rec->line;
  if (!(k->id = kl__strdup(id)) ||
      !(k->name = kl__strdup(field(rec, r->c_name))) ||
      !(k->block = kl__strdup(field(rec, r->c_block))) ||
      !(k->grid = kl__strdup(field(rec, r->c_grid))) ||
      !(k->raw = json_object_new_object())) {
    kernel_dispose(k);
    return kl__error_oom();
  }
  r->count++;
  *out = k;
  return 0;
}

static void put(ncu_kernel *k, const char *name, double v) {
  json_object_object_add(k->raw, name, json_object_new_double(v));
}

static bool raw_value(const ncu_kernel *k, const char *name, double *v) {
  json_object *o;
  if (!json_object_object_get_ex(k->raw, name, &o)) return false;
  *v = json_object_get_double(o);
  return true;
}

/* ---- the raw page */

static int read_raw_rows(ncu_reader *r, kl_csv_reader *in) {
  kl_csv_record units = {0}, rec = {0};
  int rc = kl__csv_next(in, &units, r->path);
  if (rc == 0)
    rc = kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, r->path, in->line, 1, NULL,
                      "an Nsight Compute raw page needs a row of units "
                      "after its header");
  while (rc > 0 && (rc = kl__csv_next(in, &rec, r->path)) > 0) {
    if (rec.count == 1 && rec.fields[0].text[0] == '\0') continue;
    if (field(&rec, r->c_id)[0] == '=') continue; /* ==PROF== after it */
    if (!kernel_row(r, &rec)) continue;
    ncu_kernel *k;
    if ((rc = kernel_of(&k, r, &rec)) < 0) break;
    for (size_t c = 0; c < r->header.count && c < rec.count; c++) {
      const char *name = r->header.fields[c].text;
      double v;
      if (!strstr(name, "__") || !parse_number(rec.fields[c].text, &v))
        continue;
      put(k, name, to_base(v, field(&units, (int)c)));
    }
    rc = 1;
  }
  kl__csv_record_free(&units);
  kl__csv_record_free(&rec);
  return rc < 0 ? rc : 0;
}

/* ---- the details page */

static int add_advice(ncu_kernel *k, const ncu_reader *r,
                      const kl_csv_record *rec) {
  if (KL__GROW(k->advice, k->cap_advice, k->nadvice + 1) < 0) return KL_ENOMEM;
  kl_ncu_advice *a = &k->advice[k->nadvice];
  memset(a, 0, sizeof(*a));
  double s;
  a->speedup_pct = parse_number(field(rec, r->c_speedup), &s) ? s : NAN;
  if (!(a->rule = kl__strdup(field(rec, r->c_rule))) ||
      !(a->type = kl__strdup(field(rec, r->c_type))) ||
      !(a->section = kl__strdup(field(rec, r->c_section))) ||
      !(a->text = kl__strdup(field(rec, r->c_desc))) ||
      !(a->speedup_type = kl__strdup(field(rec, r->c_sptype)))) {
    kl__ncu_advice_dispose(a);
    return kl__error_oom();
  }
  k->nadvice++;
  return 0;
}

/* "Stall Long Scoreboard" as "long_scoreboard"; "Selected" too. */
static bool stall_reason(const char *name, char *out, size_t size) {
  if (strncmp(name, "Stall ", 6) == 0) name += 6;
  size_t n = 0;
  for (; *name && n + 1 < size; name++)
    out[n++] = *name == ' ' ? '_' : (char)tolower((unsigned char)*name);
  out[n] = '\0';
  size_t count;
  const char *const *reasons = kl__profile_stall_reasons(&count);
  for (size_t i = 0; i < count; i++)
    if (strcmp(reasons[i], out) == 0) return true;
  return false;
}

static void details_value(ncu_kernel *k, const char *section, const char *label,
                          const char *name, const char *unit, double v) {
  char key[160];
  v = to_base(v, unit);
  if (strstr(name, "__") && !strchr(name, ' ')) { /* a raw table's row */
    put(k, name, v);
    return;
  }
  if (strcmp(label, "Warp State (All Cycles)") == 0) {
    char reason[64];
    if (stall_reason(name, reason, sizeof(reason))) {
      snprintf(key, sizeof(key),
               "smsp__average_warps_issue_stalled_%s_per_issue_active.ratio",
               reason);
      put(k, key, v);
    }
    return;
  }
  if (label[0]) return; /* charts and tables repeat values under labels */
  for (size_t i = 0; i < sizeof(details_names) / sizeof(details_names[0]);
       i++) {
    if (strcmp(details_names[i].name, name) != 0) continue;
    if (details_names[i].section &&
        strcmp(details_names[i].section, section) != 0)
      continue;
    if (details_names[i].unit[0] && strcmp(details_names[i].unit, unit) != 0)
      continue;
    put(k, details_names[i].raw, v);
    return;
  }
}

static int read_details_rows(ncu_reader *r, kl_csv_reader *in) {
  kl_csv_record rec = {0};
  int rc;
  while ((rc = kl__csv_next(in, &rec, r->path)) > 0) {
    if (rec.count == 1 && rec.fields[0].text[0] == '\0') continue;
    if (field(&rec, r->c_id)[0] == '=') continue; /* ==PROF== after it */
    if (!kernel_row(r, &rec)) continue;
    ncu_kernel *k;
    if ((rc = kernel_of(&k, r, &rec)) < 0) break;
    if (field(&rec, r->c_rule)[0]) {
      if ((rc = add_advice(k, r, &rec)) < 0) break;
      continue;
    }
    double v;
    if (parse_number(field(&rec, r->c_value), &v))
      details_value(k, field(&rec, r->c_section), field(&rec, r->c_label),
                    field(&rec, r->c_metric), field(&rec, r->c_unit), v);
  }
  kl__csv_record_free(&rec);
  return rc < 0 ? rc : 0;
}

/* ---- from a kernel's values to a profile */

/* "(32, 8, 1)" as three numbers. */
static bool dims(const char *s, double d[3]) {
  return sscanf(s, " (%lf , %lf , %lf )", &d[0], &d[1], &d[2]) == 3;
}

/* The launch section as kernel info: geometry from the Block and Grid Size
 * columns, resources and limits from launch__ and device__attribute_
 * values; NULL when the export lacks what occupancy needs. */
static json_object *kernel_info(const ncu_kernel *k) {
  double grid[3], block[3];
  static const struct {
    const char *field, *raw;
  } map[] = {
      {"dynamic_smem", "launch__shared_mem_per_block_dynamic"},
      {"registers", "launch__registers_per_thread"},
      {"static_smem", "launch__shared_mem_per_block_static"},
      {"max_threads_per_block", "device__attribute_max_threads_per_block"},
      {"sms", "launch__sm_count"},
      {"warp_size", "device__attribute_warp_size"},
      {"max_threads_per_sm",
       "device__attribute_max_threads_per_multiprocessor"},
      {"max_blocks_per_sm", "device__attribute_max_blocks_per_multiprocessor"},
      {"regs_per_sm", "device__attribute_max_registers_per_multiprocessor"},
      {"smem_per_sm", "device__attribute_max_shared_memory_per_multiprocessor"},
      {"reserved_smem_per_block",
       "device__attribute_reserved_shared_memory_per_block"},
  };
  if (!dims(k->grid, grid) || !dims(k->block, block)) return NULL;
  double vals[sizeof(map) / sizeof(map[0])];
  for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
    if (!raw_value(k, map[i].raw, &vals[i])) return NULL;
  /* the blocks an SM holds: the least of ncu's limits */
  static const char *const limits[] = {
      "launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
      "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps",
      "launch__occupancy_limit_barriers"};
  double active = INFINITY, v;
  for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
    if (raw_value(k, limits[i], &v) && v < active) active = v;
  json_object *o = json_object_new_object(), *g = json_object_new_array(),
              *b = json_object_new_array();
  for (int d = 0; d < 3; d++) {
    json_object_array_add(g, json_object_new_double(grid[d]));
    json_object_array_add(b, json_object_new_double(block[d]));
  }
  json_object_object_add(o, "grid", g);
  json_object_object_add(o, "block", b);
  for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
    json_object_object_add(o, map[i].field, json_object_new_double(vals[i]));
  if (isfinite(active))
    json_object_object_add(o, "active_blocks_per_sm",
                           json_object_new_double(active));
  return o;
}

/* Stall warp counts from the per-issue ratios (the full set's form). */
static void stall_counts(ncu_kernel *k) {
  double issued;
  size_t count;
  const char *const *reasons = kl__profile_stall_reasons(&count);
  if (!raw_value(k, "smsp__inst_issued.sum", &issued)) return;
  for (size_t i = 0; i < count; i++) {
    char sum[128], ratio[128];
    double v;
    snprintf(sum, sizeof(sum), "smsp__warps_issue_stalled_%s.sum", reasons[i]);
    snprintf(ratio, sizeof(ratio),
             "smsp__average_warps_issue_stalled_%s_per_issue_active.ratio",
             reasons[i]);
    if (!raw_value(k, sum, &v) && raw_value(k, ratio, &v))
      put(k, sum, v * issued);
  }
}

/* What kernlab collects that the full set reports in another form: the
 * same quantity by an identity (IPC per scheduler, bytes per sector as a
 * share of 32, blocks and warps launched from the geometry). */
static void equivalents(ncu_kernel *k) {
  double a, b, c;
  if (raw_value(k, "smsp__inst_executed.avg", &a) &&
      raw_value(k, "smsp__cycles_active.avg", &b) && b > 0)
    put(k, "smsp__inst_executed.avg.per_cycle_active", a / b);
  static const char *const dirs[] = {"ld", "st"};
  for (int i = 0; i < 2; i++) {
    char ratio[96], pct[96];
    snprintf(ratio, sizeof(ratio),
             "smsp__sass_average_data_bytes_per_sector_mem_global_op_%s.ratio",
             dirs[i]);
    snprintf(pct, sizeof(pct),
             "smsp__sass_average_data_bytes_per_sector_mem_global_op_%s.pct",
             dirs[i]);
    if (!raw_value(k, pct, &a) && raw_value(k, ratio, &a))
      put(k, pct, 100.0 * a / 32.0);
  }
  /* the same count over the L1's active cycles instead of elapsed ones */
  if (!raw_value(k,
                 "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_"
                 "active",
                 &a) &&
      raw_value(k,
                "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_"
                "elapsed",
                &a) &&
      raw_value(k, "l1tex__cycles_elapsed.avg", &b) &&
      raw_value(k, "l1tex__cycles_active.avg", &c) && c > 0)
    put(k, "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_active",
        a * b / c);
  if (!raw_value(k, "sm__ctas_launched.sum", &a) &&
      raw_value(k, "launch__grid_size", &a))
    put(k, "sm__ctas_launched.sum", a);
  if (!raw_value(k, "smsp__warps_launched.sum", &a) &&
      raw_value(k, "launch__grid_size", &a) &&
      raw_value(k, "launch__block_size", &b) &&
      raw_value(k, "device__attribute_warp_size", &c) && c > 0)
    put(k, "smsp__warps_launched.sum", a * ceil(b / c));
}

/* Values whose nearest ncu metric is no identity: named as stand-ins. */
static int stand_ins(kl_profile *p, const ncu_kernel *k, bool dram) {
  double v;
  int rc = 0;
  if (dram)
    rc = kl__profile_add_stand_in(
        p, "dram_throughput_pct",
        "Nsight Compute's gpu__dram_throughput.avg.pct_of_peak_sustained_"
        "elapsed (its DRAM Throughput)");
  if (rc == 0 && raw_value(k, "gpu__time_duration.sum", &v))
    rc = kl__profile_add_stand_in(
        p, "time_us",
        "Nsight Compute's gpu__time_duration.sum (one profiled launch, not "
        "a timed median)");
  return rc;
}

/* "mean_kernel(float *, const float *, int)" as "mean_kernel". */
static char *short_name(const char *name) {
  const char *paren = strchr(name, '(');
  size_t n = paren ? (size_t)(paren - name) : strlen(name);
  while (n > 0 && name[n - 1] == ' ')
    n--;
  return kl__strndup(name, n);
}

static int to_profile(kl_profile **out, ncu_kernel *k, const char *set) {
  stall_counts(k);
  equivalents(k);
  double v;
  /* DRAM's share of peak under kernlab's name (a stand-in, said so) */
  bool dram =
      !raw_value(k, "dram__throughput.avg.pct_of_peak_sustained_elapsed", &v) &&
      raw_value(k, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                &v);
  if (dram) put(k, "dram__throughput.avg.pct_of_peak_sustained_elapsed", v);
  json_object *reply = json_object_new_object(),
              *names = json_object_new_array(), *vals = json_object_new_array(),
              *ranges = json_object_new_array(), *ki = kernel_info(k);
  json_object_object_add(reply, "backend", json_object_new_string("cuda"));
  json_object_object_foreach(k->raw, key, val) {
    json_object_array_add(names, json_object_new_string(key));
    json_object_array_add(vals, json_object_get(val));
  }
  json_object_array_add(ranges, vals);
  json_object_object_add(reply, "metrics", names);
  json_object_object_add(reply, "ranges", ranges);
  if (ki) json_object_object_add(reply, "kernel", ki);
  kl_profile_inputs in = {0};
  in.set = set;
  in.kernels = 1;
  if (raw_value(k, "gpu__time_duration.sum", &v)) in.time_us = v / 1000.0;
  int rc = kl__profile_from_reply(out, reply, &in);
  json_object_put(reply);
  char *name = rc == 0 ? short_name(k->name) : NULL;
  if (rc == 0 && !name) rc = kl__error_oom();
  if (rc == 0) rc = kl__profile_set_name(*out, name);
  kl__free(name);
  if (rc == 0) rc = stand_ins(*out, k, dram);
  for (size_t i = 0; rc == 0 && i < k->nadvice; i++)
    rc = kl__profile_add_advice(*out, &k->advice[i]);
  if (rc < 0) {
    kl_profile_free(*out);
    *out = NULL;
  }
  return rc;
}

/* ---- the whole export */

static bool is_header(const kl_csv_record *rec) {
  return rec->count >= 2 && strcmp(rec->fields[0].text, "ID") == 0 &&
         strcmp(rec->fields[1].text, "Process ID") == 0;
}

/* Where ncu's header line starts (ncu run live prints its ==PROF== lines
 * and the program's own output first), and its line number; NULL when no
 * line starts with it. */
static const char *header_line(const char *text, int *line) {
  *line = 1;
  for (const char *p = text; p && *p; (*line)++) {
    if (strncmp(p, "\"ID\",\"Process ID\"", 17) == 0 ||
        strncmp(p, "ID,Process ID", 13) == 0)
      return p;
    p = strchr(p, '\n');
    p = p ? p + 1 : NULL;
  }
  return NULL;
}

bool kl__ncu_csv_sniff(const char *text) {
  int line;
  return header_line(text, &line) != NULL;
}

int kl__ncu_csv_read(kl_profile ***out, char ***names, char ***ids, size_t *n,
                     const char *text, const char *path) {
  ncu_reader r = {0};
  kl_csv_reader in;
  *out = NULL;
  *names = *ids = NULL;
  *n = 0;
  r.path = path;
  int line;
  const char *start = header_line(text, &line);
  if (!start) start = text + strlen(text);
  kl__csv_init(&in, start, strlen(start));
  in.line = line;
  int rc = kl__csv_next(&in, &r.header, path);
  if (rc > 0 && !is_header(&r.header)) rc = 0;
  if (rc == 0)
    rc = kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, path, 1, 1, NULL,
                      "no Nsight Compute header (\"ID\",\"Process ID\",...): "
                      "expected the output of ncu --csv --page raw or "
                      "--page details");
  if (rc < 0) {
    reader_dispose(&r);
    return rc;
  }
  r.c_id = 0;
  r.c_name = column_of(&r.header, "Kernel Name");
  r.c_block = column_of(&r.header, "Block Size");
  r.c_grid = column_of(&r.header, "Grid Size");
  r.c_section = column_of(&r.header, "Section Name");
  r.c_label = column_of(&r.header, "Body Item Label");
  r.c_metric = column_of(&r.header, "Metric Name");
  r.c_unit = column_of(&r.header, "Metric Unit");
  r.c_value = column_of(&r.header, "Metric Value");
  r.c_rule = column_of(&r.header, "Rule Name");
  r.c_type = column_of(&r.header, "Rule Type");
  r.c_desc = column_of(&r.header, "Rule Description");
  r.c_sptype = column_of(&r.header, "Estimated Speedup Type");
  r.c_speedup = column_of(&r.header, "Estimated Speedup");
  r.details = r.c_metric >= 0 && r.c_value >= 0;
  rc = r.details ? read_details_rows(&r, &in) : read_raw_rows(&r, &in);
  if (rc == 0 && r.count == 0)
    rc = kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, path, r.header.line, 1, NULL,
                      "this Nsight Compute export holds no kernel");
  kl_profile **ps = NULL;
  char **nm = NULL, **id = NULL;
  if (rc == 0 && (!(ps = kl__calloc(r.count, sizeof(*ps))) ||
                  !(nm = kl__calloc(r.count, sizeof(*nm))) ||
                  !(id = kl__calloc(r.count, sizeof(*id)))))
    rc = kl__error_oom();
  for (size_t i = 0; rc == 0 && i < r.count; i++) {
    rc = to_profile(&ps[i], &r.kernels[i],
                    r.details ? "ncu details" : "ncu raw");
    if (rc == 0 && (!(nm[i] = short_name(r.kernels[i].name)) ||
                    !(id[i] = kl__strdup(r.kernels[i].id))))
      rc = kl__error_oom();
  }
  size_t count = r.count;
  reader_dispose(&r);
  if (rc < 0) {
    for (size_t i = 0; ps && i < count; i++) {
      kl_profile_free(ps[i]);
      kl__free(nm ? nm[i] : NULL);
      kl__free(id ? id[i] : NULL);
    }
    kl__free(ps);
    kl__free(nm);
    kl__free(id);
    return rc;
  }
  *out = ps;
  *names = nm;
  *ids = id;
  *n = count;
  return 0;
}
