"""matmul and module_call on numpy arrays (host device) and torch CUDA tensors (GPU)."""

import sys
from ctypes import byref

from . import _core
from . import _structs as S
from ._arrays import contiguous_rows, view
from ._checks import check_operands, text_arg, writable
from ._core import bad, check, s
from .runtime import Buffer, Device, _stream_value, op_id

_INT32_MAX = 2 ** 31 - 1


def _device_for(rt, v, device, what):
    """The memra device an array lives on, checked against an explicit `device`."""
    if device is not None:
        dev = rt.device(device)
    elif v.where == "host":
        dev = rt.host
    elif v.where == "cuda":
        dev = rt.device("cuda:%d" % (v.ordinal if v.ordinal is not None else 0))
    else:
        raise bad(what, "%s lives on %s, which memra does not serve" % (what, v.where))
    _check_on(dev, v, what)
    return dev


def _check_on(dev, v, what):
    if dev.is_host and v.where != "host":
        raise bad(what, "%s is in %s memory but the device is the host: pass a numpy array (or a CPU tensor)"
                  % (what, v.where))
    if not dev.is_host:
        if v.where != "cuda":
            raise bad(what, "%s is in host memory but the device is %s: pass a torch CUDA tensor on cuda:%d"
                      % (what, dev.label, dev.ordinal))
        if v.ordinal is not None and v.ordinal != dev.ordinal:
            raise bad(what, "%s is on cuda:%d but the device is %s" % (what, v.ordinal, dev.label))


def _default_stream(v, dev):
    """torch's current stream for a torch CUDA tensor, else the legacy default stream."""
    if dev.is_host or v.kind != "torch":
        return None
    torch = sys.modules["torch"]
    return torch.cuda.current_stream(v.obj.device).cuda_stream or None


def _empty_like(v, shape):
    if v.kind == "torch":
        torch = sys.modules["torch"]
        return torch.empty(shape, dtype=torch.float32, device=v.obj.device)
    if v.where != "host":
        raise bad("out", "give out= for a %s input (memra allocates numpy and torch outputs only)" % v.kind)
    import numpy as np
    return np.empty(shape, dtype=np.float32)


def matmul(w, x, out=None, stream=None, alpha=1.0, device=None, row_offset=0, x_amax=None):
    """y = alpha * x . W^T through the device's lane policy (memra_matmul_ex).

    w: a :class:`memra.Weight` [out_f x in_f]. x: [..., in_f] float32 (or
    float16, taken as pre-converted f16 activations), C-contiguous: a numpy
    array (or CPU tensor) on the host device, a torch CUDA tensor (or a
    __cuda_array_interface__ object) on a GPU. The device is the one x lives
    on unless `device` is given. out: float32 [..., out_f] of x's kind, or a
    2-D [rows x out_f] matrix (row stride >= out_f) written from `row_offset`;
    allocated when None. stream: None = torch.cuda.current_stream() for a
    torch tensor (the legacy default stream otherwise), an int CUstream or a
    torch.cuda.Stream. The call is stream-ordered on a GPU and returns before
    the result is ready; on the host device it is complete on return.
    x_amax: None, or the activation's amax computed by the producer, on x's
    device (float32; an int address, a Buffer, an array or tensor): one value
    for a per-tensor E4M3 weight, [ceil(in_f/128) x m] (row fastest) for a
    block-128 one (memra_matmul_args.x_amax); the FP8 lane then quantises in
    one pass at amax / 448, values above it saturating.
    Returns out. Raises InvalidArgumentError for a wrong dtype, shape, layout
    or device, DeclinedError when every lane declined, and the matching
    memra.Error for a library failure (status, memra_last_error text).
    """
    dev, args, out = matmul_args(w, x, out, stream, alpha, device, row_offset, x_amax)
    check("memra_matmul_ex", _core.lib.memra_matmul_ex(dev.handle, w.handle, byref(args)))
    return out


def matmul_args(w, x, out=None, stream=None, alpha=1.0, device=None, row_offset=0, x_amax=None):
    """matmul's checks and argument structure without the call: returns (device,
    memra_matmul_args, out), so a caller (a benchmark arm) can issue
    memra_matmul_ex(device.handle, w.handle, byref(args)) repeatedly with the
    Python-side checks paid once. The structure holds raw pointers: x, out and w
    must outlive it."""
    from .weight import Weight
    if not isinstance(w, Weight):
        raise bad("matmul", "w must be a memra.Weight (got %s)" % type(w).__name__)
    dev, xv, m, ov, ldy, out, stream = _rows_io("matmul", w, x, out, stream, alpha, device, row_offset)
    amax = dptr(x_amax, dev, "x_amax")
    args = S.sized(S.memra_matmul_args, x=xv.ptr, x_is_f16=int(xv.dtype == "float16"), m=m, y=ov.ptr, ldy=ldy,
                   y_row_offset=row_offset, alpha=float(alpha), stream=_stream_value(stream), x_amax=amax)
    return dev, args, out


