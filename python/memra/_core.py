"""The loaded library and the status check every wrapper goes through."""

from . import _lib
from . import errors

lib = None
path = None


def load():
    global lib, path
    if lib is None:
        raw, where = _lib.load()
        lib = _lib.declare(raw)
        path = where
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
    return s(lib.memra_status_str(status))


def last_error():
    return s(lib.memra_last_error())


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
