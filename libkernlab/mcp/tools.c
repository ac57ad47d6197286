/* The MCP tools: a table with one row per tool (the kl verb it runs, the
 * flags it always adds, its arguments), from which both the tool's JSON
 * Schema (tools/list) and, for a call, kl's argv are made, so the two
 * cannot disagree. A call checks its arguments against the row (unknown
 * names, types, required ones: a tool error naming the argument), writes a
 * candidate given as source text under the case's folder
 * (candidates/mcp-<sha256>.<ext>, like any candidate file, so the records
 * name a file that exists), runs kl (child.c) and turns what it left into
 * the result: structuredContent is the verb's --json document (or, for a
 * verb without one, {"text": its output}); content a one-line summary and
 * the document itself; isError for exit 1 and 2 with kl's one-line
 * located message. Exit 3 (candidate rejected) is a result, not an error:
 * the evaluation worked and its verdict is in the document. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "kernlab/case.h"
#include "mcp_internal.h"

typedef enum arg_kind {
  ARG_POSITIONAL, /* a string, a word of its own */
  ARG_STRING,     /* --flag VALUE */
  ARG_INTEGER,    /* --flag N, N >= 0 */
  ARG_NUMBER,     /* --flag X */
  ARG_BOOL,       /* --flag when true */
  ARG_LIST,       /* --flag VALUE, once per item */
  ARG_SOURCE      /* source text: written to a file, then --candidate FILE */
} arg_kind;

typedef struct tool_arg {
  const char *name;
  arg_kind kind;
  const char *flag;
  bool required;
  const char *description;
} tool_arg;

#define MAX_ARGS 14
typedef struct tool {
  const char *name, *title, *description;
  const char *verb[3];  /* kl's words before the arguments */
  const char *fixed[3]; /* flags always given */
  bool json;            /* its stdout is a JSON document */
  bool needs_candidate; /* candidate or candidate_source, one of them */
  tool_arg args[MAX_ARGS];
} tool;

#define CASE_ARG                                                               \
  {                                                                            \
    "case", ARG_POSITIONAL, NULL, true,                                        \
        "the case: its folder or its case.yaml"                                \
  }
#define CANDIDATE_ARGS                                                         \
  {"candidate", ARG_STRING, "--candidate", false,                              \
   "a candidate kernel's file (default: the case's baseline)"},                \
  {                                                                            \
    "candidate_source", ARG_SOURCE, "--candidate", false,                      \
        "a candidate kernel as source text (kept as "                          \
        "CASE/candidates/mcp-<sha256>.<ext>); instead of candidate"            \
  }
#define TIMING_ARGS                                                            \
  {"shape", ARG_STRING, "--shape", false, "one shape only, by name"},          \
      {"hot", ARG_BOOL, "--hot", false, "no cache flush between samples"},     \
      {"seed", ARG_INTEGER, "--seed", false, "reproducible check seeds"},      \
      {"time_cap_ms", ARG_INTEGER, "--time-cap-ms", false,                     \
       "sampling time per shape (default 2000)"},                              \
      {"timeout_ms", ARG_INTEGER, "--timeout-ms", false,                       \
       "limit per worker request (default 60000)"},                            \
      {"launch", ARG_STRING, "--launch", false,                                \
       "stream, graph (replays of a CUDA graph) or both; default: the "        \
       "case's timing.launch"},                                                \
  {                                                                            \
    "device", ARG_INTEGER, "--device", false, "CUDA device index"              \
  }

