#!/usr/bin/env python3
"""kl-pyworker: kl-worker's sibling for Python kernels.

It serves the same protocol as kl-worker (one JSON request per line on fd 3)
through the same C loop: libkernlab-worker.so's kl_worker_serve. What differs
is how a plugin is made: a "load" names a JSON description of a Python case
(its module, the candidate file if any, params, shapes, tolerances), and this
file builds a kl_plugin from it whose functions are Python callbacks
(ctypes). So the checks (fresh seeds, inputs unchanged, NaN, stale outputs,
work after return), the sampler and the CUPTI activity timer are kernlab's C
code, in this process; every kernel a forward launches, on any stream, is
timed between the same markers as a CUDA candidate's (the flush and the
clock probe come from libkernlab-device.so, the harness's own kernels).

The case's module (ops.py) defines
    inputs(shape, seed)  -> the inputs and inouts, in the params' order, as
                            device tensors (shape: the shape's values, a dict)
    reference(*inputs)   -> the outputs (a tensor or a tuple), the oracle
    forward(*inputs)     -> the outputs: the baseline
Both update the inouts in place (reference on copies of its own).
and a candidate file defines forward(*inputs) the same way, in any DSL
importable here (PyTorch, Triton, CuPy, CuTe DSL, cuTile ...). A module
may also define forward_of(candidate_module) -> forward, for candidates in
another form (a KernelBench case's ModelNew class). A host case
("device": "host") passes objects with the buffer protocol instead (numpy
arrays, array.array), timed by the worker's host timer.

Installed as libexec/kernlab/kl-pyworker, with its modules beside it:
kl_pyworker_abi.py (the ctypes mirror of kl_plugin), kl_pyworker_load.py
(importing a case's files, saying why one failed) and kl_pyworker_parent.py
(the warm parent, --zygote). Environment: KERNLAB_WORKER_LIB and
KERNLAB_DEVICE_LIB name the two libraries (default: beside this file).
"""
import contextlib
import ctypes
import json
import math
import os
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # its own modules lie beside it
    sys.path.insert(0, HERE)
from kl_pyworker_abi import (  # noqa: E402
    BYTES, CHANGED, CHECK, CLOCK_READ, CREATE, DESTROY, DTYPES, INTACT,
    LAST_ERROR, MARK, NO_REFERENCE, NOTES, ONE, PREPARE, READ, REFERENCE,
    ROLES, SCALE, SET_STREAM, STREAM, VOIDP, PluginStruct)
from kl_pyworker_load import import_file as _import_file  # noqa: E402
from kl_pyworker_load import why as _why  # noqa: E402


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _jit_variants(fn):
    """How many compiled variants a Triton JITFunction holds: Triton 3.x
    keeps device_caches {device: (kernels by key, ...)}, older ones cache
    {device: {key: kernel}}."""
    n = 0
    for v in (getattr(fn, "device_caches", None) or {}).values():
        if isinstance(v, tuple) and v and isinstance(v[0], dict):
            n += len(v[0])
    for v in (getattr(fn, "cache", None) or {}).values():
        if isinstance(v, dict):
            n += len(v)
    return n


