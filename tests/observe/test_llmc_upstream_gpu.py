#!/usr/bin/env python3
"""llm.c's own dev/cuda programs, unmodified (tests/observe/llmc-upstream:
layernorm_forward.cu, gelu_forward.cu and softmax_forward.cu with llm.c's
common.h and Makefile, MIT, from karpathy/llm.c), taken all the way round
with no hand edit, on a CUDA device (ctest label gpu; exit 77, skipped,
without one):

  observe   each program at one version, built by its own Makefile (which
            links cuBLAS: common.h calls it): the observation lists the CUDA
            libraries the process had loaded
  case      kl case from-observation: target.libs names cuBLAS, kl check
            and kl bench pass (the plugin links what common.h calls)
  harness   the standalone harness of each case, with one of llm.c's other
            versions as the candidate beside the embedded baseline (both
            include common.h, which has no include guard), builds with the
            line it prints and runs
  run       layernorm: kl run whose model replies are llm.c's own other
            versions (2: three kernels; 3, 4, 5, 6: one each), cut from the
            file as written with a kernlab_launch calling llm.c's launcher:
            none fails to compile or check, one at least is accepted
  dispatch  kl best --dispatch, measured against the baseline (kl compare)
  export    the dispatcher (layernorm) and llm.c's faster version (gelu,
            softmax) into a copy of the program, rebuilt by its own `make`,
            which validates against its CPU reference: kept, engaged (the
            exported kernels launched where the entry was, as often), the
            forecast printed beside the measured change
  cuBLAS    tests/observe/cublas_app: a GEMM through cuBLASLt beside a
            bias+GELU kernel of the program's own (one thread per row): the
            observation lists cuBLASLt, the case links it (its kernel.cu
            holds the GEMM helper), a candidate owning its launch (one
            coalesced elementwise pass of float4) is faster, and exported
            its kernel bias_gelu_flat is seen launched as often as the
            entry was: kept, engaged, the forecast (the kernel is about half
            the program's GPU time) beside the measured change
usage: test_llmc_upstream_gpu.py KL SOURCE_DIR
(KL_OBSERVE_FIXTURE_OUT=DIR keeps the observations; KL_BENCH_OUT=FILE
appends the numbers, for bench/README.md.)
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import (FAILS, check, fake_llm, require_cuda,  # noqa: E402
                     scratch)

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-llmc-up-")
require_cuda("nvcc")
NUMBERS = []


def kl(*args, env=None, timeout=1200):
    p = subprocess.run([KL] + list(args), capture_output=True, text=True,
                       env=env or ENV, timeout=timeout)
    print("$ kl %s -> %d" % (" ".join(args), p.returncode), flush=True)
    return p


def kljson(*args, env=None):
    p = kl(*(list(args) + ["--json"]), env=env)
    try:
        return p, json.loads(p.stdout or "{}")
    except ValueError:
        return p, {}


def blank(text):
    """text with its comments made spaces (newlines kept)."""
    return re.sub(r"//[^\n]*|/\*.*?\*/",
                  lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                  flags=re.S)


def functions(text, names):
    """The definitions of `names` in text, as written."""
    clean, out = blank(text), []
    for name in names:
        m = re.search(r"^(?:__global__\s+|__device__\s+)?(?:void|float|int)\s+" +
                      re.escape(name) + r"\s*\(", clean, re.M)
        if not m:
            sys.exit("llm.c's file has no function %s" % name)
        depth, j = 0, clean.index("{", m.end())
        for j in range(j, len(clean)):
            depth += (clean[j] == "{") - (clean[j] == "}")
            if depth == 0:
                break
        out.append(text[m.start():j + 1])
    return out


def llmc_kernel(source, names, launch):
    """A kernel file of llm.c's own code: the file's preprocessor lines up
    to its functions, `names` cut from it as written, and a kernlab_launch
    whose body is `launch` (a call of llm.c's launcher)."""
    text = open(source).read()
    head = []
    for line in blank(text).split("\n"):
        if re.match(r"\s*(__global__|void|float|int|template)\b", line):
            break
        if re.match(r"\s*#\s*(include|define)\b", line):
            head.append(line)
    return "%s\n\n%s\n\n%s\n" % ("\n".join(head),
                                 "\n\n".join(functions(text, names)), launch)


def reply(source, names, launch):
    """A model's reply: prose, then the code with the memo line the prompt
    asks for."""
    return ("llm.c's own %s, as written in %s, called by a launcher.\n\n"
            "```cuda\n// MEMO: llm.c's %s\n%s```\n" % (
                ", ".join(names), os.path.basename(source), names[-1],
                llmc_kernel(source, names, launch)))


prog = TMP + "/llmc"
shutil.copytree(SRC + "/tests/observe/llmc-upstream", prog)
b = subprocess.run(["make", "-s", "layernorm_forward", "gelu_forward",
                    "softmax_forward"], cwd=prog, capture_output=True,
                   text=True)
check(b.returncode == 0, "llm.c's Makefile builds them: %s" % b.stderr[-800:])

LN = ("extern \"C\" void kernlab_launch(float* out, float* mean, float* rstd, "
      "const float* inp, const float* weight, const float* bias, int N, int C, "
      "const kl_launch_ctx *ctx) {\n    layernorm_forward%s(out, mean, rstd, "
      "inp, weight, bias, 1, N, C, %d);\n}")
GELU = ("extern \"C\" void kernlab_launch(floatX* out, const floatX* inp, "
        "int N, const kl_launch_ctx *ctx) {\n    gelu_forward2(out, inp, N, "
        "128);\n}")
SOFTMAX = ("extern \"C\" void kernlab_launch(float* out, const float* inp, "
           "int N, int C, const kl_launch_ctx *ctx) {\n    softmax_forward7("
           "out, inp, N, C, 512);\n}")
PROGRAMS = [  # program, version observed, entry, candidate (names, launcher)
    ("layernorm_forward", "1", "layernorm_forward_kernel1",
     (["layernorm_forward_kernel3", "layernorm_forward3"], LN % ("3", 256))),
    ("gelu_forward", "1", "gelu_forward_kernel1",
     (["gelu_forward_kernel2", "gelu_forward2"], GELU)),
    ("softmax_forward", "4", "softmax_forward_kernel4",
     (["warpReduceMax", "softmax_forward_kernel7", "softmax_forward7"],
      SOFTMAX)),
]
cases, cands, observed = {}, {}, {}
for name, version, entry, (names, launch) in PROGRAMS:
    obs = "%s/obs_%s.json" % (TMP, name)
    p = kl("observe", "-o", obs, "--", prog + "/" + name, version)
    check(p.returncode == 0, "kl observe %s: %s" % (name, p.stderr[-800:]))
    if os.environ.get("KL_OBSERVE_FIXTURE_OUT"):
        shutil.copy(obs, os.path.join(os.environ["KL_OBSERVE_FIXTURE_OUT"],
                                      "llmc_upstream_%s%s.json" % (name,
                                                                   version)))
    o = json.load(open(obs)) if p.returncode == 0 else {}
    libs = " ".join(o.get("libraries", []))
    check("libcublas" in libs, "the observation lists cuBLAS: %s" % libs)
    observed[name] = o
    show = kl("observe", "--show", obs)
    print(show.stdout[:1500])
    case = "%s/case_%s" % (TMP, name)
    p = kl("case", "from-observation", obs, "--source",
           "%s/%s.cu" % (prog, name), "--entry", entry, "-o", case)
    check(p.returncode == 0, "from-observation %s: %s" % (entry, p.stderr))
    y = open(case + "/case.yaml").read() if p.returncode == 0 else ""
    check(re.search(r"libs: \[.*cublas", y), "target.libs has cuBLAS: %s" %
          y[:800])
    p, c = kljson("check", case)
    check(p.returncode == 0, "kl check %s: %s" % (entry, p.stdout[-600:]))
    p, r = kljson("bench", case, "--time-cap-ms", "300")
    check(p.returncode == 0 and r.get("verdict") in ("OK", None),
          "kl bench %s links and runs: %s" % (entry, p.stderr[-800:]))
    cases[name] = case
    kfile = "%s/%s_candidate.cu" % (TMP, name)
    with open(kfile, "w") as f:
        f.write(llmc_kernel("%s/%s.cu" % (prog, name), names, launch))
    cands[name] = kfile

    # the standalone harness: baseline and candidate both include common.h
    h = case + "/harness.cu"
    p = kl("harness", case, "--candidate", kfile, "--standalone", "-o", h)
    check(p.returncode == 0, "kl harness %s: %s" % (name, p.stderr))
    text = open(h).read() if p.returncode == 0 else ""
    m = re.search(r"Build and run: (.*)", text)
    check(m, "the harness prints its build line")
    if m:
        line = m.group(1).replace("harness.cu", "harness.cu").strip()
        hb = subprocess.run(["sh", "-c", line], cwd=case, capture_output=True,
                            text=True, timeout=900)
        check(hb.returncode == 0, "the standalone harness of %s builds and "
              "runs with its own line (%s): %s" % (name, line,
                                                   (hb.stdout + hb.stderr)[-1500:]))

# ---- layernorm: llm.c's versions as the model's replies --------------------
replies = TMP + "/replies"
os.makedirs(replies)
src = prog + "/layernorm_forward.cu"
for i, (names, ver, bs) in enumerate([
        (["mean_kernel", "rstd_kernel", "normalization_kernel",
          "layernorm_forward2"], "2", 256),
        (["layernorm_forward_kernel3", "layernorm_forward3"], "3", 256),
        (["layernorm_forward_kernel4", "layernorm_forward4"], "4", 256),
        (["layernorm_forward_kernel5", "layernorm_forward5"], "5", 256),
        (["layernorm_forward_kernel5", "layernorm_forward_kernel6",
          "layernorm_forward6"], "6", 256)]):
    with open("%s/%03d.txt" % (replies, i + 1), "w") as f:
        f.write(reply(src, names, LN % (ver, bs)))
case = cases["layernorm_forward"]
srv, port, config = fake_llm(SRC, TMP, ENV, replies, "sk-fake-llmc-up")
try:
    env = dict(ENV, KL_CONFIG=config, ANTHROPIC_API_KEY="sk-fake-llmc-up")
    p, s = kljson("run", case, "--iterations", "5", "--no-profile", "--seed",
                  "5", env=env)
    print(p.stdout[-1500:], p.stderr[-2500:])
    v = s.get("verdicts", {})
    check(p.returncode == 0 and v.get("ACCEPTED", 0) >= 1 and
          not any(v.get(k) for k in ("INCORRECT", "COMPILE_ERROR", "CRASHED",
                                     "CHEAT")),
          "llm.c's versions compile and check, one at least accepted: %s" % v)
    NUMBERS.append("run: %s, best x%s" % (v, s.get("best_speedup")))
finally:
    srv.kill()

disp = TMP + "/dispatch.cu"
p = kl("best", case, "--dispatch", "-o", disp)
check(p.returncode == 0, "kl best --dispatch: %s" % p.stderr[-600:])
print(kl("best", case, "--dispatch", "--json").stdout)


def compared(case, kernel, what):
    p, r = kljson("compare", case, "--candidate", kernel, "--time-cap-ms",
                  "1000")
    shapes = r.get("shapes", [])
    check(p.returncode == 0 and r.get("verdict") == "OK" and shapes and
          all(x.get("correct") for x in shapes),
          "%s checks correct at every shape: %s" % (what, str(r)[:800]))
    o = r.get("objective") or {}
    print(what, "objective", o)
    s = o.get("speedup") or o.get("geomean_speedup")
    lo, hi = o.get("speedup_ci") or o.get("ci") or [None, None]
    NUMBERS.append("%s: kl compare x%s [%s, %s]" % (what, s, lo, hi))
    return s, lo, hi


def export(name, case, kernel, speed, repeat):
    """Into a copy of the program, rebuilt by its own `make NAME`; each
    observed run validates the program against its CPU reference (it exits
    1 on a mismatch, which fails the observation)."""
    copy = "%s/export_%s" % (TMP, name)
    shutil.copytree(prog, copy)
    s, lo, hi = speed
    args = ["export", case, "--to", "%s/%s.cu" % (copy, name), "--kernel",
            kernel, "--verify", "make -s %s" % name,
            "--observe", "./%s %s" % (name, VERSIONS[name]), "--repeat",
            str(repeat), "--cwd", copy]
    if s and lo and hi:
        args += ["--speedup", "%g,%g,%g" % (s, min(lo, s), max(hi, s))]
    p, r = kljson(*args)
    print(p.stderr[-2500:])
    check(p.returncode == 0 and r.get("result") == "kept" and
          r.get("engaged") is True and r.get("program_speedup", 0) > 1.0,
          "%s in the program: kept, engaged, faster: %s" % (name, r))
    check(r.get("forecast") is not None and "forecast:" in p.stderr,
          "the forecast is printed beside the measurement: %s" % r)
    NUMBERS.append(
        "%s export: %s, kernel x%.3f, program GPU time x%s [%s, %s], forecast "
        "x%s [%s, %s], share %s" % (
            name, r.get("result"), r.get("speedup") or 0,
            r.get("program_speedup"), r.get("program_speedup_low"),
            r.get("program_speedup_high"), r.get("forecast"),
            r.get("forecast_low"), r.get("forecast_high"),
            r.get("entry_share")))


VERSIONS = {n: v for n, v, _, _ in PROGRAMS}
export("layernorm_forward", case, disp, compared(case, disp, "dispatcher"), 2)
for name in ("gelu_forward", "softmax_forward"):
    export(name, cases[name], cands[name],
           compared(cases[name], cands[name], name + " candidate"), 1)

# an export the program never runs: built into another binary than the one
# observed, the old kernel keeps launching, and the export is not engaged
copy = TMP + "/stale"
shutil.copytree(prog, copy)
p, r = kljson("export", cases["gelu_forward"], "--to", copy + "/gelu_forward.cu",
              "--kernel", cands["gelu_forward"], "--verify", "true",
              "--observe", "./gelu_forward 1", "--repeat", "1", "--cwd", copy)
check(p.returncode == 3 and r.get("result") == "not_engaged",
      "a stale binary: not engaged, rolled back: %s %s" % (r, p.stderr[-600:]))

# ---- a program that links cuBLAS for real ----------------------------------------
app = TMP + "/cublas_app"
shutil.copytree(SRC + "/tests/observe/cublas_app", app)
b = subprocess.run(["make", "-s"], cwd=app, capture_output=True, text=True)
check(b.returncode == 0, "the cuBLAS program builds: %s" % b.stderr[-800:])
obs = TMP + "/obs_cublas.json"
p = kl("observe", "-o", obs, "--", app + "/gemm_gelu", "50")
check(p.returncode == 0, "kl observe gemm_gelu: %s" % p.stderr[-800:])
o = json.load(open(obs)) if p.returncode == 0 else {}
check("libcublasLt" in " ".join(o.get("libraries", [])),
      "the observation lists cuBLASLt: %s" % o.get("libraries"))
print(kl("observe", "--show", obs).stdout[:2500])
case = TMP + "/case_cublas"
p = kl("case", "from-observation", obs, "--source", app + "/gemm_gelu.cu",
       "--entry", "bias_gelu_rows", "-o", case)
check(p.returncode == 0, "from-observation bias_gelu_rows: %s" % p.stderr)
y = open(case + "/case.yaml").read() if p.returncode == 0 else ""
check(re.search(r"libs: \[.*cublasLt", y), "target.libs: cublasLt: %s" % y[:600])
p, r = kljson("bench", case, "--time-cap-ms", "300")
check(p.returncode == 0, "kl bench links cuBLASLt: %s" % p.stderr[-800:])
cand = SRC + "/tests/observe/cublas_app/candidates/bias_gelu_flat.cu"
h = case + "/harness.cu"
p = kl("harness", case, "--candidate", cand, "--standalone", "-o", h)
m = re.search(r"Build and run: (.*)", open(h).read() if p.returncode == 0
              else "")
hb = subprocess.run(["sh", "-c", m.group(1)], cwd=case, capture_output=True,
                    text=True, timeout=900) if m else None
check(hb is not None and hb.returncode == 0 and "-lcublasLt" in m.group(1),
      "the cuBLAS case's standalone harness builds and runs: %s" %
      ((hb.stdout + hb.stderr)[-1200:] if hb else p.stderr))
speed = compared(case, cand, "bias_gelu_rows (one float4 pass)")
VERSIONS["gemm_gelu"] = "50"
prog_saved, prog = prog, app
export("gemm_gelu", case, cand, speed, 2)
prog = prog_saved
r = [json.loads(x) for x in open(case + "/export.jsonl")][-1]
check(r.get("exported_kernels") == ["bias_gelu_flat"] and
      0.2 < (r.get("entry_share") or 0) < 0.9,
      "the exported kernel is seen by name; the entry is part of the "
      "program's GPU time beside the GEMM: %s" % r)

out = os.environ.get("KL_BENCH_OUT")
if out:
    with open(out, "a") as f:
        f.write("\n".join(NUMBERS) + "\n")
print("\n".join(NUMBERS))
print("%d failures" % len(FAILS))
sys.exit(1 if FAILS else 0)
