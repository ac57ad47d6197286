#!/usr/bin/env python3
"""kl observe's Python side and python cases from observations, without a
GPU (ctest label unit).

  observer  the sitecustomize kl observe puts on PYTHONPATH, in a program
            run against a stand-in `triton` package (JITFunction.run and
            Autotuner._bench as Triton 3.x spell them): each call noted by
            configuration (the grid a lambda gives from the bound
            arguments and defaults, scalars, options), the autotuner's
            benchmarking calls as tries, ordinals over every launch, a
            warmup (compile-only) call not noted, the program's own
            exception reaching it unchanged, a sitecustomize further down
            the path still run, nothing written without KL_OBSERVE_OUT
  show      kl observe --show lists the Triton kernels called (text, JSON)
  case      kl case from-observation on the H100 recording of
            tests/observe/triton/app.py (fixtures/triton_app_h100.json,
            trimmed): add_kernel's shapes ranked by the GPU time of the
            driver launches its ordinals join, n_elements exact, the
            written tensor an inout, kernel.py without the program's
            statements (and program.md listing them), launches.json and
            ops.py; softmax_kernel (no launches joined) ranked by calls,
            configurations alike in tensors left out and said so
  errors    the recorded file gone, a source without the kernel at top
            level, a .py source with no Triton call recorded, a CUDA entry
            without --source, an existing folder, a bad python_launches
            record (path:line:column): each exit 2 with one line
usage: test_observe_python.py KL SOURCE_DIR BUILD_DIR
"""
import ast
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, scratch  # noqa: E402

KL, SRC, BUILD = sys.argv[1], sys.argv[2], sys.argv[3]
TMP, ENV = scratch(SRC, "kl-observe-py-")
HOOK = os.path.join(BUILD, "libexec", "kernlab", "python-observe")
FIXTURE = SRC + "/tests/observe/fixtures/triton_app_h100.json"
APP = SRC + "/tests/observe/triton/app.py"


def kl(*args):
    p = subprocess.run([KL] + list(args), capture_output=True, text=True,
                       env=ENV, timeout=300)
    print("$ kl %s -> %d" % (" ".join(args), p.returncode), flush=True)
    return p


def read(path):
    return open(path).read() if os.path.exists(path) else ""


# ---- the observer, against a stand-in triton --------------------------------
fake = os.path.join(TMP, "fake")
os.makedirs(fake + "/triton/runtime")
with open(fake + "/triton/__init__.py", "w") as f:
    f.write("from .runtime.jit import JITFunction\n"
            "__version__ = 'stand-in'\n\n\n"
            "def jit(fn):\n    return JITFunction(fn)\n")
open(fake + "/triton/runtime/__init__.py", "w").close()
with open(fake + "/triton/runtime/jit.py", "w") as f:
    f.write('''
class JITFunction:
    """Triton 3.x's shape: kernel[grid](...) is run(..., grid=, warmup=)."""
    launches = []

    def __init__(self, fn):
        self.fn = fn

    def __getitem__(self, grid):
        return lambda *a, **k: self.run(*a, grid=grid, warmup=False, **k)

    def run(self, *args, grid, warmup, **kwargs):
        if kwargs.get("explode"):
            raise RuntimeError("the kernel's own error")
        if not warmup:
            JITFunction.launches.append((self.fn.__name__, args, kwargs))
        return "handle"
''')
with open(fake + "/triton/runtime/autotuner.py", "w") as f:
    f.write('''
class Autotuner:
    def __init__(self, fn, configs):
        self.fn, self.configs = fn, configs

    def _bench(self, *args, config, **meta):
        return self.fn.run(*args, grid=(2,), warmup=False, **config)

    def run(self, *args, **kwargs):
        for c in self.configs:
            self._bench(*args, config=c)
        return self.fn.run(*args, grid=(2,), warmup=False, **self.configs[-1])
''')
user_site = os.path.join(TMP, "user_site")
os.makedirs(user_site)
with open(user_site + "/sitecustomize.py", "w") as f:
    f.write("import os\nos.environ['USER_SITE_RAN'] = '1'\n")
prog = os.path.join(TMP, "prog.py")
with open(prog, "w") as f:
    f.write('''import os, sys
import triton
from triton.runtime.autotuner import Autotuner


@triton.jit
def scale(x, n, alpha, BLOCK: int = 256, flag=None):
    pass


for i in range(5):
    scale[lambda meta: (meta["n"] // meta["BLOCK"],)](None, 4096, 0.5)
scale[(3, 2)](None, 7, 1.5, BLOCK=64, num_warps=8)
scale.run(None, 7, 1.5, grid=(1,), warmup=True)
tuned = Autotuner(scale, [{"num_warps": 4}, {"num_warps": 8}])
for i in range(3):
    tuned.run(None, 100, 2.0)
try:
    scale[(1,)](None, 1, 1.0, explode=True)
except RuntimeError as e:
    print("caught:", e)
print("user site:", os.environ.get("USER_SITE_RAN"))
''')
out = os.path.join(TMP, "pyout")
os.makedirs(out)
env = dict(os.environ, PYTHONPATH=":".join([HOOK, fake, user_site]),
           KL_OBSERVE_OUT=out)
