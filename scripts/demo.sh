#!/usr/bin/env bash
# The main job, as far as kernlab goes today: build; check every bundled
# case; bench the host cases (checked on fresh seeds, then timed with cold
# caches); compare host_matmul's blocked candidate with its baseline;
# diagnose the naive transpose from a profile recorded on an H200 (and,
# where there is a GPU, from a fresh one).
# CUDA cases are checked here; running them needs the CUDA backend.
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
echo "== kl compare cases/host_matmul --candidate cases/host_matmul/candidates/ikj_blocked.c"
"$KL" compare cases/host_matmul --candidate cases/host_matmul/candidates/ikj_blocked.c
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
fi
echo
echo "demo: every bundled case passed kl check; the host cases ran"
