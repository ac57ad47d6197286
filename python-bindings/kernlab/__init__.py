"""kernlab: Python bindings over libkernlab (ctypes).

The bindings call the C library's public API and nothing else: every C
function used is declared once, in _SIGNATURES, and the structures mirror
the public headers (python-bindings/tests checks their layout against the
C compiler's). Results the C API hands out as JSON (bench reports, run
summaries, diagnoses, prompts) come back as dicts with the same fields as
the CLI's --json output (docs/json.md).

The library is found through $KERNLAB_LIBRARY, else next to this package,
else in the lib folder of the prefix the package is installed under, else
a source tree's build/, else the system's loader path. Its version is
checked at import.

    import kernlab
    with kernlab.load_case("cases/host_saxpy") as case:
        report = case.bench()
        report["verdict"], [s["median_us"] for s in report["shapes"]]
"""
import ctypes
import ctypes.util
import json
import os
import shutil

__all__ = ["KernlabError", "Case", "Rules", "Profiles", "load_case",
           "check_case", "new_case", "version", "eval_expr", "read_ledger",
           "features", "mcp_serve", "mcp_tools", "__version__"]

_ERROR_CODES = {
    -1: "ERROR", -2: "ENOMEM", -3: "EINVALID", -4: "ENOTFOUND", -5: "EIO",
    -6: "EBUSY", -7: "EUSER", -8: "EUNSUPPORTED", -9: "EEXISTS",
    -10: "ENODEVICE", -11: "ETIMEOUT", -12: "ECRASHED", -13: "EREJECTED",
}

# The headers this module was written against: the release, the binary
# interface (KL_ABI_VERSION, the library's SOVERSION) and the version of
# each options structure below (KL_*_VERSION), which the library's init
# functions fill with their defaults.
_API_MAJOR, _API_MINOR = 0, 1
_ABI = 1
_VERSIONS = {"kl_case_options": 2, "kl_case_new_options": 1,
             "kl_harness_options": 2, "kl_time_options": 2,
             "kl_bench_options": 6, "kl_rules_options": 1,
             "kl_prompt_inputs": 2, "kl_llm_config": 1,
             "kl_run_options": 3, "kl_history_report_options": 1,
             "kl_serve_options": 2, "kl_mcp_options": 1}

_c = ctypes
_p = ctypes.c_void_p
_s = ctypes.c_char_p
_int = ctypes.c_int
_dbl = ctypes.c_double
_size = ctypes.c_size_t


# ---- structures (kernlab/*.h) ----------------------------------------------

class _Error(ctypes.Structure):
    _fields_ = [("code", _int), ("domain", _int), ("message", _s),
                ("text", _s), ("path", _s), ("line", _int),
                ("column", _int), ("snippet", _s), ("sys_errno", _int)]


class _Buf(ctypes.Structure):
    _fields_ = [("ptr", _p), ("size", _size), ("reserved", _size)]


class _Value(ctypes.Structure):
    _fields_ = [("is_int", _int), ("i", ctypes.c_int64), ("f", _dbl)]


_DIAG_FN = ctypes.CFUNCTYPE(_int, ctypes.POINTER(_Error), _p)


class _CaseOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("on_diag", _DIAG_FN),
                ("payload", _p), ("tunables", ctypes.POINTER(_s))]


class _NewOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("template_name", _s),
                ("dir", _s)]


class _HarnessOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("form", _int),
                ("candidate_name", _s), ("file_name", _s)]


class _TimeOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("cold", _int),
                ("warmup", _int), ("min_samples", _size),
                ("max_samples", _size), ("target_rel_ci", _dbl),
                ("time_cap_ms", _int), ("seed", ctypes.c_uint64),
                ("block_rounds", _size), ("decide_gain_pct", _dbl),
                ("verify", _int), ("oracle", _int)]


class _BenchOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("candidate", _s),
                ("candidate_name", _s), ("shape", _s),
                ("check_seeds", _int), ("seed", ctypes.c_uint64),
                ("time", _TimeOptions), ("timeout_ms", _int),
                ("compile", _p), ("worker_path", _s), ("device", _int),
                ("profile", _s), ("against", _s),
                ("against_config", ctypes.POINTER(_s)),
                ("candidate_config", ctypes.POINTER(_s)),
                ("on_phase", _p), ("phase_payload", _p),
                ("check_seed", ctypes.c_uint64), ("checks_only", _int),
                ("launch", _int)]


class _RulesOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("on_diag", _DIAG_FN),
                ("payload", _p)]


