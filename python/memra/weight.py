"""memra.Weight: a weight matrix [out_f rows x in_f cols] in one of memra's formats."""

import ctypes
from collections import namedtuple
from ctypes import byref, c_float, c_void_p

from . import _core
from . import _structs as S
from . import blocks as F
from ._core import b, bad, check, s
from .runtime import Runtime, _Child, format_id, format_name

WeightState = namedtuple("WeightState", "prepared has_f16_mirror has_q8_0_slab nan_codes note")
# memra_weight_plan_get: the lane ("f16 mirror", "w16", "mmq records", ...), its steps as (op, module or None),
# the device bytes prepare would hold, and why this lane
Plan = namedtuple("Plan", "lane steps operand_bytes why")

# memra_weight_operands bits (memra.h); new bits may be added there.
OPERANDS = {1: "raw", 2: "f16_mirror", 4: "q8_0_slab", 8: "q8_0_records", 16: "k_records", 32: "w16"}


class Weight(_Child):
    """A weight owned by a runtime (memra_weight_create copies the bytes).

    ``Weight(rt, data, format, shape, scale=1.0, grid=None, name=None)``:
    `data` is bytes-like (or a C-contiguous numpy array) holding exactly
    out_f * row_bytes(format, in_f) bytes; `format` a name ("f32", "f16",
    "q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "e4m3", any the library knows) or
    its value; `shape` (out_f, in_f); `scale` the per-tensor e4m3 scale;
    `grid` the block-128 scale grid [ceil(out_f/128) x ceil(in_f/128)] (e4m3);
    `input_scale` a static activation scale (e4m3; 0 = none: the FP8 lanes
    then quantise x in one pass at it, values above 448 * input_scale saturate).
    The library validates everything and raises InvalidArgumentError naming
    the field. :meth:`from_array` encodes a float array first.
    :meth:`from_file` makes one over a model file's tensor without a copy.
    """

    _destroy = "memra_weight_destroy"

    def __init__(self, runtime, data, format, shape, scale=1.0, grid=None, name=None, input_scale=0.0):
        fid, out_f, in_f = _head_args(runtime, format, shape, "Weight", "")
        buf, nbytes = _bytes_arg(data, "Weight")
        grid_arr, grid_n = _floats_arg(grid)
        from ._checks import text_arg
        self._name = text_arg(name, "name", allow_none=True)
        desc = S.sized(S.memra_weight_desc, format=fid, out_f=out_f, in_f=in_f,
                       data=ctypes.cast(buf, c_void_p) if buf is not None else None, size=nbytes,
                       scale=float(scale), grid=grid_arr, grid_count=grid_n, name=self._name,
                       input_scale=float(input_scale))
        h = c_void_p()
        check("memra_weight_create", _core.lib.memra_weight_create(runtime.handle, byref(desc), byref(h)))
        self.runtime = runtime
        self.shape = (out_f, in_f)
        self.scale = float(scale)
        self.grid = None if grid is None else list(_floats(grid))
        self.name = name
        self._init_child(runtime, h.value)

    @classmethod
    def from_array(cls, runtime, array, format=None, block_scales=False, name=None):
        """A weight from a 2-D array [out_f x in_f].

        float arrays are encoded to `format` on the host: "f32" (default for
        float32), "f16" (default for float16; RNE), "q8_0" (memra_q8_0_encode),
        "e4m3" with a per-tensor scale amax/448, or "e4m3" with
        ``block_scales=True``: one scale amax/448 per 128 x 128 block (the
        block-128 grid). A uint8 array with a format is taken as encoded bytes
        only for "e4m3" (scale 1), which otherwise needs :class:`Weight`'s
        scale/grid arguments (give those to the constructor); other encoded
        formats go through the constructor with their bytes.
        """
        np = F._np()
        a = np.asarray(array)
        if a.ndim != 2:
            raise bad("Weight.from_array", "array must be 2-D [out_f x in_f] (got shape %s)" % (a.shape,))
        out_f, in_f = a.shape
        if format is None:
            format = {"float32": "f32", "float16": "f16"}.get(str(a.dtype))
            if format is None:
                raise bad("Weight.from_array", "give format= for a %s array" % a.dtype)
        fmt = format_name(format_id(format))
        if a.dtype == np.uint8:
            if fmt != "e4m3":
                raise bad("Weight.from_array", "a uint8 array is taken as e4m3 codes; for %s bytes use "
                          "Weight(rt, data, %r, (out_f, in_f))" % (fmt, fmt))
            return cls(runtime, np.ascontiguousarray(a), "e4m3", (out_f, in_f), name=name)
        if a.dtype.kind != "f":
            raise bad("Weight.from_array", "array dtype %s is neither float nor uint8" % a.dtype)
        data, sc, grid = _encode(np.ascontiguousarray(a, dtype=np.float32), fmt, block_scales, "Weight.from_array")
        return cls(runtime, data, fmt, (out_f, in_f), scale=1.0 if sc is None else sc, grid=grid, name=name)

    @classmethod
    def from_file(cls, runtime, file, name):
        """memra_file_weight_create: a weight over tensor `name` of `file` (a
        :class:`memra.File` or a path, opened and closed here) without a host
        copy of its bytes; the weight keeps the file's mapping alive after the
        file is closed. A safetensors F8_E4M3 weight takes its scale from
        ``<base>.weight_scale`` (per-tensor) or ``<base>.weight_scale_inv``
        (block-128 grid); other layouts raise NotSupportedError naming them,
        as do tensors that are not 2-D or not of a memra format."""
        return cls._over_file(runtime, file, name, "Weight.from_file", "memra_file_weight_create")

    @classmethod
    def _over_file(cls, runtime, file, name, what, entry):
        """A weight made by `entry` (memra_file_weight_create or memra_file_experts_create) over `name`
        in `file` (a File or a path, opened and closed here)."""
        from .file import File
        if not isinstance(runtime, Runtime):
            raise bad(what, "the first argument is a memra.Runtime (got %s)" % type(runtime).__name__)
        own = not isinstance(file, File)
        f = File(runtime, file) if own else file
        try:
            h = c_void_p()
            from ._checks import text_arg
            cname = text_arg(name, "name")
            check(entry, getattr(_core.lib, entry)(runtime.handle, f.handle, cname, byref(h)))
            self = cls.__new__(cls)
            self._name = cname
            self._init_child(runtime, h.value)
            out_f, in_f = ctypes.c_int64(), ctypes.c_int64()
            check("memra_weight_shape", _core.lib.memra_weight_shape(h.value, byref(out_f), byref(in_f)))
            self.runtime = runtime
            self.shape = (out_f.value, in_f.value)
            self.scale = None
            self.grid = None
            self.name = name
            self.file = f.path
            return self
        finally:
            if own:
                f.close()

    # ---- experts (mixture-of-experts prefill)
    @classmethod
    def experts(cls, runtime, data, format, n_experts, shape, scales=None, grid=None, name=None):
        """An expert weight (memra_weight_create_experts): `n_experts` matrices of one format and
        shape (out_f, in_f), their bytes one after another in `data` (expert 0 first: n_experts *
        out_f * row_bytes(format, in_f) bytes, copied); `scales` the e4m3 experts' per-tensor scales
        (n_experts of them, None: all 1), `grid` block-128 e4m3 experts' grids, expert-major. For
        :func:`memra.matmul_experts`; :func:`memra.matmul` refuses it. The library validates
        everything and raises InvalidArgumentError naming the field and the expert."""
        fid, out_f, in_f = _head_args(runtime, format, shape, "Weight.experts", " of each expert")
        if isinstance(n_experts, bool) or not isinstance(n_experts, int):
            raise bad("Weight.experts", "n_experts is an int (got %s)" % type(n_experts).__name__)
        buf, nbytes = _bytes_arg(data, "Weight.experts")
        sc_arr, sc_n = _floats_arg(scales)
        if scales is not None and sc_n != n_experts:
            raise bad("Weight.experts", "scales holds %d values for %d experts" % (sc_n, n_experts))
        grid_arr, grid_n = _floats_arg(grid)
        from ._checks import text_arg
        cname = text_arg(name, "name", allow_none=True)
        desc = S.sized(S.memra_experts_desc, format=fid, n_experts=n_experts, out_f=out_f, in_f=in_f,
                       data=ctypes.cast(buf, c_void_p) if buf is not None else None, size=nbytes, scales=sc_arr,
                       grid=grid_arr, grid_count=grid_n, name=cname)
        h = c_void_p()
        check("memra_weight_create_experts", _core.lib.memra_weight_create_experts(runtime.handle, byref(desc), byref(h)))
        self = cls.__new__(cls)
        self._name = cname
        self._init_child(runtime, h.value)
        self.runtime = runtime
        self.shape = (out_f, in_f)
        self.scale = None
        self.grid = None if grid is None else list(_floats(grid))
        self.name = name
        return self

    @classmethod
    def experts_from_array(cls, runtime, array, format=None, block_scales=False, name=None):
        """An expert weight from a 3-D float array [n_experts x out_f x in_f], each expert encoded
        on the host as :meth:`from_array` encodes a matrix ("f32", "f16", "q8_0", "e4m3" with a
        per-tensor scale per expert, or with ``block_scales=True`` a block-128 grid per expert)."""
        np = F._np()
        a = np.asarray(array)
        if a.ndim != 3:
            raise bad("Weight.experts_from_array", "array must be 3-D [n_experts x out_f x in_f] (got shape %s)"
                      % (a.shape,))
        if a.dtype.kind != "f":
            raise bad("Weight.experts_from_array", "array dtype %s is not float (encoded bytes go to "
                      "Weight.experts)" % a.dtype)
        E, out_f, in_f = a.shape
        if format is None:
            format = {"float32": "f32", "float16": "f16"}.get(str(a.dtype))
            if format is None:
                raise bad("Weight.experts_from_array", "give format= for a %s array" % a.dtype)
        fmt = format_name(format_id(format))
        parts, scales, grids = [], [], []
        for e in range(E):
            data, sc, grid = _encode(np.ascontiguousarray(a[e], dtype=np.float32), fmt, block_scales,
                                     "Weight.experts_from_array")
            parts.append(np.ascontiguousarray(data).view(np.uint8).reshape(-1))
            scales.append(1.0 if sc is None else sc)
            if grid is not None:
                grids.append(np.asarray(grid, dtype=np.float32).reshape(-1))
        data = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)
        pt = fmt == "e4m3" and not block_scales
        return cls.experts(runtime, data, fmt, E, (out_f, in_f), scales=scales if pt else None,
                           grid=np.concatenate(grids) if grids else None, name=name)

    @classmethod
    def experts_from_file(cls, runtime, file, name):
        """memra_file_experts_create: an expert weight over expert group `name` of `file` (a
        :class:`memra.File` or a path; see :attr:`memra.File.expert_groups`: a GGUF 3-D tensor,
        or the per-expert 2-D tensors of a safetensors checkpoint grouped as
        "<prefix>.experts.*.<suffix>") without a host copy; FP8 experts take their scales by
        :meth:`from_file`'s conventions, expert by expert."""
        return cls._over_file(runtime, file, name, "Weight.experts_from_file", "memra_file_experts_create")

    @property
    def n_experts(self):
        """The number of experts (memra_weight_experts); 0 for a dense weight."""
        return int(_core.lib.memra_weight_experts(self.handle))

    # ---- what it is
    @property
    def format(self):
        """The format's name ("q8_0", "e4m3", ...)."""
        return format_name(_core.lib.memra_weight_format(self.handle))

    @property
    def input_scale(self):
        """The static activation scale (memra_weight_input_scale; 0.0 when none)."""
        return float(_core.lib.memra_weight_input_scale(self.handle))

    out_f = property(lambda self: self.shape[0])
    in_f = property(lambda self: self.shape[1])

    # ---- per device
    def prepare(self, device):
        """Build the operands the device's policy wants, once (idempotent)."""
        check("memra_weight_prepare", _core.lib.memra_weight_prepare(self.handle, device.handle))
        return self

    def state(self, device):
        """:class:`WeightState`: what prepare built on `device`."""
        st = S.memra_weight_state()
        check("memra_weight_query", _core.lib.memra_weight_query(self.handle, device.handle, byref(st)))
        return WeightState(bool(st.prepared), bool(st.has_f16_mirror), bool(st.has_q8_0_slab), st.nan_codes,
                           s(st.note))

    def plan(self, device):
        """:class:`Plan`: the lane memra_matmul would take for this weight on `device` under the current routing,
        policy and f16 budget (memra_weight_plan_get), without preparing anything."""
        p = S.memra_weight_plan(struct_size=ctypes.sizeof(S.memra_weight_plan))
        check("memra_weight_plan_get", _core.lib.memra_weight_plan_get(self.handle, device.handle, byref(p)))
        steps = [(s(_core.lib.memra_op_name(p.ops[i])), s(p.modules[i]) if p.modules[i] else None)
                 for i in range(max(0, min(p.n_steps, 4)))]
        return Plan(s(p.lane), steps, int(p.operand_bytes), p.why.decode("utf-8", "replace"))

    def operands(self, device):
        """Names of the device operands the prepared weight holds now ("raw", "f16_mirror", ...)."""
        bits = _core.lib.memra_weight_operands(self.handle, device.handle)
        names = [n for bit, n in OPERANDS.items() if bits & bit]
        extra = bits & ~sum(OPERANDS)
        if extra:
            names.append("bits:0x%x" % extra)
        return names

    def __repr__(self):
        if self._h is None:
            return "<memra.Weight destroyed>"
        e = self.n_experts
        return "<memra.Weight %s%s %dx%d%s>" % (self.format, " %d experts of" % e if e else "", self.out_f, self.in_f,
                                                " %s" % self.name if self.name else "")


