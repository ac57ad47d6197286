#!/usr/bin/env bash
# What kl observe costs a program, and whether its durations agree with
# ncu's, on tests/observe/app (76 scale_add launches at five
# configurations). Anchors measured in the same run: the program's own wall
# time without kernlab, and ncu's gpu__time_duration of the same launches.
# usage: bench/observe.sh BUILD_DIR OUT_DIR
set -uo pipefail
BUILD=${1:-build}
OUT=${2:-bench-out}
SRC=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
APP=$(mktemp -d /tmp/kl-observe-bench-XXXXXX)
cp "$SRC"/tests/observe/app/* "$APP"/
make -s -C "$APP" app || exit 1
echo "== kl observe on tests/observe/app ($(date -u +%Y-%m-%dT%H:%MZ))"
wall() { # median wall seconds of 7 runs of "$@"
  python3 -c '
import statistics, subprocess, sys, time
t = []
for _ in range(7):
    s = time.perf_counter()
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t.append(time.perf_counter() - s)
print("%.3f" % statistics.median(t))' "$@"
}
plain=$(wall "$APP/app")
observed=$(wall "$BUILD/bin/kl" observe -o "$APP/obs.json" --kernel scale_add -- "$APP/app")
echo "wall: program alone ${plain}s, under kl observe ${observed}s (x$(python3 -c "print('%.2f' % ($observed / $plain))"))"
"$BUILD/bin/kl" observe -o "$OUT/observe_app.json" --kernel scale_add -- "$APP/app" >"$OUT/observe_app.txt"
ncu --clock-control none --metrics gpu__time_duration.sum -k regex:'^scale_add' --csv "$APP/app" 2>/dev/null >"$APP/ncu.csv"
python3 - "$OUT/observe_app.json" "$APP/ncu.csv" "$SRC/bench" <<'PY'
import json, statistics, sys
sys.path.insert(0, sys.argv[3])
import ncu_csv
obs = json.load(open(sys.argv[1]))
ours = [l["duration_ns"] / 1000 for l in obs["launches"]]
ncu = [x["gpu__time_duration.sum"] for x in ncu_csv.launches(open(sys.argv[2]).read())]
print("launches: kl observe %d, ncu %d" % (len(ours), len(ncu)))
if len(ours) == len(ncu):
    # per configuration (the program launches them in blocks)
    blocks = [(0, 12), (12, 18), (18, 38), (38, 46), (46, 76)]
    print("config   kl observe p50 us   ncu p50 us   ratio")
    for i, (a, b) in enumerate(blocks):
        o, n = statistics.median(ours[a:b]), statistics.median(ncu[a:b])
        print("%-6d   %17.2f   %10.2f   %5.3f" % (i + 1, o, n, o / n))
PY
rm -rf "$APP"
