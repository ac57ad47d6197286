/* kl case from-observation for a Triton kernel: a python case whose shapes
 * are the configurations a real Python program launched it with.
 *
 * `kl observe -- python app.py` records each @triton.jit call by
 * configuration ("python_launches": tensors' shapes, strides and dtypes,
 * scalars, constexprs, options, grid, which tensors the first call wrote,
 * and each call's ordinal among the process's launches of that kernel;
 * an autotuner's benchmarking calls are its tries, not the program's
 * calls, and a configuration only tried is no shape).
 * The ordinals join a configuration with the driver-level launches of the
 * same kernel in the same process, so its GPU time is known; the grid the
 * driver saw must be the one Python asked for, else the join is not
 * trusted and calls rank the configurations instead. The configurations
 * covering `share` of the time (at most K) are kept, as for CUDA kernels.
 *
 * The case folder gets kernel.py (the program's source without its
 * top-level statements: python3's ast keeps imports, definitions and
 * constant assignments, so importing it runs no program), launches.json
 * (the kept configurations), ops.py (the contract: inputs() makes a
 * configuration's tensors, forward() launches the kernel on them exactly as
 * the program did), case.yaml and program.md. Tensors the first call wrote
 * are inouts, marked to confirm; the baseline is the oracle. forward()
 * tells configurations apart by their tensors' shapes and dtypes, so of
 * two kept ones alike in those (other strides, scalars or options) only the
 * busier stays, said in the report. The case is loaded back before this
 * returns. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/json.h"
#include "kernlab/case.h"
#include "observe_internal.h"

/* Reduce a program to what importing it defines; print it with what was
 * left out, or an error at a line. argv: source, entry. */
static const char reduce_py[] =
    "import ast, json, sys\n"
    "path, entry = sys.argv[1], sys.argv[2]\n"
    "def fail(line, col, msg):\n"
    "    print(json.dumps({'error': msg, 'line': line, 'column': col}))\n"
    "    sys.exit(0)\n"
    "try:\n"
    "    text = open(path, encoding='utf-8').read()\n"
    "    tree = ast.parse(text, path)\n"
    "except SyntaxError as e:\n"
    "    fail(e.lineno or 1, e.offset or 1, e.msg)\n"
    "except (OSError, UnicodeError) as e:\n"
    "    fail(1, 1, str(e))\n"
    "def calls(n):\n"
    "    for x in ast.walk(n):\n"
    "        if isinstance(x, ast.Call):\n"
    "            f = x.func\n"
    "            name = f.attr if isinstance(f, ast.Attribute) else "
    "getattr(f, 'id', '')\n"
    "            if name != 'constexpr':\n"
    "                return True\n"
    "    return False\n"
    "def importing(n):\n"
    "    return all(isinstance(x, (ast.Import, ast.ImportFrom, ast.Pass)) "
    "for x in n.body)\n"
    "keep, dropped, found = [], [], False\n"
    "for n in tree.body:\n"
    "    ok = isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef, "
    "ast.AsyncFunctionDef, ast.ClassDef))\n"
    "    if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not "
    "None:\n"
    "        ok = not calls(n.value)\n"
    "    if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) "
    "and isinstance(n.value.value, str):\n"
    "        ok = True\n"
    "    if isinstance(n, ast.Try) and importing(n) and all(importing(h) "
    "for h in n.handlers):\n"
    "        ok = True\n"
    "    if isinstance(n, ast.FunctionDef) and n.name == entry:\n"
    "        found = True\n"
    "    seg = ast.get_source_segment(text, n)\n"
    "    if ok:\n"
    "        start = n.decorator_list[0].lineno if getattr(n, "
    "'decorator_list', None) else n.lineno\n"
    "        lines = text.splitlines()[start - 1:n.end_lineno]\n"
    "        keep.append('\\n'.join(lines))\n"
    "    else:\n"
    "        dropped.append([n.lineno, (seg or '').splitlines()[0][:60] if "
    "seg else type(n).__name__])\n"
    "if not found:\n"
    "    fail(1, 1, 'no top-level def %s: the kernel must be defined at the "
    "top level of its file' % entry)\n"
    "print(json.dumps({'text': '\\n\\n'.join(keep) + '\\n', 'dropped': "
    "dropped}))\n";