static const tool tools[] = {
    {"check",
     "Check a case",
     "Validate a case (case.yaml and its files) and describe it: kernel, "
     "params, every shape's sizes and launch geometry. Errors come as "
     "path:line:column: message. tolerance also probes whether the "
     "elementwise tolerance accepts a trivial output (runs the baseline).",
     {"check"},
     {"--json"},
     true,
     false,
     {CASE_ARG,
      {"tolerance", ARG_BOOL, "--tolerance", false,
       "also probe the tolerance against trivial outputs"},
      {"seed", ARG_INTEGER, "--seed", false,
       "with tolerance: the checks' seeds derive from it (the result "
       "says which was used; the same seed repeats a probe)"}}},
    {"new",
     "Make a case from a template",
     "Stamp a new case folder from a template (host, cuda, python or a "
     "folder); never overwrites.",
     {"new"},
     {"--json"},
     true,
     false,
     {{"name", ARG_POSITIONAL, NULL, true, "the new case's name"},
      {"template", ARG_STRING, "--template", false,
       "host, cuda, python or a template folder"},
      {"dir", ARG_STRING, "--dir", false,
       "the folder to create it in (default: the server's)"}}},
    {"harness",
     "Show the generated harness",
     "The generated harness of a case (standalone C file with main, or the "
     "plugin form the worker loads) around the baseline or a candidate.",
     {"harness"},
     {NULL},
     false,
     false,
     {CASE_ARG,
      CANDIDATE_ARGS,
      {"plugin", ARG_BOOL, "--plugin", false,
       "the plugin form instead of the standalone one"}}},
    {"bench",
     "Check and time a kernel",
     "Compile, check against the oracle on fresh seeds at every shape, then "
     "time in the sandboxed worker (adaptive sampling, 95% intervals). A "
     "rejected candidate (INCORRECT, CRASHED, TIMEOUT, COMPILE_ERROR, "
     "CHEAT) is a result with its verdict and reason, not an error. Sends "
     "progress (phase, shape, samples, verdict).",
     {"bench"},
     {"--json", "--json-events"},
     true,
     false,
     {CASE_ARG, CANDIDATE_ARGS, TIMING_ARGS}},
    {"compare",
     "Compare a candidate with the baseline",
     "Check a candidate, then time it interleaved with the baseline and "
     "decide per shape and for the objective: faster, slower or same (95% "
     "interval of the speedup and the case's min_gain_pct). Give candidate "
     "or candidate_source. Sends progress.",
     {"compare"},
     {"--json", "--json-events"},
     true,
     true,
     {CASE_ARG, CANDIDATE_ARGS, TIMING_ARGS}},
    {"profile",
     "Profile a kernel",
     "Check, time briefly and read hardware counters per shape; name the "
     "bottleneck (memory_bound, compute_bound, latency_bound, launch_bound) "
     "with the numbers behind it. Sends progress.",
     {"profile"},
     {"--json", "--json-events"},
     true,
     false,
     {CASE_ARG,
      CANDIDATE_ARGS,
      {"shape", ARG_STRING, "--shape", false, "one shape only, by name"},
      {"set", ARG_STRING, "--set", false,
       "quick, standard (default) or a comma list of metric names"},
      {"ncu_names", ARG_BOOL, "--ncu-names", false,
       "key metrics by Nsight Compute's names"}}},
    {"rules",
     "Diagnose a kernel",
     "Evaluate the diagnosis rules over a kernel's metrics (profiled now, "
     "or recorded in metrics): fired findings with actions and skills.",
     {"rules"},
     {"--json"},
     true,
     false,
     {{"case", ARG_POSITIONAL, NULL, false,
       "the case: its folder or its case.yaml"},
      CANDIDATE_ARGS,
      {"shape", ARG_STRING, "--shape", false, "one shape only, by name"},
      {"metrics", ARG_STRING, "--metrics", false,
       "recorded metrics (kl profile --json, ncu CSV or .ncu-rep)"},
      {"kernel", ARG_STRING, "--kernel", false,
       "from metrics, the kernels of that name"},
      {"launch", ARG_STRING, "--launch", false,
       "from metrics, ncu's launch ID"},
      {"rules", ARG_LIST, "--rules", false, "more rule files"}}},
    {"prompt",
     "Show the optimization prompt",
     "The prompt kernlab's loop would send a model for this case: system "
     "and user blocks and each section's token budget.",
     {"prompt"},
     {"--json"},
     true,
     false,
     {CASE_ARG,
      {"metrics", ARG_STRING, "--metrics", false,
       "profiles (kl profile --json)"},
      {"best", ARG_STRING, "--best", false,
       "the current best kernel's file (default: the baseline)"},
      {"iteration", ARG_INTEGER, "--iteration", false,
       "the iteration the prompt is for"},
      {"rules", ARG_LIST, "--rules", false, "more rule files"}}},
    {"best",
     "The best recorded kernel",
     "The accepted candidate with the largest speedup over every run "
     "(its solutions.jsonl record); with dispatch, the best per shape.",
     {"best"},
     {"--json"},
     true,
     false,
     {CASE_ARG,
      {"dispatch", ARG_BOOL, "--dispatch", false,
       "the best candidate for each shape, with the evidence"}}},
    {"history",
     "List a case's runs",
     "Every run of a case: proposer, candidates, acceptances, best "
     "speedup with its interval, worker seconds, why it stopped.",
     {"history"},
     {"--json"},
     true,
     false,
     {CASE_ARG}},
    {"report",
     "A run's report",
     "The Markdown report of a run (default: the latest) from the records: "
     "curve, candidates by verdict, shapes, bottlenecks, budget spent.",
     {"report"},
     {"--format", "md"},
     false,
     false,
     {CASE_ARG, {"run", ARG_STRING, "--run", false, "the run's id"}}},
    {"observe",
     "Summarise an observation",
     "Summarise a recorded observation (kl observe's file): kernels by GPU "
     "time and the representative launch configurations. Runs nothing.",
     {"observe"},
     {"--json"},
     true,
     false,
     {{"file", ARG_STRING, "--show", true, "the observation file"},
      {"kernel", ARG_STRING, "--kernel", false, "this kernel's configurations"},
      {"share", ARG_NUMBER, "--share", false,
       "target share of the kernel's time (default 0.9)"},
      {"top", ARG_INTEGER, "--top", false, "at most this many configurations"},
      {"source", ARG_STRING, "--source", false, "the kernels' source file"}}},
    {"propose",
     "Propose a kernel to an agent run",
     "Hand a kernel to `kl run CASE --proposer agent` (started in a "
     "terminal): the run takes it in turn, checks, measures, decides and "
     "records it like any proposal, within its budget. Returns the "
     "proposal's name; with wait_s, waits that long for the run's verdict "
     "(ACCEPTED, REJECTED, INCORRECT, ...).",
     {"propose"},
     {"--json"},
     true,
     true,
     {CASE_ARG,
      CANDIDATE_ARGS,
      {"memo", ARG_STRING, "--memo", false,
       "one line saying what the kernel tries"},
      {"wait_s", ARG_INTEGER, "--wait", false,
       "seconds to wait for the verdict (default: do not wait)"}}},
    {"proposal_verdict",
     "A proposal's verdict",
     "The verdict an agent run recorded for a proposal (by the name propose "
     "returned), waiting up to wait_s seconds for it.",
     {"propose"},
     {"--json"},
     true,
     false,
     {CASE_ARG,
      {"name", ARG_STRING, "--verdict", true, "the proposal's name"},
      {"wait_s", ARG_INTEGER, "--wait", false,
       "seconds to wait for the verdict (default 0)"}}},
    {"propose_stop",
     "End an agent run",
     "Tell the agent run of a case that no more kernels will come: it ends "
     "(stop_reason exhausted) when it asks for the next; its report and "
     "best are then as any run's (report, best).",
     {"propose"},
     {"--stop", "--json"},
     true,
     false,
     {CASE_ARG}},
    {"case_from_observation",
     "Make a case from an observation",
     "Write a case folder (case.yaml, kernel, program.md) for one kernel of "
     "an observation; the signature is checked against what was observed.",
     {"case", "from-observation"},
     {NULL},
     false,
     false,
     {{"file", ARG_POSITIONAL, NULL, true, "the observation file"},
      {"entry", ARG_STRING, "--entry", true, "the kernel's name"},
      {"out", ARG_STRING, "-o", true, "the case folder to write (new)"},
      {"source", ARG_STRING, "--source", false, "the program's source file"},
      {"define", ARG_LIST, "--define", false, "NAME[=VALUE] macros"},
      {"type", ARG_LIST, "--type", false, "NAME=DTYPE for a parameter type"},
      {"include", ARG_LIST, "-I", false, "include folders"},
      {"share", ARG_NUMBER, "--share", false, "target share of its time"},
      {"top", ARG_INTEGER, "--top", false, "at most this many shapes"}}},
    {"case_from_kernelbench",
     "Make a case from a KernelBench problem",
     "Write a python case folder from a KernelBench problem file (read, not "
     "run); the tolerance is probed where the problem can run.",
     {"case", "from-kernelbench"},
     {NULL},
     false,
     false,
     {{"problem", ARG_POSITIONAL, NULL, true, "the problem's .py file"},
      {"out", ARG_STRING, "-o", true, "the case folder to write (new)"}}},
};

