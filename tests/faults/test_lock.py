#!/usr/bin/env python3
"""One run per case folder at a time; readers work while it runs.

  refused   a second kl run on a case that a run holds stops at once: one
            line naming the run that holds it, exit 1, nothing recorded
            (a --resume of that same run is refused alike)
  readers   kl history --json, kl report and kl best, called over and over
            while the run records, always succeed and never see a torn
            record (history's JSON parses, its iterations only grow)
  released  once the run ends, the next run on the case starts
  killed    a run killed with SIGKILL leaves no stale lock: the next run
            starts at once
usage: test_lock.py KL SOURCE_DIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, scratch  # noqa: E402

KL, SRC = os.path.abspath(sys.argv[1]), sys.argv[2]
TMP, ENV = scratch(SRC, "kl-lock-")
case = os.path.join(TMP, "case")
shutil.copytree(os.path.join(SRC, "tests", "exec", "repeat_host"), case)
RUN = ["run", case, "--iterations", "4", "--patience", "10", "--seed", "5",
       "--time-cap", "200", "--batch", "1", "--hot"]


def kl(*args, timeout=600):
    return subprocess.run([KL] + list(args), capture_output=True, text=True,
                          env=ENV, timeout=timeout)


def runs():
    d = os.path.join(case, "runs")
    return sorted(n for n in os.listdir(d) if not n.startswith(".")) \
        if os.path.isdir(d) else []


def wait_for(cond, what, limit=120):
    deadline = time.time() + limit
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    check(False, "waited %d s for %s" % (limit, what))
    return False


def start():
    return subprocess.Popen([KL] + RUN, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV)


# ---- refused, readers, released -----------------------------------------------
first = start()
wait_for(lambda: runs(), "the first run's folder")
holder = runs()[0] if runs() else "?"
lock = os.path.join(case, ".kl-run.lock")
wait_for(lambda: os.path.exists(lock) and holder in open(lock).read(),
         "the lock to name the run")
p = kl(*RUN)
err = [l for l in p.stderr.splitlines() if l.strip()]
print("second run: exit %d: %s" % (p.returncode, err[-1] if err else ""))
check(p.returncode == 1, "a second run: exit %d, want 1" % p.returncode)
check(len(err) == 1 and holder in err[0] and "one run per case" in err[0],
      "the refusal is not one line naming run %s: %s" % (holder, err))
check(runs() == [holder], "the refused run recorded something: %s" % runs())
p = kl("run", case, "--resume", holder)
check(p.returncode == 1 and holder in p.stderr,
      "a --resume of the running run: exit %d: %s" % (p.returncode, p.stderr))

reads, seen = 0, []
while first.poll() is None:
    h = kl("history", case, "--json")
    check(h.returncode == 0, "kl history during the run: exit %d: %s"
          % (h.returncode, h.stderr))
    try:
        doc = json.loads(h.stdout)
        runs_doc = doc["runs"] if isinstance(doc, dict) else doc
        its = [r.get("iterations", 0) for r in runs_doc]
        seen.append(sum(its))
    except (ValueError, KeyError, TypeError) as e:
        check(False, "kl history --json during the run: %s: %r"
              % (e, h.stdout[:200]))
    r = kl("report", case, "--format", "md")
    check(r.returncode in (0, 2), "kl report during the run: exit %d: %s"
          % (r.returncode, r.stderr))
    b = kl("best", case)
    check(b.returncode in (0, 2), "kl best during the run: exit %d: %s"
          % (b.returncode, b.stderr))
    reads += 1
out, errs = first.communicate(timeout=600)
check(first.returncode == 0, "the first run failed: %s" % errs[-300:])
check(seen == sorted(seen), "history went backwards: %s" % seen)
print("readers: %d rounds of history, report and best while it ran; "
      "iterations seen %s" % (reads, sorted(set(seen))))
check(reads >= 2, "the run ended before the readers ran twice")

p = kl(*RUN)
check(p.returncode == 0, "a run after the first ended: exit %d: %s"
      % (p.returncode, p.stderr[-300:]))

# ---- killed: no stale lock -------------------------------------------------------
before = set(runs())
victim = start()
wait_for(lambda: set(runs()) - before, "the run to be killed to start")
time.sleep(0.3)
victim.send_signal(signal.SIGKILL)
victim.wait()
t0 = time.time()
p = kl(*RUN)
check(p.returncode == 0, "a run after a killed one: exit %d: %s"
      % (p.returncode, p.stderr[-300:]))
print("after a SIGKILL the next run started at once (%.1f s)"
      % (time.time() - t0))

if FAILS:
    print("%d failure(s); scratch kept at %s" % (len(FAILS), TMP))
    sys.exit(1)
shutil.rmtree(TMP)
print("ok")
