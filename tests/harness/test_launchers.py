#!/usr/bin/env python3
"""Candidates that own their launch (kernlab/plugin.h, kl_launch_ctx), on
the host backend (ctest label unit), and the CUDA ones built (not run) where
nvcc is installed:

  host      a launcher that splits saxpy over threads and one that uses two
            scratch regions: checked correct and timed (verdict OK); one
            that asks for a larger scratch region in every launch: CHEAT,
            gate launch_contract, exit 3
  harness   the standalone harness of the threaded launcher builds with cc
            and checks every shape correct, the embedded baseline its oracle
  dispatch  kl best --dispatch over records of a tune run plus a planted
            candidate (its own threaded launch) recorded faster at 1M and
            slower at 2M: 1M gets it, 2M the best else (evidence per
            shape), the dispatcher checks correct in kl compare, and
            kl export --kernel writes it into a C program whose saxpy call
            becomes a kernlab_launch call: the program builds and prints
            the same result
  template  kl best --dispatch of the softmax template case (records
            planted): shapes that differ only in their instantiation share
            one branch and one variant, said in the evidence; the launcher
            takes the instantiation's types and compiles (nvcc)
  rules     kl rules on a profile of two kernels: the operator's findings
            and each kernel's, by name
  cuda      every bundled CUDA candidate with its own launch generates
            plugin and standalone harnesses that nvcc compiles (the GPU
            runs them: test_launchers_gpu.py)
The host parts use host_saxpy at 1M and 2M (the bundled case's 16M
shape costs seconds a check, and only the contract is checked here).
usage: test_launchers.py KL SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import (FAILS, check, nvcc_checked, scratch,  # noqa: E402
                     small_saxpy)

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-launchers-")
SAXPY = small_saxpy(SRC, TMP + "/host_saxpy")  # at 1M and 2M, no records


def kl(*args, timeout=900):
    p = subprocess.run([KL] + list(args), capture_output=True, text=True,
                       env=ENV, timeout=timeout)
    print("$ kl %s -> %d" % (" ".join(args), p.returncode), flush=True)
    return p


def compare(case, cand):
    p = kl("compare", case, "--candidate", cand, "--json",
           "--time-cap-ms", "300")
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        return p.returncode, {"stderr": p.stderr[-600:]}


# ---- host launchers ----------------------------------------------------------
for cand in (SRC + "/cases/host_saxpy/candidates/threads_launch.c",
             SRC + "/tests/harness/launchers/scratch_ok.c"):
    rc, r = compare(SAXPY, cand)
    shapes = r.get("shapes", [])
    check(r.get("verdict") == "OK" and len(shapes) == 2 and
          all(s.get("correct") for s in shapes),
          "%s: checked correct and timed: %s" % (cand, str(r)[:600]))
rc, r = compare(SAXPY, SRC + "/tests/harness/launchers/scratch_grows.c")
check(rc == 3 and r.get("verdict") == "CHEAT" and
      r.get("gate") == "launch_contract" and
      "scratch region" in (r.get("reason") or ""),
      "a growing scratch region breaks the contract: %s" % str(r)[:600])
# the same, only once timed: the timed call's verdict, not kernlab's failure
rc, r = compare(SAXPY,
                SRC + "/tests/harness/launchers/scratch_grows_when_timed.c")
check(rc == 3 and r.get("verdict") == "CHEAT" and
      r.get("gate") == "launch_contract" and
      "while timed" in (r.get("reason") or "") and
      "the baseline" not in (r.get("reason") or "") and
      "scratch region" in (r.get("reason") or ""),
      "a scratch region grown once timed breaks the contract: %s"
      % str(r)[:600])

# ---- the standalone harness of a host launcher --------------------------------
src = TMP + "/threads.c"
p = kl("harness", SAXPY, "--candidate",
       SRC + "/cases/host_saxpy/candidates/threads_launch.c", "-o", src)
check(p.returncode == 0, "kl harness: %s" % p.stderr)
b = subprocess.run(["cc", "-O2", "-Wall", "-Werror", src, "-lm", "-o",
                    TMP + "/threads"], capture_output=True, text=True)
check(b.returncode == 0, "the standalone harness builds: %s" % b.stderr[-800:])
if b.returncode == 0:
    run = subprocess.run([TMP + "/threads"], capture_output=True, text=True,
                         timeout=300)
    lines = [json.loads(x) for x in run.stdout.splitlines() if x.strip()]
    check(run.returncode == 0 and len(lines) == 2 and
          all(x["checked"] and x["correct"] for x in lines),
          "every shape checked correct against the embedded baseline: %s"
          % run.stdout[-600:])

# ---- kl best --dispatch, measured and exported ---------------------------------
case = TMP + "/saxpy"
shutil.copytree(SAXPY, case)
p = subprocess.run([KL, "run", case, "--proposer", "tune", "--iterations", "2",
                    "--no-profile", "--json", "--time-cap", "300"],
                   capture_output=True, text=True, env=ENV, timeout=900)
check(p.returncode == 0, "a tune run: %s" % p.stderr[-600:])
sols = [json.loads(x) for x in open(case + "/solutions.jsonl")]
base = [x for x in sols if x["verdict"] == "BASELINE"][0]
# plant a timed candidate: its own launch, 40x at 1M (beyond what the tune
# run's variants can read, even on a loaded machine: one read 2.46x once,
# interval [1.27, 4.75], beating a planted 1.5x), 0.8x at 2M against the
# baseline (the records' formats: records/solutions.c, ledgers.c)
run = base["run"]
evid = "runs/%s/iter_900" % run
os.makedirs(case + "/" + evid)
shutil.copy(SRC + "/cases/host_saxpy/candidates/threads_launch.c",
            case + "/" + evid + "/kernel.c")
planted = dict(base, id=run + "/900", parent=base["id"], iteration=900,
               proposer="test", verdict="REJECTED", memo="planted",
               evidence={"dir": evid, "kernel": "kernel.c"})
with open(case + "/solutions.jsonl", "a") as f:
    f.write(json.dumps(planted) + "\n")
with open(case + "/benchmark.csv", "a") as f:
    f.write("%s,900,%s/900,1M,REJECTED,100,90,110,50,0.0,4000,40,30,50\n"
            % (run, run))
    f.write("%s,900,%s/900,2M,REJECTED,100,90,110,50,0.0,80,0.8,0.7,0.9\n"
            % (run, run))
p = kl("best", case, "--dispatch", "--json")
ev = json.loads(p.stdout or "{}")
br = {b["shape"]: b for b in ev.get("branches", [])}
check(p.returncode == 0 and br.get("1M", {}).get("id") == run + "/900" and
      br["1M"].get("own_launch") and abs(br["1M"]["speedup"] - 40) < 1e-9 and
      br["1M"]["ci"] == [30, 50] and br["1M"]["iteration"] == 900 and
      br.get("2M", {}).get("id") != run + "/900",
      "1M takes the planted candidate, 2M does not: %s" % p.stdout[-800:])
disp = TMP + "/dispatch.c"
p = kl("best", case, "--dispatch", "-o", disp)
check(p.returncode == 0 and os.path.isfile(disp), "the dispatcher is written")
p = kl("compare", case, "--candidate", disp, "--json", "--time-cap-ms", "300")
r = json.loads(p.stdout or "{}")
check(r.get("verdict") == "OK" and
      all(x.get("correct") for x in r.get("shapes", [])),
      "the dispatcher checks correct at every shape: %s" % str(r)[:600])
prog = TMP + "/prog"
os.makedirs(prog)
with open(prog + "/prog.c", "w") as f:
    f.write("""#include <stdio.h>
