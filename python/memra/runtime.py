"""Runtime, devices, modules, routing, the ledger, buffers and timers."""

import ctypes
import threading
import weakref
from collections import namedtuple
from ctypes import byref, c_char_p, c_double, c_void_p

from . import _core
from . import _structs as S
from ._core import b, bad, check, s


def ops():
    """Names of every op of the loaded library's op table, in table order."""
    out = []
    for i in range(256):
        name = _core.s(_core.lib.memra_op_name(i))
        if name == "unknown":
            break
        out.append(name)
    return out


def op_id(op):
    """The memra_op value of an op name (or an int, range-checked)."""
    lib = _core.lib
    if isinstance(op, int):
        if 0 <= op < len(ops()):
            return op
        raise bad("op", "op %d is outside the op table (0..%d)" % (op, len(ops()) - 1))
    i = lib.memra_op_from_name(b(op))
    if i >= len(ops()) or i < 0:
        raise bad("op", "no op named %r; ops: %s" % (op, ", ".join(ops())))
    return i


def formats():
    """{name: memra_format value} of every format the loaded library knows."""
    out = {}
    for i in range(64):
        name = s(_core.lib.memra_format_name(i))
        if name != "unknown":
            out[name] = i
    return out


def format_id(fmt):
    """memra_format value of a format name ("q8_0", "e4m3", ...) or an int."""
    table = formats()
    if isinstance(fmt, int) and not isinstance(fmt, bool):
        if fmt in table.values():
            return fmt
        raise bad("format", "format %d is unknown to this libmemra; formats: %s" % (fmt, ", ".join(table)))
    key = str(fmt).lower()
    if key not in table:
        raise bad("format", "no format named %r; formats: %s" % (fmt, ", ".join(table)))
    return table[key]


def format_name(fid):
    return s(_core.lib.memra_format_name(fid))


class Clocks(namedtuple("Clocks", "sm_khz mem_khz")):
    """SM and memory clocks of a device (kHz, from the driver's attributes; 0 on host)."""


class ModuleInfo(namedtuple("ModuleInfo", "index name version path loaded reason notes")):
    """One module the registry saw. ``loaded``: admitted on at least one device;
    ``reason``: why it was refused ("" when loaded); ``notes``: {device label:
    why it is not admitted on that device}."""


class LedgerEntry(namedtuple("LedgerEntry", "device op module entries hits errors declines")):
    """One (device, op, module) cell of the dispatch ledger; ``declines`` maps
    each decline reason to its count."""


class Ledger(list):
    """The dispatch ledger as a list of :class:`LedgerEntry`, with look-ups."""

    def hits(self, op=None, module=None, device=None):
        """Total hits of the entries matching every given field."""
        return sum(e.hits for e in self.select(op, module, device))

    def select(self, op=None, module=None, device=None):
        return [e for e in self if (op is None or e.op == op) and (module is None or e.module == module)
                and (device is None or e.device == device)]

    def __str__(self):
        lines = ["%-16s %-16s %-10s %8s %8s %6s  declines" % ("device", "op", "module", "entries", "hits", "errors")]
        for e in self:
            d = "; ".join("%s x%d" % (r, n) for r, n in e.declines.items())
            lines.append("%-16s %-16s %-10s %8d %8d %6d  %s" % (e.device, e.op, e.module, e.entries, e.hits,
                                                               e.errors, d))
        return "\n".join(lines)


