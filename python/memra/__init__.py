"""memra from Python: the C runtime through ctypes (no compile step, no dependencies).

    import numpy as np, memra
    with memra.Runtime() as rt:                      # memra_open; the host device without a GPU
        dev = rt.devices[0]                            # best device first
        w = memra.Weight.from_array(rt, np.random.rand(1024, 2048).astype(np.float32) - 0.5, "q8_0")
        x = np.random.rand(16, 2048).astype(np.float32)
        y = memra.matmul(w, x)                         # a torch CUDA tensor works the same on a GPU
        print(dev.name, rt.ledger().select(op="gemm_f16"))

libmemra is found from MEMRA_LIBRARY, beside the package, the install prefix,
the build tree of a checkout, then the system loader (memra._lib says how).
The package's version must match the library's major.minor at import.
"""

__version__ = "0.1.0"

from . import _core
from . import errors as _errors
from .errors import *  # noqa: F401,F403  (the memra.Error hierarchy)
from .errors import VersionMismatchError

_core.load()


def _check_version(package, library):
    """Raise VersionMismatchError unless the two versions agree on MAJOR.MINOR."""
    def mm(v):
        parts = str(v).split(".")
        return tuple(parts[:2])
    if mm(package) != mm(library):
        raise VersionMismatchError(
            "memra: the Python package is %s but libmemra at %s is %s; install the package from the same "
            "source tree (pip install ./python) or point MEMRA_LIBRARY at a matching libmemra.so"
            % (package, _core.path, library))


def version():
    """The loaded library's version (memra_version())."""
    return _core.s(_core.lib.memra_version())


def library_path():
    """The file libmemra was loaded from."""
    return _core.path


def last_error():
    """The calling thread's memra_last_error() text."""
    return _core.last_error()


def status_str(status):
    """memra_status_str of a status code."""
    return _core.status_str(status)


_check_version(__version__, version())

from .runtime import (Buffer, Clocks, Device, Ledger, LedgerEntry, ModuleInfo, Runtime, Timer,  # noqa: E402
                      format_id, formats, op_id, ops)
from .weight import Weight, WeightState  # noqa: E402
from .file import File, MetaArray, Tensor  # noqa: E402
from .calls import matmul, module_call  # noqa: E402


def open(**options):
    """memra_open: a :class:`Runtime` (same keywords)."""
    return Runtime(**options)


__all__ = ["Runtime", "Device", "ModuleInfo", "Ledger", "LedgerEntry", "Buffer", "Timer", "Clocks", "Weight",
           "WeightState", "File", "Tensor", "MetaArray", "matmul", "module_call", "ops", "op_id", "formats", "format_id", "version",
           "library_path", "last_error", "status_str", "open"] + _errors.__all__
