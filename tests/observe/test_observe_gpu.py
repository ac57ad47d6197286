#!/usr/bin/env python3
"""Observe and export on a CUDA device (ctest label gpu; exit 77, skipped,
without one), with tests/observe/app, a program that knows nothing of
kernlab:

  observe   every one of its 76 scale_add launches captured, in order, with
            exact scalars (alpha's bits, rows, cols), grid and 2-D block,
            device pointers with their allocation size, a GPU duration;
            the unmatched fill kernel counted, not recorded
  case      kl case from-observation accepted by kl check, geometry equal
            to the observation's, and kl bench times it
  run       one scripted proposal (a coalesced two-pass kernel) ACCEPTED
  export    into a copy of the program (uncoalesced kernel): kept, the
            program's time in scale_add measured down; into a copy whose
            kernel is already a one-pass coalesced one: the two-pass best
            is slower there, so it is rolled back and the file restored
usage: test_observe_gpu.py KL SOURCE_DIR
(KL_OBSERVE_FIXTURE_OUT=DIR keeps the observation, for the CPU tests.)
"""
import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import (FAILS, check, fake_llm, require_cuda,  # noqa: E402
                     scratch)

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-observe-gpu-")
require_cuda("nvcc")

CONFIGS = [(4096, 4096, 32, 8, 12, 0.5), (2048, 8192, 32, 8, 6, -1.25),
           (1024, 1024, 16, 16, 20, 2.0), (8192, 512, 64, 4, 8, 0.5),
           (300, 200, 32, 4, 30, 3.0)]
MOST = max(r * c for r, c, *_ in CONFIGS)


def kl(*args, cwd=None, env=None, timeout=900):
    p = subprocess.run([KL] + list(args), capture_output=True, text=True,
                       env=env or ENV, cwd=cwd, timeout=timeout)
    print("$ kl %s -> %d" % (" ".join(args), p.returncode), flush=True)
    return p


def app_copy(name):
    d = os.path.join(TMP, name)
    shutil.copytree(SRC + "/tests/observe/app", d)
    return d


# ---- observe ---------------------------------------------------------------------
app = app_copy("app")
b = subprocess.run(["make", "-s", "-C", app, "app"], capture_output=True,
                   text=True)
check(b.returncode == 0, "the program builds: %s" % b.stderr[-500:])
obs = TMP + "/obs.json"
p = kl("observe", "-o", obs, "--kernel", "scale_add", "--", app + "/app")
check(p.returncode == 0, "kl observe: %s" % p.stderr[-1000:])
print(p.stdout)
with open(obs) as f:
    o = json.load(f)
out_dir = os.environ.get("KL_OBSERVE_FIXTURE_OUT")
if out_dir:
    shutil.copy(obs, os.path.join(out_dir, "app_h200.json"))
ks = {k["name"]: k for k in o["kernels"]}
sa = [k for k in ks if "scale_add" in k]
check(len(sa) == 1 and ks[sa[0]]["launches"] == 76 and
      ks[sa[0]]["recorded"] == 76, "76 scale_add launches: %s" % ks)
fill = [k for k in ks if "fill" in k]
check(len(fill) == 1 and ks[fill[0]]["launches"] == 2 and
      ks[fill[0]]["recorded"] == 0, "fill counted, not recorded")
smi = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.splitlines()
check(smi and (o["devices"] or [{}])[0].get("name", "") == smi[0].strip(),
      "the device, as nvidia-smi names it: %s %s" % (o["devices"], smi))
