"""memra_matmul as a torch custom op: ``torch.ops.memra.matmul`` and ``torch.ops.memra.matmul_out``.

    import torch, memra, memra.torch_op as mt       # importing memra.torch_op registers the ops
    w = memra.Weight.from_array(rt, a, "q8_0")       # prepared for the device x lives on
    y = mt.matmul(w, x)                              # eager: the bound fast path; compiled: the op
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

The per-call cost: the first call for a (weight, device) goes through
:func:`memra.calls.matmul_args` (every check) and keeps the argument
structure; later calls only check x's dtype, contiguity and width, write the
two pointers, the row count and the stream into that structure and call
memra_matmul_ex through ctypes. :func:`matmul` in eager mode takes that path
directly (no dispatcher); under torch.compile it emits the op.
bench/torch_op_overhead.py measures the host time per call of each path
beside the bound-arguments C call and a tiny torch.mm.

Importing this module imports torch; ``import memra`` alone never does.
"""

import ctypes
import weakref

import torch

from . import _core
from . import _structs as S
from ._core import bad

__all__ = ["matmul", "weight_id", "registered", "Linear"]

_WEIGHTS = {}  # weight id -> weakref to the memra.Weight
_BOUND = {}    # (weight id, torch device index, -1 = CPU) -> _Bound


def weight_id(w):
    """The int that names `w` in the ops' schema (its handle). The weight must
    outlive every call (and every compiled graph) that uses the id."""
    from .weight import Weight
    if not isinstance(w, Weight):
        raise bad("memra.torch_op", "a memra.Weight is needed (got %s)" % type(w).__name__)
    h = int(w.handle)
    old = _WEIGHTS.get(h)
    if old is None or old() is not w:
        # a new weight at an address an earlier (destroyed) one had: forget what was bound to that one
        for key in [k for k in _BOUND if k[0] == h]:
            del _BOUND[key]
    _WEIGHTS[h] = weakref.ref(w)
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


def _current_stream(index):
    if _get_stream is not None:
        return _get_stream(index) or None
    return torch.cuda.current_stream(index).cuda_stream or None


class _Bound:
    """One (weight, device)'s memra_matmul_args, reused call after call."""

    __slots__ = ("wref", "dev_h", "w_h", "args", "pargs", "in_f", "out_f", "fn", "index", "cuda")

    def __init__(self, w, x, out):
        from .calls import matmul_args
        dev, args, _ = matmul_args(w, x, out=out)  # every check, once
        self.wref = weakref.ref(w)  # the cache never keeps a weight (and its device memory) alive
        self.dev_h = dev.handle
        self.w_h = w.handle
        self.args = args
        self.pargs = ctypes.pointer(args)
        self.in_f, self.out_f = w.in_f, w.out_f
        self.fn = _core.lib.memra_matmul_ex
        self.index = x.get_device()
        self.cuda = self.index >= 0


def _bound(wid, x, out):
    key = (wid, x.get_device())
    b = _BOUND.get(key)
    if b is None or getattr(b.wref(), "_h", None) != wid:  # unbound, or its weight was destroyed since
        b = _Bound(_weight(wid), x, out)
        _BOUND[key] = b
    return b


_F32, _F16 = torch.float32, torch.float16


def _run(wid, x, out, alpha):
    """The kernel of both ops: x [..., in_f] -> out [..., out_f] (float32, contiguous)."""
    b = _bound(wid, x, out)
    if (x.dtype is not _F32 and x.dtype is not _F16) or not x.is_contiguous() or x.shape[-1] != b.in_f:
        raise bad("memra::matmul", "x must be a contiguous float32 (or float16) [..., %d] tensor, got %s %s"
                  % (b.in_f, x.dtype, tuple(x.shape)))
    if out.dtype is not _F32 or not out.is_contiguous() or out.numel() * b.in_f != x.numel() * b.out_f:
        raise bad("memra::matmul", "out must be a contiguous float32 [..., %d] tensor matching x's rows, got %s %s"
                  % (b.out_f, out.dtype, tuple(out.shape)))
    a = b.args
    a.x = x.data_ptr()
    a.y = out.data_ptr()
    a.m = x.numel() // b.in_f
    a.x_is_f16 = x.dtype is _F16
    a.alpha = alpha
    a.stream = _current_stream(b.index) if b.cuda else None
    st = b.fn(b.dev_h, b.w_h, b.pargs)
    if st != 0:
        raise _core.fail("memra_matmul_ex", st)


def _matmul_kernel(x, weight, out_f, alpha=1.0):
    out = torch.empty(tuple(x.shape[:-1]) + (out_f,), dtype=_F32, device=x.device)
    _run(weight, x, out, alpha)
    return out


def _matmul_out_kernel(x, weight, out, alpha=1.0):
    _run(weight, x, out, alpha)


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


def matmul(w, x, out=None, alpha=1.0):
    """y = alpha * x . W^T for a torch tensor x (CUDA: on torch's current
    stream; CPU: the host device). Eager: the bound fast path; under
    torch.compile: ``torch.ops.memra.matmul`` / ``matmul_out`` (the weight must
    be registered first: weight_id(w), an eager call, or a :class:`Linear`).
    Returns out."""
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
        out = torch.empty(tuple(x.shape[:-1]) + (w.out_f,), dtype=_F32, device=x.device)
    _run(wid, x, out, alpha)
    return out


class Linear(torch.nn.Module):
    """A projection y = x . W^T served by memra: forward is ``torch.ops.memra.matmul``
    (so torch.compile(fullgraph=True) and CUDA graphs see one op). Keeps `w` alive."""

    def __init__(self, w, alpha=1.0):
        super().__init__()
        self.weight_memra = w
        self.wid = weight_id(w)
        self.in_features, self.out_features = w.in_f, w.out_f
        self.alpha = float(alpha)

    def forward(self, x):
        return torch.ops.memra.matmul(x, self.wid, self.out_features, self.alpha)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, memra=%r" % (self.in_features, self.out_features, self.weight_memra)


def registered():
    """True when torch.ops.memra.matmul and matmul_out are registered (always, once imported)."""
    return hasattr(torch.ops.memra, "matmul") and hasattr(torch.ops.memra, "matmul_out")
