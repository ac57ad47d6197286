#!/usr/bin/env python3
"""The table of the flush experiment (flush_l2.sh): per variant, the flush's
own wall (CUDA events), and ncu's reading of the kernel after it (median
duration, DRAM bytes read and written) beside ncu's own cache control.
usage: flush_table.py N ROUNDS COST_TXT NCU_CSV ANCHOR_CSV"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ncu_csv  # noqa: E402  (bench/ncu_csv.py)

N, ROUNDS = int(sys.argv[1]), int(sys.argv[2])
COST, NCU, ANCHOR = sys.argv[3], sys.argv[4], sys.argv[5]


def launches(path):
    """[{metric: value in us or MB}] per profiled launch, in launch order."""
    with open(path) as f:
        return ncu_csv.launches(f.read())


def med(rows, name):
    vals = [r[name] for r in rows if name in r]
    return statistics.median(vals) if vals else float("nan")


variants, cost, events = [], {}, {}
with open(COST) as f:
    for line in f:
        w = line.split()
        if w and w[0] == "variant":
            variants.append(w[1])
            cost[w[1]] = float(w[5])
            events[w[1]] = float(w[7])
got = launches(NCU)
anchor = launches(ANCHOR)
a_t = med(anchor, "gpu__time_duration.sum")
a_w = med(anchor, "dram__bytes_write.sum")
print("\n%d floats a buffer (%.0f MB moved); ncu --cache-control all: "
      "%.2f us, DRAM read %.1f MB, write %.1f MB (%d launches)"
      % (N, 8 * N / 1e6, a_t, med(anchor, "dram__bytes_read.sum"), a_w,
         len(anchor)))
print("| flush | its wall | kernel after it (ncu) | vs ncu's | DRAM read | "
      "DRAM write | write vs ncu's | kernel after it (events, no ncu) |")
print("|---|---|---|---|---|---|---|---|")
out = []
for i, v in enumerate(variants):
    rows = got[i * ROUNDS:(i + 1) * ROUNDS]
    t = med(rows, "gpu__time_duration.sum")
    r = med(rows, "dram__bytes_read.sum")
    w = med(rows, "dram__bytes_write.sum")
    print("| %s | %.1f us | %.2f us | %+.1f%% | %.1f MB | %.1f MB | %+.1f MB "
          "| %.2f us |" % (v, cost[v], t, 100 * (t / a_t - 1), r, w, w - a_w,
                           events[v]))
    out.append({"n": N, "variant": v, "flush_us": cost[v], "kernel_us": t,
                "events_kernel_us": events[v],
                "dram_read_mb": r, "dram_write_mb": w, "ncu_us": a_t,
                "ncu_write_mb": a_w, "launches": len(rows)})
for o in out:
    print(json.dumps(o))
