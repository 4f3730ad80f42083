"""The tuning harness: time memra arms and any Python callable by ONE protocol.

    import memra, memra.bench as mb
    b = mb.Bench(dev, reps=20, warmup=3, flush_l2=True, sheet="race")
    b.case("5120->1024", in_f=5120, out_f=1024, m=512, arms=[
        mb.module_arm("sm90", dev, "sm90", "gemm_fp8_blk", gemm=g),      # memra_module_call
        mb.module_arm("fp8blk", dev, "fp8blk", "gemm_fp8_blk", gemm=g),
        mb.matmul_arm("routed", w, x, y),                                 # memra.matmul
        mb.python_arm("torch", lambda: torch.matmul(xh, wh.t())),         # anything else
    ])
    print(b.table()); b.write("race.json")

The protocol (the same as `memra bench`, bench/README.md):
- `warmup` untimed rounds of every arm first;
- each repetition runs every arm once, the starting arm rotating (rep r
  starts at arm r mod n), so clock and thermal drift fall on all arms alike;
- optionally the L2 is flushed before every timed call by writing a large
  buffer (`flush_bytes`, memra's own `scale` op over a device buffer, so no
  torch is needed for it);
- each timed interval holds `batch` calls back to back and counts as
  interval / batch; on a GPU it is timed by CUDA events (memra_timer on the
  bench's stream, torch's current stream by default), on the host device by
  time.perf_counter (host ops complete before they return);
- the result per arm is the median; ratios are speeds against the baseline
  arm (the first unless named): median_baseline / median_arm.
Evidence: around every timed call of a memra arm the ledger is read; the hits
that happened during the arm are its "served" list, and an arm with an
expected op that shows no hit of it is INVALID (a number without the kernel
under test behind it is not a result). Python arms carry no evidence.

:meth:`Bench.receipt` gives the standard receipt (format "memra-bench",
version 2, mode "python"; bench/README.md), which `python -m memra report`
merges with the C program's.
"""

import json
import math
import os
import socket
import statistics
import subprocess
import sys
import time
from ctypes import byref

from . import _core
from .calls import make_op_args, matmul
from .runtime import _stream_value, op_id, ops


class Arm:
    """One contender: a callable taking no argument, its name, and what the
    ledger must show for it (``expect``: an op name, or (op, module); None for none)."""

    def __init__(self, name, fn, expect=None, kind="python", op=None, note=""):
        self.name = name
        self.fn = fn
        if isinstance(expect, str):
            expect = (expect, None)
        self.expect = expect
        self.kind = kind
        self.op = op or (expect[0] if expect else None)
        self.note = note


def python_arm(name, fn, note=""):
    """Any Python callable (a torch or numpy arm). Its work must be enqueued on the
    bench's stream (torch's current stream) to be timed by the events on a GPU."""
    return Arm(name, fn, None, "python", note=note)


def matmul_arm(name, w, x, out=None, expect=None, **kw):
    """memra.matmul(w, x, out, **kw) through the lane policy; `expect` the op (or
    (op, module)) the ledger must show, None to accept whatever served it."""
    if out is None:
        out = matmul(w, x, **kw)

    def fn():
        matmul(w, x, out, **kw)
    return Arm(name, fn, expect, "memra", note="memra.matmul")


def matmul_bound_arm(name, w, x, out, expect=None, **kw):
    """The routed call of matmul_arm with its Python-side checks and argument
    structure paid once (memra.calls.matmul_args): each timed call is one
    memra_matmul_ex through ctypes, so the gap between this arm and matmul_arm
    is the wrapper's per-call cost."""
    from .calls import matmul_args
    dev, args, out = matmul_args(w, x, out, **kw)
    lib, h, wh = _core.lib, dev.handle, w.handle

    def fn():
        st = lib.memra_matmul_ex(h, wh, byref(args))
        if st != 0:
            raise _core.fail("memra_matmul_ex", st, None)
    fn._keep = (x, out, args)  # the structure holds raw pointers into these
    return Arm(name, fn, expect, "memra", note="memra_matmul_ex, arguments built once")


def module_arm(name, device, module, op, gemm=None, stream=None, **fields):
    """memra_module_call(device, module, op, ...) with arguments built once (see
    memra.module_call); expects a hit of (op, module)."""
    oid = op_id(op)
    args = make_op_args(device, gemm=gemm, stream=stream, **fields)
    lib = _core.lib
    h = device.handle
    mod = module.encode()

    def fn():
        st = lib.memra_module_call(h, mod, oid, byref(args))
        if st != 0:
            reason = _core.s(args.decline_reason) if st == 1 else None
            raise _core.fail("memra_module_call(%s, %s)" % (module, op), st, reason)
    opname = ops()[oid]
    return Arm(name, fn, (opname, module), "memra", op=opname, note="memra_module_call %s/%s" % (module, opname))


