/** @file kernlab/profile.h  Hardware metrics, the metric catalog, and the
 *  bottleneck verdict.
 *
 * A profile is taken in the worker after a kernel passed its checks and was
 * timed (kl_bench_options.profile): CUPTI's Range Profiler for device
 * kernels, perf_event_open for host ones. Values CUPTI does not give are
 * computed here: theoretical occupancy and its limiter, waves per SM,
 * achieved bandwidth and FLOP/s from the case's roofline and the *timed*
 * duration (never the profiled one), and the share of the roofline bound.
 * The catalog names every metric once, with its Nsight Compute name, group,
 * unit and meaning; the CLI, the rules and the prompts all read it.
 */
#ifndef KERNLAB_PROFILE_H
#define KERNLAB_PROFILE_H

#include "common.h"

KL_BEGIN_DECLS

/** Sets a catalog entry belongs to. */
#define KL_METRIC_SET_QUICK 1u    /**< <= 3 passes on GH100 */
#define KL_METRIC_SET_STANDARD 2u /**< >= 50 metrics in <= 15 passes */

typedef struct kl_metric_info {
  const char *name;        /**< kernlab's name, e.g. "dram_throughput_pct" */
  const char *ncu_name;    /**< Nsight Compute's name; NULL where ncu has
                                none */
  const char *group;       /**< "roofline", "memory", "warp_stalls",
                                "occupancy", "instruction", "launch",
                                "host" */
  const char *unit;        /**< "%", "ns", "us", "GB/s", "bytes", ... */
  const char *description; /**< one sentence */
  const char *source;      /**< "cupti" (collected under ncu_name),
                                "derived" (computed here), "perf" */
  unsigned sets;           /**< KL_METRIC_SET_* bits */
} kl_metric_info;

/** The whole catalog, in display order (grouped). */
KL_EXTERN(const kl_metric_info *) kl_metric_catalog(size_t *n);
/** An entry by kernlab or Nsight Compute name (a kernlab name ending in
 *  _pct may be given without it: l2_hit_rate); NULL when unknown. */
KL_EXTERN(const kl_metric_info *) kl_metric_find(const char *name);

typedef enum kl_bottleneck {
  KL_BOTTLENECK_UNKNOWN = 0, /**< no counters to decide from */
  KL_BOTTLENECK_MEMORY,      /**< "memory_bound": DRAM or L2 near peak */
  KL_BOTTLENECK_COMPUTE,     /**< "compute_bound": SM pipelines near peak */
  KL_BOTTLENECK_LATENCY,     /**< "latency_bound": nothing near peak */
  KL_BOTTLENECK_LAUNCH       /**< "launch_bound": too short to matter
                                  against launch overhead */
} kl_bottleneck;
KL_EXTERN(const char *) kl_bottleneck_name(kl_bottleneck b);

typedef struct kl_profile kl_profile; /* opaque */

/** A profile from its JSON form (kl_profile_json, or a report's "profile"
 *  object, e.g. one recorded on another machine). Derived values and the
 *  verdict are computed again from the raw values. path names the text in
 *  errors. @return 0, KL_EINVALID (located message), KL_ENOMEM. */
KL_EXTERN(int)
kl_profile_from_json(kl_profile **out, const char *json, const char *path);
KL_EXTERN(void) kl_profile_free(kl_profile *p);

/** Profiles recorded earlier, from any of: a profile object (as above),
 *  the whole output of `kl profile --json` (one profile per shape, named
 *  by it), or a flat object of metric values keyed by Nsight Compute or
 *  CUPTI names ({"dram__throughput.avg.pct_of_peak_sustained_elapsed":
 *  71.2, ...}) as other tools export them; values may be numbers or
 *  numeric strings. @return 0, KL_EINVALID (path:line:column message),
 *  KL_ENOMEM. */
typedef struct kl_profile_list kl_profile_list; /* opaque */
KL_EXTERN(int)
kl_profile_list_from_json(kl_profile_list **out, const char *json,
                          const char *path);
/** As kl_profile_list_from_json, or an Nsight Compute CSV export: the
 *  output of `ncu --csv --page raw` (any --print-units) or `--page details`
 *  (with or without --print-details all), written by ncu run live (its
 *  ==PROF== lines and the program's output ahead of the header are
 *  skipped) or by `ncu --import`. One profile per kernel, named by the
 *  kernel, with ncu's ID as its launch; a details page's rule results are
 *  the profile's advice (kl_profile_advice). */
KL_EXTERN(int)
kl_profile_list_from_text(kl_profile_list **out, const char *text,
                          const char *path);
/** A file of recorded metrics, as kl_profile_list_from_text reads; an
 *  Nsight Compute report (a path ending in .ncu-rep) is exported by
 *  `ncu --import` (its raw page for the values, its details page for the
 *  advice), which needs ncu on PATH. @return 0, KL_EINVALID, KL_ENOTFOUND
 *  (no such file, or no ncu for a report), KL_ENOMEM. */
