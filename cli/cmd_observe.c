/* `kl observe`, `kl case from-observation` and `kl export`: from a real
 * program to a case and back. Commands given as one string (--verify,
 * --observe) are split into words here, with '' and "" quoting and
 * backslash escapes, and run without a shell. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Parse a number option; false (after printing) when it is not one. */
static bool number(const char *verb, const char *opt, const char *val,
                   double lo, double hi, double *out) {
  char *end = NULL;
  errno = 0;
  double v = val ? strtod(val, &end) : 0;
  if (!val || !*val || *end || errno || v < lo || v > hi) {
    cli_usage_error(verb, "%s needs a number from %g to %g", opt, lo, hi);
    return false;
  }
  *out = v;
  return true;
}

/* Options shared by kl observe and kl case from-observation. */
static int configs_option(const char *verb, kl_configs_options *c, char **argv,
                          int argc, int *i) {
  const char *a = argv[*i], *val = *i + 1 < argc ? argv[*i + 1] : NULL;
  double v;
  if (strcmp(a, "--share") == 0) {
    if (!number(verb, a, val, 0.01, 1, &v)) return EXIT_BAD_INPUT;
    c->share = v;
  } else if (strcmp(a, "--top") == 0) {
    if (!number(verb, a, val, 1, 256, &v)) return EXIT_BAD_INPUT;
    c->max_configs = (int)v;
  } else if (strcmp(a, "--split") == 0) {
    if (!number(verb, a, val, 1, 1e6, &v)) return EXIT_BAD_INPUT;
    c->split_ratio = v;
  } else {
    return -1; /* not one of these */
  }
  (*i)++;
  return EXIT_OK;
}

int cmd_observe(int argc, char **argv) {
  kl_observe_options o = KL_OBSERVE_OPTIONS_INIT;
  kl_configs_options co = KL_CONFIGS_OPTIONS_INIT;
  const char *show = NULL, *source = NULL;
  bool json = false;
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    double v;
    int st = configs_option("observe", &co, argv, argc, &i);
    if (st == EXIT_OK) continue;
    if (st > 0) return st;
    if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 ||
               strcmp(a, "--kernel") == 0 || strcmp(a, "--show") == 0 ||
               strcmp(a, "--source") == 0) {
      if (!val || !val[0])
        return cli_usage_error("observe", "%s needs a value", a);
      if (strcmp(a, "--kernel") == 0)
        o.kernel = co.kernel = val;
      else if (strcmp(a, "--show") == 0)
        show = val;
      else if (strcmp(a, "--source") == 0)
        source = val;
      else
        o.output = val;
      i++;
    } else if (strcmp(a, "--max-launches") == 0 ||
               strcmp(a, "--max-bytes") == 0) {
      if (!number("observe", a, val, 1, 1e12, &v)) return EXIT_BAD_INPUT;
      if (strcmp(a, "--max-launches") == 0)
        o.max_launches = (int64_t)v;
      else
        o.max_bytes = (int64_t)v;
      i++;
    } else {
      return cli_usage_error("observe",
                             "unknown option '%s' (the program "
                             "goes after --)",
                             a);
    }
  }
  bool has_program = i < argc && i + 1 < argc;
  if (show && has_program)
    return cli_usage_error("observe", "--show reads a file: no program");
  if (!show && !has_program)
    return cli_usage_error("observe", "no program given (kl observe -- "
                                      "PROGRAM ARGS...)");
  kl_observation *ob = NULL;
  int status = EXIT_OK;
  if (show) {
    if (kl_observation_load(&ob, show) < 0) return cli_fail();
    if (source && kl_observation_read_source(ob, source) < 0) {
      kl_observation_free(ob);
      return cli_fail();
    }
  } else {
    if (!o.output) o.output = "observation.json";
    if (kl_observe(&ob, (const char *const *)argv + i + 1, &o) < 0)
      return cli_fail();
    if (source && kl_observation_read_source(ob, source) < 0) {
      int st = cli_fail();
      kl_observation_free(ob);
      return st;
    }
    fprintf(stderr, "kl: wrote %s (%zu launches recorded)\n", o.output,
            kl_observation_launch_count(ob));
    if (kl_observation_exit_code(ob) != 0) {
      cli_error("the program exited with %d; what it launched is in %s",
                kl_observation_exit_code(ob), o.output);
      status = EXIT_FAILED;
    }
  }
  kl_buf out = KL_BUF_INIT;
  if (kl_observation_launch_count(ob) == 0) {
    if (!show)
      cli_error("no launch of a matching kernel was recorded (did the "
                "program use CUDA%s?)",
                o.kernel ? ", and --kernel match" : "");
    status = status ? status : EXIT_FAILED;
  } else if (kl_observation_summary(&out, ob, &co, json ? "json" : "text") <
             0) {
    int st = cli_fail();
    status = status ? status : st;
  } else {
    fwrite(out.ptr, 1, out.size, stdout);
  }
  kl_buf_dispose(&out);
  kl_observation_free(ob);
  return status;
}