want = [c for c in CONFIGS for _ in range(c[4])]
ls = o["launches"]
check(len(ls) == 76, "76 launch records, got %d" % len(ls))
for i, (l, c) in enumerate(zip(ls, want)):
    rows, cols, bx, by, _, alpha = c
    a = l.get("args") or []
    ok = (len(a) == 6 and a[3]["hex"] == struct.pack("<f", alpha).hex() and
          a[4]["hex"] == struct.pack("<i", rows).hex() and
          a[5]["hex"] == struct.pack("<i", cols).hex() and
          all(x.get("pointer") and x["alloc_bytes_left"] == 4 * MOST
              for x in a[:3]) and not any(x.get("pointer") for x in a[3:]) and
          l["grid"] == [(rows + bx - 1) // bx, (cols + by - 1) // by, 1] and
          l["block"] == [bx, by, 1] and l["shared_bytes"] == 0 and
          (l.get("duration_ns") or 0) > 0)
    check(ok, "launch %d exact: %s" % (i, json.dumps(l)[:400]))
    if not ok:
        break
print("apis:", sorted({l["api"] for l in ls}))

# ---- case -----------------------------------------------------------------------------
case = TMP + "/case"
p = kl("case", "from-observation", obs, "--source", app + "/app.cu",
       "--entry", "scale_add", "-o", case)
check(p.returncode == 0, "from-observation: %s" % p.stderr)
print(p.stdout)
c = kl("check", case, "--json")
check(c.returncode == 0, "kl check: %s" % c.stdout[-800:])
for sh in json.loads(c.stdout or "{}").get("case", {}).get("shapes", []):
    v = sh["values"]
    m = [x for x in CONFIGS if (x[0], x[1]) == (v["rows"], v["cols"])]
    check(m and sh["launch"]["block"] == [m[0][2], m[0][3], 1],
          "shape %s keeps its 2-D block" % sh["name"])
p = kl("bench", case, "--json", "--time-cap-ms", "500")
check(p.returncode == 0, "kl bench on the case: %s" % p.stderr[-800:])
for sh in json.loads(p.stdout or "{}").get("shapes", []):
    print("bench", sh.get("name"), sh.get("median_us"))

# ---- one scripted proposal ----------------------------------------------------------------
srv, port, config = fake_llm(SRC, TMP, ENV, SRC + "/tests/observe/replies",
                             "sk-fake-observe")
try:
    env = dict(ENV, KL_CONFIG=config, ANTHROPIC_API_KEY="sk-fake-observe")
    p = kl("run", case, "--json", "--iterations", "1", "--no-profile",
           "--seed", "4", env=env)
    s = json.loads(p.stdout or "{}")
    why = [(x.get("verdict"), x.get("gate"), x.get("reason"))
           for x in map(json.loads, open(case + "/solutions.jsonl"))
           if x.get("iteration")]
    check(p.returncode == 0 and s.get("verdicts", {}).get("ACCEPTED") == 1,
          "the coalesced kernel is accepted: %s %s %s" % (
              why, p.stdout[-600:], p.stderr[-400:]))
    print("best_speedup", s.get("best_speedup"))
finally:
    srv.kill()

# ---- export: kept ---------------------------------------------------------------------------
keep = app_copy("keep")
p = kl("export", case, "--to", keep + "/app.cu", "--verify", "make -s check",
       "--observe", "./app", "--cwd", keep, "--json")
print(p.stderr)
r = json.loads(p.stdout or "{}")
check(p.returncode == 0 and r.get("result") == "kept",
      "export into the original program is kept: %s" % r)
check(r.get("speedup", 0) > 1.0, "the program's kernel time fell: %s" % r)
with open(keep + "/app.cu") as f:
    text = f.read()
check("kernlab export" in text and "int main" in text and
      "__global__ void fill" in text, "only the kernel was replaced")

# ---- export: rolled back ---------------------------------------------------------------------
fast = app_copy("fast")
with open(fast + "/app.cu") as f:
    text = f.read()
one_pass = text.replace(
    "  int r = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  int c = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "  if (r < rows && c < cols)\n"
    "    out[(size_t)r * cols + c] = alpha * x[(size_t)r * cols + c] +\n"
    "                                y[(size_t)r * cols + c];\n",
    "  size_t n = (size_t)rows * cols;\n"
    "  size_t threads = (size_t)gridDim.x * gridDim.y * blockDim.x * "
    "blockDim.y;\n"
    "  size_t i = ((size_t)blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x"
    " * blockDim.y + (size_t)threadIdx.y * blockDim.x + threadIdx.x;\n"
    "  for (; i < n; i += threads)\n"
    "    out[i] = alpha * x[i] + y[i];\n")
check(one_pass != text, "the hand-tuned program is made")
with open(fast + "/app.cu", "w") as f:
    f.write(one_pass)
p = kl("export", case, "--to", fast + "/app.cu", "--verify", "make -s check",
       "--observe", "./app", "--cwd", fast, "--json")
print(p.stderr)
r = json.loads(p.stdout or "{}")
check(p.returncode == 3 and r.get("result") == "rolled_back",
      "the slower best is rolled back: %s" % r)
with open(fast + "/app.cu") as f:
    check(f.read() == one_pass, "the program's file is restored exactly")
steps = [json.loads(x)["step"] for x in open(case + "/export.jsonl")]
print("steps:", steps)
check(steps.count("restore") == 1 and steps.count("before") == 6 and
      steps.count("after") == 6, "both exports recorded every step")

print("%d failures" % len(FAILS))
sys.exit(1 if FAILS else 0)
