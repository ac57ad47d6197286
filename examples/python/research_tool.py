#!/usr/bin/env python3
"""A small research tool on the kernlab Python bindings: load a case,
bench a candidate against the baseline, diagnose recorded metrics, print a
table; then, with --optimize, drive the optimization loop with a proposer
written here in Python.

    research_tool.py CASE [CANDIDATE] [--metrics PROFILE.json]
                     [--optimize N]

The proposer is deliberately small: it tries each other value of every
tunable the case declares by writing it into the kernel as a #define, one
per iteration, and says when it has nothing left. kernlab checks, measures,
decides and records each proposal as it would a model's.
"""
import argparse
import re
import sys

import kernlab


def table(rows, header):
    widths = [max(len(str(r[i])) for r in rows + [header])
              for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)))


def define_proposer(case):
    """Proposals: for each tunable and each of its other values, the best
    kernel with that value forced at its top (#undef, #define: it wins
    over the -D kernlab passes for the best's own settings)."""
    tries = [(name, v) for name, values in
             (case.info.get("tunables") or {}).items() for v in values[1:]]

    def propose(best, iteration):
        if not tries:
            return None
        name, value = tries.pop(0)
        mine = re.compile(r"^#(undef|define) %s\b.*\n" % re.escape(name),
                          re.M)
        return ("#undef %s\n#define %s %s\n" % (name, name, value) +
                mine.sub("", best), "%s=%s" % (name, value))

    return propose


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("candidate", nargs="?")
    ap.add_argument("--metrics")
    ap.add_argument("--optimize", type=int, default=0, metavar="N")
    a = ap.parse_args()
    print("kernlab", kernlab.__version__)
    try:
        with kernlab.load_case(a.case) as case:
            if a.candidate:
                rep = case.compare(a.candidate, time_cap_ms=300)
            else:
                rep = case.bench(time_cap_ms=300)
            print("%s: %s%s" % (case.name, rep["verdict"],
                                ": " + rep["reason"] if rep["reason"] else ""))
            rows = []
            for s in rep["shapes"]:
                if "median_us" not in s:
                    continue
                sp = ("x%.3f [%.3f, %.3f]" % (s["speedup"], *s["speedup_ci"])
                      if "speedup" in s else "")
                base = ("%.2f" % s["baseline"]["median_us"]
                        if "baseline" in s else "")
                rows.append([s["name"], base, "%.2f" % s["median_us"], sp])
            table(rows, ["shape", "baseline us", "median us",
                         "speedup [95%]"])
            if a.metrics:
                with open(a.metrics) as f:
                    d = case.rules(f.read())
                print()
                table([[s["shape"], s["bottleneck"],
                        s["fired"][0]["id"] if s["fired"] else "(none)"]
                       for s in d["shapes"]],
                      ["shape", "bottleneck", "top finding"])
            if a.optimize:
                print("\noptimizing with a Python proposer:")

                def show(ev):
                    if ev["phase"] == "done":
                        print("  %3d %-13s %s" % (ev["iteration"],
                                                  ev["outcome"],
                                                  ev["what"] or ""))

                summary = case.run(propose=define_proposer(case),
                                   on_event=show, iterations=a.optimize,
                                   profile="", time_cap_ms=300,
                                   webhook=False)
                b = summary["best_speedup"]
                print("best x%.3f [%.3f, %.3f] after %d candidates (%s); "
                      "records in %s" % (b["speedup"], b["ci"][0], b["ci"][1],
                                         summary["iterations"],
                                         summary["stop_reason"],
                                         summary["dir"]))
            return 0 if rep["verdict"] == "OK" else 3
    except kernlab.KernlabError as e:
        print(e.message, file=sys.stderr)
        return 2 if e.name in ("EINVALID", "ENOTFOUND") else 1


if __name__ == "__main__":
    sys.exit(main())
