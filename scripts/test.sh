#!/usr/bin/env bash
# Build, then run every test (ctest). GPU tests skip where no device is
# present. Extra arguments go to ctest, e.g. scripts/test.sh -L unit.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
bash scripts/build.sh
cd build
# two jobs a CPU: with one, a fifth of the CPU time went idle while tests
# waited (sleeping kernels, subprocesses, servers on loopback); with two
# the CPUs are busy throughout, and four were no faster (bench/README.md,
# issue 46, part 4). KL_CTEST_JOBS overrides.
ctest --output-on-failure -j "${KL_CTEST_JOBS:-$((2 * $(nproc)))}" "$@"
