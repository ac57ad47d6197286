#!/usr/bin/env python3
"""Faults in the middle of a run, each ending cleanly with nothing lost:
  disk full     writes into the case folder fail with ENOSPC (an LD_PRELOAD
                shim) once the run has recorded two iterations
  read-only     the same with EROFS, creating files and folders refused too
  worker killed SIGKILL to kl-worker while it serves a request
In each: the run stops with a one-line error (exit 1) or goes on (a killed
worker costs the candidate it served a CRASHED record), every
ledger stays parseable, and `kl run --resume` completes the run once the
fault is gone. The case is tests/exec/repeat_host (its kernel sleeps, so a
run costs little CPU) at a short sampling cap: what is checked is the
records, not the timings. usage: test_faults.py KL SOURCE_DIR"""
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, scratch  # noqa: E402

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-faults-")
# a short sampling cap: the kernel sleeps REPEAT ms, 300 ms still decides
FAST = ["--time-cap", "300", "--hot"]  # records are checked, not timings
SHIM = os.path.join(TMP, "diskfault.so")
subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", SHIM,
                os.path.join(os.path.dirname(__file__), "diskfault.c"),
                "-ldl"], check=True)


def preload_env():
    """LD_PRELOAD for kl. An ASan build needs its runtime first, and the
    programs kl runs (the compiler) then carry it too: their leaks are not
    kernlab's, so leak reports are off for this test."""
    ldd = subprocess.run(["ldd", KL], capture_output=True, text=True).stdout
    m = re.search(r"(\S*libasan\.so\S*) => (\S+)", ldd)
    if not m:
        return {"LD_PRELOAD": SHIM}
    return {"LD_PRELOAD": m.group(2) + ":" + SHIM,
            "ASAN_OPTIONS": "detect_leaks=0"}


def repeat_case(name):
    """A copy of tests/exec/repeat_host (four tunings past the baseline)."""
    dest = os.path.join(TMP, name)
    shutil.copytree(os.path.join(SRC, "tests", "exec", "repeat_host"), dest)
    return dest


def ledgers_parse(case):
    """Every ledger of the case reads back; returns the solutions."""
    sols = []
    path = case + "/solutions.jsonl"
    if os.path.exists(path):
        with open(path) as f:
            lines = f.read().split("\n")
        for i, line in enumerate(lines[:-1]):  # a torn tail may follow
            try:
                sols.append(json.loads(line))
            except ValueError:
                check(False, f"{path}:{i + 1} does not parse: {line[:80]}")
    for name in ("memory.jsonl",):
        p = os.path.join(case, name)
        if os.path.exists(p):
            for i, line in enumerate(open(p).read().split("\n")[:-1]):
                try:
                    json.loads(line)
                except ValueError:
                    check(False, f"{p}:{i + 1} does not parse")
    p = case + "/benchmark.csv"
    if os.path.exists(p):
        rows = list(csv.reader(open(p).read().split("\n")[:-1]))
        check(all(len(r) == len(rows[0]) for r in rows), f"{p}: ragged rows")
    return sols


def run_id_of(case):
    runs = sorted(os.listdir(case + "/runs"))
    return runs[-1] if runs else None


def iterations_recorded(case):
    p = case + "/solutions.jsonl"
    return open(p).read().count("\n") if os.path.exists(p) else 0


def disk_fault(kind):
    case = repeat_case(kind)
    flag = os.path.join(TMP, kind + ".flag")
    env = dict(ENV, KL_FAULT=kind, KL_FAULT_FLAG=flag, KL_FAULT_DIR=case,
               **preload_env())
    # the shim makes the flag (the disk is full from there on) at the
    # first write into the case folder once two iterations are recorded
    p = subprocess.run([KL, "run", case, "--iterations", "8", "--patience",
                        "20", "--seed", "3", *FAST], text=True,
                       env=dict(env, KL_FAULT_AFTER="2"), capture_output=True,
                       timeout=600)
    err = p.stderr
    lines = [l for l in err.splitlines() if l.strip()]
    print(f"{kind}: exit {p.returncode}: {lines[-1] if lines else ''}")
    want = "No space left on device" if kind == "enospc" else "Read-only file system"
    check(p.returncode == 1, f"{kind}: exit {p.returncode}, want 1")
    check(len(lines) >= 1 and want in lines[-1],
          f"{kind}: the error does not say {want!r}: {err[-300:]}")
    before = ledgers_parse(case)
    check(len(before) >= 2, f"{kind}: {len(before)} records kept")
    if os.path.exists(flag):
        os.unlink(flag)  # space is back
    rid = run_id_of(case)
    r = subprocess.run([KL, "run", case, "--resume", rid, "--json", *FAST],
                       env=env, capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, f"{kind}: resume exit {r.returncode}: "
          f"{r.stderr[-300:]}")
    after = ledgers_parse(case)
    mine = [s for s in after if s.get("run") == rid]
    iters = [s["iteration"] for s in mine]
    check(iters == list(range(len(iters))) and len(iters) >= 3,
          f"{kind}: iterations after resume {iters}")
    check(after[:len(before)] == before, f"{kind}: records changed")


def worker_pids(parent):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = open(f"/proc/{d}/stat").read()
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            continue
        if ppid == parent and comm.startswith("kl-worker"):
            out.append(int(d))
    return out


def worker_killed():
    case = repeat_case("killed")
    p = subprocess.Popen([KL, "run", case, "--iterations", "4", "--patience",
                          "20", "--seed", "4", "--json", *FAST], env=ENV,
                         text=True, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    killed = []

    def killer():
        while p.poll() is None and not killed:
            if iterations_recorded(case) >= 2:
                for pid in worker_pids(p.pid):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
            time.sleep(0.01)

    t = threading.Thread(target=killer)
    t.start()
    out, err = p.communicate(timeout=600)
    t.join()
    print(f"worker killed ({len(killed)}): exit {p.returncode}")
    check(killed, "no worker was found to kill")
    check(p.returncode == 0, f"the run did not go on after the worker died: "
          f"{err[-300:]}")
    rid = run_id_of(case)
    sols = ledgers_parse(case)
    iters = [s["iteration"] for s in sols if s.get("run") == rid]
    check(iters == list(range(5)), f"iterations after a worker kill: {iters}")
    verdicts = [s.get("verdict") for s in sols]
    print(f"  verdicts: {verdicts}")
    check(verdicts.count("CRASHED") <= 1,
          "more than the request the worker was killed in crashed")
    check("killed by signal 9" in json.dumps(sols) or
          "CRASHED" not in verdicts, "a CRASHED record does not say why")


disk_fault("enospc")
disk_fault("erofs")
worker_killed()
if FAILS:
    print(f"{len(FAILS)} failure(s)")
    sys.exit(1)
print("ok")