static const char ops_py[] =
    "\"\"\"kernlab's contract for a Triton kernel observed in a real program "
    "(written\n"
    "by `kl case from-observation`). kernel.py is the program's source "
    "without\n"
    "its top-level statements; launches.json holds the configurations "
    "kept.\n"
    "\n"
    "A shape's `config` picks one: inputs() makes its tensors (the "
    "observed\n"
    "shapes, strides and dtypes; floats normal, integers within the range "
    "the\n"
    "program's first call held), forward() launches the kernel on them as "
    "the\n"
    "program did (grid, scalars, constexprs, options) and updates the "
    "tensors\n"
    "it writes in place. A configuration is known by its tensors' shapes "
    "and\n"
    "dtypes; a tensor handed over with other strides (a copy) is run in "
    "the\n"
    "observed layout and copied back.\"\"\"\n"
    "import importlib.util\n"
    "import json\n"
    "import os\n"
    "import sys\n"
    "\n"
    "import torch\n"
    "import triton\n"
    "\n"
    "_HERE = os.path.dirname(os.path.abspath(__file__))\n"
    "with open(os.path.join(_HERE, \"launches.json\")) as _f:\n"
    "    LAUNCHES = json.load(_f)\n"
    "_spec = importlib.util.spec_from_file_location(\n"
    "    \"kl_observed_kernel\", os.path.join(_HERE, \"kernel.py\"))\n"
    "source = importlib.util.module_from_spec(_spec)\n"
    "sys.modules[\"kl_observed_kernel\"] = source\n"
    "_spec.loader.exec_module(source)\n"
    "\n"
    "\n"
    "def _jit():\n"
    "    \"\"\"The @triton.jit function under any autotune or heuristics "
    "wrapper:\n"
    "    the observed configuration already holds what they chose.\"\"\"\n"
    "    k = getattr(source, LAUNCHES[\"kernel\"])\n"
    "    while not isinstance(k, triton.runtime.jit.JITFunction) and "
    "hasattr(k, \"fn\"):\n"
    "        k = k.fn\n"
    "    return k\n"
    "\n"
    "\n"
    "def _tensors(config):\n"
    "    return [a[\"tensor\"] for a in config[\"args\"] if \"tensor\" in "
    "a]\n"
    "\n"
    "\n"
    "_BY_KEY = {tuple((tuple(t[\"shape\"]), t[\"dtype\"]) for t in "
    "_tensors(c)): c\n"
    "           for c in LAUNCHES[\"configs\"]}\n"
    "\n"
    "\n"
    "def _make(t, gen):\n"
    "    dtype = getattr(torch, t[\"dtype\"])\n"
    "    shape, stride = t[\"shape\"], t[\"stride\"]\n"
    "    size = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in "
    "zip(shape, stride))\n"
    "    if dtype.is_floating_point:\n"
    "        base = torch.randn(size, generator=gen, "
    "device=\"cuda\").to(dtype)\n"
    "    elif dtype == torch.bool:\n"
    "        base = torch.randint(0, 2, (size,), generator=gen, "
    "device=\"cuda\").bool()\n"
    "    else:\n"
    "        lo, hi = t.get(\"range\") or [0, 127]\n"
    "        base = torch.randint(lo, hi + 1, (size,), generator=gen,\n"
    "                             device=\"cuda\").to(dtype)\n"
    "    return torch.as_strided(base, shape, stride)\n"
    "\n"
    "\n"
    "def inputs(shape, seed):\n"
    "    config = LAUNCHES[\"configs\"][int(shape[\"config\"]) - 1]\n"
    "    gen = torch.Generator(device=\"cuda\")\n"
    "    gen.manual_seed(seed)\n"
    "    return [_make(t, gen) for t in _tensors(config)]\n"
    "\n"
    "\n"
    "def forward(*tensors):\n"
    "    key = tuple((tuple(t.shape), str(t.dtype)[6:]) for t in tensors)\n"
    "    config = _BY_KEY.get(key)\n"
    "    if config is None:\n"
    "        raise ValueError(\"no observed configuration has tensors of "
    "these \"\n"
    "                         \"shapes and dtypes: %r\" % (key,))\n"
    "    given, back, args = iter(tensors), [], {}\n"
    "    for a in config[\"args\"]:\n"
    "        if \"tensor\" not in a:\n"
    "            args[a[\"name\"]] = a[\"value\"]\n"
    "            continue\n"
    "        t, want = next(given), a[\"tensor\"]\n"
    "        if list(t.stride()) != want[\"stride\"]:\n"
    "            laid = torch.empty_strided(want[\"shape\"], "
    "want[\"stride\"],\n"
    "                                       dtype=t.dtype, "
    "device=t.device)\n"
    "            laid.copy_(t)\n"
    "            if want.get(\"written\"):\n"
    "                back.append((t, laid))\n"
    "            t = laid\n"
    "        args[a[\"name\"]] = t\n"
    "    args.update(config[\"options\"])\n"
    "    _jit()[tuple(config[\"grid\"])](**args)\n"
    "    for t, laid in back:\n"
    "        t.copy_(laid)\n"
    "\n"
    "\n"
    "def reference(*tensors):\n"
    "    forward(*tensors)\n";

