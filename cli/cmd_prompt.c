/* `kl prompt CASE`: print exactly what would be sent to a model, the
 * system block then the user block, each between marker lines, and the
 * size of every section against its budget. Profiles (for the verdict,
 * findings, fired skills, metrics and times) come from recorded metrics
 * (--metrics, the output of kl profile --json); without them the prompt
 * says there is no profile yet. As in kl run, the system block ends with
 * the newest entries of the case's devlog.md and the user block with the
 * knowledge base's Prior art for the case and the fired rules. Exit 2 for
 * a bad case, rules, metrics or knowledge entry. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

#define MAX_FILES 32

/* What kl run adds to its prompts: the tail of the case's devlog and the
 * knowledge entries that match the rules fired on the given profiles (the
 * same budgets as the run's). */
static int run_context(kl_buf *devlog, kl_buf *art, const kl_case *c,
                       const kl_rules *rs, const kl_prompt_shape *shapes,
                       size_t n) {
  const char *fired[64];
  size_t nf = 0;
  kl_diagnosis *d[16] = {0};
  size_t nd = 0;
  kl_knowledge *k = NULL;
  int rc = kl_history_devlog(devlog, c, 3200);
  for (size_t i = 0; rc == 0 && rs && i < n && nd < 16; i++) {
    if (!shapes[i].profile ||
        kl_rules_evaluate(&d[nd], rs, shapes[i].profile) < 0)
      continue; /* no diagnosis at this shape: nothing fired */
    for (size_t j = 0; j < kl_diagnosis_fired_count(d[nd]) && nf < 64; j++) {
      kl_finding f = KL_FINDING_INIT;
      if (kl_diagnosis_fired(&f, d[nd], j) == 0 && f.id) fired[nf++] = f.id;
    }
    nd++;
  }
  if (rc == 0) rc = kl_knowledge_load(&k, c);
  if (rc == 0) rc = kl_knowledge_prior_art(art, k, c, fired, nf, 4000);
  kl_knowledge_free(k);
  for (size_t i = 0; i < nd; i++)
    kl_diagnosis_free(d[i]);
  return rc;
}

/* --iteration N (opt.h's cli_opt_fn) */
static int iteration_arg(const char *verb, const char *opt, const char *val,
                         void *target) {
  (void)opt;
  char *end;
  long n = strtol(val, &end, 10);
  if (*end || n < 1 || n > 1000000)
    return cli_usage_error(verb,
                           "--iteration wants a number >= 1, "
                           "not '%s'",
                           val);
  *(int *)target = (int)n;
  return EXIT_OK;
}

int cmd_prompt(int argc, char **argv) {
  const char *path = NULL, *metrics = NULL, *best = NULL;
  const char *rule_files[MAX_FILES + 1];
  bool json = false;
  int iteration = 1;
  cli_list rules = {rule_files, 0, MAX_FILES, NULL};
  const cli_opt spec[] = {
      CLI_FLAG("--json", &json),
      CLI_STRING("--metrics", NULL, CLI_VALUE_REQUIRED, &metrics),
      CLI_LIST("--rules", NULL, CLI_VALUE_REQUIRED, &rules),
      CLI_CALL("--iteration", CLI_VALUE_REQUIRED, iteration_arg, &iteration),
      CLI_STRING("--best", NULL, CLI_VALUE_REQUIRED, &best),
      CLI_ARG("case", &path),
  };
  int i = 1, st = cli_parse("prompt", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (st != EXIT_OK) return st;
  if (!path) return cli_usage_error("prompt", "no case given");
  kl_case *c = NULL;
  kl_rules *rs = NULL;
  kl_profile_list *l = NULL;
  kl_prompt *p = NULL;
  kl_prompt_shape *shapes = NULL;
  char *best_code = NULL;
  kl_buf out = KL_BUF_INIT, devlog = KL_BUF_INIT, art = KL_BUF_INIT;
  int status = EXIT_OK;
  if (kl_case_load(&c, path, NULL) < 0) {
    status = cli_fail();
    goto done;
  }
  if ((status = cli_exit_status(cli_load_rules(
           &rs, c, rule_files, rules.n, NULL, 0, NULL, NULL))) != EXIT_OK)
    goto done;
  if (best && (status = cli_read_file(&best_code, best)) != EXIT_OK) goto done;
  kl_prompt_inputs in = KL_PROMPT_INPUTS_INIT;
  in.c = c;
  in.rules = rs;
  in.best_code = best_code;
  in.iteration = iteration;
  if (metrics) {
    size_t n;
    if ((status = cli_read_profiles(&l, &shapes, &n, metrics, NULL)) != EXIT_OK)
      goto done;
    in.shapes = shapes;
    in.nshapes = n;
  }
  if (run_context(&devlog, &art, c, rs, in.shapes, in.nshapes) < 0) {
    status = cli_fail();
    goto done;
  }
  in.devlog = devlog.size ? devlog.ptr : NULL;
  in.prior_art = art.size ? art.ptr : NULL;
  if (kl_prompt_build(&p, &in) < 0 || (json && kl_prompt_json(&out, p) < 0)) {
    status = cli_fail();
    goto done;
  }
  if (json) {
    printf("%s\n", out.ptr);
    goto done;
  }
  printf("=== system block (stable within a run; cacheable) ===\n%s",
         kl_prompt_system(p));
  printf("=== user block (iteration %d) ===\n%s", iteration, kl_prompt_user(p));
  printf("=== sizes (tokens estimated as characters / 4) ===\n");
  size_t total = 0;
  for (size_t i = 0; i < kl_prompt_section_count(p); i++) {
    kl_prompt_section_info s = KL_PROMPT_SECTION_INFO_INIT;
    kl_prompt_section(&s, p, i);
    total += s.tokens;
    printf("%-6s %-14s %7zu chars %6zu tokens of %6zu%s\n",
           s.system ? "system" : "user", s.name, s.chars, s.tokens, s.budget,
           s.cut_chars           ? " (cut to fit)"
           : s.tokens > s.budget ? " (over: never cut)"
                                 : "");
  }
  printf("total  %29zu tokens\n", total);
done:
  kl_buf_dispose(&out);
  kl_buf_dispose(&devlog);
  kl_buf_dispose(&art);
  free(shapes);
  free(best_code);
  kl_prompt_free(p);
  kl_profile_list_free(l);
  kl_rules_free(rs);
  kl_case_free(c);
  return status;
}
