/* `kl profile`: check, time, then read hardware counters and print them by
 * group under the bottleneck verdict. `--list-metrics` prints the catalog.
 * Exit 1 when this machine has no device counters (timing is still
 * printed); missing host counters are only a note. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static const char *const groups[] = {"roofline",  "memory",      "warp_stalls",
                                     "occupancy", "instruction", "launch",
                                     "host",      "raw"};
#define NGROUPS (sizeof(groups) / sizeof(groups[0]))

typedef struct print_ctx {
  const char *group;
  bool ncu;
  int printed;
} print_ctx;

static int print_metric(const kl_metric_info *m, double v, void *ud) {
  print_ctx *pc = ud;
  if (strcmp(m->group, pc->group) != 0) return 0;
  if (pc->printed++ == 0) printf("  %s\n", pc->group);
  const char *name = pc->ncu && m->ncu_name ? m->ncu_name : m->name;
  printf("    %-44s %14.6g %s\n", name, v, m->unit);
  return 0;
}

static void print_profile(const kl_profile *p, bool ncu) {
  size_t parts = kl_profile_part_count(p);
  if (parts)
    printf("  %zu kernels in the launch; the metrics below are the longest "
           "one's:\n",
           parts);
  for (size_t i = 0; i < parts; i++) {
    const kl_profile *k = kl_profile_part(p, i);
    printf("    %-40s %10.3f us  %s\n",
           kl_profile_name(k) ? kl_profile_name(k) : "?", kl_profile_time_us(k),
           kl_profile_verdict(k) ? kl_profile_verdict(k) : "");
  }
  printf("  verdict: %s\n", kl_profile_verdict(p));
  for (size_t g = 0; g < NGROUPS; g++) {
    print_ctx pc = {groups[g], ncu, 0};
    kl_profile_foreach(p, print_metric, &pc);
  }
}

static int list_metrics(bool json) {
  size_t n;
  const kl_metric_info *cat = kl_metric_catalog(&n);
  if (json) {
    printf("[");
    for (size_t i = 0; i < n; i++) {
      printf("%s{\"name\":", i ? "," : "");
      cli_json_string(stdout, cat[i].name);
      printf(",\"ncu_name\":");
      if (cat[i].ncu_name)
        cli_json_string(stdout, cat[i].ncu_name);
      else
        printf("null");
      printf(",\"group\":\"%s\",\"unit\":", cat[i].group);
      cli_json_string(stdout, cat[i].unit);
      printf(",\"source\":\"%s\",\"quick\":%s,\"standard\":%s,"
             "\"description\":",
             cat[i].source,
             cat[i].sets & KL_METRIC_SET_QUICK ? "true" : "false",
             cat[i].sets & KL_METRIC_SET_STANDARD ? "true" : "false");
      cli_json_string(stdout, cat[i].description);
      printf("}");
    }
    printf("]\n");
    return EXIT_OK;
  }
  printf("%-30s %-11s %-8s %-5s %s\n", "name", "group", "source", "sets",
         "Nsight Compute name / description");
  for (size_t i = 0; i < n; i++) {
    const char *sets = cat[i].sets & KL_METRIC_SET_QUICK      ? "q s"
                       : cat[i].sets & KL_METRIC_SET_STANDARD ? "s"
                                                              : "";
    if (strcmp(cat[i].source, "cupti") != 0) sets = "";
    printf("%-30s %-11s %-8s %-5s %s\n%57s%s\n", cat[i].name, cat[i].group,
           cat[i].source, sets, cat[i].ncu_name ? cat[i].ncu_name : "-", "",
           cat[i].description);
  }
  return EXIT_OK;
}

static int print_json(const kl_report *r, bool ncu) {
  kl_buf b = KL_BUF_INIT;
  printf("{\"verdict\":\"%s\",\"reason\":",
         kl_verdict_name(kl_report_verdict(r)));
  if (kl_report_reason(r))
    cli_json_string(stdout, kl_report_reason(r));
  else
    printf("null");
  kl_device_info dev = KL_DEVICE_INFO_INIT;
  if (kl_report_device(&dev, r) == 0) {
    printf(",\"device\":{\"name\":");
    cli_json_string(stdout, dev.name);
    printf(",\"sms\":%d,\"max_sm_clock_mhz\":%.0f}", dev.sms,
           dev.max_sm_clock_mhz);
  }
  printf(",\"shapes\":[");
  for (size_t i = 0; i < kl_report_shape_count(r); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    kl_report_shape(&s, r, i);
    printf("%s{\"name\":", i ? "," : "");
    cli_json_string(stdout, s.name);
    if (s.timed)
      printf(",\"median_us\":%.6g,\"ci_low_us\":%.6g,\"ci_high_us\":%.6g",
             s.time.median, s.time.ci_low, s.time.ci_high);
    const kl_profile *p = kl_report_profile(r, i);
    if (p) {
      if (kl_profile_json(&b, p, ncu ? KL_PROFILE_NCU_NAMES : 0) < 0) {
        kl_buf_dispose(&b);
        return cli_fail();
      }
      printf(",\"profile\":%s", b.ptr);
    }
    printf("}");
  }
  printf("]}\n");
  kl_buf_dispose(&b);
  return EXIT_OK;
}

int cmd_profile(int argc, char **argv) {
  const char *path = NULL, *candidate_path = NULL;
  bool json = false, ncu = false, list = false, events = false;
  kl_bench_options opts = KL_BENCH_OPTIONS_INIT;
  opts.profile = "standard";
  const cli_opt spec[] = {
      CLI_FLAG("--json", &json),
      CLI_FLAG("--json-events", &events),
      CLI_FLAG("--ncu-names", &ncu),
      CLI_FLAG("--list-metrics", &list),
      CLI_STRING("--candidate", NULL, CLI_VALUE_REQUIRED, &candidate_path),
      CLI_STRING("--shape", NULL, CLI_VALUE_REQUIRED, &opts.shape),
      CLI_STRING("--set", NULL, CLI_VALUE_REQUIRED, &opts.profile),
      CLI_ARG("case", &path),
  };
  int i = 1, st = cli_parse("profile", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (st != EXIT_OK) return st;
  if (list) return list_metrics(json);
  if (!path) return cli_usage_error("profile", "no case given");
  kl_case *c = NULL;
  kl_report *r = NULL;
  int status = EXIT_OK;
  if (kl_case_load(&c, path, NULL) < 0) {
    status = cli_fail();
    goto done;
  }
  if (events) {
    cli_events_begin();
    opts.on_phase = cli_events_phase;
    opts.phase_payload = (void *)"profile";
  }
  if ((status = cli_profile_run(&r, c, candidate_path, &opts)) != EXIT_OK)
    goto done;
  if (events) cli_events_report("profile", r, false);
  if (json && (status = print_json(r, ncu)) != EXIT_OK) goto done;
  for (size_t i = 0; i < kl_report_shape_count(r); i++) {
    kl_shape_result s = KL_SHAPE_RESULT_INIT;
    kl_report_shape(&s, r, i);
    const kl_profile *p = kl_report_profile(r, i);
    if (!json) {
      printf("shape %s: %.4g us [%.4g, %.4g] (cold, %s)", s.name, s.time.median,
             s.time.ci_low, s.time.ci_high,
             kl_report_device(&(kl_device_info)KL_DEVICE_INFO_INIT, r) == 0
                 ? "CUPTI"
                 : "host clock");
      if (p && kl_profile_passes(p))
        printf(", %zu passes", kl_profile_passes(p));
      printf("\n");
      if (p) print_profile(p, ncu);
    }
    /* no device counters is a failure with a reason; no host counters
     * (a VM without a PMU) is only a note */
    if (p && kl_profile_bottleneck(p) == KL_BOTTLENECK_UNKNOWN &&
        kl_profile_note(p) && i == 0) {
      bool device = kl_case_on_gpu(c);
      cli_error("%s%s",
                device ? "no counters: " : "note: ", kl_profile_note(p));
      if (device) status = EXIT_FAILED;
    }
  }
  kl_device_info dev = KL_DEVICE_INFO_INIT;
  if (!json && kl_report_device(&dev, r) == 0)
    printf("device %s (%d SMs)\n", dev.name, dev.sms);
done:
  kl_report_free(r);
  kl_case_free(c);
  return status;
}

int cli_profile_run(kl_report **out, const kl_case *c,
                    const char *candidate_path, kl_bench_options *opts) {
  char *candidate = NULL;
  int status = EXIT_OK;
  *out = NULL;
  if (candidate_path) {
    if ((status = cli_read_file(&candidate, candidate_path)) != 0)
      return status;
    const char *slash = strrchr(candidate_path, '/');
    opts->candidate = candidate;
    opts->candidate_name = slash ? slash + 1 : candidate_path;
  }
  /* a short timing is enough for the roofline numbers */
  opts->time.target_rel_ci = 0.01;
  opts->time.time_cap_ms = 300;
  if (kl_bench_run(out, c, opts) < 0) {
    status = cli_fail();
  } else if (kl_report_verdict(*out) != KL_VERDICT_OK) {
    cli_error("candidate rejected: %s: %s",
              kl_verdict_name(kl_report_verdict(*out)), kl_report_reason(*out));
    status = EXIT_REJECTED;
  }
  opts->candidate = NULL;
  free(candidate);
  if (status != EXIT_OK) {
    kl_report_free(*out);
    *out = NULL;
  }
  return status;
}
