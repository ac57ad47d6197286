/* `kl check CASE [--json] [--tolerance [--seed N]]`: load a case, print
 * every error or a summary; with --tolerance, also run the baseline's
 * checks (compiled and run: a device case needs a device) on the seeds N
 * derives (a fresh N, printed, when none is given) and say whether the
 * case's elementwise tolerance would accept a trivial output made from
 * the oracle's (zeros, row means, rows rolled, the transpose). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

typedef struct check_state {
  bool json;
  FILE *errors_json; /* memory stream of the JSON error array */
  size_t count;
} check_state;

static int on_diag(const kl_error *e, void *payload) {
  check_state *st = payload;
  if (!st->json) {
    cli_print_error(e);
  } else {
    FILE *f = st->errors_json;
    fputs(st->count ? ",{" : "{", f);
    fputs("\"path\":", f);
    cli_json_string(f, e->path ? e->path : "");
    fprintf(f, ",\"line\":%d,\"column\":%d,\"message\":", e->line, e->column);
    cli_json_string(f, e->message);
    fputs(",\"text\":", f);
    cli_json_string(f, e->text);
    fputc('}', f);
  }
  st->count++;
  return 0;
}

static void print_param(const kl_case *c, size_t i) {
  kl_param_info p = KL_PARAM_INFO_INIT, prev = KL_PARAM_INFO_INIT;
  kl_case_param(&p, c, i);
  if (i > 0) kl_case_param(&prev, c, i - 1);
  size_t arg = p.struct_type ? strcspn(p.name, ".") : 0;
  if (p.struct_type && (!prev.struct_type || strncmp(prev.name, p.name, arg) ||
                        prev.name[arg] != '.')) /* a struct's first field */
    printf("  %-10.*s %s, by value:\n", (int)arg, p.name, p.struct_type);
  printf("  %-10s %s%s", p.name, kl_dtype_name(p.dtype),
         p.is_pointer ? "*" : "");
  if (p.is_pointer) {
    printf(" %s, count %s", kl_role_name(p.role),
           p.count ? p.count : "from the module");
    if (p.init_text && kl_case_backend(c) != KL_BACKEND_PYTHON)
      printf(", init %s", p.init_text); /* a module's inputs() makes them */
  } else if (p.value) {
    printf(" = %s", p.value);
  } else {
    printf(" (from each shape)");
  }
  putchar('\n');
}

static void print_shape(const kl_case *c, size_t s) {
  kl_vars *vars = NULL;
  char values[256] = "";
  size_t used = 0;
  if (kl_case_shape_vars(&vars, c, s) == 0) {
    for (size_t i = 0; i < kl_vars_count(vars) && used < sizeof(values); i++) {
      kl_value v;
      const char *name = kl_vars_name(vars, i);
      kl_vars_get(&v, vars, name);
      int n = v.is_int
                  ? snprintf(values + used, sizeof(values) - used, "%s%s=%lld",
                             i ? " " : "", name, (long long)v.i)
                  : snprintf(values + used, sizeof(values) - used, "%s%s=%g",
                             i ? " " : "", name, v.f);
      if (n > 0) used += (size_t)n;
    }
  }
  kl_vars_free(vars);
  char bytes[32];
  cli_format_bytes(bytes, sizeof(bytes), (double)kl_case_buffer_bytes(c, s));
  printf("  %-10s weight %-4g %s\n", kl_case_shape_name(c, s),
         kl_case_shape_weight(c, s), values);
  printf("  %-10s buffers %s", "", bytes);
  kl_launch l;
  if (kl_case_launch(&l, c, s) == 0)
    printf(", grid [%lld, %lld, %lld], block [%lld, %lld, %lld], shared %lld",
           (long long)l.grid[0], (long long)l.grid[1], (long long)l.grid[2],
           (long long)l.block[0], (long long)l.block[1], (long long)l.block[2],
           (long long)l.shared_bytes);
  double rb, rf;
  if (kl_case_roofline(&rb, &rf, c, s) == 0) {
    char rbs[32];
    cli_format_bytes(rbs, sizeof(rbs), rb);
    printf(", roofline %s, %.3g flop", rbs, rf);
  }
  putchar('\n');
}

