"""Every ctypes structure of the memra C API, in one place.

Each mirrors a struct of include/memra/*.h member for member, in order. The C
structs grow only at the end (append-only), so a member added to a header is
added here at the END of the matching ``_fields_`` list; ``struct_size`` is
always ``ctypes.sizeof`` of the Python definition (see :func:`sized`), which
tells the library how many members this side knows.
"""

import ctypes
from ctypes import (POINTER, Structure, c_char, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t,
                    c_uint32, c_uint64, c_void_p)

# typedefs of module.h
memra_dptr = c_uint64      # a device address (a host pointer on the host device)
memra_stream_t = c_void_p  # a CUstream, NULL = the legacy default stream
memra_status = c_int       # enum memra_status
memra_op = c_int           # enum memra_op
memra_format = c_int       # enum memra_format
memra_arch = c_int         # enum memra_arch


class memra_options(Structure):  # memra.h
    _fields_ = [
        ("struct_size", c_uint32),
        ("module_path", c_char_p),
        ("force_arch", c_char_p),
        ("no_cuda", c_int),
        ("no_default_modules", c_int),
        ("allow_unsafe_modules", c_int),
        ("prefer", c_char_p),
        ("disable", c_char_p),
        # appended (read only when struct_size covers them)
        ("log_fn", c_void_p),  # memra_log_fn: NULL here (the library's own lines on stderr)
        ("log_user", c_void_p),
        ("settings", POINTER(c_char_p)),  # "MEMRA_NAME=value", NULL-terminated
        ("ignore_environment", c_int),
    ]


class memra_device_caps(Structure):  # module.h
    _fields_ = [
        ("struct_size", c_uint32),
        ("arch", memra_arch),
        ("profile", c_char_p),
        ("name", c_char_p),
        ("ordinal", c_int),
        ("cc", c_int),
        ("sm_count", c_int),
        ("total_mem", c_uint64),
        ("driver_version", c_int),
        ("jit_target", c_char_p),
        ("caps", c_uint64),
        ("smem_per_block_optin", c_size_t),
        ("cu_context", c_void_p),
        ("cu_device", c_int),
    ]


class memra_module_info(Structure):  # memra.h
    _fields_ = [
        ("name", c_char_p),
        ("version", c_char_p),
        ("path", c_char_p),
        ("loaded", c_int),
        ("reason", c_char_p),
    ]


class memra_gemm_args(Structure):  # module.h
    _fields_ = [
        ("struct_size", c_uint32),
        ("m", c_int32),
        ("n", c_int32),
        ("k", c_int32),
        ("w", memra_dptr),
        ("w_scale_grid", memra_dptr),
        ("w_scale", c_float),
        ("x", memra_dptr),
        ("x_is_f16", c_int32),
        ("y", memra_dptr),
        ("ldy", c_int64),
        ("y_row_offset", c_int64),
        ("alpha", c_float),
        ("w_format", c_int32),
        # appended (module.h): the FP8 lanes' given activation scale
        ("x_scale", c_float),
        ("x_amax", memra_dptr),
    ]


class memra_op_args(Structure):  # memra.h
    _fields_ = [
        ("struct_size", c_uint32),
        ("gemm", memra_gemm_args),
        ("arm", c_int),          # enum memra_accprobe_arm
        ("format", memra_format),
        ("src", memra_dptr),
        ("aux", memra_dptr),
        ("dst", memra_dptr),
        ("rows", c_int64),
        ("cols", c_int64),
        ("n", c_int64),
        ("s", c_float),
        ("stream", memra_stream_t),
        ("decline_reason", c_char_p),  # OUT
    ]


class memra_ledger_row(Structure):  # memra.h
    _fields_ = [
        ("device", c_char_p),
        ("op", c_char_p),
        ("module", c_char_p),
        ("entries", c_uint64),
        ("hits", c_uint64),
        ("errors", c_uint64),
        ("reason", c_char_p),
        ("declines", c_uint64),
    ]


LEDGER_VISIT_FN = ctypes.CFUNCTYPE(None, POINTER(memra_ledger_row), c_void_p)


class memra_device_clocks(Structure):  # memra.h
    _fields_ = [("sm_khz", c_int), ("mem_khz", c_int)]


class memra_weight_desc(Structure):  # memra.h
    _fields_ = [
        ("struct_size", c_uint32),
        ("format", memra_format),
        ("out_f", c_int64),
        ("in_f", c_int64),
        ("data", c_void_p),
        ("size", c_size_t),
        ("scale", c_float),
        ("grid", POINTER(c_float)),
        ("grid_count", c_size_t),
        ("name", c_char_p),
        ("input_scale", c_float),  # appended: the static activation scale (E4M3)
    ]


