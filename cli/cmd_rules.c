/* `kl rules`: from metrics to a diagnosis. Profiles the case (as kl
 * profile does) or reads recorded metrics, evaluates the default rules,
 * the case's and the user's on top, and prints per shape the verdict, each
 * fired rule with its finding, action and skill, and what could not be
 * evaluated. `--lint` checks rule files without metrics; `--list` prints
 * the loaded rules and the skill catalog. Exit 2 for bad rule files or
 * metrics, 1 when no metrics could be taken, 3 when the candidate is
 * rejected. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

#define MAX_FILES 32

typedef struct rules_args {
  const char *case_path, *candidate, *shape, *metrics, *kernel, *launch;
  const char *rule_files[MAX_FILES + 1], *skill_dirs[MAX_FILES + 1];
  cli_list rules, skills; /* over rule_files, skill_dirs */
  bool json, lint, list;
} rules_args;

static const char *sev_label(kl_severity s) {
  return s == KL_SEVERITY_HIGH     ? "high  "
         : s == KL_SEVERITY_MEDIUM ? "medium"
                                   : "low   ";
}

static void print_text(const kl_diagnosis *d, const char *label) {
  printf("%s: %s\n", label,
         kl_diagnosis_verdict(d) ? kl_diagnosis_verdict(d) : "no verdict");
  size_t nf = kl_diagnosis_fired_count(d),
         nu = kl_diagnosis_unevaluated_count(d);
  for (size_t i = 0; i < nf; i++) {
    kl_finding f = KL_FINDING_INIT;
    kl_diagnosis_fired(&f, d, i);
    printf("  %s %s: %s\n", sev_label(f.severity), f.id, f.finding);
    printf("         action: %s\n", f.action);
    if (f.skill) printf("         skill: %s\n", f.skill);
    if (f.without)
      printf("         decided without: %s (it holds whatever they are)\n",
             f.without);
    if (f.stand_ins) printf("         stand-ins: %s\n", f.stand_ins);
  }
  if (nf == 0) printf("  no rule fired\n");
  for (size_t i = 0; i < nu; i++) {
    kl_unevaluated u = KL_UNEVALUATED_INIT;
    kl_diagnosis_unevaluated(&u, d, i);
    printf("  not evaluated: %s (%s)\n", u.id, u.reason);
  }
  printf("  %zu fired, %zu passed, %zu not evaluated\n", nf,
         kl_diagnosis_passed_count(d), nu);
  size_t na = kl_diagnosis_advice_count(d), agreed = 0;
  if (na) printf("  Nsight Compute's own advice, by its estimated speedup:\n");
  for (size_t i = 0; i < na; i++) {
    const char *agrees, *covers;
    const kl_ncu_advice *a = kl_diagnosis_advice(d, i, &agrees, &covers);
    char est[48] = "";
    if (!isnan(a->speedup_pct))
      snprintf(est, sizeof(est), " est. %.3g%%%s%s", a->speedup_pct,
               a->speedup_type[0] ? " " : "", a->speedup_type);
    size_t len = strlen(a->text);
    printf("    %s%s %s: %.*s%s\n", a->type, est, a->rule,
           len > 160 ? 157 : (int)len, a->text, len > 160 ? "..." : "");
    if (agrees) {
      printf("         agrees with kernlab: %s\n", agrees);
      agreed++;
    } else if (covers) {
      printf("         names kernlab's %s, not evaluated on these metrics\n",
             covers);
    }
  }
  if (na) printf("  %zu of %zu agree with a fired rule\n", agreed, na);
}