typedef struct pyconf {
  json_object *rec; /* the configuration (owned by the observation) */
  int64_t calls;
  int64_t matched; /* driver launches joined to it */
  double us;       /* their GPU time; scaled to every call below */
  double est_us;   /* NaN: no launch joined */
  bool grid_differs;
  bool kept;
  int same_as; /* 1-based rank of the kept config with the same layouts */
} pyconf;

int kl__obs_write_new(const char *dir, const char *name, const char *text,
                      size_t n) {
  char *p = kl__path_join(dir, name);
  int rc = p ? kl__write_new_file(p, text ? text : "", n) : kl__error_oom();
  kl__free(p);
  return rc;
}

/* A string field of a record the reader checked, "" when absent. */
static const char *str_of(json_object *o, const char *key) {
  const char *t = kl__json_text(o, key);
  return t ? t : "";
}

static int64_t int_of(json_object *o, const char *key) {
  return (int64_t)kl__json_num(o, key);
}

bool kl__obs_has_python(const kl_observation *o, const char *kernel) {
  size_t n = o->python ? json_object_array_length(o->python) : 0;
  for (size_t i = 0; i < n; i++)
    if (!kernel ||
        strcmp(str_of(json_object_array_get_idx(o->python, i), "kernel"),
               kernel) == 0)
      return true;
  return false;
}

/* Join each configuration's ordinals with the driver's launches of the
 * kernel in its process, in order: the GPU time of the calls recorded. */
static void join_times(pyconf *pc, size_t n, const kl_observation *o,
                       const char *entry) {
  for (size_t i = 0; i < n; i++) {
    pyconf *c = &pc[i];
    c->est_us = NAN;
    int64_t pid = int_of(c->rec, "pid");
    json_object *ords, *grid;
    json_object_object_get_ex(c->rec, "ordinals", &ords);
    json_object_object_get_ex(c->rec, "grid", &grid);
    size_t no = ords ? json_object_array_length(ords) : 0;
    /* the process's launches of the kernel, walked once per config */
    size_t k = 0;
    int64_t seen = -1;
    for (size_t j = 0; j < no; j++) {
      int64_t want = json_object_get_int64(json_object_array_get_idx(ords, j));
      for (; k < o->nlaunches; k++) {
        const kl__obs_launch *l = &o->launches[k];
        if (l->pid != pid || strcmp(o->kernels[l->kernel].name, entry))
          continue;
        if (++seen == want) break;
      }
      if (k == o->nlaunches) break;
      const kl__obs_launch *l = &o->launches[k++];
      for (int d = 0; d < 3; d++)
        if (l->grid[d] !=
            json_object_get_int64(json_object_array_get_idx(grid, (size_t)d)))
          c->grid_differs = true;
      if (!isnan(l->us)) c->us += l->us, c->matched++;
    }
    if (c->matched && !c->grid_differs)
      c->est_us = c->us / (double)c->matched * (double)c->calls;
  }
}

