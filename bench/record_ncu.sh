#!/usr/bin/env bash
# Record what Nsight Compute writes for the bundled kernels, beside what
# kernlab's own profiler measures of the same kernel in the same run: the
# inputs of `kl rules --metrics` that tests/rules/fixtures/ncu holds (issue
# 28). Per kernel: one `ncu --set full -o` report, and from it by
# `ncu --import` the raw page in base units and in ncu's own units, the
# details page (with its rule results), and the basic set's raw page (a
# flat export with most metrics missing); `kl profile --json` with the
# standard and the quick set. Then two reports of several kernels: two
# launches of vector_add at two shapes, and llm.c-style layernorm version 2
# (three kernels: mean, rstd, normalise). Everything lands in
# OUT_DIR/ncu.tar.gz. usage: bench/record_ncu.sh BUILD_DIR OUT_DIR
set -uo pipefail
BUILD=${1:-build}
OUT=${2:-bench-out}
SRC=$(cd "$(dirname "$0")/.." && pwd)
KL=$BUILD/bin/kl
export KERNLAB_SHARE_DIR=$SRC/share/kernlab
REC=$OUT/ncu
mkdir -p "$REC"
echo "== ncu exports ($(date -u +%Y-%m-%dT%H:%MZ))"
command -v ncu >/dev/null || { echo "ncu not found: skipped"; exit 0; }
ncu --version >"$REC/ncu-version.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$REC/ncu-version.txt"

# pages of one report, by ncu --import
pages() { # REPORT TAG
  ncu --import "$1" --csv --page raw --print-units base >"$REC/$2.raw.csv" 2>>"$REC/$2.err"
  ncu --import "$1" --csv --page raw >"$REC/$2.raw-units.csv" 2>>"$REC/$2.err"
  ncu --import "$1" --csv --page details >"$REC/$2.details.csv" 2>>"$REC/$2.err"
  ncu --import "$1" --csv --page details --print-details all \
    >"$REC/$2.details-all.csv" 2>>"$REC/$2.err"
  ncu --import "$1" --page details >"$REC/$2.details.txt" 2>>"$REC/$2.err"
}

# case, shape, shape index (the standalone harness launches the entry 25
# times per shape, in case order), candidate (or -)
KERNELS="vector_add 64M 2 -
transpose_f32 square4k 1 -
transpose_f32 square4k 1 tiled.cu
softmax_f32 r16k_c1k 1 -
reduce_sum_f32 64M 2 block_reduce.cu
gemm_f32 s1024 1 -"
echo "$KERNELS" | while read -r case shape index cand; do
  tag="$case.$shape${cand/#-/}"
  tag=${tag%.cu}
  cargs=()
  [ "$cand" != "-" ] && cargs=(--candidate "$SRC/cases/$case/candidates/$cand")
  for set in standard quick; do
    "$KL" profile "$SRC/cases/$case" --shape "$shape" "${cargs[@]}" --set $set \
      --json >"$REC/$tag.kl-$set.json" 2>"$REC/$tag.kl-$set.err"
    "$KL" rules "$SRC/cases/$case" --metrics "$REC/$tag.kl-$set.json" --json \
      >"$REC/$tag.kl-$set.rules.json" 2>&1
  done
  "$KL" harness "$SRC/cases/$case" "${cargs[@]}" -o "/tmp/kl-ncu-$tag.cu"
  nvcc -O3 -arch=sm_90 "/tmp/kl-ncu-$tag.cu" -o "/tmp/kl-ncu-$tag" 2>&1 | tail -3
  entry=$(grep -m1 'entry:' "$SRC/cases/$case/case.yaml" | sed 's/.*entry: *//')
  t0=$(date +%s.%N)
  ncu --set full --clock-control none -k "regex:^$entry\$" \
    --launch-skip $((25 * index)) --launch-count 1 -f -o "$REC/$tag" \
    "/tmp/kl-ncu-$tag" >"$REC/$tag.ncu.log" 2>&1
  t1=$(date +%s.%N)
  pages "$REC/$tag.ncu-rep" "$tag"
  ncu --set basic --clock-control none -k "regex:^$entry\$" \
    --launch-skip $((25 * index)) --launch-count 1 --csv --page raw \
    --print-units base "/tmp/kl-ncu-$tag" >"$REC/$tag.basic.raw.csv" 2>>"$REC/$tag.err"
  printf '%-34s ncu full %.1fs, raw %s lines, details %s lines\n' "$tag" \
    "$(awk "BEGIN{print $t1 - $t0}")" "$(wc -l <"$REC/$tag.raw.csv")" \
    "$(wc -l <"$REC/$tag.details.csv")"
done

# several kernels in one report: vector_add's last launch of 1M and first
# of 16M (two grids); llm.c-style layernorm version 2, three kernels
tag=vector_add.two
ncu --set full --clock-control none -k regex:. --launch-skip 24 --launch-count 2 \
  -f -o "$REC/$tag" /tmp/kl-ncu-vector_add.64M >"$REC/$tag.ncu.log" 2>&1
pages "$REC/$tag.ncu-rep" "$tag"
make -s -C "$SRC/tests/observe/llmc" layernorm_forward >/dev/null 2>&1 &&
  cp "$SRC/tests/observe/llmc/layernorm_forward" /tmp/kl-ncu-layernorm
tag=llmc_layernorm2
ncu --set full --clock-control none -k regex:. --launch-count 3 -f -o "$REC/$tag" \
  /tmp/kl-ncu-layernorm 2 >"$REC/$tag.ncu.log" 2>&1
pages "$REC/$tag.ncu-rep" "$tag"
echo "several kernels: vector_add.two $(($(wc -l <"$REC/vector_add.two.raw.csv") - 2)) rows," \
  "llmc_layernorm2 $(($(wc -l <"$REC/llmc_layernorm2.raw.csv") - 2)) rows"
ls -la "$REC" | awk '{s += $5} END {print "recorded", NR - 3, "files,", s, "bytes"}'
tar -C "$OUT" -czf "$OUT/ncu.tar.gz" ncu && rm -rf "$REC"
