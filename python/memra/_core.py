"""The loaded library and the status check every wrapper goes through."""

from . import _lib
from . import errors

class _Lazy:
    """Stands for the library until the first use of an entry point loads it
    (then ``lib`` is the CDLL itself, so later calls pay nothing for this).
    `import memra`, ``python -m memra report`` and ``--help`` load nothing."""

    def __getattr__(self, name):
        return getattr(load(), name)

    def __bool__(self):
        return False


lib = _Lazy()
path = None


def check_version(package, library):
    """Raise VersionMismatchError unless the two versions agree on MAJOR.MINOR."""
    def mm(v):
        return tuple(str(v).split(".")[:2])
    if mm(package) != mm(library):
        raise errors.VersionMismatchError(
            "memra: the Python package is %s but libmemra at %s is %s; install the package from the same "
            "source tree (pip install ./python) or point MEMRA_LIBRARY at a matching libmemra.so"
            % (package, path, library))


def load():
    """The library (loaded, declared and version-checked on the first call)."""
    global lib, path
    if isinstance(lib, _Lazy):
        raw, where = _lib.load()
        declared = _lib.declare(raw)
        from . import __version__
        path = where
        check_version(__version__, s(declared.memra_version()))
        lib = declared
    return lib


def s(b):
    """C string -> str ("" for NULL)."""
    return b.decode("utf-8", "replace") if b else ""


def b(text):
    """str -> bytes for a const char * argument (None stays NULL)."""
    if text is None:
        return None
    if isinstance(text, bytes):
        return text
    return str(text).encode("utf-8")


def status_str(status):
    return s(load().memra_status_str(status))


def last_error():
    return s(load().memra_last_error())


def fail(call, status, reason=None):
    """The exception for a failed `call` (reads memra_last_error now)."""
    cls = errors.error_class(status)
    kw = {"reason": reason} if cls is errors.DeclinedError else {}
    return cls(call, last_error(), status, status_str(status), **kw)


def check(call, status, reason=None):
    """Raise the matching memra.Error when status != OK."""
    if status != 0:
        raise fail(call, status, reason)


def bad(call, detail):
    """An InvalidArgumentError raised for bad input caught on the Python side."""
    return errors.InvalidArgumentError(call, detail, 2, "invalid argument")
