"""memra_matmul as a torch custom op: ``torch.ops.memra.matmul`` and ``torch.ops.memra.matmul_out``.

    import torch, memra, memra.torch_op as mt       # importing memra.torch_op registers the ops
    w = memra.Weight.from_array(rt, a, "q8_0")       # prepared for the device x lives on
    y = mt.matmul(w, x)                              # eager: the kernel without the dispatcher; compiled: the op
    mt.matmul(w, x, out=y)                           # into a preallocated output (no allocation)
    f = torch.compile(lambda x: mt.matmul(w, x), fullgraph=True)

The schema (a weight is passed as its id, an int that :func:`weight_id` gives):

    memra::matmul(Tensor x, int weight, int out_f, float alpha=1.0) -> Tensor
    memra::matmul_out(Tensor x, int weight, Tensor(a!) out, float alpha=1.0) -> ()

Both have CPU (the host device) and CUDA kernels and a fake (meta)
implementation, so they trace under ``torch.compile(fullgraph=True)``; the
CUDA kernel runs on torch's current stream, so it is captured into a CUDA
graph like any torch kernel (reserve the capture stream's scratch first:
``Device.reserve_stream``, README "Threads, streams and scratch").

The per-call cost: the first call of a signature (weight, device, x's shape
and dtype, out's shape and dtype, alpha, calling thread) goes through
:func:`memra.calls.matmul_args` (every check: dtype, size, layout, device,
writability, each error naming the argument; alpha 0 is refused, as
memra.matmul does) and keeps the argument structure it built under that
signature. A later call with the same signature checks what the signature
cannot vouch for (both tensors' contiguity, out's device, the weight neither
closed nor collected), writes the two pointers and torch's current stream
into the kept structure and calls memra_matmul_ex through ctypes; any other
call takes the checked path again. The thread is in the signature because
ctypes lets go of the GIL during the call: two threads never share a
structure. :func:`matmul` in eager mode calls the kernels directly (no
dispatcher); under torch.compile it emits the op. bench/torch_op_overhead.py
measures the host time per call of each path beside the bound-arguments C
call, a no-op custom op (the dispatcher's own cost) and a tiny torch.mm.

Importing this module imports torch; ``import memra`` alone never does.
"""

import ctypes
import weakref
from threading import get_ident as _thread

import torch

from . import _core
from ._core import bad

__all__ = ["matmul", "weight_id", "registered", "Linear"]

_WEIGHTS = {}  # weight id -> weakref to the memra.Weight
# The argument structures the kernels reuse, one per call signature seen, each made by
# memra.calls.matmul_args (every check) when that signature first came, kept on the
# weight itself (so a weight's tables go with it, and a new weight at a destroyed one's
# address starts with none):
#   w._memra_outs: (x.shape, out.shape, x.dtype, out.dtype, x's device index [-1 = CPU], alpha, thread)
#                  -> (memra_matmul_args, its byref, device index, device handle, weight handle)
#   w._memra_news: (x.shape, x.dtype, x's device index, out_f, alpha, thread) -> the same + (y's shape,
#                  x is float32)
# What a key cannot vouch for is checked on every call: contiguity, out's device, and that
# the weight is not destroyed (a destroyed weight's handle is None; its runtime's close
# destroys it too).
_CACHE_MAX = 256  # signatures kept per table (a serving loop sees one per batch size)


def weight_id(w):
    """The int that names `w` in the ops' schema (its handle). The weight must
    outlive every call (and every compiled graph) that uses the id."""
    from .weight import Weight
    if not isinstance(w, Weight):
        raise bad("memra.torch_op", "a memra.Weight is needed (got %s)" % type(w).__name__)
    h = int(w.handle)
    old = _WEIGHTS.get(h)
    if old is None or old() is not w:
        _WEIGHTS[h] = weakref.ref(w)
    if getattr(w, "_memra_outs", None) is None:
        w._memra_outs, w._memra_news = {}, {}
    w._memra_tid = h  # what matmul reads while torch.compile traces it
    return h


def _weight(wid):
    ref = _WEIGHTS.get(int(wid))
    w = ref() if ref is not None else None
    if w is None or getattr(w, "_h", None) is None:
        raise bad("memra::matmul", "weight id %#x names no live memra.Weight: register it with "
                                   "memra.torch_op.weight_id(w) (memra.torch_op.Linear and an eager matmul do) before "
                                   "torch.compile traces a call; the weight and its runtime must outlive the calls"
                  % int(wid))
    return w


_get_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_matmul_ex = None  # memra_matmul_ex, declared by _declare_matmul_ex when the first signature is kept


def _declare_matmul_ex():
    """memra_matmul_ex as its own function object, its argument structure a void *:
    the kernels pass a byref kept beside each structure, so a call converts two
    ints and nothing else. Made on first use: importing this module loads no library."""
    global _matmul_ex
    if _matmul_ex is None:
        lib = _core.load()
        fn = lib._FuncPtr(("memra_matmul_ex", lib))
        fn.restype = ctypes.c_int
        fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
        _matmul_ex = fn