class _PromptShape(ctypes.Structure):
    _fields_ = [("name", _s), ("profile", _p)]


class _PromptInputs(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("c", _p), ("rules", _p),
                ("shapes", ctypes.POINTER(_PromptShape)),
                ("nshapes", _size), ("best_code", _s), ("attempts", _p),
                ("nattempts", _size), ("patterns", _s), ("memory", _s),
                ("iteration", _int), ("budget_scale", _dbl),
                ("devlog", _s), ("prior_art", _s)]


class _LlmConfig(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("provider", _s), ("model", _s),
                ("base_url", _s), ("api_key_env", _s), ("max_tokens", _int),
                ("temperature", _dbl), ("connect_timeout_ms", ctypes.c_long),
                ("timeout_ms", ctypes.c_long), ("max_retries", _int),
                ("backoff_s", _dbl), ("backoff_max_s", _dbl),
                ("max_continuations", _int), ("max_response_bytes", _size),
                ("transport", _p), ("command", _p), ("replay_dir", _s),
                ("record_dir", _s)]


class _RunEvent(ctypes.Structure):
    _fields_ = [("run", _s), ("iteration", _int), ("phase", _s),
                ("proposer", _s), ("what", _s), ("outcome", _int),
                ("reason", _s), ("speedup", _dbl), ("best_speedup", _dbl),
                ("iterations_left", _int), ("wall_s", _dbl),
                ("worker_s", _dbl), ("usd", _dbl), ("step", _s)]


_EVENT_FN = ctypes.CFUNCTYPE(None, ctypes.POINTER(_RunEvent), _p)
_PROPOSE_FN = ctypes.CFUNCTYPE(_int, ctypes.POINTER(_Buf),
                               ctypes.POINTER(_Buf), _s, _int, _p)


class _RunOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("proposer", _s),
                ("strategy", _s), ("replay", _s), ("resume", _s),
                ("iterations", ctypes.c_int64), ("patience", ctypes.c_int64),
                ("max_wall_s", _dbl), ("max_worker_s", _dbl),
                ("max_usd", _dbl), ("seed", ctypes.c_uint64),
                ("llm", ctypes.POINTER(_LlmConfig)), ("prices", _p),
                ("nprices", _size), ("rules", _p), ("profile", _s),
                ("time", _TimeOptions), ("check_seeds", _int),
                ("timeout_ms", _int), ("compile", _p),
                ("worker_path", _s), ("device", _int),
                ("on_event", _EVENT_FN), ("payload", _p),
                ("stop", ctypes.POINTER(_int)), ("webhook", _p),
                ("no_webhook", _int), ("propose", _PROPOSE_FN),
                ("propose_payload", _p), ("executor", _p), ("batch", _int)]


class _HistoryReportOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("run", _s), ("format", _s),
                ("links_from", _s)]


class _ServeOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("url", _s), ("model", _s),
                ("chat", _int), ("requests", _int), ("concurrency", _int),
                ("prompt_tokens", _int), ("max_tokens", _int),
                ("seed", ctypes.c_uint64), ("api_key_env", _s),
                ("timeout_ms", _int), ("prompts", _s)]


class _McpOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("program", _s)]


_LEDGER_FN = ctypes.CFUNCTYPE(_int, _s, _int, _p)

# The structures and their C names, for the layout test.
STRUCTS = {"kl_error": _Error, "kl_buf": _Buf, "kl_value": _Value,
           "kl_case_options": _CaseOptions,
           "kl_case_new_options": _NewOptions,
           "kl_harness_options": _HarnessOptions,
           "kl_time_options": _TimeOptions,
           "kl_bench_options": _BenchOptions,
           "kl_rules_options": _RulesOptions,
           "kl_prompt_shape": _PromptShape,
           "kl_prompt_inputs": _PromptInputs,
           "kl_llm_config": _LlmConfig, "kl_run_event": _RunEvent,
           "kl_run_options": _RunOptions,
           "kl_history_report_options": _HistoryReportOptions,
           "kl_serve_options": _ServeOptions, "kl_mcp_options": _McpOptions}

_PP = ctypes.POINTER(_p)
_BUFP = ctypes.POINTER(_Buf)

