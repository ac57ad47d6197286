#!/usr/bin/env python3
"""kl run on a python case, on the host (ctest label unit): a copy of
tests/python/cases/saxpy_py whose forward walks the buffers CHUNK elements
at a time (CHUNK = 1, a module constant the case declares tunable).

  tune     CHUNK=512 is compiled as the candidate's top-level assignment
           rewritten (the cached file says so) and accepted: the baseline
           builds a one-element array per element, about ten times slower,
           which no loaded machine hides
  llm      scripted replies (tests/python/replies) from the fake server: a
           correct candidate (ACCEPTED or REJECTED: its speed is not the
           point), a wrong one (INCORRECT), a syntax error (COMPILE_ERROR at
           its line), forward with one argument, no forward, an elision
           (INVALID_REPLY, each saying why), and a forward with a default
           argument past the case's two (accepted by the signature check)
  prompt   the prompt shows the module as ```python, forward's signature,
           the Python rules and the module constants the case tunes
  profile  kl profile runs on a python case (no counters here: a note)
usage: test_python_run.py KL SOURCE_DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys

KL, SRC = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SRC, "tests", "run"))
from support import FAILS, check, fake_llm, scratch  # noqa: E402

TMP, ENV = scratch(SRC, "kl-python-run-")


def make_case(dest):
    shutil.copytree(os.path.join(SRC, "tests", "python", "cases", "saxpy_py"),
                    dest)
    with open(dest + "/case.yaml") as f:
        text = f.read()
    text = text.replace(
        "reference: { atol: 1e-5, rtol: 1e-5 }",
        "reference: { atol: 1e-5, rtol: 1e-5 }\ntunables: { CHUNK: [1, 512] }")
    with open(dest + "/case.yaml", "w") as f:
        f.write(text)
    with open(dest + "/ops.py") as f:
        ops = f.read()
    ops = ops[:ops.index("def forward")] + '''CHUNK = 1  # elements per slice


def forward(y, x):
    n = len(x)
    for s in range(0, n, CHUNK):
        e = min(n, s + CHUNK)
        y[s:e] = array.array("f", [2.5 * a + b for a, b in
                                   zip(x[s:e], y[s:e])])
    return ()
'''
    with open(dest + "/ops.py", "w") as f:
        f.write(ops)
    return dest


def run_json(case, *args, env=None):
    p = subprocess.run([KL, "run", case, "--json", "--no-profile"] +
                       list(args), capture_output=True, text=True,
                       env=env or ENV, timeout=600)
    try:
        return p.returncode, json.loads(p.stdout), p.stderr
    except ValueError:
        return p.returncode, {}, p.stdout[-500:] + p.stderr[-1500:]


def records(case, run):
    with open(os.path.join(case, "solutions.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip() and
                json.loads(line)["run"] == run]


# ---- tune ---------------------------------------------------------------------
case = make_case(os.path.join(TMP, "tune"))
# hot: the acceptance is a decision with one chance, and hot samples skip
# the cache flush, so the 1.5 s cap holds more of them on a loaded machine
rc, s, err = run_json(case, "--proposer", "tune", "--time-cap", "1500",
                      "--hot", "--iterations", "2")
recs = records(case, s.get("run", "")) if s.get("run") else []
got = [(r["verdict"], r.get("memo")) for r in recs]
check(rc == 0 and [v for v, _ in got] == ["BASELINE", "ACCEPTED"] and
      got[1][1] == "CHUNK=512",
      "tune: CHUNK=512 accepted: %s %s" % (got, err))
cached = []
for path in glob.glob(os.path.join(TMP, "cache", "**", "*.py"),
                      recursive=True):
    with open(path) as f:
        cached += [line.strip() for line in f if line.startswith("CHUNK")]
check("CHUNK = 512  # elements per slice" in cached,
      "the tunable rewrote the top-level assignment: %s" % cached)

# ---- llm ------------------------------------------------------------------------
srv, port, config = fake_llm(SRC, TMP, ENV, SRC + "/tests/python/replies",
                             "sk-fake-python-run-key")
LENV = dict(ENV, KL_CONFIG=config, ANTHROPIC_API_KEY="sk-fake-python-run-key")
try:
    case = make_case(os.path.join(TMP, "llm"))
    rc, s, err = run_json(case, "--iterations", "7", "--patience", "20",
                          "--time-cap", "300", env=LENV)
    recs = records(case, s.get("run", "")) if s.get("run") else []
    got = [r["verdict"] for r in recs]
    check(rc == 0 and s.get("proposer") == "llm" and len(got) == 8,
          "llm: 7 iterations ran: %s %s" % (got, err))
    if len(got) == 8:
        check(got[1] in ("ACCEPTED", "REJECTED"),
              "a correct Python reply is measured: %s" % got[1])
        check(got[2] == "INCORRECT", "a wrong one is INCORRECT: %s" % got[2])
        check(got[3] == "COMPILE_ERROR" and "4:" in (recs[3].get("reason") or ""),
              "a syntax error is a COMPILE_ERROR at its line: %s" % recs[3])
        for k, words in ((4, "takes (y)"), (5, "no top-level 'forward'"),
                         (6, "elision")):
            check(got[k] == "INVALID_REPLY" and
                  words in (recs[k].get("reason") or ""),
                  "reply %d is INVALID_REPLY (%s): %s" % (k, words, recs[k]))
        check(got[7] in ("ACCEPTED", "REJECTED"),
              "forward(y, x, scale=2.5) takes the case's two arguments: %s"
              % recs[7])
        d = "%s/runs/%s/iter_001" % (case, s["run"])
        check(os.path.exists(d + "/kernel.py"), "iter_001 keeps kernel.py")
        with open(d + "/prompt.txt") as f:
            prompt = f.read()
        for words in ("```python", "def forward(y, x)",
                      "Send the complete candidate file",
                      "Tunables (module constants): CHUNK: 1 512",
                      "uses plain Python"):
            check(words in prompt, "the prompt says %r" % words)
finally:
    srv.kill()

# ---- profile ----------------------------------------------------------------------
p = subprocess.run([KL, "profile", case, "--shape", "2k", "--json"],
                   capture_output=True, text=True, env=ENV, timeout=600)
try:
    prof = json.loads(p.stdout)
except ValueError:
    prof = {}
check(p.returncode == 0 and prof.get("verdict") == "OK" and
      prof.get("shapes", [{}])[0].get("profile"),
      "kl profile on a python case: %d %s %s" % (p.returncode,
                                                p.stdout[:300], p.stderr))

if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
shutil.rmtree(TMP, ignore_errors=True)  # kept when a check failed
print("all passed")