#include <stdlib.h>

void saxpy(float *y, const float *x, float a, int n) {
  for (int i = 0; i < n; i++)
    y[i] = a * x[i] + y[i];
}

int main(void) {
  int n = 1 << 20;
  float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
  for (int i = 0; i < n; i++)
    x[i] = (float)(i % 7), y[i] = 1.0f;
  saxpy(y, x, 2.5f, n);
  double s = 0;
  for (int i = 0; i < n; i++)
    s += y[i];
  printf("%.1f\\n", s);
  return 0;
}
""")
want = subprocess.run(["sh", "-c", "cc prog.c -o prog && ./prog"], cwd=prog,
                      capture_output=True, text=True).stdout
p = kl("export", case, "--to", prog + "/prog.c", "--kernel", disp,
       "--verify", "sh -c 'cc -Wall -Werror prog.c -o prog && ./prog'",
       "--cwd", prog, "--json")
r = json.loads(p.stdout or "{}")
check(p.returncode == 0 and r.get("result") == "kept_unmeasured",
      "the dispatcher goes into the program: %s %s" % (r, p.stderr[-600:]))
with open(prog + "/prog.c") as f:
    text = f.read()
check("kernlab_launch(y, x, 2.5f, n, kl_export_ctx())" in text and
      "int main" in text, "the call became a launcher call")
got = subprocess.run([prog + "/prog"], capture_output=True, text=True).stdout
check(got == want and got.strip(), "the program prints the same: %r %r"
      % (got, want))

# ---- a template case's dispatcher (records planted, CUDA compiled) ------------
# tests/observe/llmc/softmax_forward.cu: four shapes that differ only in
# the instantiation (the program's block size), with the same N and C: one
# problem at four geometries, which a launcher's values cannot tell apart.
# They share one branch: the variant and geometry with the least estimated
# time (baseline 200/100/80/90 us, a candidate x1.25/1.1/0.8/0.9: the
# baseline at obs3's geometry, 80 us), and the evidence says so.
tcase = TMP + "/softmax_tmpl"
p = kl("case", "from-observation",
       SRC + "/tests/observe/fixtures/llmc_softmax1_h100.json", "--source",
       SRC + "/tests/observe/llmc/softmax_forward.cu", "--entry",
       "softmax_forward_kernel", "-o", tcase)
check(p.returncode == 0, "the template case: %s" % p.stderr)
trun = "20261124-000000-t000"
for it, src_file in ((0, tcase + "/kernel.cu"), (1, SRC +
                     "/tests/observe/llmc/candidates/softmax_shuffle.cu")):
    os.makedirs("%s/runs/%s/iter_%03d" % (tcase, trun, it))
    shutil.copy(src_file, "%s/runs/%s/iter_%03d/kernel.cu" % (tcase, trun, it))
tb = dict(base, id=trun + "/000", run=trun, case="softmax_forward_kernel",
          config=[], evidence={"dir": "runs/%s/iter_000" % trun,
                               "kernel": "kernel.cu"})
tc = dict(tb, id=trun + "/001", parent=trun + "/000", iteration=1,
          proposer="test", verdict="REJECTED",
          evidence={"dir": "runs/%s/iter_001" % trun, "kernel": "kernel.cu"})
with open(tcase + "/solutions.jsonl", "w") as f:
    f.write(json.dumps(tb) + "\n" + json.dumps(tc) + "\n")
with open(tcase + "/benchmark.csv", "w") as f:
    f.write("run,iteration,id,shape,verdict,median_us,ci_low_us,ci_high_us,"
            "samples,sm_clock_mhz,against_median_us,speedup,speedup_ci_low,"
            "speedup_ci_high\n")
    for sh, us in (("obs1", 200), ("obs2", 100), ("obs3", 80),
                   ("obs4", 90)):
        f.write("%s,0,%s/000,%s,BASELINE,%d,%d,%d,50,0.0,,,,\n"
                % (trun, trun, sh, us, us - 5, us + 5))
    for sh, x in (("obs1", 1.25), ("obs2", 1.1), ("obs3", 0.8),
                  ("obs4", 0.9)):
        f.write("%s,1,%s/001,%s,REJECTED,100,90,110,50,0.0,100,%g,%g,%g\n"
                % (trun, trun, sh, x, x - 0.01, x + 0.01))
p = kl("best", tcase, "--dispatch", "--json")
ev = json.loads(p.stdout or "{}")
br = ev.get("branches", [])
check(p.returncode == 0 and len(br) == 4 and
      len({b["id"] for b in br}) == 1 and br[0]["baseline"] and
      [b.get("same_values_as") for b in br] == ["obs1"] * 4 and
      [b.get("geometry_of") for b in br] == ["obs3"] * 4 and
      [round(b["speedup"], 3) for b in br] == [2.5, 1.25, 1.0, 1.125],
      "shapes with the same values share the fastest variant and geometry: "
      "%s" % p.stdout[-800:])
tdisp = TMP + "/softmax_dispatch.cu"
p = kl("best", tcase, "--dispatch", "-o", tdisp)
text = open(tdisp).read() if p.returncode == 0 else ""
check("kernlab_launch(float *out, const float *inp, int N, int C, "
      "const kl_launch_ctx *ctx)" in text,
      "the dispatcher takes the instantiation's types: %s" % text[-600:])

# ---- kl rules on each kernel of a launch -------------------------------------
with open(SRC + "/tests/profile/fixtures/vector_add.64M.json") as f:
    prof = json.load(f)
prof["parts"] = [dict(prof, name="partial_sums"), dict(prof, name="finish")]
with open(TMP + "/parts.json", "w") as f:
    json.dump(prof, f)
p = kl("rules", "--metrics", TMP + "/parts.json", "--json")
d = json.loads(p.stdout or "{}")
check(p.returncode == 0 and [k.get("kernel") for k in d.get("kernels", [])] ==
      ["partial_sums", "finish"] and
      all(k.get("fired") for k in d["kernels"]) and d.get("fired"),
      "the rules run on the operator and on each kernel: %s" % p.stdout[:400])
p = kl("rules", "--metrics", TMP + "/parts.json")
check("kernel partial_sums: memory_bound" in p.stdout and
      "kernel finish: memory_bound" in p.stdout, "and say so: %s"
      % p.stdout[-400:])

# ---- CUDA launchers: generated and compiled -----------------------------------
nvcc = shutil.which("nvcc") or (
    "/usr/local/cuda/bin/nvcc"
    if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)
CUDA = [("softmax_f32", "cases/softmax_f32/candidates/block_per_row_launch.cu"),
        ("rmsnorm_bf16", "cases/rmsnorm_bf16/candidates/warp_per_row_launch.cu"),
        ("reduce_sum_f32", "cases/reduce_sum_f32/candidates/split_two_kernels.cu"),
        ("vector_add", "cases/vector_add/candidates/persistent_launch.cu"),
        ("transpose_f32", "cases/transpose_f32/candidates/tiled_launch.cu")]
if nvcc is None:
    print("nvcc not found: the CUDA launchers were not compiled")
else:
    for case, cand in CUDA:
        for form in ("--plugin", "--standalone"):
            out = "%s/%s%s.cu" % (TMP, case, form)
            p = kl("harness", SRC + "/cases/" + case, "--candidate",
                   SRC + "/" + cand, form, "-o", out)
            check(p.returncode == 0, "kl harness %s: %s" % (cand, p.stderr))
            rc, err = nvcc_checked([nvcc, "-arch=sm_90", "-c", out, "-o",
                                    out + ".o"], out, scratch=TMP)
            check(rc == 0, "%s %s compiles: %s" % (cand, form, err[-800:]))
    if text:  # the template case's dispatcher, in its harness
        out = TMP + "/softmax_dispatch_harness.cu"
        p = kl("harness", tcase, "--candidate", tdisp, "--plugin", "-o", out)
        rc, err = nvcc_checked([nvcc, "-arch=sm_90", "-I", tcase, "-c", out,
                                "-o", out + ".o"], out, [tcase], scratch=TMP)
        check(p.returncode == 0 and rc == 0,
              "the template dispatcher compiles: %s %s" % (p.stderr,
                                                           err[-800:]))

print("%d failures" % len(FAILS))
sys.exit(1 if FAILS else 0)