static void print_summary(const kl_case *c) {
  const char *arch = kl_case_arch(c);
  printf("case      %s (%s%s%s)\n", kl_case_name(c),
         kl_backend_name(kl_case_backend(c)), arch ? ", " : "",
         arch ? arch : "");
  bool command = kl_case_backend(c) == KL_BACKEND_COMMAND;
  if (command) {
    kl_buf b = KL_BUF_INIT;
    if (kl_case_command_describe(&b, c) == 0 && b.ptr) fputs(b.ptr, stdout);
    kl_buf_dispose(&b);
  } else {
    printf("kernel    %s in %s\n", kl_case_entry(c), kl_case_kernel_path(c));
  }
  if (kl_case_compiler(c)) printf("compiler  %s\n", kl_case_compiler(c));
  if (kl_case_flags(c)) printf("flags     %s\n", kl_case_flags(c));
  for (size_t i = 0; i < kl_case_include_count(c); i++)
    printf("%-9s -I%s\n", i ? "" : "include", kl_case_include(c, i));
  for (size_t i = 0; i < kl_case_lib_count(c); i++)
    printf("%-9s %s\n", i ? "" : "links", kl_case_lib(c, i));
  if (kl_case_program_path(c))
    printf("brief     %s\n", kl_case_program_path(c));
  kl_reference_info ref = KL_REFERENCE_INFO_INIT;
  kl_case_reference(&ref, c);
  if (command)
    ; /* the command is its own check */
  else if (ref.kind == KL_REFERENCE_HOST)
    printf("reference %s in %s, atol %g, rtol %g\n", ref.function, ref.source,
           ref.atol, ref.rtol);
  else
    printf("reference the baseline's outputs, atol %g, rtol %g\n", ref.atol,
           ref.rtol);
  kl_budget b = KL_BUDGET_INIT;
  kl_case_budget(&b, c);
  printf("objective %s; budget %lld iterations, patience %lld, min gain "
         "%g%%\n",
         kl_objective_name(kl_case_objective(c)), (long long)b.iterations,
         (long long)b.patience, b.min_gain_pct);
  if (kl_case_tunable_count(c) > 0) {
    printf("tunables ");
    for (size_t i = 0; i < kl_case_tunable_count(c); i++) {
      printf("%s %s [", i ? "," : "", kl_case_tunable_name(c, i));
      for (size_t j = 0; j < kl_case_tunable_value_count(c, i); j++)
        printf("%s%s", j ? " " : "", kl_case_tunable_value(c, i, j));
      putchar(']');
    }
    putchar('\n');
  }
  if (!command) {
    printf("params\n");
    for (size_t i = 0; i < kl_case_param_count(c); i++)
      print_param(c, i);
    printf("shapes\n");
    for (size_t s = 0; s < kl_case_shape_count(c); s++)
      print_shape(c, s);
  }
  printf("ok: %s\n", kl_case_dir(c));
}

/* The case's own rule files (rules:), loaded over the defaults as kl rules
 * would; their errors are the case's errors. */
static int check_rule_files(const kl_case *c, check_state *st) {
  if (kl_case_rule_file_count(c) == 0) return 0;
  kl_rules *rs;
  int rc = cli_load_rules(&rs, c, NULL, 0, NULL, 0, on_diag, st);
  kl_rules_free(rs);
  return rc;
}

/* The baseline checked at every shape: for each, the trivial outputs the
 * elementwise tolerance accepts, or nearly (it rejects under 1% of their
 * elements: a wrong answer passes it by the luck of a few large values).
 * Text, or a JSON object into out (when not NULL). *weak: shapes where one
 * is. Returns an exit status; with quiet_failure, a baseline that cannot
 * run here (no device, no torch) is said in a line and is no failure. */
