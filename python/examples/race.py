"""Race two modules on one op, and torch's (or numpy's) own arm, by one protocol.

    python python/examples/race.py                          # GPU: gemm_f16, 27b sheet, m=512
    python python/examples/race.py --op gemm_fp8_blk --modules sm90 fp8blk --json race.json --plot race.png
    python python/examples/race.py --sheet tiny --m 8        # the host device: host module vs numpy

On a GPU (torch with CUDA, memra sees the device) the operands are torch CUDA
tensors: each module that provides the op (or the two named) is called through
memra_module_call, the routed memra.matmul is a third arm, and torch's own arm
is `x.half() @ w.t()` (f16 weight) beside them. On the host device the host
module races a numpy arm (float32 BLAS) on the same operands. Prints the
table, writes the receipt (memra-bench version 2, mode python) and, with
--plot, the figure (`python -m memra report` draws it).
"""

import argparse
import os
import sys

import numpy as np

try:
    import memra
except ImportError:  # run from a checkout without `pip install ./python`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import memra
import memra.bench as mb
from memra import blocks, report

SHEETS = {"27b": [(5120, 12288), (5120, 1024), (6144, 5120), (5120, 17408), (17408, 5120), (5120, 5120)],
          "1p7b": [(2048, 2048), (2048, 1024), (2048, 6144), (6144, 2048)],
          "tiny": [(512, 256), (1024, 512)]}
OPS = ("gemm_f16", "gemm_fp8", "gemm_fp8_blk")


def operands(fmt_op, n, k, rng):
    """Weight values, and the weight as the op reads it: (values f32, w bytes array, w_scale, grid)."""
    a = (rng.uniform(0.01, 0.5, (n, k)) * rng.choice([-1.0, 1.0], (n, k))).astype(np.float32)
    if fmt_op == "gemm_f16":
        return a, a.astype(np.float16), 0.0, None
    if fmt_op == "gemm_fp8":
        s = np.float32(np.abs(a).max() / 448.0)
        return a, blocks.e4m3_encode(a / s), float(s), None
    gr, gc = -(-n // 128), -(-k // 128)
    grid = np.ones((gr, gc), np.float32)
    codes = np.empty((n, k), np.uint8)
    for i in range(gr):
        for j in range(gc):
            blk = a[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
            grid[i, j] = np.abs(blk).max() / 448.0
            codes[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = blocks.e4m3_encode(blk / grid[i, j])
    return a, codes, 0.0, grid


def weight_for(rt, op, a):
    if op == "gemm_f16":
        return memra.Weight.from_array(rt, a, "f16")
    return memra.Weight.from_array(rt, a, "e4m3", block_scales=(op == "gemm_fp8_blk"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--op", default="gemm_f16", choices=OPS)
    p.add_argument("--modules", nargs="*", help="the modules to race (default: every one providing the op, up to 2)")
    p.add_argument("--sheet", default=None, choices=sorted(SHEETS))
    p.add_argument("--m", type=int, default=None)
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--flush", action="store_true", help="flush the L2 before every timed call")
    p.add_argument("--json", default="race.json", help="receipt path (- for stdout)")
    p.add_argument("--plot", default=None, help="figure path (.png or .svg); needs matplotlib")
    args = p.parse_args(argv)

    torch = None
    try:
        import torch as _t
        torch = _t if _t.cuda.is_available() else None
    except ImportError:
        pass
    rt = memra.Runtime()
    dev = rt.devices[0]
    gpu = torch is not None and not dev.is_host
    if not gpu:
        dev = rt.host
    sheet = args.sheet or ("27b" if gpu else "tiny")
    m = args.m or (512 if gpu else 8)
    reps = args.reps or (20 if gpu else 5)
    mods = args.modules or [x for x in dev.routing(args.op)][:2]
    if not mods:
        sys.exit("no module provides %s on %s" % (args.op, dev.label))
    print("device %s (%s), op %s, modules %s, sheet %s, m=%d" % (dev.label, dev.name, args.op, mods, sheet, m))
    b = mb.Bench(dev, reps=reps, warmup=args.warmup, flush_l2=args.flush, sheet=sheet)
    rng = np.random.default_rng()
    for k, n in SHEETS[sheet]:
        a, wbytes, w_scale, grid = operands(args.op, n, k, rng)
        x = (rng.uniform(0.25, 4.0, (m, k)) * rng.choice([-1.0, 1.0], (m, k))).astype(np.float32)
        W = weight_for(rt, args.op, a)
        if gpu:
            xd = torch.from_numpy(x).cuda()
            wd = torch.from_numpy(wbytes).cuda()
            gd = torch.from_numpy(grid).cuda() if grid is not None else None
            yd = [torch.empty(m, n, device="cuda") for _ in mods]
            ym = torch.empty(m, n, device="cuda")
            wh = torch.from_numpy(a.astype(np.float16)).cuda()
            own = mb.python_arm("torch", lambda: torch.matmul(xd.half(), wh.t()), note="x.half() @ w.t()")
        else:
            xd, wd, gd = x, wbytes, grid
            yd = [np.empty((m, n), np.float32) for _ in mods]
            ym = np.empty((m, n), np.float32)
            wt = np.ascontiguousarray(a.T)
            own = mb.python_arm("numpy", lambda: np.matmul(x, wt), note="float32 x @ w.T")
        arms = [mb.module_arm(mod, dev, mod, args.op, gemm=dict(m=m, n=n, k=k, w=wd, w_scale=w_scale,
                                                                  w_scale_grid=gd, x=xd, y=yd[i]))
                for i, mod in enumerate(mods)]
        arms.append(mb.matmul_arm("matmul", W, xd, ym, expect=args.op))
        arms.append(mb.matmul_bound_arm("matmul_bound", W, xd, ym, expect=args.op))
        arms.append(own)
        b.case("%d->%d" % (k, n), k, n, m, arms)
        if gpu:
            torch.cuda.synchronize()
        W.close()
    print(b.table())
    rec = b.write(args.json)
    if args.json != "-":
        print("receipt:", os.path.abspath(args.json))
    if args.plot:
        rows = report.rows_of(rec, args.json if args.json != "-" else "race")
        for f in report.plot(rows, args.plot):
            print("figure:", f)
    rt.close()
    return 1 if rec["invalid_arms"] else 0


if __name__ == "__main__":
    sys.exit(main())
