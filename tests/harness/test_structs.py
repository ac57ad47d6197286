#!/usr/bin/env python3
"""Kernels that take a struct by value (docs/case-format.md, "Structs passed
by value"), without a GPU (ctest label unit; the CUDA program runs in
tests/observe/test_llmc_gpu.py):

  host      tests/harness/structs/host_axpby: axpby(w, axpby_args a), the
            struct defined in kernel.c holding two buffers and three
            scalars; kl check lists its fields; a candidate checks correct
            and is timed, one that reads the wrong field is INCORRECT
  harness   the standalone harness of the candidate (which defines the
            struct and the helper `term` too) builds with cc -Wall -Werror:
            every top-level name of the embedded baseline is renamed;
            every shape checks correct
  dispatch  kl best --dispatch over a tune run plus a planted candidate
            (both define the struct): one definition in the dispatcher, the
            branches test the fields (a.n == ...), and it checks correct
  observe   the recorded observation of tests/observe/llmc/residual_forward
            (a ResidualParams struct with padding, on an H100) becomes a
            case whose params are the struct's fields, each pointer's
            allocation read inside the struct; the case's harnesses with a
            launcher taking the struct compile with nvcc where it is
            installed; a struct whose layout disagrees with the observed
            size, and one with an array member, are one-line errors
usage: test_structs.py KL SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, nvcc_checked, scratch  # noqa: E402

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-structs-")
HOST = SRC + "/tests/harness/structs/host_axpby"


def kl(*args, timeout=900):
    p = subprocess.run([KL] + list(args), capture_output=True, text=True,
                       env=ENV, timeout=timeout)
    print("$ kl %s -> %d" % (" ".join(args), p.returncode), flush=True)
    return p


def compare(case, cand):
    p = kl("compare", case, "--candidate", cand, "--json", "--time-cap-ms",
           "300")
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        return p.returncode, {"stderr": p.stderr[-600:]}


# ---- a host kernel taking a struct -------------------------------------------
p = kl("check", HOST)
check(p.returncode == 0 and "a          axpby_args, by value:" in p.stdout and
      "a.beta     f32 (from each shape)" in p.stdout,
      "kl check lists the struct's fields: %s" % p.stdout[-800:])
p = kl("check", HOST, "--json")
params = json.loads(p.stdout or "{}").get("case", {}).get("params", [])
check([x["name"] for x in params] == ["w", "a.y", "a.x", "a.alpha", "a.beta",
                                      "a.n"] and
      [x.get("struct") for x in params] == [None] + ["axpby_args"] * 5,
      "the fields are params named a.FIELD: %s" % params)
rc, r = compare(HOST, HOST + "/candidates/unrolled.c")
check(rc == 0 and r.get("verdict") == "OK" and len(r.get("shapes", [])) == 2
      and all(s.get("correct") for s in r["shapes"]),
      "a candidate taking the struct checks correct: %s" % str(r)[:600])
rc, r = compare(HOST, HOST + "/candidates/wrong_beta.c")
check(rc != 0 and r.get("verdict") == "INCORRECT" and
      "a.y" in str(r.get("reason")),
      "the wrong field is found out, the buffer named: %s" % str(r)[:600])

# ---- its standalone harness ----------------------------------------------------
src = TMP + "/unrolled.c"
p = kl("harness", HOST, "--candidate", HOST + "/candidates/unrolled.c", "-o",
       src)
check(p.returncode == 0, "kl harness: %s" % p.stderr)
text = open(src).read() if p.returncode == 0 else ""
check("#define axpby_args klh_baseline_axpby_args" in text and
      "#define term klh_baseline_term" in text and
      "static klh_baseline_axpby_args klh_baseline_make_a(" in text,
      "the embedded baseline's struct is renamed")
b = subprocess.run(["cc", "-O2", "-Wall", "-Werror", src, "-lm", "-o",
                    TMP + "/unrolled"], capture_output=True, text=True)
check(b.returncode == 0, "the standalone harness builds: %s" % b.stderr[-800:])
if b.returncode == 0:
    run = subprocess.run([TMP + "/unrolled"], capture_output=True, text=True,
                         timeout=300)
    lines = [json.loads(x) for x in run.stdout.splitlines() if x.strip()]
    check(run.returncode == 0 and len(lines) == 2 and
          all(x["checked"] and x["correct"] for x in lines),
          "every shape checked correct against the embedded baseline: %s"
          % run.stdout[-600:])

# ---- the dispatcher passes the struct on ----------------------------------------
case = TMP + "/axpby"
shutil.copytree(HOST, case, ignore=shutil.ignore_patterns("candidates"))
p = subprocess.run([KL, "run", case, "--proposer", "tune", "--iterations", "1",
                    "--no-profile", "--json", "--time-cap", "300"],
                   capture_output=True, text=True, env=ENV, timeout=900)
check(p.returncode == 0, "a tune run: %s" % p.stderr[-600:])
sols = [json.loads(x) for x in open(case + "/solutions.jsonl")]
base = [x for x in sols if x["verdict"] == "BASELINE"][0]
run = base["run"]
evid = "runs/%s/iter_900" % run
os.makedirs(case + "/" + evid)
shutil.copy(HOST + "/candidates/unrolled.c", case + "/" + evid + "/kernel.c")
planted = dict(base, id=run + "/900", parent=base["id"], iteration=900,
               proposer="test", verdict="REJECTED", memo="planted",
               evidence={"dir": evid, "kernel": "kernel.c"})
with open(case + "/solutions.jsonl", "a") as f:
    f.write(json.dumps(planted) + "\n")
with open(case + "/benchmark.csv", "a") as f:
    f.write("%s,900,%s/900,s1M,REJECTED,100,90,110,50,0.0,150,1.5,1.3,1.7\n"
            % (run, run))
    f.write("%s,900,%s/900,s4k,REJECTED,100,90,110,50,0.0,80,0.8,0.7,0.9\n"
            % (run, run))
disp = TMP + "/dispatch.c"
p = kl("best", case, "--dispatch", "-o", disp)
check(p.returncode == 0, "kl best --dispatch: %s" % p.stderr[-600:])
text = open(disp).read() if p.returncode == 0 else ""
check(text.count("typedef struct axpby_args {") == 1 and
      "a.n == 1048576LL" in text and "axpby_args a" in text,
      "one definition of the struct, branches on its fields: %s" % text[-1500:])
rc, r = compare(case, disp)
check(rc == 0 and r.get("verdict") == "OK" and
      all(s.get("correct") for s in r.get("shapes", [])),
      "the dispatcher checks correct at every shape: %s" % str(r)[:600])

# ---- a CUDA program's params struct, from its observation ------------------------
FX = SRC + "/tests/observe/fixtures/llmc_residual1_h100.json"
LLMC = SRC + "/tests/observe/llmc"
case = TMP + "/residual"
p = kl("case", "from-observation", FX, "--source",
       LLMC + "/residual_forward.cu", "--entry", "residual_forward_kernel1",
       "-o", case)
check(p.returncode == 0, "from-observation: %s" % p.stderr)
y = open(case + "/case.yaml").read() if p.returncode == 0 else ""
check("  - name: p\n    type: ResidualParams  # passed by value\n"
      "    fields:\n"
      "      - { name: out, type: f32*, role: inout, count: p.N }" in y and
      "      - { name: N, type: i32 }\n" in y and
      "p.N: 6291456, p.scale: 0.5 }" in y and
      "struct ResidualParams {" in open(case + "/kernel.cu").read(),
      "the struct's members are the case's params: %s" % y)
p = kl("check", case, "--json")
params = json.loads(p.stdout or "{}").get("case", {}).get("params", [])
check(p.returncode == 0 and [x["name"] for x in params] ==
      ["p.out", "p.N", "p.inp1", "p.inp2", "p.scale"] and
      [x["pointer"] for x in params] == [True, False, True, True, False],
      "kl check: %s" % p.stdout[-600:])
nvcc = shutil.which("nvcc") or (
    "/usr/local/cuda/bin/nvcc"
    if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)
if nvcc and p.returncode == 0:
    for cand in (None, LLMC + "/candidates/residual_vec4_launch.cu"):
        for form in ("--plugin", "--standalone"):
            out = "%s/residual%s%s.cu" % (TMP, form, "_vec4" if cand else "")
            args = ["harness", case, form, "-o", out]
            if cand:
                args += ["--candidate", cand]
            p = kl(*args)
            check(p.returncode == 0, "kl harness %s: %s" % (form, p.stderr))
            rc, err = nvcc_checked([nvcc, "-arch=sm_90", "-I", case, "-c",
                                    out, "-o", out + ".o"], out, [case],
                                   scratch=TMP)
            check(rc == 0, "%s %s compiles: %s" % (cand, form, err[-800:]))
else:
    print("nvcc not found: the struct harnesses were not compiled")

# a struct that is not the one the program passed
for name, edit, want in (
        ("short", ("  float scale;\n", ""),
         "takes 32 bytes as its members are laid out; the observed argument "
         "1 had 40"),
        ("array", ("  float scale;\n", "  float scale[2];\n"),
         "is an array or a reference")):
    d = "%s/src_%s" % (TMP, name)
    shutil.copytree(LLMC, d, ignore=shutil.ignore_patterns("candidates",
                                                           "replies"))
    with open(d + "/residual_forward.cu") as f:
        t = f.read()
    with open(d + "/residual_forward.cu", "w") as f:
        f.write(t.replace(*edit))
    p = kl("case", "from-observation", FX, "--source",
           d + "/residual_forward.cu", "--entry", "residual_forward_kernel1",
           "-o", "%s/case_%s" % (TMP, name))
    check(p.returncode == 2 and want in p.stderr and
          "residual_forward.cu:" in p.stderr and
          len(p.stderr.strip().splitlines()) == 1,
          "%s: one located line: %s" % (name, p.stderr))

print("%d failures" % len(FAILS))
sys.exit(1 if FAILS else 0)
