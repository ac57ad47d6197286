#!/usr/bin/env bash
# A `kl compare` with a fresh compile cache (cold: the candidate compiled)
# and again (warm), three times, for this tree and for an older one built
# in old-src/ (git archive OLD | tar -x -C old-src, then its gpu-check):
# where the worker's start and the device's context land (phases_ms).
# usage (repository root, after scripts/gpu-check built build-gpu):
#   bench/cold_compare.sh OUT_DIR
set -u
O=$1
for tree in new old; do
  [ $tree = old ] && [ ! -d old-src/build-gpu ] && break
  if [ $tree = old ]; then cd old-src; fi
  KL=$PWD/build-gpu/bin/kl
  for i in 1 2 3; do
    export KERNLAB_CACHE_DIR=/tmp/cc-$tree-$i
    rm -rf $KERNLAB_CACHE_DIR
    mkdir -p $KERNLAB_CACHE_DIR # empty: the compile is cold, the folder there
    for pass in cold warm; do
      t0=$(date +%s.%N)
      $KL compare cases/transpose_f32 --candidate cases/transpose_f32/candidates/tiled.cu --json > $O/cc.json 2>/dev/null
      t1=$(date +%s.%N)
      python3 -c "
import json,sys
r=json.load(open('$O/cc.json')); p=r['phases_ms']
print('$tree $pass %.2f s build %.0f worker %.0f checks %.0f timing %.0f' % ($t1-$t0, p['build'], p['worker'], p['checks'], p['timing']))"
    done
  done
  if [ $tree = old ]; then cd ..; fi
done
