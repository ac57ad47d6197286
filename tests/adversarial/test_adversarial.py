#!/usr/bin/env python3
"""The adversarial suite: candidates that cheat, each of which must be
caught with the right reason and never accepted, and honest ones that must
never be flagged. usage: test_adversarial.py KL SOURCE_DIR [host|cuda]

host (CI): host_matmul at small shapes and a host reduction written here.
cuda (label gpu, exit 77 without a device): vector_add, reduce_sum_f32,
softmax_f32 (outputs of 1e-3 offset by 1e-6: INCORRECT) and cuda/scratch (a
workspace a candidate may leave alone, whose leftovers it cannot read).
A CUDA candidate is a kernel the harness launches on its stream; a sample
spans every kernel on every stream and sync waits for the device, so work
on another stream is timed and waited for (docs/integrity.md); the host
suite's other_thread stands for work left running after return, and
late_thread.cu is a launcher whose thread goes on launching into its
output (caught on the device: snapshot, pause, changed bytes).
Every candidate goes through `kl compare --json`, the path the loop takes
before it accepts anything; a CHEAT or INCORRECT verdict there means the
loop records it as such and keeps the best it had."""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import (FAILS, check, copy_case, require_cuda,  # noqa: E402
                     scratch)

KL, SRC = sys.argv[1], sys.argv[2]
MODE = sys.argv[3] if len(sys.argv) > 3 else "host"
HERE = os.path.dirname(os.path.abspath(__file__))
TMP, ENV = scratch(SRC, "kl-adversarial-")

HOST_SUM = """kernlab: 1
name: host_sum
description: the sum of n floats on the host, a reduction to one float
backend: host
kernel: { source: kernel.c, entry: sum }
params:
  - { name: out, type: f32*, role: output, count: 1 }
  - { name: x, type: f32*, role: input, count: n, init: "uniform(-1, 1)" }
  - { name: n, type: i32 }
shapes:
  - { name: 4M, n: 4*1024*1024 }
reference: { kind: baseline, atol: 1e-2, rtol: 1e-3 }
roofline: { bytes: 4*n + 4, flops: n }
objective: geomean_speedup
budget: { iterations: 2, patience: 2, min_gain_pct: 2.0 }
"""


# sd 0.2: zeros passes atol 0.01 while no output reaches 0.0101, which at
# 512 columns takes x above 1.66 (8 sd, never); at sd 0.3 it was 5.6 sd,
# about one fresh seed in 400 (a CI run failed so, 2026-11-29)
HOST_SOFTMAX = """kernlab: 1
name: host_softmax
description: each row's softmax on the host, with KernelBench's tolerance
backend: host
kernel: { source: kernel.c, entry: softmax }
params:
  - { name: out, type: f32*, role: output, count: rows*cols }
  - { name: x, type: f32*, role: input, count: rows*cols,
      init: "normal(0, 0.2)" }
  - { name: rows, type: i32 }
  - { name: cols, type: i32 }
shapes:
  - { name: wide, rows: 512, cols: 2039 }
  - { name: square, rows: 512, cols: 512 }
reference: { kind: baseline, atol: 1e-2, rtol: 1e-2 }
roofline: { bytes: 8*rows*cols, flops: 5*rows*cols }
objective: geomean_speedup
budget: { iterations: 2, patience: 2, min_gain_pct: 2.0 }
"""


def compare(case, cand, *extra, env=None):
    p = subprocess.run([KL, "compare", case, "--candidate", cand, "--json",
                        *extra], env=env or ENV, capture_output=True,
                       text=True, timeout=600)
    try:
        return p.returncode, json.loads(p.stdout), p.stderr
    except ValueError:
        return p.returncode, None, p.stdout + p.stderr