/* kl case from-kernelbench PROBLEM.py -o DIR */
static int case_from_kernelbench(int argc, char **argv) {
  const char *problem = NULL, *dir = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
      if (!val || !val[0])
        return cli_usage_error("case", "%s needs a value", a);
      dir = val;
      i++;
    } else if (cli_positional("case", "problem", &problem, a) != EXIT_OK) {
      return EXIT_BAD_INPUT;
    }
  }
  if (!problem || !dir)
    return cli_usage_error("case", "from-kernelbench needs PROBLEM.py and -o");
  kl_buf report = KL_BUF_INIT;
  int status = EXIT_OK;
  if (kl_case_from_kernelbench(&report, problem, dir) < 0)
    status = cli_fail();
  else
    fwrite(report.ptr, 1, report.size, stdout);
  kl_buf_dispose(&report);
  if (status != EXIT_OK) return status;
  /* at import: does the problem's tolerance (KernelBench's atol = rtol =
   * 1e-2) tell its right answer from a trivial one at its own shape? */
  kl_case *c = NULL;
  if (kl_case_load(&c, dir, NULL) < 0) return cli_fail();
  size_t weak = 0;
  status = cli_probe_tolerance(c, NULL, &weak, true);
  kl_case_free(c);
  return status;
}

int cmd_case(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "from-kernelbench") == 0)
    return case_from_kernelbench(argc, argv);
  if (argc < 2 || strcmp(argv[1], "from-observation") != 0)
    return cli_usage_error("case", "the subcommands are from-observation and "
                                   "from-kernelbench");
  kl_case_from_observation_options o = KL_CASE_FROM_OBSERVATION_OPTIONS_INIT;
  const char *file = NULL;
  /* --define, --type and -I, each at most once per argument */
  const char **defines = calloc((size_t)argc + 1, sizeof(char *));
  const char **types = calloc((size_t)argc + 1, sizeof(char *));
  const char **dirs = calloc((size_t)argc + 1, sizeof(char *));
  size_t ndefines = 0, ntypes = 0, ndirs = 0;
  if (!defines || !types || !dirs) {
    free(defines);
    free(types);
    free(dirs);
    cli_error("out of memory");
    return EXIT_FAILED;
  }
  o.defines = defines;
  o.types = types;
  o.include_dirs = dirs;
  int status = EXIT_OK;
  for (int i = 2; i < argc && status == EXIT_OK; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    int st = configs_option("case", &o.configs, argv, argc, &i);
    if (st == EXIT_OK) continue;
    if (st > 0) {
      status = st;
      break;
    }
    if (strcmp(a, "--define") == 0 || strncmp(a, "-D", 2) == 0) {
      const char *d = strcmp(a, "--define") == 0 ? val : a + 2;
      if (!d || !d[0] || d[0] == '=') {
        status = cli_usage_error("case", "%s needs NAME or NAME=VALUE", a);
        break;
      }
      defines[ndefines++] = d;
      if (strcmp(a, "--define") == 0) i++;
      continue;
    }
    if (strcmp(a, "--include") == 0 || strncmp(a, "-I", 2) == 0) {
      const char *d = strcmp(a, "--include") == 0 || !a[2] ? val : a + 2;
      if (!d || !d[0]) {
        status = cli_usage_error("case", "%s needs a folder", a);
        break;
      }
      dirs[ndirs++] = d;
      if (d == val) i++;
      continue;
    }
    if (strcmp(a, "--type") == 0) {
      const char *eq = val ? strchr(val, '=') : NULL;
      if (!eq || eq == val || !eq[1]) {
        status = cli_usage_error("case", "--type needs NAME=DTYPE (e.g. "
                                         "floatX=f32)");
        break;
      }
      types[ntypes++] = val;
      i++;
      continue;
    }
    if (strcmp(a, "--source") == 0 || strcmp(a, "--entry") == 0 ||
        strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
      if (!val || !val[0]) {
        status = cli_usage_error("case", "%s needs a value", a);
        break;
      }
      if (strcmp(a, "--source") == 0)
        o.source = val;
      else if (strcmp(a, "--entry") == 0)
        o.entry = val;
      else
        o.dir = val;
      i++;
    } else if (cli_positional("case", "observation", &file, a) != EXIT_OK) {
      status = EXIT_BAD_INPUT;
    }
  }
  /* --source may be left out for a Triton kernel: the observation names
   * its file */
  if (status == EXIT_OK && (!file || !o.entry || !o.dir))
    status = cli_usage_error("case", "needs FILE, --source (a CUDA "
                                     "kernel's), --entry and -o");
  if (status != EXIT_OK) {
    free(defines);
    free(types);
    free(dirs);
    return status;
  }
  kl_observation *ob = NULL;
  kl_buf report = KL_BUF_INIT;
  if (kl_observation_load(&ob, file) < 0 ||
      kl_case_from_observation(&report, ob, &o) < 0)
    status = cli_fail();
  else
    fwrite(report.ptr, 1, report.size, stdout);
  kl_buf_dispose(&report);
  kl_observation_free(ob);
  free(defines);
  free(types);
  free(dirs);
  return status;
}

