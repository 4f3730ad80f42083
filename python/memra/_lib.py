"""Finding, loading and declaring libmemra.

Search order (the first that loads wins):

1. ``MEMRA_LIBRARY``: a path to libmemra.so. When set it is the only place
   tried, so a wrong value fails loudly instead of picking up another build.
2. Beside the package: ``<package dir>/libmemra.so`` (a bundled copy).
3. The install prefix: ``<sys.prefix>/lib/libmemra.so`` (and exec/base prefix),
   where ``cmake --install build --prefix <venv or /usr/local>`` puts it.
4. The build tree, when the package runs from a checkout:
   ``<checkout>/build/lib/libmemra.so``.
5. The system loader: ``libmemra.so.0``, ``libmemra.so`` (LD_LIBRARY_PATH,
   ld.so.cache).

Paths are absolute (from ``__file__`` and ``sys.prefix``); nothing is loaded
from the current directory. When nothing loads, :class:`LibraryNotFound`
(an ImportError) lists every place tried and why each failed.
"""

import ctypes
import os
import sys
from ctypes import POINTER, c_char_p, c_double, c_float, c_int, c_int32, c_int64, c_size_t, c_uint, c_uint8, c_uint16, \
    c_uint64, c_void_p

from . import _structs as S


class LibraryNotFound(ImportError):
    """libmemra could not be loaded from any candidate; ``tried`` lists (place, why)."""

    def __init__(self, tried):
        self.tried = list(tried)
        lines = ["memra: cannot load libmemra; tried, in order:"]
        lines += ["  %s: %s" % (p, why) for p, why in self.tried]
        lines.append("Set MEMRA_LIBRARY=/path/to/libmemra.so, or build it (cmake --preset default && "
                     "cmake --build --preset default) or install it (cmake --install build --prefix PREFIX).")
        super().__init__("\n".join(lines))


def candidates(env=None):
    """The (place, kind) pairs tried, in order, as :func:`load` would try them."""
    env = os.environ if env is None else env
    explicit = env.get("MEMRA_LIBRARY")
    if explicit:
        return [(explicit, "MEMRA_LIBRARY")]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [(os.path.join(here, "libmemra.so"), "beside the package")]
    seen = set()
    for prefix in (sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix)):
        for libdir in ("lib", "lib64"):
            p = os.path.join(prefix, libdir, "libmemra.so")
            if p not in seen:
                seen.add(p)
                out.append((p, "install prefix"))
    checkout = os.path.dirname(os.path.dirname(here))  # python/memra -> the repository
    if os.path.exists(os.path.join(checkout, "CMakeLists.txt")):
        out.append((os.path.join(checkout, "build", "lib", "libmemra.so"), "build tree"))
    out += [("libmemra.so.0", "system loader"), ("libmemra.so", "system loader")]
    return out


def load(env=None):
    """Load libmemra from the first candidate that loads; returns (CDLL, path)."""
    tried = []
    for place, kind in candidates(env):
        if kind == "MEMRA_LIBRARY" and not os.path.isabs(place):
            tried.append((place, "MEMRA_LIBRARY must be an absolute path"))
            continue
        if kind != "system loader" and kind != "MEMRA_LIBRARY" and not os.path.exists(place):
            tried.append((place, "%s: no such file" % kind))
            continue
        try:
            lib = ctypes.CDLL(place)
        except OSError as e:
            tried.append((place, "%s: %s" % (kind, e)))
            continue
        if not hasattr(lib, "memra_version"):
            tried.append((place, "%s: loaded but has no memra_version: not libmemra" % kind))
            continue
        return lib, place
    raise LibraryNotFound(tried)