# Each options structure's init function: kl_x_init(struct *, unsigned).
_INITS = {"kl_case_options": _CaseOptions, "kl_case_new_options": _NewOptions,
          "kl_harness_options": _HarnessOptions,
          "kl_time_options": _TimeOptions, "kl_bench_options": _BenchOptions,
          "kl_rules_options": _RulesOptions,
          "kl_prompt_inputs": _PromptInputs, "kl_llm_config": _LlmConfig,
          "kl_run_options": _RunOptions,
          "kl_history_report_options": _HistoryReportOptions,
          "kl_serve_options": _ServeOptions, "kl_mcp_options": _McpOptions}

# ---- every C function used: name -> (restype, argtypes) --------------------
_SIGNATURES = {
    "kl_version_number": (ctypes.c_uint, []),
    "kl_version_string": (_s, []),
    "kl_abi_version": (ctypes.c_uint, []),
    "kl_features": (ctypes.c_uint, []),
    "kl_init": (_int, []),
    "kl_error_last": (ctypes.POINTER(_Error), []),
    "kl_buf_dispose": (None, [_BUFP]),
    "kl_buf_set": (_int, [_BUFP, _s, _size]),
    "kl_expr_eval_string": (_int, [ctypes.POINTER(_Value), _s]),
    # cases
    "kl_case_load": (_int, [_PP, _s, ctypes.POINTER(_CaseOptions)]),
    "kl_case_free": (None, [_p]),
    "kl_case_describe_json": (_int, [_BUFP, _p]),
    "kl_case_dir": (_s, [_p]),
    "kl_case_new": (_int, [_BUFP, _s, ctypes.POINTER(_NewOptions)]),
    "kl_harness_generate": (_int, [_BUFP, _p, _s,
                                   ctypes.POINTER(_HarnessOptions)]),
    # measurement
    "kl_bench_run": (_int, [_PP, _p, ctypes.POINTER(_BenchOptions)]),
    "kl_bench_compare": (_int, [_PP, _p, ctypes.POINTER(_BenchOptions)]),
    "kl_report_free": (None, [_p]),
    "kl_report_json": (_int, [_BUFP, _p]),
    # profiles and rules
    "kl_profile_list_from_json": (_int, [_PP, _s, _s]),
    "kl_profile_list_from_text": (_int, [_PP, _s, _s]),
    "kl_profile_list_read": (_int, [_PP, _s]),
    "kl_profile_list_launch": (_s, [_p, _size]),
    "kl_profile_list_count": (_size, [_p]),
    "kl_profile_list_get": (_p, [_p, _size]),
    "kl_profile_list_name": (_s, [_p, _size]),
    "kl_profile_list_free": (None, [_p]),
    "kl_rules_create": (_int, [_PP, ctypes.POINTER(_RulesOptions)]),
    "kl_rules_free": (None, [_p]),
    "kl_rules_add_defaults": (_int, [_p]),
    "kl_rules_add_file": (_int, [_p, _s]),
    "kl_rules_add_string": (_int, [_p, _s, _s]),
    "kl_rules_count": (_size, [_p]),
    "kl_rules_evaluate": (_int, [_PP, _p, _p]),
    "kl_diagnosis_json": (_int, [_BUFP, _p]),
    "kl_diagnosis_free": (None, [_p]),
    # prompts and replies
    "kl_prompt_build": (_int, [_PP, ctypes.POINTER(_PromptInputs)]),
    "kl_prompt_json": (_int, [_BUFP, _p]),
    "kl_prompt_free": (None, [_p]),
    "kl_reply_parse": (_int, [_PP, _s, _p]),
    "kl_reply_ok": (_int, [_p]),
    "kl_reply_reason": (_s, [_p]),
    "kl_reply_code": (_s, [_p]),
    "kl_reply_memo": (_s, [_p]),
    "kl_reply_free": (None, [_p]),
    # the loop and its records
    "kl_llm_settings_load": (_int, [_PP, _p]),
    "kl_llm_settings_apply": (None, [_p, ctypes.POINTER(_LlmConfig)]),
    "kl_llm_settings_free": (None, [_p]),
    "kl_webhook_load": (_int, [_PP, _p]),
    "kl_webhook_free": (None, [_p]),
    "kl_run_optimize": (_int, [_PP, _p, ctypes.POINTER(_RunOptions)]),
    "kl_run_json": (_int, [_BUFP, _p]),
    "kl_run_free": (None, [_p]),
    "kl_outcome_name": (_s, [_int]),
    "kl_run_best_kernel": (_int, [_BUFP, _BUFP, _p]),
    "kl_history": (_int, [_BUFP, _p, _s]),
    "kl_history_report": (_int, [_BUFP, _p,
                                 ctypes.POINTER(_HistoryReportOptions)]),
    "kl_ledger_read": (_int, [_s, _LEDGER_FN, _p]),
    # the serving benchmark
    "kl_serve_bench": (_int, [_PP, ctypes.POINTER(_ServeOptions)]),
    "kl_serve_result_json": (_int, [_BUFP, _p]),
    "kl_serve_result_free": (None, [_p]),
    # the MCP server
    "kl_mcp_options_init": (_int, [ctypes.POINTER(_McpOptions), ctypes.c_uint]),
    "kl_mcp_serve": (_int, [_int, _int, ctypes.POINTER(_McpOptions)]),
    "kl_mcp_tools_json": (_int, [_BUFP]),
}