def _rows_io(what, w, x, out, stream, alpha, device, row_offset):
    """The checks matmul and matmul_experts share: x's device, dtype, shape and layout, its rows m,
    out (allocated when None) and its row stride, the stream. Returns (device, x view, m, out view,
    ldy, out, stream)."""
    rt = w.runtime
    xv = view(x, "x")
    dev = _device_for(rt, xv, device, "x")
    if xv.dtype not in ("float32", "float16"):
        raise bad(what, "x must be float32 (or float16, pre-converted), got %s" % xv.dtype)
    if len(xv.shape) < 1 or xv.shape[-1] != w.in_f:
        raise bad(what, "x has shape %s; its last dimension must be the weight's in_f %d"
                  % (xv.shape, w.in_f))
    if not contiguous_rows(xv, "x"):
        raise bad(what, "x must be C-contiguous (strides %s for shape %s)" % (xv.strides, xv.shape))
    m = 1
    for d in xv.shape[:-1]:
        m *= d
    if m < 1 or m > _INT32_MAX:
        raise bad(what, "x has %d rows; memra takes 1..%d" % (m, _INT32_MAX))
    if alpha == 0:
        raise bad(what, "alpha = 0 is read as 1 by memra; zero the output instead")
    row_offset = int(row_offset)
    if out is None:
        if row_offset:
            raise bad(what, "row_offset needs an out= matrix to write into")
        out = _empty_like(xv, tuple(xv.shape[:-1]) + (w.out_f,))
    ov = view(out, "out")
    _check_on(dev, ov, "out")
    writable(ov, "out")
    if ov.dtype != "float32":
        raise bad(what, "out must be float32, got %s" % ov.dtype)
    if len(ov.shape) == 2 and (row_offset or tuple(ov.shape) != tuple(xv.shape[:-1]) + (w.out_f,)):
        rows, cols = ov.shape
        if cols != w.out_f or ov.strides[1] != 1 or ov.strides[0] < cols:
            raise bad(what, "out %s (strides %s) must have out_f = %d dense columns per row"
                      % (ov.shape, ov.strides, w.out_f))
        if row_offset < 0 or row_offset + m > rows:
            raise bad(what, "rows %d..%d do not fit out's %d rows" % (row_offset, row_offset + m, rows))
        ldy = ov.strides[0]
    else:
        if tuple(ov.shape) != tuple(xv.shape[:-1]) + (w.out_f,):
            raise bad(what, "out has shape %s; expected %s" % (ov.shape, tuple(xv.shape[:-1]) + (w.out_f,)))
        if not contiguous_rows(ov, "out"):
            raise bad(what, "out must be C-contiguous (strides %s)" % (ov.strides,))
        ldy = w.out_f
    if stream is None:
        stream = _default_stream(xv, dev)
    return dev, xv, m, ov, ldy, out, stream


def matmul_experts(w, x, ids, out=None, stream=None, alpha=1.0, device=None, row_offset=0):
    """y[r] = alpha * x[r] . W[ids[r]]^T for each row r (memra_matmul_experts_ex).

    w: an expert weight (:meth:`memra.Weight.experts`, :meth:`~memra.Weight.experts_from_array`,
    :meth:`~memra.Weight.experts_from_file`). x: [..., in_f] as for :func:`matmul`, one row per
    (token, routed slot): the engine expands its top-k routing into rows. ids: int32, one expert
    per row of x (its shape x's leading dimensions, or flat), on x's device, any order; an id
    outside [0, n_experts) skips its row, whose output row is left as it was. out, stream,
    alpha, device and row_offset as for :func:`matmul`. The gating weights and the sum over a
    token's k rows stay the caller's. Returns out. Raises InvalidArgumentError for a dense
    weight or a wrong dtype, shape, layout or device, NotSupportedError where no lane of the
    device serves these experts.
    """
    from .weight import Weight
    if not isinstance(w, Weight):
        raise bad("matmul_experts", "w must be a memra.Weight (got %s)" % type(w).__name__)
    if w.n_experts < 1:
        raise bad("matmul_experts", "w is a dense weight; memra.matmul multiplies it (matmul_experts takes "
                  "an expert weight: memra.Weight.experts)")
    dev, xv, m, ov, ldy, out, stream = _rows_io("matmul_experts", w, x, out, stream, alpha, device, row_offset)
    iv = view(ids, "ids")
    _check_on(dev, iv, "ids")
    if iv.dtype != "int32":
        raise bad("matmul_experts", "ids must be int32, got %s" % iv.dtype)
    n_ids = 1
    for d in iv.shape:
        n_ids *= d
    if n_ids != m or not contiguous_rows(iv, "ids"):
        raise bad("matmul_experts", "ids has shape %s (strides %s); it must hold one contiguous id per row of x "
                  "(%d)" % (iv.shape, iv.strides, m))
    args = S.sized(S.memra_matmul_experts_args, x=xv.ptr, x_is_f16=int(xv.dtype == "float16"), rows=m, ids=iv.ptr,
                   y=ov.ptr, ldy=ldy, y_row_offset=int(row_offset), alpha=float(alpha), stream=_stream_value(stream))
    check("memra_matmul_experts_ex", _core.lib.memra_matmul_experts_ex(dev.handle, w.handle, byref(args)))
    return out