/* One diagnosis per shape's profile. */
static int diagnose(const kl_rules *rs, const kl_prompt_shape *shapes, size_t n,
                    bool json) {
  kl_buf b = KL_BUF_INIT;
  if (json && n > 1) printf("{\"shapes\":[");
  for (size_t i = 0; i < n; i++) {
    kl_diagnosis *d;
    const char *name = shapes[i].name,
               *own = kl_profile_name(shapes[i].profile);
    bool kernel = name && own && strcmp(name, own) == 0; /* an ncu export */
    if (kl_rules_evaluate(&d, rs, shapes[i].profile) < 0) {
      kl_buf_dispose(&b);
      return cli_fail();
    }
    if (json) {
      if (kl_diagnosis_json(&b, d) < 0) {
        kl_diagnosis_free(d);
        kl_buf_dispose(&b);
        return cli_fail();
      }
      /* the shape's (an ncu export's kernel's) name goes first */
      printf("%s{\"%s\":", i ? "," : "", kernel ? "kernel" : "shape");
      if (name)
        cli_json_string(stdout, name);
      else
        printf("null");
      printf(",%.*s", (int)(b.size - 2), b.ptr + 1);
    } else {
      char label[300];
      snprintf(label, sizeof(label), "%s %s", kernel ? "kernel" : "shape",
               name ? name : "?");
      print_text(d, n == 1 && !name ? "profile" : label);
    }
    kl_diagnosis_free(d);
    /* a launch of several kernels: the rules on each of them too */
    size_t parts = kl_profile_part_count(shapes[i].profile);
    if (json) printf(parts ? ",\"kernels\":[" : "}");
    for (size_t k = 0; k < parts; k++) {
      const kl_profile *part = kl_profile_part(shapes[i].profile, k);
      const char *kname = kl_profile_name(part) ? kl_profile_name(part) : "?";
      if (kl_rules_evaluate(&d, rs, part) < 0 ||
          (json && kl_diagnosis_json(&b, d) < 0)) {
        kl_buf_dispose(&b);
        return cli_fail();
      }
      if (json) {
        printf("%s{\"kernel\":", k ? "," : "");
        cli_json_string(stdout, kname);
        printf(",%s", b.ptr + 1);
      } else {
        char label[400];
        if (name)
          snprintf(label, sizeof(label), "shape %s, kernel %s", name, kname);
        else
          snprintf(label, sizeof(label), "kernel %s", kname);
        print_text(d, label);
      }
      kl_diagnosis_free(d);
    }
    if (json && parts) printf("]}");
  }
  if (json) printf(n > 1 ? "]}\n" : "\n");
  kl_buf_dispose(&b);
  return EXIT_OK;
}

/* `kl rules CASE --shape S --metrics EXPORT`: an ncu export's kernels ran
 * the case at shape S, so they get its roofline (an export has none); a
 * kernlab recording keeps its own and is picked by the shape's name. */
static int case_roofline(kl_profile_list *l, kl_prompt_shape *shapes, size_t *n,
                         const kl_case *c, const char *shape) {
  int at = kl_case_shape_find(c, shape);
  double bytes = 0, flops = 0;
  if (at < 0) {
    cli_error("%s: no shape '%s'", kl_case_path(c), shape);
    return EXIT_BAD_INPUT;
  }
  if (kl_case_roofline(&bytes, &flops, c, (size_t)at) < 0) return cli_fail();
  size_t kept = 0;
  for (size_t k = 0; k < *n; k++) {
    size_t i = 0;
    while (i < kl_profile_list_count(l) &&
           kl_profile_list_get(l, i) != shapes[k].profile)
      i++;
    if (kl_profile_list_launch(l, i)) { /* an ncu export's kernel */
      if (kl_profile_list_set_roofline(l, i, bytes, flops) < 0)
        return cli_fail();
    } else if (!shapes[k].name || strcmp(shapes[k].name, shape) != 0) {
      continue;
    }
    shapes[kept++] = shapes[k];
  }
  *n = kept;
  if (kept == 0) {
    cli_error("%s: no profile for shape '%s'", "--metrics", shape);
    return EXIT_BAD_INPUT;
  }
  return EXIT_OK;
}