static const tool *find_tool(const char *name) {
  for (size_t i = 0; i < KL_ARRAY_SIZE(tools); i++)
    if (strcmp(tools[i].name, name) == 0) return &tools[i];
  return NULL;
}

static const char *schema_type(arg_kind k) {
  switch (k) {
  case ARG_INTEGER:
    return "integer";
  case ARG_NUMBER:
    return "number";
  case ARG_BOOL:
    return "boolean";
  case ARG_LIST:
    return "array";
  default:
    return "string";
  }
}

static json_object *schema_of(const tool *t) {
  json_object *schema = json_object_new_object();
  json_object *props = json_object_new_object();
  json_object *required = json_object_new_array();
  for (const tool_arg *a = t->args; a < t->args + MAX_ARGS && a->name; a++) {
    json_object *p = json_object_new_object();
    json_object_object_add(p, "type",
                           json_object_new_string(schema_type(a->kind)));
    if (a->kind == ARG_LIST) {
      json_object *items = json_object_new_object();
      json_object_object_add(items, "type", json_object_new_string("string"));
      json_object_object_add(p, "items", items);
    }
    if (a->kind == ARG_INTEGER)
      json_object_object_add(p, "minimum", json_object_new_int(0));
    json_object_object_add(p, "description",
                           json_object_new_string(a->description));
    json_object_object_add(props, a->name, p);
    if (a->required)
      json_object_array_add(required, json_object_new_string(a->name));
  }
  json_object_object_add(schema, "type", json_object_new_string("object"));
  json_object_object_add(schema, "properties", props);
  json_object_object_add(schema, "required", required);
  json_object_object_add(schema, "additionalProperties",
                         json_object_new_boolean(0));
  return schema;
}

