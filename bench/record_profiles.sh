#!/usr/bin/env bash
# Record `kl profile --json` of every bundled CUDA case (baseline and each
# candidate, all shapes) on this GPU, and what `kl rules` makes of each,
# into OUT_DIR/recorded.tar.gz. These are the recorded H200 profiles that
# tests/rules/fixtures hold. usage: bench/record_profiles.sh BUILD_DIR OUT_DIR
set -uo pipefail
BUILD=${1:-build}
OUT=${2:-bench-out}
SRC=$(cd "$(dirname "$0")/.." && pwd)
KL=$BUILD/bin/kl
export KERNLAB_SHARE_DIR=$SRC/share/kernlab
REC=$OUT/recorded
mkdir -p "$REC"
echo "== recorded profiles ($(date -u +%Y-%m-%dT%H:%MZ))"
for c in vector_add transpose_f32 softmax_f32 reduce_sum_f32 gemm_f32 rmsnorm_bf16; do
  dir=$SRC/cases/$c
  for cand in baseline "$dir"/candidates/*.cu; do
    [ "$cand" = "$dir/candidates/*.cu" ] && continue
    name=$c
    args=()
    if [ "$cand" != baseline ]; then
      name=$c.$(basename "$cand" .cu)
      args=(--candidate "$cand")
    fi
    t0=$(date +%s.%N)
    "$KL" profile "$dir" "${args[@]}" --json >"$REC/$name.json" 2>"$REC/$name.err"
    rc=$?
    t1=$(date +%s.%N)
    "$KL" rules "$dir" --metrics "$REC/$name.json" >"$REC/$name.rules.txt" 2>&1
    printf '%-34s profile rc=%d %.1fs; fired: %s\n' "$name" "$rc" \
      "$(awk "BEGIN{print $t1 - $t0}")" \
      "$(grep -E '^(shape|  (high|medium|low) )' "$REC/$name.rules.txt" |
         sed -E 's/^shape ([^:]*):.*/[\1]/; s/^  +(high|medium|low) +([a-z0-9_]*):.*/\2/' |
         tr '\n' ' ')"
  done
done
# kl rules profiling by itself, once
t0=$(date +%s.%N)
"$KL" rules "$SRC/cases/transpose_f32" --shape square4k >"$REC/live.transpose_f32.txt" 2>&1
echo "live kl rules transpose_f32 --shape square4k: rc=$? $(awk "BEGIN{print $(date +%s.%N) - $t0}")s"
tar -C "$OUT" -czf "$OUT/recorded.tar.gz" recorded && rm -rf "$REC"