static int from_metrics(const kl_rules *rs, const kl_case *c,
                        const rules_args *a) {
  kl_profile_list *l;
  kl_prompt_shape *shapes;
  size_t n;
  bool roofline = c && a->shape;
  cli_profile_pick pick = {roofline ? NULL : a->shape, a->kernel, a->launch};
  int status = cli_read_profiles(&l, &shapes, &n, a->metrics, &pick);
  if (status == EXIT_OK && roofline)
    status = case_roofline(l, shapes, &n, c, a->shape);
  if (status == EXIT_OK) status = diagnose(rs, shapes, n, a->json);
  free(shapes);
  kl_profile_list_free(l);
  return status;
}

static int from_case(const kl_rules *rs, const kl_case *c,
                     const rules_args *a) {
  kl_bench_options opts = KL_BENCH_OPTIONS_INIT;
  opts.profile = "standard";
  opts.shape = a->shape;
  kl_report *r;
  int status = cli_profile_run(&r, c, a->candidate, &opts);
  if (status != EXIT_OK) return status;
  size_t n = kl_report_shape_count(r), k = 0;
  kl_prompt_shape *shapes = calloc(n ? n : 1, sizeof(*shapes));
  for (size_t i = 0; shapes && i < n; i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    kl_report_shape(&s, r, i);
    const kl_profile *p = kl_report_profile(r, i);
    if (!p) continue;
    if (kl_profile_bottleneck(p) == KL_BOTTLENECK_UNKNOWN &&
        kl_profile_note(p) && kl_case_on_gpu(c)) {
      cli_error("no counters: %s", kl_profile_note(p));
      status = EXIT_FAILED;
      break;
    }
    shapes[k].name = s.name;
    shapes[k++].profile = p;
  }
  if (!shapes) status = EXIT_FAILED;
  if (status == EXIT_OK) status = diagnose(rs, shapes, k, a->json);
  free(shapes);
  kl_report_free(r);
  return status;
}

static int list(const kl_rules *rs, bool json) {
  kl_buf b = KL_BUF_INIT;
  if (json) printf("{\"rules\":[");
  for (size_t i = 0; i < kl_rules_count(rs); i++) {
    kl_rule_info r = KL_RULE_INFO_INIT;
    kl_rules_get(&r, rs, i);
    if (!json) {
      printf("%-24s %-6s %-10s %s\n", r.id, kl_severity_name(r.severity),
             r.group, r.when);
      continue;
    }
    printf("%s{\"id\":", i ? "," : "");
    cli_json_string(stdout, r.id);
    printf(",\"severity\":\"%s\",\"group\":", kl_severity_name(r.severity));
    cli_json_string(stdout, r.group);
    printf(",\"when\":");
    cli_json_string(stdout, r.when);
    printf(",\"skill\":");
    if (r.skill)
      cli_json_string(stdout, r.skill);
    else
      printf("null");
    printf(",\"path\":");
    cli_json_string(stdout, r.path);
    printf(",\"line\":%d}", r.line);
  }
  if (kl_rules_skill_catalog(&b, rs) < 0) {
    kl_buf_dispose(&b);
    return cli_fail();
  }
  if (json) {
    printf("],\"skills\":[");
    for (size_t i = 0; i < kl_rules_skill_count(rs); i++) {
      kl_skill_info s = KL_SKILL_INFO_INIT;
      kl_rules_skill(&s, rs, i);
      printf("%s{\"id\":", i ? "," : "");
      cli_json_string(stdout, s.id);
      printf(",\"signal\":");
      cli_json_string(stdout, s.signal);
      printf(",\"path\":");
      cli_json_string(stdout, s.path);
      printf("}");
    }
    printf("]}\n");
  } else {
    printf("\nskills:\n%s", b.ptr ? b.ptr : "");
  }
  kl_buf_dispose(&b);
  return EXIT_OK;
}

