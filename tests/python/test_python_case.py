#!/usr/bin/env python3
"""A python case end to end on the host (ctest label unit): kl bench and kl
compare start kl-pyworker in the sandbox and run tests/python/cases/saxpy_py
(array.array buffers, so no numpy is needed) through the C worker.

  bench    the baseline (the module's forward) is correct at both shapes
           against the module's reference() and timed
  compare  a list-comprehension candidate: OK, correct, timed beside the
           baseline (no speed is asserted: this is a loaded CI machine),
           each side's first two calls per shape noted (warm-up);
           a wrong one: INCORRECT naming the output and the mismatches; a
           syntax error: COMPILE_ERROR at the file's line and column;
           all with the documented exit statuses (0, 3, 3)
  missing  a case whose module is not there: exit 2, path:line:column
(kl run and kl profile of python cases: test_python_run.py)
usage: test_python_case.py KL SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

KL, SRC = sys.argv[1], sys.argv[2]
CASE = os.path.join(SRC, "tests", "python", "cases", "saxpy_py")
TMP = tempfile.mkdtemp(prefix="kl-python-case-")
ENV = dict(os.environ, KERNLAB_CACHE_DIR=os.path.join(TMP, "cache"))
FAILS = []


def check(ok, what):
    print("%s: %s" % ("ok" if ok else "FAIL", what), flush=True)
    if not ok:
        FAILS.append(what)


def kl(*args):
    p = subprocess.run([KL] + list(args) + ["--json", "--time-cap-ms", "200"],
                       capture_output=True, text=True, env=ENV, timeout=600)
    try:
        return p.returncode, json.loads(p.stdout), p.stderr
    except ValueError:
        return p.returncode, {}, p.stderr


rc, r, err = kl("bench", CASE)
shapes = r.get("shapes") or []
check(rc == 0 and r.get("verdict") == "OK" and len(shapes) == 2 and
      all(s.get("correct") and (s.get("median_us") or 0) > 0
          for s in shapes),
      "kl bench: the baseline correct and timed at both shapes: %s %s"
      % (json.dumps(r)[:300], err[-300:]))

cand = os.path.join(CASE, "candidates")
rc, r, err = kl("compare", CASE, "--candidate",
                os.path.join(cand, "comprehension.py"))
shapes = r.get("shapes") or []
check(rc == 0 and r.get("verdict") == "OK" and len(shapes) == 2 and
      all(s.get("correct") and (s.get("speedup") or 0) > 0 and
          (s.get("baseline") or {}).get("median_us") for s in shapes),
      "kl compare, a comprehension: correct and timed beside the baseline: "
      "%s %s" % (json.dumps(r)[:300], err[-300:]))
notes = r.get("python") or {}
for side in ("baseline", "candidate"):
    got = [(s.get("shape"), s.get("first_call_ms", 0) > 0,
            s.get("second_call_ms", 0) > 0)
           for s in (notes.get(side) or {}).get("shapes", [])]
    check(got == [("2k", True, True), ("odd", True, True)],
          "the %s's first two calls per shape are noted: %s"
          % (side, notes.get(side)))

# relative paths, as a user types them, from the case's parent folder
p = subprocess.run([KL, "bench", os.path.basename(CASE), "--json",
                    "--time-cap-ms", "200"], capture_output=True, text=True,
                   env=ENV, timeout=600, cwd=os.path.dirname(CASE))
check(p.returncode == 0 and '"verdict":"OK"' in p.stdout.replace(" ", ""),
      "kl bench of a python case by a relative path: %d %s"
      % (p.returncode, p.stderr[-300:]))

rc, r, err = kl("compare", CASE, "--candidate", os.path.join(cand, "wrong.py"))
check(rc == 3 and r.get("verdict") == "INCORRECT" and
      "y[0]: mismatch" in (r.get("reason") or ""),
      "a wrong candidate: INCORRECT, the output named: %d %s"
      % (rc, r.get("reason")))

rc, r, err = kl("compare", CASE, "--candidate",
                os.path.join(cand, "syntax_error.py"))
check(rc == 3 and r.get("verdict") == "COMPILE_ERROR" and
      "syntax_error.py:1:18: error:" in (r.get("reason") or ""),
      "a syntax error: COMPILE_ERROR at its line and column: %d %s"
      % (rc, r.get("reason")))

broken = os.path.join(TMP, "broken")
shutil.copytree(CASE, broken)
os.remove(os.path.join(broken, "ops.py"))
p = subprocess.run([KL, "bench", broken], capture_output=True, text=True,
                   env=ENV, timeout=120)
check(p.returncode == 2 and "case.yaml:10:11:" in p.stderr and
      "ops.py" in p.stderr,
      "a missing module: exit 2 at its line and column: %d %s"
      % (p.returncode, p.stderr.strip()[:300]))

shutil.rmtree(TMP, ignore_errors=True)
if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
print("all passed")
