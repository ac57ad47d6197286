#!/usr/bin/env python3
"""Candidates that own their launch (kernlab/plugin.h, kl_launch_ctx), on
the host backend (ctest label unit), and the CUDA ones built (not run) where
nvcc is installed:

  host      a launcher that splits saxpy over threads and one that uses two
            scratch regions: checked correct and timed (verdict OK); one
            that asks for a larger scratch region in every launch: CHEAT,
            gate launch_contract, exit 3
  harness   the standalone harness of the threaded launcher builds with cc
            and checks every shape correct, the embedded baseline its oracle
  cuda      every bundled CUDA candidate with its own launch generates
            plugin and standalone harnesses that nvcc compiles (the GPU
            runs them: test_launchers_gpu.py)
usage: test_launchers.py KL SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, scratch  # noqa: E402

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-launchers-")


def kl(*args, timeout=900):
    p = subprocess.run([KL] + list(args), capture_output=True, text=True,
                       env=ENV, timeout=timeout)
    print("$ kl %s -> %d" % (" ".join(args), p.returncode), flush=True)
    return p


def compare(case, cand):
    p = kl("compare", SRC + "/cases/" + case, "--candidate", cand, "--json",
           "--time-cap-ms", "300")
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        return p.returncode, {"stderr": p.stderr[-600:]}


# ---- host launchers ----------------------------------------------------------
for cand in (SRC + "/cases/host_saxpy/candidates/threads_launch.c",
             SRC + "/tests/harness/launchers/scratch_ok.c"):
    rc, r = compare("host_saxpy", cand)
    shapes = r.get("shapes", [])
    check(r.get("verdict") == "OK" and len(shapes) == 2 and
          all(s.get("correct") for s in shapes),
          "%s: checked correct and timed: %s" % (cand, str(r)[:600]))
rc, r = compare("host_saxpy", SRC + "/tests/harness/launchers/scratch_grows.c")
check(rc == 3 and r.get("verdict") == "CHEAT" and
      r.get("gate") == "launch_contract" and
      "scratch region" in (r.get("reason") or ""),
      "a growing scratch region breaks the contract: %s" % str(r)[:600])

# ---- the standalone harness of a host launcher --------------------------------
src = TMP + "/threads.c"
p = kl("harness", SRC + "/cases/host_saxpy", "--candidate",
       SRC + "/cases/host_saxpy/candidates/threads_launch.c", "-o", src)
check(p.returncode == 0, "kl harness: %s" % p.stderr)
b = subprocess.run(["cc", "-O2", "-Wall", "-Werror", src, "-lm", "-o",
                    TMP + "/threads"], capture_output=True, text=True)
check(b.returncode == 0, "the standalone harness builds: %s" % b.stderr[-800:])
if b.returncode == 0:
    run = subprocess.run([TMP + "/threads"], capture_output=True, text=True,
                         timeout=300)
    lines = [json.loads(x) for x in run.stdout.splitlines() if x.strip()]
    check(run.returncode == 0 and len(lines) == 2 and
          all(x["checked"] and x["correct"] for x in lines),
          "every shape checked correct against the embedded baseline: %s"
          % run.stdout[-600:])

# ---- CUDA launchers: generated and compiled -----------------------------------
nvcc = shutil.which("nvcc") or (
    "/usr/local/cuda/bin/nvcc"
    if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)
CUDA = [("softmax_f32", "cases/softmax_f32/candidates/block_per_row_launch.cu"),
        ("rmsnorm_bf16", "cases/rmsnorm_bf16/candidates/warp_per_row_launch.cu"),
        ("reduce_sum_f32", "cases/reduce_sum_f32/candidates/split_two_kernels.cu"),
        ("vector_add", "cases/vector_add/candidates/persistent_launch.cu"),
        ("transpose_f32", "cases/transpose_f32/candidates/tiled_launch.cu")]
if nvcc is None:
    print("nvcc not found: the CUDA launchers were not compiled")
else:
    for case, cand in CUDA:
        for form in ("--plugin", "--standalone"):
            out = "%s/%s%s.cu" % (TMP, case, form)
            p = kl("harness", SRC + "/cases/" + case, "--candidate",
                   SRC + "/" + cand, form, "-o", out)
            check(p.returncode == 0, "kl harness %s: %s" % (cand, p.stderr))
            b = subprocess.run([nvcc, "-arch=sm_90", "-c", out, "-o",
                                out + ".o"], capture_output=True, text=True,
                               timeout=600)
            check(b.returncode == 0, "%s %s compiles: %s" %
                  (cand, form, b.stderr[-800:]))

shutil.rmtree(TMP, ignore_errors=True)
print("%d failures" % len(FAILS))
sys.exit(1 if FAILS else 0)