class _Closing:
    """A context manager whose exit (and garbage collection) calls close()."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Runtime(_Closing):
    """A memra runtime: devices, modules, routing, the ledger.

    ``Runtime(**options)`` calls memra_open; options mirror memra_options
    (module_path, force_arch, no_cuda, no_default_modules,
    allow_unsafe_modules, prefer, disable; None = the environment's MEMRA_*);
    ``settings`` sets any knob by its variable name, a dict {"MEMRA_W16": "auto"}
    or a list of "MEMRA_NAME=value" (a setting wins over the environment), and
    ``ignore_environment=True`` reads no MEMRA_* variable.
    ``prefer`` and ``disable`` take the C text ("op=module,...") or, for
    prefer, a dict {op: module}; disable also takes a list.
    Use as a context manager or call :meth:`close`; weights, buffers and
    timers made from it are destroyed by close. Thread-safe as the C API is.
    """

    def __init__(self, module_path=None, force_arch=None, no_cuda=False, no_default_modules=False,
                 allow_unsafe_modules=False, prefer=None, disable=None, settings=None, ignore_environment=False):
        lib = _core.load()
        if isinstance(module_path, (list, tuple)):
            module_path = ":".join(module_path)
        # The strings live on self until close (the library copies them, this is belt and braces).
        self._keep = [b(module_path), b(force_arch), b(_prefer_text(prefer)), b(_disable_text(disable))]
        items = _settings_list(settings)
        arr = (c_char_p * (len(items) + 1))(*[b(t) for t in items], None) if items else None
        self._keep.append(arr)
        opts = S.sized(S.memra_options, module_path=self._keep[0], force_arch=self._keep[1],
                       no_cuda=int(bool(no_cuda)), no_default_modules=int(bool(no_default_modules)),
                       allow_unsafe_modules=int(bool(allow_unsafe_modules)), prefer=self._keep[2],
                       disable=self._keep[3], settings=arr, ignore_environment=int(bool(ignore_environment)))
        h = c_void_p()
        check("memra_open", lib.memra_open(byref(opts), byref(h)))
        self._h = h.value
        self._lock = threading.Lock()
        self._children = weakref.WeakSet()
        self._devices = [Device(self, lib.memra_device_get(self._h, i), i)
                         for i in range(lib.memra_device_count(self._h))]

    # ---- lifetime
    @property
    def handle(self):
        """The memra_runtime * as an int; raises when closed."""
        if self._h is None:
            raise bad("Runtime", "the runtime is closed")
        return self._h

    @property
    def closed(self):
        return self._h is None

    def close(self):
        """Destroy every weight, buffer and timer made from this runtime, then memra_close. Idempotent."""
        with self._lock:
            if self._h is None:
                return
            for child in list(self._children):
                child._release()
            _core.lib.memra_close(self._h)
            self._h = None

    def _adopt(self, child):
        self._children.add(child)

    # ---- driver and devices
    @property
    def driver_status(self):
        """"ok", or a sentence saying why the CUDA driver is not used."""
        return s(_core.lib.memra_driver_status(self.handle))

    @property
    def driver_version(self):
        """cuDriverGetVersion (e.g. 13000), 0 without a driver."""
        return _core.lib.memra_driver_version(self.handle)

    @property
    def devices(self):
        """Every device, GPUs first in ordinal order, the host device last."""
        self.handle
        return list(self._devices)

    def device(self, which=0):
        """A device by index (0 = best), "host", "cuda:N", or a torch.device."""
        self.handle
        if isinstance(which, Device):
            return which
        if isinstance(which, int) and not isinstance(which, bool):
            if 0 <= which < len(self._devices):
                return self._devices[which]
            raise bad("Runtime.device", "device index %d out of range (0..%d)" % (which, len(self._devices) - 1))
        text = str(which)
        if text == "host" or text == "cpu":
            return self.host
        if text.startswith("cuda"):
            ordinal = int(text.split(":")[1]) if ":" in text else 0
            index = getattr(which, "index", None)  # a torch.device's; str.index is a method
            if isinstance(index, int) and not isinstance(index, bool):
                ordinal = index
            for d in self._devices:
                if d.ordinal == ordinal and not d.is_host:
                    return d
            raise _core.errors.NoDeviceError("Runtime.device", "no memra device for %s (memra devices: %s)"
                                             % (text, ", ".join(d.label for d in self._devices)), 5)
        raise bad("Runtime.device", "cannot name a device by %r" % (which,))

    @property
    def host(self):
        """The host device (always present)."""
        h = _core.lib.memra_device_host(self.handle)
        for d in self._devices:
            if d._h == h:
                return d
        raise _core.errors.InternalError("Runtime.host", "host device not among the devices", 14)

    # ---- modules and routing
    @property
    def modules(self):
        """Every module the registry saw, loaded or refused, in discovery order (:class:`ModuleInfo`)."""
        lib = _core.lib
        out = []
        for i in range(lib.memra_module_count(self.handle)):
            mi = S.memra_module_info()
            if lib.memra_module_info_get(self._h, i, byref(mi)) != 0:
                continue
            notes = {}
            for d in self._devices:
                n = lib.memra_module_device_note(self._h, i, d._h)
                if n:
                    notes[d.label] = s(n)
            out.append(ModuleInfo(i, s(mi.name), s(mi.version), s(mi.path), bool(mi.loaded), s(mi.reason), notes))
        return out

    @property
    def refused_modules(self):
        """{name: reason} of every module that was refused everywhere."""
        return {m.name: m.reason for m in self.modules if not m.loaded}

    def module_load(self, path):
        """Hot-add one module file (same safety rules as the search path)."""
        from ._checks import text_arg
        check("memra_module_load", _core.lib.memra_module_load(self.handle, text_arg(path, "path")))

    def module_unload(self, name):
        """Withdraw a module by name (calls in flight finish on their snapshot)."""
        from ._checks import text_arg
        check("memra_module_unload", _core.lib.memra_module_unload(self.handle, text_arg(name, "name")))

    def routing_configure(self, prefer=None, disable=None):
        """Set preferences and disables; None keeps the current one, "" clears it.
        prefer: "op=module,..." or {op: module}; disable: "op|module,..." or a list."""
        check("memra_routing_configure", _core.lib.memra_routing_configure(
            self.handle, b(_prefer_text(prefer)), b(_disable_text(disable))))

    # ---- the ledger
    def ledger(self):
        """A snapshot of the dispatch ledger (:class:`Ledger`)."""
        cells = {}
        order = []

        def visit(row_p, _user):
            r = row_p.contents
            key = (s(r.device), s(r.op), s(r.module))
            if key not in cells:
                cells[key] = [r.entries, r.hits, r.errors, {}]
                order.append(key)
            if r.reason:
                cells[key][3][s(r.reason)] = r.declines
            else:
                cells[key][0:3] = [r.entries, r.hits, r.errors]

        cb = S.LEDGER_VISIT_FN(visit)
        _core.lib.memra_ledger_visit(self.handle, cb, None)
        return Ledger(LedgerEntry(k[0], k[1], k[2], cells[k][0], cells[k][1], cells[k][2], cells[k][3]) for k in order)

    def ledger_reset(self):
        _core.lib.memra_ledger_reset(self.handle)

    def jit_info(self):
        """The JIT cache (dict of memra_jit_info's members)."""
        ji = S.memra_jit_info()
        check("memra_jit_info_get", _core.lib.memra_jit_info_get(self.handle, byref(ji)))
        return {k: (s(getattr(ji, k)) if t is c_char_p else getattr(ji, k)) for k, t in ji._fields_}

    def __repr__(self):
        if self._h is None:
            return "<memra.Runtime closed>"
        return "<memra.Runtime %s>" % ", ".join(d.label for d in self._devices)


def _prefer_text(prefer):
    if isinstance(prefer, dict):
        return ",".join("%s=%s" % kv for kv in prefer.items())
    return prefer


def _disable_text(disable):
    if isinstance(disable, (list, tuple, set)):
        return ",".join(disable)
    return disable


def _settings_list(settings):
    """Runtime(settings=...): a dict {name: value} or a list of "NAME=value" -> the list of "NAME=value"."""
    if settings is None:
        return []
    if isinstance(settings, dict):
        items = []
        for k, v in settings.items():
            if not isinstance(k, str) or not k:
                raise bad("Runtime", "settings: a knob's name is a non-empty str (got %r)" % (k,))
            items.append("%s=%s" % (k, "1" if v is True else "0" if v is False else v))
        return items
    if isinstance(settings, (list, tuple)):
        for t in settings:
            if not isinstance(t, str) or "=" not in t:
                raise bad("Runtime", "settings: each item is \"MEMRA_NAME=value\" (got %r)" % (t,))
        return list(settings)
    raise bad("Runtime", "settings is a dict or a list of \"MEMRA_NAME=value\" (got %s)" % type(settings).__name__)


class Device:
    """One memra device (a GPU or the host). Properties read memra_device_caps."""

    def __init__(self, rt, handle, index):
        self._rt = weakref.ref(rt)
        self._h = handle
        self.index = index

    @property
    def runtime(self):
        rt = self._rt()
        if rt is None or rt.closed:
            raise bad("Device", "the runtime of this device is closed")
        return rt

    @property
    def handle(self):
        self.runtime
        return self._h

    def _caps(self):
        return _core.lib.memra_device_caps_get(self.handle).contents

    @property
    def f16_budget_mb(self):
        """MB of f16 mirrors this device may hold (memra_device_f16_budget_get); set it to change the budget
        for weights prepared from now on (0: no mirrors, the quantised weights' floor or W16 operand)."""
        return int(_core.lib.memra_device_f16_budget_get(self.handle))

    @f16_budget_mb.setter
    def f16_budget_mb(self, mb):
        if isinstance(mb, bool) or not isinstance(mb, int) or mb < 0:
            raise bad("Device.f16_budget_mb", "an int >= 0 (got %r)" % (mb,))
        check("memra_device_f16_budget_set", _core.lib.memra_device_f16_budget_set(self.handle, mb))

    def set_w16(self, on):
        """Whether weights prepared on this device from now on that get no f16 mirror take the W16 operand and
        gemm_w16 (True), the integer floor (False), or MEMRA_W16's rule (None; auto: GPUs that route gemm_w16)
        (memra_device_w16_set). Under MEMRA_W16=0 it has no effect."""
        if on is not None and not isinstance(on, bool):
            raise bad("Device.set_w16", "True, False or None (got %r)" % (on,))
        check("memra_device_w16_set", _core.lib.memra_device_w16_set(self.handle, -1 if on is None else int(on)))

    def set_floor_f16_m(self, m):
        """From how many tokens calls on the floor's records run dequant_kr_f16 + gemm_f16 instead: an int >= 1,
        0 never, "auto" the profile's crossover, None back to MEMRA_FLOOR_F16_M (memra_device_floor_f16_m_set)."""
        if m is None:
            v = -1
        elif m == "auto":
            v = -2
        elif isinstance(m, int) and not isinstance(m, bool) and m >= 0:
            v = m
        else:
            raise bad("Device.set_floor_f16_m", "an int >= 0, \"auto\" or None (got %r)" % (m,))
        check("memra_device_floor_f16_m_set", _core.lib.memra_device_floor_f16_m_set(self.handle, v))

    name = property(lambda self: s(self._caps().name), doc="marketing name, or \"host\"")
    profile = property(lambda self: s(self._caps().profile), doc="\"sm90\", \"sm120\", \"cuda\", \"host\"")
    arch = property(lambda self: self._caps().arch, doc="memra_arch value")
    cc = property(lambda self: self._caps().cc, doc="compute capability major*10+minor, 0 on host")
    ordinal = property(lambda self: self._caps().ordinal, doc="CUDA ordinal, -1 on host")
    sm_count = property(lambda self: self._caps().sm_count, doc="SMs; CPU threads used on host")
    total_mem = property(lambda self: self._caps().total_mem, doc="bytes")
    driver_version = property(lambda self: self._caps().driver_version)
    jit_target = property(lambda self: s(self._caps().jit_target) or None)
    caps = property(lambda self: self._caps().caps, doc="MEMRA_CAP_* bit mask")

    @property
    def profile_forced(self):
        """True when MEMRA_ARCH forced this device's profile (plain or per ordinal)."""
        fn = getattr(_core.lib, "memra_device_profile_forced", None)
        return bool(fn(self.handle)) if fn is not None else False

    @property
    def is_host(self):
        return self.profile == "host"

    @property
    def capabilities(self):
        """Names of the capability bits ("wgmma", "lt-fp8-blk128", ...)."""
        buf = ctypes.create_string_buffer(1024)
        _core.lib.memra_caps_describe(self.caps, buf, len(buf))
        text = s(buf.value)
        return [c for c in text.split(",") if c]

    @property
    def label(self):
        return "host" if self.is_host else "cuda:%d %s" % (self.ordinal, self.profile)

    def clocks(self):
        """:class:`Clocks` (kHz; 0 on host)."""
        c = S.memra_device_clocks()
        check("memra_device_clocks_get", _core.lib.memra_device_clocks_get(self.handle, byref(c)))
        return Clocks(c.sm_khz, c.mem_khz)

    def synchronize(self):
        """Wait for all work on the device's streams."""
        check("memra_device_synchronize", _core.lib.memra_device_synchronize(self.handle))

    def stream_reserve(self, stream, weights, m_max):
        """memra_stream_reserve: size and pin scratch for `stream` so that calls on
        these weights with m <= m_max can be captured into a CUDA graph on it
        (nothing is allocated during a capture). Call it before the capture
        begins; it waits for the stream. A no-op on the host device."""
        ws = list(weights)
        arr = (ctypes.c_void_p * max(1, len(ws)))(*[w.handle for w in ws])
        check("memra_stream_reserve",
              _core.lib.memra_stream_reserve(self.handle, _stream_value(stream), arr, len(ws), int(m_max)))

    def routing(self, op):
        """Names of the modules serving `op` here, in dispatch order."""
        oid = op_id(op)
        n = _core.lib.memra_routing_get(self.handle, oid, None, 0)
        arr = (c_char_p * max(n, 1))()
        n = _core.lib.memra_routing_get(self._h, oid, arr, n)
        return [s(arr[i]) for i in range(n)]

    def routing_table(self):
        """{op: [modules in dispatch order]} for every op."""
        return {op: self.routing(op) for op in ops()}

    def module_score(self, name):
        """Score of module `name` here, 0 when not admitted."""
        return _core.lib.memra_module_score(self.handle, b(name))

    def provides(self, module, op):
        """True when `module` is admitted here and provides `op`."""
        return bool(_core.lib.memra_module_provides(self.handle, b(module), op_id(op)))

    def ledger_hits(self, op, module):
        return _core.lib.memra_ledger_hits(self.handle, op_id(op), b(module))

    def buffer(self, nbytes):
        """A new :class:`Buffer` of `nbytes` on this device."""
        return Buffer(self, nbytes)

    def timer(self):
        """A new :class:`Timer` on this device."""
        return Timer(self)

    def __repr__(self):
        return "<memra.Device %d %s (%s)>" % (self.index, self.label, self.name)

    def __eq__(self, other):
        return isinstance(other, Device) and other._h == self._h

    def __hash__(self):
        return hash(self._h)


class _Child(_Closing):
    """Something made from a runtime and destroyed with it."""

    _destroy = None

    def _init_child(self, rt, handle):
        self._h = handle
        self._rtref = weakref.ref(rt)
        rt._adopt(self)

    def _release(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            getattr(_core.lib, self._destroy)(h)

    def close(self):
        """Destroy now (also done by the runtime's close, and on garbage collection)."""
        self._release()

    destroy = close

    def __del__(self):  # only while the runtime lives (its close destroyed the rest)
        try:
            rt = self._rtref()
            if rt is not None and not rt.closed:
                self._release()
        except Exception:
            pass

    @property
    def handle(self):
        if getattr(self, "_h", None) is None:
            raise bad(type(self).__name__, "this %s is destroyed (or its runtime closed)" % type(self).__name__)
        return self._h


class Buffer(_Child):
    """Device memory (host memory on the host device): memra_buffer_*."""

    _destroy = "memra_buffer_destroy"

    def __init__(self, device, nbytes):
        nbytes = int(nbytes)
        if nbytes <= 0:
            raise bad("memra_buffer_create", "bytes must be > 0 (got %d)" % nbytes)
        h = c_void_p()
        check("memra_buffer_create", _core.lib.memra_buffer_create(device.handle, nbytes, byref(h)))
        self.device = device
        self._init_child(device.runtime, h.value)

    @property
    def ptr(self):
        """The device address (memra_dptr) as an int."""
        return _core.lib.memra_buffer_ptr(self.handle)

    @property
    def size(self):
        return _core.lib.memra_buffer_size(self.handle)

    def write(self, data, offset=0):
        """Copy bytes-like `data` (or a C-contiguous numpy array) in at `offset`; synchronous."""
        mv = memoryview(data).cast("B")
        n = mv.nbytes
        if offset < 0 or offset + n > self.size:
            raise bad("Buffer.write", "%d bytes at offset %d do not fit a %d-byte buffer" % (n, offset, self.size))
        src = (ctypes.c_char * n).from_buffer_copy(mv) if mv.readonly else (ctypes.c_char * n).from_buffer(mv)
        check("memra_buffer_write", _core.lib.memra_buffer_write(self.handle, offset, src, n))

    def read(self, nbytes=None, offset=0):
        """Copy `nbytes` (default: to the end) out as bytes; synchronous."""
        if nbytes is None:
            nbytes = self.size - offset
        if offset < 0 or nbytes < 0 or offset + nbytes > self.size:
            raise bad("Buffer.read", "%d bytes at offset %d exceed a %d-byte buffer" % (nbytes, offset, self.size))
        dst = ctypes.create_string_buffer(max(nbytes, 1))
        check("memra_buffer_read", _core.lib.memra_buffer_read(self.handle, offset, dst, nbytes))
        return dst.raw[:nbytes]


class Timer(_Child):
    """A stream-ordered interval timer (CUDA events on a GPU, the monotonic clock on host)."""

    _destroy = "memra_timer_destroy"

    def __init__(self, device):
        h = c_void_p()
        check("memra_timer_create", _core.lib.memra_timer_create(device.handle, byref(h)))
        self.device = device
        self._init_child(device.runtime, h.value)

    def start(self, stream=None):
        check("memra_timer_start", _core.lib.memra_timer_start(self.handle, _stream_value(stream)))

    def stop(self, stream=None):
        check("memra_timer_stop", _core.lib.memra_timer_stop(self.handle, _stream_value(stream)))

    def elapsed_ms(self):
        """Waits for the stop mark; start..stop in milliseconds."""
        v = c_double()
        check("memra_timer_elapsed_ms", _core.lib.memra_timer_elapsed_ms(self.handle, byref(v)))
        return v.value


def _stream_value(stream):
    """A CUstream as an int (None/0 = the legacy default stream); torch streams accepted."""
    if stream is None:
        return None
    if hasattr(stream, "cuda_stream"):
        return stream.cuda_stream or None
    if isinstance(stream, int):
        return stream or None
    raise bad("stream", "a stream is an int CUstream, a torch.cuda.Stream or None (got %r)" % (stream,))