/* "make -C 'my dir' all" -> argv; NULL after printing when the quotes do
 * not close. Free with free_words. */
static char **split_words(const char *opt, const char *s) {
  size_t cap = strlen(s) + 2;
  char **v = calloc(cap, sizeof *v);
  char *w = malloc(strlen(s) + 1);
  size_t n = 0;
  if (!v || !w) {
    free(v);
    free(w);
    cli_error("out of memory");
    return NULL;
  }
  const char *p = s;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n')
      p++;
    if (!*p) break;
    size_t k = 0;
    char quote = 0;
    for (; *p && (quote || (*p != ' ' && *p != '\t' && *p != '\n')); p++) {
      if (quote && *p == quote)
        quote = 0;
      else if (!quote && (*p == '\'' || *p == '"'))
        quote = *p;
      else if (*p == '\\' && p[1] && quote != '\'')
        w[k++] = *++p;
      else
        w[k++] = *p;
    }
    if (quote) {
      cli_usage_error("export", "%s: a %c quote is not closed", opt, quote);
      for (size_t i = 0; i < n; i++)
        free(v[i]);
      free(v);
      free(w);
      return NULL;
    }
    v[n++] = strndup(w, k);
  }
  free(w);
  if (n == 0) {
    cli_usage_error("export", "%s: an empty command", opt);
    free(v);
    return NULL;
  }
  return v;
}

static void free_words(char **v) {
  for (size_t i = 0; v && v[i]; i++)
    free(v[i]);
  free(v);
}

static void print_step(const char *line, void *payload) {
  (void)payload;
  fprintf(stderr, "kl: %s\n", line);
}

