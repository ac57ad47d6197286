#!/usr/bin/env bash
# The main job: build; check every bundled case; bench the host cases
# (checked on fresh seeds, then timed with cold caches); diagnose the naive
# transpose from a profile recorded on an H200; then optimize a bundled case
# with kl run -- host_matmul on the CPU, and gemm_f32 too where there is
# a GPU -- printing the improvement found and where the records are.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
KL=build/bin/kl
"$KL" --version
for c in cases/*/; do
  echo
  echo "== kl check ${c%/}"
  "$KL" check "${c%/}"
done
echo
echo "== kl bench cases/host_saxpy"
"$KL" bench cases/host_saxpy
echo
echo "== kl bench cases/host_matmul --shape n256"
"$KL" bench cases/host_matmul --shape n256
echo
echo "== kl rules: the naive transpose, from its profile recorded on an H200"
"$KL" rules --metrics tests/rules/fixtures/h200/transpose_f32.json --shape square4k
echo
echo "== kl bench cases/vector_add --shape 16M   (needs a CUDA GPU)"
if ! "$KL" bench cases/vector_add --shape 16M; then
  echo "(no GPU here: CUDA cases are checked, their harnesses compile, and kl bench says why it cannot run them)"
else
  echo
  echo "== kl rules cases/transpose_f32 --shape square4k   (profiled here)"
  "$KL" rules cases/transpose_f32 --shape square4k
  echo
  echo "== kl run cases/gemm_f32   (tune the block edge on the GPU)"
  "$KL" run cases/gemm_f32
fi
echo
echo "== kl run cases/host_matmul --iterations 3 --no-profile   (tune on the CPU)"
"$KL" run cases/host_matmul --iterations 3 --no-profile
echo
echo "== kl best cases/host_matmul   (the best kernel so far, settings written in)"
"$KL" best cases/host_matmul | head -8
echo
echo "== kl history and kl report cases/host_matmul   (what the records say)"
"$KL" history cases/host_matmul
"$KL" report cases/host_matmul -o build/host_matmul-report.html
echo "open build/host_matmul-report.html in a browser; markdown: kl report cases/host_matmul"
echo
echo "demo: every bundled case passed kl check; the host cases ran; kl run optimized host_matmul and reported it"
