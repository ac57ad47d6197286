/* `kl observe`, `kl case from-observation` and `kl export`: from a real
 * program to a case and back. Commands given as one string (--verify,
 * --observe) are split into words here, with '' and "" quoting and
 * backslash escapes, and run without a shell. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

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

/* The options' meanings (opt.h's cli_opt_fn), of kl observe and kl case
 * from-observation: --share, --top, --split */
static int share_arg(const char *verb, const char *opt, const char *val,
                     void *target) {
  return number(verb, opt, val, 0.01, 1, target) ? EXIT_OK : EXIT_BAD_INPUT;
}

static int top_arg(const char *verb, const char *opt, const char *val,
                   void *target) {
  double v;
  if (!number(verb, opt, val, 1, 256, &v)) return EXIT_BAD_INPUT;
  *(int *)target = (int)v;
  return EXIT_OK;
}

static int split_arg(const char *verb, const char *opt, const char *val,
                     void *target) {
  return number(verb, opt, val, 1, 1e6, target) ? EXIT_OK : EXIT_BAD_INPUT;
}

#define CONFIGS_OPTIONS(c)                                                     \
  CLI_CALL("--share", CLI_VALUE_OPTIONAL, share_arg, &(c)->share),             \
      CLI_CALL("--top", CLI_VALUE_OPTIONAL, top_arg, &(c)->max_configs),       \
      CLI_CALL("--split", CLI_VALUE_OPTIONAL, split_arg, &(c)->split_ratio)

/* kl observe: --max-launches, --max-bytes */
static int count_arg(const char *verb, const char *opt, const char *val,
                     void *target) {
  double v;
  if (!number(verb, opt, val, 1, 1e12, &v)) return EXIT_BAD_INPUT;
  *(int64_t *)target = (int64_t)v;
  return EXIT_OK;
}

/* --kernel: what is recorded and which kernel is summarised */
typedef struct kernel_slots {
  const char **record, **summarise;
} kernel_slots;

static int kernel_arg(const char *verb, const char *opt, const char *val,
                      void *target) {
  (void)verb, (void)opt;
  kernel_slots *k = target;
  *k->record = *k->summarise = val;
  return EXIT_OK;
}

/* Before --, every word is an option of kl observe's. */
static int observe_word(const char *verb, const char *opt, const char *a,
                        void *target) {
  (void)opt, (void)target;
  return cli_usage_error(verb,
                         "unknown option '%s' (the program "
                         "goes after --)",
                         a);
}