def _head_args(runtime, format, shape, what, of):
    """The checks both constructors start with: the runtime, the format's id and (out_f, in_f)."""
    if not isinstance(runtime, Runtime):
        raise bad(what, "the first argument is a memra.Runtime (got %s)" % type(runtime).__name__)
    fid = format_id(format)
    try:
        out_f, in_f = (int(v) for v in shape)
    except (TypeError, ValueError):
        raise bad(what, "shape is (out_f, in_f)%s (got %r)" % (of, shape)) from None
    return fid, out_f, in_f


def _bytes_arg(data, what):
    """(a ctypes buffer or None, byte count) over bytes-like data or a C-contiguous array."""
    try:
        mv = memoryview(data).cast("B")
    except TypeError:
        raise bad(what, "data must be bytes-like or a C-contiguous array (got %s)" % type(data).__name__) from None
    if not mv.nbytes:
        return None, 0
    if mv.readonly:  # bytes: one copy here, then memra's own
        return (ctypes.c_char * mv.nbytes).from_buffer_copy(mv), mv.nbytes
    return (ctypes.c_char * mv.nbytes).from_buffer(mv), mv.nbytes  # an array: memra copies straight from it


def _floats_arg(seq):
    """(a c_float array or None, count) of a float sequence or array (None: (None, 0))."""
    if seq is None:
        return None, 0
    flat = _floats(seq)
    return (c_float * max(len(flat), 1))(*flat), len(flat)