static int by_weight(const void *a, const void *b) {
  const pyconf *x = a, *y = b;
  bool tx = !isnan(x->est_us), ty = !isnan(y->est_us);
  if (tx != ty) return tx ? -1 : 1;
  if (tx && x->est_us != y->est_us) return x->est_us > y->est_us ? -1 : 1;
  return x->calls > y->calls ? -1 : x->calls < y->calls ? 1 : 0;
}

/* The tensors' shapes and dtypes of a configuration (how forward() knows
 * it), as one comparable string. */
static void layout_key(kl_buf *b, json_object *rec) {
  json_object *args;
  json_object_object_get_ex(rec, "args", &args);
  for (size_t i = 0; i < json_object_array_length(args); i++) {
    json_object *t, *a = json_object_array_get_idx(args, i);
    if (!json_object_object_get_ex(a, "tensor", &t)) continue;
    json_object *shape;
    json_object_object_get_ex(t, "shape", &shape);
    kl__buf_printf(b, "%s|%s;", json_object_get_string(shape),
                   str_of(t, "dtype"));
  }
}

static const char *dtype_of(const char *torch_dtype) {
  static const char *const map[][2] = {
      {"float32", "f32"},   {"float64", "f64"}, {"float16", "f16"},
      {"bfloat16", "bf16"}, {"int64", "i64"},   {"int32", "i32"},
      {"int16", "i16"},     {"int8", "i8"},     {"uint64", "u64"},
      {"uint32", "u32"},    {"uint16", "u16"},  {"uint8", "u8"},
      {"bool", "u8"}};
  for (size_t i = 0; i < KL_ARRAY_SIZE(map); i++)
    if (strcmp(map[i][0], torch_dtype) == 0) return map[i][1];
  return NULL;
}

/* The params: the first kept configuration's tensors, in order; every kept
 * one must have the same names and dtypes. A tensor any kept configuration
 * wrote is an inout. */
static int yaml_params(kl_buf *y, pyconf *pc, size_t n, const char *obs) {
  json_object *first = NULL;
  for (size_t i = 0; i < n && !first; i++)
    if (pc[i].kept) first = pc[i].rec;
  json_object *args;
  json_object_object_get_ex(first, "args", &args);
  size_t na = json_object_array_length(args), tensors = 0, written = 0;
  for (size_t i = 0; i < na; i++) {
    json_object *t, *a = json_object_array_get_idx(args, i);
    const char *name = str_of(a, "name");
    if (!json_object_object_get_ex(a, "tensor", &t)) {
      json_object *u;
      if (json_object_object_get_ex(a, "unrecorded", &u))
        return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                         "%s: argument '%s' is a %s, which the observer does "
                         "not record (tensors and plain values only)",
                         obs, name, json_object_get_string(u));
      continue;
    }
    const char *dt = dtype_of(str_of(t, "dtype"));
    if (!dt)
      return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                       "%s: tensor '%s' is %s, which a case cannot describe",
                       obs, name, str_of(t, "dtype"));
    if (strncmp(str_of(t, "device"), "cuda", 4) != 0)
      return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                       "%s: tensor '%s' is on %s; a Triton case's tensors "
                       "are on the GPU",
                       obs, name, str_of(t, "device"));
    bool wrote = false;
    for (size_t c = 0; c < n; c++) {
      if (!pc[c].kept) continue;
      json_object *ca, *ct, *w;
      json_object_object_get_ex(pc[c].rec, "args", &ca);
      json_object *x = i < json_object_array_length(ca)
                           ? json_object_array_get_idx(ca, i)
                           : NULL;
      if (!x || strcmp(str_of(x, "name"), name) ||
          !json_object_object_get_ex(x, "tensor", &ct) ||
          strcmp(str_of(ct, "dtype"), str_of(t, "dtype")))
        return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                         "%s: '%s' is not a %s tensor in every kept "
                         "configuration: make a case of fewer (--top 1)",
                         obs, name, str_of(t, "dtype"));
      wrote |= json_object_object_get_ex(ct, "written", &w) &&
               json_object_get_boolean(w);
    }
    kl__buf_printf(y, "  - { name: %s, type: %s*, role: %s }%s\n", name, dt,
                   wrote ? "inout" : "input",
                   wrote ? "   # confirm: the first call wrote it (an "
                           "output it may also read)"
                         : "");
    tensors++;
    written += wrote;
  }
  if (!tensors)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                     "%s: the kernel takes no tensors: nothing for a case to "
                     "check",
                     obs);
  if (!written)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                     "%s: no tensor changed in the kernel's first call of "
                     "any kept configuration, so kernlab cannot tell its "
                     "outputs",
                     obs);
  return kl__buf_status(y);
}

