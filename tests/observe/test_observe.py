#!/usr/bin/env python3
"""Observe and export without a GPU (ctest label unit).

  bucketing   kl observe --show on recorded observations: buckets by
              geometry and scalars (pointers ignored), a bimodal bucket split
              fast/slow, ranking by share, top-K covering the target, the
              K=3/5/7 cover; checked against an independent computation
  h200        the same on an observation recorded on the H200
              (fixtures/app_h200.json, tests/observe/app on the GPU)
  case        kl case from-observation: kl check accepts the case, every
              shape's launch geometry (2-D blocks kept) and scalars equal the
              observation's, buffer counts found as rows*cols when the
              allocations are exact, else per shape; a signature that
              disagrees, a bad file and an existing folder are exit 2
  llm.c       llm.c's own softmax_forward.cu (tests/observe/llmc-upstream,
              observed on an H200): --show ranks the kernels by headroom
              (bytes at the DRAM peak) and prints the command to start
              with; the case links the CUDA libraries the program had
              loaded and takes -I folders a header was found in; the
              standalone harness (common.h, no include guard, in baseline
              and candidate) compiles; kl export into llm.c's file leaves
              out the #include it has and keeps the names it defines apart
  export      a host case's best written into a copy of a "program" (also
              decided by the program's own benchmark, --measure): the
              entry's definition replaced (the rest of the file kept, and
              the lines between kl:begin/kl:end when present), verify
              kept; a failing verify restores the file byte for byte;
              every step in export.jsonl
usage: test_observe.py KL SOURCE_DIR
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import (FAILS, check, nvcc_checked, scratch,  # noqa: E402
                     small_matmul)

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-observe-")
APP = SRC + "/tests/observe/app/app.cu"


def kl(*args, cwd=None):
    return subprocess.run([KL] + list(args), capture_output=True, text=True,
                          env=ENV, cwd=cwd, timeout=600)


def hexle(fmt, v):
    return struct.pack("<" + fmt, v).hex()


# ---- a synthetic observation of tests/observe/app ---------------------------
# (rows, cols, bx, by, alpha, durations in us)
CONFIGS = [
    (4096, 4096, 32, 8, 0.5, [100.0 + i for i in range(12)]),
    (2048, 8192, 32, 8, -1.25, [101.0 + 0.5 * i for i in range(6)]),
    (1024, 1024, 16, 16, 2.0, [7.0 + 0.1 * i for i in range(20)]),
    (8192, 512, 64, 4, 0.5, [30.0 + 0.2 * i for i in range(8)]),
    # bimodal: half cold at 20 us, half warm at 5 us
    (300, 200, 32, 4, 3.0, [20.0] * 15 + [5.0] * 15),
]


def synthetic(path, exact_alloc=False):
    most = max(r * c for r, c, *_ in CONFIGS)
    launches, total = [], 0
    for rows, cols, bx, by, alpha, durs in CONFIGS:
        for i, d in enumerate(durs):
            left = 4 * (rows * cols if exact_alloc else most)
            ptr = {"size": 8, "pointer": True, "alloc_bytes_left": left}
            args = [dict(ptr, offset=0, hex=hexle("Q", 0x7f0000000000 + i)),
                    dict(ptr, offset=8, hex=hexle("Q", 0x7f1000000000)),
                    dict(ptr, offset=16, hex=hexle("Q", 0x7f2000000000)),
                    {"offset": 24, "size": 4, "hex": hexle("f", alpha)},
                    {"offset": 28, "size": 4, "hex": hexle("i", rows)},
                    {"offset": 32, "size": 4, "hex": hexle("i", cols)}]
            launches.append({
                "kernel": 1, "api": "runtime", "pid": 1,
                "grid": [(rows + bx - 1) // bx, (cols + by - 1) // by, 1],
                "block": [bx, by, 1], "shared_bytes": 0, "device": 0,
                "stream": 7, "start_ns": 1000 * len(launches),
                "duration_ns": int(round(d * 1000)), "args": args})
            total += int(round(d * 1000))
    obs = {
        "kernlab_observation": 1, "kernlab_version": "test",
        "time": "2026-11-22T00:00:00Z",
        "program": {"argv": ["./app"], "exit_code": 0, "signal": 0},
        "kernel_filter": None, "limits": {}, "processes": [],
        "devices": [{"id": 0, "name": "NVIDIA H200",
                     "compute_capability": "9.0"}],
        "kernels": [
            {"name": "_Z4fillPffi", "demangled": "fill(float*, float, int)",
             "matched": False, "launches": 2, "total_ns": 90000,
             "recorded": 0},
            {"name": "_Z9scale_addPfPKfS1_fii",
             "demangled": "scale_add(float*, float const*, float const*, "
                          "float, int, int)",
             "matched": True, "launches": len(launches), "total_ns": total,
             "recorded": len(launches)}],
        "launches": launches}
    with open(path, "w") as f:
        json.dump(obs, f, indent=1)
    return obs


def quantile(v, q):
    pos = q * (len(v) - 1)
    lo = int(pos)
    return v[-1] if lo + 1 >= len(v) else v[lo] + (pos - lo) * (v[lo + 1] - v[lo])


def expected_configs(split=1.5):
    """The bucketing computed here, independently of the library."""
    out = []
    for rows, cols, bx, by, alpha, durs in CONFIGS:
        d = sorted(durs)
        p25, p95 = quantile(d, .25), quantile(d, .95)
        if len(d) >= 4 and p95 / p25 > split:
            cut = math.sqrt(p25 * p95)
            fast = [x for x in d if x <= cut]
            slow = [x for x in d if x > cut]
            out.append((rows, cols, "fast", sum(fast), len(fast)))
            out.append((rows, cols, "slow", sum(slow), len(slow)))
        else:
            out.append((rows, cols, None, sum(d), len(d)))
    total = sum(c[3] for c in out)
    out.sort(key=lambda c: -c[3])
    return [(r, c, h, t / total, n) for r, c, h, t, n in out]


# ---- bucketing -----------------------------------------------------------------
obs_path = TMP + "/obs.json"
synthetic(obs_path)
p = kl("observe", "--show", obs_path, "--json")
check(p.returncode == 0, "observe --show: %d %s" % (p.returncode, p.stderr))
s = json.loads(p.stdout or "{}")
want = expected_configs()
got = [(c["args"][4]["int"], c["args"][5]["int"], c["half"], c["share"],
        c["launches"]) for c in s.get("configs", [])]
check(len(got) == len(want), "%d buckets (one split), got %d" %
      (len(want), len(got)))
for g, w in zip(got, want):
    check(g[:3] == w[:3] and abs(g[3] - w[3]) < 1e-9 and g[4] == w[4],
          "bucket %s, want %s" % (g, w))
halves = [c for c in s.get("configs", []) if c["half"]]
check(sorted(c["half"] for c in halves) == ["fast", "slow"] and
      all(c["launches"] == 15 for c in halves),
      "the 5 us / 20 us bucket is split in two halves of 15")
cum, k = 0, 0
while cum < 0.9 - 1e-12 and k < len(want):
    cum += want[k][3]
    k += 1
check(s.get("kept") == k and abs(s.get("kept_share", 0) - cum) < 1e-9,
      "top-K: %d covering %.4f, got %s %s" % (k, cum, s.get("kept"),
                                               s.get("kept_share")))
for kk in (3, 5, 7):
    check(abs(s["cover"][str(kk)] - sum(w[3] for w in want[:kk])) < 1e-9,
          "K=%d cover" % kk)
check(s.get("kernel") == "_Z9scale_addPfPKfS1_fii",
      "the busiest recorded kernel is chosen")
check(all(not a["pointer"] or "int" not in a for c in s["configs"]
          for a in c["args"]), "pointers carry no value")

p = kl("observe", "--show", obs_path, "--top", "2")
check(p.returncode == 0 and "kept 2 configurations" in p.stdout,
      "--top 2: %s" % p.stdout[-300:])
check("arg4=4096 arg5=4096" in p.stdout and "fast" in p.stdout,
      "the table shows scalars and the halves")
p = kl("observe", "--show", obs_path, "--share", "0.4", "--json")
check(json.loads(p.stdout or "{}").get("kept") == 1, "--share 0.4: one")
# a PyTorch-sized template name: the table abbreviates it, --json keeps it
with open(obs_path) as f:
    long_obs = json.load(f)
long_name = ("void at::native::vectorized_elementwise_kernel<4, " +
             "at::native::(anonymous namespace)::Functor<float>, " * 40 +
             "std::array<char*, 2>>(int, at::native::Functor<float>, "
             "std::array<char*, 2>)")
for k in long_obs["kernels"]:
    if k["name"] == "_Z9scale_addPfPKfS1_fii":
        k["demangled"] = long_name
long_path = os.path.join(TMP, "long_name.json")
with open(long_path, "w") as f:
    json.dump(long_obs, f)
p = kl("observe", "--show", long_path)
check(p.returncode == 0 and max(len(ln) for ln in p.stdout.splitlines())
      < 220 and "void at::native::vectorized_elementwise_kernel<...>(...)"
      in p.stdout, "a long name is abbreviated: %s" % p.stdout[-600:])
p = kl("observe", "--show", long_path, "--json")
check(long_name in p.stdout, "--json keeps the whole name")
p = kl("observe", "--show", obs_path, "--split", "10", "--json")
check(not any(c["half"] for c in json.loads(p.stdout or "{}")["configs"]),
      "--split 10 splits nothing")
p = kl("observe", "--show", obs_path, "--kernel", "fill")
check(p.returncode == 2 and "no kernel launch" not in p.stderr,
      "fill ran but was not recorded: exit %d %s" % (p.returncode, p.stderr))

# ---- bad input -------------------------------------------------------------------
with open(obs_path) as f:
    text = f.read()
bad = TMP + "/bad.json"
doc = json.loads(text)
doc["launches"][3]["block"] = [32, 64, 1]
with open(bad, "w") as f:
    json.dump(doc, f)
p = kl("observe", "--show", bad)
check(p.returncode == 2 and bad + ":" in p.stderr and "1024" in p.stderr,
      "a 2048-thread block is located: %s" % p.stderr)
with open(bad, "w") as f:
    f.write(text[:len(text) // 2])
p = kl("observe", "--show", bad)
check(p.returncode == 2 and "not JSON" in p.stderr, "truncated: %s" % p.stderr)
p = kl("observe", "--show", TMP + "/missing.json")
check(p.returncode == 2, "a missing file is bad input")
p = kl("observe", "--bogus")
check(p.returncode == 2, "unknown option")
p = kl("observe", "--", "/nonexistent/program")
check(p.returncode in (1, 2), "a program that is not there: %d %s" %
      (p.returncode, p.stderr))

# ---- a recorded H200 observation ---------------------------------------------------
h200 = SRC + "/tests/observe/fixtures/app_h200.json"
if os.path.exists(h200):
    p = kl("observe", "--show", h200, "--json")
    check(p.returncode == 0, "H200 observation: %s" % p.stderr)
    s = json.loads(p.stdout or "{}")
    launches = sum(c["launches"] for c in s.get("configs", []))
    check(launches == 76, "76 scale_add launches recorded, got %d" % launches)
    scal = sorted({(c["args"][4]["int"], c["args"][5]["int"])
                   for c in s.get("configs", [])})
    check(scal == sorted([(4096, 4096), (2048, 8192), (1024, 1024),
                          (8192, 512), (300, 200)]),
          "exact scalars: %s" % scal)
    check(s.get("kept_share", 0) >= 0.9, "the kept ones cover 90%")

# ---- case from observation ---------------------------------------------------------
for exact in (False, True):
    synthetic(obs_path, exact_alloc=exact)
    d = TMP + "/case_%s" % ("exact" if exact else "alloc")
    p = kl("case", "from-observation", obs_path, "--source", APP, "--entry",
           "scale_add", "-o", d, "--share", "1", "--top", "8")
    check(p.returncode == 0, "from-observation: %s" % p.stderr)
    check("match the observation" in p.stdout, "cross-checked: %s" % p.stdout)
    c = kl("check", d, "--json")
    check(c.returncode == 0, "kl check accepts it: %s" % c.stdout[-500:])
    desc = json.loads(c.stdout or "{}").get("case", {})
    shapes = desc.get("shapes", [])
    check(len(shapes) == 6, "six shapes (one bucket split): %d" % len(shapes))
    seen = set()
    for sh in shapes:
        v = sh["values"]
        cfg = [x for x in CONFIGS if x[0] == v["rows"] and x[1] == v["cols"]]
        check(len(cfg) == 1, "shape %s has observed scalars" % sh["name"])
        if not cfg:
            continue
        rows, cols, bx, by, alpha, _ = cfg[0]
        seen.add((rows, cols))
        check(sh["launch"]["block"] == [bx, by, 1] and sh["launch"]["grid"] ==
              [(rows + bx - 1) // bx, (cols + by - 1) // by, 1],
              "shape %s launches as observed (2-D block)" % sh["name"])
        check(v["alpha"] == alpha, "alpha exact: %s" % v["alpha"])
    check(len(seen) == 5, "every configuration is a shape")
    with open(d + "/case.yaml") as f:
        yaml = f.read()
    if exact:
        check("count: rows*cols }" in yaml, "counts found as rows*cols")
    else:
        check("count: out_count }" in yaml and "out_count: 16777216" in yaml,
              "counts from the allocation, per shape")
    check(yaml.count("# confirm") >= 3, "guesses marked confirm")
    with open(d + "/kernel.cu") as f:
        kernel = f.read()
    check("__global__ void scale_add" in kernel and "int main" not in kernel
          and "cudaMalloc" not in kernel, "kernel.cu: the kernel, no main")

p = kl("case", "from-observation", obs_path, "--source", APP, "--entry",
       "scale_add", "-o", TMP + "/case_exact")
check(p.returncode == 2 and "exists" in p.stderr, "an existing folder")
wrong = TMP + "/wrong.cu"
with open(APP) as f:
    src = f.read()
with open(wrong, "w") as f:
    f.write(src.replace("float alpha, int rows, int cols",
                        "double alpha, int rows, int cols"))
p = kl("case", "from-observation", obs_path, "--source", wrong, "--entry",
       "scale_add", "-o", TMP + "/case_wrong")
check(p.returncode == 2 and wrong + ":" in p.stderr and "alpha" in p.stderr,
      "a signature that disagrees is located: %s" % p.stderr)
check(not os.path.exists(TMP + "/case_wrong"), "and nothing is written")
p = kl("case", "from-observation", obs_path, "--source", APP, "--entry",
       "nothere", "-o", TMP + "/case_none")
check(p.returncode == 2, "no such entry: %s" % p.stderr)

# ---- a program in the style of llm.c (recorded on an H100) ---------------------------------
# tests/observe/llmc: kernels take floatX (a typedef under #if in the local
# common.h) and parameters called weight and bias; kernel3 uses cooperative
# groups. The fixtures keep every 10th launch of `kl observe` on the GPU.
LLMC = SRC + "/tests/observe/llmc/layernorm_forward.cu"
for version in ("1", "3"):
    fx = SRC + "/tests/observe/fixtures/llmc_layernorm%s_h100.json" % version
    d = TMP + "/llmc%s" % version
    p = kl("case", "from-observation", fx, "--source", LLMC, "--entry",
           "layernorm_forward_kernel" + version, "-o", d)
    check(p.returncode == 0, "llm.c-style kernel%s: %s" % (version, p.stderr))
    c = kl("check", d, "--json")
    check(c.returncode == 0, "kl check accepts it: %s" % c.stdout[-500:])
    desc = json.loads(c.stdout or "{}").get("case", {})
    params = [(x["name"], x["dtype"], x["pointer"])
              for x in desc.get("params", [])]
    check(params == [("out", "f32", True), ("mean", "f32", True),
                     ("rstd", "f32", True), ("inp", "f32", True),
                     ("weight", "f32", True), ("bias", "f32", True),
                     ("N", "i32", False), ("C", "i32", False)],
          "unchanged names, floatX as f32: %s" % params)
    check(os.path.isfile(d + "/common.h") and
          open(d + "/common.h").read() ==
          open(SRC + "/tests/observe/llmc/common.h").read(),
          "common.h copied beside kernel.cu")
    with open(d + "/kernel.cu") as f:
        check('#include "common.h"' in f.read(), "kernel.cu includes it")
# the program's build defines pick the #if branch: bf16 does not match
# what was observed (4-byte floats)... the sizes still agree for pointers,
# so the case is made with bf16 buffers and a -D flag
d = TMP + "/llmc_bf16"
p = kl("case", "from-observation",
       SRC + "/tests/observe/fixtures/llmc_layernorm1_h100.json", "--source",
       LLMC, "--entry", "layernorm_forward_kernel1", "-o", d,
       "--define", "ENABLE_BF16")
check(p.returncode == 0, "with --define ENABLE_BF16: %s" % p.stderr)
if p.returncode == 0:
    with open(d + "/case.yaml") as f:
        y = f.read()
    check("type: bf16*" in y and '"-DENABLE_BF16"' in y,
          "floatX is bf16 and the define is a flag: %s" % y[:900])
# a type stated by the user wins; an #if nobody can evaluate is located
d = TMP + "/llmc_typed"
p = kl("case", "from-observation",
       SRC + "/tests/observe/fixtures/llmc_layernorm1_h100.json", "--source",
       LLMC, "--entry", "layernorm_forward_kernel1", "-o", d, "--type",
       "floatX=f32")
check(p.returncode == 0, "--type floatX=f32: %s" % p.stderr)
odd = TMP + "/odd"
os.makedirs(odd)
with open(SRC + "/tests/observe/llmc/common.h") as f:
    common = f.read()
with open(odd + "/common.h", "w") as f:
    f.write(common.replace("#if defined(ENABLE_BF16)",
                           "#if PRECISION_OF(ENABLE_BF16)"))
shutil.copy(LLMC, odd + "/layernorm_forward.cu")
p = kl("case", "from-observation",
       SRC + "/tests/observe/fixtures/llmc_layernorm1_h100.json", "--source",
       odd + "/layernorm_forward.cu", "--entry", "layernorm_forward_kernel1",
       "-o", TMP + "/llmc_odd")
check(p.returncode == 2 and odd + "/common.h:" in p.stderr and
      "--type" in p.stderr, "an #if without a value is located: %s" % p.stderr)
check(not os.path.exists(TMP + "/llmc_odd"), "and nothing is written")

# ---- scalars by their parameters' names (--source) ------------------------------------
p = kl("observe", "--show", SRC + "/tests/observe/fixtures/app_h200.json",
       "--source", APP)
check(p.returncode == 0 and "alpha=0.5f rows=4096 cols=4096" in p.stdout,
      "--source names the scalars, a float as a float: %s" % p.stdout[-900:])
p = kl("observe", "--show", SRC + "/tests/observe/fixtures/app_h200.json",
       "--source", APP, "--json")
args = (json.loads(p.stdout or "{}").get("configs") or [{}])[0].get("args")
check(args and args[3].get("name") == "alpha" and
      args[3].get("float") == 0.5 and args[0].get("name") == "out",
      "and in --json: %s" % args)
# through a typedef the source declares: the source's type is the one shown
# (the demangled name says float either way)
for alias, want in (("float", "alpha=0.5f rows=4096"),
                    ("int", "alpha=1056964608 rows=4096")):
    typed = TMP + "/typed_%s_app.cu" % alias
    with open(typed, "w") as f:
        f.write("typedef %s real_t;\n" % alias + open(APP).read().replace(
            "float alpha, int rows", "real_t alpha, int rows"))
    p = kl("observe", "--show", SRC + "/tests/observe/fixtures/app_h200.json",
           "--source", typed)
    check(p.returncode == 0 and want in p.stdout and
          open(typed).read().count("real_t alpha") == 1,
          "a parameter typedef'd %s: %s" % (alias, p.stdout[-600:]))
p = kl("observe", "--show", SRC + "/tests/observe/fixtures/app_h200.json",
       "--source", TMP + "/missing.cu")
check(p.returncode == 2 and "missing.cu" in p.stderr,
      "a source that is not there: exit 2, named: %s" % p.stderr)

# ---- llm.c's own softmax_forward.cu, observed on an H200 --------------------------------
# (fixtures/llmc_upstream_softmax4_h200.json: `./softmax_forward 4` of
# tests/observe/llmc-upstream, unmodified; its common.h calls cuBLAS)
UP = SRC + "/tests/observe/llmc-upstream"
UPFX = SRC + "/tests/observe/fixtures/llmc_upstream_softmax4_h200.json"
up = TMP + "/llmc_up"
shutil.copytree(UP, up)
p = kl("observe", "--show", UPFX)
check(p.returncode == 0 and "where to start" in p.stdout and
      "kl case from-observation " + UPFX + " --source SOURCE.cu --entry "
      "softmax_forward_kernel4 -o softmax_forward-case" in p.stdout,
      "--show ranks the kernels and says which to start with: %s"
      % p.stdout[:1500])
# with the device's DRAM peak (observations record it; this one predates
# that, so it is added here) and the program's folder, where its source is
with open(UPFX) as f:
    o = json.load(f)
o["devices"][0]["dram_peak_gbs"] = 4800.0
o["program"]["cwd"], o["program"]["argv"] = up, ["./softmax_forward", "4"]
with open(TMP + "/peak.json", "w") as f:
    json.dump(o, f)
p = kl("observe", "--show", TMP + "/peak.json", "--json")
r = json.loads(p.stdout or "{}")
rk = (r.get("ranking") or [{}])[0]
# the kernel's two buffers, 8192 x 50257 floats each, read at 4800 GB/s
want_bytes = 2 * 8192 * 50257 * 4
check(p.returncode == 0 and rk.get("bytes_per_launch") == want_bytes and
      abs(rk.get("at_peak_us", 0) - want_bytes * 606 / 4800e3) < 1 and
      abs(rk["headroom_us"] - (r["kernels"][0]["total_us"] -
                               rk["at_peak_us"])) < 1 and
      (r.get("first") or {}).get("command", "").endswith(
          "--source %s/softmax_forward.cu --entry softmax_forward_kernel4 "
          "-o softmax_forward-case" % up),
      "the ranking's bytes, time at peak, headroom and command: %s" %
      str(r.get("ranking"))[:600] + str(r.get("first")))
# the case links the libraries the program had loaded; -I of a folder a
# header is found in becomes target.include
inc = TMP + "/inc"
os.makedirs(inc + "/cute")
with open(inc + "/cute/tensor.hpp", "w") as f:
    f.write("#pragma once\n")
os.makedirs(TMP + "/cute_src")
src = TMP + "/cute_src/softmax_cute.cu"
with open(src, "w") as f:
    f.write(open(up + "/softmax_forward.cu").read().replace(
        '#include "common.h"', '#include "common.h"\n#include <cute/tensor.hpp>'))
shutil.copy(up + "/common.h", TMP + "/cute_src/common.h")
d = TMP + "/case_up"
p = kl("case", "from-observation", UPFX, "--source", src, "--entry",
       "softmax_forward_kernel4", "-o", d, "-I", inc, "-I", TMP + "/nothing")
y = open(d + "/case.yaml").read() if p.returncode == 0 else ""
check(p.returncode == 0 and "libs: [" in y and "cublas" in y and
      "include: [\"%s\"]" % os.path.realpath(inc) in y,
      "target.libs from the observation, target.include from -I: %s %s"
      % (p.stderr, y[:700]))
c = kl("check", d, "--json")
check(c.returncode == 0, "kl check accepts it: %s" % c.stdout[-400:])
# the standalone harness: the baseline beside a candidate, both including
# common.h (no include guard): it compiles, with the line it prints
if shutil.which("nvcc") and p.returncode == 0:
    shutil.copy(src, d + "/softmax_cute.cu")
    cand = TMP + "/cand.cu"
    with open(cand, "w") as f:
        f.write(open(d + "/kernel.cu").read() +
                "\n// a candidate that is the baseline again\n")
    h = d + "/harness.cu"
    p = kl("harness", d, "--candidate", cand, "--standalone", "-o", h)
    text = open(h).read() if p.returncode == 0 else ""
    line = text.split("Build and run: ", 1)[-1].split(" && ")[0]
    # compiled, not linked and run: there is no GPU here
    b = subprocess.run(["sh", "-c", line.replace("-o harness",
                                                 "-c -o harness.o")],
                       cwd=d, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0 and text.count('#include "common.h"') >= 2 and
          b.returncode == 0,
          "the standalone harness with common.h twice compiles: %s %s" %
          (line, b.stderr[-1500:]))
    # kl export into llm.c's file, which includes common.h and defines
    # every version: the section's #include is left out, its names apart
    prog = TMP + "/llmc_up_export"
    shutil.copytree(UP, prog)
    v7 = TMP + "/v7.cu"
    text = open(UP + "/softmax_forward.cu").read()
    with open(v7, "w") as f:
        f.write('#include <assert.h>\n#include "common.h"\n' +
                text[text.index("__device__ float warpReduceMax"):
                     text.index("__global__ void softmax_forward_kernel4")] +
                'extern "C" void kernlab_launch(float* out, const float* inp, '
                'int N, int C, const kl_launch_ctx *ctx) {\n'
                '    softmax_forward_kernel3<<<N, 32, 32 * sizeof(float)>>>('
                'out, inp, N, C);\n}\n')
    p = kl("export", d, "--to", prog + "/softmax_forward.cu", "--kernel", v7,
           "--verify", "nvcc -c -std=c++17 -arch=sm_90 softmax_forward.cu "
           "-o /dev/null", "--cwd", prog, "--json")
    r = json.loads(p.stdout or "{}")
    new = open(prog + "/softmax_forward.cu").read()
    check(p.returncode == 0 and r.get("result") == "kept_unmeasured" and
          '// kernlab: "common.h" is included above' in new and
          "#define softmax_forward_kernel3 kl_export_softmax_forward_kernel3"
          in new and "kernels, as the program will launch them: "
          "kl_export_softmax_forward_kernel3" in p.stderr,
          "the export compiles in llm.c's file: %s %s" % (r, p.stderr[-1500:]))

# ---- a template in a namespace (recorded on an H100) -------------------------------------
# softmax_forward.cu launches kernels::softmax_forward_kernel<B, floatX>, the
# block size picking the instantiation: each shape launches its own
SOFTMAX = SRC + "/tests/observe/llmc/softmax_forward.cu"
FX = SRC + "/tests/observe/fixtures/llmc_softmax1_h100.json"
d = TMP + "/softmax"
p = kl("case", "from-observation", FX, "--source", SOFTMAX, "--entry",
       "softmax_forward_kernel", "-o", d)
check(p.returncode == 0, "a template's instantiations: %s" % p.stderr)
c = kl("check", d, "--json")
desc = json.loads(c.stdout or "{}").get("case", {})
check(c.returncode == 0 and
      desc.get("kernel", {}).get("entry") ==
      "kernels::softmax_forward_kernel" and
      sorted(x.get("entry") for x in desc.get("shapes", [])) ==
      ["kernels::softmax_forward_kernel<%d, float>" % b
       for b in (128, 256, 512, 64)] and
      [(x["name"], x["dtype"], x["pointer"]) for x in desc.get("params", [])]
      == [("out", "f32", True), ("inp", "f32", True), ("N", "i32", False),
          ("C", "i32", False)],
      "qualified entry, one instantiation per shape, T bound to f32: %s"
      % c.stdout[-900:])
with open(d + "/kernel.cu") as f:
    k = f.read()
check(k.rstrip().endswith("left out */") and "int main" not in k,
      "kernel.cu closes the namespace it cut: %s" % k[-200:])
# one instantiation, named as the demangler spells it or not
d1 = TMP + "/softmax256"
p = kl("case", "from-observation", FX, "--source", SOFTMAX, "--entry",
       "softmax_forward_kernel<256,float>", "-o", d1)
check(p.returncode == 0, "one instantiation: %s" % p.stderr)
if p.returncode == 0:
    with open(d1 + "/case.yaml") as f:
        y = f.read()
    check('entry: "kernels::softmax_forward_kernel<256, float>"' in y and
          y.count("name: obs") == 1 and "entry: \"kernels" not in
          y.split("shapes:")[1],
          "its case has one shape and the instantiation as its entry: %s"
          % y[:1200])
p = kl("case", "from-observation", FX, "--source", SOFTMAX, "--entry",
       "kernels::softmax_forward_kernel", "-o", TMP + "/softmax_q")
check(p.returncode == 0, "the qualified name works too: %s" % p.stderr)
p = kl("case", "from-observation", FX, "--source", SOFTMAX, "--entry",
       "softmax_forward_kernel<256>; x", "-o", TMP + "/softmax_bad")
check(p.returncode == 2 and "function name" in p.stderr and
      not os.path.exists(TMP + "/softmax_bad"),
      "an entry that is no function name: %s" % p.stderr)
# the harness of the case, the baseline and two candidates, compiles (nvcc
# is in the CUDA toolkit; no GPU needed)
if shutil.which("nvcc"):
    CANDS = SRC + "/tests/observe/llmc/candidates/"
    for cand in (None, "softmax_shuffle.cu", "softmax_warp_launch.cu"):
        out = TMP + "/softmax_h_%s.cu" % (cand or "baseline")
        args = ["harness", d, "-o", out] + (
            ["--candidate", CANDS + cand] if cand else [])
        p = kl(*args)
        check(p.returncode == 0, "kl harness %s: %s" % (cand, p.stderr))
        with open(out) as f:
            build = [l for l in f.read().splitlines()[:8] if "nvcc" in l]
        check(build and ("-I " + d) in build[0],
              "the build line puts the case folder on the include path: %s"
              % build)
        rc, err = nvcc_checked(["nvcc", "-O3", "-arch=sm_90", "-I", d, out,
                                "-o", out + ".bin"], out, [d], scratch=TMP)
        check(rc == 0, "the %s harness compiles: %s"
              % (cand or "baseline", err[-800:]))

# ---- export (host case, no GPU) ---------------------------------------------------------
case = small_matmul(SRC, TMP + "/matmul")
# one tuning only, the loop order (i-k-j streams b by rows: several times
# faster at n = 192), so that the run has a best to export whatever the
# machine is doing: 1.5 s a comparison, sampled hot (at 300 ms, cold, six
# busy loops beside the ASan build made it "same" and left no best)
with open(case + "/case.yaml") as f:
    text = f.read()
with open(case + "/case.yaml", "w") as f:
    f.write(text.replace("BLOCK: [0, 16, 32, 64]", "BLOCK: [0]"))
r = subprocess.run([KL, "run", case, "--json", "--iterations", "2",
                    "--seed", "5", "--time-cap", "1500", "--hot",
                    "--no-profile"],
                   capture_output=True, text=True, env=ENV, timeout=600)
check(r.returncode == 0, "kl run: %s" % r.stderr[-500:])
best = kl("best", case)
check(best.returncode == 0, "a best exists: %s" % best.stderr)
prog = TMP + "/prog"
os.makedirs(prog)
program = ("/* a program around the kernel */\n#include <stdio.h>\n"
           "static int helper(int x) { return x + 1; }\n\n"
           "/* the kernel */\n"
           "void matmul(float *c, const float *a, const float *b, int n) {\n"
           "  for (int i = 0; i < n * n; i++)\n    c[i] = 0; /* wrong */\n}\n\n"
           "int main(void) { printf(\"%d\\n\", helper(1)); return 0; }\n")
target = prog + "/prog.c"
with open(target, "w") as f:
    f.write(program)
p = kl("export", case, "--to", target, "--verify",
       "cc -c -o prog.o prog.c", "--cwd", prog, "--json")
check(p.returncode == 0, "export kept after verify: %d %s" % (p.returncode,
                                                              p.stderr))
res = json.loads(p.stdout or "{}")
check(res.get("result") == "kept_unmeasured", "kept, unmeasured: %s" % res)
with open(target) as f:
    new = f.read()
check(new.startswith("/* a program around the kernel */\n#include <stdio.h>\n"
                     "static int helper") and new.rstrip().endswith(
    "int main(void) { printf(\"%d\\n\", helper(1)); return 0; }"),
    "the rest of the file is kept")
check("/* wrong */" not in new and "kernlab export" in new and
      "#define BLOCK" in new, "the definition replaced, settings written")
with open(res.get("backup", "/nonexistent")) as f:
    check(f.read() == program, "the backup is the original")
check(subprocess.run(["cc", "-o", prog + "/a.out", target],
                     capture_output=True).returncode == 0,
      "the exported program builds")

with open(target, "w") as f:
    f.write(program)
p = kl("export", case, "--to", target, "--verify", "false", "--cwd", prog)
check(p.returncode == 3 and "restored" in p.stderr,
      "a failing verify rolls back: %d %s" % (p.returncode, p.stderr))
with open(target) as f:
    check(f.read() == program, "restored byte for byte")
# a verify that fails compiling: the reason is the compiler's first error
# lines, not the last line of its output (a caret, a margin)
with open(prog + "/fail.sh", "w") as f:
    f.write("echo 'prog.c: In function main:'\n"
            "echo 'prog.c:7:3: error: expected ; before }'\n"
            "echo '    7 |   x'\necho '      |   ^'\necho '      | '\nexit 1\n")
p = kl("export", case, "--to", target, "--verify", "sh fail.sh", "--cwd",
       prog)
check(p.returncode == 3 and
      "verify failed (exit status): prog.c:7:3: error: expected ; before }"
      in p.stderr, "a failing compile names its first error: %s" % p.stderr)
with open(target) as f:
    check(f.read() == program, "restored byte for byte again")

marked = program.replace("/* the kernel */\n", "// kl:begin\n").replace(
    "/* wrong */\n}\n", "/* wrong */\n}\n// kl:end\n")
with open(target, "w") as f:
    f.write(marked)
p = kl("export", case, "--to", target, "--json")
with open(target) as f:
    new = f.read()
check(p.returncode == 0 and "// kl:begin\n/* kernlab export" in new and
      "\n// kl:end\n" in new and "/* wrong */" not in new,
      "between markers: %s" % new[:400])

# --measure: the program's own benchmark decides (a server's tokens/s);
# this one reports 1500 tokens/s once the file holds kernlab's kernel
measure = prog + "/measure.py"
with open(measure, "w") as f:
    f.write("import json, sys\n"
            "text = open(sys.argv[1]).read()\n"
            "if 'FAIL' in text: sys.exit(1)\n"
            "print('warming up')\n"
            "rate = 1500 if 'kernlab export' in text else 1000\n"
            "print(json.dumps({'server': {'tokens_per_s': rate}}))\n")
n_exports = 4  # the exports above: kept, rolled back twice, between markers
for better, rc_want, result in (("higher", 0, "kept"),
                                ("lower", 3, "rolled_back")):
    with open(target, "w") as f:
        f.write(program)
    p = kl("export", case, "--to", target, "--measure",
           "python3 measure.py prog.c", "--metric", "server.tokens_per_s",
           "--better", better, "--repeat", "2", "--cwd", prog, "--json")
    n_exports += 1
    res = json.loads(p.stdout or "{}")
    with open(target) as f:
        now = f.read()
    check(p.returncode == rc_want and res.get("result") == result and
          res.get("before_us") == [1000, 1000] and
          res.get("after_us") == [1500, 1500] and
          (("kernlab export" in now) == (result == "kept")),
          "--measure, %s is better: %s (%d %s %s)" %
          (better, result, p.returncode, res, p.stderr[-300:]))
with open(target, "w") as f:
    f.write(program.replace("helper(1)", "helper(1) /* FAIL */"))
p = kl("export", case, "--to", target, "--measure", "python3 measure.py prog.c",
       "--metric", "server.tokens_per_s", "--cwd", prog)
n_exports += 1
check(p.returncode == 3 and "measure command failed" in p.stderr,
      "a failing benchmark: nothing changed (%d %s)" % (p.returncode, p.stderr))
with open(target, "w") as f:
    f.write(program)
p = kl("export", case, "--to", target, "--measure", "python3 measure.py prog.c",
       "--metric", "tokens_per_s", "--cwd", prog)
n_exports += 1
check(p.returncode == 3 and "no number 'tokens_per_s'" in p.stderr,
      "a metric it does not print (%d %s)" % (p.returncode, p.stderr))
p = kl("export", case, "--to", target, "--measure", "python3 measure.py prog.c")
check(p.returncode == 2 and "--metric" in p.stderr, "--measure needs --metric")
p = kl("export", case, "--to", target, "--measure", "true", "--metric", "x",
       "--observe", "true")
check(p.returncode == 2, "--observe or --measure")
p = kl("export", case, "--to", target, "--measure", "true", "--metric", "x",
       "--better", "faster")
check(p.returncode == 2, "--better is higher or lower")

steps = [json.loads(line) for line in open(case + "/export.jsonl")]
kinds = [s["step"] for s in steps]
check(kinds.count("start") == n_exports and kinds.count("result") == n_exports and
      "restore" in kinds and "backup" in kinds and "verify" in kinds,
      "every step in export.jsonl: %s" % kinds)
p = kl("export", case, "--to", TMP + "/nothere.c")
check(p.returncode == 2, "no such target: exit 2")
p = kl("export", case, "--to", target, "--verify", "cc 'unclosed")
check(p.returncode == 2 and "quote" in p.stderr, "bad quoting: exit 2")
nobest = small_matmul(SRC, TMP + "/nobest")
p = kl("export", nobest, "--to", target)
check(p.returncode == 2, "no best yet: exit 2 (%s)" % p.stderr.strip())

print("%d failures" % len(FAILS))
sys.exit(1 if FAILS else 0)
