"""Nsight Compute's `--csv` output (the long form: a row per launch and
metric) as the benchmarks read it: one dict per profiled launch, in launch
order, metric name -> value, times in microseconds and bytes in megabytes
(1e6), and the kernel's name under "kernel". Lines a profiled program
printed before ncu's header are skipped."""
import csv

SCALE = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0,
         "ms": 1e3, "msecond": 1e3, "byte": 1e-6, "Kbyte": 1e-3,
         "Mbyte": 1.0, "Gbyte": 1e3, "KB": 1e-3, "MB": 1.0, "GB": 1e3}


def launches(text):
    rows = list(csv.reader(text.splitlines()))
    try:
        h = next(i for i, r in enumerate(rows) if "Metric Value" in r)
    except StopIteration:
        return []
    head = rows[h]
    at = {k: head.index(k) for k in ("ID", "Metric Name", "Metric Unit",
                                      "Metric Value")}
    name = head.index("Kernel Name") if "Kernel Name" in head else None
    by_id = {}
    for r in rows[h + 1:]:
        if len(r) != len(head):
            continue
        v = float(r[at["Metric Value"]].replace(",", ""))
        v *= SCALE.get(r[at["Metric Unit"]].strip(), 1.0)
        launch = by_id.setdefault(int(r[at["ID"]]), {})
        launch[r[at["Metric Name"]]] = v
        if name is not None:
            launch["kernel"] = r[name]
    return [by_id[k] for k in sorted(by_id)]
