#!/usr/bin/env bash
# Configure and build kernlab into build/ (dependencies first).
# Extra arguments go to CMake, e.g. scripts/build.sh -DKL_WITH_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -G Ninja "$@" >build.log 2>&1 || { cat build.log; exit 1; }
grep -E '^-- kernlab' build.log || true
cmake --build build -j "$(nproc)" >>build.log 2>&1 || { tail -n 50 build.log; exit 1; }
