#!/usr/bin/env bash
# activity_kinds.cu on this machine's GPU: each way of timing in its own
# process (no CUPTI, CONCURRENT_KERNEL tracing, KERNEL tracing, KERNEL then
# CONCURRENT_KERNEL in one process), twice, at 10M and 2.5M floats; then
# ncu's gpu__time_duration of the untraced program's timed kernels, with its
# own flush (--cache-control all) and after the program's (--cache-control
# none). Issue 46, part 2; `KL_BENCH=tracing scripts/gpu-check`.
# usage: bench/flush/activity_kinds.sh OUT
set -uo pipefail
OUT=${1:?usage: bench/flush/activity_kinds.sh OUT}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
lib=$(dirname "$(find / -name 'libcupti.so' -not -path '/proc/*' 2>/dev/null | head -1)")
nvcc -O3 -arch=sm_90 "$HERE/activity_kinds.cu" -o /tmp/kl-ak -L"$lib" -lcupti \
  -Xlinker -rpath="$lib" || exit 1
echo "== activity kinds, $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(date -u +%FT%TZ)"
for n in 10485760 2621440; do
  for pass in 1 2; do
    for mode in none concurrent kernel switch; do /tmp/kl-ak $n 200 $mode; done
  done
  for cc in all none; do
    ncu --clock-control none --cache-control $cc --metrics gpu__time_duration.sum \
        -k regex:^timed_ --launch-skip 15 --launch-count 60 --csv \
        /tmp/kl-ak $n 30 none 2>/dev/null |
      python3 -c '
import statistics, sys
sys.path.insert(0, sys.argv[3])
import ncu_csv
v = [x["gpu__time_duration.sum"] for x in ncu_csv.launches(sys.stdin.read())]
for i, k in enumerate(("copy", "read", "fill")):
    print("ncu cache-control %s n %s kernel %s duration_us %.2f (%d launches)"
          % (sys.argv[1], sys.argv[2], k, statistics.median(v[i::3]) if v[i::3] else 0, len(v[i::3])))
' $cc $n "$HERE/.."
  done
done 2>&1 | tee "$OUT/activity_kinds.txt"
