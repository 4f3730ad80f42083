"""Host-side encoders and decoders of memra's block formats (numpy, imported lazily).

These produce exactly the bytes memra's own C encoders produce (formats.h):
f16 round to nearest even; OCP e4m3 (E4M3FN) round to nearest even,
saturating at +-448, NaN -> 0x7F with the sign kept; Q8_0 through
memra_q8_0_encode itself. Used by :meth:`memra.Weight.from_array`.
"""

import ctypes

from . import _core
from ._core import bad

E4M3_MAX = 448.0
QK8_0 = 32
Q8_0_BYTES = 34
FP8_BLOCK = 128

_e4m3_table = None


def _np():
    try:
        import numpy
    except ImportError as e:  # pragma: no cover - numpy is optional
        raise ImportError("memra: this needs numpy (pip install numpy)") from e
    return numpy


def e4m3_values():
    """float64[127]: the non-negative finite e4m3 values, code 0..126 (ascending)."""
    global _e4m3_table
    if _e4m3_table is None:
        np = _np()
        _e4m3_table = np.array([_core.lib.memra_e4m3_decode(c) for c in range(127)], dtype=np.float64)
    return _e4m3_table


def e4m3_decode(codes):
    """uint8 codes -> float32 values (NaN for magnitude 0x7F)."""
    np = _np()
    codes = np.asarray(codes, dtype=np.uint8)
    mag = codes & 0x7F
    vals = np.empty(codes.shape, dtype=np.float32)
    table = np.append(e4m3_values(), np.nan).astype(np.float32)
    vals[...] = table[mag]
    return np.where(codes & 0x80, -vals, vals).astype(np.float32)


def e4m3_encode(x):
    """float array -> uint8 e4m3 codes, as memra_e4m3_encode (RNE, saturating, NaN -> 0x7F)."""
    np = _np()
    x = np.asarray(x, dtype=np.float32)
    ax = np.minimum(np.abs(x.astype(np.float64)), E4M3_MAX)  # inf saturates too
    vals = e4m3_values()
    hi = np.clip(np.searchsorted(vals, ax, side="left"), 0, 126)
    lo = np.clip(hi - 1, 0, 126)
    dlo, dhi = ax - vals[lo], vals[hi] - ax
    take_hi = (dhi < dlo) | ((dhi == dlo) & (hi % 2 == 0))
    code = np.where(take_hi, hi, lo).astype(np.uint8)
    code = np.where(np.isnan(x), np.uint8(0x7F), code)
    return (code | np.where(np.signbit(x), np.uint8(0x80), np.uint8(0))).astype(np.uint8)


def f16_encode(x):
    """float array -> float16 (numpy's conversion is round to nearest even, as memra's)."""
    np = _np()
    return np.asarray(x, dtype=np.float32).astype(np.float16)


def q8_0_encode(a):
    """float32 [rows x cols] (cols a multiple of 32) -> Q8_0 bytes (uint8 [rows x cols/32*34]),
    by memra_q8_0_encode block for block."""
    np = _np()
    a = np.ascontiguousarray(a, dtype=np.float32)
    if a.ndim != 2 or a.shape[1] % QK8_0:
        raise bad("q8_0_encode", "needs a 2-D array whose columns are a multiple of 32 (got shape %s)" % (a.shape,))
    nb = a.size // QK8_0
    out = np.empty(nb * Q8_0_BYTES, dtype=np.uint8)
    fp = ctypes.POINTER(ctypes.c_float)
    up = ctypes.POINTER(ctypes.c_uint8)
    src = a.ctypes.data
    dst = out.ctypes.data
    enc = _core.lib.memra_q8_0_encode
    for i in range(nb):
        enc(ctypes.cast(src + i * QK8_0 * 4, fp), ctypes.cast(dst + i * Q8_0_BYTES, up))
    return out.reshape(a.shape[0], -1)


def decode_rows(fmt, data, rows, cols):
    """Bytes of `rows` x `cols` values in format `fmt` -> float32 [rows x cols] (memra_decode_row)."""
    np = _np()
    from .runtime import format_id
    fid = format_id(fmt)
    rb = _core.lib.memra_format_row_bytes(fid, cols)
    if rb == 0:
        raise bad("decode_rows", "%d columns is not a whole number of %s blocks" % (cols, fmt))
    raw = np.frombuffer(bytes(data), dtype=np.uint8)
    if raw.size != rb * rows:
        raise bad("decode_rows", "%d bytes given, %d x %d %s needs %d" % (raw.size, rows, cols, fmt, rb * rows))
    out = np.empty((rows, cols), dtype=np.float32)
    for r in range(rows):
        _core.lib.memra_decode_row(fid, raw.ctypes.data + r * rb, cols,
                                   ctypes.cast(out.ctypes.data + r * cols * 4, ctypes.POINTER(ctypes.c_float)))
    return out


def row_bytes(fmt, cols):
    from .runtime import format_id
    return _core.lib.memra_format_row_bytes(format_id(fmt), cols)
