"""What the executor tests compare: a run's records as content (what was
tried, against what, and what was decided), never its timings or where it
ran; and the checks every executor's records must pass."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, decisive_repeat, scratch  # noqa: E402,F401


def repeat_case(src, dest):
    """A copy of tests/exec/repeat_host whose decisions are sleeps at least
    120 ms apart (support.decisive_repeat): its tunable alone sets its
    time, so what a run decides does not hang on noise (parallel slots, a
    loaded CI machine, sanitizers, a CPU's wait after each wake-up)."""
    return decisive_repeat(src, dest)


def lines(case, name):
    path = os.path.join(case, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def solutions(case, run):
    return [s for s in lines(case, "solutions.jsonl") if s["run"] == run]


def content(case, run):
    """(iteration, proposer, config, verdict, gate, parent iteration,
    rechecked) per recorded iteration: equal for two runs of the same
    proposals, seed and batch, wherever they ran."""
    out = []
    for s in solutions(case, run):
        parent = s["parent"].rsplit("/", 1)[1] if s["parent"] else None
        out.append((s["iteration"], s["proposer"], tuple(s["config"]),
                    s["verdict"], s["gate"], parent, s["rechecked"]))
    return out


def whole(case, run, iterations):
    """Iterations 0..N each recorded once, in order, every ledger parses."""
    its = [s["iteration"] for s in solutions(case, run)]
    check(its == list(range(iterations + 1)),
          "%s: iterations %s, want 0..%d once each" % (run, its, iterations))
    for name in ("solutions.jsonl", "memory.jsonl"):
        lines(case, name)  # raises on a torn line
    # --hot travels with the request to wherever the evaluation ran
    cold = [s["measurement"].get("cold") for s in solutions(case, run)
            if s.get("measurement")]
    check(cold and not any(cold), "%s: sampled hot everywhere (--hot): %s"
          % (run, cold))


def newest_run(case):
    runs = os.path.join(case, "runs")
    ids = sorted(os.listdir(runs)) if os.path.isdir(runs) else []
    return ids[-1] if ids else None


def kl(KL, env, *args, want=0, timeout=900):
    p = subprocess.run([KL] + list(args), capture_output=True, text=True,
                       env=env, timeout=timeout)
    if want is not None and p.returncode != want:
        check(False, "kl %s exited %d, want %d\n%s%s" % (
            " ".join(args), p.returncode, want, p.stdout[-3000:],
            p.stderr[-3000:]))
    return p


# hot samples: the kernel sleeps, its decisions are sleeps 120 ms apart,
# and a cold sample's cache flush (a sweep of twice the last-level cache,
# about 27 ms of CPU on the CI VM) was half of these tests' CPU
TUNE = ["--proposer", "tune", "--iterations", "4", "--batch", "2",
        "--seed", "7", "--no-profile", "--hot"]
# the sampling cap of the runs whose decisions are compared: a loaded
# machine's rounds (a 128 ms sleep each side) are slow, and a comparison
# needs eight of them; the cap stretches to twice this for them, and a
# quiet machine decides well before it
CAP = ["--time-cap", "3000"]


def stopped_then_resumed(KL, env, c, p, words, want, resume_args,
                         before_resume=None):
    """A run that stopped on executor_error (process p): one line of
    stderr naming `words` and the --resume; the records so far whole. Then
    (after before_resume()) --resume with resume_args completes it with
    the earlier records untouched and the content `want`."""
    import json
    run = newest_run(c)
    err = [l for l in p.stderr.splitlines() if l.strip()]
    check(len(err) == 1 and "--resume " + run in err[0] and words in err[0],
          "the stop is not one line naming %r and --resume: %s"
          % (words, err))
    with open(os.path.join(c, "runs", run, "summary.json")) as f:
        stop = json.load(f)["stop_reason"]
    check(stop == "executor_error", "stop reason %s" % stop)
    before = solutions(c, run)
    check([s["iteration"] for s in before] == list(range(len(before))),
          "records torn before the resume")
    if before_resume:
        before_resume()
    # no sampling options: a resumed run samples as its run.json says
    kl(KL, env, "run", c, "--resume", run, *resume_args)
    whole(c, run, len(want) - 1)
    check(solutions(c, run)[:len(before)] == before,
          "the resume changed what was recorded before it")
    check(content(c, run) == want,
          "resumed records differ from local ones: %s" % content(c, run))


def finish(tmp, ok):
    """Exit 1 with the failures counted (the scratch folder kept), else
    remove it and say ok."""
    if FAILS:
        print("%d failure(s); scratch kept at %s" % (len(FAILS), tmp))
        sys.exit(1)
    subprocess.run(["rm", "-rf", tmp])
    print("ok: " + ok)
