#!/usr/bin/env bash
# Build, then run every test (ctest). GPU tests skip where no device is
# present. Extra arguments go to ctest, e.g. scripts/test.sh -L unit.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
bash scripts/build.sh
cd build
# three jobs a CPU: many tests mostly wait (sleeping kernels, servers on
# loopback, subprocesses), and once their CPU work was cut two jobs a CPU
# no longer kept the CPUs busy; the suite passed at four a CPU too, in the
# plain build beside two busy loops and under ASan (bench/README.md, issue
# 46, part 4). KL_CTEST_JOBS overrides.
ctest --output-on-failure -j "${KL_CTEST_JOBS:-$((3 * $(nproc)))}" "$@"
