#!/usr/bin/env bash
# Fuzz kernlab's readers of untrusted text with libFuzzer (clang, ASan,
# UBSan) for a while: rule files (rules), model replies (reply), recorded
# metrics (metrics). usage: scripts/fuzz.sh [TARGET|all] [SECONDS]
# (default: all, 60 s each). The library is built with coverage for the
# fuzzer; new crashes land in build-fuzz/crashes-TARGET; each target's seed
# corpus is fuzz/corpus/TARGET plus the test files of its kind. Needs clang;
# installs nothing beyond what scripts/deps.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
WHICH=${1:-all}
SECS=${2:-60}
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed" >&2; exit 1; }
bash scripts/deps.sh >/dev/null
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKL_SANITIZE=address,undefined \
  "-DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link -fno-sanitize-recover=all" \
  -DKL_WITH_CUDA=OFF >/dev/null
cmake --build build-fuzz --target kernlab_static >/dev/null
LIBS=$(pkg-config --libs yaml-0.1 json-c libcurl)
export KERNLAB_SHARE_DIR=$PWD/share/kernlab
for t in rules reply metrics; do
  [ "$WHICH" = all ] || [ "$WHICH" = "$t" ] || continue
  corpus=build-fuzz/corpus-$t
  mkdir -p "$corpus" "build-fuzz/crashes-$t"
  cp fuzz/corpus/$t/* "$corpus/"
  case $t in
    rules) cp tests/rules/bad/*.yaml share/kernlab/rules/*.yaml "$corpus/" ;;
    metrics) cp tests/rules/fixtures/h200/*.json "$corpus/" ;;
  esac
  clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -Iinclude \
    -DKL_SOURCE_DIR="\"$PWD\"" "fuzz/fuzz_$t.c" build-fuzz/libkernlab.a \
    $LIBS -lm -ldl -lpthread -o "build-fuzz/fuzz_$t"
  echo "== fuzz_$t, $SECS s"
  "build-fuzz/fuzz_$t" -max_total_time="$SECS" \
    -artifact_prefix="build-fuzz/crashes-$t/" -max_len=65536 "$corpus" 2>&1 |
    grep -E '^(#[0-9]+ +DONE|Done|==[0-9]+==ERROR|SUMMARY)' || true
done
