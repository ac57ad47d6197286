#!/usr/bin/env bash
# Where an evaluation's wall time goes on the GPU (issue 26): the commands
# of the issue's table and two python cases, each a fresh process, run twice (the second with
# the compile cache warm is the row), with the report's phases_ms beside
# the process's own wall time.
# usage: bench/phases.sh BUILD_DIR OUT_DIR
set -uo pipefail
BUILD=${1:-build}
OUT=${2:-bench-out}
SRC=$(cd "$(dirname "$0")/.." && pwd)
KL=$BUILD/bin/kl
mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=$OUT/phases-cache
echo "== where the wall time goes ($(date -u +%Y-%m-%dT%H:%MZ))"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
row() {
  local label=$1
  shift
  for pass in 1 2; do
    local t0 t1
    t0=$(date +%s.%N)
    "$KL" "$@" --json >"$OUT/phases.json" 2>"$OUT/phases.err"
    t1=$(date +%s.%N)
  done
  python3 - "$label" "$t0" "$t1" "$OUT/phases.json" <<'EOF'
import json, sys
label, t0, t1, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
try:
    r = json.load(open(path))
except ValueError:
    print("| %s | %.2f s | (no JSON) |" % (label, t1 - t0))
    sys.exit(0)
p = r.get("phases_ms") or {}
prof = [((s.get("profile") or {}).get("wall_ms"), (s.get("profile") or {}).get("init_ms"))
        for s in r.get("shapes") or []]
def ms(k):
    v = p.get(k)
    return "-" if v is None else "%.0f" % v
cols = ("total", "build", "worker", "load", "checks", "oracle", "settle",
        "timing", "setup", "sampling", "placements", "verify", "profile",
        "gates", "other")
print("| %s | %.2f s | %s | %s |" % (
    label, t1 - t0, " | ".join(ms(k) for k in cols),
    ", ".join("%s/%s" % (w, i) for w, i in prof if w is not None) or "-"))
EOF
}
echo "| command | process wall | total ms | build | worker | load | checks | oracle | settle | timing | setup | sampling | placements | verify | profile | gates | other | profile wall/init ms per shape |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
row "kl bench transpose_f32 --shape square4k" bench "$SRC/cases/transpose_f32" --shape square4k
row "kl compare transpose_f32 tiled.cu (4 shapes)" compare "$SRC/cases/transpose_f32" --candidate "$SRC/cases/transpose_f32/candidates/tiled.cu"
row "kl compare softmax_f32 warp_per_row.cu" compare "$SRC/cases/softmax_f32" --candidate "$SRC/cases/softmax_f32/candidates/warp_per_row.cu"
# python cases (the worker imports torch; Triton compiles in the first call)
row "kl compare softmax_torch triton_fused.py (python)" compare "$SRC/tests/python/cases/softmax_torch" --candidate "$SRC/tests/python/cases/softmax_torch/candidates/triton_fused.py"
KB=$(mktemp -d /tmp/kl-phases-kb-XXXXXX)/case # the worker's sandbox hides $HOME
if "$KL" case from-kernelbench "$SRC/bench/kernelbench/problems/2_softmax_rows.py" -o "$KB" >/dev/null 2>&1; then
  row "kl compare KernelBench 2_softmax_rows triton_softmax.py (python)" compare "$KB" --candidate "$SRC/bench/kernelbench/candidates/2_softmax_rows/triton_softmax.py"
fi
row "kl profile transpose_f32 --shape square4k --set quick" profile "$SRC/cases/transpose_f32" --shape square4k --set quick
row "kl profile transpose_f32 --shape square4k (standard)" profile "$SRC/cases/transpose_f32" --shape square4k
