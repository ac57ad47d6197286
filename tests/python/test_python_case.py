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
  neighbours  candidates that import a module beside the case's module or
           find a file from __file__ load as if they were that module
           a candidate whose import raises: CRASHED, its line named
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


def kl(*args, hot=True):
    """kl VERB ... --json, sampled hot unless hot=False (the first bench
    samples cold; the rest check verdicts and notes, not timings)"""
    p = subprocess.run([KL] + list(args) + ["--json", "--time-cap-ms", "200"]
                       + (["--hot"] if hot else []),
                       capture_output=True, text=True, env=ENV, timeout=600)
    try:
        return p.returncode, json.loads(p.stdout), p.stderr
    except ValueError:
        return p.returncode, {}, p.stderr


rc, r, err = kl("bench", CASE, hot=False)
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
                    "--time-cap-ms", "200", "--hot"], capture_output=True, text=True,
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

# A candidate stands for the case's module file, as people write modules:
# one imports a helper beside it, another finds a data file from __file__
# (a KernelBench case's ops.py finds problem.py so), both from the cache.
near = os.path.join(TMP, "neighbours")
shutil.copytree(CASE, near)
with open(os.path.join(near, "saxpy_helpers.py"), "w") as f:
    f.write("def scale():\n    return 2.5\n")
with open(os.path.join(near, "scale.txt"), "w") as f:
    f.write("2.5\n")
with open(os.path.join(TMP, "uses_helper.py"), "w") as f:
    f.write("import array\nfrom saxpy_helpers import scale\n\n\n"
            "def forward(y, x):\n"
            "    a = scale()\n"
            "    y[:] = array.array('f', [a * b + c for b, c in zip(x, y)])\n"
            "    return ()\n")
with open(os.path.join(TMP, "uses_file.py"), "w") as f:
    f.write("import array\nimport os\n\n"
            "with open(os.path.join(os.path.dirname(__file__), 'scale.txt')) "
            "as f:\n    A = float(f.read())\n\n\n"
            "def forward(y, x):\n"
            "    y[:] = array.array('f', [A * b + c for b, c in zip(x, y)])\n"
            "    return ()\n")
for name in ("uses_helper.py", "uses_file.py"):
    rc, r, err = kl("compare", near, "--candidate", os.path.join(TMP, name))
    check(rc == 0 and r.get("verdict") == "OK" and
          all(s.get("correct") for s in r.get("shapes") or [{}]),
          "a candidate that reads its neighbours (%s) loads from the cache "
          "as if beside the module: %d %s %s"
          % (name, rc, r.get("reason"), err[-300:]))

with open(os.path.join(TMP, "no_such_import.py"), "w") as f:
    f.write("import array\nimport kl_no_such_module\n\n\n"
            "def forward(y, x):\n    return ()\n")
rc, r, err = kl("compare", CASE, "--candidate",
                os.path.join(TMP, "no_such_import.py"))
check(rc == 3 and r.get("verdict") == "CRASHED" and
      "loading the candidate" in (r.get("reason") or "") and
      "kl_no_such_module' (candidate:2)" in (r.get("reason") or ""),
      "a candidate whose import fails: CRASHED at its line, not kernlab's "
      "error: %d %s %s" % (rc, r.get("reason"), err[-300:]))

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
