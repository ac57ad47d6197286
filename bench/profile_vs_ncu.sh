#!/usr/bin/env bash
# kl profile --set standard against Nsight Compute on the same kernels, in
# one run on one GPU: passes, wall time per kernel, and the relative
# difference of every metric both report (T8, T9 of measurement.md).
# usage: bench/profile_vs_ncu.sh BUILD_DIR OUT_DIR
set -uo pipefail
BUILD=${1:-build}
OUT=${2:-bench-out}
SRC=$(cd "$(dirname "$0")/.." && pwd)
KL="$BUILD/bin/kl"
mkdir -p "$OUT/profile"
echo "== profile vs ncu ($(date -u +%Y-%m-%dT%H:%MZ))"
command -v ncu >/dev/null || { echo "ncu not found: skipped"; exit 0; }
# case, shape, shape index (the standalone harness launches the entry 25
# times per shape, in case order), candidate (or -)
KERNELS="vector_add 64M 2 -
transpose_f32 square4k 1 -
transpose_f32 square4k 1 tiled.cu
softmax_f32 r16k_c1k 1 -
gemm_f32 s1024 1 -"
echo "$KERNELS" | while read -r case shape index cand; do
  tag="$case.$shape${cand/#-/}"
  tag=${tag%.cu}
  cargs=()
  [ "$cand" != "-" ] && cargs=(--candidate "$SRC/cases/$case/candidates/$cand")
  # kernlab: one process, every shape's timing and profile; keep the JSON
  "$KL" profile "$SRC/cases/$case" --shape "$shape" "${cargs[@]}" --set standard \
    --json --ncu-names >"$OUT/profile/$tag.kl.json" 2>"$OUT/profile/$tag.kl.err"
  KERNLAB_PROFILE_REPLAY=kernel "$KL" profile "$SRC/cases/$case" --shape "$shape" \
    "${cargs[@]}" --set standard --json --ncu-names >"$OUT/profile/$tag.kl-kernel.json" 2>/dev/null
  "$KL" harness "$SRC/cases/$case" "${cargs[@]}" -o "/tmp/kl-prof-$tag.cu"
  nvcc -O3 -arch=sm_90 "/tmp/kl-prof-$tag.cu" -o "/tmp/kl-prof-$tag" 2>&1 | tail -3
  entry=$(grep -m1 'entry:' "$SRC/cases/$case/case.yaml" | sed 's/.*entry: *//')
  for set in full basic; do
    start=$(date +%s.%N)
    ncu --set $set --clock-control none -k "regex:^$entry\$" \
        --launch-skip $((25 * index)) --launch-count 1 --csv --page raw \
        --print-units base "/tmp/kl-prof-$tag" \
        >"$OUT/profile/$tag.ncu-$set.csv" 2>"$OUT/profile/$tag.ncu-$set.err"
    end=$(date +%s.%N)
    python3 -c "print($end - $start)" >"$OUT/profile/$tag.ncu-$set.wall"
  done
  python3 "$SRC/bench/profile_compare.py" "$OUT/profile" "$tag"
done | tee "$OUT/profile.jsonl"
python3 "$SRC/bench/profile_compare.py" --summary "$OUT/profile.jsonl" | tee "$OUT/profile_summary.txt"
# one file for the many small ones (the device tool returns a few dozen)
tar -C "$OUT" -czf "$OUT/profile.tar.gz" profile && rm -rf "$OUT/profile"