def _not_tensor(what, t):
    return bad("memra::matmul", "%s must be a torch tensor (got %s; memra.matmul takes numpy arrays)"
               % (what, type(t).__name__))


def _slow(wid, x, out, out_f, alpha):
    """Every check (memra.calls.matmul_args, and the op's own: out holds exactly
    x's rows), then the call; the argument structure is kept under the call's
    signature so the next call like it takes the kernels' short path.
    out None: the functional op (allocates y [..., out_f]). Returns y."""
    from .calls import matmul_args
    w = _weight(wid)
    if not isinstance(x, torch.Tensor):
        raise _not_tensor("x", x)
    if out is not None and not isinstance(out, torch.Tensor):
        raise _not_tensor("out", out)
    if out is None and out_f != w.out_f:
        raise bad("memra::matmul", "out_f is %d but the weight has out_f %d" % (out_f, w.out_f))
    if x.dtype is not _F32 and x.dtype is not _F16:
        raise bad("memra::matmul", "x must be float32 (or float16), got %s" % x.dtype)
    if not x.is_contiguous():
        raise bad("memra::matmul", "x must be contiguous (strides %s for shape %s)"
                  % (tuple(x.stride()), tuple(x.shape)))
    if out is not None:
        if out.get_device() != x.get_device():
            raise bad("memra::matmul", "out is on %s but x is on %s" % (out.device, x.device))
        if not out.is_contiguous() or out.dim() < 1 or out.numel() * w.in_f != x.numel() * w.out_f:
            raise bad("memra::matmul", "out must be a contiguous float32 [..., %d] tensor matching x's rows, got "
                                       "%s %s (strides %s)" % (w.out_f, out.dtype, tuple(out.shape),
                                                              tuple(out.stride())))
    dev, args, y = matmul_args(w, x, out=out, alpha=alpha)  # dtype, size, layout, device, writability; errors name it
    _declare_matmul_ex()
    i = x.get_device()
    ref = ctypes.byref(args)
    entry = (args, ref, i, dev.handle, w.handle)
    weight_id(w)  # the weight's tables (a weight the op met first, by its id, has them already)
    table = w._memra_outs if out is not None else w._memra_news
    if len(table) >= _CACHE_MAX:
        table.clear()
    if out is not None:
        table[(x.shape, out.shape, x.dtype, out.dtype, i, alpha, _thread())] = entry
    else:
        table[(x.shape, x.dtype, i, out_f, alpha, _thread())] = entry + (tuple(y.shape), x.dtype is _F32)
    st = _matmul_ex(entry[3], entry[4], ref)
    if st != 0:
        raise _core.fail("memra_matmul_ex", st)
    return y


_F32, _F16 = torch.float32, torch.float16
_Tensor = torch.Tensor


def _new_fast(w, x, out_f, alpha):
    """A new float32 [..., out_f] = alpha * x . W^T through the kept structure, or None (take _slow)."""
    e = w._memra_news.get((x.shape, x.dtype, x.get_device(), out_f, alpha, _thread()))
    if e is None or w._h is None or not x.is_contiguous():
        return None
    a, ref, i, dh, wh, ys, f32 = e
    y = x.new_empty(ys) if f32 else x.new_empty(ys, dtype=_F32)  # on x's device
    a.x = x.data_ptr()
    a.y = y.data_ptr()
    if i >= 0:
        a.stream = _get_stream(i)
    st = _matmul_ex(dh, wh, ref)
    if st:
        raise _core.fail("memra_matmul_ex", st)
    return y


def _op_weight(wid):
    """The live weight an op's id names, or None (then _slow names what is wrong)."""
    ref = _WEIGHTS.get(wid)
    return ref() if ref is not None else None


def _matmul_out_kernel(x, weight, out, alpha=1.0):
    """matmul_out's CPU and CUDA kernel: out [..., out_f] = alpha * x [..., in_f] . W^T.
    The short path inline (a Python call is a tenth of it; the dispatcher's own cost comes first)."""
    ref = _WEIGHTS.get(weight)
    w = ref() if ref is not None else None
    if w is not None:
        e = w._memra_outs.get((x.shape, out.shape, x.dtype, out.dtype, x.get_device(), alpha, _thread()))
        if e is not None and w._h is not None:
            a, r, i, dh, wh = e
            if out.get_device() == i and x.is_contiguous() and out.is_contiguous():
                a.x = x.data_ptr()
                a.y = out.data_ptr()
                if i >= 0:
                    a.stream = _get_stream(i)
                st = _matmul_ex(dh, wh, r)
                if st:
                    raise _core.fail("memra_matmul_ex", st)
                return
    _slow(weight, x, out, -1, alpha)


def _matmul_kernel(x, weight, out_f, alpha=1.0):
    """matmul's CPU and CUDA kernel: a new float32 [..., out_f] = alpha * x [..., in_f] . W^T."""
    w = _op_weight(weight)
    y = _new_fast(w, x, out_f, alpha) if w is not None else None
    return y if y is not None else _slow(weight, x, None, out_f, alpha)


