#!/usr/bin/env python3
"""kl-pyworker's scale() (kernlab/plugin.h, kl_plugin_scale) on a CUDA
device: its two ways, the whole output at once (_scale_whole) and a chunk
at a time (_scale_chunked, for outputs too large for float64 copies), give
the sums a plain float64 computation on the host gives, on outputs with
NaN and Inf in them, of one row, of single-element rows, of one element,
in float32 and bfloat16 (ctest label gpu; exit 77 without a device or
torch). usage: test_scale_gpu.py SOURCE_DIR"""
import importlib.util
import math
import os
import sys
import types

SRC = sys.argv[1]
sys.path.insert(0, os.path.join(SRC, "tests", "run"))
from support import FAILS, check, require_cuda_torch  # noqa: E402

require_cuda_torch()
import torch  # noqa: E402

spec = importlib.util.spec_from_file_location(
    "kl_pyworker", os.path.join(SRC, "kl-worker", "kl_pyworker.py"))
pw = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pw)
TP = pw.TorchPlugin


def plain(w, g, r, atol, rtol):
    """The sums, element by element in float64 on the host (the harness's
    klh_scale_host, written again)."""
    w = w.double().cpu().reshape(-1).tolist()
    g = g.double().cpu().reshape(-1).tolist()
    n = len(w)
    cols = n // r
    mrows, mlen = (r, cols) if cols > 1 else (1, n)
    fin = [math.isfinite(x) for x in w]
    means = []
    for row in range(mrows):
        vals = [w[i] for i in range(row * mlen, (row + 1) * mlen) if fin[i]]
        means.append(sum(vals) / len(vals) if vals else 0.0)
    err = ref = 0.0
    tsq, tbad = [0.0] * 4, [0] * 4
    shift = (r // 2) * cols
    for i in range(n):
        if not fin[i]:
            continue
        x = w[i]
        ref += x * x
        if math.isfinite(g[i]):
            err += (g[i] - x) ** 2
        tol = atol + rtol * abs(x)
        ts = [0.0, means[i // mlen]]
        if r > 1:
            ts += [w[(i + shift) % n], w[(i % r) * cols + i // r]]
        for k, t in enumerate(ts):
            if math.isfinite(t):
                tsq[k] += (t - x) ** 2
                tbad[k] += abs(t - x) > tol
    applies = [True, n > 1, r > 1, r > 1]
    return err, ref, [s if a else -1.0 for s, a in zip(tsq, applies)], \
        [b if a else 0 for b, a in zip(tbad, applies)]


def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)


def run(label, w, g, r):
    me = types.SimpleNamespace(torch=torch, MANT_BITS=TP.MANT_BITS,
                               SCALE_CHUNK=1000,
                               desc={"atol": 1e-2, "rtol": 1e-2})
    want = plain(w, g, r, 1e-2, 1e-2)
    for how in ("_scale_whole", "_scale_chunked"):
        o = pw.ScaleResult()
        getattr(TP, how)(me, w.reshape(-1), g.reshape(-1), w.dtype, r, o)
        got = (o.err_sq, o.ref_sq, list(o.trivial_sq), list(o.trivial_bad))
        ok = (close(got[0], want[0]) and close(got[1], want[1]) and
              all(close(a, b) for a, b in zip(got[2], want[2])) and
              got[3] == want[3] and o.rows == r)
        check(ok, "%s %s: %s, want %s" % (label, how, got, want))
        print("%-28s %-15s ok=%s max_ulp=%.3g" % (label, how, ok, o.max_ulp))


torch.manual_seed(7)
dev = "cuda"
w = torch.softmax(torch.randn(64, 37, device=dev), dim=1)
g = w + 1e-7 * torch.randn_like(w)
w[3, 5] = float("nan")
w[10, 0] = float("inf")
g[7, 7] = float("nan")
run("f32 64x37, NaN and Inf", w, g, 64)
run("f32 1-D of 1000", w.reshape(-1)[:1000].clone(), g.reshape(-1)[:1000].clone(), 1)
run("f32 single-element rows", w[:, :1].clone(), g[:, :1].clone(), 1)
run("f32 one element", w[:1, :1].clone(), g[:1, :1].clone(), 1)
b = torch.randn(48, 40, device=dev).to(torch.bfloat16)
run("bf16 48x40", b, (b.float() * 1.01).to(torch.bfloat16), 48)
if FAILS:
    print("%d failure(s)" % len(FAILS))
    sys.exit(1)
print("ok")
