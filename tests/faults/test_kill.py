#!/usr/bin/env python3
"""A run stopped at every record write, then resumed (docs/integrity.md).

kl-faulty is kl built with fault points at every record write
(libkernlab/core/fault.c). A short run is made once to count its writes;
then, for each write N in turn, a fresh copy of the case is run and
  kill   the process is killed just before write N
  torn   write N (a ledger line or a file) is half written, then killed
  fail   write N fails as on a full disk (a few points): one line, exit 1
and `kl run --resume` finishes it. After each:
  - every ledger parses (solutions.jsonl, memory.jsonl, benchmark.csv),
    with no torn tail; devlog.md has one entry per accepted version
  - solution ids are unique; the run's iterations run 0..N once each, as
    many as were asked and no more; each has its memory line (past 0) and
    its benchmark rows, once each; each committed iteration's folder holds
    its kernel, verdict and report
  - every complete line recorded before the stop is still there, unchanged
  - a stop before the run existed leaves no run (and a new run works)
  - the killed runs' private folders are gone once another kl has run
Two runs are stopped this way: tune (profile of the baseline included) and
llm (a model behind the command provider: prompts, replies, recordings).
Stops are checked side by side, as many as there are CPUs and at most 8;
an AddressSanitizer build checks every second stop. Runs and resumes
sample hot (`--hot`) at a 30 ms cap: what is checked is the records, not
the timings, and a cold sample's cache flush (a sweep of twice the
last-level cache) was two thirds of a run's CPU. The only thing here that
rests on timing is how many writes a run makes (an acceptance writes a
profile a rejection does not): a stop run that finished, its comparisons
decided otherwise, before reaching its point is counted as not reached,
and more than one in ten fails the test.
usage: test_kill.py KL SOURCE_DIR
"""
import concurrent.futures
import csv
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, scratch  # noqa: E402

KL, SRC = os.path.abspath(sys.argv[1]), sys.argv[2]
KLF = os.path.join(os.path.dirname(KL), "kl-faulty")
TMP, ENV = scratch(SRC, "kl-kill-")
# the private folders of the runs' workers: a killed run cannot remove its
# own, and the next kl process sweeps them (libkernlab/core/sandbox_dir.c)
TMPDIR = os.path.join(TMP, "tmp")
os.mkdir(TMPDIR)
ENV["TMPDIR"] = TMPDIR
ITERATIONS = 2
# stops checked at a time
PARALLEL = min(8, os.cpu_count() or 1)
# under AddressSanitizer every second stop (the plain build's run of this
# test stops at every one)
ASAN = "libasan" in subprocess.run(["ldd", KL], capture_output=True,
                                   text=True).stdout

# the case: tests/exec/repeat_host at a small size (a run takes a second)
PRISTINE = os.path.join(TMP, "pristine")
shutil.copytree(os.path.join(SRC, "tests", "exec", "repeat_host"), PRISTINE)
with open(PRISTINE + "/case.yaml") as f:
    text = f.read().replace("n: 1024", "n: 256")
with open(PRISTINE + "/case.yaml", "w") as f:
    f.write(text)

# a model behind the command provider: the same reply each time
REPLY = """Fewer steps.

```c
void repeat(float *y, const float *x, int n) {
  for (int i = 0; i < n; i++) {
    float v = x[i], acc = v;
    for (int r = 0; r < 32; r++)
      acc = acc * 0.5f + v * 0.5f;
    y[i] = acc;
  }
}
```
MEMO: 32 steps instead of REPEAT * 64
"""
model = os.path.join(TMP, "model.py")
with open(model, "w") as f:
    f.write("import sys\nsys.stdin.read()\nsys.stdout.write(%r)\n" % REPLY)
LLM_CONFIG = os.path.join(TMP, "llm.yaml")
with open(LLM_CONFIG, "w") as f:
    f.write("llm:\n  provider: command\n  command: [python3, %s]\n" % model)

SCENARIOS = {
    "tune": (["--proposer", "tune"], ENV),
    "llm": (["--proposer", "llm"], dict(ENV, KL_CONFIG=LLM_CONFIG)),
}
# sampling: hot, at a 30 ms cap, for the stopped runs (a resume samples as
# run.json says; asking it the same is allowed)
TIMING = ["--time-cap", "30", "--hot"]
COMMON = ["--iterations", str(ITERATIONS), "--patience", "10", "--seed", "3",
          "--batch", "1"] + TIMING


