#!/usr/bin/env bash
# Build, then run every test (ctest). GPU tests skip where no device is
# present. Extra arguments go to ctest, e.g. scripts/test.sh -L unit.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
bash scripts/build.sh
cd build
# four slots a CPU, where a test takes two and one that mostly waits one
# (tests/CMakeLists.txt, PROCESSORS): two tests a CPU, as at -j 2*CPUs
# before, and the waiting ones beside them. With one test a CPU a fifth
# of the CPU time went idle (sleeping kernels, subprocesses, servers on
# loopback); four busy tests a CPU were no faster and one timing decision
# failed under that load (bench/README.md, issue 46, part 4).
# KL_CTEST_JOBS overrides the slots.
ctest --output-on-failure -j "${KL_CTEST_JOBS:-$((4 * $(nproc)))}" "$@"