class PluginBase:
    """One kl_plugin made of a case's module and, for a candidate, its file:
    what the device (TorchPlugin) and the host (HostPlugin) kinds share.
    Instances are small integers the C side holds as pointers."""

    device = False

    def __init__(self, desc, index):
        self.desc = desc
        self.module = _import_file("kl_case_%d" % index, desc["module"])
        self.forward = self.module.forward
        self.cand_module = None
        if desc.get("candidate"):
            cand = _import_file("kl_candidate_%d" % index, desc["candidate"],
                                desc["module"])
            adapt = getattr(self.module, "forward_of", None)
            if callable(getattr(cand, "forward", None)):
                self.forward = cand.forward
            elif callable(adapt):  # e.g. a KernelBench ModelNew
                self.forward = adapt(cand)
            else:
                raise ValueError("%s defines no forward()" % desc["candidate"])
            self.cand_module = cand
        self.params = desc["params"]
        self.roles = [ROLES[p["role"]] for p in self.params]
        self.in_index = [i for i, r in enumerate(self.roles)
                         if r in (1, 3)]  # inputs() returns these, in order
        self.out_index = [i for i, r in enumerate(self.roles) if r == 2]
        self.shapes = desc["shapes"]
        self.instances = {}
        self.next_id = 1
        self.meta = {}  # shape -> bytes per param
        self.errors = {}  # id -> bytes of the last error (kept alive)
        self.create_error = b""
        self.calls = {}  # shape -> [call record] of its first two calls

    def _outputs(self, inst):
        """The param-indexed values of inst: its inputs, its last outputs."""
        t = [None] * len(self.params)
        for k, i in enumerate(self.in_index):
            t[i] = inst["inputs"][k]
        outs = inst.get("outputs")
        if outs is not None:
            for k, i in enumerate(self.out_index):
                t[i] = outs[k] if k < len(outs) else None
        return t

    def _fail(self, iid, msg):
        self.errors[iid] = msg.encode("utf-8", "replace")[:1000]
        return 1

    def _check_arity(self, ins, outs):
        if ins is not None and len(ins) != len(self.in_index):
            raise ValueError("inputs() gave %d values, the params name %d "
                             "inputs and inouts" % (len(ins),
                                                    len(self.in_index)))
        if outs is not None and len(outs) < len(self.out_index):
            raise ValueError("forward returned %d outputs, the params name "
                             "%d" % (len(outs), len(self.out_index)))

    def _on_stream(self):
        """Where the module's and the candidate's code runs: the device
        kind's stream; nothing on the host."""
        return contextlib.nullcontext()

    def _inputs(self, shape, seed):
        with self._on_stream():
            ins = _as_tuple(self.module.inputs(
                dict(self.shapes[shape]["values"]), int(seed)))
        self._check_arity(ins, None)
        return list(ins)

    def launch(self, iid):
        """forward on the instance's inputs. A shape's first two calls (JIT
        compilation and autotuning happen in the first) are noted: wall
        time from an idle device to an idle device, and what the call
        allocated (_alloc_stats)."""
        inst = self.instances[iid]
        seen = self.calls.setdefault(inst["shape"], [])
        noted = len(seen) < 2
        try:
            if noted:
                self._idle()
                before = self._alloc_stats()
                t0 = time.perf_counter()
            with self._on_stream():
                out = _as_tuple(self.forward(*inst["inputs"]))
            if noted:
                self._idle()
                rec = {"ms": (time.perf_counter() - t0) * 1e3}
                after = self._alloc_stats()
            self._check_arity(None, out)
            inst["outputs"] = out
            if noted:
                if before is not None and after is not None:
                    rec.update({k: after[k] - before[k] for k in before})
                seen.append(rec)
            return 0
        except Exception:
            return self._fail(iid, "forward: " + _why())

    def _idle(self):
        """Wait for the device (nothing on the host)."""

    def _alloc_stats(self):
        """Counters of the allocations a call makes, or None."""
        return None

    def _autotuned(self):
        """Triton autotuners of the candidate (or the module) and the
        configs they chose, and the variants each JIT kernel compiled."""
        tuned, jit = [], []
        # a candidate's own kernels, else the module's
        mod = self.cand_module if self.cand_module is not None else self.module
        seen = set()  # a kernel under two names is counted once
        for name, obj in sorted(vars(mod).items()):
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            kind = type(obj).__name__
            if kind == "Autotuner" and hasattr(obj, "best_config"):
                fn = getattr(obj, "fn", None)
                best = getattr(obj, "best_config", None)
                if best is not None:
                    tuned.append({"kernel": getattr(fn, "__name__", name),
                                  "config": str(best)})
                obj = fn
                kind = type(obj).__name__
            if kind == "JITFunction":
                n = _jit_variants(obj)
                if n:
                    jit.append({"kernel": getattr(obj, "__name__", name),
                                "variants": n})
        return tuned, jit

    def notes(self):
        shapes = []
        for shape, recs in sorted(self.calls.items()):
            if not recs:
                continue
            s = {"shape": self.shapes[shape]["name"],
                 "first_call_ms": round(recs[0]["ms"], 4)}
            if len(recs) > 1:
                s["second_call_ms"] = round(recs[1]["ms"], 4)
                for k in ("allocations", "allocated_bytes", "device_mallocs"):
                    if k in recs[1]:
                        s[k] = recs[1][k]
            shapes.append(s)
        try:
            tuned, jit = self._autotuned()
        except Exception:
            tuned, jit = [], []
        text = json.dumps({"shapes": shapes, "autotuned": tuned,
                           "jit_kernels": jit})
        self._notes = ctypes.create_string_buffer(text.encode())
        return ctypes.addressof(self._notes)

    def input_intact(self, iid, p):
        """1 unless input p differs from what prepare() made (each kind
        compares its own way: _intact)."""
        inst = self.instances[iid]
        if self.roles[p] != 1:
            return 1
        k = self.in_index.index(p)
        return int(self._intact(inst["inputs"][k], inst["pristine"][k], p))

    def create(self, out, shape):
        try:
            if shape < 0 or shape >= len(self.shapes):
                raise ValueError("no shape %d" % shape)
            if shape not in self.meta:  # output sizes: the oracle's, once
                self.meta[shape] = self._sizes(shape)
            iid = self.next_id
            self.next_id += 1
            self.instances[iid] = {"shape": shape, "inputs": [],
                                   "pristine": [], "outputs": None}
            out[0] = iid
            return 0
        except Exception:
            self.create_error = _why().encode("utf-8", "replace")[:1000]
            return 1

    def buffer_bytes(self, iid, p):
        inst = self.instances.get(iid)
        return self.meta[inst["shape"]][p] if inst else 0

    def destroy(self, iid):
        self.instances.pop(iid, None)
        self.errors.pop(iid, None)

    def last_error(self, iid):
        msg = self.errors.get(iid, b"") if iid else self.create_error
        self._last = ctypes.create_string_buffer(msg or b"no error")
        return ctypes.addressof(self._last)


    # ---- the C struct: every function wrapped, none may raise into C ----
    def _struct(self):
        def keep(fn_type, fn, ret_on_error):
            def wrapped(*args):
                try:
                    return fn(*args)
                except BaseException:  # nothing may cross into C
                    sys.stderr.write("kl-pyworker: %s\n" % _why())
                    return ret_on_error
            return fn_type(wrapped)

        def iid(fn):  # C hands instances back as void*: small integers
            return lambda inst, *a: fn(inst or 0, *a)

        enc = [s["name"].encode() for s in self.shapes]
        pn = [p["name"].encode() for p in self.params]
        self._names = (ctypes.c_char_p * len(enc))(*enc)
        self._pnames = (ctypes.c_char_p * len(pn))(*pn)
        self._roles = (ctypes.c_int32 * len(pn))(*self.roles)
        self._dt = (ctypes.c_int32 * len(pn))(
            *[DTYPES.index(p["dtype"]) for p in self.params])
        s = PluginStruct()
        s.abi_version = 1
        s.struct_size = ctypes.sizeof(PluginStruct)
        s.case_name = self.desc["case"].encode()
        s.entry = b"forward"
        # not "cuda": the launch contract binds a compiled launcher; a
        # forward may allocate (PyTorch's caching allocator does)
        s.backend = b"python"
        s.nshapes = len(self.shapes)
        s.nparams = len(self.params)
        s.shape_names = self._names
        s.param_names = self._pnames
        s.param_roles = self._roles
        s.param_dtypes = self._dt
        s.atol = self.desc["atol"]
        s.rtol = self.desc["rtol"]
        s.create = keep(CREATE, self.create, 1)
        s.prepare = keep(PREPARE, iid(self.prepare), 1)
        s.restore = keep(ONE, iid(self.restore), 1)
        s.launch = keep(ONE, iid(self.launch), 1)
        s.sync = keep(ONE, iid(self.sync), 1)
        s.reference = keep(REFERENCE, iid(self.reference), 1)
        s.buffer_bytes = keep(BYTES, iid(self.buffer_bytes), 0)
        s.read = keep(READ, iid(self.read), 1)
        s.check = keep(CHECK, iid(self.check), 1)
        s.input_intact = keep(INTACT, iid(self.input_intact), 0)
        s.destroy = keep(DESTROY, iid(self.destroy), None)
        s.last_error = keep(LAST_ERROR, iid(self.last_error), None)
        if self.device:  # a host plugin leaves them NULL: the host timer
            s.flush = keep(ONE, iid(self.flush), 1)
            s.clock_mark = keep(MARK, iid(self.clock_mark), 1)
            s.flush_mark = keep(ONE, iid(self.flush_mark), 1)
            s.clock_read = keep(CLOCK_READ, iid(self.clock_read), 1)
            s.stream = keep(STREAM, iid(self.stream_of), None)
            s.set_stream = keep(SET_STREAM, iid(self.set_stream), 1)
            s.snapshot = keep(INTACT, iid(self.snapshot), 1)
            s.changed_bytes = keep(CHANGED, iid(self.changed_bytes), 1)
            s.scale = keep(SCALE, iid(self.scale), 1)
        s.kernel_info = None
        s.notes = keep(NOTES, self.notes, None)
        self.struct = s


