"""memra's statuses as exceptions.

Every failing call raises a subclass of :class:`Error` that carries the
status code (``status``), its name (``status_name``, as in status.h without
the ``MEMRA_STATUS_`` prefix), the library's short text (``status_text``,
memra_status_str) and the calling thread's detail message (``detail``,
memra_last_error: which call, which library code, which file). Bad input
caught on the Python side raises :class:`InvalidArgumentError` with the same
fields (``detail`` names the argument).
"""

# The list of include/memra/status.h: (value, NAME). Values are stable and new
# codes are appended there; add them here at the end too.
STATUSES = [
    (0, "OK"),
    (1, "DECLINED"),
    (2, "INVALID_ARGUMENT"),
    (3, "OUT_OF_MEMORY"),
    (4, "NO_DRIVER"),
    (5, "NO_DEVICE"),
    (6, "DRIVER_ERROR"),
    (7, "CUBLAS_ERROR"),
    (8, "NVRTC_ERROR"),
    (9, "MODULE_ERROR"),
    (10, "NOT_SUPPORTED"),
    (11, "IO_ERROR"),
    (12, "CORRUPT"),
    (13, "NOT_FOUND"),
    (14, "INTERNAL"),
]
STATUS_NAMES = dict(STATUSES)
STATUS_CODES = {name: code for code, name in STATUSES}


class Error(Exception):
    """A memra call failed. Attributes: status, status_name, status_text, call, detail."""

    status = None

    def __init__(self, call, detail="", status=None, status_text=""):
        if status is not None:
            self.status = status
        self.status_name = STATUS_NAMES.get(self.status, "UNKNOWN(%s)" % self.status)
        self.status_text = status_text
        self.call = call
        self.detail = detail
        msg = "%s: %s" % (call, self.status_name)
        if status_text:
            msg += " (%s)" % status_text
        if detail:
            msg += ": " + detail
        super().__init__(msg)


class DeclinedError(Error):
    """Every lane declined the case; ``reason`` is the module's decline reason when known."""
    status = 1

    def __init__(self, call, detail="", status=None, status_text="", reason=None):
        self.reason = reason
        if reason and reason not in detail:
            detail = (detail + "; " if detail else "") + "declined: " + reason
        super().__init__(call, detail, status, status_text)


class InvalidArgumentError(Error, ValueError):
    status = 2


class OutOfMemoryError(Error, MemoryError):
    status = 3


class NoDriverError(Error):
    status = 4


class NoDeviceError(Error):
    status = 5


class DriverError(Error):
    status = 6


class CublasError(Error):
    status = 7


class NvrtcError(Error):
    status = 8


class ModuleError(Error):
    status = 9


class NotSupportedError(Error):
    status = 10


class InputOutputError(Error, OSError):
    status = 11


class CorruptError(Error):
    status = 12


class NotFoundError(Error, LookupError):
    status = 13


class InternalError(Error):
    status = 14


class VersionMismatchError(ImportError):
    """The package and the loaded libmemra are of different versions."""


_BY_STATUS = {cls.status: cls for cls in (DeclinedError, InvalidArgumentError, OutOfMemoryError, NoDriverError,
                                          NoDeviceError, DriverError, CublasError, NvrtcError, ModuleError,
                                          NotSupportedError, InputOutputError, CorruptError, NotFoundError,
                                          InternalError)}


def error_class(status):
    """The exception class raised for a status code (Error for an unknown code)."""
    return _BY_STATUS.get(status, Error)


__all__ = ["Error", "VersionMismatchError", "error_class", "STATUSES", "STATUS_NAMES", "STATUS_CODES"] + \
    [cls.__name__ for cls in _BY_STATUS.values()]
