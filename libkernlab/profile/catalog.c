/* The metric catalog: every metric kernlab shows, once.
 *
 * An entry is collected from CUPTI under its Nsight Compute name (source
 * "cupti"), computed here from others (source "derived"), or counted on the
 * host by perf_event_open (source "perf"). The quick and standard sets are
 * the "cupti" entries carrying their bit: quick is 24 names in 3 passes on
 * GH100, standard 67 names in 12 (the worker counts passes on the chip
 * before profiling; tests/profile checks both bounds offline). ncu's
 * sm__throughput is in neither set: alone it costs 8 passes on GH100 and
 * adds 4 to the standard set, so the SM side is read from its cheaper parts
 * (sm_busy_pct); ask for it by name where ncu's exact number matters.
 * Derived entries that Nsight Compute also computes keep its name, so
 * --ncu-names output can be compared with ncu's line by line, and a value
 * recorded under that name (a flat ncu export) is taken as it is. */
#include <string.h>

#include "kernlab/profile.h"

#define Q (KL_METRIC_SET_QUICK | KL_METRIC_SET_STANDARD)
#define S KL_METRIC_SET_STANDARD
#define CUPTI(name, ncu, group, unit, sets, desc)                              \
  { name, ncu, group, unit, desc, "cupti", sets }
#define DERIVED(name, ncu, group, unit, desc)                                  \
  { name, ncu, group, unit, desc, "derived", Q }
#define PERF(name, group, unit, desc)                                          \
  { name, NULL, group, unit, desc, "perf", Q }
/* a stall reason: the raw count of warps stalled for it, summed over
 * cycles, and its share of all stalls */
#define STALL(r, desc)                                                         \
  CUPTI("stall_" #r, "smsp__warps_issue_stalled_" #r ".sum", "warp_stalls",    \
        "warp-cycles", S, "Warp-cycles stalled: " desc),                       \
      DERIVED("stall_" #r "_pct", NULL, "warp_stalls", "%",                    \
              "Share of all stalled warp-cycles: " desc)

