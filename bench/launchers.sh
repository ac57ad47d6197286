#!/bin/bash
# Candidates that own their launch, against their case's baseline, on the
# GPU: each bundled *_launch / split candidate through kl compare (cold
# caches; the baseline, its anchor, timed in the same comparison), then the
# llm.c-style programs from observation to an exported dispatcher and an
# exported launcher of a template kernel (tests/observe/test_llmc_gpu.py
# prints their numbers).
# usage: bench/launchers.sh BUILD OUT
set -u
BUILD=${1:?usage: bench/launchers.sh BUILD OUT}
OUT=${2:?usage: bench/launchers.sh BUILD OUT}
KL=$BUILD/bin/kl
mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=${TMPDIR:-/tmp}/kl-launchers-cache
status=0
echo "== launchers: kl compare against the baseline, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(date -u +%FT%TZ)"
printf '%-15s %-28s %-9s %12s %12s %9s %s\n' case candidate shape baseline_us cand_us speedup ci
for pair in softmax_f32:block_per_row_launch.cu rmsnorm_bf16:warp_per_row_launch.cu \
            reduce_sum_f32:split_two_kernels.cu reduce_sum_f32:cub_device_reduce.cu \
            vector_add:persistent_launch.cu \
            transpose_f32:tiled_launch.cu; do
  c=${pair%%:*} f=${pair#*:}
  shape=()
  [ "$c" = rmsnorm_bf16 ] && shape=(--shape large) # xlarge: a check past 60 s
  "$KL" compare "cases/$c" --candidate "cases/$c/candidates/$f" --json \
    "${shape[@]}" >"$OUT/launchers-$c-${f%.cu}.json" \
    2>"$OUT/launchers-$c-${f%.cu}.err" || status=1
  python3 - "$c" "$f" "$OUT/launchers-$c-${f%.cu}.json" <<'PY'
import json, sys
c, f, path = sys.argv[1:]
try:
    r = json.load(open(path))
except ValueError:
    print("%-15s %-28s compare failed" % (c, f)); sys.exit(0)
for s in r.get("shapes", []):
    b = (s.get("baseline") or {}).get("median_us") or 0
    ci = s.get("speedup_ci") or [0, 0]
    print("%-15s %-28s %-9s %12.2f %12.2f %9.3f [%.3f, %.3f]" % (
        c, f, s["name"], b, s.get("median_us") or 0, s.get("speedup") or 0,
        ci[0], ci[1]))
print("%-15s %-28s verdict %s, objective x%.3f" % (
    c, f, r.get("verdict"), (r.get("objective") or {}).get("speedup") or 0))
PY
done
echo "== llm.c-style layernorm (observe, case, run, dispatcher, export) and softmax (a template per block size: candidates, export) and residual (a params struct by value: a launcher candidate, export)"
python3 tests/observe/test_llmc_gpu.py "$KL" "$PWD" >"$OUT/launchers-llmc.log" 2>&1 || status=1
grep -E "best_speedup|^dispatch |^objective|^softmax_|^residual_|kept:|failures" \
  "$OUT/launchers-llmc.log"
exit $status
