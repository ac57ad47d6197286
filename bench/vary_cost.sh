#!/usr/bin/env bash
# What varying the inputs between timed samples costs (plugin vary(),
# docs/integrity.md "Varied inputs"): `kl bench CASE --json` with it and
# with KERNLAB_GATES_OFF=vary (a measurement switch, never for use),
# alternating, KL_COST_REPS times each (default 3) after a warm-up run, each
# a fresh process; per shape the medians of the kernel's median, of the
# sampling wall and of the samples taken, and of the process's wall.
# usage: bench/vary_cost.sh BUILD_DIR OUT_DIR [CASE_DIR ...] (default: the
# bundled vector_add and gemm_f32 where nvidia-smi sees a GPU, host_saxpy
# and host_matmul otherwise; KL_COST_HOT=1 times hot instead of cold)
set -uo pipefail
BUILD=${1:-build}
OUT=${2:-bench-out}
shift 2 2>/dev/null || shift $#
SRC=$(cd "$(dirname "$0")/.." && pwd)
KL=$BUILD/bin/kl
mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=$OUT/vary-cache
echo "== what varying the inputs costs ($(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null))"
if [ $# -eq 0 ]; then
  if nvidia-smi -L >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader
    set -- "$SRC/cases/vector_add" "$SRC/cases/gemm_f32"
  else
    grep -m1 'model name' /proc/cpuinfo
    set -- "$SRC/cases/host_saxpy" "$SRC/cases/host_matmul"
  fi
fi
python3 - "$KL" "$@" <<'PY'
import json, os, statistics, subprocess, sys, time
kl, cases = sys.argv[1], sys.argv[2:]
reps = int(os.environ.get("KL_COST_REPS", "3"))
hot = ["--hot"] if os.environ.get("KL_COST_HOT") == "1" else []
def one(case, off):
    env = dict(os.environ)
    env.pop("KERNLAB_GATES_OFF", None)
    if off:
        env["KERNLAB_GATES_OFF"] = "vary"
    t0 = time.time()
    p = subprocess.run([kl, "bench", case, "--json", *hot], env=env,
                       capture_output=True, text=True)
    wall = (time.time() - t0) * 1000
    try:
        r = json.loads(p.stdout)
    except ValueError:
        return None
    return {"wall": wall, "verdict": r.get("verdict"),
            "varied": "varied_inputs" in (r.get("gates_applied") or []),
            "shapes": {s["name"]: s for s in r.get("shapes", [])}}
print("| case, shape | varied (on / off) | median us (on / off) | sampling wall ms (on / off) | samples (on / off) | process wall ms (on / off) |")
print("|---|---|---|---|---|---|")
for case in cases:
    one(case, False)  # the compile cache
    got = {False: [], True: []}
    for _ in range(reps):
        for off in (False, True):
            r = one(case, off)
            if r:
                got[off].append(r)
    name = os.path.basename(case.rstrip("/"))
    if not got[False] or not got[True]:
        print("| %s | (no JSON) | | | | |" % name)
        continue
    med = lambda off, f: statistics.median(f(x) for x in got[off])
    for shape in got[False][0]["shapes"]:
        def col(key, fmt):
            v = [med(off, lambda x: x["shapes"][shape].get(key) or 0)
                 for off in (False, True)]
            return (fmt + " / " + fmt) % tuple(v)
        print("| %s %s | %s / %s | %s | %s | %s | %.0f / %.0f |" % (
            name, shape, got[False][0]["varied"], got[True][0]["varied"],
            col("median_us", "%.3f"), col("wall_ms", "%.1f"),
            col("samples", "%.0f"), med(False, lambda x: x["wall"]),
            med(True, lambda x: x["wall"])))
PY
