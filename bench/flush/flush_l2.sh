#!/usr/bin/env bash
# The flush experiment of issue 26: which L2 flush leaves the cache as ncu's
# --cache-control all does? flush_l2.cu runs, per variant, rounds of
# "previous kernel, inputs restored, flush, timed kernel"; ncu reads the
# timed kernel (duration, DRAM bytes read and written) with its own cache
# control off, and once more with it on and no flush (the anchor), with
# application replay so that every pass follows the program's own flush.
# usage: bench/flush/flush_l2.sh OUT_DIR [ROUNDS]
set -uo pipefail
OUT=${1:-bench-out}
ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
BIN=/tmp/kl-flush-l2
echo "== L2 flush experiment ($(date -u +%Y-%m-%dT%H:%MZ))"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
nvcc -O3 -arch=sm_90 "$HERE/flush_l2.cu" -o "$BIN" || exit 1
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
for n in $((10 * 1024 * 1024)) $((2560 * 1024)); do
  "$BIN" $n 51 >"$OUT/flush_l2_cost_$n.txt" || exit 1
  ncu --cache-control none --clock-control none --replay-mode application \
      --metrics $METRICS -k regex:'^timed_copy$' --csv "$BIN" $n "$ROUNDS" \
      >"$OUT/flush_l2_ncu_$n.csv" 2>"$OUT/flush_l2_ncu_$n.err"
  ncu --cache-control all --clock-control none --replay-mode application \
      --metrics $METRICS -k regex:'^timed_copy$' --csv "$BIN" $n "$ROUNDS" none \
      >"$OUT/flush_l2_anchor_$n.csv" 2>"$OUT/flush_l2_anchor_$n.err"
  python3 "$HERE/flush_table.py" $n "$ROUNDS" "$OUT/flush_l2_cost_$n.txt" \
      "$OUT/flush_l2_ncu_$n.csv" "$OUT/flush_l2_anchor_$n.csv"
done
