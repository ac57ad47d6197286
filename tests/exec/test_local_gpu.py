#!/usr/bin/env python3
"""The local executor on two GPUs (ctest label gpu; exit 77 with fewer).

On tests/exec/repeat (a kernel whose tunable alone sets its run time, so
no noise can flip a decision), the same tune run in one batch of four,
once on GPU 0 and once on GPUs 0 and 1, each with its own compile cache:

  same      identical records: REPEAT=1 ACCEPTED, 16 REJECTED, 2 faster
            than the baseline but compared again with REPEAT=1 and
            REJECTED, 8 REJECTED
  parallel  on two GPUs both devices ran evaluations of the batch, two of
            them at the same time
  wall      the batch's wall time on two GPUs against one (printed, and
            under 0.75: the ideal is 0.5)
usage: test_local_gpu.py KL SOURCE_DIR [--bench]
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from records import (finish, check, content, kl, lines, newest_run,  # noqa
                     scratch, solutions)

KL, SRC = os.path.abspath(sys.argv[1]), sys.argv[2]
try:
    gpus = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                          text=True).stdout.count("GPU ")
except OSError:
    gpus = 0
if gpus < 2:
    print("SKIP: %d GPU(s) here; this test needs two" % gpus)
    sys.exit(77)
TMP, ENV = scratch(SRC, "kl-local-gpu-")
RUN = ["--proposer", "tune", "--iterations", "4", "--batch", "4", "--seed",
       "11", "--no-profile", "--time-cap", "500"]


def run(name, devices):
    c = os.path.join(TMP, name)
    subprocess.run(["cp", "-r", SRC + "/tests/exec/repeat", c], check=True)
    env = dict(ENV, KERNLAB_CACHE_DIR=os.path.join(TMP, name + "-cache"))
    kl(KL, env, "run", c, *RUN, "--devices", devices)
    run_id = newest_run(c)
    batch = [l for l in lines(os.path.join(c, "runs", run_id),
                              "executor.jsonl")
             if l["batch"] == "iter_001-004"]
    m = re.search(r"in ([0-9.]+) s", batch[0]["detail"]) if batch else None
    return c, run_id, float(m.group(1)) if m else None


one, one_id, wall_one = run("one", "0")
two, two_id, wall_two = run("two", "0,1")
a, b = content(one, one_id), content(two, two_id)
check(a == b, "one GPU and two record differently:\n%s\n%s" % (a, b))
check([(r[2], r[3], r[6]) for r in a[1:]] ==
      [(("REPEAT=1",), "ACCEPTED", False), (("REPEAT=16",), "REJECTED", False),
       (("REPEAT=2",), "REJECTED", True), (("REPEAT=8",), "REJECTED", False)],
      "unexpected decisions: %s" % a)
where = [s["ran_on"] for s in solutions(two, two_id)
         if s["iteration"] > 0 and not s["rechecked"]]
check({w["device"] for w in where} == {0, 1},
      "the batch did not use both GPUs: %s" % where)
check(all(w["gpu"] for w in where), "a record names no GPU: %s" % where)
overlap = any(x["device"] != y["device"] and
              x["started"] < y["started"] + y["seconds"] and
              y["started"] < x["started"] + x["seconds"]
              for x in where for y in where)
check(overlap, "no two evaluations ran at once: %s" % where)
check(wall_one and wall_two, "no batch wall time recorded")
if wall_one and wall_two:
    ratio = wall_two / wall_one
    print("batch of 4 (compile, check, compare each): 1 GPU %.2f s, "
          "2 GPUs %.2f s, ratio %.3f" % (wall_one, wall_two, ratio))
    check(ratio < 0.75, "two GPUs took %.2f of one GPU's time" % ratio)
finish(TMP, "local executor on two GPUs")
