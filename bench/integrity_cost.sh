#!/usr/bin/env bash
# What the checks added for issue 44 cost an evaluation on the GPU: the
# output's scale (every check measures each float output beside trivial
# outputs) and timed work (every timed launch's kernels against the checked
# launches'). Each compare runs with both gates and with
# KERNLAB_GATES_OFF=scale,timed_work (a measurement switch, never for use),
# alternating, three times each (KL_COST_REPS) after a warm-up, in one process after
# another on one card; the medians of the report's phases (checks, timing)
# and of the process's wall time, and their differences.
# usage: bench/integrity_cost.sh BUILD_DIR OUT_DIR [cuda|python] (default
# both kinds of row; KL_COST_REPS, default 3, runs each way)
set -uo pipefail
BUILD=${1:-build}
OUT=${2:-bench-out}
ONLY=${3:-}
SRC=$(cd "$(dirname "$0")/.." && pwd)
KL=$BUILD/bin/kl
mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=$OUT/integrity-cache
echo "== what the scale and timed-work gates cost ($(date -u +%Y-%m-%dT%H:%MZ))"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
KB=$(mktemp -d /tmp/kl-cost-kb-XXXXXX)/case # the worker's sandbox hides $HOME
"$KL" case from-kernelbench "$SRC/bench/kernelbench/problems/2_softmax_rows.py" -o "$KB" >/dev/null 2>&1
python3 - "$KL" "$SRC" "$KB" "$OUT" "$ONLY" <<'PY'
import json, os, statistics, subprocess, sys, time
kl, src, kb, out, only = sys.argv[1:6]
reps = int(os.environ.get("KL_COST_REPS", "3"))
rows = [
    ("CUDA transpose_f32 tiled.cu (4 shapes)", src + "/cases/transpose_f32",
     src + "/cases/transpose_f32/candidates/tiled.cu"),
    ("CUDA softmax_f32 warp_per_row.cu (3 shapes)", src + "/cases/softmax_f32",
     src + "/cases/softmax_f32/candidates/warp_per_row.cu"),
    ("python softmax_torch triton_fused.py", src + "/tests/python/cases/softmax_torch",
     src + "/tests/python/cases/softmax_torch/candidates/triton_fused.py"),
    ("KernelBench 2_softmax_rows triton_softmax.py", kb,
     src + "/bench/kernelbench/candidates/2_softmax_rows/triton_softmax.py"),
]
def one(case, cand, off):
    env = dict(os.environ)
    if off:
        env["KERNLAB_GATES_OFF"] = "scale,timed_work"
    t0 = time.time()
    p = subprocess.run([kl, "compare", case, "--candidate", cand, "--json"],
                       env=env, capture_output=True, text=True)
    wall = (time.time() - t0) * 1000
    try:
        r = json.loads(p.stdout)
    except ValueError:
        return None
    ph = r.get("phases_ms") or {}
    return {"wall": wall, "checks": ph.get("checks") or 0,
            "timing": ph.get("timing") or 0, "verdict": r.get("verdict"),
            "gates_off": r.get("gates_off")}
print("| compare | verdict | checks ms (gates on / off) | timing ms (on / off) | process wall ms (on / off) | cost of the gates, ms |")
print("|---|---|---|---|---|---|")
for label, case, cand in rows:
    if only and not label.lower().startswith("cuda" if only == "cuda" else
                                              ("python", "kernelbench")):
        continue
    one(case, cand, False)  # compile cache, Triton's cache
    got = {False: [], True: []}
    for _ in range(reps):
        for off in (False, True):
            r = one(case, cand, off)
            if r:
                got[off].append(r)
    if not got[False] or not got[True]:
        print("| %s | (no JSON) | | | | |" % label)
        continue
    med = lambda off, k: statistics.median(x[k] for x in got[off])
    print("| %s | %s | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f | %+.0f |" % (
        label, got[False][0]["verdict"], med(False, "checks"),
        med(True, "checks"), med(False, "timing"), med(True, "timing"),
        med(False, "wall"), med(True, "wall"),
        med(False, "wall") - med(True, "wall")))
PY
