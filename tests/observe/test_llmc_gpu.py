#!/usr/bin/env python3
"""A program in the style of llm.c's dev/cuda (tests/observe/llmc: its own
common.h with a typedef'd floatX, kernels whose parameters are called
weight and bias, six block sizes per version), from kl observe to a case to
a kl run whose candidates change the launch and the number of kernels, on a
CUDA device (ctest label gpu; exit 77, skipped, without one):

  observe   ./layernorm_forward 1 and 3: 12 configurations each (six block
            sizes, checked then benchmarked)
  case      kl case from-observation for kernel1 and kernel3, unchanged
            names and types: kl check accepts both, common.h copied beside
            kernel.cu, floatX resolved to f32, weight a buffer
  run       two scripted replies (replies/): a statistics kernel plus an
            elementwise one (two kernels), then a warp per row (one kernel,
            another grid), each with its own launcher: the first ACCEPTED,
            both checked correct
  dispatch  kl best --dispatch, then kl compare of the dispatcher against
            the baseline (faster at every shape), then kl export --kernel
            into a copy of the program: its kernel1 launch becomes a
            kernlab_launch call, the program still validates against its
            CPU reference at every block size, and its GPU time falls:
            kept
  template  ./softmax_forward 1: kernels::softmax_forward_kernel<B, floatX>,
            one instantiation per block size, becomes a case whose shapes
            each launch their own; a candidate keeping the template and one
            owning its launch (a warp per row) check correct, the second
            faster; exported, the program's qualified template launch
            becomes a launcher call, the program validates and is faster;
            a scripted run whose reply keeps the template, then kl best
            --dispatch over its records: the dispatcher (each shape the
            instantiation of the better variant) checks correct
  struct    ./residual_forward 1: a kernel that takes a params struct by
            value (pointers, an int with padding after it, a float) becomes
            a case whose struct's fields are params (p.out, p.N, ...; the
            pointers' allocations read inside the struct); kl check accepts
            it; a candidate owning its launch (16-byte loads, a tail
            kernel) checks correct; exported, `kernel<<<..>>>(p)` becomes
            kernlab_launch(p, ...) and the program, with its own struct
            kept, builds and validates
usage: test_llmc_gpu.py KL SOURCE_DIR
(KL_OBSERVE_FIXTURE_OUT=DIR keeps the observation, for the CPU tests.)
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import (FAILS, check, fake_llm, require_cuda,  # noqa: E402
                     scratch)

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-llmc-gpu-")
require_cuda("nvcc")


def kl(*args, env=None, timeout=900):
    p = subprocess.run([KL] + list(args), capture_output=True, text=True,
                       env=env or ENV, timeout=timeout)
    print("$ kl %s -> %d" % (" ".join(args), p.returncode), flush=True)
    return p


prog = TMP + "/llmc"
shutil.copytree(SRC + "/tests/observe/llmc", prog,
                ignore=shutil.ignore_patterns("replies"))
b = subprocess.run(["make", "-s", "-C", prog], capture_output=True, text=True)
check(b.returncode == 0, "the program builds: %s" % b.stderr[-800:])

cases = {}
for version in ("1", "3"):
    obs = "%s/obs%s.json" % (TMP, version)
    p = kl("observe", "-o", obs, "--", prog + "/layernorm_forward", version)
    check(p.returncode == 0, "kl observe: %s" % p.stderr[-800:])
    print(p.stdout)
    out_dir = os.environ.get("KL_OBSERVE_FIXTURE_OUT")
    if out_dir:
        shutil.copy(obs, os.path.join(out_dir, "llmc_layernorm%s.json" % version))
    entry = "layernorm_forward_kernel" + version
    case = "%s/case%s" % (TMP, version)
    p = kl("case", "from-observation", obs, "--source",
           prog + "/layernorm_forward.cu", "--entry", entry, "-o", case)
    check(p.returncode == 0, "from-observation %s: %s" % (entry, p.stderr))
    print(p.stdout)
    c = kl("check", case, "--json")
    check(c.returncode == 0, "kl check %s: %s" % (entry, c.stdout[-800:]))
    desc = json.loads(c.stdout or "{}").get("case", {})
    params = {x["name"]: x for x in desc.get("params", [])}
    check(params.get("weight", {}).get("pointer") and
          params.get("weight", {}).get("dtype") == "f32" and
          params.get("inp", {}).get("dtype") == "f32",
          "weight and inp are f32 buffers: %s" % params)
    check(os.path.isfile(case + "/common.h"), "common.h copied into the case")
    cases[version] = case

p = kl("bench", cases["1"], "--json", "--time-cap-ms", "500")
check(p.returncode == 0, "kl bench on kernel1's case: %s" % p.stderr[-800:])

srv, port, config = fake_llm(SRC, TMP, ENV, SRC + "/tests/observe/llmc/replies",
                             "sk-fake-llmc")
try:
    env = dict(ENV, KL_CONFIG=config, ANTHROPIC_API_KEY="sk-fake-llmc")
    p = kl("run", cases["1"], "--json", "--iterations", "2", "--no-profile",
           "--seed", "5", env=env)
    s = json.loads(p.stdout or "{}")
    print(p.stdout[-1500:], p.stderr[-1500:])
    v = s.get("verdicts", {})
    check(p.returncode == 0 and v.get("ACCEPTED", 0) >= 1 and
          v.get("INCORRECT", 0) == 0 and v.get("CHEAT", 0) == 0 and
          v.get("COMPILE_ERROR", 0) == 0 and v.get("CRASHED", 0) == 0,
          "both launch-changing replies check correct, one accepted: %s" % v)
    print("best_speedup", s.get("best_speedup"))
finally:
    srv.kill()

# ---- the dispatcher: measured directly, then exported --------------------------
disp = TMP + "/dispatch.cu"
p = kl("best", cases["1"], "--dispatch", "-o", disp)
check(p.returncode == 0, "kl best --dispatch: %s" % p.stderr[-600:])
p = kl("best", cases["1"], "--dispatch", "--json")
print(p.stdout)
p = kl("compare", cases["1"], "--candidate", disp, "--json", "--time-cap-ms",
       "1000")
r = json.loads(p.stdout or "{}")
check(p.returncode == 0 and r.get("verdict") == "OK" and
      all(x.get("correct") and x.get("decision") == "faster"
          for x in r.get("shapes", [])),
      "the dispatcher is faster than the baseline at every shape: %s"
      % str(r)[:800])
for x in r.get("shapes", []):
    print("dispatch %s speedup %.3f %s" % (x["name"], x.get("speedup") or 0,
                                          x.get("speedup_ci")))
print("objective", r.get("objective"))
prog2 = TMP + "/llmc_export"
shutil.copytree(prog, prog2)
p = kl("export", cases["1"], "--to", prog2 + "/layernorm_forward.cu",
       "--kernel", disp, "--verify", "sh -c 'make -s -B layernorm_forward && "
       "./layernorm_forward 1'", "--observe", "./layernorm_forward 1",
       "--cwd", prog2, "--json", timeout=1800)
print(p.stderr[-2000:])
r = json.loads(p.stdout or "{}")
check(p.returncode == 0 and r.get("result") == "kept" and
      r.get("speedup", 0) > 1.0,
      "the dispatcher in the program: kept, faster: %s" % r)
with open(prog2 + "/layernorm_forward.cu") as f:
    text = f.read()
flat = " ".join(text.split())
check("kernlab_launch(out, mean, rstd, inp, weight, bias, N, C, "
      "kl_export_ctx(0))" in flat and "layernorm_forward_kernel1<<<" not in
      flat, "the launch became a launcher call")

# ---- a template in a namespace, one instantiation per block size ---------------
# softmax_forward.cu: kernels::softmax_forward_kernel<BLOCK_SIZE, floatX>,
# the block size picking the instantiation at run time
obs = TMP + "/obs_softmax.json"
p = kl("observe", "-o", obs, "--", prog + "/softmax_forward", "1")
check(p.returncode == 0, "kl observe softmax_forward: %s" % p.stderr[-800:])
out_dir = os.environ.get("KL_OBSERVE_FIXTURE_OUT")
if out_dir:
    shutil.copy(obs, os.path.join(out_dir, "llmc_softmax1.json"))
case = TMP + "/case_softmax"
p = kl("case", "from-observation", obs, "--source",
       prog + "/softmax_forward.cu", "--entry", "softmax_forward_kernel",
       "-o", case)
check(p.returncode == 0, "from-observation of a template: %s" % p.stderr)
print(p.stdout)
with open(case + "/case.yaml") as f:
    y = f.read()
check('entry: "kernels::softmax_forward_kernel"' in y and
      y.count('entry: "kernels::softmax_forward_kernel<') >= 2,
      "the entry is qualified, each shape its instantiation: %s" % y[:1500])
c = kl("check", case, "--json")
check(c.returncode == 0, "kl check of the template case: %s" % c.stdout[-600:])
CANDS = SRC + "/tests/observe/llmc/candidates/"
for cand, own in (("softmax_shuffle.cu", False),
                  ("softmax_warp_launch.cu", True)):
    p = kl("compare", case, "--candidate", CANDS + cand, "--json",
           "--time-cap-ms", "1000")
    r = json.loads(p.stdout or "{}")
    shapes = r.get("shapes", [])
    check(p.returncode == 0 and r.get("verdict") == "OK" and shapes and
          all(x.get("correct") for x in shapes),
          "%s checks correct at every shape: %s" % (cand, str(r)[:800]))
    if own:
        check(all(x.get("decision") == "faster" for x in shapes),
              "a warp per row is faster at every shape: %s" % str(r)[:800])
    for x in shapes:
        print("%s %s speedup %.3f %s" % (cand, x["name"], x.get("speedup") or 0,
                                         x.get("speedup_ci")))
# a run whose reply keeps the template, then a dispatcher over its records:
# each shape launches the better of two instantiations of two variants
srv, port, config = fake_llm(SRC, TMP, ENV,
                             SRC + "/tests/observe/llmc/replies_softmax",
                             "sk-fake-llmc")
try:
    env = dict(ENV, KL_CONFIG=config, ANTHROPIC_API_KEY="sk-fake-llmc")
    p = kl("run", case, "--json", "--iterations", "1", "--no-profile",
           "--seed", "5", env=env)
    s = json.loads(p.stdout or "{}")
    v = s.get("verdicts", {})
    check(p.returncode == 0 and v.get("ACCEPTED", 0) + v.get("REJECTED", 0)
          == 1, "the template-keeping reply checks correct and is timed: %s"
          % p.stdout[-800:])
finally:
    srv.kill()
disp = TMP + "/dispatch_softmax.cu"
p = kl("best", case, "--dispatch", "-o", disp)
check(p.returncode == 0, "kl best --dispatch of a template case: %s"
      % p.stderr[-600:])
print(kl("best", case, "--dispatch", "--json").stdout)
p = kl("compare", case, "--candidate", disp, "--json", "--time-cap-ms",
       "1000")
r = json.loads(p.stdout or "{}")
check(p.returncode == 0 and r.get("verdict") == "OK" and r.get("shapes") and
      all(x.get("correct") for x in r.get("shapes", [])),
      "the template case's dispatcher checks correct at every shape: %s"
      % str(r)[:800])
for x in r.get("shapes", []):
    print("dispatch_softmax %s speedup %.3f %s" % (
        x["name"], x.get("speedup") or 0, x.get("speedup_ci")))

prog3 = TMP + "/llmc_softmax_export"
shutil.copytree(prog, prog3)
p = kl("export", case, "--to", prog3 + "/softmax_forward.cu", "--kernel",
       CANDS + "softmax_warp_launch.cu", "--verify",
       "sh -c 'make -s -B softmax_forward && ./softmax_forward 1'",
       "--observe", "./softmax_forward 1", "--cwd", prog3, "--json",
       timeout=1800)
print(p.stderr[-2000:])
r = json.loads(p.stdout or "{}")
check(p.returncode == 0 and r.get("result") == "kept" and
      r.get("speedup", 0) > 1.0,
      "the launcher in the program, out of its namespace: kept, faster: %s"
      % r)
with open(prog3 + "/softmax_forward.cu") as f:
    flat = " ".join(f.read().split()).replace("( ", "(")
check("kernlab_launch(out, inp, N, C, kl_export_ctx(0))" in flat and
      "softmax_forward_kernel<BLOCK_SIZE, floatX><<<" not in flat,
      "the qualified template launch became a launcher call")

# ---- a struct passed by value ----------------------------------------------------
obs = TMP + "/obs_residual.json"
p = kl("observe", "-o", obs, "--", prog + "/residual_forward", "1")
check(p.returncode == 0, "kl observe residual_forward: %s" % p.stderr[-800:])
print(p.stdout)
out_dir = os.environ.get("KL_OBSERVE_FIXTURE_OUT")
if out_dir:
    shutil.copy(obs, os.path.join(out_dir, "llmc_residual1.json"))
case = TMP + "/case_residual"
p = kl("case", "from-observation", obs, "--source",
       prog + "/residual_forward.cu", "--entry", "residual_forward_kernel1",
       "-o", case)
check(p.returncode == 0, "from-observation of a struct: %s" % p.stderr)
print(p.stdout)
y = open(case + "/case.yaml").read() if p.returncode == 0 else ""
print(y)
c = kl("check", case, "--json")
desc = json.loads(c.stdout or "{}").get("case", {})
params = {x["name"]: x for x in desc.get("params", [])}
check(c.returncode == 0 and
      sorted(params) == ["p.N", "p.inp1", "p.inp2", "p.out", "p.scale"] and
      all(x.get("struct") == "ResidualParams" for x in params.values()) and
      params["p.out"]["pointer"] and not params["p.N"]["pointer"],
      "the struct's fields are the case's params: %s" % c.stdout[-800:])
p = kl("compare", case, "--candidate", CANDS + "residual_vec4_launch.cu",
       "--json", "--time-cap-ms", "1000")
r = json.loads(p.stdout or "{}")
check(p.returncode == 0 and r.get("verdict") == "OK" and r.get("shapes") and
      all(x.get("correct") for x in r.get("shapes", [])),
      "a launcher taking the struct checks correct: %s" % str(r)[:800])
for x in r.get("shapes", []):
    print("residual_vec4 %s speedup %.3f %s" % (
        x["name"], x.get("speedup") or 0, x.get("speedup_ci")))
prog4 = TMP + "/llmc_residual_export"
shutil.copytree(prog, prog4)
p = kl("export", case, "--to", prog4 + "/residual_forward.cu", "--kernel",
       CANDS + "residual_vec4_launch.cu", "--verify",
       "sh -c 'make -s -B residual_forward && ./residual_forward 1'",
       "--observe", "./residual_forward 1", "--cwd", prog4, "--json",
       timeout=1800)
print(p.stderr[-2000:])
r = json.loads(p.stdout or "{}")
print(r)
check(r.get("result") in ("kept", "rolled_back") and r.get("after_us"),
      "the launcher goes into the program, which builds, validates and is "
      "observed: %s" % r)

print("%d failures" % len(FAILS))
sys.exit(1 if FAILS else 0)
