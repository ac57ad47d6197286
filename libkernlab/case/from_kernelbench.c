/* kl case from-kernelbench: a python case from a KernelBench problem file
 * (a `Model` nn.Module, `get_inputs()`, `get_init_inputs()` and the module
 * constants they read).
 *
 * The problem is read, never run: python3's ast (started here, with no
 * torch needed) lists Model.forward's parameters (those with defaults
 * only where get_inputs()'s returns list them), the module's numeric
 * constants and whether forward returns a tuple. The case folder gets the
 * problem unchanged (problem.py), a contract module (ops.py, the text
 * below) that makes the problem a python case, case.yaml (the constants are
 * the one shape's values; KernelBench's tolerance, 1e-2) and program.md.
 * ops.py builds every model after torch.manual_seed(42), as KernelBench's
 * evaluation does, so a candidate's ModelNew with the same parameters
 * starts from the same weights; kl-pyworker calls its forward_of() for a
 * candidate that defines ModelNew instead of forward. */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/internal.h"
#include "../core/json.h"
#include "case_internal.h"

static const char inspect_py[] =
    "import ast, json, sys\n"
    "path = sys.argv[1]\n"
    "def fail(line, col, msg):\n"
    "    print(json.dumps({'error': msg, 'line': line, 'column': col}))\n"
    "    sys.exit(0)\n"
    "try:\n"
    "    tree = ast.parse(open(path, 'rb').read(), path)\n"
    "except SyntaxError as e:\n"
    "    fail(e.lineno or 1, e.offset or 1, e.msg)\n"
    "except OSError as e:\n"
    "    fail(1, 1, e.strerror)\n"
    "top = {}\n"
    "consts = []\n"
    "for n in tree.body:\n"
    "    if isinstance(n, (ast.ClassDef, ast.FunctionDef)):\n"
    "        top[n.name] = n\n"
    "    if isinstance(n, ast.Assign) and len(n.targets) == 1 and "
    "isinstance(n.targets[0], ast.Name):\n"
    "        try:\n"
    "            v = ast.literal_eval(n.value)\n"
    "        except Exception:\n"
    "            continue\n"
    "        if isinstance(v, (int, float)) and not isinstance(v, bool):\n"
    "            consts.append([n.targets[0].id, v])\n"
    "model = top.get('Model')\n"
    "if not isinstance(model, ast.ClassDef):\n"
    "    fail(1, 1, 'no class Model: a KernelBench problem defines Model "
    "(an nn.Module), get_inputs() and get_init_inputs()')\n"
    "for f in ('get_inputs', 'get_init_inputs'):\n"
    "    if not isinstance(top.get(f), ast.FunctionDef):\n"
    "        fail(model.lineno, 1, 'no function %s(): a KernelBench problem "
    "defines it beside Model' % f)\n"
    "fwd = [n for n in model.body if isinstance(n, ast.FunctionDef) and "
    "n.name == 'forward']\n"
    "if not fwd:\n"
    "    fail(model.lineno, model.col_offset + 1, 'class Model has no "
    "forward()')\n"
    "a = fwd[0].args\n"
    "if a.vararg:\n"
    "    fail(fwd[0].lineno, fwd[0].col_offset + 1, 'Model.forward takes "
    "*%s: name its inputs' % a.vararg.arg)\n"
    "names = [x.arg for x in a.posonlyargs + a.args][1:]\n"
    "# parameters with defaults (LSTM's h0=None) are inputs only where\n"
    "# get_inputs() gives them: count what its returns list\n"
    "lens = set()\n"
    "for n in ast.walk(top['get_inputs']):\n"
    "    if isinstance(n, ast.Return):\n"
    "        v = n.value\n"
    "        literal = isinstance(v, (ast.List, ast.Tuple)) and not any(\n"
    "            isinstance(e, ast.Starred) for e in v.elts)\n"
    "        lens.add(len(v.elts) if literal else None)\n"
    "given = lens.pop() if len(lens) == 1 else None\n"
    "required = len(names) - min(len(a.defaults), len(names))\n"
    "if given is not None and required <= given < len(names):\n"
    "    names = names[:given]\n"
    "outs = 1\n"
    "for n in ast.walk(fwd[0]):\n"
    "    if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple):\n"
    "        outs = max(outs, len(n.value.elts))\n"
    "print(json.dumps({'inputs': names, 'outputs': outs, "
    "'constants': consts}))\n";