KL_EXTERN(int) kl_profile_list_read(kl_profile_list **out, const char *path);
KL_EXTERN(size_t) kl_profile_list_count(const kl_profile_list *l);
/** The i-th profile, borrowed from the list; NULL past the end. */
KL_EXTERN(const kl_profile *)
kl_profile_list_get(const kl_profile_list *l, size_t i);
/** The shape it was taken at, or NULL when the form does not say. */
KL_EXTERN(const char *)
kl_profile_list_name(const kl_profile_list *l, size_t i);
/** ncu's ID of the kernel (its launch in the report), or NULL when the
 *  form does not say. */
KL_EXTERN(const char *)
kl_profile_list_launch(const kl_profile_list *l, size_t i);
/** Give profile i the roofline of the shape it ran (a case's bytes and
 *  FLOPs, kl_case_roofline) when the recording has none, as an ncu export
 *  has not: its roofline values and verdict are computed again.
 *  @return 0, KL_EINVALID (no such profile), KL_ENOMEM. */
KL_EXTERN(int)
kl_profile_list_set_roofline(kl_profile_list *l, size_t i, double bytes,
                             double flops);
KL_EXTERN(void) kl_profile_list_free(kl_profile_list *l);

KL_EXTERN(kl_bottleneck) kl_profile_bottleneck(const kl_profile *p);
/** A launch that ran several kernels (a launcher's, kernlab/plugin.h): one
 *  profile per kernel, in launch order (0 parts for one kernel; the profile
 *  itself then describes it, as it describes the longest one otherwise).
 *  A part's name is its kernel's; its time its own duration. */
KL_EXTERN(size_t) kl_profile_part_count(const kl_profile *p);
KL_EXTERN(const kl_profile *) kl_profile_part(const kl_profile *p, size_t i);
/** A part's kernel name; NULL for a whole profile. */
KL_EXTERN(const char *) kl_profile_name(const kl_profile *p);
/** The profile's time in microseconds (the timed median of the launch, or
 *  a part's own duration); NAN when unknown. */
KL_EXTERN(double) kl_profile_time_us(const kl_profile *p);
/** The verdict as one line with the numbers that led to it. */
KL_EXTERN(const char *) kl_profile_verdict(const kl_profile *p);
/** Why values are missing (no counters here, ...), or NULL. */
KL_EXTERN(const char *) kl_profile_note(const kl_profile *p);
/** A value by kernlab, Nsight Compute or raw CUPTI name.
 *  @return 0, KL_ENOTFOUND (not in this profile). */
KL_EXTERN(int)
kl_profile_value(double *v, const kl_profile *p, const char *name);
/** Where a value came from when it is a stand-in for what kernlab
 *  measures (a recorded export's nearest metric: "Nsight Compute's
 *  gpu__dram_throughput..."), by kernlab or Nsight Compute name; NULL
 *  when it is kernlab's own or absent. */
KL_EXTERN(const char *)
kl_profile_stand_in(const kl_profile *p, const char *name);
/** Passes the profile took (device), 0 for host counters. */
KL_EXTERN(size_t) kl_profile_passes(const kl_profile *p);

/** One of Nsight Compute's own rule results, read from a --page details
 *  export (its OPT, INF and WRN lines). */
typedef struct kl_ncu_advice {
  const char *rule;         /**< ncu's rule: "UncoalescedGlobalAccess" */
  const char *type;         /**< "OPT", "INF" or "WRN" */
  const char *section;      /**< the section it belongs to */
  const char *text;         /**< its description */
  const char *speedup_type; /**< "global", "local" or "" */
  double speedup_pct;       /**< ncu's estimated speedup; NAN when none */
} kl_ncu_advice;
/** Nsight Compute's advice on this kernel, ranked by estimated speedup
 *  (largest first; those without one last): 0 unless the profile was read
 *  from an ncu details export. */
KL_EXTERN(size_t) kl_profile_advice_count(const kl_profile *p);
KL_EXTERN(const kl_ncu_advice *)
kl_profile_advice(const kl_profile *p, size_t i);

/** kl_profile_json flags: key metrics by Nsight Compute's names (values
 *  without one go under "kernlab_only"). */
#define KL_PROFILE_NCU_NAMES 1u
KL_EXTERN(int)
kl_profile_json(kl_buf *out, const kl_profile *p, unsigned flags);

/** For each catalog entry present, in catalog order: cb(info, value, ud);
 *  raw user metrics outside the catalog come last with a temporary info
 *  (group "raw"). A nonzero return stops the walk and is returned. */
typedef int (*kl_profile_visit_fn)(const kl_metric_info *info, double value,
                                   void *ud);
KL_EXTERN(int)
kl_profile_foreach(const kl_profile *p, kl_profile_visit_fn cb, void *ud);

KL_END_DECLS

#endif /* KERNLAB_PROFILE_H */
