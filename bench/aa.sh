#!/usr/bin/env bash
# A/A and a known difference, many times over: `kl compare` of a case's
# baseline against a copy of itself (or against CANDIDATE), RUNS times, each
# a fresh process, and how often the decision said "different". An honest
# decision calls an A/A different at most about once in 50, and still
# finds a real 3% difference (bench/aa/*_3pct.*).
# usage: bench/aa.sh BUILD_DIR OUT_DIR CASE SHAPE RUNS [CANDIDATE]
#   KL_AA_HOG=1: one busy loop on another CPU throughout (a noisy machine)
#   KL_AA_ARGS: more arguments for kl compare (e.g. "--time-cap 500")
set -uo pipefail
BUILD=${1:?usage: bench/aa.sh BUILD_DIR OUT_DIR CASE SHAPE RUNS [CANDIDATE]}
OUT=${2:?}
CASE=${3:?}
SHAPE=${4:?}
RUNS=${5:?}
CAND=${6:-}
KL=$BUILD/bin/kl
mkdir -p "$OUT"
if [ -z "$CAND" ]; then
  src=$(sed -n 's/^ *source: *//p' "$CASE/case.yaml" | head -1)
  CAND=$CASE/$src
fi
HOG=
if [ "${KL_AA_HOG:-0}" = 1 ]; then
  bash -c 'while :; do :; done' &
  HOG=$!
  trap 'kill $HOG 2>/dev/null' EXIT
fi
tag=$(basename "$CASE")-$SHAPE-$(basename "$CAND")${HOG:+-hog}
echo "== $tag: $RUNS runs ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs${HOG:+, beside a CPU hog})"
command -v nvidia-smi >/dev/null &&
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for i in $(seq 1 "$RUNS"); do
  # shellcheck disable=SC2086 # KL_AA_ARGS is split on purpose
  "$KL" compare "$CASE" --candidate "$CAND" --shape "$SHAPE" --json \
    ${KL_AA_ARGS:-} >"$OUT/$tag-$i.json" 2>"$OUT/$tag-$i.err"
done
python3 - "$OUT" "$tag" "$RUNS" <<'PY'
import json, sys
out, tag, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
tally = {"same": 0, "faster": 0, "slower": 0, "failed": 0}
stretched = 0
walls, samples = [], []
for i in range(1, runs + 1):
    try:
        d = json.load(open(f"{out}/{tag}-{i}.json"))
        s = d["shapes"][0]
        b = s.get("blocks", {})
        m = s.get("machine", {})
        stretched += bool(b.get("stretched"))
        tally[s["decision"]] += 1
        total = (d.get("phases_ms") or {}).get("total") or 0
        walls.append(total)
        samples.append(s["samples"])
        print(f"{i:3d} x{s['speedup']:.4f} [{s['speedup_ci'][0]:.4f}, "
              f"{s['speedup_ci'][1]:.4f}] {s['decision']:6s} n={s['samples']} "
              f"blocks {b.get('faster', '?')}+/{b.get('slower', '?')}- of "
              f"{b.get('units', '?')}{' stretched' if b.get('stretched') else ''}"
              f" others {m.get('others_cpus', 0):.2f} CPUs, sampling "
              f"{s.get('wall_ms', 0):.0f} ms, compare {total:.0f} ms")
    except Exception as e:  # a run that failed is counted, not hidden
        tally["failed"] += 1
        print(f"{i:3d} failed: {e}")
med = lambda xs: sorted(xs)[len(xs) // 2] if xs else 0  # noqa: E731
print(f"{tag}: {runs} runs: same {tally['same']}, faster {tally['faster']}, "
      f"slower {tally['slower']}, failed {tally['failed']}; "
      f"time cap stretched in {stretched}; median {med(samples)} samples, "
      f"compare {med(walls):.0f} ms (max {max(walls or [0]):.0f})")
PY
