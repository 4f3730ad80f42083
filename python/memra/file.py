"""memra.File: a GGUF, safetensors or sharded safetensors model file (memra/file.h).

    with memra.File(rt, "model.gguf") as f:          # rt may be None (listing only)
        for t in f.tensors:
            print(t.name, t.type, t.shape, t.bytes)
        print(f.metadata["general.name"])
        w = f.weight("blk.0.attn_q.weight")           # memra_file_weight_create: no host copy
    y = memra.matmul(w, x)                            # w keeps the file's mapping alive

The file is mapped read-only and checked in full by memra_file_open; a
malformed file raises InvalidArgumentError whose message names the file and
the byte offset (NotSupportedError for an unknown tensor type). Tensors and
metadata are read once at open into Python objects.
"""

import ctypes
from collections import namedtuple
from ctypes import byref, c_size_t, c_void_p

from . import _core
from . import _structs as S
from ._core import b, bad, check, s
from .runtime import Runtime, _Closing, format_name

KINDS = {1: "gguf", 2: "safetensors", 3: "safetensors index"}
_META_TYPES = {0: "string", 1: "int", 2: "uint", 3: "float", 4: "bool", 5: "array", 6: "other"}


class Tensor(namedtuple("Tensor", "index name type format shape elements bytes offset path")):
    """One tensor: its file type name ("Q4_K", "BF16", "F8_E4M3", "I64", ...), the memra
    format name (None when the type is not a memra format), the shape outermost first
    (a 2-D weight is (out_f, in_f)), element and byte counts, the absolute byte offset of
    its data in `path` (its shard for an index)."""


class ExpertGroup(namedtuple("ExpertGroup", "name type format from_3d n_experts shape bytes")):
    """A group of expert tensors (memra_file_expert_group_get): a GGUF 3-D tensor
    (``from_3d``) or the per-expert 2-D tensors of a safetensors checkpoint, named
    "<prefix>.experts.*.<suffix>"; each expert's shape (out_f, in_f); all experts' bytes."""


class MetaArray(namedtuple("MetaArray", "elem_type count text")):
    """A GGUF array value: the elements' type ("string", "uint", ...), how many, and
    memra's summary text ("[151936 x string]", "[3 x u32: 1, 2, 3]")."""


def _meta_value(m):
    t = _META_TYPES.get(m.type, "other")
    if t == "string":
        return s(m.text)
    if t == "int":
        return int(m.i)
    if t == "uint":
        return int(m.u)
    if t == "float":
        return float(m.f)
    if t == "bool":
        return bool(m.i)
    if t == "array":
        return MetaArray(_META_TYPES.get(m.elem_type, "other"), int(m.count), s(m.text))
    return s(m.text)  # a JSON null, object or array of an index's metadata, as its text


class File(_Closing):
    """A model file opened read-only through mmap (memra_file_open).

    ``File(rt, path)``: `rt` is a :class:`memra.Runtime` (the default runtime of
    :meth:`weight`) or None. Attributes: ``path``, ``kind`` ("gguf",
    "safetensors", "safetensors index"), ``description`` ("GGUF v3", ...),
    ``tensors`` (a list of :class:`Tensor` in file order), ``metadata`` (a
    dict key -> str / int / float / bool / :class:`MetaArray`, in file order),
    ``expert_groups`` (a list of :class:`ExpertGroup`: the file's MoE expert tensors,
    each one weight for :meth:`experts`).
    A context manager; :meth:`close` releases the file's reference to its
    mapping (weights made from it keep theirs). Not for use from several
    threads at once while it is being closed.
    """

    def __init__(self, runtime, path):
        if runtime is not None and not isinstance(runtime, Runtime):
            raise bad("File", "the first argument is a memra.Runtime or None (got %s)" % type(runtime).__name__)
        h = c_void_p()
        from ._checks import text_arg
        check("memra_file_open", _core.lib.memra_file_open(text_arg(path, "path"), byref(h)))
        self._h = h.value
        self.runtime = runtime
        self.path = str(path)
        self.kind = KINDS.get(_core.lib.memra_file_kind_get(self._h), "unknown")
        self.description = s(_core.lib.memra_file_describe(self._h))
        self.tensors = []
        for i in range(_core.lib.memra_file_tensor_count(self._h)):
            t = S.memra_tensor_info()
            check("memra_file_tensor_get", _core.lib.memra_file_tensor_get(self._h, i, byref(t)))
            self.tensors.append(Tensor(i, s(t.name), s(t.type), format_name(t.format) if t.has_format else None,
                                       tuple(int(t.shape[d]) for d in range(t.n_dims)), int(t.elements),
                                       int(t.bytes), int(t.offset), s(t.path)))
        self._by_name = {t.name: t for t in self.tensors}
        self.expert_groups = []
        for i in range(_core.lib.memra_file_expert_group_count(self._h)):
            g = S.memra_expert_group_info()
            check("memra_file_expert_group_get", _core.lib.memra_file_expert_group_get(self._h, i, byref(g)))
            self.expert_groups.append(ExpertGroup(s(g.name), s(g.type), format_name(g.format) if g.has_format else None,
                                                  bool(g.from_3d), int(g.n_experts), (int(g.out_f), int(g.in_f)),
                                                  int(g.bytes)))
        self.metadata = {}
        for i in range(_core.lib.memra_file_meta_count(self._h)):
            m = S.memra_meta_info()
            check("memra_file_meta_get", _core.lib.memra_file_meta_get(self._h, i, byref(m)))
            self.metadata[s(m.key)] = _meta_value(m)

    @property
    def handle(self):
        if self._h is None:
            raise bad("File", "this memra.File is closed")
        return self._h

    def tensor(self, name):
        """The :class:`Tensor` called `name` (KeyError naming it when there is none)."""
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError("%s has no tensor %r" % (self.path, name)) from None

    def __contains__(self, name):
        return name in self._by_name

    def __len__(self):
        return len(self.tensors)

    def __iter__(self):
        return iter(self.tensors)

    def read(self, name):
        """A copy of the tensor's bytes (from the mapping)."""
        t = self.tensor(name)
        p, n = c_void_p(), c_size_t()
        check("memra_file_tensor_data", _core.lib.memra_file_tensor_data(self.handle, t.index, byref(p), byref(n)))
        return ctypes.string_at(p.value, n.value) if n.value else b""

    def weight(self, name, runtime=None):
        """memra_file_weight_create: a :class:`memra.Weight` over tensor `name`'s bytes in the
        mapping, without a host copy (FP8 scales found by convention, memra/file.h)."""
        from .weight import Weight
        return Weight.from_file(runtime if runtime is not None else self.runtime, self, name)

    def experts(self, name, runtime=None):
        """memra_file_experts_create: an expert weight (for :func:`memra.matmul_experts`) over
        expert group `name` (see :attr:`expert_groups`) in the mapping, without a host copy."""
        from .weight import Weight
        return Weight.experts_from_file(runtime if runtime is not None else self.runtime, self, name)

    def close(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            _core.lib.memra_file_close(h)

    def __repr__(self):
        return "<memra.File %s: %s, %d tensors%s>" % (self.path, self.description, len(self.tensors),
                                                     "" if self._h else ", closed")