# (name, restype, argtypes). Declared once; a symbol the library lacks is
# skipped so a newer package can still run the parts an older library has.
_PROTOS = [
    ("memra_version", c_char_p, []),
    ("memra_status_str", c_char_p, [S.memra_status]),
    ("memra_last_error", c_char_p, []),
    ("memra_open", S.memra_status, [POINTER(S.memra_options), POINTER(c_void_p)]),
    ("memra_close", None, [c_void_p]),
    ("memra_driver_status", c_char_p, [c_void_p]),
    ("memra_driver_version", c_int, [c_void_p]),
    ("memra_device_count", c_int, [c_void_p]),
    ("memra_device_get", c_void_p, [c_void_p, c_int]),
    ("memra_device_host", c_void_p, [c_void_p]),
    ("memra_device_caps_get", POINTER(S.memra_device_caps), [c_void_p]),
    ("memra_device_profile_forced", c_int, [c_void_p]),
    ("memra_caps_describe", None, [c_uint64, c_char_p, c_size_t]),
    ("memra_device_synchronize", S.memra_status, [c_void_p]),
    ("memra_stream_reserve", S.memra_status, [c_void_p, c_void_p, POINTER(c_void_p), c_int, c_int32]),
    ("memra_module_count", c_int, [c_void_p]),
    ("memra_module_info_get", S.memra_status, [c_void_p, c_int, POINTER(S.memra_module_info)]),
    ("memra_module_device_note", c_char_p, [c_void_p, c_int, c_void_p]),
    ("memra_module_load", S.memra_status, [c_void_p, c_char_p]),
    ("memra_module_unload", S.memra_status, [c_void_p, c_char_p]),
    ("memra_routing_configure", S.memra_status, [c_void_p, c_char_p, c_char_p]),
    ("memra_routing_get", c_int, [c_void_p, S.memra_op, POINTER(c_char_p), c_int]),
    ("memra_module_score", c_int, [c_void_p, c_char_p]),
    ("memra_op_name", c_char_p, [S.memra_op]),
    ("memra_op_from_name", S.memra_op, [c_char_p]),
    ("memra_module_call", S.memra_status, [c_void_p, c_char_p, S.memra_op, POINTER(S.memra_op_args)]),
    ("memra_module_provides", c_int, [c_void_p, c_char_p, S.memra_op]),
    ("memra_ledger_visit", None, [c_void_p, S.LEDGER_VISIT_FN, c_void_p]),
    ("memra_ledger_hits", c_uint64, [c_void_p, S.memra_op, c_char_p]),
    ("memra_ledger_reset", None, [c_void_p]),
    ("memra_buffer_create", S.memra_status, [c_void_p, c_size_t, POINTER(c_void_p)]),
    ("memra_buffer_destroy", None, [c_void_p]),
    ("memra_buffer_ptr", S.memra_dptr, [c_void_p]),
    ("memra_buffer_size", c_size_t, [c_void_p]),
    ("memra_buffer_write", S.memra_status, [c_void_p, c_size_t, c_void_p, c_size_t]),
    ("memra_buffer_read", S.memra_status, [c_void_p, c_size_t, c_void_p, c_size_t]),
    ("memra_timer_create", S.memra_status, [c_void_p, POINTER(c_void_p)]),
    ("memra_timer_destroy", None, [c_void_p]),
    ("memra_timer_start", S.memra_status, [c_void_p, S.memra_stream_t]),
    ("memra_timer_stop", S.memra_status, [c_void_p, S.memra_stream_t]),
    ("memra_timer_elapsed_ms", S.memra_status, [c_void_p, POINTER(c_double)]),
    ("memra_device_clocks_get", S.memra_status, [c_void_p, POINTER(S.memra_device_clocks)]),
    ("memra_weight_create", S.memra_status, [c_void_p, POINTER(S.memra_weight_desc), POINTER(c_void_p)]),
    ("memra_weight_destroy", None, [c_void_p]),
    ("memra_weight_prepare", S.memra_status, [c_void_p, c_void_p]),
    ("memra_weight_format", S.memra_format, [c_void_p]),
    ("memra_weight_query", S.memra_status, [c_void_p, c_void_p, POINTER(S.memra_weight_state)]),
    ("memra_weight_operands", c_uint, [c_void_p, c_void_p]),
    ("memra_weight_plan_get", S.memra_status, [c_void_p, c_void_p, POINTER(S.memra_weight_plan)]),
    ("memra_device_f16_budget_get", c_uint64, [c_void_p]),
    ("memra_device_f16_budget_set", S.memra_status, [c_void_p, c_uint64]),
    ("memra_device_w16_set", S.memra_status, [c_void_p, c_int]),
    ("memra_device_floor_f16_m_set", S.memra_status, [c_void_p, c_int64]),
    ("memra_matmul", S.memra_status, [c_void_p, c_void_p, S.memra_dptr, c_int32, S.memra_dptr, S.memra_stream_t]),
    ("memra_matmul_ex", S.memra_status, [c_void_p, c_void_p, POINTER(S.memra_matmul_args)]),
    ("memra_jit_info_get", S.memra_status, [c_void_p, POINTER(S.memra_jit_info)]),
    ("memra_weight_shape", S.memra_status, [c_void_p, POINTER(c_int64), POINTER(c_int64)]),
    ("memra_weight_input_scale", c_float, [c_void_p]),
    ("memra_weight_create_experts", S.memra_status, [c_void_p, POINTER(S.memra_experts_desc), POINTER(c_void_p)]),
    ("memra_weight_experts", c_int32, [c_void_p]),
    ("memra_matmul_experts_ex", S.memra_status, [c_void_p, c_void_p, POINTER(S.memra_matmul_experts_args)]),
    # file.h
    ("memra_file_open", S.memra_status, [c_char_p, POINTER(c_void_p)]),
    ("memra_file_close", None, [c_void_p]),
    ("memra_file_kind_get", c_int, [c_void_p]),
    ("memra_file_describe", c_char_p, [c_void_p]),
    ("memra_file_path", c_char_p, [c_void_p]),
    ("memra_file_tensor_count", c_size_t, [c_void_p]),
    ("memra_file_tensor_get", S.memra_status, [c_void_p, c_size_t, POINTER(S.memra_tensor_info)]),
    ("memra_file_tensor_find", S.memra_status, [c_void_p, c_char_p, POINTER(c_size_t)]),
    ("memra_file_tensor_data", S.memra_status, [c_void_p, c_size_t, POINTER(c_void_p), POINTER(c_size_t)]),
    ("memra_file_meta_count", c_size_t, [c_void_p]),
    ("memra_file_meta_get", S.memra_status, [c_void_p, c_size_t, POINTER(S.memra_meta_info)]),
    ("memra_file_meta_find", S.memra_status, [c_void_p, c_char_p, POINTER(S.memra_meta_info)]),
    ("memra_file_weight_create", S.memra_status, [c_void_p, c_void_p, c_char_p, POINTER(c_void_p)]),
    ("memra_file_expert_group_count", c_size_t, [c_void_p]),
    ("memra_file_expert_group_get", S.memra_status, [c_void_p, c_size_t, POINTER(S.memra_expert_group_info)]),
    ("memra_file_experts_create", S.memra_status, [c_void_p, c_void_p, c_char_p, POINTER(c_void_p)]),
    # formats.h
    ("memra_format_block_values", c_int, [S.memra_format]),
    ("memra_format_block_bytes", c_int, [S.memra_format]),
    ("memra_format_name", c_char_p, [S.memra_format]),
    ("memra_format_row_bytes", c_uint64, [S.memra_format, c_int64]),
    ("memra_f16_from_f32", c_uint16, [c_float]),
    ("memra_f32_from_f16", c_float, [c_uint16]),
    ("memra_e4m3_decode", c_float, [c_uint8]),
    ("memra_e4m3_encode", c_uint8, [c_float]),
    ("memra_q8_0_encode", None, [POINTER(c_float), POINTER(c_uint8)]),
    ("memra_decode_row", None, [S.memra_format, c_void_p, c_int64, POINTER(c_float)]),
]


def declare(lib):
    """Set restype/argtypes of every known entry point the library has."""
    for name, res, args in _PROTOS:
        fn = getattr(lib, name, None)
        if fn is None:
            continue
        fn.restype = res
        fn.argtypes = args
    return lib
