"""memra on torch CUDA tensors (device 0 of torch's current device), skipped without torch + CUDA.

Bands (docs/ARCHITECTURE.md, measured by `memra check` on the H200): each GPU
result is compared with the host module's exact reference on the same weight
and the same activations, as a relative Frobenius error: gemm_f16 <= 2e-5
(f16 products are exact; only the summation order and the tensor cores'
accumulator differ), gemm_fp8 and gemm_fp8_blk <= 5e-4 (Hopper's FP8 MMA keeps
fewer accumulator bits). A wrong scale or a dropped 128-block is off by 1e-3
or more.
"""

import numpy as np
import pytest

import memra
import memra.bench as mb

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch has no CUDA device", allow_module_level=True)

BANDS = {"f16": 2e-5, "q8_0": 2e-5, "e4m3": 5e-4, "e4m3_blk": 5e-4}


@pytest.fixture(scope="module")
def grt():
    rt = memra.Runtime()
    if rt.devices[0].is_host:
        rt.close()
        pytest.skip("memra sees no GPU: " + rt.driver_status)
    yield rt
    torch.cuda.synchronize()
    rt.close()


@pytest.fixture(scope="module")
def gdev(grt):
    return grt.device(torch.device("cuda", torch.cuda.current_device()))


def rel_fro(got, ref):
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def make(grt, fmt, n, k, seed):
    g = np.random.default_rng(seed)
    a = (g.uniform(0.01, 0.5, (n, k)) * g.choice([-1.0, 1.0], (n, k))).astype(np.float32)
    if fmt == "e4m3_blk":
        return memra.Weight.from_array(grt, a, "e4m3", block_scales=True)
    return memra.Weight.from_array(grt, a, fmt)


