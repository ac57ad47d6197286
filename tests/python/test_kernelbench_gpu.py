#!/usr/bin/env python3
"""Python cases through every command, on a CUDA device (ctest label gpu;
exit 77, skipped, without a device or without torch and triton).

The cases: tests/python/cases/softmax_torch (a PyTorch operator as the
baseline, a fused Triton kernel as the candidate) and each KernelBench
problem bundled under bench/kernelbench/problems, made a case by `kl case
from-kernelbench`, with its ModelNew from bench/kernelbench/candidates.
Each goes through

  kl bench     the baseline correct on fresh seeds and timed
  kl compare   the candidate correct, timed A B B A against it, decided
  kl profile   a range per kernel the forward launches, with counters
  kl rules     a verdict from the profile
  kl run       two scripted replies from the fake LLM server: the
               candidate (ACCEPTED, or REJECTED where it is no faster) and
               a wrong one (INCORRECT); the prompt shows Python (and, for a
               KernelBench case, asks for ModelNew)

and each command's wall time is printed (the table in bench/README.md).
Named on the command line (ctest's dsl_cases_gpu names both), the bundled
cases of the other kernel languages go through the same: cases/add_cute
(CuTe DSL) and cases/softmax_cutile (cuTile), each with its tiled candidate
and its wrong one, the prompt showing the language's idioms; where python3
cannot import the language (scripts/gpu-dsl-stage installs both on the GPU
machine), kl bench must refuse saying what to install, and with the
language on PYTHONPATH, the same bench without it must refuse so too.
Two small problems check where a KernelBench case's inputs are made: on the
GPU, and on the host when get_inputs() needs it (numpy).
usage: test_kernelbench_gpu.py KL SOURCE_DIR [PROBLEM_STEM...]
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import time

KL, SRC = sys.argv[1], sys.argv[2]
ONLY = sys.argv[3:]
sys.path.insert(0, os.path.join(SRC, "tests", "run"))
from support import (FAILS, check, fake_llm, require_cuda_torch,  # noqa: E402
                     scratch)

require_cuda_torch()

TMP, ENV = scratch(SRC, "kl-kernelbench-gpu-")
KEY = "sk-fake-kernelbench-gpu-key"
WRONG_MODEL = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Ones where the problem's output is: wrong on every element."""

    def __init__(self, *args):
        super().__init__()

    def forward(self, x, *rest):
        return torch.ones_like(x)
'''
WRONG_FORWARD = '''import torch


def forward(x):
    return torch.ones_like(x)
