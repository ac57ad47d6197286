"""Two instruments on one harness (issue 26's "cold median within 2% of ncu"):
the 20 us and 5 us copies of bench/cases/copy_f32, in fresh `kl profile
--set gpu__time_duration.sum` processes. Each process times the kernel
first (the cold median of CUPTI's activity records, kernlab's number) and
then profiles one launch with the range profiler, whose pass starts from
the same restore and the same read-only flush: ncu's metric, read in
kernlab's own cold state. Where the two part, the difference is how the
kernel is read, not the state it starts from.

usage: python3 bench/flush/duration_sources.py KL [PROCESSES]"""
import json
import statistics
import subprocess
import sys
import os

KL = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 5
CASE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cases",
                    "copy_f32")

print("| shape | timed cold median (activity), us | profiled gpu__time_duration, us | profiled / timed |")
print("|---|---|---|---|")
for shape in ("n10M", "n2_5M"):
    timed, prof = [], []
    for _ in range(N):
        p = subprocess.run([KL, "profile", CASE, "--shape", shape, "--set",
                            "gpu__time_duration.sum", "--json"],
                           capture_output=True, text=True)
        try:
            s = json.loads(p.stdout)["shapes"][0]
            timed.append(s["median_us"])
            prof.append(s["profile"]["raw"]["gpu__time_duration.sum"] / 1000.0)
        except (ValueError, KeyError, IndexError, TypeError):
            print("| %s | (no result: %s) | | |" % (shape, p.stderr.strip()[-200:]))
            break
    if timed:
        t, g = statistics.median(timed), statistics.median(prof)
        print("| %s | %.2f (%s) | %.2f (%s) | %.3f |" % (
            shape, t, ", ".join("%.2f" % v for v in timed), g,
            ", ".join("%.2f" % v for v in prof), g / t))
