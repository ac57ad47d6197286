"""kernlab's Python-level observer: `kl observe` puts this folder first on
PYTHONPATH, so a Python program it runs imports this file at start-up.

The CUDA injection library (inject.c) sees every launch at the driver level,
Triton's included, but not what a Python program called: which @triton.jit
function, with which tensors (shapes, strides, dtypes), scalars, constexprs
and launch options. This file records that. When `triton.runtime.jit` is
imported, JITFunction.run is wrapped; each call is noted by configuration
(an autotuner's benchmarking calls as its `tries`, apart from the `calls`
the program made: Autotuner._bench is wrapped too): the kernel's name,
file and line, the grid as launched, each parameter as a tensor
description or a value, the options. The first call of a configuration
also notes which tensors it wrote (each tensor argument is copied before
and compared after, bytewise, on a synchronized device) and the range of
the integer tensors it read; later calls only count. Each call's ordinal
among the process's launches of that kernel is kept (up to 10000 per
configuration), so kl can join the configuration with the driver-level
launches and their GPU time.

At exit the records go to $KL_OBSERVE_OUT/py-<pid>.json, which kl observe
merges into the observation ("python_launches", docs/observe.md). Anything
that goes wrong here is written to the same file as an error and never
reaches the program. A sitecustomize further down the path is still run.
"""
import atexit
import importlib.machinery
import importlib.util
import json
import os
import sys
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
_OUT = os.environ.get("KL_OBSERVE_OUT", "")
_MAX_CONFIGS = 4096
_MAX_ORDINALS = 10000
_lock = threading.Lock()
_configs = {}  # key -> record
_order = []  # keys, in first-seen order
_ordinal = {}  # kernel name -> launches so far
_errors = []
_dropped = [0]
_tls = threading.local()  # .tuning: inside an autotuner's benchmark


def _note_error(what):
    if len(_errors) < 20:
        _errors.append(what)


def _describe(name, value):
    """A parameter as JSON: a tensor's layout, else its value."""
    if hasattr(value, "data_ptr") and hasattr(value, "stride"):
        return {"name": name, "tensor": {
            "shape": list(value.shape), "stride": list(value.stride()),
            "dtype": str(value.dtype).replace("torch.", ""),
            "device": str(value.device)}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"name": name, "value": value}
    inner = getattr(value, "value", None)  # tl.constexpr
    if isinstance(inner, (bool, int, float, str)):
        return {"name": name, "value": inner}
    return {"name": name, "value": None, "unrecorded": type(value).__name__}


def _key(d):
    if "tensor" in d:
        t = d["tensor"]
        return (d["name"], tuple(t["shape"]), tuple(t["stride"]), t["dtype"])
    return (d["name"], repr(d.get("value")), d.get("unrecorded"))


def _bytes(t):
    import torch
    return t.detach().contiguous().view(-1).view(torch.uint8)


def _before(tensors):
    """Copies of the tensors' bytes, and the range of the integer ones."""
    import torch
    copies, ranges = [], []
    for t in tensors:
        copies.append(_bytes(t).clone() if t.numel() else None)
        integral = not (t.dtype.is_floating_point or t.dtype.is_complex or
                        t.dtype == torch.bool)
        ranges.append([int(t.min()), int(t.max())]
                      if integral and t.numel() else None)
    return copies, ranges


def _changed(tensors, copies):
    import torch
    torch.cuda.synchronize()
    return [c is not None and not torch.equal(_bytes(t), c)
            for t, c in zip(tensors, copies)]


def _grid_of(grid, meta):
    g = grid(meta) if callable(grid) else grid
    g = [int(x) for x in g]
    return g + [1] * (3 - len(g))


def _params(self):
    """The kernel's parameters (name, default), cached on the function."""
    p = getattr(self, "_kl_params", None)
    if p is None:
        import inspect
        sig = inspect.signature(self.fn).parameters.values()
        p = [(x.name, x.default, x.default is not x.empty) for x in sig]
        self._kl_params = p
    return p


def _config(self, args, kwargs):
    """The call's key, its record's fields and the bound arguments."""
    fn = self.fn
    params = _params(self)
    names = [n for n, _, _ in params]
    bound, options = dict(zip(names, args)), {}
    for k, v in kwargs.items():
        if k in ("grid", "warmup"):
            continue
        if k in names:
            bound[k] = v
        elif v is None or isinstance(v, (bool, int, float, str)):
            options[k] = v
    meta = dict(bound)
    for n, default, has in params:
        if n not in meta and has:
            meta[n] = default
    described = [_describe(n, bound[n]) for n in names if n in bound]
    g = _grid_of(kwargs.get("grid"), meta)
    key = (fn.__code__.co_filename, fn.__name__, tuple(g),
           tuple(_key(d) for d in described),
           tuple(sorted((k, repr(v)) for k, v in options.items())))
    rec = {"kernel": fn.__name__,
           "qualname": getattr(fn, "__qualname__", fn.__name__),
           "file": os.path.abspath(fn.__code__.co_filename),
           "line": fn.__code__.co_firstlineno,
           "grid": g, "args": described, "options": options,
           "calls": 0, "tries": 0, "ordinals": []}
    return key, rec, bound


