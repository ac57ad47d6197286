"""kernlab: Python bindings over libkernlab (ctypes).

The bindings call the C library's public API and nothing else. The library
is found through $KERNLAB_LIBRARY, else next to this package's install
prefix, else the system loader path. Its version is checked at import.

    import kernlab
    case = kernlab.load_case("cases/vector_add")
    case.name, case.backend, [s["name"] for s in case.shapes]
"""
import ctypes
import ctypes.util
import json
import os

__all__ = ["KernlabError", "Case", "load_case", "check_case", "new_case",
           "version", "eval_expr"]

_ERROR_CODES = {
    -1: "ERROR", -2: "ENOMEM", -3: "EINVALID", -4: "ENOTFOUND", -5: "EIO",
    -6: "EBUSY", -7: "EUSER", -8: "EUNSUPPORTED", -9: "EEXISTS",
    -10: "ENODEVICE", -11: "ETIMEOUT", -12: "ECRASHED", -13: "EREJECTED",
}

# The headers this module was written against.
_API_MAJOR, _API_MINOR = 0, 1


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("domain", ctypes.c_int),
                ("message", ctypes.c_char_p), ("text", ctypes.c_char_p),
                ("path", ctypes.c_char_p), ("line", ctypes.c_int),
                ("column", ctypes.c_int), ("snippet", ctypes.c_char_p),
                ("sys_errno", ctypes.c_int)]


class _Buf(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p), ("size", ctypes.c_size_t),
                ("reserved", ctypes.c_size_t)]


class _Value(ctypes.Structure):
    _fields_ = [("is_int", ctypes.c_int), ("i", ctypes.c_int64),
                ("f", ctypes.c_double)]


_DIAG_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Error),
                            ctypes.c_void_p)


class _CaseOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("on_diag", _DIAG_FN),
                ("payload", ctypes.c_void_p)]


class _NewOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("template_name", ctypes.c_char_p),
                ("dir", ctypes.c_char_p)]


# One table of the C functions used: name -> (restype, argtypes).
_SIGNATURES = {
    "kl_version_number": (ctypes.c_uint, []),
    "kl_version_string": (ctypes.c_char_p, []),
    "kl_error_last": (ctypes.POINTER(_Error), []),
    "kl_buf_dispose": (None, [ctypes.POINTER(_Buf)]),
    "kl_case_load": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.c_char_p,
                                    ctypes.POINTER(_CaseOptions)]),
    "kl_case_free": (None, [ctypes.c_void_p]),
    "kl_case_describe_json": (ctypes.c_int, [ctypes.POINTER(_Buf),
                                             ctypes.c_void_p]),
    "kl_case_new": (ctypes.c_int, [ctypes.POINTER(_Buf), ctypes.c_char_p,
                                   ctypes.POINTER(_NewOptions)]),
    "kl_expr_eval_string": (ctypes.c_int, [ctypes.POINTER(_Value),
                                           ctypes.c_char_p]),
}


def _load_library():
    candidates = []
    if os.environ.get("KERNLAB_LIBRARY"):
        candidates.append(os.environ["KERNLAB_LIBRARY"])
    here = os.path.dirname(os.path.abspath(__file__))
    for rel in ("../../build/libkernlab.so", "../../lib/libkernlab.so"):
        candidates.append(os.path.normpath(os.path.join(here, rel)))
    found = ctypes.util.find_library("kernlab")
    if found:
        candidates.append(found)
    for path in candidates:
        if os.path.sep not in path or os.path.exists(path):
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    raise ImportError("libkernlab not found; set KERNLAB_LIBRARY to its path")


_lib = _load_library()
for _name, (_res, _args) in _SIGNATURES.items():
    _fn = getattr(_lib, _name)
    _fn.restype, _fn.argtypes = _res, _args

_loaded = _lib.kl_version_number()
if (_loaded >> 16, (_loaded >> 8) & 0xFF) != (_API_MAJOR, _API_MINOR):
    raise ImportError("libkernlab %s does not match these bindings (%d.%d)"
                      % (_lib.kl_version_string().decode(), _API_MAJOR,
                         _API_MINOR))


def version():
    """The loaded library's version string."""
    return _lib.kl_version_string().decode()


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


class KernlabError(Exception):
    """An error from libkernlab, with its location when it has one."""

    def __init__(self, code, message, text=None, path=None, line=0,
                 column=0, errors=()):
        super().__init__(message)
        self.code = code
        self.name = _ERROR_CODES.get(code, str(code))
        self.message = message
        self.text = text or message
        self.path = path
        self.line = line
        self.column = column
        self.errors = list(errors)  # every diagnostic, as dicts

    @classmethod
    def _last(cls, rc, errors=()):
        e = _lib.kl_error_last()
        if not e:
            return cls(rc, "libkernlab failed with code %d" % rc)
        e = e.contents
        return cls(e.code, _s(e.message), _s(e.text), _s(e.path), e.line,
                   e.column, errors)


def _take_buf(buf):
    try:
        return ctypes.string_at(buf.ptr, buf.size).decode() if buf.ptr else ""
    finally:
        _lib.kl_buf_dispose(ctypes.byref(buf))


class Case:
    """A loaded, validated case (immutable). Use as a context manager or
    call close(); the evaluated description is in .info."""

    def __init__(self, handle):
        self._handle = handle
        buf = _Buf()
        rc = _lib.kl_case_describe_json(ctypes.byref(buf), handle)
        if rc != 0:
            _lib.kl_case_free(handle)
            raise KernlabError._last(rc)
        self.info = json.loads(_take_buf(buf))

    name = property(lambda self: self.info["name"])
    backend = property(lambda self: self.info["backend"])
    params = property(lambda self: self.info["params"])
    shapes = property(lambda self: self.info["shapes"])

    def close(self):
        if self._handle:
            _lib.kl_case_free(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


def load_case(path):
    """Load and validate a case folder or case.yaml. Raises KernlabError
    whose .errors lists every diagnostic (path, line, column, text)."""
    errors = []

    def on_diag(err, _payload):
        e = err.contents
        errors.append({"path": _s(e.path), "line": e.line,
                       "column": e.column, "text": _s(e.text),
                       "message": _s(e.message)})
        return 0

    opts = _CaseOptions(1, _DIAG_FN(on_diag), None)
    handle = ctypes.c_void_p()
    rc = _lib.kl_case_load(ctypes.byref(handle), os.fsencode(path),
                           ctypes.byref(opts))
    if rc != 0:
        raise KernlabError._last(rc, errors)
    return Case(handle)


def check_case(path):
    """Every diagnostic of a case as a list (empty when it is valid)."""
    try:
        load_case(path).close()
        return []
    except KernlabError as e:
        return e.errors or [{"path": e.path, "line": e.line,
                             "column": e.column, "text": e.text,
                             "message": e.message}]


def new_case(name, template="host", directory="."):
    """Stamp a case folder from a template; returns its path."""
    opts = _NewOptions(1, template.encode(), os.fsencode(directory))
    buf = _Buf()
    rc = _lib.kl_case_new(ctypes.byref(buf), name.encode(), ctypes.byref(opts))
    if rc != 0:
        raise KernlabError._last(rc)
    return _take_buf(buf)


def eval_expr(src):
    """Evaluate a constant expression of kernlab's expression language."""
    v = _Value()
    rc = _lib.kl_expr_eval_string(ctypes.byref(v), src.encode())
    if rc != 0:
        raise KernlabError._last(rc)
    return v.i if v.is_int else v.f
