#!/usr/bin/env bash
# Build, then run every test (ctest). GPU tests skip where no device is
# present. Extra arguments go to ctest, e.g. scripts/test.sh -L unit.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
bash scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