def _wrap(jit):
    original = jit.JITFunction.run

    def run(self, *args, **kwargs):
        if kwargs.get("warmup") or not _OUT:
            return original(self, *args, **kwargs)
        try:
            key, fresh, bound = _config(self, args, kwargs)
        except Exception as e:  # never the program's problem
            _note_error("%s: %s" % (type(e).__name__, e))
            return original(self, *args, **kwargs)
        with _lock:
            name = fresh["kernel"]
            ordinal = _ordinal.get(name, 0)
            _ordinal[name] = ordinal + 1
            rec = _configs.get(key)
            first = rec is None
            if first:
                if len(_configs) >= _MAX_CONFIGS:
                    _dropped[0] += 1
                    return original(self, *args, **kwargs)
                rec = _configs[key] = fresh
                _order.append(key)
            if getattr(_tls, "tuning", 0):
                rec["tries"] += 1
            else:
                rec["calls"] += 1
            if len(rec["ordinals"]) < _MAX_ORDINALS:
                rec["ordinals"].append(ordinal)
        if not first:
            return original(self, *args, **kwargs)
        found = [(d, bound[d["name"]]) for d in rec["args"]
                 if "tensor" in d and
                 d["tensor"]["device"].startswith("cuda")]
        tensors = [t for _, t in found]
        if not tensors:
            return original(self, *args, **kwargs)
        try:
            copies, ranges = _before(tensors)
        except Exception as e:
            _note_error("%s: %s" % (type(e).__name__, e))
            return original(self, *args, **kwargs)
        result = original(self, *args, **kwargs)  # its errors are its own
        try:
            wrote = _changed(tensors, copies)
        except Exception as e:
            _note_error("%s: %s" % (type(e).__name__, e))
            return result
        for (d, _), w, r in zip(found, wrote, ranges):
            d["tensor"]["written"] = w
            if r is not None:
                d["tensor"]["range"] = r
        return result

    jit.JITFunction.run = run


def _wrap_autotuner(autotuner):
    """Calls made while an autotuner benchmarks its configs are tries."""
    cls = getattr(autotuner, "Autotuner", None)
    bench = getattr(cls, "_bench", None)
    if bench is None:
        _note_error("no Autotuner._bench: autotuning tries count as calls")
        return

    def _bench(self, *args, **kwargs):
        _tls.tuning = getattr(_tls, "tuning", 0) + 1
        try:
            return bench(self, *args, **kwargs)
        finally:
            _tls.tuning -= 1

    cls._bench = _bench


_WRAPS = {"triton.runtime.jit": _wrap,
          "triton.runtime.autotuner": _wrap_autotuner}


class _Finder:
    """Wraps Triton's launch and autotuner as their modules finish
    importing."""

    def find_spec(self, name, path, target=None):
        wrap = _WRAPS.get(name)
        if wrap is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        done = loader.exec_module

        def exec_module(module):
            done(module)
            try:
                wrap(module)
            except Exception as e:
                _note_error("wrapping %s: %s" % (name, e))
        loader.exec_module = exec_module
        return spec


def _versions():
    out = {"python": sys.version.split()[0]}
    for m in ("triton", "torch"):
        mod = sys.modules.get(m)
        if mod is not None:
            out[m] = getattr(mod, "__version__", None)
    return out


def _write():
    if not _OUT or (not _configs and not _errors):
        return
    try:
        with _lock:
            doc = {"kernlab_python_launches": 1, "pid": os.getpid(),
                   "versions": _versions(), "errors": list(_errors),
                   "dropped_configs": _dropped[0],
                   "configs": [_configs[k] for k in _order]}
        path = os.path.join(_OUT, "py-%d.json" % os.getpid())
        with open(path + ".tmp", "w") as f:
            json.dump(doc, f)
        os.replace(path + ".tmp", path)
    except Exception:
        pass


def _chain():
    """Run the sitecustomize this file shadows, if the path has one."""
    rest = [p for p in sys.path
            if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)


if _OUT:
    sys.meta_path.insert(0, _Finder())
    atexit.register(_write)
_chain()
