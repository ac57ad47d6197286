#!/usr/bin/env bash
# Run the benchmarks built in BUILD_DIR, leaving their JSON lines and
# tables in OUT_DIR. usage: bench/run.sh BUILD_DIR OUT_DIR [--quick]
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-bench-out}
mkdir -p "$OUT"
SRC=$(cd "$(dirname "$0")/.." && pwd)
echo "== host measurement ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores)"
"$BUILD/bench/bench_host" "$SRC" ${3:-} >"$OUT/bench_host.jsonl" 2>"$OUT/bench_host.txt"
cat "$OUT/bench_host.txt"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  bash "$SRC/bench/run_gpu.sh" "$BUILD" "$OUT" ${3:-}
  bash "$SRC/bench/profile_vs_ncu.sh" "$BUILD" "$OUT"
  bash "$SRC/bench/record_profiles.sh" "$BUILD" "$OUT"
  bash "$SRC/bench/observe.sh" "$BUILD" "$OUT"
fi
