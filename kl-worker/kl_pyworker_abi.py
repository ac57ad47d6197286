"""The ctypes mirror of kernlab's plugin interface (include/kernlab/
plugin.h, kl_plugin and its results) that kl-pyworker fills with Python
callbacks: the struct's fields in the header's order, the callbacks'
signatures, the check and scale results. Change it with the header: the
worker checks abi_version and struct_size."""
import ctypes

ROLES = {"scalar": 0, "input": 1, "output": 2, "inout": 3,
         "scratch": 4}  # python cases refuse scratch (case_params.c)
DTYPES = ["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u64",
          "u32", "u16", "u8"]


class PluginStruct(ctypes.Structure):
    pass


VOIDP = ctypes.c_void_p
FN = ctypes.CFUNCTYPE
CREATE = FN(ctypes.c_int, ctypes.POINTER(VOIDP), ctypes.c_int32)
PREPARE = FN(ctypes.c_int, VOIDP, ctypes.c_uint64, ctypes.c_int32)
ONE = FN(ctypes.c_int, VOIDP)
REFERENCE = FN(ctypes.c_int, VOIDP, ctypes.POINTER(VOIDP))
BYTES = FN(ctypes.c_uint64, VOIDP, ctypes.c_int32)
READ = FN(ctypes.c_int, VOIDP, ctypes.c_int32, VOIDP, ctypes.c_uint64)


class CheckResult(ctypes.Structure):
    _fields_ = [("elements", ctypes.c_uint64), ("mismatches", ctypes.c_uint64),
                ("unwritten", ctypes.c_uint64), ("nonfinite", ctypes.c_uint64),
                ("max_abs_err", ctypes.c_double), ("first_bad", ctypes.c_int64)]


CHECK = FN(ctypes.c_int, VOIDP, ctypes.c_int32, VOIDP,
           ctypes.POINTER(CheckResult))


class ScaleResult(ctypes.Structure):  # kl_plugin_scale
    _fields_ = [("struct_size", ctypes.c_uint32), ("reserved", ctypes.c_uint32),
                ("rows", ctypes.c_uint64), ("counted", ctypes.c_uint64),
                ("err_sq", ctypes.c_double), ("ref_sq", ctypes.c_double),
                ("trivial_sq", ctypes.c_double * 4),
                ("trivial_bad", ctypes.c_uint64 * 4),
                ("max_ulp", ctypes.c_double)]


SCALE = FN(ctypes.c_int, VOIDP, ctypes.c_int32, VOIDP, ctypes.c_int32,
           ctypes.POINTER(ScaleResult))
NO_REFERENCE = 1  # KL_PLUGIN_NO_REFERENCE: nothing to measure
INTACT = FN(ctypes.c_int, VOIDP, ctypes.c_int32)
DESTROY = FN(None, VOIDP)
LAST_ERROR = FN(VOIDP, VOIDP)
MARK = FN(ctypes.c_int, VOIDP, ctypes.c_int)
CLOCK_READ = FN(ctypes.c_int, VOIDP, ctypes.POINTER(ctypes.c_double),
                ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64))
STREAM = FN(VOIDP, VOIDP)
SET_STREAM = FN(ctypes.c_int, VOIDP, VOIDP)
NOTES = FN(VOIDP)
CHANGED = FN(ctypes.c_int, VOIDP, ctypes.c_int32,
             ctypes.POINTER(ctypes.c_uint64))

PluginStruct._fields_ = [
    ("abi_version", ctypes.c_uint32), ("struct_size", ctypes.c_uint32),
    ("case_name", ctypes.c_char_p), ("entry", ctypes.c_char_p),
    ("backend", ctypes.c_char_p), ("nshapes", ctypes.c_int32),
    ("nparams", ctypes.c_int32),
    ("shape_names", ctypes.POINTER(ctypes.c_char_p)),
    ("param_names", ctypes.POINTER(ctypes.c_char_p)),
    ("param_roles", ctypes.POINTER(ctypes.c_int32)),
    ("param_dtypes", ctypes.POINTER(ctypes.c_int32)),
    ("atol", ctypes.c_double), ("rtol", ctypes.c_double),
    ("create", CREATE), ("prepare", PREPARE), ("restore", ONE),
    ("launch", ONE), ("sync", ONE), ("reference", REFERENCE),
    ("buffer_bytes", BYTES), ("read", READ), ("check", CHECK),
    ("input_intact", INTACT), ("destroy", DESTROY),
    ("last_error", LAST_ERROR), ("flush", ONE), ("clock_mark", MARK),
    ("clock_read", CLOCK_READ), ("stream", STREAM),
    ("set_stream", SET_STREAM), ("kernel_info", VOIDP),
    ("notes", NOTES),
    # checks on the device: the comparison with the oracle is the host's
    # (check), the work-after-return copy the device's (TorchPlugin)
    ("device_buffer", VOIDP), ("check_device", VOIDP), ("snapshot", INTACT),
    ("changed_bytes", CHANGED), ("flush_mark", ONE), ("scale", SCALE)]