def _library_candidates():
    env = os.environ.get("KERNLAB_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    names = ["libkernlab.so", "libkernlab.so.%d" % _ABI]
    paths = [os.path.join(here, n) for n in names]
    # prefix/lib/pythonX.Y/site-packages/kernlab -> prefix/lib
    prefix_lib = os.path.normpath(os.path.join(here, "..", "..", ".."))
    paths += [os.path.join(prefix_lib, n) for n in names]
    # a source tree: python-bindings/kernlab -> build/
    paths.append(os.path.normpath(os.path.join(here, "..", "..", "build",
                                               "libkernlab.so")))
    found = [p for p in paths if os.path.exists(p)]
    system = ctypes.util.find_library("kernlab")
    return found + ([system] if system else []) + ["libkernlab.so.%d" % _ABI]


def _load_library():
    errors = []
    for path in _library_candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
    raise ImportError("libkernlab not found (%s); set KERNLAB_LIBRARY to "
                      "its path" % "; ".join(errors[-2:]))


_lib = _load_library()
for _name, (_res, _args) in _SIGNATURES.items():
    _fn = getattr(_lib, _name)
    _fn.restype, _fn.argtypes = _res, _args
for _name, _cls in _INITS.items():
    _fn = getattr(_lib, _name + "_init")
    _fn.restype, _fn.argtypes = _int, [ctypes.POINTER(_cls), ctypes.c_uint]

if _lib.kl_abi_version() != _ABI:
    raise ImportError("libkernlab's binary interface is %d, these bindings "
                      "were written for %d" % (_lib.kl_abi_version(), _ABI))

_loaded = _lib.kl_version_number()
if (_loaded >> 16, (_loaded >> 8) & 0xFF) != (_API_MAJOR, _API_MINOR):
    raise ImportError("libkernlab %s does not match these bindings (%d.%d)"
                      % (_lib.kl_version_string().decode(), _API_MAJOR,
                         _API_MINOR))

__version__ = _lib.kl_version_string().decode()
LIBRARY = _lib._name


def version():
    """The loaded library's version string."""
    return _lib.kl_version_string().decode()


def features():
    """What the library was built with: {"cuda", "cupti", "http"}."""
    f = _lib.kl_features()
    return {"cuda": bool(f & 1), "cupti": bool(f & 2), "http": bool(f & 4)}


def _str(b):
    return b.decode("utf-8", "replace") if b is not None else None


def _b(s):
    return None if s is None else (os.fsencode(s) if isinstance(s, os.PathLike)
                                   else s.encode())


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
        if not e or e.contents.code == 0:
            return cls(rc, "libkernlab failed with code %d" % rc)
        e = e.contents
        return cls(e.code, _str(e.message), _str(e.text), _str(e.path),
                   e.line, e.column, errors)


def _options(name):
    """A new options structure `name` ("kl_run_options"), filled by the
    library's kl_x_init with the defaults of the version these bindings
    know: never a copy of defaults written down here."""
    o = _INITS[name]()
    _check(getattr(_lib, name + "_init")(ctypes.byref(o), _VERSIONS[name]))
    return o


def _diag_collector(errors):
    """A kl_diag_fn appending every located diagnostic to `errors`."""
    def on_diag(err, _payload):
        e = err.contents
        errors.append({"path": _str(e.path), "line": e.line,
                       "column": e.column, "text": _str(e.text),
                       "message": _str(e.message)})
        return 0
    return _DIAG_FN(on_diag)


def _check(rc, errors=()):
    if rc < 0:
        raise KernlabError._last(rc, errors)
    return rc


def _take_buf(buf):
    try:
        return ctypes.string_at(buf.ptr, buf.size).decode() if buf.ptr else ""
    finally:
        _lib.kl_buf_dispose(ctypes.byref(buf))


def _json_call(fn, *args):
    buf = _Buf()
    _check(fn(ctypes.byref(buf), *args))
    return json.loads(_take_buf(buf))


def _strv(items):
    """A NULL-ended char* array (kept alive by the caller)."""
    if not items:
        return None
    arr = (_s * (len(items) + 1))(*[_b(x) for x in items], None)
    return ctypes.cast(arr, ctypes.POINTER(_s))


class _Handle:
    """An owned C handle, freed once (close(), the with block, or GC)."""
    _free = None

    def __init__(self, handle):
        self._handle = handle

    def close(self):
        if self._handle:
            type(self)._free(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class Profiles(_Handle):
    """Profiles per shape (kl profile --json, a profile object, a flat
    {"<ncu metric>": value} export) or per kernel (Nsight Compute's
    `--csv --page raw` or `--page details` text; from_file also reads an
    .ncu-rep through ncu --import)."""
    _free = staticmethod(lambda h: _lib.kl_profile_list_free(h))

    def __init__(self, text, name="profile.json", _handle=None):
        h = _handle
        if h is None:
            if isinstance(text, dict):
                text = json.dumps(text)
            h = _p()
            _check(_lib.kl_profile_list_from_text(ctypes.byref(h), _b(text),
                                                  _b(name)))
        super().__init__(h)

    @classmethod
    def from_file(cls, path):
        h = _p()
        _check(_lib.kl_profile_list_read(ctypes.byref(h), _b(str(path))))
        return cls(None, str(path), _handle=h)

    def launches(self):
        """Nsight Compute's ID of each kernel (None for kernlab's forms)."""
        return [_str(_lib.kl_profile_list_launch(self._handle, i))
                for i in range(len(self))]

    def __len__(self):
        return _lib.kl_profile_list_count(self._handle)

    def names(self):
        return [_str(_lib.kl_profile_list_name(self._handle, i))
                for i in range(len(self))]


class Rules(_Handle):
    """A rule set: the defaults (share/kernlab/rules) unless told not to,
    then each file given."""
    _free = staticmethod(lambda h: _lib.kl_rules_free(h))

    def __init__(self, files=(), defaults=True, case=None):
        errors = []
        self._diag = _diag_collector(errors)
        h = _p()
        o = _options("kl_rules_options")
        o.on_diag = self._diag
        _check(_lib.kl_rules_create(ctypes.byref(h), ctypes.byref(o)), errors)
        super().__init__(h)
        if defaults:
            _check(_lib.kl_rules_add_defaults(h), errors)
        for f in list(case.rule_files if case else []) + list(files):
            _check(_lib.kl_rules_add_file(h, _b(str(f))), errors)

    def __len__(self):
        return _lib.kl_rules_count(self._handle)

    def evaluate(self, profiles):
        """The diagnosis of each profile: {"shapes": [ ... ]} with the
        fields of kl rules --json."""
        own = not isinstance(profiles, Profiles)
        pl = Profiles(profiles) if own else profiles
        try:
            shapes = []
            for i in range(len(pl)):
                d = _p()
                _check(_lib.kl_rules_evaluate(
                    ctypes.byref(d), self._handle,
                    _lib.kl_profile_list_get(pl._handle, i)))
                try:
                    diag = _json_call(_lib.kl_diagnosis_json, d)
                    diag.setdefault("shape", pl.names()[i])
                    shapes.append(diag)
                finally:
                    _lib.kl_diagnosis_free(d)
            return {"shapes": shapes}
        finally:
            if own:
                pl.close()


_LAUNCHES = {"stream": 0, "graph": 1, "both": 2}


def _bench_options(candidate, shape, seed, hot, time_cap_ms, profile,
                   timeout_ms, device, launch=None):
    """kl_bench_options; the strings stay alive with the structure (ctypes
    keeps what is assigned to its char* fields)."""
    o = _options("kl_bench_options")
    if candidate is not None:
        if os.path.exists(str(candidate)):
            with open(candidate) as f:
                src = f.read()
            o.candidate_name = _b(os.path.basename(str(candidate)))
        else:
            src = candidate
        o.candidate = _b(src)
    o.shape = _b(shape)
    o.seed = seed or 0
    o.time.cold = 0 if hot else 1
    if time_cap_ms:
        o.time.time_cap_ms = int(time_cap_ms)
    if timeout_ms:
        o.timeout_ms = int(timeout_ms)
    if device is not None:
        o.device = int(device)
    o.profile = _b(profile)
    if launch is not None:  # None: the case's timing.launch
        if launch not in _LAUNCHES:
            raise ValueError("launch is 'stream', 'graph' or 'both', not %r"
                             % (launch,))
        o.launch = _LAUNCHES[launch]
    return o


class Case(_Handle):
    """A loaded, validated case (immutable). Use as a context manager or
    call close(); the evaluated description is in .info."""
    _free = staticmethod(lambda h: _lib.kl_case_free(h))

    def __init__(self, handle):
        super().__init__(handle)
        try:
            self.info = _json_call(_lib.kl_case_describe_json, handle)
        except KernlabError:
            self.close()
            raise

    name = property(lambda self: self.info["name"])
    backend = property(lambda self: self.info["backend"])
    params = property(lambda self: self.info["params"])
    shapes = property(lambda self: self.info["shapes"])
    dir = property(lambda self: _str(_lib.kl_case_dir(self._handle)))
    rule_files = property(lambda self: self.info.get("rules", []))

    def harness(self, candidate=None, plugin=False):
        """The generated harness source (standalone, or the plugin)."""
        buf = _Buf()
        o = _options("kl_harness_options")
        o.form = 1 if plugin else 0
        _check(_lib.kl_harness_generate(ctypes.byref(buf), self._handle,
                                        _b(candidate), ctypes.byref(o)))
        return _take_buf(buf)

    def _bench(self, fn, candidate, shape=None, seed=0, hot=False,
               time_cap_ms=None, profile=None, timeout_ms=None, device=None,
               launch=None):
        o = _bench_options(candidate, shape, seed, hot, time_cap_ms, profile,
                           timeout_ms, device, launch)
        rep = _p()
        _check(fn(ctypes.byref(rep), self._handle, ctypes.byref(o)))
        try:
            return _json_call(_lib.kl_report_json, rep)
        finally:
            _lib.kl_report_free(rep)

    def bench(self, candidate=None, **kw):
        """Check then time a kernel (source text or a file; None: the
        baseline). The fields of kl bench --json; a rejected candidate is a
        verdict, not an exception. launch="graph" times replays of a CUDA
        graph, "both" each shape both ways (kl bench --launch; None: as
        the case says)."""
        return self._bench(_lib.kl_bench_run, candidate, **kw)

    def compare(self, candidate, **kw):
        """Baseline against candidate, interleaved: kl compare --json."""
        return self._bench(_lib.kl_bench_compare, candidate, **kw)

    def profile(self, candidate=None, metrics="standard", **kw):
        """Bench briefly, then profile each shape (kl profile --json's
        report, with a "profile" per shape)."""
        kw.setdefault("time_cap_ms", 200)
        return self._bench(_lib.kl_bench_run, candidate, profile=metrics,
                           **kw)

    def rules(self, profiles, files=()):
        """Diagnose recorded profiles with the defaults, the case's own
        rule files and `files`."""
        with Rules(files, case=self) as rs:
            return rs.evaluate(profiles)

    def prompt(self, profiles=None, best=None, iteration=1, files=()):
        """What a model would be sent: kl prompt --json."""
        with Rules(files, case=self) as rs:
            pl = Profiles(profiles) if profiles is not None else None
            try:
                n = len(pl) if pl else 0
                shapes = (_PromptShape * max(n, 1))()
                for i in range(n):
                    shapes[i].name = _lib.kl_profile_list_name(pl._handle, i)
                    shapes[i].profile = _lib.kl_profile_list_get(pl._handle,
                                                                 i)
                inp = _options("kl_prompt_inputs")
                inp.c, inp.rules = self._handle, rs._handle
                inp.shapes, inp.nshapes = shapes, n
                inp.best_code, inp.iteration = _b(best), iteration
                pr = _p()
                _check(_lib.kl_prompt_build(ctypes.byref(pr),
                                            ctypes.byref(inp)))
                try:
                    return _json_call(_lib.kl_prompt_json, pr)
                finally:
                    _lib.kl_prompt_free(pr)
            finally:
                if pl:
                    pl.close()

    def parse_reply(self, text):
        """A model's reply: {"ok", "reason", "code", "memo"}."""
        r = _p()
        _check(_lib.kl_reply_parse(ctypes.byref(r), _b(text), self._handle))
        try:
            return {"ok": bool(_lib.kl_reply_ok(r)),
                    "reason": _str(_lib.kl_reply_reason(r)),
                    "code": _str(_lib.kl_reply_code(r)),
                    "memo": _str(_lib.kl_reply_memo(r))}
        finally:
            _lib.kl_reply_free(r)

    def run(self, proposer=None, propose=None, on_event=None, strategy=None,
            iterations=0, patience=0, max_wall_s=0, max_worker_s=0,
            max_usd=0, seed=0, resume=None, replay=None, profile=None,
            time_cap_ms=None, timeout_ms=None, rules=(), webhook=True,
            batch=0, hot=False):
        """Run the optimization loop; returns kl run --json's summary.

        hot: sample without the cache flush (kl run --hot). A resumed run
        samples as its run.json says; asking it to sample otherwise (hot
        on a cold run, another time_cap_ms) raises KernlabError.

        batch: proposals evaluated together (docs/executors.md); this
        host's default GPU evaluates them one after another.

        propose(best_source, iteration) -> (source, memo) | None is a
        proposer written in Python (None: nothing left to try); on_event
        gets a dict per step ("propose", "measure", "profile", "done"; while
        measuring or profiling, "step" names the evaluation's: "build",
        "worker", "load", "checks", "timing", "gates", "profile").
        An exception in either stops the run ("proposer_error") and is
        raised again here once the records are whole."""
        failure = []

        def propose_c(src_buf, memo_buf, best, iteration, _payload):
            try:
                got = propose(_str(best), iteration)
                if got is None:
                    return 1
                source, memo = got if isinstance(got, tuple) else (got, "")
                for buf, text in ((src_buf, source), (memo_buf, memo or "")):
                    data = text.encode()
                    _check(_lib.kl_buf_set(buf, data, len(data)))
                return 0
            except BaseException as e:  # noqa: BLE001 (re-raised below)
                failure.append(e)
                return -7

        def event_c(ev, _payload):
            e = ev.contents
            try:
                on_event({"run": _str(e.run), "iteration": e.iteration,
                          "phase": _str(e.phase),
                          "proposer": _str(e.proposer),
                          "what": _str(e.what),
                          "outcome": _str(_lib.kl_outcome_name(e.outcome)),
                          "reason": _str(e.reason), "speedup": e.speedup,
                          "best_speedup": e.best_speedup,
                          "iterations_left": e.iterations_left,
                          "wall_s": e.wall_s, "worker_s": e.worker_s,
                          "usd": e.usd, "step": _str(e.step)})
            except BaseException as ex:  # noqa: BLE001
                failure.append(ex)

        o = _options("kl_run_options")
        keep = [_b(proposer), _b(strategy), _b(resume), _b(replay),
                _b(profile)]
        o.proposer, o.strategy, o.resume, o.replay, o.profile = keep
        o.iterations, o.patience = int(iterations), int(patience)
        o.max_wall_s, o.max_worker_s = float(max_wall_s), float(max_worker_s)
        o.max_usd, o.seed = float(max_usd), int(seed)
        o.batch = int(batch)
        if time_cap_ms:
            o.time.time_cap_ms = int(time_cap_ms)
        if hot:
            o.time.cold = 0
        if timeout_ms:
            o.timeout_ms = int(timeout_ms)
        settings, wh = _p(), _p()
        llm = _options("kl_llm_config")
        _check(_lib.kl_llm_settings_load(ctypes.byref(settings),
                                         self._handle))
        rs = Rules(rules, case=self)
        try:
            _lib.kl_llm_settings_apply(settings, ctypes.byref(llm))
            o.llm = ctypes.pointer(llm)
            o.rules = rs._handle
            if webhook:
                _check(_lib.kl_webhook_load(ctypes.byref(wh), self._handle))
                o.webhook = wh
            if propose is not None:
                o.propose = _PROPOSE_FN(propose_c)
                keep.append(o.propose)
            if on_event is not None:
                o.on_event = _EVENT_FN(event_c)
                keep.append(o.on_event)
            run = _p()
            rc = _lib.kl_run_optimize(ctypes.byref(run), self._handle,
                                      ctypes.byref(o))
            if rc < 0:
                if failure:
                    raise failure[0]
                _check(rc)
            try:
                summary = _json_call(_lib.kl_run_json, run)
            finally:
                _lib.kl_run_free(run)
            if failure:
                raise failure[0]
            return summary
        finally:
            rs.close()
            _lib.kl_webhook_free(wh)
            _lib.kl_llm_settings_free(settings)

    def best(self):
        """(source with its settings written in, its solutions.jsonl
        record) of the best accepted kernel over every run."""
        src, info = _Buf(), _Buf()
        _check(_lib.kl_run_best_kernel(ctypes.byref(src), ctypes.byref(info),
                                       self._handle))
        return _take_buf(src), json.loads(_take_buf(info))

    def history(self):
        """The case's runs: kl history --json."""
        return _json_call(_lib.kl_history, self._handle, b"json")

    def report(self, run=None, format="md", links_from=None):
        """A report of a run (default: the latest), markdown or HTML."""
        o = _options("kl_history_report_options")
        o.run, o.format, o.links_from = _b(run), _b(format), _b(links_from)
        buf = _Buf()
        _check(_lib.kl_history_report(ctypes.byref(buf), self._handle,
                                      ctypes.byref(o)))
        return _take_buf(buf)

    def solutions(self):
        """Every solutions.jsonl record, in order."""
        return read_ledger(os.path.join(self.dir, "solutions.jsonl"))


def serve_bench(url, model=None, chat=False, requests=32, concurrency=4,
                prompt_tokens=128, max_tokens=128, seed=1, api_key_env=None,
                timeout_ms=120000, prompts=None):
    """kl serve-bench: streaming requests to an OpenAI-compatible server at
    `url`; the result as a dict (docs/json.md, "Serving benchmark"):
    tokens_per_s, requests_per_s, ttft_ms / itl_ms / e2e_ms quantiles, ok,
    errors and the first error. Failed requests are in the result, not
    raised. `prompts`: a file of prompts, one a line, instead of the
    seeded generator."""
    o = _options("kl_serve_options")
    keep = [_b(url), _b(model), _b(api_key_env), _b(prompts)]
    o.url, o.model, o.api_key_env, o.prompts = keep
    o.chat, o.requests, o.concurrency = int(bool(chat)), requests, concurrency
    o.prompt_tokens, o.max_tokens, o.seed = prompt_tokens, max_tokens, seed
    o.timeout_ms = timeout_ms
    h = _p()
    _check(_lib.kl_serve_bench(ctypes.byref(h), ctypes.byref(o)))
    try:
        return _json_call(_lib.kl_serve_result_json, h)
    finally:
        _lib.kl_serve_result_free(h)


def mcp_tools():
    """The tools `kl mcp` offers, as tools/list answers them: a dict
    {"tools": [{"name", "title", "description", "inputSchema"}, ...]}."""
    return _json_call(_lib.kl_mcp_tools_json)


def mcp_serve(in_fd=0, out_fd=1, program=None):
    """Serve MCP (kl mcp) on in_fd and out_fd until the input ends: the
    library's server (kernlab/mcp.h), each tool call run by the kl program
    `program` (default: kl on PATH). Blocks; returns None, raises
    KernlabError when the output closes first."""
    program = program or shutil.which("kl")
    if not program:
        raise KernlabError(-4, "mcp_serve: no kl program on PATH (give "
                               "program=)")
    o = _options("kl_mcp_options")
    keep = _b(os.path.abspath(program))
    o.program = keep
    _check(_lib.kl_mcp_serve(in_fd, out_fd, ctypes.byref(o)))


def read_ledger(path):
    """The records of a JSON Lines ledger, as dicts (a torn last line is
    skipped; a line that does not parse raises, located)."""
    records = []

    def on_line(text, _line, _payload):
        records.append(json.loads(text.decode()))
        return 0

    cb = _LEDGER_FN(on_line)
    _check(_lib.kl_ledger_read(_b(str(path)), cb, None))
    return records


def load_case(path, tunables=None):
    """Load and validate a case folder or case.yaml (with tunable settings
    "NAME=VALUE" applied). Raises KernlabError whose .errors lists every
    diagnostic (path, line, column, text)."""
    errors = []
    cfg = _strv(tunables)
    opts = _options("kl_case_options")
    opts.on_diag, opts.tunables = _diag_collector(errors), cfg
    handle = _p()
    rc = _lib.kl_case_load(ctypes.byref(handle), _b(str(path)),
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
    opts = _options("kl_case_new_options")
    opts.template_name, opts.dir = template.encode(), _b(str(directory))
    buf = _Buf()
    _check(_lib.kl_case_new(ctypes.byref(buf), name.encode(),
                            ctypes.byref(opts)))
    return _take_buf(buf)


def eval_expr(src):
    """Evaluate a constant expression of kernlab's expression language."""
    v = _Value()
    _check(_lib.kl_expr_eval_string(ctypes.byref(v), src.encode()))
    return v.i if v.is_int else v.f