class TorchPlugin(PluginBase):
    """A device case: inputs, outputs and the oracle's values are torch
    tensors on the GPU; forward runs on the plugin's stream, where the
    harness's flush and clock probe run too (libkernlab-device.so)."""

    device = True

    def __init__(self, desc, device_lib, index):
        import torch
        self.torch = torch
        self.dev = device_lib
        super().__init__(desc, index)
        self.dtypes = [getattr(torch, {
            "f64": "float64", "f32": "float32", "f16": "float16",
            "bf16": "bfloat16", "i64": "int64", "i32": "int32",
            "i16": "int16", "i8": "int8", "u8": "uint8", "u16": "uint16",
            "u32": "uint32", "u64": "uint64"}[p["dtype"]])
            for p in self.params]
        self.stream = torch.cuda.Stream()
        self.probes = device_lib.kl_device_probes_new()
        if not self.probes:
            raise MemoryError("no memory for the clock probes")
        self._struct()

    # ---- helpers ----------------------------------------------------------
    def _on_stream(self):
        return self.torch.cuda.stream(self.stream)

    def _idle(self):
        self.torch.cuda.synchronize()

    def _alloc_stats(self):
        st = self.torch.cuda.memory_stats()
        return {"allocations": st.get("allocation.all.allocated", 0),
                "allocated_bytes": st.get("allocated_bytes.all.allocated", 0),
                "device_mallocs": st.get("segment.all.allocated", 0)}

    def _host_view(self, ptr, nbytes, p):
        buf = (ctypes.c_char * int(nbytes)).from_address(ptr)
        return self.torch.frombuffer(buf, dtype=self.dtypes[p])

    # ---- the plugin's functions -------------------------------------------
    def _sizes(self, shape):
        ins = self._inputs(shape, 1)
        with self._on_stream():
            ref = _as_tuple(self.module.reference(*ins))
        sizes = [0] * len(self.params)
        for k, i in enumerate(self.in_index):
            sizes[i] = ins[k].numel() * ins[k].element_size()
        for k, i in enumerate(self.out_index):
            sizes[i] = ref[k].numel() * self.dtypes[i].itemsize
        return sizes

    def prepare(self, iid, seed, poison):
        inst = self.instances[iid]
        try:
            inst["inputs"] = self._inputs(inst["shape"], seed)
            with self._on_stream():  # after the inputs
                inst["pristine"] = [x.clone() for x in inst["inputs"]]
            inst["outputs"] = None
            inst["seed"] = seed
            self.torch.cuda.synchronize()
            return 0
        except Exception:
            return self._fail(iid, "prepare: " + _why())

    def restore(self, iid):
        inst = self.instances[iid]
        with self._on_stream():
            for k, i in enumerate(self.in_index):
                if self.roles[i] == 3:
                    inst["inputs"][k].copy_(inst["pristine"][k])
        return 0

    def sync(self, iid):
        try:
            self.torch.cuda.synchronize()
            return 0
        except Exception:
            return self._fail(iid, "sync: " + _why())

    def reference(self, iid, want):
        inst = self.instances[iid]
        try:
            with self._on_stream():
                ins = [x.clone() for x in inst["pristine"]]
                ref = _as_tuple(self.module.reference(*ins))
            self.stream.synchronize()  # .cpu() below waits for its own only
            sizes = self.meta[inst["shape"]]
            for k, i in enumerate(self.out_index):
                dst = self._host_view(want[i], sizes[i], i)
                dst.copy_(ref[k].detach().reshape(-1).to(self.dtypes[i]).cpu())
            for k, i in enumerate(self.in_index):  # inouts: as it left them
                if self.roles[i] == 3:
                    dst = self._host_view(want[i], sizes[i], i)
                    dst.copy_(ins[k].detach().reshape(-1).cpu())
            return 0
        except Exception:
            return self._fail(iid, "reference: " + _why())

    def read(self, iid, p, dst, nbytes):
        try:
            t = self._outputs(self.instances[iid])[p]
            if t is None:
                raise ValueError("%s has no value yet" % self.params[p]["name"])
            if t.numel() * t.element_size() != nbytes:
                raise ValueError("%s has %d bytes, not %d" % (
                    self.params[p]["name"], t.numel() * t.element_size(),
                    nbytes))
            self.stream.synchronize()
            self._host_view(dst, nbytes, p).copy_(t.detach().reshape(-1).cpu())
            return 0
        except Exception:
            return self._fail(iid, "read: " + _why())

    # elements compared at a time: the comparison works in float64, so a
    # whole 6 GB output at once would want five times that on the device
    CHECK_CHUNK = 1 << 26

    def check(self, iid, p, want, res):
        torch = self.torch
        try:
            inst = self.instances[iid]
            got = self._outputs(inst)[p]
            nbytes = self.meta[inst["shape"]][p]
            ref = self._host_view(want, nbytes, p)
            r = res[0]
            r.elements = ref.numel()
            r.unwritten = 0
            if got is None or got.numel() != ref.numel():
                r.mismatches = ref.numel()
                r.nonfinite = 0
                r.max_abs_err = float("inf")
                r.first_bad = 0
                return 0
            flat = got.detach().reshape(-1)
            r.mismatches = r.nonfinite = 0
            r.max_abs_err = 0.0
            r.first_bad = -1
            for lo in range(0, flat.numel(), self.CHECK_CHUNK):
                hi = min(flat.numel(), lo + self.CHECK_CHUNK)
                g = flat[lo:hi].double()
                w = ref[lo:hi].to(got.device).double()
                finite_w = torch.isfinite(w)
                bad_nonfinite = finite_w & ~torch.isfinite(g)
                both = finite_w & torch.isfinite(g)
                err = torch.where(both, (g - w).abs(), torch.zeros_like(g))
                tol = self.desc["atol"] + self.desc["rtol"] * w.abs()
                bad = bad_nonfinite | (both & (err > tol)) | \
                    (~finite_w & (g != w) & ~(torch.isnan(g) & torch.isnan(w)))
                n_bad = int(bad.sum().item())
                r.mismatches += n_bad
                r.nonfinite += int(bad_nonfinite.sum().item())
                r.max_abs_err = max(r.max_abs_err, float(err.max().item()))
                if n_bad and r.first_bad < 0:
                    r.first_bad = lo + int(torch.nonzero(bad)[0].item())
            return 0
        except Exception:
            return self._fail(iid, "check: " + _why())

    # scale() works a chunk at a time too, with index tensors beside it
    SCALE_CHUNK = 1 << 24
    MANT_BITS = {"torch.float64": 52, "torch.float32": 23,
                 "torch.float16": 10, "torch.bfloat16": 7}

    def scale(self, iid, p, want, on_device, out):
        """kl_plugin_scale (kernlab/plugin.h): the output's distance from
        the oracle's beside trivial outputs made from the oracle's (zeros,
        each row's mean, the rows rolled by half, the transpose); the
        leading axis is the output tensor's first dimension. The same sums
        as the harness's klh_scale_host, on the device."""
        torch = self.torch
        try:
            inst = self.instances[iid]
            got = self._outputs(inst)[p]
            ref = self._host_view(want, self.meta[inst["shape"]][p], p)
            if (on_device or got is None or got.numel() != ref.numel() or
                    not ref.is_floating_point()):
                return NO_REFERENCE
            n = ref.numel()
            lead = got.shape[0] if got.dim() >= 2 else 1
            r = lead if 1 < lead < n and n % lead == 0 else 1
            cols = n // r
            mrows, mlen = (r, cols) if cols > 1 else (1, n)
            dev = got.device
            with self._on_stream():
                w_all = ref.to(dev)
                g_all = got.detach().reshape(-1)
                f64 = torch.float64
                rowsum = torch.zeros(mrows, dtype=f64, device=dev)
                rowcnt = torch.zeros(mrows, dtype=f64, device=dev)
                step = self.SCALE_CHUNK
                for lo in range(0, n, step):
                    hi = min(n, lo + step)
                    w = w_all[lo:hi].to(f64)
                    fin = torch.isfinite(w)
                    rows = torch.arange(lo, hi, device=dev) // mlen
                    rowsum.index_add_(0, rows, torch.where(fin, w, 0.0))
                    rowcnt.index_add_(0, rows, fin.to(f64))
                mean = rowsum / rowcnt.clamp(min=1)
                acc = torch.zeros(7, dtype=f64, device=dev)
                bad = torch.zeros(4, dtype=torch.int64, device=dev)
                ulp = torch.zeros((), dtype=f64, device=dev)
                mant = self.MANT_BITS.get(str(ref.dtype), 23)
                tiny = {52: -1021, 23: -125, 10: -13}.get(mant, -125)
                shift = (r // 2) * cols
                atol, rtol = self.desc["atol"], self.desc["rtol"]
                for lo in range(0, n, step):
                    hi = min(n, lo + step)
                    i = torch.arange(lo, hi, device=dev)
                    w = w_all[lo:hi].to(f64)
                    g = g_all[lo:hi].to(f64)
                    fin = torch.isfinite(w)
                    both = fin & torch.isfinite(g)
                    w0 = torch.where(fin, w, 0.0)
                    d = torch.where(both, g - w, 0.0)
                    acc[0] += (d * d).sum()
                    acc[1] += (w0 * w0).sum()
                    acc[2] += fin.sum()
                    _, e = torch.frexp(w0.abs())
                    e = torch.where(w0 == 0, torch.full_like(e, tiny), e)
                    u = d.abs() / torch.ldexp(torch.ones_like(w0),
                                              e - 1 - mant)
                    ulp = torch.maximum(ulp, u.max())
                    tol = atol + rtol * w0.abs()
                    ts = [torch.zeros_like(w0), mean[i // mlen]]
                    if r > 1:
                        ts.append(w_all[(i + shift) % n].to(f64))
                        ts.append(w_all[(i % r) * cols + i // r].to(f64))
                    for k, t in enumerate(ts):
                        ok = fin & torch.isfinite(t)
                        dt = torch.where(ok, t - w0, 0.0)
                        acc[3 + k] += (dt * dt).sum()
                        bad[k] += (ok & (dt.abs() > tol)).sum()
                vals = acc.tolist()
                nbad = bad.tolist()
                o = out[0]
                o.rows = r
                o.err_sq, o.ref_sq, o.counted = vals[0], vals[1], int(vals[2])
                for k in range(4):
                    applies = (k == 0 or (k == 1 and n > 1) or r > 1)
                    o.trivial_sq[k] = vals[3 + k] if applies else -1.0
                    o.trivial_bad[k] = nbad[k] if applies else 0
                o.max_ulp = float(ulp.item())
            return 0
        except Exception:
            return self._fail(iid, "scale: " + _why())

    def _intact(self, value, pristine, p):
        self.stream.synchronize()
        return self.torch.equal(value, pristine)

    def _bytes(self, t):
        """A tensor's bytes, flat, on the device (contiguous first)."""
        return t.detach().reshape(-1).contiguous().view(self.torch.uint8)

    def snapshot(self, iid, p):
        """A device copy of param p's value as it is now, for
        changed_bytes: the work-after-return check without reading an
        output back (a 6 GB output read twice a seed took seconds). Only
        the plugin's stream is waited for: work left running elsewhere
        must not be waited out before the copy is taken."""
        inst = self.instances[iid]
        try:
            t = self._outputs(inst)[p]
            with self._on_stream():
                copy = None if t is None else self._bytes(t).clone()
            self.stream.synchronize()
            inst.setdefault("snapshots", {})[p] = copy
            return 0
        except Exception:  # out of device memory: the worker reads back
            inst.get("snapshots", {}).pop(p, None)
            return self._fail(iid, "snapshot: " + _why())

    def changed_bytes(self, iid, p, n):
        inst = self.instances[iid]
        try:
            before = inst.get("snapshots", {}).pop(p)
            t = self._outputs(inst)[p]
            now = None if t is None else self._bytes(t)
            if before is None or now is None or before.numel() != now.numel():
                n[0] = 0 if before is None and now is None else max(
                    0 if before is None else before.numel(),
                    0 if now is None else now.numel())
                return 0
            changed = 0
            with self._on_stream():
                for lo in range(0, now.numel(), self.CHECK_CHUNK):
                    hi = min(now.numel(), lo + self.CHECK_CHUNK)
                    changed += int((now[lo:hi] != before[lo:hi]).sum().item())
            n[0] = changed
            return 0
        except Exception:
            return self._fail(iid, "changed_bytes: " + _why())

    def flush(self, iid):
        if self.dev.kl_device_flush(VOIDP(self.stream.cuda_stream)):
            return self._fail(iid, "flush: " +
                              self.dev.kl_device_error().decode())
        return 0

    def flush_mark(self, iid):
        if self.dev.kl_device_flush_mark(self.probes,
                                         VOIDP(self.stream.cuda_stream)):
            return self._fail(iid, "flush: " +
                              self.dev.kl_device_error().decode())
        return 0

    def clock_mark(self, iid, spin_ns):
        if self.dev.kl_device_clock_mark(self.probes,
                                         VOIDP(self.stream.cuda_stream),
                                         spin_ns):
            return self._fail(iid, "clock probe: " +
                              self.dev.kl_device_error().decode())
        return 0

    def clock_read(self, iid, mhz, cap, n):
        if self.dev.kl_device_clock_read(self.probes, mhz, cap, n):
            return self._fail(iid, "clock read: " +
                              self.dev.kl_device_error().decode())
        return 0

    def stream_of(self, iid):
        return self.stream.cuda_stream

    def set_stream(self, iid, stream):
        if stream and stream != self.stream.cuda_stream:
            self.stream = self.torch.cuda.ExternalStream(stream)
        return 0


class HostPlugin(PluginBase):
    """A host case ("device": "host"): values are objects with the buffer
    protocol (numpy arrays, array.array, bytearray) of the params' dtypes;
    the worker's host timer times forward and flushes the CPU's caches.
    Comparisons run on numpy when it is importable, else in Python."""

    FORMATS = {"f64": "d", "f32": "f", "f16": "e", "i64": "q", "i32": "i",
               "i16": "h", "i8": "b", "u64": "Q", "u32": "I", "u16": "H",
               "u8": "B"}

    def __init__(self, desc, index):
        super().__init__(desc, index)
        self.formats = []
        for p in self.params:
            if p["dtype"] not in self.FORMATS:
                raise ValueError("%s: dtype %s has no host buffer format"
                                 % (p["name"], p["dtype"]))
            self.formats.append(self.FORMATS[p["dtype"]])
        try:
            import numpy
            self.np = numpy
        except ImportError:
            self.np = None
        self._struct()

    def _view(self, value, p):
        """value's bytes as param p's elements (a copy when it is a list)."""
        if isinstance(value, (list, tuple)):
            import array
            value = array.array(self.formats[p], value)
        mv = memoryview(value).cast("B")
        size = struct.calcsize(self.formats[p])
        return mv.cast(self.formats[p], [mv.nbytes // size])

    def _sizes(self, shape):
        ins = self._inputs(shape, 1)
        ref = _as_tuple(self.module.reference(*ins))
        sizes = [0] * len(self.params)
        for k, i in enumerate(self.in_index):
            sizes[i] = self._view(ins[k], i).nbytes
        for k, i in enumerate(self.out_index):
            sizes[i] = self._view(ref[k], i).nbytes
        return sizes

    def prepare(self, iid, seed, poison):
        inst = self.instances[iid]
        try:
            inst["inputs"] = self._inputs(inst["shape"], seed)
            inst["pristine"] = [bytes(self._view(x, i)) for x, i in
                                zip(inst["inputs"], self.in_index)]
            inst["outputs"] = None
            return 0
        except Exception:
            return self._fail(iid, "prepare: " + _why())

    def restore(self, iid):
        inst = self.instances[iid]
        for k, i in enumerate(self.in_index):
            if self.roles[i] == 3:
                memoryview(inst["inputs"][k]).cast("B")[:] = \
                    inst["pristine"][k]
        return 0

    def sync(self, iid):
        return 0

    def _put(self, dst, nbytes, data):
        if len(data) != nbytes:
            raise ValueError("%d bytes where %d were expected"
                             % (len(data), nbytes))
        ctypes.memmove(dst, data, nbytes)

    def reference(self, iid, want):
        inst = self.instances[iid]
        try:
            ins = []
            for k, i in enumerate(self.in_index):  # fresh copies of pristine
                x = bytearray(inst["pristine"][k])
                ins.append(memoryview(x).cast(self.formats[i]))
            ref = _as_tuple(self.module.reference(*ins))
            sizes = self.meta[inst["shape"]]
            for k, i in enumerate(self.out_index):
                self._put(want[i], sizes[i], bytes(self._view(ref[k], i)))
            for k, i in enumerate(self.in_index):  # inouts: as it left them
                if self.roles[i] == 3:
                    self._put(want[i], sizes[i], bytes(ins[k].cast("B")))
            return 0
        except Exception:
            return self._fail(iid, "reference: " + _why())

    def read(self, iid, p, dst, nbytes):
        try:
            v = self._outputs(self.instances[iid])[p]
            if v is None:
                raise ValueError("%s has no value yet" % self.params[p]["name"])
            self._put(dst, nbytes, bytes(self._view(v, p)))
            return 0
        except Exception:
            return self._fail(iid, "read: " + _why())

    def check(self, iid, p, want, res):
        try:
            inst = self.instances[iid]
            nbytes = self.meta[inst["shape"]][p]
            expect = memoryview(ctypes.string_at(want, nbytes)).cast(
                self.formats[p])
            v = self._outputs(inst)[p]
            got = self._view(v, p) if v is not None else None
            r = res[0]
            r.elements = len(expect)
            r.unwritten = 0
            if got is None or len(got) != len(expect):
                r.mismatches, r.nonfinite = len(expect), 0
                r.max_abs_err, r.first_bad = float("inf"), 0
                return 0
            atol, rtol = self.desc["atol"], self.desc["rtol"]
            if self.np is not None:
                self._check_numpy(got, expect, self.formats[p], atol, rtol, r)
                return 0
            mism = nonfin = 0
            worst, first = 0.0, -1
            for n, (g, w) in enumerate(zip(got, expect)):
                g, w = float(g), float(w)
                if math.isfinite(w) and math.isfinite(g):
                    e = abs(g - w)
                    worst = max(worst, e)
                    bad = e > atol + rtol * abs(w)
                elif math.isfinite(w):
                    nonfin += 1
                    bad = True
                else:
                    bad = not (g == w or (math.isnan(g) and math.isnan(w)))
                if bad:
                    mism += 1
                    if first < 0:
                        first = n
            r.mismatches, r.nonfinite = mism, nonfin
            r.max_abs_err, r.first_bad = worst, first
            return 0
        except Exception:
            return self._fail(iid, "check: " + _why())

    def _check_numpy(self, got, expect, fmt, atol, rtol, r):
        np = self.np
        g = np.frombuffer(got, dtype=fmt).astype(np.float64)
        w = np.frombuffer(expect, dtype=fmt).astype(np.float64)
        fg, fw = np.isfinite(g), np.isfinite(w)
        both = fg & fw
        err = np.where(both, np.abs(g - w), 0.0)
        bad_nonfinite = fw & ~fg
        bad = bad_nonfinite | (both & (err > atol + rtol * np.abs(w))) | \
            (~fw & (g != w) & ~(np.isnan(g) & np.isnan(w)))
        r.mismatches = int(bad.sum())
        r.nonfinite = int(bad_nonfinite.sum())
        r.max_abs_err = float(err.max()) if err.size else 0.0
        idx = np.flatnonzero(bad)
        r.first_bad = int(idx[0]) if idx.size else -1

    def _intact(self, value, pristine, p):
        return bytes(self._view(value, p)) == pristine


def main():
    worker = ctypes.CDLL(os.environ.get(
        "KERNLAB_WORKER_LIB", os.path.join(HERE, "libkernlab-worker.so")))
    plugins = []  # alive for the process's life
    device = []  # libkernlab-device.so, opened with the first plugin

    def device_lib():
        if not device:
            lib = ctypes.CDLL(os.environ.get(
                "KERNLAB_DEVICE_LIB",
                os.path.join(HERE, "libkernlab-device.so")))
            lib.kl_device_error.restype = ctypes.c_char_p
            lib.kl_device_flush.argtypes = [VOIDP]
            lib.kl_device_probes_new.restype = VOIDP
            lib.kl_device_clock_mark.argtypes = [VOIDP, VOIDP, ctypes.c_int]
            lib.kl_device_flush_mark.argtypes = [VOIDP, VOIDP]
            lib.kl_device_clock_read.argtypes = [
                VOIDP, ctypes.POINTER(ctypes.c_double), ctypes.c_uint64,
                ctypes.POINTER(ctypes.c_uint64)]
            device.append(lib)
        return device[0]

    LOADER = ctypes.CFUNCTYPE(VOIDP, ctypes.c_char_p, VOIDP, ctypes.c_size_t)

    def load(path, err, errlen):
        desc = {}
        try:
            with open(path.decode()) as f:
                desc = json.load(f)
            if desc.get("device", "cuda") == "host":
                pl = HostPlugin(desc, len(plugins))
            else:
                pl = TorchPlugin(desc, device_lib(), len(plugins))
            plugins.append(pl)
            return ctypes.addressof(pl.struct)
        except BaseException:
            # the description's own fault names it; the module's or the
            # candidate's names their file (the cached candidate's as
            # "candidate")
            why = _why()
            if not desc:
                why = "%s: %s" % (path.decode(errors="replace"), why)
            elif desc.get("candidate"):
                why = why.replace(os.path.basename(desc["candidate"]),
                                  "candidate")
            msg = why.encode("utf-8", "replace")[:max(0, errlen - 1)]
            ctypes.memmove(err, msg + b"\0", len(msg) + 1)
            return None

    loader = LOADER(load)
    worker.kl_worker_serve.argtypes = [LOADER]
    worker.kl_worker_serve.restype = ctypes.c_int
    return worker.kl_worker_serve(loader)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--zygote":
        if HERE not in sys.path:
            sys.path.insert(0, HERE)
        import kl_pyworker_parent
        sys.exit(kl_pyworker_parent.zygote(sys.argv[2], float(sys.argv[3]),
                                           main, _why))
    sys.exit(main())
