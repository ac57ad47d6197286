#!/usr/bin/env python3
"""What one `kl run` iteration costs on the GPU, the model's latency left
out (issue 26's loop targets): transpose_f32 with the four scripted replies
of tests/run/replies_transpose from the fake LLM server on localhost (the
tiled kernel ACCEPTED, a copy INCORRECT, a typo COMPILE_ERROR, half the
rows INCORRECT), once with the quick profile and once with the standard
one, each run after a warm-up run that fills the compile cache. Prints a
Markdown table of each iteration's wall time from the records
(`cost.wall_s`), by verdict.
usage: run_iteration.py KL OUT_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

KL, OUT = sys.argv[1], sys.argv[2]
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "run"))
from support import copy_case, fake_llm, scratch  # noqa: E402

TMP, ENV = scratch(SRC, "kl-run-iter-")
ENV["KERNLAB_CACHE_DIR"] = os.path.join(TMP, "cache")
rows = []
srv, port, config = fake_llm(SRC, TMP, ENV,
                             SRC + "/tests/run/replies_transpose",
                             "sk-fake-bench-key")
env = dict(ENV, KL_CONFIG=config, ANTHROPIC_API_KEY="sk-fake-bench-key")
try:
    for profile in ("quick", "standard"):
        for attempt in ("warm-up", "measured"):
            case = copy_case(SRC, "transpose_f32",
                             os.path.join(TMP, "%s-%s" % (profile, attempt)))
            p = subprocess.run([KL, "run", case, "--json", "--iterations", "4",
                                "--patience", "10", "--seed", "9",
                                "--profile", profile],
                               capture_output=True, text=True, env=env,
                               timeout=900)
            if p.returncode != 0:
                print("kl run failed (%d): %s" % (p.returncode, p.stderr[-800:]))
                sys.exit(1)
            if attempt == "warm-up":
                continue
            run = json.loads(p.stdout)["run"]
            with open(case + "/solutions.jsonl") as f:
                for r in map(json.loads, f):
                    if r["run"] == run:
                        rows.append((profile, r["iteration"], r["verdict"],
                                     r["cost"]["wall_s"],
                                     r["cost"]["worker_s"]))
finally:
    srv.kill()
with open(os.path.join(OUT, "run_iteration.json"), "w") as f:
    json.dump(rows, f)
print("| profile | iteration | verdict | wall s | worker s |")
print("|---|---|---|---|---|")
for profile, it, verdict, wall, worker in rows:
    print("| %s | %d | %s | %.2f | %.2f |" % (profile, it, verdict, wall,
                                             worker))
shutil.rmtree(TMP, ignore_errors=True)