int kl_mcp__tools_list(json_object **out) {
  json_object *list = json_object_new_array();
  for (size_t i = 0; i < KL_ARRAY_SIZE(tools); i++) {
    json_object *t = json_object_new_object();
    json_object_object_add(t, "name", json_object_new_string(tools[i].name));
    json_object_object_add(t, "title", json_object_new_string(tools[i].title));
    json_object_object_add(t, "description",
                           json_object_new_string(tools[i].description));
    json_object_object_add(t, "inputSchema", schema_of(&tools[i]));
    json_object_array_add(list, t);
  }
  *out = json_object_new_object();
  if (!*out) return kl__error_oom();
  json_object_object_add(*out, "tools", list);
  return 0;
}

int kl_mcp_tools_json(kl_buf *out) {
  json_object *doc = NULL;
  int rc = kl_mcp__tools_list(&doc);
  if (rc < 0) return rc;
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(
      &b, json_object_to_json_string_ext(
              doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(doc);
  kl__buf_give(out, &b);
  return kl__buf_status(out);
}

/* ---- a call ------------------------------------------------------------- */

#define MAX_ARGV 96
typedef struct argv_builder {
  char *words[MAX_ARGV + 1];
  size_t n;
  char error[512];
} argv_builder;

static bool push(argv_builder *b, const char *word) {
  if (b->n == MAX_ARGV) {
    snprintf(b->error, sizeof(b->error), "too many arguments");
    return false;
  }
  if (!(b->words[b->n] = kl__strdup(word))) {
    snprintf(b->error, sizeof(b->error), "out of memory");
    return false;
  }
  b->n++;
  return true;
}

/* Write `source` as CASE/candidates/mcp-<sha256>.<the kernel's extension>
 * (kept when it is already there: the same text, the same file). */
static int write_candidate(char *path, size_t size, const char *case_path,
                           const char *source, char *error, size_t nerror) {
  kl_case *c = NULL;
  int rc = kl_case_load(&c, case_path, NULL);
  if (rc < 0) {
    const kl_error *e = kl_error_last();
    snprintf(error, nerror, "%s", e && e->message ? e->message : "bad case");
    return rc;
  }
  const char *kernel = kl_case_kernel_path(c);
  const char *dot = kernel ? strrchr(kernel, '.') : NULL;
  const char *slash = kernel ? strrchr(kernel, '/') : NULL;
  const char *ext = dot && (!slash || dot > slash) ? dot : ".txt";
  kl__sha256 h;
  char hex[65];
  kl__sha256_init(&h);
  kl__sha256_update(&h, source, strlen(source));
  kl__sha256_hex(&h, hex);
  char dir[4096];
  snprintf(dir, sizeof(dir), "%s/candidates", kl_case_dir(c));
  snprintf(path, size, "%s/mcp-%.16s%s", dir, hex, ext);
  kl_case_free(c);
  struct stat st;
  if (stat(path, &st) == 0) return 0;
  if ((rc = kl__mkdir_p(dir)) < 0 ||
      (rc = kl__write_file_atomic(path, source, strlen(source))) < 0) {
    const kl_error *e = kl_error_last();
    snprintf(error, nerror, "%.400s", e && e->message ? e->message : path);
    return rc;
  }
  return 0;
}

static bool bad_arg(argv_builder *b, const char *fmt, const char *name) {
  snprintf(b->error, sizeof(b->error), fmt, name);
  return false;
}

/* one argument into words; false with b->error on a bad value */
static bool add_arg(argv_builder *b, const tool_arg *a, json_object *v,
                    const char *case_path) {
  char num[64];
  switch (a->kind) {
  case ARG_POSITIONAL:
  case ARG_STRING:
    if (!json_object_is_type(v, json_type_string))
      return bad_arg(b, "argument '%s' must be a string", a->name);
    if (!json_object_get_string_len(v))
      return bad_arg(b, "argument '%s' is empty", a->name);
    if (a->kind == ARG_POSITIONAL && json_object_get_string(v)[0] == '-')
      return bad_arg(b, "argument '%s' must not start with '-'", a->name);
    return (!a->flag || push(b, a->flag)) && push(b, json_object_get_string(v));
  case ARG_INTEGER:
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
      return bad_arg(b, "argument '%s' must be a whole number >= 0", a->name);
    /* as uint64: json-c keeps 2^63 and above so, and get_int64 would clamp
     * them (a seed is any 64-bit value) */
    snprintf(num, sizeof(num), "%llu",
             (unsigned long long)json_object_get_uint64(v));
    return push(b, a->flag) && push(b, num);
  case ARG_NUMBER:
    if (!json_object_is_type(v, json_type_double) &&
        !json_object_is_type(v, json_type_int))
      return bad_arg(b, "argument '%s' must be a number", a->name);
    snprintf(num, sizeof(num), "%.17g", json_object_get_double(v));
    return push(b, a->flag) && push(b, num);
  case ARG_BOOL:
    if (!json_object_is_type(v, json_type_boolean))
      return bad_arg(b, "argument '%s' must be true or false", a->name);
    return !json_object_get_boolean(v) || push(b, a->flag);
  case ARG_LIST:
    if (!json_object_is_type(v, json_type_array))
      return bad_arg(b, "argument '%s' must be an array of strings", a->name);
    for (size_t i = 0; i < json_object_array_length(v); i++) {
      json_object *item = json_object_array_get_idx(v, i);
      if (!json_object_is_type(item, json_type_string))
        return bad_arg(b, "argument '%s' must be an array of strings", a->name);
      if (!push(b, a->flag) || !push(b, json_object_get_string(item)))
        return false;
    }
    return true;
  case ARG_SOURCE: {
    if (!json_object_is_type(v, json_type_string) ||
        !json_object_get_string_len(v))
      return bad_arg(b, "argument '%s' must be non-empty source text", a->name);
    if (!case_path)
      return bad_arg(b, "argument '%s' needs the case argument", a->name);
    char path[4200];
    if (write_candidate(path, sizeof(path), case_path,
                        json_object_get_string(v), b->error,
                        sizeof(b->error)) < 0)
      return false;
    return push(b, a->flag) && push(b, path);
  }
  }
  return false;
}

static bool build_argv(argv_builder *b, const tool *t, const char *program,
                       json_object *args) {
  if (!push(b, program)) return false;
  for (size_t i = 0; i < 3 && t->verb[i]; i++)
    if (!push(b, t->verb[i])) return false;
  json_object_object_foreach(args, key, val) {
    (void)val;
    bool known = false;
    for (const tool_arg *a = t->args; a < t->args + MAX_ARGS && a->name; a++)
      known = known || strcmp(a->name, key) == 0;
    if (!known) return bad_arg(b, "unknown argument '%s'", key);
  }
  json_object *case_arg = NULL;
  const char *case_path = NULL;
  if (json_object_object_get_ex(args, "case", &case_arg) &&
      json_object_is_type(case_arg, json_type_string))
    case_path = json_object_get_string(case_arg);
  bool has_candidate = false;
  for (const tool_arg *a = t->args; a < t->args + MAX_ARGS && a->name; a++) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(args, a->name, &v) || !v) {
      if (a->required)
        return bad_arg(b, "missing required argument '%s'", a->name);
      continue;
    }
    if (strcmp(a->name, "candidate") == 0 ||
        strcmp(a->name, "candidate_source") == 0) {
      if (has_candidate)
        return bad_arg(b, "give candidate or candidate_source, not both%s", "");
      has_candidate = true;
    }
    if (!add_arg(b, a, v, case_path)) return false;
  }
  if (t->needs_candidate && !has_candidate)
    return bad_arg(b, "%s needs candidate or candidate_source", t->name);
  for (size_t i = 0; i < 3 && t->fixed[i]; i++)
    if (!push(b, t->fixed[i])) return false;
  return true;
}