/* A shape's values: its config number and the integer scalars, whose names
 * do not clash with a shape's own keys. */
static void yaml_shape(kl_buf *y, const pyconf *c, size_t rank, double total) {
  json_object *args, *grid;
  json_object_object_get_ex(c->rec, "args", &args);
  json_object_object_get_ex(c->rec, "grid", &grid);
  kl__buf_printf(y, "  - { name: obs%zu, weight: %lld, config: %zu", rank,
                 (long long)c->calls, rank);
  for (size_t i = 0; i < json_object_array_length(args); i++) {
    json_object *v, *a = json_object_array_get_idx(args, i);
    const char *name = str_of(a, "name");
    if (!json_object_object_get_ex(a, "value", &v) ||
        !json_object_is_type(v, json_type_int) || !strcmp(name, "name") ||
        !strcmp(name, "weight") || !strcmp(name, "config") ||
        !strcmp(name, "values") || !strcmp(name, "entry"))
      continue;
    kl__buf_printf(y, ", %s: %lld", name, (long long)json_object_get_int64(v));
  }
  kl__buf_printf(y, " }   # grid %s, %lld call%s", json_object_get_string(grid),
                 (long long)c->calls, c->calls == 1 ? "" : "s");
  if (!isnan(c->est_us) && total > 0)
    kl__buf_printf(y, ", %.1f%% of the kernel's GPU time",
                   100 * c->est_us / total);
  kl__buf_puts(y, "\n");
}

static int reduce_source(kl_buf *text, kl_buf *dropped, const char *source,
                         const char *entry) {
  json_object *doc = NULL, *d;
  int rc = kl__python_script(&doc, reduce_py, source, entry, 16u << 20);
  if (rc < 0) return rc;
  rc = kl__buf_puts(text, str_of(doc, "text"));
  json_object_object_get_ex(doc, "dropped", &d);
  for (size_t i = 0; rc == 0 && d && i < json_object_array_length(d); i++) {
    json_object *e = json_object_array_get_idx(d, i);
    rc = kl__buf_printf(
        dropped, "- line %lld: `%s`\n",
        (long long)json_object_get_int64(json_object_array_get_idx(e, 0)),
        json_object_get_string(json_object_array_get_idx(e, 1)));
  }
  json_object_put(doc);
  return rc;
}

