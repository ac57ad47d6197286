"""What the kind of CUPTI records does to a decision (issue 46, part 2):
for a baseline and a candidate, the speedup ncu's gpu__time_duration gives
(each standalone harness under `ncu --cache-control all`, the 21 timed
launches of each shape, medians) beside the speedups `kl compare` gives
with its default records (KERNEL, unless a launch uses two streams) and
with CONCURRENT_KERNEL records pinned (KERNLAB_TRACE=concurrent), in the
same process tree on the same card. One kernel per launch is assumed: of
ncu's launches, those of the kernel the harness launched last (the timed
one), split evenly among the shapes, the last 21 of each shape.

usage: python3 bench/flush/decisions_vs_ncu.py KL CASE:CANDIDATE ..."""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import ncu_csv  # noqa: E402

KL = sys.argv[1]
PAIRS = [a.split(":", 1) for a in sys.argv[2:]]
TIMED = 21  # the standalone harness's timed launches a shape


def ncu_shapes(case, cand, nshapes):
    """Per shape, the median of ncu's durations of the timed launches (us)."""
    tag = os.path.basename(cand or "baseline")
    src, exe = "/tmp/kl-dec-%s.cu" % tag, "/tmp/kl-dec-%s" % tag
    cmd = [KL, "harness", case, "-o", src] + (["--candidate", cand]
                                              if cand else [])
    if subprocess.run(cmd).returncode or subprocess.run(
            ["nvcc", "-O3", "-arch=sm_90", src, "-o", exe]).returncode:
        return []
    p = subprocess.run(["ncu", "--clock-control", "none", "--cache-control",
                        "all", "--metrics", "gpu__time_duration.sum", "--csv",
                        exe], capture_output=True, text=True)
    named = [(x.get("kernel"), x["gpu__time_duration.sum"])
             for x in ncu_csv.launches(p.stdout)
             if "gpu__time_duration.sum" in x]
    if not named or not nshapes:
        return []
    us = [v for n, v in named if n == named[-1][0]]
    per = len(us) // nshapes
    if per < TIMED or len(us) % nshapes:
        # not one kernel a launch, the same in every shape: no slices
        print("%s: %d launches of %s for %d shapes: not sliced"
              % (tag, len(us), named[-1][0], nshapes), file=sys.stderr)
        return []
    return [statistics.median(us[(k + 1) * per - TIMED:(k + 1) * per])
            for k in range(nshapes)]


def compare(case, cand, pin):
    env = dict(os.environ)
    env.pop("KERNLAB_TRACE", None)
    if pin:
        env["KERNLAB_TRACE"] = pin
    p = subprocess.run([KL, "compare", case, "--candidate", cand, "--json"],
                       capture_output=True, text=True, env=env)
    try:
        return json.loads(p.stdout)["shapes"]
    except (ValueError, KeyError):
        return []


print("| case / candidate | shape | ncu: baseline, candidate (us) | ncu "
      "speedup | kernlab default: baseline, candidate | its speedup "
      "(records) | CONCURRENT_KERNEL: baseline, candidate | its speedup |")
print("|---|---|---|---:|---|---:|---|---:|")
for case, cand in PAIRS:
    auto, conc = compare(case, cand, None), compare(case, cand, "concurrent")
    nb = ncu_shapes(case, None, len(auto))
    nc = ncu_shapes(case, cand, len(auto))
    for i, s in enumerate(auto):
        c = conc[i] if i < len(conc) else {}
        ratio = "%.3f" % (nb[i] / nc[i]) if i < min(len(nb), len(nc)) else ""
        ncu = ("%.2f, %.2f" % (nb[i], nc[i])
               if i < min(len(nb), len(nc)) else "")
        print("| %s / %s | %s | %s | %s | %.2f, %.2f | %.3f (%s) | %.2f, "
              "%.2f | %.3f |" % (
                  os.path.basename(case), os.path.basename(cand), s["name"],
                  ncu, ratio, s["baseline"]["median_us"], s["median_us"],
                  s["speedup"], s.get("tracing"),
                  c.get("baseline", {}).get("median_us", 0),
                  c.get("median_us", 0), c.get("speedup", 0)), flush=True)
