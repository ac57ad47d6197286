#!/usr/bin/env bash
# The CUDA benchmark and its anchors, measured in one run on one GPU.
# usage: bench/run_gpu.sh BUILD_DIR OUT_DIR [--quick]
set -uo pipefail
BUILD=${1:-build}
OUT=${2:-bench-out}
SRC=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
N20=$((10 * 1024 * 1024))
N5=$((2560 * 1024))
REPS=30
[ "${3:-}" = "--quick" ] && REPS=5
echo "== CUDA measurement ($(date -u +%Y-%m-%dT%H:%MZ))"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
"$BUILD/bench/bench_cuda" "$SRC" ${3:-} >"$OUT/bench_cuda.jsonl" 2>"$OUT/bench_cuda.txt"
cat "$OUT/bench_cuda.txt"

echo "== anchors: CUDA events, nvbench-style cold loop"
nvcc -O3 -arch=sm_90 "$SRC/bench/anchors/anchors.cu" -o /tmp/kl-anchors 2>&1 | tail -3
for n in $N20 $N5; do /tmp/kl-anchors $n $REPS 100; done | tee "$OUT/anchors.jsonl"

echo "== anchor: triton.testing.do_bench"
for n in $N20 $N5; do
  python3 "$SRC/bench/anchors/do_bench.py" $n $REPS 2>/dev/null || echo '{"anchor":"triton_do_bench","error":"not available"}'
done | tee -a "$OUT/anchors.jsonl"

echo "== anchor: ncu gpu__time_duration (--clock-control none, its default cache flush)"
"$BUILD/bin/kl" harness "$SRC/bench/cases/copy_f32" -o /tmp/kl-copy.cu
nvcc -O3 -arch=sm_90 /tmp/kl-copy.cu -o /tmp/kl-copy 2>&1 | tail -3
# the standalone launches copy 25 times per shape (3 checks, 1 warm-up, 21
# timed): profile ten of the timed launches of each shape
for skip in 6 31; do
  ncu --clock-control none --metrics gpu__time_duration.sum -k regex:'^copy$' \
      --launch-skip $skip --launch-count 10 --csv /tmp/kl-copy 2>/dev/null \
    | python3 -c '
import json, statistics, sys
sys.path.insert(0, sys.argv[2])
import ncu_csv  # the harness prints JSON lines too: ncu_csv starts at its header
vals = [x["gpu__time_duration.sum"] for x in ncu_csv.launches(sys.stdin.read())]
print(json.dumps({"anchor": "ncu_gpu_time_duration", "skip": int(sys.argv[1]), "median_us": statistics.median(vals), "launches": len(vals)}))
' $skip "$SRC/bench"
done | tee -a "$OUT/anchors.jsonl"