'''


def kl(*args, env=None):
    """(exit status, the --json document or {}, stderr, wall seconds)."""
    t0 = time.time()
    p = subprocess.run([KL] + list(args) + ["--json"], capture_output=True,
                       text=True, env=env or ENV, timeout=900)
    wall = time.time() - t0
    print("  $ kl %s -> %d (%.1f s)" % (" ".join(args), p.returncode, wall),
          flush=True)
    try:
        return p.returncode, json.loads(p.stdout), p.stderr, wall
    except ValueError:
        return p.returncode, {}, p.stdout[-800:] + p.stderr[-1500:], wall


def first_shape(r):
    return (r.get("shapes") or [{}])[0]


def reply(path):
    with open(path) as f:
        return ("Here is the candidate.\n\n```python\n%s```\n"
                "MEMO: the candidate file as it is\n" % f.read())


# The bundled cases of other kernel languages: (case, module python3 must
# import, the pip package the refusal names, candidate, wrong candidate,
# words the prompt's language guide shows).
DSL_CASES = {
    "add_cute": ("cutlass.cute", "nvidia-cutlass-dsl", "cute_vectorized.py",
                 "cute_wrong_row.py", "CuTe DSL (`import cutlass.cute"),
    "softmax_cutile": ("cuda.tile", "cuda-tile", "cutile_rows8.py",
                       "cutile_wrong_norm.py", "cuTile (`import cuda.tile"),
}
PROMPT_WORDS = {}


def importable(module, env):
    return subprocess.run(["python3", "-c", "import " + module], env=env,
                          capture_output=True).returncode == 0


def refusal(name, d, package, env):
    """kl bench of a case whose language python3 lacks: a failure that
    names the package to install."""
    rc, r, err, _ = kl("bench", d, env=env)
    text = err + json.dumps(r)
    check(rc != 0 and "pip install" in text and package in text,
          "%s: without its language kl bench refuses naming %s: %d %s"
          % (name, package, rc, text[-600:]))
    print("  refused as it should: %s" % text.strip()[-300:])


def dsl_cases():
    for name in ONLY:
        if name not in DSL_CASES:
            continue
        module, package, cand, wrong, words = DSL_CASES[name]
        d = os.path.join(TMP, name)
        shutil.copytree(os.path.join(SRC, "cases", name), d)
        bare = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
        if not importable(module, ENV):
            print("== %s: python3 cannot import %s here" % (name, module))
            refusal(name, d, package, ENV)
            continue
        if not importable(module, bare):  # it came from PYTHONPATH
            refusal(name, d, package, bare)
        with open(os.path.join(d, "candidates", wrong)) as f:
            wrong_text = f.read()
        PROMPT_WORDS[name] = [words]
        yield name, d, os.path.join(d, "candidates", cand), wrong_text, False


def cases():
    """(name, case folder, candidate file, wrong reply text, kernelbench?)"""
    yield from dsl_cases()
    soft = os.path.join(SRC, "tests", "python", "cases", "softmax_torch")
    if not ONLY or "softmax_torch" in ONLY:
        d = os.path.join(TMP, "softmax_torch")
        shutil.copytree(soft, d)
        yield ("softmax_torch", d,
               os.path.join(d, "candidates", "triton_fused.py"),
               WRONG_FORWARD, False)
    for problem in sorted(glob.glob(os.path.join(
            SRC, "bench", "kernelbench", "problems", "*.py"))):
        stem = os.path.basename(problem)[:-3]
        if ONLY and stem not in ONLY:
            continue
        d = os.path.join(TMP, stem)
        p = subprocess.run([KL, "case", "from-kernelbench", problem, "-o", d],
                           capture_output=True, text=True, env=ENV)
        check(p.returncode == 0, "%s: from-kernelbench: %s" % (stem, p.stderr))
        cands = sorted(glob.glob(os.path.join(
            SRC, "bench", "kernelbench", "candidates", stem, "*.py")))
        check(len(cands) >= 1, "%s: a bundled ModelNew" % stem)
        if p.returncode == 0 and cands:
            yield stem, d, cands[0], WRONG_MODEL, True


ROWS = []
for name, case, cand, wrong, kb in cases():
    print("== %s (%s)" % (name, os.path.basename(cand)), flush=True)
    row = {"case": name, "candidate": os.path.basename(cand)}

    rc, r, err, row["bench_s"] = kl("bench", case)
    sh = first_shape(r)
    check(rc == 0 and r.get("verdict") == "OK" and sh.get("correct") and
          (sh.get("median_us") or 0) > 0,
          "%s: kl bench: the baseline correct and timed: %s %s"
          % (name, json.dumps(r)[:300], err[-800:]))
    row["baseline_us"] = sh.get("median_us")

    rc, r, err, row["compare_s"] = kl("compare", case,
                                      "--candidate", cand)
    sh = first_shape(r)
    check(rc == 0 and r.get("verdict") == "OK" and sh.get("correct") and
          (sh.get("speedup") or 0) > 0 and sh.get("decision"),
          "%s: kl compare: the candidate correct, timed and decided: %s %s"
          % (name, json.dumps(r)[:300], err[-800:]))
    row["speedup"], row["ci"] = sh.get("speedup"), sh.get("speedup_ci")
    row["decision"] = sh.get("decision")

    rc, r, err, row["profile_s"] = kl("profile", case)
    prof = first_shape(r).get("profile") or {}
    parts = prof.get("parts") or []
    ranges = parts or [prof]
    check(rc == 0 and all((x.get("time_us") or 0) > 0 for x in ranges) and
          (prof.get("metrics") or parts),
          "%s: kl profile: a range per kernel with counters: %s %s"
          % (name, json.dumps(prof)[:300], err[-800:]))
    row["kernels"] = [x.get("name") for x in parts] or [prof.get("name")]

    rc, r, err, row["rules_s"] = kl("rules", case)
    d = r if "fired" in r else first_shape(r)
    verdict = d.get("verdict")
    check(rc == 0 and verdict and isinstance(d.get("fired"), list),
          "%s: kl rules: a verdict and the rules fired: %s %s"
          % (name, json.dumps(r)[:400], err[-800:]))
    if len(parts) > 1:
        check(len(d.get("kernels") or []) == len(parts),
              "%s: kl rules: a diagnosis per kernel too: %s"
              % (name, [k.get("kernel") for k in d.get("kernels") or []]))
    row["verdict"] = verdict

    script = os.path.join(TMP, name + "-replies")
    os.makedirs(script)
    with open(os.path.join(script, "001.txt"), "w") as f:
        f.write(reply(cand))
    with open(os.path.join(script, "002.txt"), "w") as f:
        f.write("A version that skips the arithmetic.\n\n```python\n%s```\n"
                "MEMO: ones\n" % wrong)
    os.makedirs(os.path.join(TMP, name + "-llm"))
    srv, port, config = fake_llm(SRC, os.path.join(TMP, name + "-llm"), ENV,
                                 script, KEY)
    lenv = dict(ENV, KL_CONFIG=config, ANTHROPIC_API_KEY=KEY)
    try:
        rc, s, err, row["run_s"] = kl("run", case, "--iterations",
                                      "2", "--patience", "5", "--profile",
                                      "quick", env=lenv)
    finally:
        srv.kill()
    got = []
    if s.get("run"):
        with open(os.path.join(case, "solutions.jsonl")) as f:
            got = [json.loads(line) for line in f]
        got = [x for x in got if x.get("run") == s["run"]]
    verdicts = [x.get("verdict") for x in got]
    print("  run: %s, best x%s" % (verdicts, s.get("best_speedup")))
    check(rc == 0 and len(verdicts) == 3,
          "%s: kl run: the baseline and two replies: %s %s"
          % (name, verdicts, err[-800:]))
    if len(verdicts) == 3:
        check(verdicts[1] in ("ACCEPTED", "REJECTED"),
              "%s: the candidate's reply measured: %s" % (name, got[1]))
        check(verdicts[2] == "INCORRECT",
              "%s: the wrong reply INCORRECT: %s" % (name, got[2]))
        with open(os.path.join(case, "runs", s["run"], "iter_001",
                               "prompt.txt")) as f:
            prompt = f.read()
        for words in (["```python"] + (["ModelNew"] if kb else []) +
                      PROMPT_WORDS.get(name, [])):
            check(words in prompt, "%s: the prompt says %r" % (name, words))
    row["run"] = verdicts
    ROWS.append(row)

# Where a KernelBench case's get_inputs() makes its tensors: on the GPU
# (its factory calls that name no device), and on the host, reseeded, when
# it needs the host (here numpy).
INPUTS_PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2.0


n = 65536


def get_inputs():
%s


def get_init_inputs():
    return []
'''
WHERE = {"made_on_gpu": "    x = torch.randn(n)\n"
                        "    assert x.is_cuda, 'made on the host'\n"
                        "    return [x]",
         "needs_the_host": "    x = torch.randn(n)\n"
                           "    return [torch.from_numpy(x.numpy())]"}