def fresh(name):
    d = os.path.join(TMP, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(PRISTINE, d)
    return d


def complete_lines(path):
    """The complete lines of a file (a torn tail left out)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        text = f.read()
    lines = text.split("\n")
    return lines[:-1]  # the last piece is '' or a torn line


def runs_of(case):
    d = os.path.join(case, "runs")
    return sorted(n for n in os.listdir(d) if not n.startswith(".")) \
        if os.path.isdir(d) else []


def check_records(case, what, before):
    """The invariants after a stop and a resume (or a stop alone)."""
    sol_path = os.path.join(case, "solutions.jsonl")
    for name in ("solutions.jsonl", "memory.jsonl", "benchmark.csv"):
        p = os.path.join(case, name)
        if os.path.exists(p):
            with open(p) as f:
                t = f.read()
            check(t == "" or t.endswith("\n"), "%s: %s has a torn tail"
                  % (what, name))
        after = complete_lines(p)
        check(after[:len(before[name])] == before[name],
              "%s: %s lost or changed what was recorded before the stop"
              % (what, name))
    sols = []
    for i, line in enumerate(complete_lines(sol_path)):
        try:
            sols.append(json.loads(line))
        except ValueError:
            check(False, "%s: solutions.jsonl:%d does not parse" % (what, i + 1))
    ids = [s.get("id") for s in sols]
    check(len(ids) == len(set(ids)), "%s: solution ids repeat: %s" % (what, ids))
    runs = runs_of(case)
    check(len(runs) <= 1, "%s: %d runs" % (what, len(runs)))
    if not runs:
        check(not sols, "%s: records without a run" % what)
        return None
    run = runs[0]
    its = [s["iteration"] for s in sols if s.get("run") == run]
    check(its == list(range(ITERATIONS + 1)),
          "%s: iterations %s, want 0..%d once each" % (what, its, ITERATIONS))
    mem = []
    for i, line in enumerate(complete_lines(os.path.join(case, "memory.jsonl"))):
        try:
            mem.append(json.loads(line))
        except ValueError:
            check(False, "%s: memory.jsonl:%d does not parse" % (what, i + 1))
    mits = [m["iteration"] for m in mem if m.get("run") == run]
    check(mits == list(range(1, ITERATIONS + 1)),
          "%s: memory lines for iterations %s" % (what, mits))
    rows = list(csv.reader(complete_lines(os.path.join(case, "benchmark.csv"))))
    if rows:
        check(rows[0][0] == "run", "%s: benchmark.csv has no header" % what)
        check(all(len(r) == len(rows[0]) for r in rows),
              "%s: benchmark.csv rows of different lengths" % what)
    keys = [(r[0], r[1], r[3]) for r in rows[1:]]
    check(len(keys) == len(set(keys)), "%s: benchmark rows repeat" % what)
    for s in sols:
        if s.get("run") != run:
            continue
        n = s["iteration"]
        timed = s["verdict"] in ("BASELINE", "ACCEPTED", "REJECTED")
        if timed:
            check((run, str(n), "1k") in keys,
                  "%s: iteration %d has no benchmark row" % (what, n))
        d = os.path.join(case, "runs", run, "iter_%03d" % n)
        for f in ("kernel.c", "verdict.json", "report.json"):
            check(os.path.exists(os.path.join(d, f)),
                  "%s: iter_%03d has no %s" % (what, n, f))
    # devlog.md: one whole entry per accepted version, in order, none for
    # the others (a stop between the commit and the entry is completed)
    dl = os.path.join(case, "devlog.md")
    text = open(dl).read() if os.path.exists(dl) else ""
    check(text == "" or text.endswith("\n"), "%s: devlog.md has a torn tail"
          % what)
    heads = [ln[3:].split(":", 1)[0] for ln in text.splitlines()
             if ln.startswith("## ")]
    accepted = [s["id"] for s in sols if s.get("verdict") == "ACCEPTED"]
    check(heads == accepted, "%s: devlog.md entries %s, want the accepted "
          "versions %s" % (what, heads, accepted))
    with open(os.path.join(case, "runs", run, "summary.json")) as f:
        json.load(f)
    return run


def snapshot(case):
    return {n: complete_lines(os.path.join(case, n))
            for n in ("solutions.jsonl", "memory.jsonl", "benchmark.csv")}


def kl(binary, case, args, env, extra_env=None, want=None):
    p = subprocess.run([binary, "run", case] + args, capture_output=True,
                       text=True, env=dict(env, **(extra_env or {})),
                       timeout=600)
    return p


total = 0
NOT_REACHED = []
MIDDLE = {}
for name, (args, env) in SCENARIOS.items():
    log = os.path.join(TMP, name + ".points")
    case = fresh(name + "-count")
    p = kl(KLF, case, args + COMMON, env, {"KL_FAULT_LOG": log})
    check(p.returncode == 0, "%s: the uninterrupted run failed: %s"
          % (name, p.stderr[-400:]))
    points = [l.split(" ", 2) for l in open(log).read().splitlines()]
    print("%s: %d record writes: %s" % (name, len(points), " ".join(
        sorted({op for _, op, _ in points}))), flush=True)
    check(len(points) > 20, "%s: only %d record writes" % (name, len(points)))
    MIDDLE[name] = len(points) // 2
    plan = [(int(n), "kill") for n, _, _ in points]
    plan += [(int(n), "torn") for n, op, _ in points
             if op in ("append", "create", "replace")]
    plan += [(int(points[k][0]), "fail") for k in (1, len(points) // 2,
                                                   len(points) - 2)]
    if ASAN:
        plan = plan[::2]

    def stop_and_resume(n, mode):
        what = "%s %s at write %d (%s %s)" % (
            name, mode, n, points[n - 1][1],
            os.path.relpath(points[n - 1][2], TMP).split("/", 1)[-1])
        case = fresh("%s-%s-%d" % (name, mode, n))
        reached = case + ".points"
        p = kl(KLF, case, args + COMMON, env,
               {"KL_FAULT_AT": str(n), "KL_FAULT_MODE": mode,
                "KL_FAULT_LOG": reached})
        if p.returncode == 0 and os.path.exists(reached) \
                and len(open(reached).read().splitlines()) < n:
            # this run's comparisons decided otherwise than the counting
            # run's (an acceptance writes a profile a rejection does not):
            # it finished before write n, so there was no point to stop at
            # or to fail (a write made to fail ends the run with exit 1)
            NOT_REACHED.append(what)
            shutil.rmtree(case)
            return
        if mode == "fail":
            err = [l for l in p.stderr.splitlines() if l.strip()]
            check(p.returncode == 1 and len(err) == 1 and
                  "Input/output error" in err[0],
                  "%s: exit %d, want 1 and one line: %s"
                  % (what, p.returncode, p.stderr[-300:]))
        else:
            check(p.returncode == -9, "%s: not killed at the point (exit %d)"
                  " %s" % (what, p.returncode, p.stderr[-300:]))
        before = snapshot(case)
        runs = runs_of(case)
        if runs:
            r = kl(KL, case, ["--resume", runs[0]] + TIMING, env)
            check(r.returncode == 0, "%s: the resume failed (exit %d): %s"
                  % (what, r.returncode, r.stderr[-400:]))
        else:
            # nothing to resume: nothing recorded, and a new run works
            check(not any(before.values()), "%s: records without a run" % what)
            r = kl(KL, case, args + COMMON, env)
            check(r.returncode == 0, "%s: a new run after the stop failed: %s"
                  % (what, r.stderr[-400:]))
        check_records(case, what, before)
        if not FAILS:
            shutil.rmtree(case)

    # side by side: nothing checked here depends on timing
    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        for f in [pool.submit(stop_and_resume, n, mode) for n, mode in plan]:
            f.result()
    total += len(plan)

print("%d stops, each resumed and checked%s" % (
    total, " (every second one: AddressSanitizer build)" if ASAN else ""))
# a stop at a write the run did not make is not a stop; on a loaded machine
# a few runs decide a comparison otherwise and write less, never many
if NOT_REACHED:
    print("%d stop points not reached (the run wrote less): %s"
          % (len(NOT_REACHED), "; ".join(NOT_REACHED)))
check(len(NOT_REACHED) * 10 <= total,
      "%d of %d stop points not reached" % (len(NOT_REACHED), total))


def left_behind():
    """The folders in TMPDIR but those of makers still alive (a killed
    run's pid taken again by a live process keeps its folder: the sweep
    errs toward keeping)."""
    out = []
    for name in sorted(os.listdir(TMPDIR)):
        try:
            os.kill(int(name.split("-")[-2]), 0)
            continue  # alive
        except PermissionError:
            continue  # alive, another user's
        except (ProcessLookupError, ValueError, IndexError):
            out.append(name)  # gone, or not a name kl makes
    return out


# every run has ended; a kl process that starts a worker (kl bench) sweeps
# the folders the killed ones left
BENCH = [KL, "bench", PRISTINE, "--hot"]
p = subprocess.run(BENCH, capture_output=True, text=True, env=ENV,
                   timeout=600)
check(p.returncode == 0, "kl bench after the stops: %s" % p.stderr[-400:])
left = left_behind()
check(not left, "%d private folders left after the stops: %s"
      % (len(left), " ".join(left[:5])))
# and one on its own: a run killed half-way leaves its worker's folder,
# which the next kl removes
case = fresh("sweep")
p = kl(KLF, case, SCENARIOS["tune"][0] + COMMON, ENV,
       {"KL_FAULT_AT": str(MIDDLE.get("tune", 1)), "KL_FAULT_MODE": "kill"})
if p.returncode == -9:
    left = left_behind()
    check(any(n.startswith("kl-worker-") for n in left),
          "a run killed half-way left no worker folder: %s" % left)
    p = subprocess.run(BENCH, capture_output=True, text=True, env=ENV,
                       timeout=600)
    left = left_behind()
    check(p.returncode == 0 and not left,
          "the next kl left the killed run's folders: %s" % left)
else:  # its comparisons decided otherwise and it wrote less: no stop
    print("the half-way stop was not reached (exit %d)" % p.returncode)
if FAILS:
    print("%d failure(s); scratch kept at %s" % (len(FAILS), TMP))
    sys.exit(1)
shutil.rmtree(TMP)
print("ok")