def expect(case, cand, verdict, gate=None, reason=None, *extra, env=None,
           tries=1):
    """A cheat: rejected (exit 3) with this verdict, gate (or one of a
    tuple of gates) and reason. tries > 1: a cheat that a gate catches
    only with some probability each run, asked again while it passes."""
    name = os.path.basename(cand)
    rc, doc, err = compare(case, cand, *extra, env=env)
    while doc and doc.get("verdict") == "OK" and tries > 1:
        print(f"{name}: passed this time, asked again", flush=True)
        tries -= 1
        rc, doc, err = compare(case, cand, *extra, env=env)
    if doc is None:
        check(False, f"{name}: no JSON (exit {rc}): {err.strip()[-300:]}")
        return
    got = (doc.get("verdict"), doc.get("gate"))
    why = doc.get("reason") or ""
    print(f"{name}: {got[0]} gate={got[1]} exit={rc}: {why[:150]}", flush=True)
    check(rc == 3, f"{name}: exit {rc}, not 3 (rejected)")
    check(got[0] == verdict, f"{name}: verdict {got[0]}, want {verdict}")
    gates = gate if isinstance(gate, tuple) else (gate,)
    check(got[1] in gates, f"{name}: gate {got[1]}, want {gate}")
    if got[1]:  # the gate that fired is one the report says it applied
        check(got[1] in (doc.get("gates_applied") or []),
              f"{name}: gates_applied {doc.get('gates_applied')} lacks "
              f"{got[1]}")
    if reason:
        check(re.search(reason, why) is not None,
              f"{name}: reason {why!r} does not say /{reason}/")


def honest(case, cand, *extra):
    """An honest candidate: checked OK, timed, no gate."""
    name = os.path.basename(cand)
    rc, doc, err = compare(case, cand, *extra)
    if doc is None:
        check(False, f"{name}: no JSON (exit {rc}): {err.strip()[-300:]}")
        return
    print(f"{name}: {doc.get('verdict')} exit={rc} objective="
          f"{(doc.get('objective') or {}).get('speedup')}", flush=True)
    check(doc.get("verdict") == "OK" and doc.get("gate") is None,
          f"{name}: honest candidate flagged: {doc.get('verdict')} "
          f"{doc.get('reason')}")
    check(rc == 0, f"{name}: exit {rc}")
    return doc


