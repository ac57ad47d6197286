#!/usr/bin/env python3
"""The local executor and the executor options, on the host backend.

  same      a tune run in batches of 2 on two slots records what the same
            run records on one (host slots are parallel worker processes),
            every record says where it ran, executor.jsonl has each batch
  options   an unknown executor, ssh without a host, slurm without a
            partition, a bad device list, --batch 0: exit 2, one line,
            nothing recorded; a bad executor: section in the config file
            is located
usage: test_local.py KL SOURCE_DIR
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from records import (CAP, finish, TUNE, check, content, kl,  # noqa: E402
                     lines, newest_run, repeat_case, scratch, solutions)

KL, SRC = os.path.abspath(sys.argv[1]), sys.argv[2]
TMP, ENV = scratch(SRC, "kl-local-test-")


def case(name):
    return repeat_case(SRC, os.path.join(TMP, name))


one = case("one")
kl(KL, ENV, "run", one, *TUNE, *CAP, "--devices", "0")
two = case("two")
kl(KL, ENV, "run", two, *TUNE, *CAP, "--devices", "0,1")
a, b = content(one, newest_run(one)), content(two, newest_run(two))
check(a == b, "one slot and two record differently:\n%s\n%s" % (a, b))
check(len(a) == 5, "%d iterations recorded" % len(a))
check([r[3] for r in a] == ["BASELINE", "ACCEPTED", "REJECTED", "REJECTED",
                            "REJECTED"], "verdicts %s" % [r[3] for r in a])
# iteration 2 was faster than the baseline it was measured against, and
# was compared again with iteration 1, accepted in its batch
check(a[2][5] == "001" and a[2][6] is True,
      "iteration 2 was not compared again with iteration 1: %s" % (a[2],))
for s in solutions(two, newest_run(two)):
    w = s.get("ran_on") or {}
    check(w.get("executor") == "local" and w.get("host") and
          w.get("seconds", -1) >= 0, "ran_on %s" % w)
batches = lines(os.path.join(two, "runs", newest_run(two)), "executor.jsonl")
check([l["batch"] for l in batches] == ["iter_001-002", "iter_003-004"] and
      all("on 2 slots" in l["detail"] for l in batches),
      "executor.jsonl: %s" % batches)

bad = case("bad")
for args, words in (
        (["--executor", "cloud"], "unknown executor 'cloud'"),
        (["--executor", "ssh"], "needs a host"),
        (["--executor", "slurm"], "needs a partition"),
        (["--devices", "0,0"], "listed twice"),
        (["--devices", "a"], "GPU indices"),
        (["--batch", "0"], "--batch"),
        (["--gpus", "-1"], "--gpus")):
    p = kl(KL, ENV, "run", bad, *TUNE, *args, want=2)
    err = [l for l in p.stderr.splitlines() if l.strip()
           and not l.startswith("usage:") and not l.startswith("  ")]
    check(len(err) == 1 and words in err[0],
          "kl run %s: %s" % (" ".join(args), p.stderr))
check(not os.path.exists(os.path.join(bad, "runs")),
      "a refused run recorded something")
cfg = os.path.join(TMP, "config.yaml")
with open(cfg, "w") as f:
    f.write("executor:\n  kind: ssh\n  hots: box\n")
p = kl(KL, dict(ENV, KL_CONFIG=cfg), "run", bad, *TUNE, want=2)
check(cfg + ":3:3: unknown key 'hots' in executor; did you mean 'host'?"
      in p.stderr, "config error not located: %s" % p.stderr)

finish(TMP, "local executor (same records on one slot and two) and its "
       "options")