p = subprocess.run([sys.executable, prog], capture_output=True, text=True,
                   env=env, timeout=120)
check(p.returncode == 0 and "caught: the kernel's own error" in p.stdout and
      "user site: 1" in p.stdout,
      "the program runs as before: its exception, its sitecustomize: %s %s"
      % (p.stdout, p.stderr[-800:]))
files = os.listdir(out)
check(files == ["py-%d.json" % int(files[0][3:-5])] if files else False,
      "one py-<pid>.json: %s" % files)
doc = json.load(open(os.path.join(out, files[0]))) if files else {}
check(doc.get("kernlab_python_launches") == 1 and doc.get("errors") == [] and
      doc.get("versions", {}).get("triton") == "stand-in",
      "its header, no observer errors: %s"
      % {k: doc.get(k) for k in ("errors", "versions")})
cs = doc.get("configs", [])
got = [(c["grid"], c["calls"], c["tries"], c["ordinals"], c["options"],
        [(a["name"], a.get("value")) for a in c["args"]]) for c in cs]
want = [([16, 1, 1], 5, 0, [0, 1, 2, 3, 4], {},
         [("x", None), ("n", 4096), ("alpha", 0.5)]),
        ([3, 2, 1], 1, 0, [5], {"num_warps": 8},
         [("x", None), ("n", 7), ("alpha", 1.5), ("BLOCK", 64)]),
        ([2, 1, 1], 0, 3, [6, 9, 12], {"num_warps": 4},
         [("x", None), ("n", 100), ("alpha", 2.0)]),
        ([2, 1, 1], 3, 3, [7, 8, 10, 11, 13, 14], {"num_warps": 8},
         [("x", None), ("n", 100), ("alpha", 2.0)]),
        ([1, 1, 1], 1, 0, [15], {"explode": True},
         [("x", None), ("n", 1), ("alpha", 1.0)])]
check(got == want, "configurations, calls apart from tries, ordinals over "
      "every launch, the grid from the lambda and BLOCK's default, no "
      "warmup:\n%s" % "\n".join(map(str, got)))
check(all(c["kernel"] == "scale" and c["file"] == prog and c["line"] == 6
          for c in cs), "each names the kernel, its file and line")
os.remove(os.path.join(out, files[0])) if files else None
p = subprocess.run([sys.executable, prog], capture_output=True, text=True,
                   env=dict(env, KL_OBSERVE_OUT=""), timeout=120)
check(p.returncode == 0 and os.listdir(out) == [],
      "without KL_OBSERVE_OUT it notes nothing: %s" % p.stderr[-300:])

# ---- a case from the H100 recording ----------------------------------------
p = kl("observe", "--show", FIXTURE)
check(p.returncode == 0 and "Triton kernels the Python program called:" in
      p.stdout and "2 configurations, 24 calls" in p.stdout,
      "kl observe --show lists the Triton kernels: %s" % p.stdout[-600:])
p = kl("observe", "--show", FIXTURE, "--json")
try:
    pk = {k["kernel"]: k for k in json.loads(p.stdout).get("python", [])}
except ValueError:
    pk = {}
check(pk.get("add_kernel", {}).get("configs") == 2 and
      pk.get("softmax_kernel", {}).get("configs") == 4 and
      pk["add_kernel"]["line"] == 15, "and its JSON: %s" % pk)
case = TMP + "/add"
p = kl("case", "from-observation", FIXTURE, "--entry", "add_kernel",
       "--source", APP, "-o", case, "--share", "1")
check(p.returncode == 0 and "2 shapes covering 100.0% of add_kernel's "
      "recorded GPU time" in p.stdout, "add_kernel: %s %s"
      % (p.stdout, p.stderr))
y = read(case + "/case.yaml")
check("backend: python" in y and "module: ops.py, device: cuda" in y and
      "reference: { kind: baseline }" in y and "objective: total_time" in y,
      "a python case on the GPU, the program's kernel the oracle")
check("{ name: x_ptr, type: f32*, role: input }" in y and
      "{ name: y_ptr, type: f32*, role: input }" in y and
      "{ name: output_ptr, type: f32*, role: inout }   # confirm" in y,
      "the tensors as params, the written one an inout to confirm:\n%s" % y)