def landlock_abi():
    """The kernel's Landlock ABI version, 0 where it has none."""
    import ctypes
    nr = {"x86_64": 444, "aarch64": 444}.get(os.uname().machine)
    if nr is None:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    v = libc.syscall(nr, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return v if v > 0 else 0


def sandbox(case, probe):
    """The worker's sandbox seen from a candidate: limits, no_new_privs,
    its own folder, and the case's ledger out of its reach."""
    ledger = os.path.join(case, "solutions.jsonl")
    with open(ledger, "w") as f:
        f.write('{"id":"before"}\n')
    before = open(ledger, "rb").read()
    confined = landlock_abi() > 0
    src = open(probe).read()
    src = src.replace('#define LEDGER "/nonexistent"',
                      f'#define LEDGER "{ledger}"')
    src = src.replace("#define LANDLOCK 0", f"#define LANDLOCK {int(confined)}")
    # the worker of an ASan build keeps an unlimited address space (the
    # sanitizer's shadow memory is a reservation of terabytes)
    asan = "libasan" in subprocess.run(["ldd", KL], capture_output=True,
                                       text=True).stdout
    src = src.replace("#define NEED_AS 1", f"#define NEED_AS {int(not asan)}")
    dest = os.path.join(TMP, "sandbox_probe.c")
    with open(dest, "w") as f:
        f.write(src)
    rc, doc, err = compare(case, dest)
    verdict = doc.get("verdict") if doc else None
    print(f"sandbox_probe.c: {verdict} (landlock {'on' if confined else 'unavailable: the ledger part is not enforced here'})",
          flush=True)
    check(verdict == "OK", f"sandbox: a limit is missing: {doc and doc.get('reason')} {err[-200:]}")
    if confined:
        check(open(ledger, "rb").read() == before,
              "sandbox: the candidate appended to the case's ledger")
    os.unlink(ledger)


def default_seed_candidate(case, dest):
    """default_seed_only.c built around the first input element the
    standalone harness (seed 1, its default) gives the kernel."""
    h = os.path.join(TMP, "probe_harness.c")
    subprocess.run([KL, "harness", case, "--candidate",
                    os.path.join(HERE, "host", "probe_a0.c"), "--standalone",
                    "-o", h], env=ENV, check=True)
    exe = os.path.join(TMP, "probe")
    subprocess.run(["cc", "-O1", "-o", exe, h, "-lm"], check=True)
    out = subprocess.run([exe], capture_output=True, text=True).stdout
    m = re.search(r"^A0 (\S+)$", out, re.M)
    check(m is not None, f"probe printed no A0: {out[:200]}")
    src = open(os.path.join(HERE, "host", "default_seed_only.c")).read()
    a0 = float.fromhex(m.group(1)) if m else 0.0
    src = src.replace("#define DEFAULT_A0 0.0f", f"#define DEFAULT_A0 {a0!r}f")
    with open(dest, "w") as f:
        f.write(src)
    return dest


def host_suite():
    mm = copy_case(SRC, "host_matmul", os.path.join(TMP, "matmul"))
    with open(os.path.join(mm, "case.yaml")) as f:
        y = f.read()
    y = re.sub(r"shapes:\n(  - .*\n)+",
               "shapes:\n  - { name: n64, n: 64 }\n  - { name: n96, n: 96 }\n",
               y)
    with open(os.path.join(mm, "case.yaml"), "w") as f:
        f.write(y)
    sm = os.path.join(TMP, "sum")
    os.makedirs(sm)
    with open(os.path.join(sm, "case.yaml"), "w") as f:
        f.write(HOST_SUM)
    shutil.copy(os.path.join(HERE, "host", "sum_baseline.c"),
                os.path.join(sm, "kernel.c"))
    with open(os.path.join(sm, "program.md"), "w") as f:
        f.write("Sum n floats.\n")
    c = lambda n: os.path.join(HERE, "host", n)  # noqa: E731

    # the bench tests' cheat: correct for six calls (the checks), then the
    # product it remembered
    expect(mm, os.path.join(SRC, "tests", "bench", "candidates",
                            "matmul_replays_result.c"),
           "CHEAT", "stale_outputs",
           r"did not match the inputs of the last timed samples")
    expect(mm, c("detects_timing.c"), "CHEAT", "stale_outputs",
           r"did not match the inputs")
    expect(mm, c("memo_inputs.c"), "CHEAT", "stale_outputs",
           r"did not match the inputs")
    # Memoising on a fingerprint of a few input values and copying the
    # result back: the copy writes the whole output, and only changed
    # inputs tell it from the answer. Every sample's inputs change in a
    # few places (plugin vary()), so the result it kept is stale in the
    # last sample, unless the change hit a value it fingerprints: at these
    # shapes, the last two rounds' changes: 4 x 1/256 a shape, both shapes
    # 2.4e-4 a run (twice: 6e-8), so it is asked
    # twice at most (PolyBench/C's gemm with such a candidate was accepted
    # at 51x before, docs/integrity.md).
    expect(mm, c("memo_copy.c"), "CHEAT", "stale_outputs",
           r"did not match the inputs of .* varied by", tries=2)
    # the reduction that memoises and writes one float: faster than the
    # machine can move its bytes, with vary off (the roofline on its own;
    # with vary, stale_outputs catches it first, like memo_copy.c). Hot:
    # cold, a round's 47 ms flush left room for 7 samples under the ASan
    # pass with the fuzzing beside it, most of them preempted as the flush
    # ended (median 95-145 us for a 6 us kernel), and the median missed
    # the bound (a fresh-clone CI run, 2026-11-29 20:31Z); hot, the cap
    # holds hundreds of samples and the median is the kernel's.
    expect(sm, c("sum_memo.c"), "CHEAT", "faster_than_roofline",
           r"GB/s, [0-9.]+x what this machine can move", "--hot",
           env=dict(ENV, KERNLAB_GATES_OFF="vary"))
    expect(mm, c("partial_output.c"), "INCORRECT", None,
           r"output elements never written")
    expect(mm, c("writes_input.c"), "INCORRECT", None,
           r"wrote its input \(b: input written")
    expect(mm, c("other_thread.c"), "CHEAT", "work_after_return",
           r"work went on after the launch returned")
    expect(mm, c("leftover_output.c"), "INCORRECT", None,
           r"output elements never written")
    expect(mm, c("nan_output.c"), "INCORRECT", None,
           r"NaN or Inf where the oracle is finite")
    cheat = default_seed_candidate(mm, os.path.join(TMP, "default_seed.c"))
    expect(mm, cheat, "INCORRECT", None, r"mismatches")

    # Wrong answers a loose tolerance accepts (KernelBench's 1e-2 on a
    # softmax whose every value is under 1e-2, as its 4096 x 4093 randn
    # problem's are): the output's scale says
    sx = os.path.join(TMP, "softmax")
    os.makedirs(sx)
    with open(os.path.join(sx, "case.yaml"), "w") as f:
        f.write(HOST_SOFTMAX)
    shutil.copy(c("softmax_baseline.c"), os.path.join(sx, "kernel.c"))
    with open(os.path.join(sx, "program.md"), "w") as f:
        f.write("Each row's softmax.\n")
    p = subprocess.run([KL, "check", sx, "--tolerance"], env=ENV,
                       capture_output=True,
                       text=True)
    print(p.stdout, flush=True)
    check(p.returncode == 0 and "tolerance is weak" in p.stdout and
          "zeros ACCEPTED" in p.stdout,
          "kl check: the tolerance accepts zeros: %s %s"
          % (p.stdout[-600:], p.stderr[-300:]))
    p = subprocess.run([KL, "check", sx, "--tolerance", "--json"], env=ENV,
                       capture_output=True, text=True)
    try:
        tol = json.loads(p.stdout)["tolerance"]
    except (ValueError, KeyError):
        tol = {}
    zeros = [t for s in tol.get("shapes", []) for t in s.get("trivial", [])
             if t.get("name") == "zeros"]
    check(tol.get("weak") is True and tol.get("atol") == 0.01 and
          0 < tol.get("suggested_atol", 0) < 1e-5 and len(zeros) == 2 and
          all(t["accepted"] and t["rel_l2"] == 1 and t["output"] == "out"
              for t in zeros),
          "kl check --tolerance --json: %s %s" % (p.stdout[-600:], p.stderr))
    # the probe says its seed, and --seed repeats it exactly
    check(isinstance(tol.get("seed"), int) and tol.get("seed") > 0,
          "kl check --tolerance --json says its seed: %s" % tol.get("seed"))
    again = []
    for _ in range(2):
        p = subprocess.run([KL, "check", sx, "--tolerance", "--json",
                            "--seed", "18446744073709551557"], env=ENV,
                           capture_output=True, text=True)
        try:
            again.append(json.loads(p.stdout)["tolerance"])
        except (ValueError, KeyError):
            again.append({"failed": p.stderr[-300:]})
    check(again[0].get("seed") == 18446744073709551557 and
          again[0] == again[1],
          "kl check --tolerance --seed N repeats itself: %s" % again)
    expect(sx, c("softmax_wrong_axis.c"), "INCORRECT", None,
           r"out is no closer to the reference than zeros")
    expect(sx, c("softmax_zeros.c"), "INCORRECT", None,
           r"shape wide.*no closer to the reference than zeros \(")
    expect(sx, c("softmax_mean.c"), "INCORRECT", None,
           r"no closer to the reference than each row's mean")
    expect(sx, c("softmax_transposed.c"), "INCORRECT", None,
           r"shape square.*no closer to the reference than the reference "
           r"transposed")
    expect(sx, c("softmax_small_only.c"), "INCORRECT", None,
           r"shape wide.*each row's mean")
    honest(sx, c("softmax_honest.c"))

    doc = honest(mm, c("honest_ikj.c"))
    check(doc is not None and "varied_inputs" in doc.get("gates_applied", []),
          "an honest host candidate's inputs were varied: %s"
          % (doc and doc.get("gates_applied")))
    honest(mm, c("honest_threads.c"))
    sandbox(mm, c("sandbox_probe.c"))
    honest(sm, c("sum_honest.c"))
    honest(mm, c("honest_ikj.c"), "--hot")


def cuda_suite():
    require_cuda()
    va = copy_case(SRC, "vector_add", os.path.join(TMP, "vector_add"))
    rs = copy_case(SRC, "reduce_sum_f32", os.path.join(TMP, "reduce"))
    # a fixed grid: with one block per 256 elements the launch alone costs
    # about what reading x from DRAM does, and nothing could beat the bound
    shutil.copy(os.path.join(HERE, "cuda", "reduce_gridstride.cu"),
                os.path.join(rs, "kernel.cu"))
    with open(os.path.join(rs, "case.yaml")) as f:
        y = f.read()
    with open(os.path.join(rs, "case.yaml"), "w") as f:
        f.write(y.replace('grid: ["ceil_div(n, 256)"]', "grid: [528]"))
    c = lambda n: os.path.join(HERE, "cuda", n)  # noqa: E731
    expect(va, c("warmup_cache.cu"), "CHEAT", "stale_outputs",
           r"did not match the inputs")
    expect(va, c("detects_timing.cu"), "CHEAT", "stale_outputs",
           r"did not match the inputs")
    # memoising on a fingerprint of the inputs, as on the host: with inputs
    # varied per sample the kept result is stale in the last sample (the
    # copy of a 512 x 512 product moves less than twice what its roofline
    # bytes are); unless the last two rounds' changes hit a fingerprinted
    # value (4 x 1/256 a shape, both shapes 2.4e-4 a run: asked twice)
    gm = copy_case(SRC, "gemm_f32", os.path.join(TMP, "gemm"))
    with open(os.path.join(gm, "case.yaml")) as f:
        y = f.read()
    y = re.sub(r"shapes:\n(  - .*\n)+",
               "shapes:\n  - { name: s512, m: 512, n: 512, k: 512 }\n"
               "  - { name: wide, m: 256, n: 1024, k: 512 }\n", y)
    with open(os.path.join(gm, "case.yaml"), "w") as f:
        f.write(y)
    expect(gm, c("gemm_memo.cu"), "CHEAT", "stale_outputs",
           r"did not match the inputs of .* varied by", tries=2)
    # the reduction that writes its kept answer from one thread: stale with
    # vary, and faster than DRAM allows without (the roofline on its own)
    expect(rs, c("reduce_memo.cu"), "CHEAT",
           ("stale_outputs", "faster_than_roofline"))
    expect(rs, c("reduce_memo.cu"), "CHEAT", "faster_than_roofline",
           r"DRAM peak", env=dict(ENV, KERNLAB_GATES_OFF="vary"))
    expect(va, c("partial_output.cu"), "INCORRECT", None,
           r"never written")
    gpu_cands = os.path.join(SRC, "tests", "gpu", "candidates")
    expect(va, os.path.join(gpu_cands, "vector_add_writes_input.cu"),
           "INCORRECT", None, r"wrote its input")
    expect(va, c("nan_output.cu"), "INCORRECT", None, r"NaN")
    expect(va, c("late_thread.cu"), "CHEAT", "work_after_return",
           r"work went on after the launch returned", "--shape", "1M")
    expect(va, c("skip_when_timed.cu"), "CHEAT", "timed_work",
           r"while timed, .*skipped")
    honest(va, os.path.join(gpu_cands, "vector_add_float4.cu"))
    honest(rs, c("reduce_honest.cu"))
    # a wrong answer that fits a loose tolerance: 1e-6 on outputs of 1e-3
    # (the honest warp-per-row kernel, every output + 1e-6: rows summing to
    # 1.001 at 1024 columns, 1.004 at 4096)
    sf = copy_case(SRC, "softmax_f32", os.path.join(TMP, "softmax"))
    honest_sf = os.path.join(SRC, "cases", "softmax_f32", "candidates",
                             "warp_per_row.cu")
    with open(honest_sf) as f:
        src = f.read()
    store = "outr[c] = __expf(xr[c] - m) * inv;"
    check(store in src, "warp_per_row.cu still stores as the offset expects")
    offset = os.path.join(TMP, "softmax_offset.cu")
    with open(offset, "w") as f:
        f.write(src.replace(store, store[:-1] + " + 1e-6f;"))
    expect(sf, offset, "INCORRECT", None, r"mismatch")
    honest(sf, honest_sf)
    # a workspace (role scratch): never checked, poisoned before each launch
    sc = os.path.join(TMP, "scratch")
    shutil.copytree(c("scratch"), sc)
    honest(sc, os.path.join(sc, "direct.cu"))
    honest(sc, os.path.join(sc, "reuse.cu"))  # stale if not poisoned again
    expect(sc, os.path.join(sc, "leftover.cu"), "INCORRECT", None,
           r"mismatch|NaN|never written")
    python_suite()


def python_suite():
    """KernelBench-format candidates (a ModelNew each) against a problem
    whose outputs are all far under KernelBench's tolerance."""
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except ImportError as e:
        print(f"python part skipped: {e}")
        return
    here = os.path.join(HERE, "python")
    sx = os.path.join(TMP, "kb_softmax")
    p = subprocess.run([KL, "case", "from-kernelbench",
                        os.path.join(here, "softmax_4093.py"), "-o", sx],
                       env=ENV, capture_output=True, text=True)
    check(p.returncode == 0, f"from-kernelbench: {p.stdout} {p.stderr}")
    # the import itself probes KernelBench's 1e-2 at the problem's shape
    check("tolerance is weak" in p.stdout and "zeros nearly accepted" in
          p.stdout, f"from-kernelbench probes the tolerance: {p.stdout}")
    p = subprocess.run([KL, "check", sx, "--tolerance"], env=ENV,
                       capture_output=True, text=True, timeout=600)
    print(p.stdout[-900:], flush=True)
    # zeros fails KernelBench's 1e-2 only at the few largest of 16.7 M
    check(p.returncode == 0 and "tolerance is weak" in p.stdout and
          "zeros nearly accepted" in p.stdout,
          f"kl check --tolerance: {p.stdout[-500:]} {p.stderr[-500:]}")
    c = lambda n: os.path.join(here, n)  # noqa: E731
    # the wrong axis is close here (4096 and 4093 normalise alike: 3%), but
    # not the margin closer than the row means are
    expect(sx, c("wrong_axis.py"), "INCORRECT", None,
           r"only [0-9.]+ times closer to the reference than each row's mean")
    expect(sx, c("zeros.py"), "INCORRECT", None, r"zeros|mismatches")
    expect(sx, c("memo_address.py"), "CHEAT", "timed_work",
           r"while timed, .*(no kernel|skipped)")
    expect(sx, c("memo_content.py"), "CHEAT", "timed_work",
           r"while timed, .*skipped")
    triton = os.path.join(SRC, "bench", "kernelbench", "candidates",
                          "2_softmax_rows", "triton_softmax.py")
    honest(sx, triton)
    honest(sx, c("lower_precision.py"))  # KernelBench's 1e-2 allows bf16
    # the case states float32's precision: the bf16 path is then wrong
    with open(os.path.join(sx, "case.yaml")) as f:
        y = f.read()
    check("atol: 1e-2, rtol: 1e-2" in y, "from-kernelbench's tolerance line")
    with open(os.path.join(sx, "case.yaml"), "w") as f:
        f.write(y.replace("atol: 1e-2, rtol: 1e-2", "atol: 1e-8, rtol: 1e-4"))
    expect(sx, c("lower_precision.py"), "INCORRECT", None, r"mismatches")
    honest(sx, triton)


(cuda_suite if MODE == "cuda" else host_suite)()
if FAILS:
    print(f"{len(FAILS)} failure(s)")
    sys.exit(1)
shutil.rmtree(TMP, ignore_errors=True)
print("ok")
