#!/usr/bin/env python3
"""kl observe of a Python program and a python case from it, on a CUDA
device (ctest label gpu; exit 77, skipped, without one or without torch and
triton), with tests/observe/triton/app.py (Triton-tutorial style: a vector
add and an autotuned fused softmax next to PyTorch's kernels; it knows
nothing of kernlab):

  observe   the program runs unchanged and passes its own check; the driver
            level records Triton's launches (cuLaunchKernel, packed
            arguments) and PyTorch's; python_launches hold each Triton
            call's configuration: tensors' shapes, strides and dtypes,
            scalars, constexprs, the grid the lambda gave, which tensors
            the first call wrote; the autotuner's benchmarking calls are
            tries, apart from the program's calls
  case      kl case from-observation --entry add_kernel: the busy size
            first, n_elements exact, output an inout, kernel.py without
            the program's top-level statements; kl bench checks and times
            it; a PyTorch candidate is correct, a wrong one INCORRECT; the
            autotuned softmax_kernel becomes a case too (weighed by the
            program's calls, not the tries) and kl bench runs it
usage: test_observe_python_gpu.py KL SOURCE_DIR
(KL_OBSERVE_FIXTURE_OUT=DIR keeps the observation, for the CPU tests.)
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import (FAILS, check, kl_runner, require_cuda_torch,  # noqa: E402
                     scratch)

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-observe-py-gpu-")
require_cuda_torch()


kl, kljson = kl_runner(KL, ENV)


# ---- observe -------------------------------------------------------------
app = os.path.join(TMP, "app.py")
shutil.copy(SRC + "/tests/observe/triton/app.py", app)
obs = TMP + "/obs.json"
p = kl("observe", "-o", obs, "--", sys.executable, app, "20")
check(p.returncode == 0, "kl observe: the program passes its own check: "
      "%s %s" % (p.stdout[-800:], p.stderr[-1500:]))
print(p.stdout[-3000:])
with open(obs) as f:
    o = json.load(f)
out_dir = os.environ.get("KL_OBSERVE_FIXTURE_OUT")
if out_dir:
    shutil.copy(obs, os.path.join(out_dir, "triton_app.json"))
names = [k["name"] for k in o["kernels"]]
check("add_kernel" in names and "softmax_kernel" in names,
      "the driver level saw Triton's kernels by their Python names: %s"
      % names[:20])
check(any(n not in ("add_kernel", "softmax_kernel") for n in names),
      "and PyTorch's kernels: %s" % names[:20])
add_k = names.index("add_kernel")
adds = [l for l in o["launches"] if l["kernel"] == add_k]
check(len(adds) == 24 and all(l["api"] == "driver" for l in adds),
      "24 add_kernel launches, through the driver API: %d %s"
      % (len(adds), set(l["api"] for l in adds)))
check(all(l["args"] and l["args"][0]["pointer"] for l in adds),
      "their packed arguments read, the first a device pointer")
py = o.get("python_launches", [])
procs = [p for p in o["processes"] if "python" in p]
check(procs and procs[0]["python"].get("triton") and
      not procs[0].get("python_errors"),
      "the Python process's versions, no observer errors: %s" % procs)
pa = [c for c in py if c["kernel"] == "add_kernel"]
check(sorted(c["calls"] for c in pa) == [4, 20],
      "add_kernel: two configurations, 20 and 4 calls: %s"
      % [(c["calls"], c["grid"]) for c in pa])
big = max(pa, key=lambda c: c["calls"]) if pa else {"args": [], "grid": []}
args = {a["name"]: a for a in big["args"]}
check(big["grid"] == [4096, 1, 1] and
      args.get("n_elements", {}).get("value") == 4096 * 1024 and
      args.get("BLOCK_SIZE", {}).get("value") == 1024,
      "the grid the lambda gave, the scalar and the constexpr: %s %s"
      % (big["grid"], args))
xt = args.get("x_ptr", {}).get("tensor", {})
ot = args.get("output_ptr", {}).get("tensor", {})
check(xt.get("shape") == [4096, 1024] and xt.get("dtype") == "float32" and
      xt.get("written") is False and ot.get("written") is True,
      "tensors' layouts, the output written, the input not: %s %s"
      % (xt, ot))
ps = [c for c in py if c["kernel"] == "softmax_kernel"]
warps = set(c["options"].get("num_warps") for c in ps)
check(warps == {4, 8} and sum(c["calls"] for c in ps) == 24 and
      sum(c.get("tries", 0) for c in ps) > 0,
      "softmax_kernel: the program's 24 calls apart from the autotuner's "
      "tries, each config's options: %s"
      % [(c["grid"], c["options"], c["calls"], c.get("tries")) for c in ps])
check(all(c["file"] == os.path.abspath(app) and c["line"] > 1 for c in py),
      "each configuration names its source file and line")

# ---- a case of the add -----------------------------------------------------
case = TMP + "/add_case"
p = kl("case", "from-observation", obs, "--entry", "add_kernel", "-o", case,
       "--share", "1")
check(p.returncode == 0, "from-observation add_kernel: %s %s"
      % (p.stdout, p.stderr[-800:]))
print(p.stdout)
y = open(case + "/case.yaml").read() if os.path.exists(case + "/case.yaml") \
    else ""
check("obs1, weight: 20, config: 1, n_elements: 4194304" in y and
      "obs2, weight: 4, config: 2, n_elements: 1536000" in y and
      "of the kernel's GPU time" in y,
      "shapes by GPU time, n_elements exact:\n%s" % y)
check("{ name: output_ptr, type: f32*, role: inout }" in y and
      "{ name: x_ptr, type: f32*, role: input }" in y,
      "the written tensor an inout, the others inputs")
k = open(case + "/kernel.py").read() if os.path.exists(case + "/kernel.py") \
    else ""
check("def add_kernel" in k and "__main__" not in k and
      "get_active_torch_device" not in k and "STEPS" not in k,
      "kernel.py: definitions, not the program's statements")
rc, r, err = kljson("bench", case)
shapes = r.get("shapes") or []
check(rc == 0 and r.get("verdict") == "OK" and len(shapes) == 2 and
      all(s.get("correct") and (s.get("median_us") or 0) > 0
          for s in shapes),
      "kl bench: both shapes correct and timed: %s %s"
      % (json.dumps(r)[:500], err[-1500:]))
good = TMP + "/add_torch.py"
with open(good, "w") as f:
    f.write("import torch\n\n\ndef forward(x, y, out):\n"
            "    torch.add(x, y, out=out)\n")
rc, r, err = kljson("compare", case, "--candidate", good)
check(rc == 0 and r.get("verdict") == "OK" and
      all(s.get("correct") for s in r.get("shapes") or [{}]),
      "a PyTorch candidate is correct: %s %s" % (json.dumps(r)[:500],
                                                 err[-600:]))
bad = TMP + "/add_wrong.py"
with open(bad, "w") as f:
    f.write("import torch\n\n\ndef forward(x, y, out):\n"
            "    torch.sub(x, y, out=out)\n")
rc, r, err = kljson("compare", case, "--candidate", bad)
check(rc == 3 and r.get("verdict") == "INCORRECT",
      "a wrong candidate is INCORRECT: %d %s" % (rc, json.dumps(r)[:300]))

# ---- a case of the autotuned softmax -----------------------------------------
case2 = TMP + "/softmax_case"
p = kl("case", "from-observation", obs, "--entry", "softmax_kernel", "-o",
       case2)
y2 = open(case2 + "/case.yaml").read() \
    if os.path.exists(case2 + "/case.yaml") else ""
check(p.returncode == 0 and "weight: 20, config: 1" in y2 and
      "n_cols: 1024" in y2,
      "from-observation softmax_kernel: the program's calls, not the "
      "autotuner's tries, weigh the shapes: %s %s\n%s"
      % (p.stdout, p.stderr[-800:], y2))
rc, r, err = kljson("bench", case2)
check(rc == 0 and r.get("verdict") == "OK" and
      all(s.get("correct") for s in r.get("shapes") or [{}]),
      "kl bench of the softmax case: %s %s" % (json.dumps(r)[:500],
                                               err[-1000:]))

if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
print("all passed")
