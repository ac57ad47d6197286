#!/usr/bin/env bash
# The local executor on every GPU of this host against one of them, in the
# same run: the same batch of four candidates of tests/exec/repeat (tune,
# one batch, own compile cache each side) on GPU 0, then on GPUs 0,1; the
# anchor is the one-GPU batch. Prints the batch's wall times and ratio
# (ideal 0.5 on two GPUs). usage: executor_local.sh BUILD_DIR [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
echo "== executor_local: a batch of 4 on one GPU and on two"
python3 tests/exec/test_local_gpu.py "$BUILD/bin/kl" "$PWD" |
  grep -E 'batch of 4|ok:|FAIL|SKIP'
