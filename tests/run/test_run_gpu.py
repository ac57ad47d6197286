#!/usr/bin/env python3
"""kl run on a CUDA device (ctest label gpu; exit 77, skipped, without one).

  tune  on gemm_f32: every BLOCK configuration measured against the best,
        the baseline profiled and diagnosed, the roofline gate applied
  llm   on transpose_f32 with scripted replies from the fake server: the
        tiled kernel is ACCEPTED, a copy is INCORRECT, a typo is a
        COMPILE_ERROR, half the rows left unwritten is INCORRECT
usage: test_run_gpu.py KL SOURCE_DIR
"""
import json
import os
import subprocess
import sys

from support import FAILS, check, copy_case as copy_to, fake_llm, scratch

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-run-gpu-")


probe = subprocess.run([KL, "bench", SRC + "/cases/vector_add", "--shape",
                        "1M", "--json"], capture_output=True, text=True,
                       env=ENV)
if probe.returncode != 0:
    print("skipped: no CUDA device here (%s)" % probe.stderr.strip()[:200])
    sys.exit(77)


def copy_case(name):
    return copy_to(SRC, name, os.path.join(TMP, name))


def run(case, *args, env=None):
    p = subprocess.run([KL, "run", case, "--json"] + list(args),
                       capture_output=True, text=True, env=env or ENV,
                       timeout=900)
    check(p.returncode == 0, "kl run %s exited %d: %s" % (
        " ".join(args), p.returncode, p.stderr[-2000:]))
    print(p.stdout.strip(), flush=True)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {}


def records(case, run_id):
    with open(case + "/solutions.jsonl") as f:
        return [r for r in map(json.loads, f) if r["run"] == run_id]


# ---- tune on gemm_f32 ---------------------------------------------------------
case = copy_case("gemm_f32")
s = run(case, "--iterations", "4", "--seed", "3")
recs = records(case, s.get("run", ""))
check(s.get("proposer") == "tune" and s.get("stop_reason") == "exhausted",
      "tune over BLOCK's three values: %s" % s)
check([r["verdict"] for r in recs][0] == "BASELINE", "iteration 0")
check(all(r["verdict"] in ("ACCEPTED", "REJECTED") for r in recs[1:]),
      "every BLOCK is correct: %s" % [(r["config"], r["verdict"], r["reason"])
                                      for r in recs[1:]])
check(len(recs) == 3, "two configurations besides the baseline's")
it0 = "%s/runs/%s/iter_000" % (case, s.get("run", ""))
with open(it0 + "/profile.json") as f:
    prof = json.load(f)
check(all("profile" in sh for sh in prof.get("shapes", [])),
      "the baseline is profiled at every shape")
check(os.path.exists(it0 + "/rules.json"), "and diagnosed")
with open(it0 + "/verdict.json") as f:
    check(json.load(f)["gates"]["faster_than_roofline"] == "applied",
          "the roofline gate applies (gemm_f32 gives roofline bytes)")
check(recs[0]["environment"]["gpu"], "the environment names the GPU")
for r in recs:
    print(r["iteration"], r["config"], r["verdict"], r.get("speedup"),
          r.get("reason"))

# ---- scripted llm on transpose_f32 --------------------------------------------------
srv, port, config = fake_llm(SRC, TMP, ENV,
                             SRC + "/tests/run/replies_transpose",
                             "sk-fake-gpu-key")
try:
    case = copy_case("transpose_f32")
    s = run(case, "--iterations", "4", "--patience", "10", "--seed", "9",
            env=dict(ENV, KL_CONFIG=config,
                     ANTHROPIC_API_KEY="sk-fake-gpu-key"))
    recs = records(case, s.get("run", ""))
    got = [r["verdict"] for r in recs]
    want = ["BASELINE", "ACCEPTED", "INCORRECT", "COMPILE_ERROR", "INCORRECT"]
    check(got == want, "scripted verdicts %s, want %s" % (got, want))
    check(s.get("best_speedup", {}).get("ci", [0])[0] > 1.1,
          "the tiled transpose is clearly faster: %s" % s.get("best_speedup"))
    for r in recs:
        print(r["iteration"], r["verdict"], r.get("speedup"), r.get("reason"))
    acc = "%s/runs/%s/iter_001" % (case, s.get("run", ""))
    check(os.path.exists(acc + "/profile.json") and
          os.path.exists(acc + "/rules.json"), "the acceptance is profiled")
finally:
    srv.kill()

print("%d failures" % len(FAILS))
sys.exit(1 if FAILS else 0)
