#!/usr/bin/env python3
"""The slurm executor against a real one-node Slurm on loopback (started
here: Debian's slurm-wlm and munge, slurmctld and slurmd on 127.0.0.1, a
node offering two GPUs by count), host backend; the case's folder is the
"shared filesystem".

  same      a tune run with --gres=gpu:2 jobs records what the same run
            records locally; every record names its job, and every job id
            is in executor.jsonl
  cancel    a job scancel'ed mid-batch is submitted again for what it left
            undone: the run completes, nothing lost or repeated, and
            executor.jsonl shows the CANCELLED job and the one after
  stop      with no retries left the run stops cleanly (executor_error,
            exit 1, one line) and --resume completes it
usage: test_slurm.py KL SOURCE_DIR   (exit 77: not root, or no Slurm/munge)
"""
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import servers  # noqa: E402
from records import (CAP, finish, TUNE, check, content, kl,  # noqa: E402
                     lines, newest_run, repeat_case, scratch, solutions,
                     stopped_then_resumed, whole)

KL, SRC = os.path.abspath(sys.argv[1]), sys.argv[2]
if not servers.Slurm.available():
    print("SKIP: needs root, munge and slurm-wlm (slurmctld, slurmd)")
    sys.exit(77)
TMP, ENV = scratch(SRC, "kl-slurm-test-")
slurm = servers.Slurm(TMP)
if not slurm.start():
    print("FAIL: Slurm did not come up; see", slurm.dir)
    slurm.stop()
    sys.exit(1)
ENV = dict(ENV, **slurm.env)
SLURM = ["--executor", "slurm", "--partition", "kltest", "--gpus", "2"]


def case(name):
    return repeat_case(SRC, os.path.join(TMP, name))


def cancel_running(c, times):
    """scancel the batch iter_001-002's job once it runs, `times` times."""
    def watch():
        done, end = 0, time.time() + 300
        seen = set()
        while done < times and time.time() < end:
            out = subprocess.run(
                ["squeue", "-h", "-n", "kl-iter_001-002", "-t", "RUNNING",
                 "-o", "%i"], env=ENV, capture_output=True, text=True).stdout
            for job in out.split():
                if job not in seen:
                    time.sleep(0.5)  # into its evaluations
                    subprocess.run(["scancel", job], env=ENV)
                    seen.add(job)
                    done += 1
            time.sleep(0.1)
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


def jobs(c, run):
    return lines(os.path.join(c, "runs", run), "executor.jsonl")


try:
    local = case("local")
    kl(KL, ENV, "run", local, *TUNE, *CAP,
       "--executor", "local")
    want = content(local, newest_run(local))

    # -- same records as a local run, job ids recorded -------------------
    same = case("same")
    kl(KL, ENV, "run", same, *TUNE, *CAP, *SLURM)
    run = newest_run(same)
    check(content(same, run) == want, "slurm records differ from local "
          "ones:\n%s\n%s" % (content(same, run), want))
    ids = {l["job"] for l in jobs(same, run)}
    for s in solutions(same, run):
        job = (s.get("ran_on") or {}).get("job")
        check(job in ids, "iteration %d: ran_on job %s not in "
              "executor.jsonl (%s)" % (s["iteration"], job, sorted(ids)))
    check(all(l["state"] in ("submitted", "COMPLETED")
              for l in jobs(same, run)),
          "jobs not all completed: %s" % jobs(same, run))

    # -- a cancelled job is submitted again ------------------------------
    cancel = case("cancel")
    t = cancel_running(cancel, 1)
    kl(KL, ENV, "run", cancel, *TUNE, "--time-cap", "2000", *SLURM)
    t.join(5)
    run = newest_run(cancel)
    whole(cancel, run, 4)
    check(content(cancel, run) == want, "after a cancel the records differ "
          "from local ones: %s" % content(cancel, run))
    states = [(l["batch"], l["state"]) for l in jobs(cancel, run)
              if l["state"] != "submitted"]
    check(("iter_001-002", "CANCELLED") in states and
          states.count(("iter_001-002", "COMPLETED")) == 1,
          "executor.jsonl does not show the cancelled job and its retry: %s"
          % states)

    # -- no retries left: a clean stop, then --resume ---------------------
    stop = case("stop")
    t = cancel_running(stop, 1)
    p = kl(KL, ENV, "run", stop, *TUNE, "--time-cap", "2000", *SLURM,
           "--retries", "0", want=1)
    t.join(5)
    stopped_then_resumed(KL, ENV, stop, p, "CANCELLED", want, SLURM)
finally:
    slurm.stop()

finish(TMP, "slurm executor (same records as local, job ids recorded, a "
       "cancelled job resubmitted, no retries left stops cleanly and "
       "resumes)")
