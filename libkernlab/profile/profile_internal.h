/* What the bench path needs from the profile module (profile.c), and what
 * profile.c and compute.c share. */
#ifndef KL_PROFILE_INTERNAL_H
#define KL_PROFILE_INTERNAL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernlab/plugin.h"
#include "kernlab/profile.h"

/* A set spec ("quick", "standard", or names separated by commas: catalog
 * names or raw CUPTI names) as the CUPTI names to collect, owned by the
 * caller (free each and the array with kl__free). gpu__time_duration.sum is
 * always included: it picks the main kernel when a launch runs several.
 * @return 0, KL_EINVALID (names the bad entry), KL_ENOMEM. */
/* Item i of a list, now the caller's (the list keeps a NULL there). */
kl_profile *kl__profile_list_take(kl_profile_list *l, size_t i);
int kl__profile_names(char ***names, size_t *n, const char *spec);
void kl__profile_names_free(char **names, size_t n);

/* What the profile is computed from, besides the worker's reply. */
typedef struct kl_profile_inputs {
  const char *set; /* the spec as given */
  double time_us;  /* timed median; 0 when unknown */
  bool has_roofline;
  double bytes, flops;
  double wall_ms; /* the profile request's wall time */
  size_t kernels; /* kernels one launch ran; 0: the reply's range count */
} kl_profile_inputs;

/* From the worker's profile reply (see libkernlab/worker/op_profile.c). */
int kl__profile_from_reply(kl_profile **out, json_object *reply,
                           const kl_profile_inputs *in);
/* Add `part` (one kernel of a launch that ran several) to p, named; takes
 * part, freeing it on failure. */
int kl__profile_add_part(kl_profile *p, kl_profile *part, const char *name);
/* A profile without values, saying why (no counters here). */
int kl__profile_unavailable(kl_profile **out, const kl_profile_inputs *in,
                            const char *backend, const char *why);

/* The stall reasons kernlab counts (smsp__warps_issue_stalled_<r>.sum). */
const char *const *kl__profile_stall_reasons(size_t *n);
/* Add one of Nsight Compute's rule results, copied, at its rank. */
int kl__profile_add_advice(kl_profile *p, const kl_ncu_advice *a);
void kl__ncu_advice_dispose(kl_ncu_advice *a);
/* Say that the value of `name` (a catalog name) came from `source`, a
 * stand-in for what kernlab measures (kl_profile_stand_in). */
int kl__profile_add_stand_in(kl_profile *p, const char *name,
                             const char *source);
/* Give a recorded profile the case's roofline (bytes and FLOPs of its
 * shape) and compute its values and verdict again. */
int kl__profile_set_roofline(kl_profile *p, double bytes, double flops);
/* Name a profile (the kernel it describes); a copy is kept. */
int kl__profile_set_name(kl_profile *p, const char *name);

/* Nsight Compute CSV exports (ncu.c). sniff: the text holds ncu's header
 * line. read: one profile per kernel of a raw or details page, with each
 * kernel's short name and ncu's ID for it (all three arrays and their
 * strings the caller's). @return 0, KL_EINVALID (located), KL_ENOMEM. */
bool kl__ncu_csv_sniff(const char *text);
int kl__ncu_csv_read(kl_profile ***out, char ***names, char ***ids, size_t *n,
                     const char *text, const char *path);

/* ---- the profile itself, shared by profile.c (its life, building it from
 * a reply, reading and writing it) and compute.c (values and verdict) */

typedef struct kl__profile_raw {
  char *name;
  double value;
} kl__profile_raw;

typedef struct kl__profile_stand_in_of {
  char *name, *source;
} kl__profile_stand_in_of;

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
  kl__profile_raw *raw;
  size_t nraw;
  double *values; /* one per catalog entry; NAN when absent */
  kl_bottleneck bottleneck;
  char *name;         /* a part's kernel name, or NULL */
  kl_profile **parts; /* every kernel of a launch that ran several */
  size_t nparts;
  kl_ncu_advice *advice; /* Nsight Compute's rule results, ranked */
  size_t nadvice, cap_advice;
  kl__profile_stand_in_of
      *stand_ins; /* values taken from a stand-in, and which */
  size_t nstand_ins, cap_stand_ins;
};

/* A raw value by its CUPTI or perf name; NULL when not collected. */
const double *kl__profile_raw_get(const kl_profile *p, const char *name);
/* A catalog value by its name; NAN when absent. */
double kl__profile_get(const kl_profile *p, const char *name);
/* The operator-level values (time, roofline) from the inputs. */
void kl__profile_derive_operator(kl_profile *p);
/* Every catalog value from the raw ones, then the verdict. 0 or KL_ENOMEM. */
int kl__profile_compute(kl_profile *p);

#endif /* KL_PROFILE_INTERNAL_H */