def xs(m, k, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = (torch.rand(m, k, generator=g) * 3.75 + 0.25) * (torch.randint(0, 2, (m, k), generator=g) * 2 - 1)
    return x.float()


@pytest.mark.parametrize("fmt", ["f16", "q8_0", "e4m3", "e4m3_blk"])
@pytest.mark.parametrize("m", [1, 64, 512])
def test_matmul_torch_against_host(grt, gdev, fmt, m):
    n, k = 1024, 2048
    W = make(grt, fmt, n, k, seed=m * 7 + len(fmt))
    x = xs(m, k, seed=m)
    before = grt.ledger()
    y = memra.matmul(W, x.cuda())
    assert y.is_cuda and y.dtype == torch.float32 and tuple(y.shape) == (m, n)
    torch.cuda.synchronize()
    ref = memra.matmul(W, x.numpy())  # the host module: the exact reference
    err = rel_fro(y.cpu().numpy(), ref)
    assert err <= BANDS[fmt], "%s m=%d: rel Frobenius %.3g > %.3g" % (fmt, m, err, BANDS[fmt])
    after = grt.ledger()
    gpu_hits = sum(e.hits for e in after if e.device == gdev.label) - sum(e.hits for e in before
                                                                         if e.device == gdev.label)
    assert gpu_hits >= 1  # a GPU module served it, by the ledger


@pytest.mark.parametrize("fmt", ["e4m3", "e4m3_blk"])
def test_matmul_producer_amax_torch(grt, gdev, fmt):
    """x_amax from a torch kernel on the same stream (the producer's maxima:
    one value, or [ceil(k/128) x m] row fastest, at 80%: the top values
    saturate), against the host module with the same maxima."""
    m, n, k = 64, 512, 1024
    W = make(grt, fmt, n, k, seed=11 + len(fmt))
    x = xs(m, k, seed=5).cuda()
    if fmt == "e4m3":
        amax = (x.abs().max() * 0.8).reshape(1).contiguous()
    else:
        amax = (x.abs().reshape(m, k // 128, 128).amax(dim=2) * 0.8).t().contiguous()  # [k/128 x m]
    y = memra.matmul(W, x, x_amax=amax)
    torch.cuda.synchronize()
    ref = memra.matmul(W, x.cpu().numpy(), x_amax=amax.cpu().numpy())
    err = rel_fro(y.cpu().numpy(), ref)
    assert err <= BANDS[fmt], "%s x_amax: rel Frobenius %.3g > %.3g" % (fmt, err, BANDS[fmt])
    own = memra.matmul(W, x.cpu().numpy())  # the own amax pass differs where the 80% maxima saturate
    assert rel_fro(own, ref) > BANDS[fmt]


def test_streams(grt, gdev):
    n, k, m = 512, 1024, 32
    W = make(grt, "f16", n, k, 3)
    x = xs(m, k, 4)
    ref = memra.matmul(W, x.numpy())
    xg = x.cuda()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # the default: torch's current stream
        y1 = memra.matmul(W, xg)
    y2 = torch.empty(m, n, device="cuda")
    memra.matmul(W, xg, out=y2, stream=s)  # explicit, a torch.cuda.Stream
    y3 = torch.empty(m, n, device="cuda")
    memra.matmul(W, xg, out=y3, stream=s.cuda_stream)  # explicit, a CUstream
    s.synchronize()
    for y in (y1, y2, y3):
        assert rel_fro(y.cpu().numpy(), ref) <= BANDS["f16"]


def test_out_and_row_offset(grt, gdev):
    n, k, m = 256, 512, 16
    W = make(grt, "f16", n, k, 5)
    x = xs(m, k, 6)
    ref = memra.matmul(W, x.numpy())
    big = torch.full((40, n + 64), -3.0, device="cuda")
    memra.matmul(W, x.cuda(), out=big[:, :n], row_offset=10)
    torch.cuda.synchronize()
    b = big.cpu().numpy()
    assert rel_fro(b[10:26, :n], ref) <= BANDS["f16"]
    assert np.all(b[:10] == -3.0) and np.all(b[26:] == -3.0) and np.all(b[:, n:] == -3.0)


def test_bad_tensors(grt, gdev):
    W = make(grt, "f16", 64, 128, 7)
    xg = xs(4, 128, 8).cuda()
    for bad, needle in [
        (lambda: memra.matmul(W, xg.double()), "float32"),
        (lambda: memra.matmul(W, xs(128, 4, 1).cuda().t()), "C-contiguous"),
        (lambda: memra.matmul(W, xg.cpu(), device=gdev), "host memory"),
        (lambda: memra.matmul(W, xg.cpu().numpy(), device=gdev), "host memory"),
        (lambda: memra.matmul(W, xg, device="host"), "cuda memory"),
        (lambda: memra.matmul(W, xg, out=torch.empty(4, 64, device="cuda", dtype=torch.float16)), "float32"),
        (lambda: memra.matmul(W, xg, out=torch.empty(4, 64)), "host memory"),
    ]:
        with pytest.raises(memra.InvalidArgumentError) as e:
            bad()
        assert needle in str(e.value)


@pytest.mark.parametrize("fmt", ["f16", "e4m3"])
def test_cuda_graph_captured_from_torch(grt, gdev, fmt):
    n, k, m = 1024, 2048, 128
    W = make(grt, fmt, n, k, 9)
    W.prepare(gdev)
    x = xs(m, k, 10).cuda()
    y = torch.empty(m, n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    # nothing is allocated during a capture: the capture stream's scratch is reserved
    # (memra_stream_reserve) and warmed before it begins
    gdev.stream_reserve(side, [W], m)
    with torch.cuda.stream(side):  # warm-up: plans before capture
        for _ in range(2):
            memra.matmul(W, x, out=y)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=side):  # memra enqueues on the (reserved) capture stream
        memra.matmul(W, x, out=y)
    for seed in (11, 12):
        xn = xs(m, k, seed)
        x.copy_(xn.cuda())
        y.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        ref = memra.matmul(W, xn.numpy())
        assert rel_fro(y.cpu().numpy(), ref) <= BANDS[fmt]


def test_bench_on_gpu_races_modules_and_torch(grt, gdev, tmp_path):
    n, k, m = 1024, 2048, 256
    g = np.random.default_rng(13)
    wh = torch.from_numpy(g.uniform(-0.5, 0.5, (n, k)).astype(np.float16)).cuda()
    x = xs(m, k, 14).cuda()
    y = torch.empty(m, n, device="cuda")
    mods = [mname for mname in gdev.routing("gemm_f16")][:2]
    assert mods, "no GPU module serves gemm_f16"
    arms = [mb.module_arm(mod, gdev, mod, "gemm_f16", gemm=dict(m=m, n=n, k=k, w=wh, x=x, y=y)) for mod in mods]
    arms.append(mb.python_arm("torch", lambda: torch.matmul(x.half(), wh.t())))
    b = mb.Bench(gdev, reps=5, warmup=2, flush_l2=True)
    e = b.case("%d->%d" % (k, n), k, n, m, arms)
    torch.cuda.synchronize()
    assert all(a["valid"] for a in e["arms"]) and all(a["median_ms"] > 0 for a in e["arms"])
    r = b.write(str(tmp_path / "gpu.json"))
    assert r["clocks"]["timer"] == "cuda-events" and r["device"]["cc"] == gdev.cc


def test_cuda_array_interface_cupy(grt, gdev):
    """Any __cuda_array_interface__ object (CuPy here) on the legacy default stream; out= must be given."""
    cp = pytest.importorskip("cupy")
    n, k, m = 512, 1024, 8
    W = make(grt, "f16", n, k, 15)
    x = xs(m, k, 16).numpy()
    with cp.cuda.Device(gdev.ordinal):
        xd = cp.asarray(x)
        yd = cp.empty((m, n), dtype=cp.float32)
        memra.matmul(W, xd, out=yd, device=gdev)
        got = cp.asnumpy(yd)
        with pytest.raises(memra.InvalidArgumentError):
            memra.matmul(W, xd, device=gdev)  # memra allocates numpy and torch outputs only
    assert rel_fro(got, memra.matmul(W, x)) <= BANDS["f16"]


def test_torch_op_on_cuda_compile_and_graph(grt, gdev):
    """torch.ops.memra.matmul on CUDA tensors: equals memra.matmul, traces under
    torch.compile(fullgraph=True) (inductor), and is captured into a CUDA graph on
    torch's current stream."""
    import memra.torch_op as mt
    n, k, m = 512, 1024, 64
    W = make(grt, "q8_0", n, k, 21)
    W.prepare(gdev)
    lin = mt.Linear(W)
    x = xs(m, k, 22).cuda()
    ref = memra.matmul(W, x).cpu().numpy()
    assert rel_fro(torch.ops.memra.matmul(x, lin.wid, n).cpu().numpy(), ref) == 0.0
    assert rel_fro(mt.matmul(W, x).cpu().numpy(), ref) == 0.0

    def f(t):
        return lin(t) * 2.0

    g = torch.compile(f, fullgraph=True)
    assert rel_fro((g(x) / 2.0).cpu().numpy(), ref) <= 1e-6
    # a CUDA graph of the op on a reserved side stream (torch's current stream inside the capture)
    y = torch.empty(m, n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    gdev.stream_reserve(side, [W], m)
    with torch.cuda.stream(side):
        for _ in range(2):
            torch.ops.memra.matmul_out(x, lin.wid, y, 1.0)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    cg = torch.cuda.CUDAGraph()
    with torch.cuda.graph(cg, stream=side):
        torch.ops.memra.matmul_out(x, lin.wid, y, 1.0)
    xn = xs(m, k, 23)
    x.copy_(xn.cuda())
    y.fill_(float("nan"))
    cg.replay()
    torch.cuda.synchronize()
    assert rel_fro(y.cpu().numpy(), memra.matmul(W, xn.numpy())) <= BANDS["q8_0"]


@pytest.mark.parametrize("fmt,w16", [("q8_0", "0"), ("q8_0", "1"), ("e4m3_blk", "0")])
def test_matmul_experts_torch_against_host(monkeypatch, fmt, w16):
    """memra.matmul_experts on torch CUDA tensors (x, ids, out) against the host module's grouped
    call on the same weight (the exact reference of the same lane: MEMRA_F16_BUDGET_MB=0 keeps the
    host's Q8_0 experts off the f16 mirror, as the GPU's; MEMRA_W16=0 puts both on the integer floor,
    1 both on the W16 operand, where the GPU routes gemm_w16), in the dense lane's band over the routed
    rows; the skipped rows keep the sentinel; the GPU served gemm_experts, by the ledger."""
    monkeypatch.setenv("MEMRA_F16_BUDGET_MB", "0")
    monkeypatch.setenv("MEMRA_W16", w16)
    rt = memra.Runtime()
    try:
        if rt.devices[0].is_host:
            pytest.skip("memra sees no GPU: " + rt.driver_status)
        dev = rt.device(torch.device("cuda", torch.cuda.current_device()))
        E, n, k, rows, sent = 8, 256, 512, 300, 1234.5
        g = np.random.default_rng(11 + len(fmt))
        a = (g.uniform(0.01, 0.5, (E, n, k)) * g.choice([-1.0, 1.0], (E, n, k))).astype(np.float32)
        w = memra.Weight.experts_from_array(rt, a, "e4m3" if fmt == "e4m3_blk" else fmt,
                                            block_scales=fmt == "e4m3_blk")
        ids = np.full(rows, 2, dtype=np.int32)
        ids[:40] = g.integers(3, E, 40)
        ids[40], ids[41], ids[42] = 1, -1, E  # expert 1 one row, two rows skipped, expert 0 none
        ids = ids[g.permutation(rows)]
        x = xs(rows, k, seed=5)
        y = torch.full((rows, n), sent, dtype=torch.float32, device="cuda")
        before = rt.ledger().hits(op="gemm_experts", device=dev.label)
        w16_before = rt.ledger().hits(op="gemm_experts", module="w16", device=dev.label)
        memra.matmul_experts(w, x.cuda(), torch.from_numpy(ids).cuda(), out=y)
        torch.cuda.synchronize()
        if w16 == "1" and rt.ledger().hits(op="gemm_experts", module="w16", device=dev.label) == w16_before:
            pytest.skip("the GPU does not route gemm_w16 (the w16 module serves cc 9.0)")
        got = y.cpu().numpy()
        ref = np.full((rows, n), sent, dtype=np.float32)
        memra.matmul_experts(w, x.numpy(), ids, out=ref, device=rt.host)
        routed = (ids >= 0) & (ids < E)
        assert np.all(got[~routed] == sent)
        err = rel_fro(got[routed], ref[routed])
        assert err <= BANDS[fmt], "%s experts: rel Frobenius %.3g > %.3g" % (fmt, err, BANDS[fmt])
        assert rt.ledger().hits(op="gemm_experts", device=dev.label) > before
    finally:
        torch.cuda.synchronize()
        rt.close()