_LIB = torch.library.Library("memra", "DEF")
_LIB.define("matmul(Tensor x, int weight, int out_f, float alpha=1.0) -> Tensor")
_LIB.define("matmul_out(Tensor x, int weight, Tensor(a!) out, float alpha=1.0) -> ()")
for _key in ("CPU", "CUDA"):
    _LIB.impl("matmul", _matmul_kernel, _key)
    _LIB.impl("matmul_out", _matmul_out_kernel, _key)

_register_fake = getattr(torch.library, "register_fake", None) or getattr(torch.library, "impl_abstract")


@_register_fake("memra::matmul", lib=_LIB)
def _matmul_fake(x, weight, out_f, alpha=1.0):
    return x.new_empty(tuple(x.shape[:-1]) + (out_f,), dtype=_F32)


@_register_fake("memra::matmul_out", lib=_LIB)
def _matmul_out_fake(x, weight, out, alpha=1.0):
    return None


_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)
# Dynamo's own flag (False in eager, constant True while Dynamo traces): half the cost of
# is_compiling, so the eager fast path asks it first; is_compiling (also true under a
# non-Dynamo export, whose tensors are fake and so take the op anyway) guards the rest.
_dynamo_compiling = getattr(getattr(torch, "compiler", None), "is_dynamo_compiling", None) or _compiling


def matmul(w, x, out=None, alpha=1.0):
    """y = alpha * x . W^T for a torch tensor x (CUDA: on torch's current
    stream; CPU: the host device). Eager: the ops' kernels called directly (no
    dispatcher); a tensor subclass (a Parameter, a fake tensor) goes through
    the op. Under torch.compile: ``torch.ops.memra.matmul`` / ``matmul_out``
    (the weight must be registered first: weight_id(w), an eager call, or a
    :class:`Linear`). Returns out."""
    if not _dynamo_compiling() and type(x) is _Tensor:
        # the eager path of a signature seen before, _matmul_out_kernel's short path inline (a
        # Python call costs a tenth of it); test_torch_op's kept-signature cases check both
        if type(out) is _Tensor:
            t = getattr(w, "_memra_outs", None)
            if t is not None:
                e = t.get((x.shape, out.shape, x.dtype, out.dtype, x.get_device(), alpha, _thread()))
                if e is not None and w._h is not None:
                    a, ref, i, dh, wh = e
                    if out.get_device() == i and x.is_contiguous() and out.is_contiguous():
                        a.x = x.data_ptr()
                        a.y = out.data_ptr()
                        if i >= 0:
                            a.stream = _get_stream(i)
                        st = _matmul_ex(dh, wh, ref)
                        if st:
                            raise _core.fail("memra_matmul_ex", st)
                        return out
        elif out is None and getattr(w, "_memra_news", None) is not None:
            y = _new_fast(w, x, w.shape[0], alpha)
            if y is not None:
                return y
    if _compiling():
        # set by weight_id (a Linear, or an eager call, made it): a trace cannot register
        wid = getattr(w, "_memra_tid", None)
        if wid is None:
            wid = int(w._h)
        if out is None:
            return torch.ops.memra.matmul(x, wid, w.out_f, alpha)
        torch.ops.memra.matmul_out(x, wid, out, alpha)
        return out
    wid = getattr(w, "_memra_tid", None)
    if wid is None or wid != w._h:
        wid = weight_id(w)
    if out is None:
        if type(x) is _Tensor:
            return _slow(wid, x, None, w.out_f, alpha)
        if not isinstance(x, _Tensor):
            raise _not_tensor("x", x)
        return torch.ops.memra.matmul(x, wid, w.out_f, alpha)  # a subclass (a Parameter, a fake tensor): the op
    if type(x) is _Tensor and type(out) is _Tensor:
        _slow(wid, x, out, -1, alpha)
        return out
    for what, t in (("x", x), ("out", out)):
        if not isinstance(t, _Tensor):
            raise _not_tensor(what, t)
    torch.ops.memra.matmul_out(x, wid, out, alpha)
    return out


class Linear(torch.nn.Module):
    """A projection y = x . W^T served by memra: forward is ``torch.ops.memra.matmul``
    (so torch.compile(fullgraph=True) and CUDA graphs see one op; in eager mode a plain
    tensor goes to the op's kernel without the dispatcher). Keeps `w` alive."""

    def __init__(self, w, alpha=1.0):
        super().__init__()
        self.weight_memra = w
        self.wid = weight_id(w)
        self.in_features, self.out_features = w.in_f, w.out_f
        self.alpha = float(alpha)

    def forward(self, x):
        if not _compiling() and type(x) is _Tensor:
            y = _new_fast(self.weight_memra, x, self.out_features, self.alpha)
            return y if y is not None else _slow(self.wid, x, None, self.out_features, self.alpha)
        return torch.ops.memra.matmul(x, self.wid, self.out_features, self.alpha)  # traced, a subclass, an fx proxy

    def extra_repr(self):
        return "in_features=%d, out_features=%d, memra=%r" % (self.in_features, self.out_features, self.weight_memra)


def registered():
    """True when torch.ops.memra.matmul and matmul_out are registered (always, once imported)."""
    return hasattr(torch.ops.memra, "matmul") and hasattr(torch.ops.memra, "matmul_out")
