#!/usr/bin/env python3
"""--json-events on a host case: kl bench, compare, profile and run print
one JSON object a line on stderr while they work, and leave stdout as it
is without the flag (the --json document, whole).

  bench     phase events in order (build ... timing), a shape event with
            its samples, a verdict event OK; stdout one --json document
  compare   a wrong candidate: the verdict event says INCORRECT with the
            reason, exit 3 as without the flag
  profile   phase events including "profile", then shape and verdict
  run       an iteration event per step and a verdict event per finished
            iteration, with the run's id and its budget left
Every event line parses, has "event", "verb" and a "t" that never goes
back; kl's own messages on stderr are the lines that start with "kl:".
usage: test_json_events.py KL SOURCE_DIR
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, scratch, small_saxpy  # noqa: E402

KL, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
TMP, ENV = scratch(SRC, "kl-json-events-")
# host_saxpy at 1M and 2M: the events are checked, not the 16M shape
CASE = small_saxpy(SRC, os.path.join(TMP, "host_saxpy"))
WRONG = os.path.join(SRC, "tests", "bench", "candidates", "saxpy_wrong.c")


def kl_events(verb, *args, want=0):
    """(stdout, events) of kl VERB ARGS --json-events."""
    p = subprocess.run([KL, verb] + list(args) + ["--json-events"],
                       capture_output=True, text=True, env=ENV, cwd=TMP,
                       timeout=600)
    print("$ kl %s %s --json-events -> %d" % (verb, " ".join(args),
                                              p.returncode), flush=True)
    check(p.returncode == want, "kl %s exited %d, want %d: %s" % (
        verb, p.returncode, want, p.stderr[-800:]))
    events, last_t = [], 0.0
    for line in p.stderr.splitlines():
        if line.startswith("kl:"):
            continue
        try:
            e = json.loads(line)
        except ValueError:
            check(False, "kl %s: a stderr line is neither JSON nor kl's: %r"
                  % (verb, line))
            continue
        check(isinstance(e, dict) and e.get("verb") == verb and
              "event" in e and e.get("t", -1) >= last_t,
              "kl %s: an event without event, verb or a rising t: %s"
              % (verb, e))
        last_t = e.get("t", last_t)
        events.append(e)
    return p.stdout, events


def of(events, kind):
    return [e for e in events if e.get("event") == kind]


out, ev = kl_events("bench", CASE, "--shape", "1M", "--time-cap-ms", "200",
                    "--json")
phases = [e["phase"] for e in of(ev, "phase")]
check(phases[:1] == ["build"] and "checks" in phases and "timing" in phases
      and phases.index("checks") < phases.index("timing"),
      "bench's phases in order: %s" % phases)
shapes = of(ev, "shape")
check(len(shapes) == 1 and shapes[0]["shape"] == "1M" and
      shapes[0]["correct"] is True and shapes[0]["samples"] > 0 and
      shapes[0]["median"] > 0, "bench's shape event: %s" % shapes)
check([e["verdict"] for e in of(ev, "verdict")] == ["OK"],
      "bench's verdict event: %s" % of(ev, "verdict"))
doc = json.loads(out)
check(doc["verdict"] == "OK" and doc["mode"] == "bench",
      "stdout is still the one --json document")

out, ev = kl_events("compare", CASE, "--candidate", WRONG, "--shape", "1M",
                    want=3)
verdict = of(ev, "verdict")
check(len(verdict) == 1 and verdict[0]["verdict"] == "INCORRECT" and
      verdict[0].get("reason"), "compare's verdict event: %s" % verdict)
check("verdict INCORRECT" in out or "NO" in out,
      "compare's text output stays on stdout: %r" % out[-300:])

out, ev = kl_events("profile", CASE, "--shape", "1M", "--json")
phases = [e["phase"] for e in of(ev, "phase")]
check("profile" in phases and of(ev, "verdict"),
      "profile's events: %s" % ev)
check("shapes" in json.loads(out), "profile's --json document on stdout")

out, ev = kl_events("run", CASE, "--proposer", "tune", "--iterations", "2",
                    "--no-profile", "--no-webhook", "--time-cap", "200",
                    "--json")
steps = of(ev, "iteration")
done = of(ev, "verdict")
check(steps and all(e.get("run") for e in steps) and
      any(e.get("step") == "checks" for e in steps),
      "run's iteration events with their steps: %s" % steps[:5])
check([e["iteration"] for e in done] == [0, 1, 2] and
      done[0]["verdict"] == "BASELINE" and
      all("iterations_left" in e for e in done),
      "run's verdict events, one per iteration: %s" % done)
check(json.loads(out)["iterations"] >= 2, "run's --json summary on stdout")

if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
print("ok")
