#!/usr/bin/env python3
"""Nsight Compute's reports as kl rules input, on a CUDA device with ncu
(ctest label gpu; exit 77, skipped, without either): the standalone
harness of the naive transpose is profiled by ncu --set full into an
.ncu-rep; `kl rules CASE --shape square4k --metrics report.ncu-rep` (read
through ncu --import), the same report's --page raw and --page details
CSV exports, and `kl rules CASE --shape square4k` (kernlab profiling the
kernel itself) give the same verdict; the raw page and the report fire
the same rules as kernlab's own profile; the details page fires a subset
and passes nothing kernlab fires; the report carries ncu's advice and
names the agreements; --kernel picks by name. Also the quick set's verdict
on the same kernel is the standard set's.
usage: test_ncu_gpu.py KL SOURCE_DIR"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import (FAILS, check, kl_runner, require_cuda,  # noqa: E402
                     scratch)

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-ncu-gpu-")
require_cuda("ncu", "nvcc")

kl, kljson = kl_runner(KL, ENV)
case = os.path.join(SRC, "cases", "transpose_f32")
harness = os.path.join(TMP, "transpose.cu")
binary = os.path.join(TMP, "transpose")
report = os.path.join(TMP, "transpose.ncu-rep")
check(kl("harness", case, "-o", harness).returncode == 0, "kl harness")
subprocess.run(["nvcc", "-O3", "-arch=sm_90", harness, "-o", binary], check=True)
# the harness launches the entry 25 times per shape; square4k is shape 1
p = subprocess.run(["ncu", "--set", "full", "--clock-control", "none", "-k",
                    "regex:^transpose$", "--launch-skip", "25", "--launch-count",
                    "1", "-f", "-o", report[:-len(".ncu-rep")], binary],
                   capture_output=True, text=True, env=ENV)
check(p.returncode == 0 and os.path.exists(report),
      "ncu wrote the report: %s" % p.stderr[-400:])
for page, extra in (("raw", ["--print-units", "base"]), ("details", [])):
    with open(os.path.join(TMP, "transpose.%s.csv" % page), "w") as f:
        subprocess.run(["ncu", "--import", report, "--csv", "--page", page] + extra,
                       stdout=f, check=True, env=ENV)


def rules(*args):
    rc, d, err = kljson("rules", case, "--shape", "square4k", "--json", *args)
    check(rc == 0, "kl rules %s: %s" % (" ".join(args), err))
    return d


def fired(d):
    return sorted(f["id"] for f in d.get("fired", []))


own = rules()
rep = rules("--metrics", report)
raw = rules("--metrics", os.path.join(TMP, "transpose.raw.csv"))
det = rules("--metrics", os.path.join(TMP, "transpose.details.csv"))
print("kernlab:", own.get("bottleneck"), fired(own))
for name, d in (("report", rep), ("raw", raw), ("details", det)):
    print("%-8s" % name, d.get("bottleneck"), fired(d),
          "not evaluated:", [u["id"] for u in d.get("not_evaluated", [])])
    check(d.get("bottleneck") == own.get("bottleneck"),
          "%s: the verdict is kernlab's own (%s, %s)" %
          (name, d.get("bottleneck"), own.get("bottleneck")))
check(fired(rep) == fired(own), "the report fires what kernlab's profile fires")
check(fired(raw) == fired(own), "the raw page fires what kernlab's profile fires")
check(set(fired(det)) <= set(fired(own)), "the details page fires a subset")
passed = set(det.get("passed", []))
check(not (passed & set(fired(own))),
      "the details page passes nothing kernlab fires: %s" % (passed & set(fired(own))))
advice = rep.get("ncu_advice", [])
check(len(advice) >= 3, "the report brings ncu's advice (%d)" % len(advice))
check(any(a.get("agrees") for a in advice), "some of it agrees with a fired rule")
print("ncu advice:", [(a["rule"], a.get("speedup_pct"), a.get("agrees")) for a in advice])
check(kl("rules", "--metrics", report, "--kernel", "transpose").returncode == 0,
      "--kernel transpose picks it")
check(kl("rules", "--metrics", report, "--kernel", "nope").returncode == 2,
      "--kernel nope: exit 2")

rc, q, err = kljson("profile", case, "--shape", "square4k", "--set", "quick", "--json")
check(rc == 0, "kl profile --set quick: %s" % err)
qp = q["shapes"][0]["profile"] if q.get("shapes") else {}
print("quick:", qp.get("passes"), "passes,", qp.get("verdict"))
check(qp.get("bottleneck") == own.get("bottleneck"),
      "the quick set's verdict is the standard set's (%s, %s)" %
      (qp.get("bottleneck"), own.get("bottleneck")))
check(qp.get("passes", 99) <= 3, "the quick set takes at most 3 passes")
sys.exit(1 if FAILS else 0)
