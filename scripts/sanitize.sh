#!/usr/bin/env bash
# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer
# (a finding aborts the test that hit it), in build-asan/. Extra arguments
# go to ctest, e.g. scripts/sanitize.sh -R cli. GPU tests skip without a
# device as in scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DKL_SANITIZE=address,undefined >/dev/null
cmake --build build-asan
cd build-asan
ctest --output-on-failure -j "$(nproc)" "$@"
