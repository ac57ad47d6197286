#!/usr/bin/env python3
"""Candidates that own their launch, on a CUDA device (ctest label gpu; exit
77, skipped, without one):

  bundled   softmax (a block per row), RMSNorm (a warp per row), the split
            reduction (two kernels, a scratch workspace, a grid sized by
            the SM count), the sum by CUB's DeviceReduce (its temporary
            storage from the scratch allocator), vector_add (a persistent kernel sized by the
            occupancy API) and transpose (its own tile grid): each checked
            correct at every shape and timed against the baseline
  copies    a launcher whose work is partly a cudaMemcpyAsync: the copy is
            timed (it reads slower than the baseline, as it moves more)
  contract  launchers that allocate, synchronise, or grow their scratch in
            every launch: CHEAT, gate launch_contract, exit 3; also when the
            call goes past the harness's names (the driver API found by
            dlsym, a pointer to cudaDeviceSynchronize): CUPTI sees it, in
            the check's launches and in timing's (a launcher that keeps
            the contract for the check's few launches only)
  profile   kl profile of the split reduction: one part per kernel, named
            as the source names it
  report    kl run (profiles on) with the split reduction as the model's
            reply, then kl report: both kernels of the best's launch, with
            time and bottleneck, at every shape (markdown and HTML)
            (partial_sums, then finish), each named, timed and with a
            verdict; the main metrics are the longer kernel's
usage: test_launchers_gpu.py KL SOURCE_DIR
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
TMP, ENV = scratch(SRC, "kl-launchers-gpu-")
require_cuda()


def compare(case, cand):
    # rmsnorm's xlarge shape (232M elements a buffer) takes the check past
    # the worker's 60 s limit on an H100 host: its other shapes are enough
    shape = ["--shape", "large"] if case == "rmsnorm_bf16" else []
    p = subprocess.run([KL, "compare", SRC + "/cases/" + case, "--candidate",
                        SRC + "/" + cand, "--json", "--time-cap-ms", "500"] +
                       shape,
                       capture_output=True, text=True, env=ENV, timeout=900)
    print("$ kl compare %s %s -> %d" % (case, cand, p.returncode), flush=True)
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        return p.returncode, {"stderr": p.stderr[-800:]}


GOOD = [("softmax_f32", "cases/softmax_f32/candidates/block_per_row_launch.cu"),
        ("rmsnorm_bf16", "cases/rmsnorm_bf16/candidates/warp_per_row_launch.cu"),
        ("reduce_sum_f32", "cases/reduce_sum_f32/candidates/split_two_kernels.cu"),
        ("reduce_sum_f32", "cases/reduce_sum_f32/candidates/cub_device_reduce.cu"),
        ("vector_add", "cases/vector_add/candidates/persistent_launch.cu"),
        ("transpose_f32", "cases/transpose_f32/candidates/tiled_launch.cu")]
for case, cand in GOOD:
    rc, r = compare(case, cand)
    shapes = r.get("shapes", [])
    check(r.get("verdict") == "OK" and shapes and
          all(s.get("correct") for s in shapes),
          "%s: correct at every shape and timed: %s" % (cand, str(r)[:800]))
    for s in shapes:
        base = s.get("baseline") or {}
        print("  %-10s baseline %10.2f us  candidate %10.2f us  speedup %.3f"
              " %s" % (s.get("name"), base.get("median_us") or 0,
                       s.get("median_us") or 0, s.get("speedup") or 0,
                       s.get("speedup_ci")))

for cand, seen in (("malloc_in_launch.cu", "cudaMalloc"),
                   ("sync_in_launch.cu", "cudaDeviceSynchronize"),
                   ("scratch_grows.cu", "scratch"),
                   ("driver_alloc_in_launch.cu", "cuMemAlloc_v2 (seen by CUPTI)"),
                   ("sync_by_pointer.cu",
                    "cudaDeviceSynchronize (seen by CUPTI)"),
                   ("sync_when_timed.cu",
                    "while timed, the launch called cuCtxSynchronize (seen "
                    "by CUPTI)")):
    rc, r = compare("vector_add", "tests/harness/launchers/" + cand)
    check(rc == 3 and r.get("verdict") == "CHEAT" and
          r.get("gate") == "launch_contract" and seen in (r.get("reason") or ""),
          "%s breaks the launch contract (%s): %s" % (cand, seen, str(r)[:800]))
    print("  ", r.get("reason"))

# A copy queued by the launch is work the timer counts: copy_then_add moves
# 20 bytes an element against the case kernel's 12, so it must read slower
# (counting its kernel alone would read it as fast as the baseline).
rc, r = compare("vector_add", "tests/harness/launchers/copy_then_add.cu")
big = [x for x in r.get("shapes", []) if x.get("name") == "64M"]
check(r.get("verdict") == "OK" and big and all(x.get("correct") for x in r.get("shapes", [])) and
      (big[0].get("speedup") or 9) < 0.85,
      "the launch's copy is timed: speedup at 64M %s (%s)"
      % (big[0].get("speedup") if big else None, str(r)[:600]))
for x in r.get("shapes", []):
    print("  copy_then_add %-5s candidate %9.2f us, baseline %9.2f us, "
          "speedup %.3f" % (x.get("name"), x.get("median_us") or 0,
                            (x.get("baseline") or {}).get("median_us") or 0,
                            x.get("speedup") or 0))

p = subprocess.run([KL, "profile", SRC + "/cases/reduce_sum_f32", "--candidate",
                    SRC + "/cases/reduce_sum_f32/candidates/split_two_kernels.cu",
                    "--shape", "16M", "--json"], capture_output=True,
                   text=True, env=ENV, timeout=900)
print("$ kl profile reduce_sum_f32 split_two_kernels.cu -> %d" % p.returncode)
try:
    prof = json.loads(p.stdout)
    shapes = prof.get("shapes") or []
    pr = (shapes[0].get("profile") or {}) if shapes else {}
except ValueError:
    pr = {}
parts = pr.get("parts") or []
check(p.returncode == 0 and len(parts) == 2 and
      "partial_sums" in (parts[0].get("name") or "") and
      "finish" in (parts[1].get("name") or "") and
      all((x.get("time_us") or 0) > 0 and x.get("verdict") for x in parts),
      "two named, timed parts: %s" % [(x.get("name"), x.get("time_us"),
                                        x.get("verdict")) for x in parts] or
      p.stderr[-800:])
for x in parts:
    print("  part %-24s %9.3f us  %s" % (x.get("name"), x.get("time_us") or 0,
                                       (x.get("verdict") or "")[:90]))

check([x.get("name") for x in parts] == ["partial_sums", "finish"],
      "the parts' names are the source's (demangled): %s"
      % [x.get("name") for x in parts])

# ---- kl run with profiles, then kl report: every kernel of the best's launch
case = TMP + "/reduce_sum_f32"
shutil.copytree(SRC + "/cases/reduce_sum_f32", case,
                ignore=shutil.ignore_patterns("runs", "candidates"))
replies = TMP + "/replies"
os.makedirs(replies)
with open(SRC + "/cases/reduce_sum_f32/candidates/split_two_kernels.cu") as f:
    code = f.read()
with open(replies + "/001.txt", "w") as f:
    f.write("MEMO: partial sums per block, then one block finishes\n"
            "```cuda\n%s```\n" % code)
srv, port, config = fake_llm(SRC, TMP, ENV, replies, "sk-fake-launchers")
try:
    env = dict(ENV, KL_CONFIG=config, ANTHROPIC_API_KEY="sk-fake-launchers")
    p = subprocess.run([KL, "run", case, "--json", "--iterations", "1",
                        "--seed", "3"], capture_output=True, text=True,
                       env=env, timeout=1800)
    print("$ kl run reduce_sum_f32 (profiles on) -> %d" % p.returncode)
    s = json.loads(p.stdout or "{}")
    check(p.returncode == 0 and
          (s.get("verdicts") or {}).get("ACCEPTED", 0) == 1,
          "the two-kernel launcher is accepted: %s %s"
          % (p.stdout[-600:], p.stderr[-600:]))
finally:
    srv.kill()
p = subprocess.run([KL, "report", case], capture_output=True, text=True,
                   env=ENV, timeout=300)
rep = p.stdout
at = rep.find("## Kernels of a launch")
print(rep[at:at + 900] if at >= 0 else rep[-1500:])
check(p.returncode == 0 and at >= 0 and
      all("partial_sums" in line and "finish" in line
          for line in rep[at:].split("\n\n")[2].splitlines()[2:]),
      "kl report shows both kernels of the best's launch at every shape")
p = subprocess.run([KL, "report", case, "--format", "html"],
                   capture_output=True, text=True, env=ENV, timeout=300)
check(p.returncode == 0 and "<h2>Kernels of a launch</h2>" in p.stdout and
      "partial_sums" in p.stdout, "and the HTML report too")

print("%d failures" % len(FAILS))
sys.exit(1 if FAILS else 0)