int kl__case_from_python(kl_buf *report, const kl_observation *o,
                         const kl_case_from_observation_options *opts) {
  const char *entry = opts->entry;
  size_t all = json_object_array_length(o->python), n = 0;
  pyconf *pc = kl__calloc(all ? all : 1, sizeof *pc);
  kl_buf y = KL_BUF_INIT, kernel = KL_BUF_INIT, dropped = KL_BUF_INIT,
         md = KL_BUF_INIT, notes = KL_BUF_INIT, ka = KL_BUF_INIT,
         kb = KL_BUF_INIT;
  json_object *doc = NULL, *kept = NULL;
  kl_case *back = NULL;
  int rc = pc ? 0 : kl__error_oom();
  for (size_t i = 0; rc == 0 && i < all; i++) {
    json_object *r = json_object_array_get_idx(o->python, i);
    /* an autotuner's tries alone are not what the program ran */
    if (strcmp(str_of(r, "kernel"), entry) || int_of(r, "calls") < 1) continue;
    pc[n].rec = r;
    pc[n++].calls = int_of(r, "calls");
  }
  if (rc < 0) goto done;
  if (!n) {
    rc = kl__error(KL_ENOTFOUND, KL_DOMAIN_CASE,
                   "%s: '%s' ran only in an autotuner's tries", o->path, entry);
    goto done;
  }
  const char *source = opts->source ? opts->source : str_of(pc[0].rec, "file");
  for (size_t i = 1; !opts->source && i < n; i++)
    if (strcmp(str_of(pc[i].rec, "file"), source)) {
      rc = kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                     "%s: Triton kernels named '%s' come from %s and %s: "
                     "say which with --source",
                     o->path, entry, source, str_of(pc[i].rec, "file"));
      goto done;
    }
  join_times(pc, n, o, entry);
  qsort(pc, n, sizeof *pc, by_weight);
  /* keep the first covering `share` of the weight, at most K; a later one
   * whose tensors' layouts equal a kept one's cannot be told apart */
  double share = opts->configs.share > 0 ? opts->configs.share : 0.9;
  int top = opts->configs.max_configs > 0 ? opts->configs.max_configs : 8;
  bool timed = !isnan(pc[0].est_us);
  double total = 0, covered = 0;
  for (size_t i = 0; i < n; i++)
    total +=
        timed ? (isnan(pc[i].est_us) ? 0 : pc[i].est_us) : (double)pc[i].calls;
  size_t nkept = 0;
  for (size_t i = 0; i < n && (int)nkept < top && covered < share * total;
       i++) {
    kl_buf_dispose(&ka);
    layout_key(&ka, pc[i].rec);
    for (size_t j = 0; j < i && !pc[i].same_as; j++) {
      if (!pc[j].kept) continue;
      kl_buf_dispose(&kb);
      layout_key(&kb, pc[j].rec);
      if ((rc = kl__buf_status(&ka)) < 0 || (rc = kl__buf_status(&kb)) < 0)
        goto done;
      if (strcmp(ka.ptr ? ka.ptr : "", kb.ptr ? kb.ptr : "") == 0)
        pc[i].same_as = (int)j + 1;
    }
    if (pc[i].same_as) {
      kl__buf_printf(&notes,
                     "left out: a configuration of %lld calls with the same "
                     "tensors as a kept one but other scalars or options "
                     "(forward knows configurations by their tensors)\n",
                     (long long)pc[i].calls);
      continue;
    }
    pc[i].kept = true;
    nkept++;
    covered +=
        timed ? (isnan(pc[i].est_us) ? 0 : pc[i].est_us) : (double)pc[i].calls;
  }
  for (size_t i = 0; i < n; i++)
    if (pc[i].grid_differs)
      kl__buf_printf(&notes,
                     "the driver launched %s with another grid than Python "
                     "asked for at some calls: configurations ranked by "
                     "calls, not time\n",
                     entry);
  /* case.yaml */
  char name[96];
  snprintf(name, sizeof name, "%s", entry);
  kl__buf_printf(&y,
                 "# Made by kl case from-observation from %s: the Triton "
                 "kernel %s as\n# `%s` launched it (kernel.py: its source "
                 "without top-level statements;\n# launches.json: the "
                 "configurations kept; ops.py says how they run).\n"
                 "kernlab: 1\nname: %s\n"
                 "description: Triton kernel %s at a real program's "
                 "configurations\n"
                 "backend: python\n"
                 "kernel: { module: ops.py, device: cuda }\n"
                 "# its tensor arguments in order (scalars, constexprs and "
                 "the grid are the\n# configuration's, in launches.json)\n"
                 "params:\n",
                 o->path, entry, o->program ? o->program : "?", name, entry);
  if ((rc = yaml_params(&y, pc, n, o->path)) < 0) goto done;
  kl__buf_printf(&y,
                 "# the configurations kept, by %s; weight: calls\n"
                 "shapes:\n",
                 timed ? "GPU time" : "calls (no GPU time joined)");
  kept = json_object_new_array();
  size_t rank = 0;
  for (size_t i = 0; i < n; i++) {
    if (!pc[i].kept) continue;
    yaml_shape(&y, &pc[i], ++rank, timed ? total : 0);
    json_object *c = json_object_new_object(), *v;
    static const char *const keys[] = {"grid", "args", "options", "calls"};
    for (size_t k = 0; k < KL_ARRAY_SIZE(keys); k++)
      if (json_object_object_get_ex(pc[i].rec, keys[k], &v))
        json_object_object_add(c, keys[k], json_object_get(v));
    if (!json_object_object_get_ex(c, "options", &v))
      json_object_object_add(c, "options", json_object_new_object());
    char sname[32];
    snprintf(sname, sizeof sname, "obs%zu", rank);
    json_object_object_add(c, "shape", json_object_new_string(sname));
    json_object_array_add(kept, c);
  }
  kl__buf_puts(&y, "# the program's own kernel is the oracle: a candidate "
                   "must do what it does\nreference: { kind: baseline }\n"
                   "objective: total_time\n");
  doc = json_object_new_object();
  json_object_object_add(doc, "kernel", json_object_new_string(entry));
  json_object_object_add(doc, "source", json_object_new_string(source));
  json_object_object_add(doc, "configs", kept);
  kept = NULL;
  if ((rc = reduce_source(&kernel, &dropped, source, entry)) < 0) goto done;
  kl__buf_printf(&md,
                 "# %s, from a real program\n\nMade from the observation %s "
                 "of `%s`: the Triton kernel `%s` of %s.\nThe shapes are "
                 "the program's own configurations (tensors' shapes, strides "
                 "and\ndtypes, scalars, constexprs, grid); a candidate is a "
                 "Python file defining\n`forward` over the same tensors in "
                 "the same order (case.yaml's params),\nupdating the inouts "
                 "in place.\n",
                 entry, o->path, o->program ? o->program : "?", entry, source);
  if (dropped.size)
    kl__buf_printf(&md,
                   "\nkernel.py leaves out these top-level statements "
                   "of the program:\n\n%s",
                   dropped.ptr);
  if (notes.size) kl__buf_printf(&md, "\nNotes:\n\n%s", notes.ptr);
  const char *js = json_object_to_json_string_ext(
      doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
  if ((rc = kl__buf_status(&y)) < 0 || (rc = kl__buf_status(&md)) < 0 ||
      (rc = kl__buf_status(&notes)) < 0)
    goto done;
  if (mkdir(opts->dir, 0777) < 0) {
    rc = kl__error_os(errno == EEXIST ? KL_EEXISTS : KL_EIO, opts->dir,
                      "cannot create the case folder");
    goto done;
  }
  char *cands = kl__path_join(opts->dir, "candidates");
  rc = cands ? kl__mkdir_p(cands) : kl__error_oom();
  kl__free(cands);
  if (rc < 0 ||
      (rc = kl__obs_write_new(opts->dir, "case.yaml", y.ptr, y.size)) < 0 ||
      (rc = kl__obs_write_new(opts->dir, "kernel.py",
                              kernel.ptr ? kernel.ptr : "", kernel.size)) < 0 ||
      (rc = kl__obs_write_new(opts->dir, "launches.json", js, strlen(js))) <
          0 ||
      (rc = kl__obs_write_new(opts->dir, "ops.py", ops_py, sizeof ops_py - 1)) <
          0 ||
      (rc = kl__obs_write_new(opts->dir, "program.md", md.ptr, md.size)) < 0 ||
      (rc = kl_case_load(&back, opts->dir, NULL)) < 0 || !report)
    goto done;
  kl__buf_printf(report,
                 "wrote %s: %zu shape%s covering %.1f%% of %s's %s\n%s"
                 "confirm in %s/case.yaml: the lines marked 'confirm' "
                 "(tensors the kernel wrote)\n",
                 opts->dir, nkept, nkept == 1 ? "" : "s",
                 total > 0 ? 100 * covered / total : 0, entry,
                 timed ? "recorded GPU time" : "recorded calls",
                 notes.ptr ? notes.ptr : "", opts->dir);
  rc = kl__buf_status(report);
done:
  kl_case_free(back);
  json_object_put(doc);
  json_object_put(kept);
  kl_buf_dispose(&y);
  kl_buf_dispose(&kernel);
  kl_buf_dispose(&dropped);
  kl_buf_dispose(&md);
  kl_buf_dispose(&notes);
  kl_buf_dispose(&ka);
  kl_buf_dispose(&kb);
  kl__free(pc);
  return rc;
}