int cmd_observe(int argc, char **argv) {
  kl_observe_options o = KL_OBSERVE_OPTIONS_INIT;
  kl_configs_options co = KL_CONFIGS_OPTIONS_INIT;
  const char *show = NULL, *source = NULL;
  bool json = false;
  kernel_slots kernel = {&o.kernel, &co.kernel};
  const cli_opt spec[] = {
      CLI_STOP("--"),
      CONFIGS_OPTIONS(&co),
      CLI_FLAG("--json", &json),
      CLI_STRING("--output", "-o", CLI_VALUE_REQUIRED, &o.output),
      CLI_CALL("--kernel", CLI_VALUE_REQUIRED, kernel_arg, &kernel),
      CLI_STRING("--show", NULL, CLI_VALUE_REQUIRED, &show),
      CLI_STRING("--source", NULL, CLI_VALUE_REQUIRED, &source),
      CLI_CALL("--max-launches", CLI_VALUE_OPTIONAL, count_arg,
               &o.max_launches),
      CLI_CALL("--max-bytes", CLI_VALUE_OPTIONAL, count_arg, &o.max_bytes),
      CLI_WORDS(observe_word, NULL),
  };
  int i = 1, ps = cli_parse("observe", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (ps != EXIT_OK) return ps;
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
  const cli_opt spec[] = {
      CLI_STRING("--output", "-o", CLI_VALUE_REQUIRED, &dir),
      CLI_ARG("problem", &problem),
  };
  int i = 2, st = cli_parse("case", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (st != EXIT_OK) return st;
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
  status = cli_probe_tolerance(c, 0, NULL, &weak, true);
  kl_case_free(c);
  return status;
}

/* --define NAME[=V], -DNAME[=V] */
static int define_arg(const char *verb, const char *opt, const char *d,
                      void *target) {
  if (!d || !d[0] || d[0] == '=')
    return cli_usage_error(verb, "%s needs NAME or NAME=VALUE", opt);
  cli_list *l = target;
  l->items[l->n++] = d;
  return EXIT_OK;
}

/* --type NAME=DTYPE */
static int type_arg(const char *verb, const char *opt, const char *val,
                    void *target) {
  (void)opt;
  const char *eq = val ? strchr(val, '=') : NULL;
  if (!eq || eq == val || !eq[1])
    return cli_usage_error(verb, "--type needs NAME=DTYPE (e.g. "
                                 "floatX=f32)");
  cli_list *l = target;
  l->items[l->n++] = val;
  return EXIT_OK;
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
  cli_list dl = {defines, 0, (size_t)argc, NULL},
           tl = {types, 0, (size_t)argc, NULL},
           il = {dirs, 0, (size_t)argc, NULL};
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
  const cli_opt spec[] = {
      CONFIGS_OPTIONS(&o.configs),
      CLI_CALL("--define", CLI_VALUE_OPTIONAL, define_arg, &dl),
      CLI_CALL("-D", CLI_VALUE_GLUED, define_arg, &dl),
      {"--include", "-I", CLI_OPT_LIST, CLI_VALUE_REQUIRED, cli__list(&il),
       NULL, 0, "a folder", NULL},
      CLI_LIST("-I", NULL, CLI_VALUE_GLUED, &il),
      CLI_CALL("--type", CLI_VALUE_OPTIONAL, type_arg, &tl),
      CLI_STRING("--source", NULL, CLI_VALUE_REQUIRED, &o.source),
      CLI_STRING("--entry", NULL, CLI_VALUE_REQUIRED, &o.entry),
      CLI_STRING("--output", "-o", CLI_VALUE_REQUIRED, &o.dir),
      CLI_ARG("observation", &file),
  };
  int i = 2, status = cli_parse("case", spec, CLI_NOPTS(spec), argc, argv, &i);
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

/* The options' meanings of kl export (opt.h's cli_opt_fn): --better */
static int better_arg(const char *verb, const char *opt, const char *val,
                      void *target) {
  (void)opt;
  if (strcmp(val, "higher") != 0 && strcmp(val, "lower") != 0)
    return cli_usage_error(verb,
                           "--better is higher or lower, not "
                           "'%s'",
                           val);
  *(int *)target = strcmp(val, "higher") == 0;
  return EXIT_OK;
}

/* --speedup S or S,LOW,HIGH: kl compare's geomean and its interval */
static int speedup_arg(const char *verb, const char *opt, const char *val,
                       void *target) {
  (void)opt;
  kl_export_options *o = target;
  char *end = NULL;
  o->speedup = val ? strtod(val, &end) : 0;
  if (end && *end == ',') o->speedup_low = strtod(end + 1, &end);
  if (end && *end == ',') o->speedup_high = strtod(end + 1, &end);
  if (!val || !end || *end || !(o->speedup > 0) ||
      (o->speedup_low && !(o->speedup_low > 0 && o->speedup_low <= o->speedup &&
                           o->speedup_high >= o->speedup)))
    return cli_usage_error(verb,
                           "--speedup needs S or S,LOW,HIGH (positive, "
                           "LOW <= S <= HIGH), not '%s'",
                           val ? val : "");
  return EXIT_OK;
}

/* --repeat N (up to 32), --timeout S (up to a day) */
static int repeat_arg(const char *verb, const char *opt, const char *val,
                      void *target) {
  double v;
  if (!number(verb, opt, val, 1, 32, &v)) return EXIT_BAD_INPUT;
  *(int *)target = (int)v;
  return EXIT_OK;
}

static int timeout_arg(const char *verb, const char *opt, const char *val,
                       void *target) {
  double v;
  if (!number(verb, opt, val, 1, 86400, &v)) return EXIT_BAD_INPUT;
  *(int *)target = (int)v;
  return EXIT_OK;
}

int cmd_export(int argc, char **argv) {
  kl_export_options o = KL_EXPORT_OPTIONS_INIT;
  const char *path = NULL, *verify = NULL, *observe = NULL, *measure = NULL;
  bool json = false;
  const cli_opt spec[] = {
      CLI_FLAG("--json", &json),
      CLI_STRING("--to", NULL, CLI_VALUE_REQUIRED, &o.to),
      CLI_STRING("--verify", NULL, CLI_VALUE_REQUIRED, &verify),
      CLI_STRING("--observe", NULL, CLI_VALUE_REQUIRED, &observe),
      CLI_STRING("--cwd", NULL, CLI_VALUE_REQUIRED, &o.cwd),
      CLI_STRING("--kernel", NULL, CLI_VALUE_REQUIRED, &o.kernel),
      CLI_STRING("--measure", NULL, CLI_VALUE_REQUIRED, &measure),
      CLI_STRING("--metric", NULL, CLI_VALUE_REQUIRED, &o.metric),
      CLI_CALL("--better", CLI_VALUE_REQUIRED, better_arg, &o.higher),
      CLI_CALL("--speedup", CLI_VALUE_OPTIONAL, speedup_arg, &o),
      CLI_CALL("--repeat", CLI_VALUE_OPTIONAL, repeat_arg, &o.repeat),
      CLI_CALL("--timeout", CLI_VALUE_OPTIONAL, timeout_arg, &o.timeout_s),
      CLI_ARG("case", &path),
  };
  int i = 1, st = cli_parse("export", spec, CLI_NOPTS(spec), argc, argv, &i);
  if (st != EXIT_OK) return st;
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