def _encode(a32, fmt, block_scales, what):
    """One float32 matrix encoded on the host: (bytes array, per-tensor scale or None, grid or None)."""
    np = F._np()
    out_f, in_f = a32.shape
    if fmt == "f32":
        return a32, None, None
    if fmt == "f16":
        return F.f16_encode(a32), None, None
    if fmt == "q8_0":
        return F.q8_0_encode(a32), None, None
    if fmt == "e4m3":
        if not np.all(np.isfinite(a32)):
            raise bad(what, "an e4m3 weight is encoded from finite values only")
        if not block_scales:
            amax = np.float32(np.max(np.abs(a32))) if a32.size else np.float32(0)
            sc = np.float32(amax / np.float32(F.E4M3_MAX)) if amax > 0 else np.float32(1)
            return F.e4m3_encode(a32 / sc), float(sc), None
        gr, gc = -(-out_f // F.FP8_BLOCK), -(-in_f // F.FP8_BLOCK)
        grid = np.ones((gr, gc), dtype=np.float32)
        codes = np.empty(a32.shape, dtype=np.uint8)
        for i in range(gr):
            for j in range(gc):
                blk = a32[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
                amax = np.float32(np.max(np.abs(blk)))
                sc = np.float32(amax / np.float32(F.E4M3_MAX)) if amax > 0 else np.float32(1)
                grid[i, j] = sc
                codes[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = F.e4m3_encode(blk / sc)
        return codes, None, grid
    raise bad(what, "encoding to %s on the host is not offered; pass encoded bytes to Weight()" % fmt)


def _floats(seq):
    try:
        import numpy as np
        return [float(v) for v in np.asarray(seq, dtype=np.float64).reshape(-1)]
    except ImportError:
        out = []
        for v in seq:
            if isinstance(v, (list, tuple)):
                out.extend(float(u) for u in v)
            else:
                out.append(float(v))
        return out