def _median(t):
    return statistics.median(t) if t else float("nan")


class Bench:
    """Runs cases on one memra device and collects a receipt.

    device: a memra.Device. reps/warmup/batch: as `memra bench`. flush_l2:
    write `flush_bytes` (default 256 MiB on a GPU, 64 MiB on the host) before
    every timed call. stream: the stream timed on a GPU (None: torch's current
    stream when torch is loaded, else the legacy default stream). sheet: a
    label for the receipt. baseline: the arm the ratios are taken against.
    """

    def __init__(self, device, reps=20, warmup=3, batch=1, flush_l2=False, flush_bytes=None, stream=None,
                 sheet="python", baseline=None):
        if reps < 1 or warmup < 0 or batch < 1:
            raise _core.bad("Bench", "reps >= 1, warmup >= 0 and batch >= 1 (got %d, %d, %d)" % (reps, warmup, batch))
        self.device = device
        self.rt = device.runtime
        self.reps, self.warmup, self.batch = int(reps), int(warmup), int(batch)
        self.sheet = sheet
        self.baseline = baseline
        self.shapes = []
        self.m = None
        self.on_gpu = not device.is_host
        if stream is None and self.on_gpu and "torch" in sys.modules:
            torch = sys.modules["torch"]
            if torch.cuda.is_available():
                stream = torch.cuda.current_stream(device.ordinal).cuda_stream
        self.stream = _stream_value(stream)
        self.flush_l2 = bool(flush_l2)
        self.flush_bytes = int(flush_bytes or ((256 << 20) if self.on_gpu else (64 << 20)))
        self._flush = None
        if self.flush_l2:
            self._flush = self._make_flush()
        self._timer = device.timer() if self.on_gpu else None

    def _make_flush(self):
        mods = self.device.routing("scale")
        if not mods:
            raise _core.errors.NotSupportedError("Bench", "no module serves `scale` on %s to flush the L2 with"
                                                 % self.device.label, 10)
        n = self.flush_bytes // 4
        buf = self.device.buffer(n * 4)
        buf.write(bytes(n * 4))  # zeros: y *= 1 keeps them zeros (no NaN or denormal costs)
        self._flush_buf = buf
        arm = module_arm("flush", self.device, mods[0], "scale", src=buf, n=n, s=1.0, stream=self.stream)
        return arm.fn

    def _ledger(self):
        label = self.device.label
        return {(e.op, e.module): e.hits for e in self.rt.ledger() if e.device == label}

    def _time_once(self, arm):
        if self._flush is not None:
            self._flush()
        before = self._ledger() if arm.kind == "memra" else None
        if self.on_gpu:
            t = self._timer
            t.start(self.stream)
            for _ in range(self.batch):
                arm.fn()
            t.stop(self.stream)
            ms = t.elapsed_ms()
        else:
            t0 = time.perf_counter()
            for _ in range(self.batch):
                arm.fn()
            ms = (time.perf_counter() - t0) * 1e3
        served = {}
        if before is not None:
            after = self._ledger()
            served = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0) > 0}
        return ms / self.batch, served

    def case(self, shape, in_f, out_f, m, arms, flops=None):
        """Time `arms` on one shape by the protocol; returns the receipt's shape entry."""
        if not arms:
            raise _core.bad("Bench.case", "no arms")
        names = [a.name for a in arms]
        if len(set(names)) != len(names):
            raise _core.bad("Bench.case", "arm names must differ: %s" % names)
        if self.m is None:
            self.m = int(m)
        flops = float(flops if flops is not None else 2.0 * m * in_f * out_f)
        n = len(arms)
        for _ in range(self.warmup):
            for a in arms:
                for _ in range(self.batch):
                    a.fn()
        if self.on_gpu:
            self.device.synchronize()
        times = [[] for _ in arms]
        served = [{} for _ in arms]
        for r in range(self.reps):
            for j in range(n):
                i = (r + j) % n
                ms, sv = self._time_once(arms[i])
                times[i].append(ms)
                for k, v in sv.items():
                    served[i][k] = served[i].get(k, 0) + v
        base = self.baseline if self.baseline in names else names[0]
        base_med = _median(times[names.index(base)])
        out_arms = []
        for i, a in enumerate(arms):
            med = _median(times[i])
            valid, note = True, a.note
            if a.expect is not None:
                op, mod = a.expect
                got = sum(v for (o, mm), v in served[i].items() if o == op and (mod is None or mm == mod))
                if got == 0:
                    valid = False
                    note = (note + "; " if note else "") + "INVALID: no ledger hit of %s%s" % (
                        op, "/" + mod if mod else "")
            op = a.op
            if op is None and served[i]:
                op = max(served[i].items(), key=lambda kv: kv[1])[0][0]
            out_arms.append({
                "arm": a.name, "kind": a.kind, "op": op, "times_ms": [round(t, 6) for t in times[i]],
                "median_ms": med, "flops_per_s": flops / (med * 1e-3) if med > 0 else None,
                "ratio": base_med / med if med > 0 else None, "valid": valid, "note": note,
                "served": [{"op": o, "module": mm, "hits": v} for (o, mm), v in sorted(served[i].items())]})
        entry = {"shape": shape, "in_f": int(in_f), "out_f": int(out_f), "m": int(m), "flops": flops,
                 "baseline": base, "arms": out_arms}
        self.shapes.append(entry)
        return entry

    # ---- results
    def geomean(self):
        """{arm: geometric mean of its ratio over the cases}."""
        logs = {}
        for s in self.shapes:
            for a in s["arms"]:
                if a["ratio"]:
                    logs.setdefault(a["arm"], []).append(math.log(a["ratio"]))
        return {k: math.exp(sum(v) / len(v)) for k, v in logs.items()}

    def receipt(self):
        """The receipt as a dict (format memra-bench, version 2, mode python)."""
        dev = self.device
        clk = dev.clocks()
        rt = self.rt
        mods = [{"name": m.name, "version": m.version, "loaded": m.loaded, "score": dev.module_score(m.name)}
                for m in rt.modules]
        extra = {"python": sys.version.split()[0]}
        for lib in ("numpy", "torch"):
            if lib in sys.modules:
                extra[lib] = getattr(sys.modules[lib], "__version__", "?")
        return {
            "format": "memra-bench", "version": 3, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "memra": _core.s(_core.lib.memra_version()), "commit": source_commit(), "host": socket.gethostname(),
            "clocks": {"sm_khz": clk.sm_khz, "mem_khz": clk.mem_khz,
                       "source": "driver attribute (maximum clock)" if self.on_gpu else "none (host)",
                       "timer": "cuda-events" if self.on_gpu else "perf_counter"},
            "mode": "python",
            "device": {"name": dev.name, "profile": dev.profile, "cc": dev.cc, "sm_count": dev.sm_count,
                       "sm_clock_khz": clk.sm_khz, "mem_clock_khz": clk.mem_khz, "total_mem": dev.total_mem},
            "driver_version": rt.driver_version, "modules": mods, "sheet": self.sheet, "m": self.m,
            "reps": self.reps, "warmup": self.warmup, "batch": self.batch,
            "flops_unit": "TFLOP/s" if self.on_gpu else "GFLOP/s", "flush_l2": self.flush_l2,
            "flush_bytes": self.flush_bytes if self.flush_l2 else 0, "versions": extra,
            "shapes": self.shapes, "geomean_ratio": self.geomean(),
            "invalid_arms": sorted({a["arm"] for s in self.shapes for a in s["arms"] if not a["valid"]}),
        }

    def write(self, path):
        """Write the receipt as JSON to `path` ("-" for stdout); returns the dict."""
        r = self.receipt()
        text = json.dumps(r, indent=1) + "\n"
        if path == "-":
            sys.stdout.write(text)
        else:
            with open(path, "w") as f:
                f.write(text)
        return r

    def table(self):
        """The results as text: per case and arm the median, the rate, the ratio, the evidence."""
        unit, scale = ("TFLOP/s", 1e12) if self.on_gpu else ("GFLOP/s", 1e9)
        lines = ["%-14s %-12s %10s %9s %7s  %s" % ("shape", "arm", "median ms", unit, "ratio", "served")]
        for s in self.shapes:
            for a in s["arms"]:
                sv = ", ".join("%s/%s x%d" % (x["module"], x["op"], x["hits"]) for x in a["served"]) or "-"
                if not a["valid"]:
                    sv += "  INVALID"
                lines.append("%-14s %-12s %10.4f %9.3f %7.3f  %s" % (
                    s["shape"], a["arm"], a["median_ms"], (a["flops_per_s"] or 0) / scale, a["ratio"] or 0, sv))
        g = self.geomean()
        lines.append("geomean ratio: " + ", ".join("%s %.3f" % kv for kv in g.items()))
        return "\n".join(lines)


def source_commit():
    """`git rev-parse --short HEAD` of the checkout the package runs from, else "unknown"."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if not os.path.exists(os.path.join(here, "CMakeLists.txt")):
        return "unknown"
    try:
        out = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    c = out.stdout.strip()
    return c if out.returncode == 0 and c else "unknown"