/* --lint: each file on its own, over the defaults, every error printed. */
static int lint(const rules_args *a) {
  int status = EXIT_OK;
  for (size_t i = 0; i < a->rules.n; i++) {
    kl_rules *rs;
    int st =
        cli_exit_status(cli_load_rules(&rs, NULL, &a->rule_files[i], 1,
                                       a->skill_dirs, a->skills.n, NULL, NULL));
    if (st == EXIT_OK) {
      printf("%s: ok\n", a->rule_files[i]);
    } else if (status == EXIT_OK || st == EXIT_BAD_INPUT) {
      status = st;
    }
    kl_rules_free(rs);
  }
  return status;
}

/* A word (opt.h's cli_opt_fn): after --lint a rule file, else the case. */
static int rules_word(const char *verb, const char *opt, const char *w,
                      void *target) {
  (void)opt;
  rules_args *a = target;
  if (a->lint && !(w[0] == '-' && w[1]) && a->rules.n < MAX_FILES) {
    a->rule_files[a->rules.n++] = w; /* kl rules --lint FILE... */
    a->rule_files[a->rules.n] = NULL;
    return EXIT_OK;
  }
  return cli_positional(verb, "case", &a->case_path, w);
}

static int parse_args(rules_args *a, int argc, char **argv) {
  a->rules = (cli_list){a->rule_files, 0, MAX_FILES, " options"};
  a->skills = (cli_list){a->skill_dirs, 0, MAX_FILES, " options"};
  const cli_opt spec[] = {
      CLI_FLAG("--json", &a->json),
      CLI_FLAG("--list", &a->list),
      CLI_FLAG("--lint", &a->lint),
      CLI_STRING("--candidate", NULL, CLI_VALUE_REQUIRED, &a->candidate),
      CLI_STRING("--shape", NULL, CLI_VALUE_REQUIRED, &a->shape),
      CLI_STRING("--metrics", NULL, CLI_VALUE_REQUIRED, &a->metrics),
      CLI_LIST("--rules", NULL, CLI_VALUE_REQUIRED, &a->rules),
      CLI_LIST("--skills", NULL, CLI_VALUE_REQUIRED, &a->skills),
      CLI_STRING("--kernel", NULL, CLI_VALUE_REQUIRED, &a->kernel),
      CLI_STRING("--launch", NULL, CLI_VALUE_REQUIRED, &a->launch),
      CLI_WORDS(rules_word, a),
  };
  int i = 1, st = cli_parse("rules", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (st != EXIT_OK) return st;
  if (a->lint && a->rules.n == 0)
    return cli_usage_error("rules", "--lint needs rule files");
  if (!a->lint && !a->list && !a->case_path && !a->metrics)
    return cli_usage_error("rules", "give a case, or --metrics FILE");
  if ((a->kernel || a->launch) && !a->metrics)
    return cli_usage_error("rules", "--kernel and --launch pick from "
                                    "--metrics FILE");
  if (a->candidate && (a->metrics || !a->case_path))
    return cli_usage_error("rules", "--candidate needs a case to profile "
                                    "(and no --metrics)");
  return EXIT_OK;
}

int cmd_rules(int argc, char **argv) {
  rules_args a = {0};
  int status = parse_args(&a, argc, argv);
  if (status != EXIT_OK) return status;
  if (a.lint) return lint(&a);
  kl_case *c = NULL;
  kl_rules *rs = NULL;
  if (a.case_path && kl_case_load(&c, a.case_path, NULL) < 0) return cli_fail();
  if ((status = cli_exit_status(cli_load_rules(&rs, c, a.rule_files, a.rules.n,
                                               a.skill_dirs, a.skills.n, NULL,
                                               NULL))) != EXIT_OK)
    goto done;
  if (a.list)
    status = list(rs, a.json);
  else if (a.metrics)
    status = from_metrics(rs, c, &a);
  else
    status = from_case(rs, c, &a);
done:
  kl_rules_free(rs);
  kl_case_free(c);
  return status;
}
