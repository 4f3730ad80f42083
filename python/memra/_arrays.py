"""What memra needs to know of an array: address, dtype, shape, strides, where it lives.

Understood without importing anything eagerly: numpy arrays (and anything with
``__array_interface__``), torch tensors (CPU or CUDA; through ``data_ptr()``),
objects with ``__cuda_array_interface__`` (CuPy, Numba), and memra Buffers.
DLPack is not needed for these: each exposes its pointer directly.
"""

import sys
from collections import namedtuple

from ._core import bad

View = namedtuple("View", "ptr dtype shape strides where ordinal kind obj readonly", defaults=(False,))
# dtype: numpy-style names "float32", "float16", "uint8", ...; strides in ELEMENTS;
# where: "host" or "cuda"; ordinal: CUDA device index (None on host); kind: "numpy", "torch", "cai";
# readonly: the interface says the memory must not be written.

_TYPESTR = {"<f4": "float32", "<f2": "float16", "|u1": "uint8", "<u1": "uint8", "|i1": "int8", "<f8": "float64",
            "<i4": "int32", "<i8": "int64", "<u2": "uint16", "<u8": "uint64", "<i2": "int16", "<u4": "uint32"}
_ITEMSIZE = {"float32": 4, "float16": 2, "uint8": 1, "int8": 1, "float64": 8, "int32": 4, "int64": 8, "uint16": 2,
             "uint64": 8, "int16": 2, "uint32": 4, "bfloat16": 2}


def is_torch(obj):
    t = sys.modules.get("torch")
    return t is not None and isinstance(obj, t.Tensor)


def view(obj, what="array"):
    """A :class:`View` of obj, or InvalidArgumentError naming `what`."""
    if is_torch(obj):
        dt = str(obj.dtype).replace("torch.", "")
        where = "cuda" if obj.is_cuda else ("host" if obj.device.type == "cpu" else obj.device.type)
        return View(obj.data_ptr(), dt, tuple(obj.shape), tuple(obj.stride()), where,
                    obj.device.index if obj.is_cuda else None, "torch", obj)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return _from_interface(cai, "cuda", obj, what, "cai")
    ai = getattr(obj, "__array_interface__", None)
    if ai is not None:
        return _from_interface(ai, "host", obj, what, "numpy")
    raise bad(what, "%s must be a numpy array, a torch tensor or an object with __cuda_array_interface__ "
                    "(got %s)" % (what, type(obj).__name__))


def _from_interface(ai, where, obj, what, kind):
    typestr = ai["typestr"]
    dt = _TYPESTR.get(typestr)
    if dt is None:
        raise bad(what, "%s has an unsupported element type %r" % (what, typestr))
    ptr, ro = ai["data"] if ai.get("data") is not None else (0, False)
    shape = tuple(ai["shape"])
    isz = _ITEMSIZE[dt]
    if ai.get("strides") is None:
        strides, acc = [], 1
        for d in reversed(shape):
            strides.append(acc)
            acc *= d
        strides = tuple(reversed(strides))
    else:
        if any(st % isz for st in ai["strides"]):
            raise bad(what, "%s has strides %r not a multiple of its item size" % (what, ai["strides"]))
        strides = tuple(st // isz for st in ai["strides"])
    # The CUDA array interface does not name the device: the caller's device= decides.
    return View(ptr, dt, shape, strides, where, None, kind, obj, bool(ro))


def contiguous_rows(v, what):
    """True when v's last dim is dense and rows are dense too (a C-contiguous matrix)."""
    acc = 1
    for d, st in zip(reversed(v.shape), reversed(v.strides)):
        if d != 1 and st != acc:
            return False
        acc *= d
    return True


def itemsize(dtype):
    return _ITEMSIZE[dtype]