int cmd_export(int argc, char **argv) {
  kl_export_options o = KL_EXPORT_OPTIONS_INIT;
  const char *path = NULL, *verify = NULL, *observe = NULL, *measure = NULL;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    double v;
    if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--to") == 0 || strcmp(a, "--verify") == 0 ||
               strcmp(a, "--observe") == 0 || strcmp(a, "--cwd") == 0 ||
               strcmp(a, "--kernel") == 0 || strcmp(a, "--measure") == 0 ||
               strcmp(a, "--metric") == 0 || strcmp(a, "--better") == 0) {
      if (!val || !val[0])
        return cli_usage_error("export", "%s needs a value", a);
      if (strcmp(a, "--to") == 0)
        o.to = val;
      else if (strcmp(a, "--kernel") == 0)
        o.kernel = val;
      else if (strcmp(a, "--verify") == 0)
        verify = val;
      else if (strcmp(a, "--observe") == 0)
        observe = val;
      else if (strcmp(a, "--measure") == 0)
        measure = val;
      else if (strcmp(a, "--metric") == 0)
        o.metric = val;
      else if (strcmp(a, "--better") == 0 &&
               (strcmp(val, "higher") == 0 || strcmp(val, "lower") == 0))
        o.higher = strcmp(val, "higher") == 0;
      else if (strcmp(a, "--better") == 0)
        return cli_usage_error("export",
                               "--better is higher or lower, not "
                               "'%s'",
                               val);
      else
        o.cwd = val;
      i++;
    } else if (strcmp(a, "--speedup") == 0) {
      /* S or S,LOW,HIGH: kl compare's geomean and its interval */
      char *end = NULL;
      o.speedup = val ? strtod(val, &end) : 0;
      if (end && *end == ',') o.speedup_low = strtod(end + 1, &end);
      if (end && *end == ',') o.speedup_high = strtod(end + 1, &end);
      if (!val || !end || *end || !(o.speedup > 0) ||
          (o.speedup_low && !(o.speedup_low > 0 && o.speedup_low <= o.speedup &&
                              o.speedup_high >= o.speedup)))
        return cli_usage_error("export",
                               "--speedup needs S or S,LOW,HIGH (positive, "
                               "LOW <= S <= HIGH), not '%s'",
                               val ? val : "");
      i++;
    } else if (strcmp(a, "--repeat") == 0 || strcmp(a, "--timeout") == 0) {
      if (!number("export", a, val, 1, strcmp(a, "--repeat") ? 86400 : 32, &v))
        return EXIT_BAD_INPUT;
      if (strcmp(a, "--repeat") == 0)
        o.repeat = (int)v;
      else
        o.timeout_s = (int)v;
      i++;
    } else if (cli_positional("export", "case", &path, a) != EXIT_OK) {
      return EXIT_BAD_INPUT;
    }
  }
  if (!path || !o.to)
    return cli_usage_error("export", "needs CASE and --to FILE");
  if (measure && observe)
    return cli_usage_error("export", "--observe or --measure, not both");
  if (measure && !o.metric)
    return cli_usage_error("export", "--measure needs --metric NAME (a field "
                                     "of its JSON, as tokens_per_s)");
  char **vargv = verify ? split_words("--verify", verify) : NULL;
  char **oargv = observe ? split_words("--observe", observe) : NULL;
  char **margv = measure ? split_words("--measure", measure) : NULL;
  if ((verify && !vargv) || (observe && !oargv) || (measure && !margv)) {
    free_words(vargv);
    free_words(oargv);
    free_words(margv);
    return EXIT_BAD_INPUT;
  }
  o.verify = (const char *const *)vargv;
  o.observe = (const char *const *)oargv;
  o.measure = (const char *const *)margv;
  o.on_step = print_step;
  kl_case *c = NULL;
  kl_buf summary = KL_BUF_INIT;
  int status = EXIT_OK;
  if (kl_case_load(&c, path, NULL) < 0) {
    status = cli_fail();
  } else {
    int rc = kl_export(&summary, c, &o);
    if (json && summary.size) fwrite(summary.ptr, 1, summary.size, stdout);
    status = rc < 0 ? cli_fail() : EXIT_OK;
  }
  kl_buf_dispose(&summary);
  kl_case_free(c);
  free_words(vargv);
  free_words(oargv);
  free_words(margv);
  return status;
}
