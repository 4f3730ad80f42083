"""What the binding checks before it hands memory or text to the C library.

The C library trusts the pointers and sizes it is given; these checks are
what keeps a Python caller from corrupting memory through it:

- :func:`text_arg`: a path or a name; None and NUL bytes raise (C would see
  "None", or a string cut at the NUL).
- :func:`writable`: an output array must be writable (a read-only numpy
  array, an ``np.memmap(mode='r')``, an array over ``bytes``).
- :func:`check_operands`: every array (or memra.Buffer) handed to
  ``module_call`` is checked against the op's own arguments: its dtype, that
  it is C-contiguous, that it holds at least the bytes the op reads or
  writes at those sizes, and that an output is writable. An int address is
  the caller's own contract and is not checked.

Each failure is an InvalidArgumentError naming the argument.
"""

import os

from ._core import bad

_F32 = ("float32",)
_F16 = ("float16", "uint16", "int16", "bfloat16")
_U64 = ("uint64", "int64")
_ANY = None  # raw bytes: any dtype, counted in bytes


def text_arg(value, what, allow_none=False):
    """bytes for a const char * argument: str, bytes or os.PathLike. None raises
    (unless allow_none: then it stays NULL); a NUL byte raises."""
    if value is None:
        if allow_none:
            return None
        raise bad(what, "%s is None; give a str" % what)
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        data = value.encode("utf-8")
    elif isinstance(value, (bytes, bytearray)):
        data = bytes(value)
    else:
        raise bad(what, "%s must be a str (got %s)" % (what, type(value).__name__))
    if b"\0" in data:
        raise bad(what, "%s holds a NUL byte at offset %d: the C library would see it cut there"
                  % (what, data.index(b"\0")))
    return data


def writable(v, what):
    """InvalidArgumentError unless the array of View v may be written."""
    if getattr(v, "readonly", False):
        raise bad(what, "%s is read-only (a read-only numpy array, np.memmap(mode='r'), or memory of a bytes "
                        "object): memra would write into it" % what)


def _nbytes(v):
    from ._arrays import itemsize
    n = 1
    for d in v.shape:
        n *= d
    return n * itemsize(v.dtype)


