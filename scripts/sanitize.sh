#!/usr/bin/env bash
# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer
# (a finding aborts the test that hit it), in build-asan/. Extra arguments
# go to ctest, e.g. scripts/sanitize.sh -R cli. GPU tests skip without a
# device as in scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
# -O1, as the sanitizers' own documentation advises for their checks at a
# bearable cost: the ASan pass took 498 CPU-s of tests at -O1 against 571
# at -O0 on a 2-core VM (its build 44 CPU-s against 22; bench/README.md,
# issue 46, part 4). Debug keeps the assertions.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  "-DCMAKE_C_FLAGS_DEBUG=-g -O1" -DKL_SANITIZE=address,undefined >/dev/null
cmake --build build-asan
cd build-asan
# four slots a CPU, where a test takes two and one that mostly waits one
# (tests/CMakeLists.txt, PROCESSORS): two tests a CPU, as at -j 2*CPUs
# before, and the waiting ones beside them. With one test a CPU a fifth
# of the CPU time went idle (sleeping kernels, subprocesses, servers on
# loopback); four busy tests a CPU were no faster and one timing decision
# failed under that load (bench/README.md, issue 46, part 4).
# KL_CTEST_JOBS overrides the slots.
ctest --output-on-failure -j "${KL_CTEST_JOBS:-$((4 * $(nproc)))}" "$@"
