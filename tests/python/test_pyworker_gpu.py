#!/usr/bin/env python3
"""The Python worker (kl-pyworker) on a CUDA device (ctest label gpu; exit
77, skipped, without a device or without torch):

  load     a Python case (softmax over rows: inputs, a float64 reference, a
           PyTorch baseline of five kernels) and candidates written as
           people write them: a fused Triton kernel, a PyTorch one-liner,
           a wrong one, one that hands back results computed once
  check    the C worker's check on fresh seeds: the Triton and PyTorch
           candidates correct, the wrong one not (mismatches counted), one
           whose thread writes the outputs after forward returned caught
           (late bytes, from the device snapshot)
  time     the C sampler and CUPTI timer around forward() (a request
           without the device's calibration first asks for it): every kernel it
           launches is timed, and its copies (a clone after the kernel) (the baseline's span covers its five kernels),
           SM clocks read from the harness's own probe, A B B A against the
           baseline; the stale candidate caught by the timed outputs' check
  kl       the same softmax as a case folder (backend: python, device:
           cuda) through kl bench and kl compare as a user runs them: the
           worker in the sandbox imports torch and triton, the Triton
           candidate is correct and timed beside the baseline; the notes
           show the baseline's allocations, Triton's JIT in the first call
           and an autotuner's choice; kl profile has a range per kernel of
           the PyTorch forward
  kernelbench  a bundled KernelBench problem made a case: its Triton
           ModelNew correct and timed against Model, a wrong one INCORRECT
usage: test_pyworker_gpu.py BUILD_DIR SOURCE_DIR KL
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

BUILD, SRC, KL = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(SRC, "tests", "run"))
from support import require_cuda_torch  # noqa: E402

require_cuda_torch()

FAILS = []


def check(ok, what):
    print("%s: %s" % ("ok" if ok else "FAIL", what), flush=True)
    if not ok:
        FAILS.append(what)


TMP = tempfile.mkdtemp(prefix="kl-pyworker-")
SOFTMAX = os.path.join(SRC, "tests", "python", "cases", "softmax_torch")


def read(*path):
    with open(os.path.join(SOFTMAX, *path)) as f:
        return f.read()


OPS = read("ops.py")
TRITON = read("candidates", "triton_fused.py")
TORCH = read("candidates", "torch_softmax.py")
WRONG = '''
def forward(x):
    return x * 0.5
'''
STALE = '''
import torch
_kept = None

def forward(x):
    global _kept
    if _kept is None or _kept.shape != x.shape:
        _kept = torch.softmax(x, dim=-1)
    return _kept * 1.0
'''
COPIED = '''
import torch

def forward(x):
    return torch.softmax(x, dim=-1).clone()
'''
# the right values, written by a thread 15 ms after forward returned: the
# outputs were not final when launch and sync returned (work after return).
# forward takes 20 ms, so the pause after it (twice the launch, from the
# second seed on: the first launch of an instance gets the least, 2 ms) is
# 40 ms: the copy is taken well before the write and compared well after.
LATE = '''
import threading
import time
import torch

def forward(x):
    out = torch.zeros_like(x)
    time.sleep(0.02)

    def later():
        time.sleep(0.015)
        out.copy_(torch.softmax(x, dim=-1))
        torch.cuda.synchronize()
    threading.Thread(target=later).start()
    return out
'''
files = {}
for name, text in (("ops", OPS), ("triton_fused", TRITON),
                   ("torch_softmax", TORCH), ("wrong", WRONG),
                   ("stale", STALE), ("copied", COPIED), ("late", LATE)):
    files[name] = os.path.join(TMP, name + ".py")
    with open(files[name], "w") as f:
        f.write(text)


def describe(name, candidate):
    desc = {"case": "softmax_py", "module": files["ops"],
            "candidate": files[candidate] if candidate else None,
            "params": [{"name": "x", "role": "input", "dtype": "f32"},
                       {"name": "y", "role": "output", "dtype": "f32"}],
            "shapes": [{"name": "r4k_c1k",
                        "values": {"rows": 4096, "cols": 1024}},
                       {"name": "r1k_c4k",
                        "values": {"rows": 1024, "cols": 4096}}],
            "atol": 1e-5, "rtol": 1e-5}
    path = os.path.join(TMP, name + ".json")
    with open(path, "w") as f:
        json.dump(desc, f)
    return path


parent, child = socket.socketpair()
env = dict(os.environ,
           KERNLAB_WORKER_LIB=BUILD + "/libexec/kernlab/libkernlab-worker.so",
           KERNLAB_DEVICE_LIB=BUILD + "/libexec/kernlab/libkernlab-device.so")
log = open(os.path.join(TMP, "worker.log"), "w")
proc = subprocess.Popen(
    [sys.executable, SRC + "/kl-worker/kl_pyworker.py"],
    pass_fds=(3,), stdout=log, stderr=subprocess.STDOUT, env=env,
    preexec_fn=lambda: os.dup2(child.fileno(), 3))
child.close()
reader = parent.makefile("r")


def ask(req):
    parent.sendall((json.dumps(req) + "\n").encode())
    line = reader.readline()
    if not line:
        log.flush()
        with open(os.path.join(TMP, "worker.log")) as f:
            print(f.read()[-3000:])
        raise SystemExit("the worker went away")
    return json.loads(line)


try:
    ids = {}
    for name, cand in (("baseline", None), ("triton_fused", "triton_fused"),
                       ("torch_softmax", "torch_softmax"), ("wrong", "wrong"),
                       ("stale", "stale"), ("copied", "copied"),
                       ("late", "late")):
        r = ask({"op": "load", "path": describe(name, cand)})
        check(r.get("ok") and r.get("nshapes") == 2,
              "load %s: %s" % (name, r))
        ids[name] = r.get("id")
    bad = ask({"op": "load", "path": os.path.join(TMP, "missing.json")})
    check(not bad.get("ok") and "missing.json" in bad.get("error", ""),
          "a missing description is an error naming it: %s" % bad)

    seeds = [11, 12, 13]
    for name in ("baseline", "triton_fused", "torch_softmax", "wrong"):
        for shape in (0, 1):
            r = ask({"op": "check", "plugin": ids[name], "oracle": -1,
                     "shape": shape, "seeds": seeds})
            res = r.get("results") or []
            correct = [x.get("correct") for x in res]
            want = name != "wrong"
            check(r.get("ok") and len(res) == 3 and
                  all(c == want for c in correct),
                  "check %s at shape %d: %s" % (name, shape,
                                               json.dumps(r)[:600]))
    r = ask({"op": "check", "plugin": ids["wrong"], "oracle": -1, "shape": 0,
             "seeds": [5]})
    res = (r.get("results") or [{}])[0]
    check(res.get("mismatches", 0) > 4096 * 1024 // 2,
          "the wrong candidate's mismatches are counted: %s" % res)

    r = ask({"op": "check", "plugin": ids["late"], "oracle": -1, "shape": 0,
             "seeds": [21, 22]})
    res = (r.get("results") or [{}, {}])[-1]
    check(res.get("late_bytes", 0) > 0,
          "outputs written 15 ms after forward returned are late bytes (the "
          "device snapshot): %s" % json.dumps(r)[:400])

    base = {"op": "time", "shape": 0, "cold": 1, "warmup": 2,
            "min_samples": 10, "max_samples": 2000, "target_rel_ci": 0.005,
            "time_cap_ms": 1500, "seed": 99, "block_rounds": 16,
            "decide_gain_pct": 2.0, "verify": 1, "oracle": -1}
    # a device request that brings no calibration is answered with the
    # device's identity (the parent's cache key), nothing timed
    r = ask(dict(base, plugins=[ids["baseline"]]))
    check(not r.get("ok") and r.get("code") == "calibrate" and
          str(r.get("uuid", "")).startswith("GPU-") and r.get("driver", 0) > 0,
          "time without probe_true_us: asks for the calibration: %s"
          % json.dumps(r)[:300])
    base["probe_true_us"] = 0  # the records as they read
    medians = {}
    for name in ("baseline", "triton_fused", "torch_softmax", "copied"):
        r = ask(dict(base, plugins=[ids[name]]))
        samples = (r.get("samples") or [[]])[0]
        samples = sorted(samples)
        med = samples[len(samples) // 2] if samples else 0
        medians[name] = med
        print("  %-14s %4d samples, median %8.2f us, timer %s, stop %s, "
              "clock %s" % (name, len(samples), med, r.get("timer"),
                            r.get("stop_reason"),
                            (r.get("sm_clock_mhz") or [[0]])[0][:1]))
        check(r.get("ok") and len(samples) >= 10 and med > 0 and
              r.get("timer") == "cupti" and
              min((r.get("sm_clock_mhz") or [[0]])[0] or [0]) > 100,
              "time %s: CUPTI samples, SM clocks from the probe: %s; "
              "clocks %s" % (name, json.dumps(r)[:400],
                             ((r.get("sm_clock_mhz") or [[]])[0])[:12]))
        ver = (r.get("verify") or [{}])[0]
        check(ver.get("mismatches", 1) == 0,
              "time %s: the timed outputs are right: %s" % (name, ver))
    check(medians["baseline"] > medians["triton_fused"] * 1.5,
          "the five-kernel baseline (%.2f us) spans all its kernels: slower "
          "than the fused Triton kernel (%.2f us)"
          % (medians["baseline"], medians["triton_fused"]))

    check(medians["copied"] > medians["torch_softmax"] * 1.3,
          "a forward's copy (clone) is timed with its kernel: %.2f us "
          "against %.2f us for the kernel alone"
          % (medians["copied"], medians["torch_softmax"]))

    r = ask(dict(base, plugins=[ids["baseline"], ids["triton_fused"]]))
    s = r.get("samples") or [[], []]
    check(r.get("ok") and len(s) == 2 and len(s[0]) == len(s[1]) >= 10,
          "A B B A: baseline and Triton interleaved: %s"
          % json.dumps(r)[:300])

    r = ask(dict(base, plugins=[ids["stale"]]))
    ver = (r.get("verify") or [{}])[0]
    check(r.get("ok") and ver.get("mismatches", 0) > 0,
          "results computed once and handed back later are caught: %s"
          % json.dumps(ver or r)[:300])
    parent.sendall(b'{"op":"quit"}\n')  # no reply: the worker leaves
    check(proc.wait(timeout=60) == 0, "quit: status 0")
finally:
    if proc.poll() is None:
        proc.kill()
    log.close()

# The same case as a user writes it, through the CLI.
CASE = os.path.join(TMP, "softmax_py")
shutil.copytree(SOFTMAX, CASE)
with open(os.path.join(CASE, "candidates", "autotuned.py"), "w") as f:
    f.write(TRITON.replace("@triton.jit", """@triton.autotune(
    configs=[triton.Config({}, num_warps=2), triton.Config({}, num_warps=4),
             triton.Config({}, num_warps=8)],
    key=["cols"])
