#!/usr/bin/env bash
# Fuzz kernlab's readers of untrusted input with libFuzzer (clang, ASan,
# UBSan) for a while: case files (case), the expression language (expr),
# rule files (rules), model replies (reply), JSON Lines ledgers (ledger),
# observation files (observation), recorded metrics (metrics), knowledge
# entries' files (knowledge), what a client sends kl mcp (mcp).
# usage: scripts/fuzz.sh [TARGET|all] [SECONDS] (default: all, 60 s each).
# Targets fuzz side by side, one per core (KL_FUZZ_JOBS to say how many),
# each for the full SECONDS (the last round's, as several processes).
# The library is built with coverage for the fuzzer; each target's seed
# corpus is fuzz/corpus/TARGET plus the test files of its kind. A crash is
# saved in build-fuzz/crashes-TARGET and the script exits 1: copy the file
# into fuzz/corpus/TARGET, where ctest's replay keeps it as a regression
# input. Needs clang (scripts/deps.sh --fuzz installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
WHICH=${1:-all}
SECS=${2:-60}
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed" >&2; exit 1; }
bash scripts/deps.sh --fuzz >/dev/null
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKL_SANITIZE=address,undefined \
  "-DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link -fno-sanitize-recover=all" \
  -DKL_WITH_CUDA=OFF >/dev/null
cmake --build build-fuzz --target kernlab_static >/dev/null
LIBS=$(pkg-config --libs yaml-0.1 json-c libcurl)
export KERNLAB_SHARE_DIR=$PWD/share/kernlab
JOBS=${KL_FUZZ_JOBS:-$(nproc)}
[ "$JOBS" -ge 1 ] 2>/dev/null || { echo "fuzz.sh: KL_FUZZ_JOBS must be a whole number from 1" >&2; exit 2; }
targets=()
for t in case expr rules reply ledger observation metrics knowledge mcp; do
  [ "$WHICH" = all ] || [ "$WHICH" = "$t" ] || continue
  targets+=("$t")
  corpus=build-fuzz/corpus-$t
  mkdir -p "$corpus" "build-fuzz/crashes-$t"
  cp fuzz/corpus/$t/* "$corpus/"
  case $t in
    case) for f in cases/*/case.yaml tests/case/bad/*/case.yaml; do
            cp "$f" "$corpus/$(echo "$f" | tr / _)"; done ;;
    rules) cp tests/rules/bad/*.yaml share/kernlab/rules/*.yaml "$corpus/" ;;
    ledger) cp tests/report/fixtures/gemm_h200/*.jsonl "$corpus/" ;;
    observation) cp tests/observe/fixtures/*.json "$corpus/" ;;
    metrics) cp tests/rules/fixtures/h200/*.json "$corpus/" ;;
    knowledge) for f in share/kernlab/knowledge/*/*.md; do
                 cp "$f" "$corpus/$(echo "$f" | tr / _)"; done ;;
  esac
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -Iinclude -Ilibkernlab \
    -DKL_SOURCE_DIR="\"$PWD\"" "fuzz/fuzz_$t.c" build-fuzz/libkernlab.a \
    $LIBS -lm -ldl -lpthread -o "build-fuzz/fuzz_$t" &
done
for pid in $(jobs -p); do wait "$pid"; done # a failed build stops here
fuzz() { # target, part, seconds: its log and exit status in build-fuzz/
  local t=$1 part=$2 secs=$3 rc=0
  "build-fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="build-fuzz/crashes-$t/" -max_len=65536 \
    "build-fuzz/corpus-$t" >"build-fuzz/fuzz_$t.$part.log" 2>&1 || rc=$?
  echo $rc >"build-fuzz/fuzz_$t.$part.rc"
}
# Whole rounds of JOBS targets side by side, SECS each; the targets left
# over for a last round that would leave cores idle (9 targets on 2 cores:
# the ninth alone) run as several processes on their corpus at once, the
# same SECS of fuzzing shared between them, 10 s each at least (a
# process spends its first seconds replaying the corpus). With no more
# targets than cores, each runs whole.
n=${#targets[@]}
left=0
[ "$n" -gt "$JOBS" ] && left=$((n % JOBS))
parts=1
[ "$left" -gt 0 ] && parts=$((JOBS / left))
while [ "$parts" -gt 1 ] && [ $((SECS / parts)) -lt 10 ]; do
  parts=$((parts - 1))
done
rm -f build-fuzz/fuzz_*.log build-fuzz/fuzz_*.rc
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  k=1 secs=$SECS
  if [ "$i" -ge $((n - left)) ]; then
    k=$parts secs=$(((SECS + parts - 1) / parts))
  fi
  echo "== fuzz_$t, $SECS s$([ "$k" -gt 1 ] && echo " as $k processes of $secs s")"
  for part in $(seq 1 "$k"); do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
    fuzz "$t" "$part" "$secs" &
  done
done
wait
failed=()
for t in "${targets[@]}"; do
  echo "== fuzz_$t"
  bad=0
  logs=(build-fuzz/fuzz_"$t".*.log)
  [ -f "${logs[0]}" ] || { echo "fuzz.sh: fuzz_$t left no log" >&2; failed+=("$t"); continue; }
  for log in "${logs[@]}"; do
    part=${log%.log}
    grep -E '^(#[0-9]+ +DONE|Done|==[0-9]+==ERROR|SUMMARY)' "$log" || true
    if [ "$(cat "$part.rc" 2>/dev/null || echo 1)" -ne 0 ]; then
      grep -A25 -m1 -E '==ERROR|runtime error|deadly signal|out-of-memory|timeout' \
        "$log" >&2 || tail -25 "$log" >&2
      bad=1
    fi
  done
  [ "$bad" = 0 ] || failed+=("$t")
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz.sh: crashes in: ${failed[*]} (inputs in build-fuzz/crashes-*)" >&2
  exit 1
fi
