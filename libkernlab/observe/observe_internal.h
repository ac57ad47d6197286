/* Observations in memory, shared by the observe module's files: the
 * loader (observation.c), the bucketing (configs.c), the case writer
 * (case_from.c) and export (export.c). */
#ifndef KL_OBSERVE_INTERNAL_H
#define KL_OBSERVE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "kernlab/observe.h"
#include <stdio.h>

#include "../core/internal.h"

typedef struct kl__obs_arg {
  uint32_t offset, size;
  uint8_t *bytes;      /* size bytes, NULL when unreadable */
  bool pointer;        /* the driver knew the value as an address */
  uint64_t alloc_left; /* bytes from it to its allocation's end */
  /* a larger argument (a struct by value): its 8-byte words that held
   * device addresses, at offsets within it, with the bytes left */
  size_t nwords;
  uint32_t *word_at;
  uint64_t *word_left;
} kl__obs_arg;

typedef struct kl__obs_launch {
  size_t kernel;
  int64_t pid; /* the process that launched it (0: not recorded) */
  int64_t grid[3], block[3], shared;
  double us; /* GPU duration; NaN when there was no record */
  bool args_known;
  size_t nargs;
  kl__obs_arg *args;
} kl__obs_launch;

typedef struct kl__obs_kernel {
  char *name, *demangled;
  /* from its source (kl_observation_read_source): each parameter's name,
   * and its size when it is a float or double (else 0); NULL: not known */
  char (*param_names)[64];
  unsigned char *param_float;
  size_t nparams;
  bool matched;
  int64_t launches, recorded;
  double total_us; /* every launch, recorded in full or not */
} kl__obs_kernel;

struct kl_observation {
  char *path;
  char *device;         /* the first device's name, or NULL */
  char *cc;             /* its compute capability ("9.0"), or NULL */
  char *program;        /* the program's argv joined by spaces, or NULL */
  char *program_cwd;    /* the folder it ran in, or NULL */
  double dram_peak_gbs; /* the first device's DRAM peak, 0 unknown */
  char **libraries;     /* the CUDA libraries its processes had mapped */
  size_t nlibraries;
  int exit_code;
  char *output;
  kl__obs_kernel *kernels;
  size_t nkernels;
  kl__obs_launch *launches;
  size_t nlaunches;
  /* "python_launches": the Triton calls of Python processes, by
   * configuration (checked when read; NULL when the file has none) */
  struct json_object *python;
};

/* One representative configuration: a bucket (or its fast or slow half). */
typedef struct kl__obs_config {
  const kl__obs_launch *first; /* a launch of it, for geometry and args */
  const char *half;            /* "", "fast" or "slow" */
  int64_t launches;
  double total_us, share, p25, p50, p95;
} kl__obs_config;

typedef struct kl__obs_configs {
  size_t kernel;
  kl__obs_config *all; /* every bucket, largest share first */
  size_t nall, nkept;  /* the first nkept are the representatives */
  double kept_share;   /* share of the kernel's recorded time they cover */
  double recorded_us;  /* the kernel's time over its recorded launches */
  int64_t untimed;     /* recorded launches without a duration */
} kl__obs_configs;

/* The kernel opts names (exact name, else regex), or the recorded one with
 * the most time; KL_ENOTFOUND / KL_EINVALID (error set). */
int kl__obs_pick_kernel(size_t *out, const kl_observation *o, const char *name,
                        bool recorded_only);
/* Whether a kernel is the one `name` names: its mangled name, or in its
 * demangled one the instantiation, the function or its unqualified name
 * (spaces aside). */
bool kl__obs_same_name(const kl__obs_kernel *k, const char *name);
/* A new file `name` in the case folder `dir` (case_from_python.c; both
 * case writers use it): KL_EEXISTS rather than overwrite. */
int kl__obs_write_new(const char *dir, const char *name, const char *text,
                      size_t n);
/* Does the observation hold Triton calls of `kernel` (any, when NULL)? */
bool kl__obs_has_python(const kl_observation *o, const char *kernel);
/* kl_case_from_observation for a Triton kernel the Python observer
 * recorded (case_from_python.c): a python case. */
int kl__case_from_python(kl_buf *report, const kl_observation *o,
                         const kl_case_from_observation_options *opts);
int kl__obs_configs_make(kl__obs_configs *out, const kl_observation *o,
                         const kl_configs_options *opts);
void kl__obs_configs_dispose(kl__obs_configs *c);
/* The share of the kernel's recorded time the first k buckets cover. */
double kl__obs_cover(const kl__obs_configs *c, size_t k);
/* The little-endian bytes of an argument as an unsigned value. */
uint64_t kl__obs_arg_u64(const kl__obs_arg *a);
/* The same, sign-extended from the argument's size. */
int64_t kl__obs_arg_i64(const kl__obs_arg *a);

/* source_types.c: type aliases and local headers of a kernel's source. */
typedef struct kl__src_types kl__src_types;
/* include_dirs (NULL-ended, may be NULL): the program's -I folders; an
 * #include found in one marks it used (kl__src_types_dir_used). */
int kl__src_types_read(kl__src_types **out, const char *source,
                       const char *const *defines,
                       const char *const *include_dirs);
const char *kl__src_types_alias(const kl__src_types *t, const char *name);
/* The members of struct (or class) NAME, the text between its braces as
 * the source defines it (comments blank); NULL when it defines none. */
const char *kl__src_types_struct(const kl__src_types *t, const char *name);
size_t kl__src_types_include_count(const kl__src_types *t);
const char *kl__src_types_include(const kl__src_types *t, size_t i);
bool kl__src_types_dir_used(const kl__src_types *t, size_t i);
void kl__src_types_free(kl__src_types *t);

/* The takers of this module's options structs (KL__OPTIONS_FUNCTIONS,
 * beside each init function): a caller's struct, whatever its version,
 * over this library's defaults. */
int kl__observe_options_take(kl_observe_options *full,
                             const kl_observe_options *given);
int kl__configs_options_take(kl_configs_options *full,
                             const kl_configs_options *given);
int kl__case_from_observation_options_take(
    kl_case_from_observation_options *full,
    const kl_case_from_observation_options *given);

#endif /* KL_OBSERVE_INTERNAL_H */
