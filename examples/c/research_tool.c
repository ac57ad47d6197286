/* A small research tool on libkernlab: load a case, bench a candidate
 * against the baseline, diagnose recorded metrics with the rules, and
 * print one table.
 *
 *   research_tool CASE [CANDIDATE] [--metrics PROFILE.json]
 *
 * Build against an installed kernlab:
 *   cc research_tool.c $(pkg-config --cflags --libs kernlab)
 * or with CMake: find_package(kernlab) and link kernlab::kernlab. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kernlab/kernlab.h>

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (text && fread(text, 1, (size_t)n, f) == (size_t)n)
    text[n] = '\0';
  else {
    free(text);
    text = NULL;
  }
  fclose(f);
  return text;
}

static int fail(const char *what) {
  const kl_error *e = kl_error_last();
  fprintf(stderr, "%s: %s\n", what, e && e->message ? e->message : "failed");
  return 1;
}

/* The diagnosis of every profile in a recorded file. */
static int diagnose(const char *metrics) {
  char *text = slurp(metrics);
  if (!text) {
    fprintf(stderr, "%s: cannot read\n", metrics);
    return 1;
  }
  kl_profile_list *l = NULL;
  kl_rules *rs = NULL;
  int rc = 0;
  if (kl_profile_list_from_json(&l, text, metrics) < 0 ||
      kl_rules_create(&rs, NULL) < 0 || kl_rules_add_defaults(rs) < 0) {
    rc = fail("rules");
    goto done;
  }
  printf("\n%-12s %-16s %s\n", "shape", "bottleneck", "top finding");
  for (size_t i = 0; i < kl_profile_list_count(l); i++) {
    kl_diagnosis *d = NULL;
    if (kl_rules_evaluate(&d, rs, kl_profile_list_get(l, i)) < 0) {
      rc = fail("evaluate");
      break;
    }
    kl_finding f = KL_FINDING_INIT;
    int fired =
        kl_diagnosis_fired_count(d) > 0 && kl_diagnosis_fired(&f, d, 0) == 0;
    printf("%-12s %-16s %s%s%s\n", kl_profile_list_name(l, i),
           kl_bottleneck_name(kl_diagnosis_bottleneck(d)),
           fired ? f.id : "(none fired)", fired ? ": " : "",
           fired ? f.finding : "");
    kl_diagnosis_free(d);
  }
done:
  kl_rules_free(rs);
  kl_profile_list_free(l);
  free(text);
  return rc;
}

int main(int argc, char **argv) {
  const char *case_path = NULL, *candidate_path = NULL, *metrics = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--metrics") == 0 && i + 1 < argc)
      metrics = argv[++i];
    else if (!case_path)
      case_path = argv[i];
    else if (!candidate_path)
      candidate_path = argv[i];
  }
  if (!case_path) {
    fprintf(stderr, "usage: %s CASE [CANDIDATE] [--metrics FILE]\n", argv[0]);
    return 2;
  }
  if (kl_version_number() != KL_VERSION_NUMBER) {
    fprintf(stderr, "libkernlab %s, headers %s\n", kl_version_string(),
            KL_VERSION);
    return 1;
  }
  kl_case *c = NULL;
  if (kl_case_load(&c, case_path, NULL) < 0) return fail(case_path) + 1;
  char *candidate = candidate_path ? slurp(candidate_path) : NULL;
  if (candidate_path && !candidate) {
    fprintf(stderr, "%s: cannot read\n", candidate_path);
    kl_case_free(c);
    return 2;
  }
  kl_init();
  kl_bench_options o = KL_BENCH_OPTIONS_INIT;
  o.candidate = candidate;
  o.candidate_name = candidate_path;
  o.time.time_cap_ms = 300;
  kl_report *rep = NULL;
  int rc =
      candidate ? kl_bench_compare(&rep, c, &o) : kl_bench_run(&rep, c, &o);
  if (rc < 0) {
    rc = fail("bench");
    goto done;
  }
  printf("%s: %s%s%s\n", kl_case_name(c),
         kl_verdict_name(kl_report_verdict(rep)),
         kl_report_reason(rep) ? ": " : "",
         kl_report_reason(rep) ? kl_report_reason(rep) : "");
  printf("%-12s %12s %12s %24s\n", "shape", candidate ? "baseline us" : "",
         "median us", candidate ? "speedup [95%]" : "");
  for (size_t i = 0; i < kl_report_shape_count(rep); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    if (kl_report_shape(&s, rep, i) < 0 || !s.timed) continue;
    char sp[64] = "";
    if (candidate)
      snprintf(sp, sizeof(sp), "x%.3f [%.3f, %.3f]", s.speedup.speedup,
               s.speedup.ci_low, s.speedup.ci_high);
    char base[32] = "";
    if (candidate) snprintf(base, sizeof(base), "%.2f", s.baseline.median);
    printf("%-12s %12s %12.2f %24s\n", s.name, base, s.time.median, sp);
  }
  rc = kl_report_verdict(rep) == KL_VERDICT_OK ? 0 : 3;
  if (metrics && diagnose(metrics) != 0) rc = 1;
done:
  kl_report_free(rep);
  kl_shutdown();
  free(candidate);
  kl_case_free(c);
  return rc;
}
