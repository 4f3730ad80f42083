"""memra from Python: the C runtime through ctypes (no dependencies).

    import numpy as np, memra
    with memra.Runtime() as rt:                      # memra_open; the host device without a GPU
        dev = rt.devices[0]                            # best device first
        w = memra.Weight.from_array(rt, np.random.rand(1024, 2048).astype(np.float32) - 0.5, "q8_0")
        x = np.random.rand(16, 2048).astype(np.float32)
        y = memra.matmul(w, x)                         # a torch CUDA tensor works the same on a GPU
        print(dev.name, rt.ledger().select(op="gemm_f16"))

libmemra is found from MEMRA_LIBRARY, beside the package (where `pip install
./python` puts the one it builds), the install prefix, the build tree of a
checkout, then the system loader (memra._lib says how). It is loaded at the
first call that needs it, not at import (so `python -m memra report` and
`--help` run without it); the package's version must match the library's
major.minor then.
"""

__version__ = "0.1.0"

from . import _core  # noqa: E402
from . import errors as _errors  # noqa: E402
from .errors import *  # noqa: F401,F403,E402  (the memra.Error hierarchy)
from .errors import VersionMismatchError  # noqa: F401,E402

_check_version = _core.check_version


def version():
    """The loaded library's version (memra_version()); loads the library."""
    return _core.s(_core.load().memra_version())


def library_path():
    """The file libmemra was loaded from (loads it)."""
    _core.load()
    return _core.path


def last_error():
    """The calling thread's memra_last_error() text."""
    return _core.last_error()


def status_str(status):
    """memra_status_str of a status code."""
    return _core.status_str(status)


from .runtime import (Buffer, Clocks, Device, Ledger, LedgerEntry, ModuleInfo, Runtime, Timer,  # noqa: E402
                      format_id, formats, op_id, ops)
from .weight import Weight, WeightState  # noqa: E402
from .file import ExpertGroup, File, MetaArray, Tensor  # noqa: E402
from .calls import matmul, matmul_experts, module_call  # noqa: E402


def open(**options):
    """memra_open: a :class:`Runtime` (same keywords)."""
    return Runtime(**options)


__all__ = ["Runtime", "Device", "ModuleInfo", "Ledger", "LedgerEntry", "Buffer", "Timer", "Clocks", "Weight",
           "WeightState", "File", "Tensor", "MetaArray", "matmul", "module_call", "ops", "op_id", "formats", "format_id", "version",
           "library_path", "last_error", "status_str", "open"] + _errors.__all__