static const char ops_py[] =
    "\"\"\"kernlab's contract for the KernelBench problem in problem.py "
    "(written\n"
    "by `kl case from-kernelbench`): the problem's Model is the baseline "
    "and the\n"
    "oracle; a candidate file defines ModelNew (KernelBench's format) or "
    "forward.\n"
    "\n"
    "A shape's values are the problem's module constants (N, batch_size "
    "...): they\n"
    "are set on the problem before get_inputs() and get_init_inputs() run, "
    "so a\n"
    "shape added to case.yaml runs the problem at other sizes. Inputs come "
    "from\n"
    "get_inputs() after torch.manual_seed(seed), as in KernelBench's "
    "evaluation,\n"
    "but made on the GPU: its factory calls that name no device run under\n"
    "torch.device('cuda') (torch.randn on the host takes tens of ms for 8M\n"
    "floats, seconds for KernelBench's larger inputs, and every check and "
    "placement\n"
    "makes them again); a get_inputs() that fails there runs again on the "
    "host,\n"
    "reseeded, and its tensors move to the GPU. Every model is built after\n"
    "torch.manual_seed(42): a ModelNew with the same parameters starts from "
    "the\n"
    "same weights.\"\"\"\n"
    "import importlib.util\n"
    "import os\n"
    "\n"
    "import torch\n"
    "\n"
    "_HERE = os.path.dirname(os.path.abspath(__file__))\n"
    "_spec = importlib.util.spec_from_file_location(\n"
    "    \"kernelbench_problem\", os.path.join(_HERE, \"problem.py\"))\n"
    "problem = importlib.util.module_from_spec(_spec)\n"
    "_spec.loader.exec_module(problem)\n"
    "\n"
    "_models = {}  # (class, shape) -> the model\n"
    "_shapes = {}  # the inputs' sizes and dtypes -> the shape they are "
    "of\n"
    "\n"
    "\n"
    "def _signature(xs):\n"
    "    return tuple((tuple(x.shape), str(x.dtype)) if "
    "isinstance(x, torch.Tensor)\n"
    "                 else repr(x) for x in xs)\n"
    "\n"
    "\n"
    "def _set(shape):\n"
    "    for k, v in shape.items():\n"
    "        if hasattr(problem, k):\n"
    "            setattr(problem, k, v)\n"
    "\n"
    "\n"
    "def _get_inputs(seed):\n"
    "    torch.manual_seed(seed)\n"
    "    try:\n"
    "        with torch.device('cuda'):\n"
    "            return problem.get_inputs()\n"
    "    except Exception:  # it needs the host (numpy, a CPU generator ...)\n"
    "        torch.manual_seed(seed)\n"
    "        return problem.get_inputs()\n"
    "\n"
    "\n"
    "def inputs(shape, seed):\n"
    "    _set(shape)\n"
    "    xs = tuple(x.cuda() if isinstance(x, torch.Tensor) else x\n"
    "               for x in _get_inputs(seed))\n"
    "    _shapes[_signature(xs)] = dict(shape)\n"
    "    return xs\n"
    "\n"
    "\n"
    "def _call(cls, xs):\n"
    "    shape = _shapes.get(_signature(xs), {})\n"
    "    key = (cls, tuple(sorted(shape.items())))\n"
    "    if key not in _models:\n"
    "        _set(shape)\n"
    "        torch.manual_seed(42)\n"
    "        m = cls(*problem.get_init_inputs())\n"
    "        if isinstance(m, torch.nn.Module):\n"
    "            m = m.cuda().eval()\n"
    "        _models[key] = m\n"
    "    with torch.no_grad():\n"
    "        return _models[key](*xs)\n"
    "\n"
    "\n"
    "def reference(*xs):\n"
    "    return _call(problem.Model, xs)\n"
    "\n"
    "\n"
    "def forward(*xs):\n"
    "    return _call(problem.Model, xs)\n"
    "\n"
    "\n"
    "def forward_of(candidate):\n"
    "    \"\"\"The forward of a candidate file that defines ModelNew.\"\"\"\n"
    "    cls = candidate.ModelNew\n"
    "\n"
    "    def forward(*xs):\n"
    "        return _call(cls, xs)\n"
    "    return forward\n";

/* The case's name: the file's stem as an identifier ("19_ReLU.py" ->
 * kb_19_ReLU). */
static void case_name(char *name, size_t cap, const char *problem) {
  const char *base = strrchr(problem, '/');
  base = base ? base + 1 : problem;
  size_t n = strcspn(base, ".");
  snprintf(name, cap, "kb_");
  size_t k = 3;
  for (size_t i = 0; i < n && k + 1 < cap; i++) {
    char ch = base[i];
    name[k++] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                        (ch >= '0' && ch <= '9') || ch == '_'
                    ? ch
                    : '_';
  }
  name[k] = '\0';
}

static int write_in(const char *dir, const char *file, const char *text,
                    size_t n, kl_buf *report) {
  kl_buf path = KL_BUF_INIT;
  kl__buf_printf(&path, "%s/%s", dir, file);
  int rc = kl__buf_status(&path);
  if (rc == 0) rc = kl__write_file_atomic(path.ptr, text, n);
  if (rc == 0) rc = kl__buf_printf(report, "wrote %s\n", path.ptr);
  kl_buf_dispose(&path);
  return rc;
}