def dptr(obj, device, what="pointer"):
    """The device address of obj on `device`: an int, a Buffer, an array or tensor, or None (0)."""
    if obj is None:
        return 0
    if isinstance(obj, bool):
        raise bad(what, "%s cannot be a bool" % what)
    if isinstance(obj, int):
        return obj
    if isinstance(obj, Buffer):
        if obj.device != device:
            raise bad(what, "%s is a buffer on %s, not on %s" % (what, obj.device.label, device.label))
        return obj.ptr
    v = view(obj, what)
    _check_on(device, v, what)
    return v.ptr


_GEMM_FIELDS = ("m", "n", "k", "w", "w_scale_grid", "w_scale", "x", "x_is_f16", "y", "ldy", "y_row_offset", "alpha",
                "w_format", "x_scale", "x_amax")
_PTR_FIELDS = ("w", "w_scale_grid", "x", "y", "src", "aux", "dst", "x_amax")
_TOP_FIELDS = ("arm", "format", "src", "aux", "dst", "rows", "cols", "n", "s")


def make_op_args(device, gemm=None, stream=None, **fields):
    """A memra_op_args for `device` from keyword fields (see :func:`module_call`)."""
    from .runtime import format_id
    if not isinstance(device, Device):
        raise bad("module_call", "device must be a memra.Device (got %s)" % type(device).__name__)
    a = S.sized(S.memra_op_args)
    g = S.sized(S.memra_gemm_args, alpha=1.0)
    gemm = dict(gemm or {})
    for k in gemm:
        if k not in _GEMM_FIELDS:
            raise bad("module_call", "gemm has no field %r (fields: %s)" % (k, ", ".join(_GEMM_FIELDS)))
    for k in fields:
        if k not in _TOP_FIELDS:
            raise bad("module_call", "no op argument %r (arguments: gemm=, stream=, %s)" % (k, ", ".join(_TOP_FIELDS)))
    for k, v in gemm.items():
        setattr(g, k, dptr(v, device, "gemm." + k) if k in _PTR_FIELDS else v)
    if gemm and "ldy" not in gemm:
        g.ldy = g.n
    a.gemm = g
    for k, v in fields.items():
        if k in _PTR_FIELDS:
            v = dptr(v, device, k)
        elif k == "format":
            v = format_id(v)
        elif k == "arm" and isinstance(v, str):
            v = {"s32": 0, "f32": 1, "mx": 2}[v.lower()]
        setattr(a, k, v)
    a.stream = _stream_value(stream)
    return a


def module_call(device, module, op, gemm=None, stream=None, **fields):
    """Run one op on a NAMED module, bypassing the routing (races, checks): memra_module_call.

    gemm: a dict of memra_gemm_args members (m, n, k, w, w_scale_grid,
    w_scale, x, x_is_f16, y, ldy [default n], y_row_offset, alpha [default 1])
    for the GEMM ops and accprobe; the other members of memra_op_args as
    keywords: arm ("s32"/"f32"/"mx" or 0..2), format, src, aux, dst, rows,
    cols, n, s. Pointer members take an int address, a memra.Buffer, or an
    array/tensor on `device`. stream as for :func:`matmul` (None = legacy
    default). Counted in the ledger like a dispatch. Raises NotFoundError
    when the module is not admitted on the device or lacks the op, and
    DeclinedError (``.reason`` = the module's reason) when it declines.
    """
    oid = op_id(op)
    mod = text_arg(module, "module")
    a = make_op_args(device, gemm=gemm, stream=stream, **fields)
    check_operands(s(_core.lib.memra_op_name(oid)), a, gemm, fields)
    st = _core.lib.memra_module_call(device.handle, mod, oid, byref(a))
    if st != 0:
        reason = s(a.decline_reason) if st == 1 else None
        raise _core.fail("memra_module_call(%s, %s)" % (module, op if isinstance(op, str) else oid), st, reason)