class memra_weight_state(Structure):  # memra.h
    _fields_ = [
        ("prepared", c_int),
        ("has_f16_mirror", c_int),
        ("has_q8_0_slab", c_int),
        ("nan_codes", c_uint64),
        ("note", c_char_p),
    ]


class memra_weight_plan(Structure):  # memra.h (MEMRA_PLAN_MAX_STEPS 4)
    _fields_ = [
        ("struct_size", c_uint32),
        ("lane", c_char_p),
        ("n_steps", c_int),
        ("ops", memra_op * 4),
        ("modules", c_char_p * 4),
        ("operand_bytes", c_uint64),
        ("why", c_char * 320),
    ]


class memra_matmul_args(Structure):  # memra.h
    _fields_ = [
        ("struct_size", c_uint32),
        ("x", memra_dptr),
        ("x_is_f16", c_int32),
        ("m", c_int32),
        ("y", memra_dptr),
        ("ldy", c_int64),
        ("y_row_offset", c_int64),
        ("alpha", c_float),
        ("stream", memra_stream_t),
        ("x_amax", memra_dptr),  # appended: the producer's activation amax on the device
    ]


class memra_experts_desc(Structure):  # memra.h
    _fields_ = [
        ("struct_size", c_uint32),
        ("format", memra_format),
        ("n_experts", c_int32),
        ("out_f", c_int64),
        ("in_f", c_int64),
        ("data", c_void_p),
        ("size", c_size_t),
        ("scales", POINTER(c_float)),
        ("grid", POINTER(c_float)),
        ("grid_count", c_size_t),
        ("name", c_char_p),
    ]


class memra_matmul_experts_args(Structure):  # memra.h
    _fields_ = [
        ("struct_size", c_uint32),
        ("x", memra_dptr),
        ("x_is_f16", c_int32),
        ("rows", c_int32),
        ("ids", memra_dptr),
        ("y", memra_dptr),
        ("ldy", c_int64),
        ("y_row_offset", c_int64),
        ("alpha", c_float),
        ("stream", memra_stream_t),
    ]


class memra_jit_info(Structure):  # memra.h
    _fields_ = [
        ("available", c_int),
        ("why", c_char_p),
        ("nvrtc_major", c_int),
        ("nvrtc_minor", c_int),
        ("disk_enabled", c_int),
        ("folder", c_char_p),
        ("entries", c_uint64),
        ("bytes", c_uint64),
        ("max_bytes", c_uint64),
        ("hits_memory", c_uint64),
        ("hits_disk", c_uint64),
        ("compiles", c_uint64),
        ("corrupt_dropped", c_uint64),
    ]


class memra_jit_entry_info(Structure):  # memra.h
    _fields_ = [
        ("key_hex", c_char * 65),
        ("target", c_char * 17),
        ("bytes", c_uint64),
        ("age_s", c_int64),
        ("header_ok", c_int),
    ]


# Opaque handles are plain void pointers on this side.
memra_runtime_p = c_void_p
memra_device_p = c_void_p
memra_buffer_p = c_void_p
memra_weight_p = c_void_p
memra_timer_p = c_void_p

def sized(cls, **fields):
    """An instance of `cls` with struct_size = ctypes.sizeof(cls) and `fields` set."""
    obj = cls()
    if "struct_size" in dict(cls._fields_):
        obj.struct_size = ctypes.sizeof(cls)
    for k, v in fields.items():
        setattr(obj, k, v)
    return obj


__all__ = [n for n in dir() if n.startswith("memra_")] + ["LEDGER_VISIT_FN", "sized"]


# ---- file.h -------------------------------------------------------------------------

MEMRA_TENSOR_MAX_DIMS = 4


class memra_tensor_info(Structure):  # file.h
    _fields_ = [("name", c_char_p), ("type", c_char_p), ("has_format", c_int), ("format", memra_format),
                ("n_dims", c_int), ("shape", c_int64 * MEMRA_TENSOR_MAX_DIMS), ("elements", c_uint64),
                ("bytes", c_uint64), ("offset", c_uint64), ("path", c_char_p)]


class memra_expert_group_info(Structure):  # file.h
    _fields_ = [("name", c_char_p), ("type", c_char_p), ("has_format", c_int), ("format", memra_format),
                ("from_3d", c_int), ("n_experts", c_int32), ("out_f", c_int64), ("in_f", c_int64),
                ("bytes", c_uint64)]


class memra_meta_info(Structure):  # file.h; type and elem_type: enum memra_meta_type
    _fields_ = [("key", c_char_p), ("type", c_int), ("text", c_char_p), ("i", c_int64), ("u", c_uint64),
                ("f", ctypes.c_double), ("elem_type", c_int), ("count", c_uint64)]