static int yaml_case(kl_buf *y, const char *name, const char *problem,
                     json_object *doc) {
  json_object *ins = kl__json_get(doc, "inputs");
  json_object *consts = kl__json_get(doc, "constants");
  int outs = (int)kl__json_num(doc, "outputs");
  kl__buf_printf(y,
                 "# Made by kl case from-kernelbench from %s: the problem's "
                 "Model is the\n# baseline and the oracle (ops.py says "
                 "how); a candidate defines ModelNew.\n"
                 "kernlab: 1\nname: %s\n"
                 "description: KernelBench problem %s as a python case\n"
                 "backend: python\n"
                 "kernel: { module: ops.py, device: cuda }\n"
                 "# the inputs of Model.forward, then what it returns (the "
                 "module makes the\n# tensors, so no counts; f32 as "
                 "KernelBench's get_inputs() makes them)\n"
                 "params:\n",
                 problem, name, problem);
  for (size_t i = 0; ins && i < json_object_array_length(ins); i++)
    kl__buf_printf(y, "  - { name: %s, type: f32*, role: input }\n",
                   json_object_get_string(json_object_array_get_idx(ins, i)));
  for (int k = 0; k < outs; k++) {
    char out[32] = "out";
    if (outs > 1) snprintf(out, sizeof(out), "out_%d", k);
    kl__buf_printf(y, "  - { name: %s, type: f32*, role: output }\n", out);
  }
  kl__buf_puts(y, "# the problem's module constants: add shapes to run it "
                  "at other sizes\nshapes:\n  - { name: kernelbench");
  size_t nc = consts ? json_object_array_length(consts) : 0;
  for (size_t i = 0; i < nc; i++) {
    json_object *c = json_object_array_get_idx(consts, i);
    const char *k = json_object_get_string(json_object_array_get_idx(c, 0));
    json_object *v = json_object_array_get_idx(c, 1);
    if (strcmp(k, "name") == 0 || strcmp(k, "weight") == 0) continue;
    if (json_object_is_type(v, json_type_int))
      kl__buf_printf(y, ", %s: %lld", k, (long long)json_object_get_int64(v));
    else
      kl__buf_printf(y, ", %s: %.15g", k, json_object_get_double(v));
  }
  kl__buf_puts(y, " }\n"
                  "# KernelBench's tolerance (torch.allclose, atol = rtol "
                  "= 1e-2)\nreference: { atol: 1e-2, rtol: 1e-2 }\n");
  return kl__buf_status(y);
}

int kl_case_from_kernelbench(kl_buf *report, const char *problem,
                             const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0)
    return kl__error(KL_EEXISTS, KL_DOMAIN_OS,
                     "%s exists: kl case from-kernelbench writes a new "
                     "folder",
                     dir);
  kl_buf src = KL_BUF_INIT, y = KL_BUF_INIT, md = KL_BUF_INIT,
         out = KL_BUF_INIT;
  json_object *doc = NULL;
  int rc = kl__read_file(&src, problem);
  if (rc < 0 ||
      (rc = kl__python_script(&doc, inspect_py, problem, NULL, 1 << 20)) < 0)
    goto done;
  char name[96];
  case_name(name, sizeof(name), problem);
  if ((rc = yaml_case(&y, name, problem, doc)) < 0) goto done;
  kl__buf_printf(&md,
                 "# %s\n\nKernelBench problem `%s`, made a case by `kl case "
                 "from-kernelbench`.\n\nThe PyTorch `Model` in problem.py is "
                 "the baseline and the oracle. A candidate is a\nPython file "
                 "in KernelBench's format: it defines `class ModelNew` with "
                 "Model's\nconstructor arguments and forward (any DSL "
                 "importable here: Triton, CuTe DSL,\ncuTile, CuPy, "
                 "torch.utils.cpp_extension, PyTorch), or a top-level "
                 "`forward`\ntaking the inputs. Make it faster than Model "
                 "without changing what it computes.\n",
                 name, problem);
  if ((rc = kl__buf_status(&md)) < 0) goto done;
  if ((rc = kl__mkdir_p(dir)) < 0) goto done;
  kl_buf cands = KL_BUF_INIT;
  kl__buf_printf(&cands, "%s/candidates", dir);
  rc = kl__buf_status(&cands);
  if (rc == 0) rc = kl__mkdir_p(cands.ptr);
  kl_buf_dispose(&cands);
  if (rc < 0 ||
      (rc = write_in(dir, "problem.py", src.ptr ? src.ptr : "", src.size,
                     &out)) < 0 ||
      (rc = write_in(dir, "ops.py", ops_py, sizeof(ops_py) - 1, &out)) < 0 ||
      (rc = write_in(dir, "case.yaml", y.ptr, y.size, &out)) < 0 ||
      (rc = write_in(dir, "program.md", md.ptr, md.size, &out)) < 0)
    goto done;
  rc = kl__buf_put(report, out.ptr, out.size);
done:
  json_object_put(doc);
  kl_buf_dispose(&src);
  kl_buf_dispose(&y);
  kl_buf_dispose(&md);
  kl_buf_dispose(&out);
  return rc;
}
