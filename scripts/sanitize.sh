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
# two jobs a CPU: with one, a fifth of the CPU time went idle while tests
# waited (sleeping kernels, subprocesses, servers on loopback); with two
# the CPUs are busy throughout, and four were no faster (bench/README.md,
# issue 46, part 4). KL_CTEST_JOBS overrides.
ctest --output-on-failure -j "${KL_CTEST_JOBS:-$((2 * $(nproc)))}" "$@"
