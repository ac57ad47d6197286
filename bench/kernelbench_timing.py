#!/usr/bin/env python3
"""KernelBench's own timing next to kernlab's, on the same candidates.

For each bundled level-1 problem (bench/kernelbench/problems, written in
KernelBench's format for kernlab) and its ModelNew candidate:

  kernelbench  the protocol of KernelBench's evaluation: models built after
               torch.manual_seed(42), inputs moved to the GPU, 3 warm-up
               calls, then 100 trials each between two CUDA events with a
               synchronize after each (hot caches, no flush); the speedup is
               mean(Model) / mean(ModelNew). Repeated RKB times in this
               process: the spread of that speedup between repeats, and
               each repeat's own relative standard deviation.
  do_bench     triton.testing.do_bench on the same two models, as Triton
               users time kernels (its own warm-up and repetitions, an L2
               flush before each call, the mean), RKB times: the spread of
               that speedup between repeats.
  kernlab      `kl case from-kernelbench`, then `kl compare CASE --candidate
               FILE --json` RKL times, each a fresh process: the speedup
               with its 95% interval (cold caches, CUPTI, A B B A), the
               medians, the wall time of the command.
usage: kernelbench_timing.py KL OUT_DIR [RKB=10] [RKL=3]
KL_KB_ONLY=1_relu,5_layer_norm (problem stems) times those problems only.
"""
import glob
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import triton
import triton.testing

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_csv  # noqa: E402  (bench/ncu_csv.py)

KL, OUT = sys.argv[1], sys.argv[2]
RKB = int(sys.argv[3]) if len(sys.argv) > 3 else 10
RKL = int(sys.argv[4]) if len(sys.argv) > 4 else 3
ONLY = [s for s in os.environ.get("KL_KB_ONLY", "").split(",") if s]
HERE = os.path.dirname(os.path.abspath(__file__))
TMP = tempfile.mkdtemp(prefix="kl-kernelbench-")
ENV = dict(os.environ, KERNLAB_CACHE_DIR=os.path.join(TMP, "cache"))


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kb_time(fn, args, trials=100, warmup=3):
    """KernelBench's time_execution_with_cuda_event: ms per trial."""
    for _ in range(warmup):
        fn(*args)
        torch.cuda.synchronize()
    times = []
    for _ in range(trials):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return times


def kernelbench(problem, cand):
    p = load(problem, "kb_problem")
    c = load(cand, "kb_candidate")
    torch.manual_seed(42)
    ref = p.Model(*p.get_init_inputs()).cuda()
    torch.manual_seed(42)
    new = c.ModelNew(*p.get_init_inputs()).cuda()
    torch.manual_seed(0)
    xs = [x.cuda() if isinstance(x, torch.Tensor) else x
          for x in p.get_inputs()]
    with torch.no_grad():
        ok = torch.allclose(ref(*xs), new(*xs), atol=1e-2, rtol=1e-2)
        rows = []
        for _ in range(RKB):
            a = kb_time(ref, xs)
            b = kb_time(new, xs)
            rows.append((statistics.mean(a), statistics.stdev(a),
                         statistics.mean(b), statistics.stdev(b)))
        db = []
        for _ in range(RKB):
            t0 = time.time()
            a = triton.testing.do_bench(lambda: ref(*xs))
            b = triton.testing.do_bench(lambda: new(*xs))
            db.append((a, b, time.time() - t0))
    sp = [r[0] / r[2] for r in rows]
    dsp = [a / b for a, b, _ in db]
    return {"correct": bool(ok),
            "do_bench": {"ref_us": statistics.median(a for a, _, _ in db) * 1e3,
                         "new_us": statistics.median(b for _, b, _ in db) * 1e3,
                         "speedup_median": statistics.median(dsp),
                         "speedup_min": min(dsp), "speedup_max": max(dsp),
                         "wall_s_per_pair": statistics.median(
                             w for _, _, w in db)},
            "ref_mean_us": statistics.median(r[0] for r in rows) * 1e3,
            "new_mean_us": statistics.median(r[2] for r in rows) * 1e3,
            "ref_rsd_pct": statistics.median(100 * r[1] / r[0] for r in rows),
            "new_rsd_pct": statistics.median(100 * r[3] / r[2] for r in rows),
            "speedup_median": statistics.median(sp),
            "speedup_min": min(sp), "speedup_max": max(sp),
            "repeats": RKB}


def kernlab(problem, cand):
    case = os.path.join(TMP, os.path.basename(problem)[:-3])
    p = subprocess.run([KL, "case", "from-kernelbench", problem, "-o", case],
                       capture_output=True, text=True, env=ENV)
    if p.returncode:
        return {"error": p.stderr.strip()}
    runs = []
    for _ in range(RKL):
        t0 = time.time()
        p = subprocess.run([KL, "compare", case, "--candidate", cand,
                            "--json"], capture_output=True, text=True,
                           env=ENV, timeout=600)
        wall = time.time() - t0
        try:
            r = json.loads(p.stdout)
        except ValueError:
            return {"error": (p.stdout + p.stderr)[-600:]}
        s = (r.get("shapes") or [{}])[0]
        runs.append({"verdict": r.get("verdict"), "speedup": s.get("speedup"),
                     "ci": s.get("speedup_ci"),
                     "decision": s.get("decision"),
                     "base_us": (s.get("baseline") or {}).get("median_us"),
                     "cand_us": s.get("median_us"), "wall_s": round(wall, 1),
                     "notes": (r.get("python") or {}).get("candidate")})
    return {"runs": runs}