if not ONLY:
    try:
        import numpy  # noqa: F401  the host variant needs it
    except ImportError:
        del WHERE["needs_the_host"]
    for stem, body in sorted(WHERE.items()):
        problem = os.path.join(TMP, stem + ".py")
        with open(problem, "w") as f:
            f.write(INPUTS_PROBLEM % body)
        d = os.path.join(TMP, "kb_" + stem)
        p = subprocess.run([KL, "case", "from-kernelbench", problem, "-o", d],
                           capture_output=True, text=True, env=ENV)
        rc, r, err, _ = kl("bench", d)
        check(p.returncode == 0 and rc == 0 and r.get("verdict") == "OK" and
              first_shape(r).get("correct"),
              "inputs %s: kl bench correct: %s %s"
              % (stem, json.dumps(r)[:300], (p.stderr + err)[-800:]))

print("\n| case / candidate | bench | compare | profile | rules | run (2 replies)"
      " | speedup [95% CI] | kernels | verdict |")
print("|---|---|---|---|---|---|---|---|---|")
for r in ROWS:
    ci = r.get("ci") or [0, 0]
    print("| %s / %s | %.1f s | %.1f s | %.1f s | %.1f s | %.1f s | %.3f "
          "[%.3f, %.3f] %s | %d | %s |"
          % (r["case"], r["candidate"], r["bench_s"], r["compare_s"],
             r["profile_s"], r["rules_s"], r.get("run_s", 0),
             r.get("speedup") or 0, ci[0], ci[1], r.get("decision"),
             len(r.get("kernels") or []), r.get("verdict")))
if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
print("all passed")
