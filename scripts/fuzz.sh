#!/usr/bin/env bash
# Fuzz the rule file loader with libFuzzer (clang, ASan, UBSan) for a while.
# usage: scripts/fuzz.sh [SECONDS]   (default 60). New crashes land in
# build-fuzz/crashes (the library is built with coverage for the fuzzer);
# the seed corpus is fuzz/corpus/rules plus the bad
# rule files and the default rules. Needs clang; installs nothing else than
# scripts/deps.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed" >&2; exit 1; }
bash scripts/deps.sh >/dev/null
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKL_SANITIZE=address,undefined \
  -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link \
  -DKL_WITH_CUDA=OFF >/dev/null
cmake --build build-fuzz --target kernlab_static >/dev/null
LIBS=$(pkg-config --libs yaml-0.1 json-c)
mkdir -p build-fuzz/corpus build-fuzz/crashes
cp fuzz/corpus/rules/* tests/rules/bad/*.yaml share/kernlab/rules/*.yaml build-fuzz/corpus/
clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude \
  -DKL_SOURCE_DIR="\"$PWD\"" fuzz/fuzz_rules.c build-fuzz/libkernlab.a \
  $LIBS -lm -ldl -lpthread -o build-fuzz/fuzz_rules
KERNLAB_SHARE_DIR=$PWD/share/kernlab build-fuzz/fuzz_rules \
  -max_total_time="$SECS" -artifact_prefix=build-fuzz/crashes/ \
  -max_len=4096 build-fuzz/corpus
