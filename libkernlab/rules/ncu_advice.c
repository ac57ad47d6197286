/* Where Nsight Compute's own rules and kernlab's agree.
 *
 * An ncu rule result (kl_ncu_advice, read from a --page details export)
 * names a problem in ncu's words; this table says which of kernlab's
 * default rules name the same one. Some ncu rules cover several problems
 * and say which in their text (CPIStall names its stall reason,
 * MemoryCacheAccessPattern loads or stores), so an entry may also require
 * a phrase of the description. The first fired rule an entry lists is the
 * agreement. */
#include <string.h>

#include "rules_internal.h"

static const struct {
  const char *ncu_rule, *phrase; /* phrase: NULL for any text */
  const char *ids[3];
} agreements[] = {
    {"UncoalescedGlobalAccess",
     NULL,
     {"uncoalesced_stores", "poor_coalescing"}},
    {"MemoryCacheAccessPattern", "global stores", {"uncoalesced_stores"}},
    {"MemoryCacheAccessPattern", "global loads", {"poor_coalescing"}},
    {"SharedMemoryConflicts", NULL, {"smem_bank_conflicts"}},
    {"AchievedOccupancy", NULL, {"low_occupancy"}},
    {"TheoreticalOccupancy", NULL, {"register_limited", "low_occupancy"}},
    {"CPIStall", "after EXIT", {"stall_drain"}},
    {"CPIStall", "scoreboard dependency on a L1TEX", {"stall_long_scoreboard"}},
    {"CPIStall", "MIO", {"stall_mio_throttle", "stall_short_scoreboard"}},
    {"CPIStall", "barrier", {"stall_barrier", "stall_membar"}},
    {"CPIStall", "fixed latency", {"stall_wait"}},
    {"CPIStall", "math pipe", {"stall_math_pipe"}},
    {"CPIStall", "LG", {"stall_lg_throttle"}},
    {"IssueSlotUtilization", NULL, {"low_ipc"}},
    {"HighPipeUtilization", "under-utilized", {"low_ipc"}},
    {"LaunchConfiguration", NULL, {"low_waves_per_sm", "tail_effect"}},
    {"SOLBottleneck", "Memory is more heavily", {"severe_memory_bound"}},
    {"SOLBottleneck", "Compute is more heavily", {"near_peak_compute"}},
    {"SOLBottleneck", "too small", {"low_waves_per_sm", "launch_overhead"}},
    {"SOLBottleneck",
     "low compute throughput",
     {"far_from_roofline", "low_ipc"}},
};

const char *kl__ncu_advice_agrees(const kl_ncu_advice *a,
                                  const char *const *fired, size_t nfired) {
  for (size_t e = 0; e < sizeof(agreements) / sizeof(agreements[0]); e++) {
    if (strcmp(agreements[e].ncu_rule, a->rule) != 0 ||
        (agreements[e].phrase && !strstr(a->text, agreements[e].phrase)))
      continue;
    for (size_t k = 0; k < 3 && agreements[e].ids[k]; k++)
      for (size_t i = 0; i < nfired; i++)
        if (strcmp(fired[i], agreements[e].ids[k]) == 0) return fired[i];
  }
  return NULL;
}