int cli_probe_tolerance(const kl_case *c, uint64_t seed, FILE *out,
                        size_t *weak, bool quiet_failure) {
  bool json = out != NULL;
  *weak = 0;
  if (kl_case_backend(c) == KL_BACKEND_COMMAND) { /* no oracle to run */
    if (json)
      fputs("{\"probed\":false,\"why\":\"a command case checks itself\"}", out);
    else
      printf("tolerance not probed: a command case checks itself\n");
    return EXIT_OK;
  }
  kl_bench_options o = KL_BENCH_OPTIONS_INIT;
  o.checks_only = 1;
  o.seed = seed;
  kl_report *r = NULL;
  if (kl_bench_run(&r, c, &o) < 0) {
    if (!quiet_failure) return cli_fail();
    printf("tolerance not probed: %s (kl check %s --tolerance, where the "
           "case runs, says)\n",
           kl_error_last()->message, kl_case_dir(c));
    return EXIT_OK;
  }
  seed = kl_report_seed(r); /* a fresh one when none was given */
  kl_reference_info ref = KL_REFERENCE_INFO_INIT;
  kl_case_reference(&ref, c);
  if (kl_report_verdict(r) != KL_VERDICT_OK) {
    cli_error("%s: the baseline fails its own check: %s", kl_case_dir(c),
              kl_report_reason(r) ? kl_report_reason(r) : "?");
    kl_report_free(r);
    return EXIT_FAILED;
  }
  *weak = 0;
  size_t measured = 0;
  double suggest = 0;
  if (json)
    fprintf(out, "{\"seed\":%llu,\"atol\":%.6g,\"rtol\":%.6g,\"shapes\":[",
            (unsigned long long)seed, ref.atol, ref.rtol);
  else
    printf("tolerance atol %g, rtol %g, against trivial outputs made from "
           "the oracle's (seed %llu):\n",
           ref.atol, ref.rtol, (unsigned long long)seed);
  for (size_t s = 0; s < kl_report_shape_count(r); s++) {
    kl_shape_result sr = KL_SHAPE_RESULT_INIT;
    kl_report_shape(&sr, r, s);
    bool any = false, first = true;
    if (json) fprintf(out, "%s{\"name\":", s ? "," : "");
    if (json) cli_json_string(out, sr.name);
    if (json) fputs(",\"trivial\":[", out);
    for (int k = 0; kl_trivial_name(k); k++) {
      kl_trivial_info t = KL_TRIVIAL_INFO_INIT;
      if (kl_report_shape_trivial(&t, r, s, k) != 0) continue;
      bool accepted = t.rejected == 0,
           nearly = !accepted && (double)t.rejected < 0.01 * (double)t.elements;
      any |= accepted || nearly;
      if (suggest == 0 || t.ref_rms * 1e-3 < suggest)
        suggest = t.ref_rms * 1e-3;
      if (json) {
        fprintf(out, "%s{\"name\":\"%s\",\"output\":", first ? "" : ",",
                t.name);
        cli_json_string(out, t.output);
        fprintf(out,
                ",\"rel_l2\":%.6g,\"rejected\":%llu,\"elements\":%llu,"
                "\"accepted\":%s,\"nearly_accepted\":%s,\"output_rms\":%.6g}",
                t.rel_l2, (unsigned long long)t.rejected,
                (unsigned long long)t.elements, accepted ? "true" : "false",
                nearly ? "true" : "false", t.ref_rms);
      } else {
        if (first)
          printf("  %-10s %s (RMS %.3g):", sr.name, t.output, t.ref_rms);
        printf("%s %s %s (%llu/%llu outside, relative L2 %.3g)",
               first ? "" : ",", t.name,
               accepted ? "ACCEPTED"
               : nearly ? "nearly accepted"
                        : "rejected",
               (unsigned long long)t.rejected, (unsigned long long)t.elements,
               t.rel_l2);
      }
      first = false;
    }
    if (json)
      fprintf(out, "],\"weak\":%s}", any ? "true" : "false");
    else if (first)
      printf("  %-10s no float output to measure\n", sr.name);
    else
      putchar('\n');
    measured += !first;
    *weak += any;
  }
  if (json) {
    fprintf(out, "],\"weak\":%s", *weak ? "true" : "false");
    if (*weak) fprintf(out, ",\"suggested_atol\":%.2g", suggest);
    fputc('}', out);
  } else if (*weak) {
    printf("tolerance is weak: at %zu of %zu shapes it accepts a trivial "
           "output, or rejects it at under 1%% of its elements, so a wrong "
           "answer like it passes the elementwise check (the scale check, "
           "reference.trivial_margin, still rejects it); atol %.2g (a "
           "thousandth of the smallest output RMS) would not\n",
           *weak, measured, suggest);
  } else if (measured) {
    printf("tolerance separates a right answer from every trivial output at "
           "%zu of %zu shapes\n",
           measured, kl_report_shape_count(r));
  }
  kl_report_free(r);
  return EXIT_OK;
}

