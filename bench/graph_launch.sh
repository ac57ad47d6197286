#!/bin/bash
# Stream against graph launch: each launcher candidate (and vector_add's
# baseline) benched by one `kl bench --launch both` (one worker: each shape
# timed from the stream as its launcher launches, then replayed from a CUDA
# graph), cold caches. A launch of one kernel should read the same (CUPTI times the
# device's span, not the host's call); one of several kernels loses the
# host's gaps between them under a graph where the device waited for the
# host. Each row is the ratio stream/graph of the two medians, both
# measured here.
# usage: bench/graph_launch.sh BUILD OUT
set -u
BUILD=${1:?usage: bench/graph_launch.sh BUILD OUT}
OUT=${2:?usage: bench/graph_launch.sh BUILD OUT}
KL=$BUILD/bin/kl
mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=${TMPDIR:-/tmp}/kl-graph-cache
status=0
echo "== graph launch: kl bench --launch both, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(date -u +%FT%TZ)"
printf '%-15s %-28s %-7s %12s %12s %8s\n' case candidate shape stream_us graph_us ratio
for pair in vector_add:- vector_add:persistent_launch.cu \
            reduce_sum_f32:split_two_kernels.cu reduce_sum_f32:cub_device_reduce.cu \
            softmax_f32:block_per_row_launch.cu transpose_f32:tiled_launch.cu; do
  c=${pair%%:*} f=${pair#*:}
  cand=()
  [ "$f" != - ] && cand=(--candidate "cases/$c/candidates/$f")
  "$KL" bench "cases/$c" "${cand[@]}" --launch both --json \
    >"$OUT/graph-$c-${f%.cu}.json" 2>"$OUT/graph-$c-${f%.cu}.err" || status=1
  python3 - "$c" "$f" "$OUT/graph-$c-${f%.cu}.json" <<'PY'
import json, sys
c, f, path = sys.argv[1:]
try:
    doc = json.load(open(path))
except ValueError:
    print("%-15s %-28s bench failed" % (c, f)); sys.exit(0)
for s in doc.get("shapes", []):
    x, y = s.get("median_us") or 0, (s.get("graph") or {}).get("median_us") or 0
    print("%-15s %-28s %-7s %12.2f %12.2f %8.3f" % (
        c, f if f != "-" else "(baseline)", s["name"], x, y, x / y if y else 0))
PY
done
exit $status
