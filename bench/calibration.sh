#!/usr/bin/env bash
# The CUPTI timer's calibration (issue 46, part 2): what measuring it costs
# the first command on a device and what keeping it saves the next, then
# kernlab's cold medians against ncu's gpu__time_duration with the
# calibration (the default) and without it (KERNLAB_CALIBRATE=0), in one
# call on one card: bench/flush/duration_sources.py over an empty kernel,
# a copy, a read and a fill at 10M and 2.5M floats, and vector_add's three
# shapes; last, how far a small kernel's calibrated median moves between
# fresh processes (KL_CAL_SPREAD of them, 8 by default) against the
# records as read.
# usage: bench/calibration.sh BUILD_DIR OUT_DIR [PROCESSES]
set -uo pipefail
BUILD=${1:?usage: bench/calibration.sh BUILD_DIR OUT_DIR [PROCESSES]}
OUT=${2:?}
N=${3:-3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
KL=$BUILD/bin/kl
mkdir -p "$OUT"
echo "== calibration ($(date -u +%Y-%m-%dT%H:%MZ))"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export KERNLAB_CACHE_DIR=$OUT/calibration-cache
rm -rf "$KERNLAB_CACHE_DIR"
# the plugin compiled first, so that the two timed commands differ only in
# the calibration
KERNLAB_CALIBRATE=0 "$KL" bench "$SRC/cases/vector_add" --shape 1M >/dev/null
for what in measured kept; do
  t0=$(date +%s.%N)
  "$KL" bench "$SRC/cases/vector_add" --shape 1M --json >"$OUT/calibration-$what.json"
  t1=$(date +%s.%N)
  python3 - "$OUT/calibration-$what.json" "$what" "$t0" "$t1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["shapes"][0]
print("%s: kl bench vector_add 1M %.2f s wall; median %.3f us, calibration %s"
      % (sys.argv[2], float(sys.argv[4]) - float(sys.argv[3]),
         s["median_us"], json.dumps(s.get("calibration"))))
PY
done
cat "$KERNLAB_CACHE_DIR"/calibration/*.json; echo
CASES="$SRC/bench/cases/empty $SRC/bench/cases/copy_f32 $SRC/bench/cases/read_f32 $SRC/bench/cases/fill_f32 $SRC/cases/vector_add"
echo "== calibrated (the default), ncu beside"
# shellcheck disable=SC2086 # CASES is split on purpose
python3 "$SRC/bench/flush/duration_sources.py" "$KL" "$N" --ncu $CASES
echo "== KERNLAB_CALIBRATE=0: the records as they read"
# shellcheck disable=SC2086
KERNLAB_CALIBRATE=0 python3 "$SRC/bench/flush/duration_sources.py" "$KL" 1 $CASES
# the spread between requests: SPREAD fresh processes a shape, each one
# request; the calibrated median, the probes' median and the records as
# read (the two added), in us
SPREAD=${KL_CAL_SPREAD:-8}
echo "== $SPREAD fresh processes a shape: calibrated median, probes, records as read"
for c in "$SRC/cases/vector_add 1M" "$SRC/bench/cases/copy_f32 n2_5M" "$SRC/bench/cases/copy_f32 n10M"; do
  dir=${c% *} shape=${c##* }
  for i in $(seq 1 "$SPREAD"); do
    "$KL" bench "$dir" --shape "$shape" --json >"$OUT/spread-$i.json" 2>/dev/null || echo "failed: $c"
  done
  python3 - "$c" "$OUT" "$SPREAD" <<'PY'
import json, statistics, sys
cal, probes, raw = [], [], []
for i in range(1, int(sys.argv[3]) + 1):
    try:
        s = json.load(open("%s/spread-%d.json" % (sys.argv[2], i)))["shapes"][0]
    except (OSError, ValueError, KeyError, IndexError):
        continue
    c = s.get("calibration") or {}
    cal.append(s["median_us"])
    probes.append(c.get("probe_records_us", 0))
    raw.append(s["median_us"] + c.get("offset_us", 0))
def span(v):
    return "%.3f-%.3f (sd %.3f)" % (min(v), max(v), statistics.stdev(v)) if len(v) > 1 else "-"
print("%-40s calibrated %s; probes %s; records %s"
      % (sys.argv[1].split("/")[-1], span(cal), span(probes), span(raw)))
PY
done