@triton.jit"""))
kenv = dict(os.environ, KERNLAB_CACHE_DIR=os.path.join(TMP, "cache"))


def kl(*args):
    p = subprocess.run([KL] + list(args) + ["--json"], capture_output=True,
                       text=True, env=kenv, timeout=600)
    try:
        return p.returncode, json.loads(p.stdout), p.stderr
    except ValueError:
        return p.returncode, {}, p.stdout[-1000:] + p.stderr[-2000:]


rc, r, err = kl("bench", CASE)
sh = (r.get("shapes") or [{}])[0]
check(rc == 0 and r.get("verdict") == "OK" and sh.get("correct") and
      (sh.get("median_us") or 0) > 0,
      "kl bench on a device python case: correct and timed: %s %s"
      % (json.dumps(r)[:400], err[-1500:]))
rc, r, err = kl("compare", CASE, "--candidate",
                os.path.join(CASE, "candidates", "triton_fused.py"))
sh = (r.get("shapes") or [{}])[0]
print("  kl compare: speedup %s" % sh.get("speedup"))
check(rc == 0 and r.get("verdict") == "OK" and sh.get("correct") and
      (sh.get("speedup") or 0) > 1.5,
      "kl compare: the Triton candidate correct and faster than the "
      "five-kernel baseline: %s %s" % (json.dumps(r)[:400], err[-1500:]))
notes = r.get("python") or {}
print("  notes: %s" % json.dumps(notes)[:800])
base = ((notes.get("baseline") or {}).get("shapes") or [{}])[0]
check(base.get("allocations", 0) >= 3 and base.get("allocated_bytes", 0) > 0,
      "the baseline's allocations per call are counted (its five ops make "
      "their outputs): %s" % base)
cnd = ((notes.get("candidate") or {}).get("shapes") or [{}])[0]
check(cnd.get("first_call_ms", 0) > 10 * cnd.get("second_call_ms", 1e9),
      "Triton's JIT compilation lands in the first call: %s" % cnd)
check(any(j.get("kernel") == "softmax_rows" and j.get("variants", 0) >= 1
          for j in (notes.get("candidate") or {}).get("jit_kernels", [])),
      "the JIT kernel and its compiled variants are named: %s"
      % notes.get("candidate"))

rc, r, err = kl("compare", CASE, "--candidate",
                os.path.join(CASE, "candidates", "autotuned.py"))
tuned = ((r.get("python") or {}).get("candidate") or {}).get("autotuned", [])
print("  autotuned: %s" % tuned)
check(rc == 0 and r.get("verdict") == "OK" and len(tuned) == 1 and
      tuned[0].get("kernel") == "softmax_rows" and
      "num_warps" in (tuned[0].get("config") or ""),
      "the autotuner's choice is reported: %s %s" % (tuned, err[-800:]))

p = subprocess.run([KL, "profile", CASE, "--json"], capture_output=True,
                   text=True, env=kenv, timeout=600)
try:
    pr = (json.loads(p.stdout).get("shapes") or [{}])[0].get("profile") or {}
except ValueError:
    pr = {}
parts = pr.get("parts") or []
print("  profile parts: %s" % [(x.get("name"), x.get("time_us"))
                               for x in parts])
check(p.returncode == 0 and len(parts) >= 3 and
      all((x.get("time_us") or 0) > 0 for x in parts),
      "kl profile: a range per kernel of the PyTorch forward: %s %s"
      % ([x.get("name") for x in parts], p.stderr[-800:]))

# A KernelBench problem as a case: the bundled softmax, its Triton ModelNew
# and a wrong ModelNew.
KB = os.path.join(TMP, "kb_softmax")
p = subprocess.run([KL, "case", "from-kernelbench",
                    SRC + "/bench/kernelbench/problems/2_softmax_rows.py",
                    "-o", KB], capture_output=True, text=True, env=kenv)
check(p.returncode == 0, "from-kernelbench: %s" % p.stderr)
rc, r, err = kl("compare", KB, "--candidate",
                SRC + "/bench/kernelbench/candidates/2_softmax_rows/"
                "triton_softmax.py")
sh = (r.get("shapes") or [{}])[0]
print("  kernelbench softmax: speedup %s, Model %s us, ModelNew %s us"
      % (sh.get("speedup"), (sh.get("baseline") or {}).get("median_us"),
         sh.get("median_us")))
check(rc == 0 and r.get("verdict") == "OK" and sh.get("correct") and
      (sh.get("speedup") or 0) > 0,
      "a KernelBench ModelNew (Triton) checked against Model and timed: "
      "%s %s" % (json.dumps(r)[:400], err[-1500:]))
with open(os.path.join(TMP, "wrong_new.py"), "w") as f:
    f.write("import torch\nimport torch.nn as nn\n\n\n"
            "class ModelNew(nn.Module):\n"
            "    def forward(self, x):\n"
            "        return torch.softmax(x, dim=0)\n")
rc, r, err = kl("compare", KB, "--candidate", os.path.join(TMP, "wrong_new.py"))
check(rc == 3 and r.get("verdict") == "INCORRECT",
      "a wrong ModelNew is INCORRECT: %d %s" % (rc, json.dumps(r)[:300]))

if FAILS:
    with open(os.path.join(TMP, "worker.log")) as f:
        print(f.read()[-3000:])
    print("%d failed" % len(FAILS))
    sys.exit(1)
shutil.rmtree(TMP, ignore_errors=True)
print("all passed")
