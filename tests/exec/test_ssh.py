#!/usr/bin/env python3
"""The ssh executor against a real OpenSSH server on loopback (started
here: Debian's openssh-server, throwaway host and user keys), host backend.

  same      a tune run over ssh records what the same run records locally
            (iterations, configurations, verdicts, parents, rechecks), and
            every record names where it ran
  drop      sshd and its connections killed mid-batch, back 2 s later: the
            run retries, completes, loses and repeats nothing, and
            executor.jsonl records the lost connection
  down      sshd killed for good: the run stops cleanly (exit 1,
            executor_error, one line naming --resume), every record
            whole; with sshd back, --resume completes it
  nokl      no kl at --remote-kl: one line naming the failure, at once
usage: test_ssh.py KL SOURCE_DIR   (exit 77: no sshd or ssh here)
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import servers  # noqa: E402
from records import (CAP, finish, TUNE, check, content, kl,  # noqa: E402
                     lines, newest_run, repeat_case, scratch, solutions,
                     stopped_then_resumed, whole)

KL, SRC = os.path.abspath(sys.argv[1]), sys.argv[2]
if not servers.Sshd.available():
    print("SKIP: no sshd (openssh-server) or ssh here")
    sys.exit(77)
TMP, ENV = scratch(SRC, "kl-ssh-test-")
sshd = servers.Sshd(TMP)
if not sshd.start():
    print("FAIL: sshd did not start; see", TMP + "/ssh/sshd.log")
    sys.exit(1)
SSH = ["--executor", "ssh", "--host", "kltest", "--ssh-option", "-F",
       "--ssh-option", sshd.config, "--remote-kl", KL,
       "--remote-dir", TMP + "/remote"]


def case(name):
    return repeat_case(SRC, os.path.join(TMP, name))


FINISHED = threading.Event()


def kill_when(path_of, then):
    """A thread that waits for path_of() to exist, then calls then(); the
    event it returns is set once it has. The thread lives on until the
    test ends: a server it started dies with the thread that started it
    (PR_SET_PDEATHSIG)."""
    fired = threading.Event()

    def watch():
        end = time.time() + 300
        while time.time() < end:
            p = path_of()
            if p and os.path.exists(p):
                time.sleep(0.3)  # into the batch's upload or evaluation
                then()
                break
            time.sleep(0.05)
        fired.set()
        FINISHED.wait()
    threading.Thread(target=watch, daemon=True).start()
    return fired


def batch_dir(c):
    run = newest_run(c)
    return run and os.path.join(c, "runs", run, "batches", "iter_001-002",
                                "jobs.json")


try:
    # -- same records as a local run -------------------------------------
    local = case("local")
    kl(KL, ENV, "run", local, *TUNE, *CAP,
       "--executor", "local")
    want = content(local, newest_run(local))
    check(len(want) == 5, "the local run recorded %d iterations" % len(want))
    remote = case("viassh")
    kl(KL, ENV, "run", remote, *TUNE, *CAP, *SSH)
    run = newest_run(remote)
    got = content(remote, run)
    check(got == want, "ssh records differ from local ones:\n%s\n%s"
          % (got, want))
    for s in solutions(remote, run):
        w = s.get("ran_on") or {}
        check(w.get("executor") == "ssh" and
              str(w.get("folder", "")).startswith("kltest:"),
              "iteration %d: ran_on %s names no ssh folder"
              % (s["iteration"], w))
    check(not os.listdir(TMP + "/remote"),
          "batch folders left on the host: %s" % os.listdir(TMP + "/remote"))

    # -- a dropped connection mid-batch ----------------------------------
    drop = case("drop")

    def bounce():
        sshd.stop()
        time.sleep(2)
        sshd.start()
    t = kill_when(lambda: batch_dir(drop), bounce)
    p = kl(KL, ENV, "run", drop, *TUNE, *CAP, "--retries",
           "4", *SSH)
    check(t.wait(5), "the server was never bounced")
    run = newest_run(drop)
    whole(drop, run, 4)
    check(content(drop, run) == want,
          "after a drop the records differ from local ones: %s"
          % content(drop, run))
    lost = [l for l in lines(os.path.join(drop, "runs", run),
                             "executor.jsonl")
            if l["state"] == "connection_lost"]
    check(len(lost) >= 1, "executor.jsonl records no lost connection")

    # -- the server gone for good, then back: --resume -------------------
    down = case("down")
    t = kill_when(lambda: batch_dir(down), sshd.stop)
    p = kl(KL, ENV, "run", down, *TUNE, *CAP, "--retries",
           "1", *SSH, want=1)
    check(t.wait(5), "the server was never stopped")
    stopped_then_resumed(KL, ENV, down, p, "ssh kltest", want, SSH,
                         before_resume=sshd.start)

    # -- no kernlab there: one line at once, no retries ----------------
    nokl = case("nokl")
    args = [a if a != KL else "/nonexistent/kl" for a in SSH]
    p = kl(KL, ENV, "run", nokl, *TUNE, *args, want=1)
    err = [l for l in p.stderr.splitlines() if l.strip()]
    # retried, it would end "the connection failed N times" instead
    check(len(err) == 1 and "kl evaluate failed there (exit 127)" in err[0],
          "a missing remote kl is not one clear line: %s" % err)
finally:
    sshd.stop()
    FINISHED.set()

finish(TMP, "ssh executor (same records as local, dropped connection "
       "retried, server down stops cleanly and resumes)")
