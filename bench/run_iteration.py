#!/usr/bin/env python3
"""What one `kl run` iteration costs on the GPU, the model's latency left
out (issue 26's loop targets), with the worker kept between evaluations
(the default) and with a fresh one for each (`--fresh-worker`), measured
side by side in one process of this script:

  cuda    transpose_f32 with the four scripted replies of
          tests/run/replies_transpose from the fake LLM server on localhost
          (the tiled kernel ACCEPTED, a copy INCORRECT, a typo
          COMPILE_ERROR, half the rows INCORRECT), with the quick profile
          and with the standard one; the fake server takes 2 s a reply
  python  tests/python/cases/softmax_torch with three replies: the fused
          Triton kernel (ACCEPTED), a wrong forward (INCORRECT), PyTorch's
          own softmax (after the failure: a fresh worker either way, but
          with the kept worker's policy one started while the model
          answers), quick profile; the fake server takes 5 s a reply
  host    cases/host_matmul, three configurations from the tune proposer
          (no model), no profile: a case whose oracle is costly (a
          double-precision reference on the CPU), where the oracle's
          outputs kept by the worker for the run show

The delays (FAKE_LLM_DELAY) stand for a model's latency, so that what
overlaps it shows; `worker_s` leaves them out.

A warm-up run of each case fills the compile cache first. Prints a Markdown
table of each iteration's time from the records: `cost.worker_s` (its
evaluations: the iteration without the model's latency), `cost.wall_s`
(with it), and from its report `worker_served` (how many evaluations the
worker had finished before it), the checks' wall and the oracle's part of
it (`phases_ms.checks`, `.oracle`) and `oracle_kept` (seed checks that
compared with outputs the worker kept from an earlier check).
usage: run_iteration.py KL OUT_DIR [cuda,python,host]"""
import json
import os
import shutil
import subprocess
import sys

KL, OUT = sys.argv[1], sys.argv[2]
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "run"))
from support import copy_case, fake_llm, scratch  # noqa: E402

TMP, ENV = scratch(SRC, "kl-run-iter-")
ENV["KERNLAB_CACHE_DIR"] = os.path.join(TMP, "cache")
KEY = "sk-fake-bench-key"
SOFTMAX = os.path.join(SRC, "tests", "python", "cases", "softmax_torch")


def python_replies(folder):
    os.makedirs(folder)
    texts = [open(os.path.join(SOFTMAX, "candidates", "triton_fused.py")).read(),
             "import torch\n\n\ndef forward(x):\n    return torch.ones_like(x)\n",
             open(os.path.join(SOFTMAX, "candidates",
                               "torch_softmax.py")).read()]
    for i, text in enumerate(texts):
        with open(os.path.join(folder, "%03d.txt" % (i + 1)), "w") as f:
            f.write("A candidate.\n\n```python\n%s```\nMEMO: reply %d\n"
                    % (text, i + 1))
    return folder


def from_report(case, run, iteration):
    """worker_served, checks ms, oracle ms, oracle_kept of one iteration's
    report (None where it has none)."""
    path = "%s/runs/%s/iter_%03d/report.json" % (case, run, iteration)
    if not os.path.exists(path):
        return (None, None, None, None)
    with open(path) as f:
        r = json.load(f)
    ph = r.get("phases_ms") or {}
    return (r.get("worker_served"), ph.get("checks"), ph.get("oracle"),
            r.get("oracle_kept"))


def one_run(kind, label, make_case, replies, iterations, args, delay=0):
    rows = []
    os.makedirs(os.path.join(TMP, label))
    srv, env = None, dict(ENV)
    if replies:  # a model's replies; else a proposer of kl's own
        srv, _, config = fake_llm(SRC, os.path.join(TMP, label),
                                  dict(ENV, FAKE_LLM_DELAY=str(delay)),
                                  replies, KEY)
        env = dict(ENV, KL_CONFIG=config, ANTHROPIC_API_KEY=KEY)
    try:
        case = make_case(os.path.join(TMP, label, "case"))
        p = subprocess.run([KL, "run", case, "--json", "--iterations",
                            str(iterations), "--patience", "10", "--seed", "9"]
                           + args, capture_output=True, text=True, env=env,
                           timeout=1800)
        if p.returncode != 0:
            print("kl run failed (%d): %s" % (p.returncode, p.stderr[-800:]))
            sys.exit(1)
        run = json.loads(p.stdout)["run"]
        with open(case + "/solutions.jsonl") as f:
            for r in map(json.loads, f):
                if r["run"] == run:
                    rows.append((kind, " ".join(args), r["iteration"],
                                 r["verdict"], r["cost"]["wall_s"],
                                 r["cost"]["worker_s"])
                                + from_report(case, run, r["iteration"]))
    finally:
        if srv:
            srv.kill()
    return rows


def cuda_case(dest):
    return copy_case(SRC, "transpose_f32", dest)


def python_case(dest):
    shutil.copytree(SOFTMAX, dest)
    return dest


def host_case(dest):
    return copy_case(SRC, "host_matmul", dest)


KINDS = (sys.argv[3] if len(sys.argv) > 3 else "cuda,python,host").split(",")
rows = []
n = 0
if "cuda" in KINDS:
    cuda_replies = SRC + "/tests/run/replies_transpose"
    one_run("cuda", "warm-cuda", cuda_case, cuda_replies, 4,
            ["--profile", "quick"])
    for profile in ("quick", "standard"):
        for worker in ([], ["--fresh-worker"]):
            n += 1
            rows += one_run("cuda", "cuda-%d" % n, cuda_case, cuda_replies, 4,
                            ["--profile", profile] + worker, delay=2)
if "python" in KINDS:
    py_replies = python_replies(os.path.join(TMP, "py-replies"))
    one_run("python", "warm-py", python_case, py_replies, 3,
            ["--profile", "quick"])
    for worker in ([], ["--fresh-worker"]):
        n += 1
        rows += one_run("python", "py-%d" % n, python_case, py_replies, 3,
                        ["--profile", "quick"] + worker, delay=5)
if "host" in KINDS:
    for worker in ([], ["--fresh-worker"]):
        n += 1
        rows += one_run("host", "host-%d" % n, host_case, None, 3,
                        ["--proposer", "tune", "--no-profile",
                         "--time-cap", "300"] + worker)
with open(os.path.join(OUT, "run_iteration.json"), "w") as f:
    json.dump(rows, f)


def cell(v, fmt="%s"):
    return "-" if v is None else fmt % v


print("| case | options | iteration | verdict | worker s | wall s "
      "| worker_served | checks ms | of which oracle | oracle_kept |")
print("|---|---|---|---|---|---|---|---|---|---|")
for kind, opts, it, verdict, wall, worker, srv_n, chk, orc, kept in rows:
    print("| %s | %s | %d | %s | %.2f | %.2f | %s | %s | %s | %s |"
          % (kind, opts, it, verdict, worker, wall, cell(srv_n),
             cell(chk, "%.0f"), cell(orc, "%.0f"), cell(kept)))
shutil.rmtree(TMP, ignore_errors=True)
