/* What kl rules and kl prompt share: rule sets (every diagnostic printed
 * as it comes, located) and recorded profiles read from a file. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Counts the located errors on their way to the caller's callback (or to
 * stderr), so that an error that was not located can be told apart. */
typedef struct relay {
  kl_diag_fn fn;
  void *payload;
  int count;
} relay;

static int relay_diag(const kl_error *e, void *payload) {
  relay *r = payload;
  r->count++;
  if (r->fn) return r->fn(e, r->payload);
  cli_print_error(e);
  return 0;
}

/* A failure that reached no callback (a file that cannot be read) is
 * printed here, unless the caller reports errors itself. */
static int checked(int rc, const relay *r, int before) {
  if (rc < 0 && r->count == before && !r->fn) cli_print_error(kl_error_last());
  return rc;
}

int cli_load_rules(kl_rules **out, const kl_case *c,
                   const char *const *rule_files, size_t nrules,
                   const char *const *skill_dirs, size_t nskills,
                   kl_diag_fn on_diag, void *payload) {
  relay r = {on_diag, payload, 0};
  kl_rules_options opts = KL_RULES_OPTIONS_INIT;
  opts.on_diag = relay_diag;
  opts.payload = &r;
  *out = NULL;
  int rc = checked(kl_rules_create(out, &opts), &r, r.count);
  for (size_t i = 0; rc == 0 && i < nskills; i++)
    rc = checked(kl_rules_add_skills(*out, skill_dirs[i]), &r, r.count);
  if (rc == 0) rc = checked(kl_rules_add_defaults(*out), &r, r.count);
  size_t ncase = c ? kl_case_rule_file_count(c) : 0;
  for (size_t i = 0; *out && i < ncase + nrules; i++) {
    const char *f = i < ncase ? kl_case_rule_file(c, i) : rule_files[i - ncase];
    int e = checked(kl_rules_add_file(*out, f), &r, r.count);
    if (e < 0 && rc == 0) rc = e;
  }
  return rc;
}

/* Does profile i of l match what the user picked? A kernel name matches
 * a profile named by it or a part of that name up to '(' or '<'. */
static bool picked(const kl_profile_list *l, size_t i,
                   const cli_profile_pick *pick) {
  const char *name = kl_profile_list_name(l, i),
             *launch = kl_profile_list_launch(l, i);
  if (pick->shape && (!name || strcmp(name, pick->shape) != 0)) return false;
  if (pick->launch && (!launch || strcmp(launch, pick->launch) != 0))
    return false;
  if (pick->kernel) {
    size_t n = strlen(pick->kernel);
    if (!name || strncmp(name, pick->kernel, n) != 0 ||
        (name[n] && name[n] != '(' && name[n] != '<'))
      return false;
  }
  return true;
}

int cli_read_profiles(kl_profile_list **l, kl_prompt_shape **shapes, size_t *n,
                      const char *path, const cli_profile_pick *pick) {
  static const cli_profile_pick all = {0};
  if (!pick) pick = &all;
  *l = NULL;
  *shapes = NULL;
  *n = 0;
  if (kl_profile_list_read(l, path) < 0) return cli_fail();
  size_t count = kl_profile_list_count(*l);
  if (!(*shapes = calloc(count ? count : 1, sizeof(**shapes)))) {
    cli_error("out of memory");
    return EXIT_FAILED;
  }
  for (size_t i = 0; i < count; i++) {
    if (!picked(*l, i, pick)) continue;
    (*shapes)[*n].name = kl_profile_list_name(*l, i);
    (*shapes)[(*n)++].profile = kl_profile_list_get(*l, i);
  }
  if (*n == 0) {
    cli_error("%s: no profile for %s '%s'", path,
              pick->shape    ? "shape"
              : pick->kernel ? "kernel"
                             : "launch",
              pick->shape    ? pick->shape
              : pick->kernel ? pick->kernel
              : pick->launch ? pick->launch
                             : "");
    return EXIT_BAD_INPUT;
  }
  return EXIT_OK;
}