/* ---- results ------------------------------------------------------------ */

static const char *field(json_object *e, const char *key) {
  json_object *v;
  return json_object_object_get_ex(e, key, &v) && v ? json_object_get_string(v)
                                                    : NULL;
}

/* one --json-events line as a progress message: "phase: checks", "shape
 * 1M: 41 samples, median 412.5", "verdict: OK" */
static void on_event(const char *line, void *payload) {
  kl_mcp__call *call = payload;
  json_object *e = json_tokener_parse(line);
  if (!e || !json_object_is_type(e, json_type_object)) {
    json_object_put(e);
    return;
  }
  char message[256];
  const char *kind = field(e, "event") ? field(e, "event") : "event";
  const char *samples = field(e, "samples"), *median = field(e, "median");
  if (strcmp(kind, "shape") == 0 && samples && median)
    snprintf(message, sizeof(message), "shape %s: %s samples, median %s",
             field(e, "shape") ? field(e, "shape") : "?", samples, median);
  else if (strcmp(kind, "shape") == 0)
    snprintf(message, sizeof(message), "shape %s: %s",
             field(e, "shape") ? field(e, "shape") : "?",
             strcmp(field(e, "correct") ? field(e, "correct") : "", "true")
                 ? "not timed"
                 : "checked");
  else
    snprintf(message, sizeof(message), "%s: %s", kind,
             field(e, "phase")     ? field(e, "phase")
             : field(e, "verdict") ? field(e, "verdict")
                                   : "");
  if (call->progress) call->progress(call, message);
  json_object_put(e);
}