static const kl_metric_info catalog[] = {
    /* ---- roofline -------------------------------------------------------- */
    DERIVED("time_us", NULL, "roofline", "us",
            "Kernel time from CUPTI activity records of timed, unprofiled "
            "launches (median, cold L2)."),
    CUPTI("duration_ns", "gpu__time_duration.sum", "roofline", "ns", Q,
          "Duration under the profiler (a replayed launch; for comparing "
          "with ncu, not for timing)."),
    DERIVED("roofline_pct", NULL, "roofline", "%",
            "Time the roofline bound allows (bytes at peak DRAM bandwidth or "
            "FLOPs at peak FP32 rate, whichever is longer) as a share of the "
            "measured time."),
    DERIVED("achieved_bandwidth", NULL, "roofline", "GB/s",
            "The case's roofline bytes over the measured time."),
    DERIVED("achieved_flops", NULL, "roofline", "GFLOP/s",
            "The case's roofline FLOPs over the measured time."),
    DERIVED("arithmetic_intensity", NULL, "roofline", "FLOP/byte",
            "Roofline FLOPs per roofline byte."),
    DERIVED("roofline_bytes", NULL, "roofline", "bytes",
            "Bytes the case says one launch must move (its roofline.bytes)."),
    DERIVED("roofline_flops", NULL, "roofline", "FLOP",
            "FLOPs the case says one launch must do (its roofline.flops)."),
    DERIVED("peak_bandwidth", NULL, "roofline", "GB/s",
            "DRAM peak: dram__bytes.sum.peak_sustained at the measured DRAM "
            "clock."),
    DERIVED("peak_flops_fp32", NULL, "roofline", "GFLOP/s",
            "FP32 peak: two FLOPs per FFMA at the sustained FFMA rate and the "
            "measured SM clock."),
    CUPTI("sm_throughput_pct",
          "sm__throughput.avg.pct_of_peak_sustained_elapsed", "roofline", "%",
          0,
          "Compute (SM) throughput: the busiest SM unit against its peak "
          "(in no set: 8 passes on GH100; ask for it by name)."),
    DERIVED("sm_busy_pct", NULL, "roofline", "%",
            "The busiest SM unit: sm__throughput where collected, else the "
            "largest of issue slots, the FMA, ALU, FP64, tensor and LSU pipes "
            "and L1/shared throughput."),
    CUPTI("memory_throughput_pct",
          "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
          "roofline", "%", S,
          "Memory throughput: the busiest of DRAM, L2 and L1 against its "
          "peak."),
    CUPTI("dram_throughput_pct",
          "dram__throughput.avg.pct_of_peak_sustained_elapsed", "roofline", "%",
          Q, "DRAM throughput against its peak."),
    CUPTI("l2_throughput_pct",
          "lts__throughput.avg.pct_of_peak_sustained_elapsed", "roofline", "%",
          S, "L2 throughput against its peak."),
    CUPTI("l1tex_throughput_pct",
          "l1tex__throughput.avg.pct_of_peak_sustained_active", "roofline", "%",
          S, "L1/texture throughput against its peak."),
    /* the quick set's L2 and L1 sides: lts__throughput and
     * l1tex__throughput cost 6 more passes on GH100; these parts of them,
     * the ones that bound the bundled kernels, fit in its 3 (the standard
     * set has them too, as quick is a subset of it) */
    CUPTI("l2_xbar_pct",
          "lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed",
          "roofline", "%", Q,
          "Cycles the crossbar delivered requests to L2, against peak: the "
          "part of L2 throughput the quick set reads."),
    CUPTI("l1_wavefronts_pct",
          "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_active",
          "roofline", "%", Q,
          "L1 data-pipe wavefronts of loads and stores against peak, over "
          "active cycles: the part of L1/shared throughput the quick set "
          "reads."),
    CUPTI("dram_bandwidth", "dram__bytes.sum.per_second", "roofline", "bytes/s",
          S, "DRAM bytes per second while the kernel ran (profiled launch)."),
    CUPTI("sm_clock", "sm__cycles_elapsed.avg.per_second", "roofline", "Hz", Q,
          "SM clock during the profiled launch."),
    CUPTI("dram_clock", "dram__cycles_elapsed.avg.per_second", "roofline", "Hz",
          Q, "DRAM clock during the profiled launch."),
    CUPTI("dram_peak_bytes_per_cycle", "dram__bytes.sum.peak_sustained",
          "roofline", "bytes/cycle", Q, "DRAM bytes per DRAM cycle at peak."),
    CUPTI("ffma_peak_per_cycle",
          "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
          "roofline", "inst/cycle", Q,
          "FFMA thread instructions per SM cycle at peak, all SMs."),
    CUPTI("sm_cycles_active", "sm__cycles_active.avg", "roofline", "cycles", S,
          "Cycles an SM had at least one warp, averaged over SMs."),
    CUPTI("sm_cycles_elapsed", "sm__cycles_elapsed.avg", "roofline", "cycles",
          S, "Cycles elapsed per SM."),

    /* ---- memory ---------------------------------------------------------- */
    CUPTI("dram_bytes_read", "dram__bytes_read.sum", "memory", "bytes", Q,
          "Bytes read from DRAM."),
    CUPTI("dram_bytes_write", "dram__bytes_write.sum", "memory", "bytes", Q,
          "Bytes written to DRAM."),
    DERIVED("dram_bytes", NULL, "memory", "bytes",
            "Bytes read from and written to DRAM."),
    CUPTI("l1_hit_rate_pct", "l1tex__t_sector_hit_rate.pct", "memory", "%", S,
          "L1 sector hit rate."),
    CUPTI("l2_hit_rate_pct", "lts__t_sector_hit_rate.pct", "memory", "%", Q,
          "L2 sector hit rate."),
    CUPTI("l2_read_hit_rate_pct", "lts__t_sector_op_read_hit_rate.pct",
          "memory", "%", S, "L2 hit rate of reads."),
    CUPTI("l2_write_hit_rate_pct", "lts__t_sector_op_write_hit_rate.pct",
          "memory", "%", S, "L2 hit rate of writes."),
    CUPTI("global_load_sectors",
          "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "memory", "sectors",
          Q, "32-byte sectors global loads touched."),
    CUPTI("global_load_requests",
          "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "memory",
          "requests", Q, "Global load requests (one per warp instruction)."),
    CUPTI("global_store_sectors",
          "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "memory", "sectors",
          Q, "32-byte sectors global stores touched."),
    CUPTI("global_store_requests",
          "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "memory",
          "requests", Q, "Global store requests."),
    DERIVED(
        "sectors_per_load_request",
        "l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio",
        "memory", "sectors",
        "Sectors per global load request: 4 is ideal for 4-byte loads by "
        "a full warp; 32 means every thread touches its own sector."),
    DERIVED(
        "sectors_per_store_request",
        "l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_st.ratio",
        "memory", "sectors",
        "Sectors per global store request (4 ideal for 4-byte stores)."),
    CUPTI("global_load_efficiency_pct",
          "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
          "memory", "%", S,
          "Bytes global loads asked for per byte of the sectors they "
          "touched (100: every fetched byte used, whatever the access "
          "width)."),
    CUPTI("global_store_efficiency_pct",
          "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
          "memory", "%", S,
          "Bytes global stores wrote per byte of the sectors they touched."),
    DERIVED("load_sector_ratio", NULL, "memory", "x",
            "Sectors global loads touched over the sectors their bytes need "
            "(1: coalesced, or no global loads; 8: a 4-byte word per "
            "32-byte sector)."),
    DERIVED("store_sector_ratio", NULL, "memory", "x",
            "Sectors global stores touched over the sectors their bytes "
            "need."),
    CUPTI("local_load_sectors", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
          "memory", "sectors", S,
          "Local-memory sectors loaded (register spills, local arrays)."),
    CUPTI("local_store_sectors",
          "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", "memory", "sectors",
          S, "Local-memory sectors stored."),
    CUPTI("shared_load_bank_conflicts",
          "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "memory",
          "conflicts", S, "Shared-memory bank conflicts on loads."),
    CUPTI("shared_store_bank_conflicts",
          "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "memory",
          "conflicts", S, "Shared-memory bank conflicts on stores."),
    CUPTI("shared_load_wavefronts",
          "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "memory",
          "wavefronts", S, "Shared-memory load wavefronts."),
    CUPTI("shared_store_wavefronts",
          "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "memory",
          "wavefronts", S, "Shared-memory store wavefronts."),
    DERIVED("shared_bank_conflict_pct", NULL, "memory", "%",
            "Bank conflicts as a share of shared-memory wavefronts (0 when "
            "the kernel has no shared-memory traffic)."),
    CUPTI("l2_read_sectors", "lts__t_sectors_op_read.sum", "memory", "sectors",
          S, "L2 sectors read."),
    CUPTI("l2_write_sectors", "lts__t_sectors_op_write.sum", "memory",
          "sectors", S, "L2 sectors written."),

    /* ---- warp stalls (all 19 reasons of GH100) --------------------------- */
    DERIVED("stall_total", NULL, "warp_stalls", "warp-cycles",
            "All stalled warp-cycles (the sum of the reasons below)."),
    STALL(long_scoreboard, "waiting on global or local memory (L1TEX)"),
    STALL(short_scoreboard, "waiting on shared memory or special math (MIO)"),
    STALL(mio_throttle, "the MIO queue (shared memory, special math) is full"),
    STALL(lg_throttle, "the local/global memory queue is full"),
    STALL(tex_throttle, "the texture queue is full"),
    STALL(math_pipe_throttle, "the math pipe it needs is busy"),
    STALL(barrier, "waiting at __syncthreads"),
    STALL(membar, "waiting at a memory barrier"),
    STALL(wait, "a fixed-latency dependency"),
    STALL(drain, "draining memory stores at exit"),
    STALL(dispatch_stall, "the dispatcher could not issue"),
    STALL(imc_miss, "an immediate constant cache miss"),
    STALL(no_instruction, "an instruction cache miss"),
    STALL(branch_resolving, "resolving a branch target"),
    STALL(sleeping, "sleeping (nanosleep or yield)"),
    STALL(misc, "miscellaneous reasons"),
    STALL(gmma, "waiting on warpgroup MMA (wgmma)"),
    STALL(not_selected, "eligible but another warp was picked"),
    STALL(selected, "issuing (not a stall; counted as ncu does)"),

    /* ---- occupancy ------------------------------------------------------- */
    CUPTI("achieved_occupancy_pct",
          "sm__warps_active.avg.pct_of_peak_sustained_active", "occupancy", "%",
          Q,
          "Active warps per active cycle against the "
          "SM's maximum."),
    CUPTI("warps_active_per_cycle", "sm__warps_active.avg.per_cycle_active",
          "occupancy", "warps", S, "Active warps per active cycle and SM."),
    DERIVED("theoretical_occupancy_pct",
            "sm__maximum_warps_per_active_cycle_pct", "occupancy", "%",
            "Warps that fit on an SM (the occupancy API) against its maximum."),
    DERIVED("active_blocks_per_sm", NULL, "occupancy", "blocks",
            "Blocks that fit on an SM at once (cudaOccupancyMaxActiveBlocks"
            "PerMultiprocessor)."),
    DERIVED("occupancy_limit_registers", "launch__occupancy_limit_registers",
            "occupancy", "blocks", "Blocks per SM the registers allow."),
    /* not ncu's launch__occupancy_limit_shared_mem: ncu divides by the
     * carveout the driver chose for the launch (e.g. 100 KiB), which the
     * occupancy API does not say; this is at the largest carveout */
    DERIVED("occupancy_limit_shared_mem", NULL, "occupancy", "blocks",
            "Blocks per SM the shared memory allows at the largest carveout "
            "(absent when the kernel uses none)."),
    DERIVED("occupancy_limit_warps", "launch__occupancy_limit_warps",
            "occupancy", "blocks", "Blocks per SM the warp slots allow."),
    DERIVED("occupancy_limit_blocks", "launch__occupancy_limit_blocks",
            "occupancy", "blocks", "Blocks per SM the block slots allow."),
    DERIVED("registers_per_thread", "launch__registers_per_thread", "occupancy",
            "registers", "Registers per thread (cudaFuncGetAttributes)."),
    DERIVED("static_smem_per_block", "launch__shared_mem_per_block_static",
            "occupancy", "bytes", "Static shared memory per block."),
    DERIVED("dynamic_smem_per_block", "launch__shared_mem_per_block_dynamic",
            "occupancy", "bytes", "Dynamic shared memory per block."),
    DERIVED("local_bytes_per_thread", NULL, "occupancy", "bytes",
            "Local memory per thread (spills and local arrays)."),

    /* ---- instruction ----------------------------------------------------- */
    CUPTI("inst_executed", "smsp__inst_executed.sum", "instruction", "inst", S,
          "Warp instructions executed."),
    CUPTI("ipc", "smsp__inst_executed.avg.per_cycle_active", "instruction",
          "inst/cycle", Q,
          "Warp instructions per active cycle and scheduler "
          "(at most 1)."),
    CUPTI("sm_ipc", "sm__inst_executed.avg.per_cycle_active", "instruction",
          "inst/cycle", S,
          "Warp instructions per active cycle and SM (at most "
          "4)."),
    CUPTI("inst_issued", "smsp__inst_issued.sum", "instruction", "inst", S,
          "Warp instructions issued (replays included)."),
    CUPTI("issue_active_pct",
          "smsp__issue_active.avg.pct_of_peak_sustained_active", "instruction",
          "%", Q, "Cycles a scheduler issued an instruction."),
    CUPTI("threads_per_inst",
          "smsp__thread_inst_executed_per_inst_executed.ratio", "instruction",
          "threads", S,
          "Active threads per warp instruction (32: no divergence)."),
    CUPTI("pipe_fma_pct",
          "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
          "instruction", "%", Q, "FMA pipe (FP32 multiply-add) busy."),
    CUPTI("pipe_alu_pct",
          "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
          "instruction", "%", Q, "ALU pipe (integer, logic, compare) busy."),
    CUPTI("pipe_fp64_pct",
          "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
          "instruction", "%", Q, "FP64 pipe busy."),
    CUPTI("pipe_tensor_pct",
          "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
          "instruction", "%", Q, "Tensor pipe busy."),
    CUPTI("pipe_lsu_pct",
          "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
          "instruction", "%", Q, "Load/store unit instructions against peak."),

    /* ---- launch ---------------------------------------------------------- */
    CUPTI("ctas_launched", "sm__ctas_launched.sum", "launch", "blocks", Q,
          "Thread blocks launched."),
    CUPTI("warps_launched", "smsp__warps_launched.sum", "launch", "warps", S,
          "Warps launched."),
    DERIVED("grid_size", "launch__grid_size", "launch", "blocks",
            "Blocks in the grid."),
    DERIVED("block_size", "launch__block_size", "launch", "threads",
            "Threads per block."),
    DERIVED("waves_per_sm", "launch__waves_per_multiprocessor", "launch",
            "waves",
            "Grid blocks over (blocks per SM x SMs): below 1 leaves "
            "SMs idle; a fraction above a whole number is a tail."),
    DERIVED("kernels", NULL, "launch", "kernels",
            "Kernels one launch of the case ran (ranges profiled)."),
    DERIVED("largest_kernel_pct", NULL, "launch", "%",
            "The longest kernel's share of the profiled time of all the "
            "kernels one launch ran (100 for one kernel): low in a chain of "
            "similar kernels, each writing what the next reads."),

    /* ---- host (perf_event_open) ----------------------------------------- */
    PERF("host_cycles", "host", "cycles",
         "CPU cycles per launch (user "
         "space)."),
    PERF("host_instructions", "host", "inst",
         "Instructions retired per "
         "launch."),
    PERF("host_cache_references", "host", "refs",
         "Last-level cache "
         "references per launch."),
    PERF("host_cache_misses", "host", "misses",
         "Last-level cache misses per "
         "launch."),
    PERF("host_branches", "host", "branches", "Branches per launch."),
    PERF("host_branch_misses", "host", "misses",
         "Mispredicted branches per "
         "launch."),
    {"host_ipc", NULL, "host", "inst/cycle", "Instructions per cycle.",
     "derived", Q},
    {"host_cache_miss_pct", NULL, "host", "%",
     "Last-level cache misses per reference.", "derived", Q},
    {"host_mpki", NULL, "host", "misses/kinst",
     "Last-level cache misses per thousand instructions.", "derived", Q},
    {"host_branch_miss_pct", NULL, "host", "%",
     "Mispredicted branches per branch.", "derived", Q},
};

const kl_metric_info *kl_metric_catalog(size_t *n) {
  if (n) *n = sizeof(catalog) / sizeof(catalog[0]);
  return catalog;
}

const kl_metric_info *kl_metric_find(const char *name) {
  for (size_t i = 0; name && i < sizeof(catalog) / sizeof(catalog[0]); i++)
    if (strcmp(catalog[i].name, name) == 0 ||
        (catalog[i].ncu_name && strcmp(catalog[i].ncu_name, name) == 0))
      return &catalog[i];
  /* a percentage may be named without its _pct (l2_hit_rate), as rule
   * files of tools of this family do */
  size_t len = name ? strlen(name) : 0;
  for (size_t i = 0; len && i < sizeof(catalog) / sizeof(catalog[0]); i++)
    if (strncmp(catalog[i].name, name, len) == 0 &&
        strcmp(catalog[i].name + len, "_pct") == 0)
      return &catalog[i];
  return NULL;
}