lines = [ln for ln in y.splitlines() if "name: obs" in ln]
check(len(lines) == 2 and
      "{ name: obs1, weight: 20, config: 1, n_elements: 4194304, "
      "BLOCK_SIZE: 1024 }" in lines[0] and "94.3% of the kernel's GPU time"
      in lines[0] and "n_elements: 1536000" in lines[1],
      "the busy size first, by the joined launches' time:\n%s"
      % "\n".join(lines))
k = read(case + "/kernel.py")
check("def add_kernel" in k and "def softmax_kernel" in k and
      "@triton.autotune" in k and "__main__" not in k and
      "get_active_torch_device" not in k and "sys.argv" not in k,
      "kernel.py: imports and definitions, no statements:\n%s" % k[:400])
try:
    ast.parse(k)
    ast.parse(read(case + "/ops.py"))
    parsed = True
except SyntaxError as e:
    parsed = str(e)
check(parsed is True, "kernel.py and ops.py parse: %s" % parsed)
md = read(case + "/program.md")
check("line 11: `DEVICE = triton.runtime.driver" in md and "line 69: `if "
      "__name__" in md, "program.md lists what kernel.py left out")
lj = json.loads(read(case + "/launches.json") or "{}")
check(lj.get("kernel") == "add_kernel" and
      [c["grid"] for c in lj.get("configs", [])] == [[4096, 1, 1],
                                                      [1500, 1, 1]] and
      [c["shape"] for c in lj.get("configs", [])] == ["obs1", "obs2"],
      "launches.json: the kept configurations in shape order")
p = kl("check", case)
check(p.returncode == 0, "kl check accepts the case: %s" % p.stderr[-500:])

case2 = TMP + "/softmax"
p = kl("case", "from-observation", FIXTURE, "--entry", "softmax_kernel",
       "--source", APP, "-o", case2)
check(p.returncode == 0 and "recorded calls" in p.stdout and
      p.stdout.count("left out:") == 2,
      "softmax_kernel: no launches joined, ranked by calls; configurations "
      "alike in tensors left out: %s %s" % (p.stdout, p.stderr))
y = read(case2 + "/case.yaml")
check("by calls (no GPU time joined)" in y and
      "{ name: output_ptr, type: f32*, role: inout }" in y and
      "{ name: input_ptr, type: f32*, role: input }" in y and
      "n_cols: 3000" in y and "n_cols: 1024" in y,
      "its params and both sizes:\n%s" % y)

# ---- errors ----------------------------------------------------------------


def bad(what, args, want):
    p = kl(*args)
    err = p.stderr.strip()
    check(p.returncode == 2 and len(err.splitlines()) == 1 and want in err,
          "%s: exit 2, one line: %d %r" % (what, p.returncode, err))


bad("the recorded source is gone",
    ["case", "from-observation", FIXTURE, "--entry", "add_kernel", "-o",
     TMP + "/e1"], "app.py:1:1:")
nested = TMP + "/nested.py"
with open(nested, "w") as f:
    f.write("import triton\n\n\nclass K:\n    @triton.jit\n"
            "    def add_kernel(x):\n        pass\n")
bad("a source without the kernel at top level",
    ["case", "from-observation", FIXTURE, "--entry", "add_kernel",
     "--source", nested, "-o", TMP + "/e2"], "no top-level def add_kernel")
bad("a .py source, no Triton call of that name",
    ["case", "from-observation", FIXTURE, "--entry", "mul_kernel",
     "--source", APP, "-o", TMP + "/e3"], "holds no Triton call of")
bad("a CUDA entry without --source",
    ["case", "from-observation", FIXTURE, "--entry", "scale_add", "-o",
     TMP + "/e4"], "needs its source (--source FILE.cu)")
bad("an existing folder",
    ["case", "from-observation", FIXTURE, "--entry", "add_kernel",
     "--source", APP, "-o", case], "already exists")
text = read(FIXTURE)
broken = TMP + "/broken.json"
with open(broken, "w") as f:
    f.write(text.replace('"grid": [4096, 1, 1], "args": [{"name": "x_ptr"',
                         '"grid": [4096, 0], "args": [{"name": "x_ptr"', 1))
bad("a python launch with a bad grid",
    ["case", "from-observation", broken, "--entry", "add_kernel", "-o",
     TMP + "/e5"], "broken.json:")
p = kl("observe", "--show", broken)
check(p.returncode == 2 and "grid" in p.stderr,
      "kl observe --show reads the same: %s" % p.stderr)
for d in ("e1", "e2", "e3", "e4", "e5"):
    check(not os.path.exists(os.path.join(TMP, d)), "%s not written" % d)

if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
shutil.rmtree(TMP, ignore_errors=True)
print("all passed")
