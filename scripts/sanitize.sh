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
# three jobs a CPU: many tests mostly wait (sleeping kernels, servers on
# loopback, subprocesses), and once their CPU work was cut two jobs a CPU
# no longer kept the CPUs busy; the suite passed at four a CPU too, in the
# plain build beside two busy loops and under ASan (bench/README.md, issue
# 46, part 4). KL_CTEST_JOBS overrides.
ctest --output-on-failure -j "${KL_CTEST_JOBS:-$((3 * $(nproc)))}" "$@"
