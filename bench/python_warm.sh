#!/usr/bin/env bash
# What the warm Python worker saves (issue 46, part 1): the same python
# case commands with every worker exec'd (KERNLAB_PYWORKER_WARM=0) and with
# workers forked by the warm parent (libkernlab/worker/zygote.c), in one
# run on one GPU. Each command is a fresh `kl` process; the compile cache
# is warm for all rows (a first pass fills it). Warm rows: the first
# command starts the parent (imports included), the rest are forked.
# usage: bench/python_warm.sh BUILD_DIR OUT_DIR
set -uo pipefail
BUILD=${1:-build}
OUT=${2:-bench-out}
SRC=$(cd "$(dirname "$0")/.." && pwd)
KL=$BUILD/bin/kl
mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=$OUT/warm-cache
echo "== the warm Python worker ($(date -u +%Y-%m-%dT%H:%MZ))"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
SM=$SRC/tests/python/cases/softmax_torch
KB=$(mktemp -d /tmp/kl-warm-kb-XXXXXX)/case # the worker's sandbox hides $HOME
"$KL" case from-kernelbench "$SRC/bench/kernelbench/problems/2_softmax_rows.py" -o "$KB" >/dev/null 2>&1 || KB=
row() { # label, then kl's arguments
  local label=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$KL" "$@" --json >"$OUT/warm.json" 2>"$OUT/warm.err"
  t1=$(date +%s.%N)
  python3 - "$label" "$t0" "$t1" "$OUT/warm.json" <<'PY'
import json, sys
label, t0, t1, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
try:
    r = json.load(open(path))
except ValueError:
    print("| %s | %.2f s | (no JSON) |" % (label, t1 - t0))
    sys.exit(0)
p = r.get("phases_ms") or {}
ms = lambda k: "-" if p.get(k) is None else "%.0f" % p[k]
print("| %s | %.2f s | %s | %s |" % (label, t1 - t0, " | ".join(
    ms(k) for k in ("worker", "load", "checks", "oracle", "timing", "other")),
    r.get("verdict")))
PY
}
commands() { # the commands of one mode, label prefix $1
  row "$1 compare softmax_torch triton_fused" compare "$SM" --candidate "$SM/candidates/triton_fused.py"
  row "$1 compare softmax_torch triton_fused (again)" compare "$SM" --candidate "$SM/candidates/triton_fused.py"
  row "$1 compare softmax_torch torch_softmax (another)" compare "$SM" --candidate "$SM/candidates/torch_softmax.py"
  row "$1 bench softmax_torch" bench "$SM"
  if [ -n "$KB" ]; then
    row "$1 compare KernelBench 2_softmax_rows triton_softmax" compare "$KB" --candidate "$SRC/bench/kernelbench/candidates/2_softmax_rows/triton_softmax.py"
  fi
}
echo "| command | process wall | worker | load | checks | oracle | timing | other | verdict |"
echo "|---|---|---|---|---|---|---|---|---|"
KERNLAB_PYWORKER_WARM=0 commands "fill the cache:" >/dev/null
KERNLAB_PYWORKER_WARM=0 commands "exec'd:"
pkill -f -- '--zygote kernlab-pyworker' 2>/dev/null; sleep 0.5
commands "warm:"
commands "warm:"
