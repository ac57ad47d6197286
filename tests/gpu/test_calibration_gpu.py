#!/usr/bin/env python3
"""The CUPTI timer's calibration on a CUDA device (ctest label gpu; exit 77,
skipped, without one). Structure only, no timing decision:

  measured  the first kl bench on a device measures the probe kernel's
            true duration in a fresh worker and keeps it in the cache
            folder (calibration/GPU-<uuid>.json, this device's UUID and
            driver); each shape on kernel records says what its samples
            were less (offset = the probe on its records - its true
            duration; none where that is negative or more than three
            times the true duration), and the text output says it too;
            measuring is no worker restart and leaves the verdict OK
  kept      a second bench reads the kept file (not measured again: the
            file is unchanged) and carries the same true duration
  python    a Python (torch) case's shapes are calibrated alike, from the
            same file, through the Python worker
  off       KERNLAB_CALIBRATE=0: no calibration in the report; concurrent
            records (KERNLAB_TRACE=concurrent) are never calibrated
  mended    a cache file that is not what kernlab writes is measured over
usage: test_calibration_gpu.py KL SOURCE_DIR
"""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, require_cuda, scratch  # noqa: E402

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-calibration-gpu-")
require_cuda()
VECTOR_ADD = os.path.join(SRC, "cases", "vector_add")
SOFTMAX_TORCH = os.path.join(SRC, "tests", "python", "cases", "softmax_torch")


def bench(case, *args, env=None, text=False):
    cmd = [KL, "bench", case, "--time-cap-ms", "300"] + list(args)
    if not text:
        cmd.append("--json")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env or ENV,
                       timeout=600)
    print("$ kl bench %s %s -> %d" % (os.path.basename(case), " ".join(args),
                                      p.returncode), flush=True)
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-2000:])
        return None
    return p.stdout if text else json.loads(p.stdout)


def kept():
    files = glob.glob(os.path.join(ENV["KERNLAB_CACHE_DIR"], "calibration",
                                   "GPU-*.json"))
    if len(files) != 1:
        return None, None
    with open(files[0]) as f:
        return files[0], f.read()


def calibrated(doc, what):
    """Each shape's calibration, checked for its structure; the true
    durations seen."""
    seen = set()
    for s in (doc or {}).get("shapes", []):
        c = s.get("calibration")
        check(s.get("tracing") == "kernel", "%s %s: tracing %s"
              % (what, s.get("name"), s.get("tracing")))
        check(isinstance(c, dict), "%s %s: no calibration" % (what, s.get("name")))
        if not isinstance(c, dict):
            continue
        t, r, o = c["probe_true_us"], c["probe_records_us"], c["offset_us"]
        check(0.05 <= t <= 50 and r > 0, "%s: true %s, records %s" % (what, t, r))
        want = r - t if 0 < r - t <= 3 * t else 0.0
        check(abs(o - want) < 1e-3, "%s: offset %s is not records %s "
              "less true %s" % (what, o, r, t))
        seen.add(t)
    check(doc is not None and doc.get("shapes"), "%s: no shapes" % what)
    return seen


# measured: the first bench on this device
doc = bench(VECTOR_ADD, "--shape", "1M")
first = calibrated(doc, "vector_add")
check(doc is not None and doc.get("worker_restarts") == 0 and
      doc.get("verdict") == "OK",
      "the measuring bench: verdict %s, %s worker restarts"
      % ((doc or {}).get("verdict"), (doc or {}).get("worker_restarts")))
path, text = kept()
check(path is not None, "no calibration file kept")
if path:
    k = json.loads(text)
    check(k.get("kernlab_calibration") == 1 and
          os.path.basename(path) == k.get("uuid", "") + ".json" and
          isinstance(k.get("driver"), int) and k.get("driver") > 0,
          "the kept file: %s" % text)
    t = k.get("probe_true_us", 0)
    check(len(first) == 1 and abs(min(first) - t) <= 1e-5 * t,
          "the report's true duration %s, the file's %s" % (first, t))
    check(len(k.get("values_us", [])) == 9, "the file's launches: %s" % text)
out = bench(VECTOR_ADD, "--shape", "1M", text=True)
check(out is not None and "timer: kernel records less their fixed part" in out,
      "the text output does not say what the samples were less")

# kept: not measured again
doc = bench(VECTOR_ADD, "--shape", "16M")
check(calibrated(doc, "vector_add 16M") == first, "16M: another true duration")
check(kept() == (path, text), "the kept file changed on a second bench")

# python: the torch case, through the Python worker, from the same file
doc = bench(SOFTMAX_TORCH)
check(calibrated(doc, "softmax_torch") == first,
      "the Python worker's shapes: another true duration")

# off
doc = bench(VECTOR_ADD, "--shape", "1M",
            env=dict(ENV, KERNLAB_CALIBRATE="0"))
check(doc is not None and all("calibration" not in s
                              for s in doc.get("shapes", [])),
      "KERNLAB_CALIBRATE=0: a calibration in the report")
doc = bench(VECTOR_ADD, "--shape", "1M",
            env=dict(ENV, KERNLAB_TRACE="concurrent"))
for s in (doc or {}).get("shapes", []):
    c = s.get("calibration") or {}
    check(s.get("tracing") == "concurrent" and c.get("offset_us") == 0,
          "concurrent records: %s, calibration %s" % (s.get("tracing"), c))

# mended: a file kernlab did not write is measured over
if path:
    with open(path, "w") as f:
        f.write('{"kernlab_calibration":1,"probe_true_us":"fast"}')
    doc = bench(VECTOR_ADD, "--shape", "1M")
    check(len(calibrated(doc, "after a bad file")) == 1,
          "after a bad file: not calibrated")
    p2, t2 = kept()
    check(p2 == path and t2 and json.loads(t2).get("probe_true_us", 0) > 0,
          "the bad file was not measured over: %s" % t2)

if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
print("ok")