/* kl's first message line, "kl: " taken off: the located one-line error */
static void first_message(char *out, size_t size, const char *errors) {
  out[0] = 0;
  if (!errors) return;
  while (*errors == '\n')
    errors++;
  if (strncmp(errors, "kl: ", 4) == 0) errors += 4;
  size_t len = strcspn(errors, "\n");
  snprintf(out, size, "%.*s", (int)(len < size ? len : size - 1), errors);
}

/* the message of check's {"ok":false,"errors":[{path,line,column,message}]} */
static void document_error(char *out, size_t size, json_object *doc) {
  json_object *errors, *e, *v;
  if (!doc || !json_object_object_get_ex(doc, "errors", &errors) ||
      !json_object_is_type(errors, json_type_array) ||
      !(e = json_object_array_get_idx(errors, 0)))
    return;
  const char *path =
      json_object_object_get_ex(e, "path", &v) ? json_object_get_string(v) : "";
  int line =
      json_object_object_get_ex(e, "line", &v) ? json_object_get_int(v) : 0;
  int column =
      json_object_object_get_ex(e, "column", &v) ? json_object_get_int(v) : 0;
  const char *message = json_object_object_get_ex(e, "message", &v)
                            ? json_object_get_string(v)
                            : "";
  if (line > 0)
    snprintf(out, size, "%s:%d:%d: %s", path, line, column, message);
  else
    snprintf(out, size, "%s: %s", path, message);
}

static json_object *text_block(const char *text) {
  json_object *block = json_object_new_object();
  json_object_object_add(block, "type", json_object_new_string("text"));
  json_object_object_add(block, "text", json_object_new_string(text));
  return block;
}

static json_object *tool_error(const char *message) {
  json_object *r = json_object_new_object();
  json_object *content = json_object_new_array();
  json_object_array_add(content, text_block(message));
  json_object_object_add(r, "content", content);
  json_object_object_add(r, "isError", json_object_new_boolean(1));
  return r;
}

