"""How kl-pyworker imports a case's module and a candidate file, and says
what went wrong when one fails: one line with where it was raised, and for
a kernel language python3 cannot import, the package that installs it."""
import importlib.util
import os
import sys
import traceback


def import_file(name, path, stands_for=None):
    """The module in the file at path. A candidate (kept in the compile
    cache) stands for the case's module file, as a CUDA candidate stands
    for the case's kernel file: its __file__ is that file's path, so code
    that finds its neighbours from __file__ (a KernelBench case's ops.py
    finds problem.py) runs the same from a candidate; the case's folder is
    on sys.path for both (a module beside it imports)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ImportError("cannot import %s" % path)
    mod = importlib.util.module_from_spec(spec)
    home = os.path.dirname(os.path.abspath(stands_for or path))
    if home not in sys.path:
        sys.path.insert(0, home)
    if stands_for:
        mod.__file__ = os.path.abspath(stands_for)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


# A kernel language's module that python3 lacks, and what installs it.
DSL_PACKAGES = {
    "cutlass": "CuTe DSL: pip install 'nvidia-cutlass-dsl[cu13]'",
    "cuda.tile": "cuTile: pip install 'cuda-tile[tileiras]'",
    "triton": "Triton: pip install triton",
    "cupy": "CuPy: pip install cupy-cuda13x",
    "torch": "PyTorch: pip install torch",
    "cuda": "cuda.bindings: pip install cuda-python; cuda.tile: pip install "
            "'cuda-tile[tileiras]'",
}


def why():
    """The exception being handled, as one line plus where it was raised;
    a kernel language's missing module says what installs it."""
    kind, exc, tb = sys.exc_info()
    where = traceback.extract_tb(tb)[-1] if tb else None
    at = " (%s:%d)" % (os.path.basename(where.filename), where.lineno) \
        if where else ""
    hint = ""
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        for mod, how in DSL_PACKAGES.items():
            if exc.name == mod or exc.name.startswith(mod + "."):
                hint = " (%s, for the python3 the worker runs: %s)" % (
                    how, sys.executable)
                break
    return "%s: %s%s%s" % (kind.__name__, exc, at, hint)
