#!/usr/bin/env python3
"""Compare one kernel's kl profile (JSON, Nsight Compute names) with ncu's
raw CSV page, or summarise the comparisons (--summary FILE).

Prints one JSON line per kernel: kernlab's passes and profiling time (config
image + passes; the one-time init apart; making and filling the instance's
buffers is not profiling and is left out) and ncu's passes and wall time
for --set full and --set basic, and, for every metric both report, the
relative difference (kernlab - ncu) / ncu. Values near zero on both sides
are compared absolutely (|diff| < 1e-3 counts as equal)."""
import csv, json, re, statistics, sys


def ncu_metrics(path):
    rows = [r for r in csv.reader(open(path, errors="replace"))]
    h = next((i for i, r in enumerate(rows) if "ID" in r and "Kernel Name" in r), None)
    if h is None:
        return {}
    head, data = rows[h], rows[h + 2:]  # h + 1 holds the units
    if not data:
        return {}
    out = {}
    for name, val in zip(head, data[0]):
        try:
            out[name] = float(val.replace(",", ""))
        except ValueError:
            pass
    return out


def ncu_passes(path):
    v = ncu_metrics(path).get("profiler__replayer_passes")
    return int(v) if v is not None else None


def compare(folder, tag):
    kl = json.load(open(f"{folder}/{tag}.kl.json"))
    shape = kl["shapes"][0]
    prof = shape["profile"]
    res = {"kernel": tag, "kl_time_us": shape.get("median_us"),
           "kl_passes": prof["passes"], "kl_wall_ms": prof["wall_ms"],
           "kl_init_ms": prof["init_ms"], "kl_config_ms": prof["config_ms"],
           "kl_collect_ms": prof["collect_ms"], "kl_bottleneck": prof["bottleneck"],
           "kl_metrics": len(prof["metrics"]) + len(prof.get("kernlab_only", {}))}
    diffs = {}
    for s in ("full", "basic"):
        res[f"ncu_{s}_passes"] = ncu_passes(f"{folder}/{tag}.ncu-{s}.csv")
        try:
            res[f"ncu_{s}_wall_s"] = float(open(f"{folder}/{tag}.ncu-{s}.wall").read())
        except (OSError, ValueError):
            res[f"ncu_{s}_wall_s"] = None
    ncu = ncu_metrics(f"{folder}/{tag}.ncu-full.csv")
    for name, v in prof["metrics"].items():
        if name not in ncu or v is None:
            continue
        n = ncu[name]
        if abs(n) < 1e-9 and abs(v) < 1e-3:
            d = 0.0
        elif abs(n) < 1e-9:
            d = float("inf")
        else:
            d = (v - n) / abs(n)
        diffs[name] = {"kl": v, "ncu": n, "rel": d}
    # the same kernel under CUPTI's kernel replay, where it was run
    try:
        kk = json.load(open(f"{folder}/{tag}.kl-kernel.json"))["shapes"][0]["profile"]
        within = sum(1 for name, v in kk["metrics"].items() if name in ncu and v is not None
                     and abs(ncu[name]) > 1e-9 and abs(v - ncu[name]) / abs(ncu[name]) <= 0.02)
        res["kernel_replay"] = {"collect_ms": kk["collect_ms"], "replay": kk.get("replay"),
                                "within_2pct": within}
    except (OSError, ValueError, KeyError, IndexError):
        pass
    res["shared"] = len(diffs)
    res["within_2pct"] = sum(1 for d in diffs.values() if abs(d["rel"]) <= 0.02)
    res["diffs"] = diffs
    return res


def summary(path):
    rows = [json.loads(l) for l in open(path) if l.startswith("{")]
    for r in rows:
        if "error" in r:
            print(f"{r['kernel']}: {r['error']}")
    rows = [r for r in rows if "error" not in r]
    print(f"{'kernel':34} {'kl passes':>9} {'kl ms':>7} {'config':>6} {'passes ms':>9} {'init ms':>8} "
          f"{'full p':>6} {'full s':>7} {'basic p':>7} {'basic s':>7} "
          f"{'shared':>6} {'<=2%':>5}  verdict")
    per_metric = {}
    for r in rows:
        print(f"{r['kernel']:34} {r['kl_passes']:>9} {r['kl_config_ms'] + r['kl_collect_ms']:>7.0f} "
              f"{r['kl_config_ms']:>6.0f} {r['kl_collect_ms']:>9.0f} "
              f"{r['kl_init_ms']:>8.0f} {r['ncu_full_passes'] or '-':>6} "
              f"{r['ncu_full_wall_s'] or 0:>7.2f} {r['ncu_basic_passes'] or '-':>7} "
              f"{r['ncu_basic_wall_s'] or 0:>7.2f} {r['shared']:>6} {r['within_2pct']:>5}  "
              f"{r['kl_bottleneck']}")
        if "kernel_replay" in r:
            k = r["kernel_replay"]
            print(f"{'  (CUPTI kernel replay)':34} {'':>9} {'':>7} {'':>6} {k['collect_ms']:>9.0f} "
                  f"{'':>8} {'':>6} {'':>7} {'':>7} {'':>7} {'':>6} {k['within_2pct']:>5}")
        for name, d in r["diffs"].items():
            per_metric.setdefault(name, []).append(d["rel"])
    print("\nper metric: median |relative difference| over the kernels, worst")
    for name in sorted(per_metric):
        v = [abs(x) for x in per_metric[name]]
        print(f"  {name:75} {100 * statistics.median(v):8.2f}% {100 * max(v):8.2f}%")


if __name__ == "__main__":
    if sys.argv[1] == "--summary":
        summary(sys.argv[2])
    else:
        try:
            print(json.dumps(compare(sys.argv[1], sys.argv[2])))
        except Exception as e:  # keep the other kernels going
            print(json.dumps({"kernel": sys.argv[2], "error": repr(e)}))