NCU_SCRIPT = """import importlib.util, sys, torch
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
p, c = load(sys.argv[1], "kb_problem"), load(sys.argv[2], "kb_candidate")
torch.manual_seed(42)
m = c.ModelNew(*p.get_init_inputs()).cuda()
torch.manual_seed(0)
xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in p.get_inputs()]
with torch.no_grad():
    for _ in range(int(sys.argv[3])):
        m(*xs)
torch.cuda.synchronize()
"""


def ncu_time(problem, cand, kernel):
    """ncu's median gpu__time_duration (us) of kernel over 6 launches."""
    script = os.path.join(TMP, "ncu_forward.py")
    with open(script, "w") as f:
        f.write(NCU_SCRIPT)
    p = subprocess.run(["ncu", "--clock-control", "none", "--metrics",
                        "gpu__time_duration.sum", "-k", "regex:^%s$" % kernel,
                        "--csv", sys.executable, script, problem, cand, "6"],
                       capture_output=True, text=True, timeout=300)
    vals = [x["gpu__time_duration.sum"] for x in ncu_csv.launches(p.stdout)
            if "gpu__time_duration.sum" in x]
    if not vals:
        return {"error": (p.stdout + p.stderr)[-300:]}
    return {"kernel": kernel, "median_us": statistics.median(vals),
            "launches": len(vals)}


def main():
    os.makedirs(OUT, exist_ok=True)
    dev = torch.cuda.get_device_name()
    print("== KernelBench timing vs kernlab (%s, %s)" % (
        dev, time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())))
    out = open(os.path.join(OUT, "kernelbench.jsonl"), "w")
    for problem in sorted(glob.glob(os.path.join(HERE, "kernelbench",
                                                 "problems", "*.py"))):
        stem = os.path.basename(problem)[:-3]
        if ONLY and stem not in ONLY:
            continue
        for cand in sorted(glob.glob(os.path.join(
                HERE, "kernelbench", "candidates", stem, "*.py"))):
            kb = kernelbench(problem, cand)
            kl = kernlab(problem, cand)
            jit = (((kl.get("runs") or [{}])[0].get("notes") or {})
                   .get("jit_kernels") or [])
            nc = ncu_time(problem, cand, jit[0]["kernel"]) if jit else \
                {"error": "no JIT kernel named in kernlab's notes"}
            row = {"problem": stem, "candidate": os.path.basename(cand),
                   "device": dev, "kernelbench": kb, "kernlab": kl,
                   "ncu": nc}
            out.write(json.dumps(row) + "\n")
            out.flush()
            print("%s / %s" % (stem, os.path.basename(cand)))
            print("  kernelbench: Model %.2f us (rsd %.2f%%), ModelNew %.2f us"
                  " (rsd %.2f%%); speedup median %.3f, %d repeats %.3f-%.3f"
                  % (kb["ref_mean_us"], kb["ref_rsd_pct"], kb["new_mean_us"],
                     kb["new_rsd_pct"], kb["speedup_median"], kb["repeats"],
                     kb["speedup_min"], kb["speedup_max"]))
            d = kb["do_bench"]
            print("  do_bench: Model %.2f us, ModelNew %.2f us; speedup "
                  "median %.3f, %d repeats %.3f-%.3f, %.2f s a pair"
                  % (d["ref_us"], d["new_us"], d["speedup_median"],
                     kb["repeats"], d["speedup_min"], d["speedup_max"],
                     d["wall_s_per_pair"]))
            if "error" in kl:
                print("  kernlab: ERROR %s" % kl["error"])
                continue
            for r in kl["runs"]:
                ci = r.get("ci") or [0, 0]
                print("  kernlab: %s, Model %.2f us, ModelNew %.2f us, "
                      "speedup %.3f [%.3f, %.3f] %s, %.1f s"
                      % (r["verdict"], r["base_us"] or 0, r["cand_us"] or 0,
                         r["speedup"] or 0, ci[0], ci[1], r["decision"],
                         r["wall_s"]))
            if "error" in nc:
                print("  ncu: %s" % nc["error"])
            else:
                kmed = statistics.median(r["cand_us"] or 0
                                         for r in kl["runs"])
                print("  ncu: %s %.2f us (median of %d launches); kernlab's "
                      "ModelNew median %.2f us, %+.1f%%"
                      % (nc["kernel"], nc["median_us"], nc["launches"], kmed,
                         100 * (kmed / nc["median_us"] - 1)))
            n = (kl["runs"][0].get("notes") or {})
            if n.get("shapes"):
                print("  kernlab notes: first call %.1f ms, then %.3f ms; %s"
                      % (n["shapes"][0].get("first_call_ms", 0),
                         n["shapes"][0].get("second_call_ms", 0),
                         n.get("jit_kernels")))


main()
