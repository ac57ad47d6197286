"""Two instruments on one harness (issue 26's and 46's "cold median within 2%
of ncu"): a kernel's 20 us and 5 us shapes in fresh `kl profile --set
gpu__time_duration.sum` processes. Each process times the kernel first
(the cold median of CUPTI's activity records, kernlab's number) and then
profiles one launch with the range profiler, whose pass starts from the
same restore and the same read-only flush: ncu's metric, read in
kernlab's own cold state. Where the two part, the difference is how the
kernel is read, not the state it starts from. With --ncu, ncu's own
reading of the standalone harness (its flush, `--cache-control all`,
ten timed launches a shape) goes beside them.

The cases are bench/cases/copy_f32 (reads and writes alike), read_f32
(reads, a 256th of it written) and fill_f32 (writes only) unless named:
whether the gap follows the kernel's writes says where it comes from.
Every shape of each case is read, in the case's order.

usage: python3 bench/flush/duration_sources.py KL [PROCESSES] [--ncu]
           [CASE ...]"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import ncu_csv  # noqa: E402

args = [a for a in sys.argv[1:] if a != "--ncu"]
NCU = "--ncu" in sys.argv
KL = args[0]
N = int(args[1]) if len(args) > 1 and args[1].isdigit() else 5
CASES = [a for a in args[1:] if not a.isdigit()] or [
    os.path.join(HERE, "..", "cases", c)
    for c in ("copy_f32", "read_f32", "fill_f32")]


def shapes_of(case):
    """The case's shape names, in its order (the harness runs them so)."""
    names, inside = [], False
    with open(os.path.join(case, "case.yaml")) as f:
        for line in f:
            if not line.startswith((" ", "-", "\t")):
                inside = line.startswith("shapes:")
            elif inside and "name:" in line:
                names.append(line.split("name:", 1)[1].split(",")[0]
                             .strip(" }\n"))
    return names


def ncu_medians(case):
    """ncu's gpu__time_duration per shape of the case's standalone harness:
    each shape launches the kernel 25 times (3 checks, a warm-up, 21
    timed); ten of the timed ones a shape."""
    tmp = tempfile.mkdtemp(prefix="kl-dur-")
    src, exe = tmp + "/%s.cu" % os.path.basename(case), tmp + "/harness"
    try:
        return ncu_of(case, src, exe)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ncu_of(case, src, exe):
    """ncu_medians with the harness's source and program at src, exe."""
    entry = None
    with open(os.path.join(case, "case.yaml")) as f:
        for line in f:
            if line.strip().startswith("entry:"):
                entry = line.split(":", 1)[1].strip()
    if subprocess.run([KL, "harness", case, "-o", src]).returncode or \
            subprocess.run(["nvcc", "-O3", "-arch=sm_90", src, "-o",
                            exe]).returncode:
        return {}
    out = {}
    for k, shape in enumerate(shapes_of(case)):
        p = subprocess.run(["ncu", "--clock-control", "none", "--metrics",
                            "gpu__time_duration.sum", "-k",
                            "regex:^%s$" % entry, "--launch-skip",
                            str(6 + 25 * k), "--launch-count", "10", "--csv",
                            exe], capture_output=True, text=True)
        vals = [x["gpu__time_duration.sum"]
                for x in ncu_csv.launches(p.stdout)]
        if vals:
            out[shape] = statistics.median(vals)
    return out


print("| case | shape | timed cold median (activity), us | profiled "
      "gpu__time_duration, us | profiled / timed | ncu, its own flush | "
      "timed / ncu |")
print("|---|---|---|---|---|---|---|")
for case in CASES:
    name = os.path.basename(os.path.normpath(case))
    ncu = ncu_medians(case) if NCU else {}
    for shape in shapes_of(case):
        timed, prof = [], []
        for _ in range(N):
            p = subprocess.run([KL, "profile", case, "--shape", shape,
                                "--set", "gpu__time_duration.sum", "--json"],
                               capture_output=True, text=True)
            try:
                s = json.loads(p.stdout)["shapes"][0]
                timed.append(s["median_us"])
                prof.append(s["profile"]["raw"]["gpu__time_duration.sum"] /
                            1000.0)
            except (ValueError, KeyError, IndexError, TypeError):
                print("| %s | %s | (no result: %s) | | | | |"
                      % (name, shape, p.stderr.strip()[-200:]))
                break
        if not timed:
            continue
        t, g = statistics.median(timed), statistics.median(prof)
        n = ncu.get(shape)
        print("| %s | %s | %.2f (%s) | %.2f (%s) | %.3f | %s | %s |" % (
            name, shape, t, ", ".join("%.2f" % v for v in timed), g,
            ", ".join("%.2f" % v for v in prof), g / t,
            "%.2f" % n if n else "", "%.3f" % (t / n) if n else ""),
            flush=True)
