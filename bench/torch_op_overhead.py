#!/usr/bin/env python3
"""The host cost per call of memra's torch paths at tiny shapes, where the host is the bound.

    python3 bench/torch_op_overhead.py [--m 16] [--n 256] [--k 256] [--format q8_0] [--calls 2000]
                                       [--batches 15] [--json FILE] [--device 0] [--host] [--stub]
                                       [--clock wall|thread]

On a GPU (torch CUDA tensors, torch's current stream), one weight [n x k] and
one activation [m x k], the arms are timed interleaved (the starting arm
rotating per batch): each batch issues `calls` back-to-back calls of one arm
and synchronizes once; the batch's wall time / calls is its host cost per
call (at these shapes the GPU work is a few microseconds, so the host's
issue rate is what is measured). Medians and quartiles over the batches.

  bound      memra_matmul_ex through ctypes with its arguments bound once
             (memra.calls.matmul_args): the reference
  fast       memra.torch_op.matmul(w, x, out=y): the eager path of the op's module
  op_out     torch.ops.memra.matmul_out(x, wid, y, 1.0): the custom op through torch's dispatcher
  op         torch.ops.memra.matmul(x, wid, n): the functional op (allocates y)
  op_noop    a custom op of matmul_out's schema whose Python kernel does nothing: the
             dispatcher's own cost, the floor under op_out and op
  matmul     memra.matmul(w, x, out=y): the general wrapper (every check each call)
  torch_mm   torch.mm(x, wt, out=y): a tiny f32 GEMM of the same shape, for scale

Before timing, every memra arm's result is compared with the bound call's
(bit for bit) and torch.compile(fullgraph=True) of a memra.torch_op.Linear and
a CUDA graph capture of torch.ops.memra.matmul_out are run and checked; the
receipt (memra-bench version 3, mode "python", baseline "bound") records them
and the target: each op path at most 3 us per call above "bound".

--host runs it on CPU tensors and the host device (the figures include the host
GEMM). --stub then swaps memra_matmul_ex, after the checks, for a C function
that returns at once (built with the C compiler, $CC or cc): every arm's
figure is its Python and torch cost alone, which is what the target is about.
--clock thread times with this thread's CPU time instead of the wall clock:
steady on a machine busy with other work (a CPU-only --host --stub run).
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import memra  # noqa: E402
import memra.torch_op as mt  # noqa: E402
from memra.calls import matmul_args  # noqa: E402

TARGET_US = 3.0


def quartiles(v):
    s = sorted(v)

    def at(q):
        pos = q * (len(s) - 1)
        lo = int(pos)
        f = pos - lo
        return s[lo] * (1 - f) + s[lo + 1] * f if lo + 1 < len(s) else s[lo]
    return at(0.25), at(0.75)


def commit():
    try:
        return subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def stub_matmul_ex():
    """A C function of memra_matmul_ex's signature that returns 0 at once, as a ctypes function."""
    import ctypes
    import tempfile
    d = tempfile.mkdtemp(prefix="memra-stub-")
    src, so = os.path.join(d, "stub.c"), os.path.join(d, "stub.so")
    with open(src, "w") as f:
        f.write("int memra_bench_stub(void *d, void *w, void *a) { (void)d; (void)w; (void)a; return 0; }\n")
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", "-o", so, src], check=True, timeout=120)
    fn = ctypes.CDLL(so).memra_bench_stub
    fn.restype = ctypes.c_int
    fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    return fn


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--format", default="q8_0")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--json", default=None, help="write the receipt here ('-': stdout)")
    ap.add_argument("--host", action="store_true",
                    help="a dry run on CPU tensors and the host device (no CUDA graph; the figures mean nothing)")
    ap.add_argument("--clock", choices=("wall", "thread"), default="wall",
                    help="wall: perf_counter (the GPU figure); thread: this thread's CPU time, steady on a loaded "
                         "machine (a CPU-only --host --stub run; it misses time spent waiting on the GPU)")
    ap.add_argument("--stub", action="store_true",
                    help="time the arms with memra_matmul_ex replaced by a C no-op (the host cost around the call)")
    a = ap.parse_args()
    cuda = not a.host
    if cuda and not torch.cuda.is_available():
        sys.stderr.write("torch_op_overhead: needs torch with a CUDA device (--host: a dry run on the CPU)\n")
        return 77
    if cuda:
        torch.cuda.set_device(a.device)
    where = "cuda" if cuda else "cpu"

    def sync():
        if cuda:
            torch.cuda.synchronize()
    rt = memra.Runtime(no_cuda=not cuda)
    dev = rt.device(torch.device("cuda", a.device)) if cuda else rt.host
    g = np.random.default_rng(1)
    wf = g.uniform(-0.5, 0.5, (a.n, a.k)).astype(np.float32)
    w = memra.Weight.from_array(rt, wf, a.format)
    w.prepare(dev)
    x = torch.from_numpy(g.uniform(-2, 2, (a.m, a.k)).astype(np.float32)).to(where)
    y = torch.empty(a.m, a.n, device=where)
    wkn = torch.from_numpy(np.ascontiguousarray(wf.T)).to(where)  # [k x n] for torch.mm
    wid = mt.weight_id(w)
    lin = mt.Linear(w)
    mdev, margs, _ = matmul_args(w, x, out=y)
    import ctypes
    fn, dh, wh, pa = memra._core.lib.memra_matmul_ex, mdev.handle, w.handle, ctypes.byref(margs)

    def bound():
        fn(dh, wh, pa)

    probe = torch.library.Library("memra_bench", "DEF")  # the dispatcher's floor: matmul_out's schema, no work
    probe.define("noop(Tensor x, int weight, Tensor(a!) out, float alpha=1.0) -> ()")
    for key in ("CPU", "CUDA"):
        probe.impl("noop", lambda x, weight, out, alpha=1.0: None, key)

    arms = {
        "bound": bound,
        "fast": lambda: mt.matmul(w, x, out=y),
        "op_out": lambda: torch.ops.memra.matmul_out(x, wid, y, 1.0),
        "op": lambda: torch.ops.memra.matmul(x, wid, a.n),
        "op_noop": lambda: torch.ops.memra_bench.noop(x, wid, y, 1.0),
        "matmul": lambda: memra.matmul(w, x, out=y),
        "torch_mm": lambda: torch.mm(x, wkn, out=y),
    }
    # the bound call's stream is torch's current stream as matmul_args saw it
    checks = {}
    bound()
    sync()
    ref = y.clone()
    for name in ("fast", "op_out", "matmul"):
        y.fill_(float("nan"))
        arms[name]()
        sync()
        checks["%s_equals_bound" % name] = bool(torch.equal(y, ref))
    checks["op_equals_bound"] = bool(torch.equal(arms["op"](), ref))
    try:
        cg = torch.compile(lambda t: lin(t) + 0.0, fullgraph=True)
        checks["compile_fullgraph"] = bool(torch.equal(cg(x), ref))
    except Exception as e:  # recorded, not hidden
        checks["compile_fullgraph"] = "failed: %s: %s" % (type(e).__name__, str(e)[:300])
    try:
        if not cuda:
            raise RuntimeError("no CUDA graph in a --host dry run")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        dev.stream_reserve(side, [w], a.m)
        with torch.cuda.stream(side):
            for _ in range(2):
                torch.ops.memra.matmul_out(x, wid, y, 1.0)
        torch.cuda.current_stream().wait_stream(side)
        sync()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=side):
            torch.ops.memra.matmul_out(x, wid, y, 1.0)
        y.fill_(float("nan"))
        graph.replay()
        sync()
        checks["cuda_graph"] = bool(torch.equal(y, ref))
    except Exception as e:
        checks["cuda_graph"] = "failed: %s: %s" % (type(e).__name__, str(e)[:300])

    if a.stub:
        fn = stub_matmul_ex()
        memra._core.lib.memra_matmul_ex = fn  # memra.matmul's entry point
        mt._matmul_ex = fn                    # the op kernels'
    clock = time.perf_counter if a.clock == "wall" else time.thread_time
    names = list(arms)
    per = {n: [] for n in names}
    for f in arms.values():  # warm-up
        for _ in range(50):
            f()
    sync()
    for b in range(a.batches):
        for i in range(len(names)):
            name = names[(b + i) % len(names)]
            f = arms[name]
            sync()
            t0 = clock()
            for _ in range(a.calls):
                f()
            sync()
            per[name].append((clock() - t0) / a.calls * 1e6)
    med = {n: statistics.median(v) for n, v in per.items()}
    q = {n: quartiles(v) for n, v in per.items()}
    # the figure judged: per batch, the arm's time less the bound call's in the same batch (the
    # arms of a batch run back to back, so a drift of the machine between batches cancels), the
    # median over the batches, with its quartiles
    paired = {n: [t - u for t, u in zip(per[n], per["bound"])] for n in names if n != "bound"}
    over = {n: statistics.median(v) for n, v in paired.items()}
    over_q = {n: quartiles(v) for n, v in paired.items()}
    ok = {n: over[n] <= TARGET_US for n in ("fast", "op_out", "op")}
    gpu_name = torch.cuda.get_device_name(a.device) if cuda else "host (dry run)"
    print("memra torch op overhead on %s%s (torch %s, memra %s): %d x %d x %d %s, %d calls x %d batches"
          % (gpu_name, ", memra_matmul_ex stubbed" if a.stub else "", torch.__version__, memra.version(), a.m, a.n,
             a.k, a.format, a.calls, a.batches))
    print("%-10s %12s %10s %14s %17s  %s" % ("arm", "us / call", "spread", "vs bound us", "(quartiles)", "note"))
    for n in names:
        sp = 50.0 * (q[n][1] - q[n][0]) / med[n] if med[n] else 0.0
        note = "" if n == "bound" else ("target <= %.0f us: %s" % (TARGET_US, "met" if ok[n] else "NOT met")
                                        if n in ok else "")
        ov, oq = (0.0, (0.0, 0.0)) if n == "bound" else (over[n], over_q[n])
        print("%-10s %12.2f %9s%% %+14.2f %17s  %s" % (n, med[n], "+-%.1f" % sp, ov, "[%+.2f, %+.2f]" % oq, note))
    print("vs bound: the median over the batches of (arm - bound) within each batch")
    print("checks: " + ", ".join("%s=%s" % kv for kv in checks.items()))
    flops = 2.0 * a.m * a.n * a.k
    receipt = {
        "format": "memra-bench", "version": 3, "mode": "python", "memra": memra.version(), "commit": commit(),
        "host": socket.gethostname(), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device": {"name": gpu_name, "profile": dev.profile, "cc": dev.cc}, "driver_version": rt.driver_version,
        "sheet": "torch-op-overhead", "m": a.m, "batch": a.calls, "reps": a.batches,
        "clocks": {"timer": "perf_counter (host wall time per call, synchronized per batch)" if a.clock == "wall" else
                   "thread_time (this thread's CPU time per call: --clock thread)"},
        "shapes": [{"shape": "%d->%d" % (a.k, a.n), "in_f": a.k, "out_f": a.n, "m": a.m, "flops": flops,
                    "baseline": "bound",
                    "arms": [{"arm": n, "median_ms": med[n] * 1e-3, "q1_ms": q[n][0] * 1e-3, "q3_ms": q[n][1] * 1e-3,
                              "times_ms": [t * 1e-3 for t in per[n]], "valid": True} for n in names]}],
        "torch_op": {"torch": torch.__version__, "format": a.format, "target_us_over_bound": TARGET_US,
                     "stubbed": bool(a.stub),
                     "over_bound_us": over,
                     "over_bound_quartiles_us": over_q, "over_bound_rule": "median over batches of the arm's time "
                     "less the bound call's in the same batch", "target_met": ok, "checks": checks},
    }
    if a.json:
        text = json.dumps(receipt, indent=1) + "\n"
        if a.json == "-":
            sys.stdout.write(text)
        else:
            with open(a.json, "w") as f:
                f.write(text)
            sys.stderr.write("torch_op_overhead: receipt written to %s\n" % a.json)
    bad = [k for k, v in checks.items() if v is not True and not (not cuda and k == "cuda_graph")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