/* the one line an agent reads first */
static void summary_of(char *out, size_t size, const tool *t, int status,
                       json_object *doc, const char *message) {
  json_object *v;
  const char *verdict = doc && json_object_object_get_ex(doc, "verdict", &v)
                            ? json_object_get_string(v)
                            : NULL;
  json_object *obj = NULL, *ci = NULL, *x;
  if (doc && json_object_object_get_ex(doc, "objective", &obj) &&
      (!json_object_object_get_ex(obj, "speedup_ci", &ci) ||
       json_object_array_length(ci) != 2))
    obj = NULL;
  if (status == 3)
    snprintf(out, size, "kl %s: %s", t->name,
             message[0] ? message : "candidate rejected");
  else if (verdict && obj)
    snprintf(out, size, "kl %s: verdict %s; objective x%.4g [%.4g, %.4g], %s",
             t->name, verdict,
             json_object_object_get_ex(obj, "speedup", &x)
                 ? json_object_get_double(x)
                 : 0,
             json_object_get_double(json_object_array_get_idx(ci, 0)),
             json_object_get_double(json_object_array_get_idx(ci, 1)),
             json_object_object_get_ex(obj, "decision", &x)
                 ? json_object_get_string(x)
                 : "undecided");
  else if (verdict)
    snprintf(out, size, "kl %s: verdict %s", t->name, verdict);
  else
    snprintf(out, size, "kl %s: done", t->name);
}

static json_object *result_of(const tool *t, const kl_mcp__exit *x) {
  char message[2048], summary[2300];
  json_object *doc = NULL;
  const char *out = x->out.ptr ? x->out.ptr : "";
  first_message(message, sizeof(message), x->errors.ptr);
  if (t->json) {
    doc = json_tokener_parse(out);
    if (doc && !json_object_is_type(doc, json_type_object)) {
      json_object_put(doc);
      doc = NULL;
    }
  } else if (x->status == 0) {
    doc = json_object_new_object();
    json_object_object_add(doc, "text", json_object_new_string(out));
  }
  if (x->signal) {
    json_object_put(doc);
    snprintf(message, sizeof(message), "kl %s ended by signal %d", t->name,
             x->signal);
    return tool_error(message);
  }
  if (x->status != 0 && x->status != 3) {
    if (!message[0]) document_error(message, sizeof(message), doc);
    if (!message[0])
      snprintf(message, sizeof(message), "kl %s failed (exit %d)", t->name,
               x->status);
    json_object *r = tool_error(message);
    if (doc) json_object_object_add(r, "structuredContent", doc);
    return r;
  }
  if (!doc) {
    snprintf(summary, sizeof(summary),
             "kl %s printed no JSON document (exit %d)%s%s", t->name, x->status,
             message[0] ? ": " : "", message);
    return tool_error(summary);
  }
  summary_of(summary, sizeof(summary), t, x->status, doc, message);
  json_object *r = json_object_new_object();
  json_object *content = json_object_new_array();
  json_object_array_add(content, text_block(summary));
  json_object_array_add(content, text_block(json_object_to_json_string_ext(
                                     doc, JSON_C_TO_STRING_PLAIN |
                                              JSON_C_TO_STRING_NOSLASHESCAPE)));
  json_object_object_add(r, "content", content);
  json_object_object_add(r, "structuredContent", doc);
  json_object_object_add(r, "isError", json_object_new_boolean(0));
  return r;
}

int kl_mcp__tool_call(json_object **result, kl_mcp__call *call,
                      const char *program, const char *name,
                      json_object *args) {
  *result = NULL;
  const tool *t = find_tool(name);
  if (!t)
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE, "unknown tool '%s'", name);
  json_object *empty = NULL;
  if (!args) args = empty = json_object_new_object();
  argv_builder b;
  memset(&b, 0, sizeof(b));
  int rc = 0;
  if (!build_argv(&b, t, program, args)) {
    *result = tool_error(b.error);
  } else {
    kl_mcp__exit x = {0, 0, KL_BUF_INIT, KL_BUF_INIT};
    rc = kl_mcp__child_run(&x, &call->child, program, b.words, on_event, call);
    if (rc == 0 && !call->child.cancelled)
      *result = result_of(t, &x);
    else if (rc < 0) {
      const kl_error *e = kl_error_last();
      *result = tool_error(e && e->message ? e->message : "kl did not start");
      rc = 0;
    }
    kl_buf_dispose(&x.out);
    kl_buf_dispose(&x.errors);
  }
  for (size_t i = 0; i < b.n; i++)
    kl__free(b.words[i]);
  json_object_put(empty);
  return rc;
}