def _q8_1_bytes(m, k):
    return ((k + 511) // 512 * 4) * m * 160  # 144-byte records, then the 16-byte sum plane


def _recs_bytes(rows, cols, rec):
    return (cols + 127) // 128 * rows * rec


def _q8_0_bytes(rows, cols):
    return rows * (cols // 32) * 34


def _row_bytes(fmt, cols):
    from .blocks import row_bytes
    return row_bytes(fmt, cols)


def _kr_bytes(fmt, rows, cols):
    """K records (memra_kr_repack): exactly the GGUF bytes of a Q4_K / Q5_K / Q6_K weight; 0 for another format
    (the op's own check answers then)."""
    from .runtime import format_name
    name = format_name(fmt)
    return rows * _row_bytes(name, cols) if name in ("q4_k", "q5_k", "q6_k") and cols % 256 == 0 else 0


def _w16_bytes(fmt, rows, cols):
    """The W16 operand (module.h memra_w16_bytes): per tile of 128 rows and group of 32 values the codes (Q8_0
    4096, Q4_0 / Q4_K 2048, Q5_K 2560, Q6_K 3072 bytes) and 256 bytes of scales, and for the K-quants 512 bytes a
    tile and super-block; 0 for another format or cols off the block (the op's own check answers then)."""
    from .runtime import format_name
    cb = {"q8_0": 4096, "q4_0": 2048, "q4_k": 2048, "q5_k": 2560, "q6_k": 3072}.get(format_name(fmt), 0)
    kq = format_name(fmt) in ("q4_k", "q5_k", "q6_k")
    if cb == 0 or rows < 0 or cols < 0 or cols % (256 if kq else 32) != 0:
        return 0
    t, g = (rows + 127) // 128, cols // 32
    return t * g * (cb + 256) + (t * (cols // 256) * 512 if kq else 0)


def _gemm_y(g):
    if g.m <= 0:
        return 0
    if g.ldy < g.n:
        raise bad("gemm.ldy", "gemm.ldy = %d is smaller than n = %d" % (g.ldy, g.n))
    if g.y_row_offset < 0:
        raise bad("gemm.y_row_offset", "gemm.y_row_offset = %d is negative" % g.y_row_offset)
    return ((g.y_row_offset + g.m - 1) * g.ldy + g.n) * 4


def _needs(op, a):
    """{argument: (bytes, dtypes, is_output)} for op at the sizes in a (memra_op_args)."""
    g = a.gemm
    m, n, k = g.m, g.n, g.k
    x_f32 = (m * k * 4, _F32, False)
    q8_1 = (_q8_1_bytes(m, k), _ANY, False)
    gemm = {
        "gemm_f16": {"gemm.w": (n * k * 2, _F16, False),
                     "gemm.x": (m * k * 2, _F16, False) if g.x_is_f16 else x_f32},
        "gemm_bf16": {"gemm.w": (n * k * 2, _F16, False), "gemm.x": x_f32},
        "gemm_fp8": {"gemm.w": (n * k, _ANY, False), "gemm.x": x_f32},
        "gemm_fp8_blk": {"gemm.w": (n * k, _ANY, False),
                         "gemm.w_scale_grid": (((n + 127) // 128) * ((k + 127) // 128) * 4, _F32, False),
                         "gemm.x": x_f32},
        "gemm_q8_0": {"gemm.w": (_q8_0_bytes(n, k), _ANY, False), "gemm.x": q8_1},
        "gemm_q8_0r": {"gemm.w": (_recs_bytes(n, k, 144), _ANY, False), "gemm.x": q8_1},
        "gemm_kr": {"gemm.w": (_kr_bytes(g.w_format, n, k), _ANY, False), "gemm.x": q8_1},
        "gemm_w16": {"gemm.w": (_w16_bytes(g.w_format, n, k), _ANY, False),
                     "gemm.x": (m * k * 2, _F16, False) if g.x_is_f16 else x_f32},
        "accprobe": {"gemm.w": (n * k, _ANY, False), "gemm.x": (m * k, _ANY, False)},
    }
    if op in gemm:
        if min(m, n, k) < 0:
            raise bad("gemm", "negative size m=%d n=%d k=%d" % (m, n, k))
        need = dict(gemm[op])
        need["gemm.y"] = (_gemm_y(g), _F32, True)
        return need
    rows, cols, cnt = a.rows, a.cols, a.n
    if min(rows, cols, cnt) < 0:
        raise bad(op, "negative size rows=%d cols=%d n=%d" % (rows, cols, cnt))
    if op == "cvt_f16":
        return {"src": (cnt * 4, _F32, False), "dst": (cnt * 2, _F16, True)}
    if op == "scale":
        return {"src": (cnt * 4, _F32, True)}
    if op == "quant_q8_1":
        return {"src": (rows * cols * 4, _F32, False), "dst": (_q8_1_bytes(rows, cols), _ANY, True)}
    if op == "dequant_f16":
        from .runtime import format_name
        return {"src": (rows * _row_bytes(format_name(a.format), cols), _ANY, False),
                "dst": (rows * cols * 2, _F16, True)}
    if op == "fp8_blk_to_q8_0":
        return {"src": (rows * cols, _ANY, False),
                "aux": (((rows + 127) // 128) * ((cols + 127) // 128) * 4, _F32, False),
                "dst": (_q8_0_bytes(rows, cols), _ANY, True)}
    if op == "fp8_nan_count":
        return {"src": (cnt, _ANY, False), "dst": (8, _U64, True)}
    if op == "dequant_kr_f16":
        from .runtime import format_name
        src = _recs_bytes(rows, cols, 144) if format_name(a.format) == "q8_0" else _kr_bytes(a.format, rows, cols)
        return {"src": (src, _ANY, False), "dst": (rows * cols * 2, _F16, True)}
    if op == "repack_q8_0":
        return {"src": (_q8_0_bytes(rows, cols), _ANY, False), "dst": (_recs_bytes(rows, cols, 144), _ANY, True)}
    return {}


def check_operands(op, a, gemm, fields):
    """Check every array or Buffer among gemm (dict) and fields (dict) against
    op's arguments in a (the memra_op_args built from them)."""
    from ._arrays import contiguous_rows, view
    from .runtime import Buffer
    need = _needs(op, a)
    given = {"gemm." + k: v for k, v in (gemm or {}).items()}
    given.update(fields)
    for name, (nbytes, dtypes, out) in need.items():
        obj = given.get(name)
        if obj is None or isinstance(obj, (bool, int)):
            continue  # NULL (the op's own check), or a raw address: the caller's contract
        if isinstance(obj, Buffer):
            have = obj.size
            if have < nbytes:
                raise bad(name, "%s is a buffer of %d bytes; %s at these sizes needs %d" % (name, have, op, nbytes))
            continue
        v = view(obj, name)
        if dtypes is not None and v.dtype not in dtypes:
            raise bad(name, "%s must be %s for %s (got %s)" % (name, " or ".join(dtypes), op, v.dtype))
        if not contiguous_rows(v, name):
            raise bad(name, "%s must be C-contiguous (strides %s for shape %s)" % (name, v.strides, v.shape))
        have = _nbytes(v)
        if have < nbytes:
            raise bad(name, "%s holds %d bytes; %s at these sizes (m=%d n=%d k=%d rows=%d cols=%d n=%d) needs %d"
                      % (name, have, op, a.gemm.m, a.gemm.n, a.gemm.k, a.rows, a.cols, a.n, nbytes))
        if out:
            writable(v, name)
