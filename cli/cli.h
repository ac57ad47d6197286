/* The kl CLI: one file per verb, each calling only the public API.
 * Exit statuses are part of the interface (see `kl help`). */
#ifndef KL_CLI_H
#define KL_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "kernlab/kernlab.h"

enum {
  EXIT_OK = 0,        /* success */
  EXIT_FAILED = 1,    /* runtime failure: toolchain, I/O, device */
  EXIT_BAD_INPUT = 2, /* usage, case, rules */
  EXIT_REJECTED = 3   /* candidate rejected */
};

typedef struct cli_verb {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary; /* one line for `kl help` */
  const char *usage;   /* "kl check CASE [--json]" */
  const char *help;    /* the rest of `kl help VERB` */
} cli_verb;

int cmd_check(int argc, char **argv);
int cmd_new(int argc, char **argv);
int cmd_harness(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_rules(int argc, char **argv);
int cmd_prompt(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_best(int argc, char **argv);
int cmd_evaluate(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_knowledge(int argc, char **argv);
int cmd_webhook(int argc, char **argv);
int cmd_observe(int argc, char **argv);
int cmd_case(int argc, char **argv);
int cmd_serve_bench(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_propose(int argc, char **argv);
/* kl check --tolerance's probe of a loaded case (cmd_check.c): text on
 * stdout, or a JSON object into out; *weak: the shapes where the
 * tolerance accepts a trivial output. The checks' seeds derive from seed
 * (0: a fresh one), which is printed so that the probe can be repeated.
 * quiet_failure: a baseline that cannot run here is a line, not a failure
 * (kl case from-kernelbench). */
int cli_probe_tolerance(const kl_case *c, uint64_t seed, FILE *out,
                        size_t *weak, bool quiet_failure);
/* Skills from skill_dirs, the default rules, the case's rule files (c may
 * be NULL), then rule_files; every user file is read even after one failed,
 * so all errors show at once. Located errors go to on_diag (NULL: printed),
 * an unlocated one is printed when on_diag is NULL. Returns 0 or the first
 * error's code. */
int cli_load_rules(kl_rules **out, const kl_case *c,
                   const char *const *rule_files, size_t nrules,
                   const char *const *skill_dirs, size_t nskills,
                   kl_diag_fn on_diag, void *payload);
/* Which recorded profiles to take: by shape, by kernel name (up to its
 * '(' or '<'), by ncu's launch ID; NULL fields take all. */
typedef struct cli_profile_pick {
  const char *shape, *kernel, *launch;
} cli_profile_pick;
/* Recorded profiles from a file (kl profile --json, a profile, a flat
 * export, an ncu CSV export or .ncu-rep), as (name, profile) pairs
 * borrowed from *l, those `pick` picks (NULL: all). The caller frees
 * *shapes and *l, also on failure. Returns the exit status. */
int cli_read_profiles(kl_profile_list **l, kl_prompt_shape **shapes, size_t *n,
                      const char *path, const cli_profile_pick *pick);
/* Check, time briefly and profile a case (opts->profile names the set),
 * as kl profile does; prints why it failed. Returns the exit status. */
int cli_profile_run(kl_report **out, const kl_case *c,
                    const char *candidate_path, kl_bench_options *opts);
/* --json-events (events.c): one JSON object a line on stderr. Begin sets
 * the clock the events' "t" counts from; phase is a kl_bench_phase_fn
 * whose payload is the verb's name; report writes a "shape" event per
 * shape and the "verdict"; run is the run's kl_run_event. */
void cli_events_begin(void);
void cli_events_phase(const char *phase, void *verb);
void cli_events_report(const char *verb, const kl_report *r, bool compare);
void cli_events_run(const kl_run_event *e);
/* Read a whole file into *out (malloc'd); prints the error and returns the
 * exit status on failure, 0 on success. */
int cli_read_file(char **out, const char *path);

/* Print `kl help VERB` to `out`; false when there is no such verb. */
bool cli_help_verb(FILE *out, const cli_verb *verbs, size_t nverbs,
                   const char *verb);
/* `kl help [VERB]` over the verbs main hands it. */
int cli_help(const cli_verb *verbs, size_t nverbs, int argc, char **argv);
/* The verbs a usage error names the usage of (main sets them first). */
void cli_set_verbs(const cli_verb *verbs, size_t n);
/* "kl: usage: …" plus a pointer to `kl help VERB`; returns EXIT_BAD_INPUT. */
int cli_usage_error(const char *verb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Colour only on a terminal, never with NO_COLOR. */
bool cli_color(FILE *f);
/* "kl: message" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A library error: its message (located), then its snippet, on stderr. */
void cli_print_error(const kl_error *e);
/* The library's last error on stderr, and the exit status for its code. */
int cli_fail(void);
/* Exit status for a library code. */
int cli_exit_status(int code);
/* The exit status for a failed open of a path (errno), as the library's
 * codes: missing, a folder, refused before any work -> 2; refused
 * mid_work or any other failure -> 1. (The CLI sees only the public API,
 * so the table is kl__errno_code's, in exit statuses.) */
int cli_path_status(int err, bool mid_work);
/* A JSON string literal on `out`. */
void cli_json_string(FILE *out, const char *s);
/* "50.3 MiB" */
void cli_format_bytes(char *buf, size_t n, double bytes);

#endif /* KL_CLI_H */