/* The case (opt.h's cli_opt_fn): one, and a second named beside it. */
static int case_arg(const char *verb, const char *opt, const char *a,
                    void *target) {
  (void)opt;
  const char **path = target;
  if (a[0] == '-' && a[1])
    return cli_usage_error(verb, "unknown option '%s'", a);
  if (*path)
    return cli_usage_error(verb, "one case at a time ('%s' and '%s')", *path,
                           a);
  *path = a;
  return EXIT_OK;
}

int cmd_check(int argc, char **argv) {
  check_state st = {0};
  const char *path = NULL;
  bool tolerance = false;
  uint64_t seed = 0;
  const cli_opt spec[] = {
      CLI_FLAG("--json", &st.json),
      CLI_FLAG("--tolerance", &tolerance),
      CLI_CALL("--seed", CLI_VALUE_REQUIRED, cli_seed_arg, &seed),
      CLI_WORDS(case_arg, &path),
  };
  int i = 1, ps = cli_parse("check", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (ps != EXIT_OK) return ps;
  if (!path) return cli_usage_error("check", "no case given");
  if (seed && !tolerance)
    return cli_usage_error("check", "--seed is for --tolerance's checks");
  char *errors = NULL;
  size_t errors_len = 0;
  if (st.json && !(st.errors_json = open_memstream(&errors, &errors_len))) {
    cli_error("out of memory");
    return EXIT_FAILED;
  }
  kl_case_options opts = KL_CASE_OPTIONS_INIT;
  opts.on_diag = on_diag;
  opts.payload = &st;
  kl_case *c = NULL;
  int rc = kl_case_load(&c, path, &opts);
  if (rc == 0) rc = check_rule_files(c, &st);
  if (st.errors_json) fclose(st.errors_json);
  int status = EXIT_OK;
  if (rc < 0) {
    const kl_error *e = kl_error_last();
    status = cli_exit_status(rc);
    if (st.json) {
      printf("{\"ok\":false,\"errors\":[%s", errors ? errors : "");
      if (st.count == 0 && e) { /* not a located case error: I/O, not found */
        printf("{\"path\":");
        cli_json_string(stdout, e->path ? e->path : path);
        printf(",\"line\":0,\"column\":0,\"message\":");
        cli_json_string(stdout, e->message);
        printf(",\"text\":");
        cli_json_string(stdout, e->text);
        putchar('}');
      }
      printf("]}\n");
    } else if (st.count == 0) {
      cli_fail();
    } else {
      cli_error("%zu error%s in %s", st.count, st.count == 1 ? "" : "s", path);
    }
  } else if (st.json) {
    kl_buf json = KL_BUF_INIT;
    char *tol = NULL;
    size_t tol_len = 0, accepts = 0;
    FILE *tf = tolerance ? open_memstream(&tol, &tol_len) : NULL;
    if (kl_case_describe_json(&json, c) < 0) {
      status = cli_fail();
    } else if (tolerance && (!tf || (status = cli_probe_tolerance(
                                         c, seed, tf, &accepts, false)))) {
      if (!tf) status = EXIT_FAILED;
    } else {
      if (tf) fclose(tf), tf = NULL;
      printf("{\"ok\":true,\"case\":%s%s%s}\n", json.ptr,
             tolerance ? ",\"tolerance\":" : "", tolerance ? tol : "");
    }
    if (tf) fclose(tf);
    free(tol);
    kl_buf_dispose(&json);
  } else {
    print_summary(c);
    size_t accepts = 0;
    if (tolerance) {
      fflush(stdout);
      status = cli_probe_tolerance(c, seed, NULL, &accepts, false);
    }
  }
  free(errors);
  kl_case_free(c);
  return status;
}
