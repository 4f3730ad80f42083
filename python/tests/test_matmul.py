"""Weights, the host-side encoders, memra.matmul and memra.module_call on the host
device, checked against numpy with the host module's exact-reference numerics.

Tolerances (derived from modules/host/host_gemm.c's contract):
- gemm_f16: memra forms S = the double sum of exact f16 x f16 products (in 8
  interleaved partial sums), then y = (float)(alpha * S). numpy's float64
  matmul of the same f16-rounded operands has its own order. Each double sum
  is within k * 2^-53 * sum|p| of the exact one, so the two doubles differ by
  at most 2 k 2^-53 alpha sum|p|; rounding each to f32 adds up to one f32 ulp
  (<= 2^-23 |ref|). Band: |got - ref| <= 2^-23 |ref| + 2 k 2^-53 alpha sum|x||w|.
  A wrong scale or one dropped 32-column block is off by 1e-2 relative or more.
- gemm_fp8 / gemm_fp8_blk: every e4m3 x e4m3 product is a multiple of 2^-18
  below 2^18, so each sum is EXACT in double whatever the order; the scales
  are applied in the same double operations: the result is bit-identical.
"""

import numpy as np
import pytest

import memra
from memra import blocks

EPS32 = 2.0 ** -23
U64 = 2.0 ** -53


def f16_band(xh, wh, alpha):
    k = xh.shape[1]
    mag = np.abs(xh.astype(np.float64)) @ np.abs(wh.astype(np.float64)).T
    return 2 * k * U64 * abs(alpha) * mag


def assert_band(got, ref, atol):
    err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    lim = EPS32 * np.abs(ref.astype(np.float64)) + atol
    bad = np.argwhere(err > lim)
    assert bad.size == 0, "first mismatches %s: got %s ref %s (max abs err %g)" % (
        bad[:10].tolist(), got[tuple(bad[0])], ref[tuple(bad[0])], err.max())


def ref_f16(x, w_f16_values, alpha=1.0):
    xh = x.astype(np.float16)
    return (alpha * (xh.astype(np.float64) @ w_f16_values.astype(np.float64).T)).astype(np.float32), xh


def ref_fp8_blk(x, wdec, grid):
    """gemm_fp8_blk's exact result: x quantised to e4m3 per row and 128 columns (amax/448),
    times the decoded e4m3 weight codes wdec [n x k] (float64), scaled by the block-128 grid."""
    m, k = x.shape
    n = wdec.shape[0]
    T = np.zeros((m, n))
    for b in range(-(-k // 128)):
        xb = x[:, b * 128:(b + 1) * 128]
        s = np.abs(xb).max(axis=1).astype(np.float32) / np.float32(448.0)
        q = blocks.e4m3_decode(blocks.e4m3_encode(xb / s[:, None])).astype(np.float64)
        B = q @ wdec[:, b * 128:(b + 1) * 128].T
        scale = s.astype(np.float64)[:, None] * np.repeat(grid[:, b].astype(np.float64), 128)[None, :n]
        T += scale * B
    return T.astype(np.float32)


def rand(rng, *shape, lo=0.25, hi=4.0):
    """Magnitudes in [lo, hi], random signs: never zero, a 16x spread (as tools/tool_util.c)."""
    v = rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)
    return v.astype(np.float32)


# ---- the encoders agree with memra's C encoders -----------------------------------------

def test_e4m3_encode_matches_c(rng):
    lib = memra._core.lib
    edge = [0.0, -0.0, 2.0 ** -10, 3 * 2.0 ** -11, 2.0 ** -9, 448.0, -448.0, 464.0, 500.0, 1e30, np.inf, -np.inf,
            np.nan, 0.0068359375, 1.0 + 1 / 16, 1.0 + 3 / 16, 240.0, 248.0]
    mids = (blocks.e4m3_values()[:-1] + blocks.e4m3_values()[1:]) / 2  # every tie
    x = np.concatenate([np.array(edge), mids, -mids, rng.standard_normal(3000) * 40,
                        rng.uniform(-2 ** -6, 2 ** -6, 1000)]).astype(np.float32)
    got = blocks.e4m3_encode(x)
    want = np.array([lib.memra_e4m3_encode(float(v)) for v in x], dtype=np.uint8)
    assert np.array_equal(got, want), np.argwhere(got != want)[:10]
    codes = np.arange(256, dtype=np.uint8)
    dec = blocks.e4m3_decode(codes)
    want_dec = np.array([lib.memra_e4m3_decode(int(c)) for c in codes], dtype=np.float32)
    assert np.array_equal(dec, want_dec, equal_nan=True)


def test_q8_0_encode_and_decode(rng):
    a = rand(rng, 4, 96)
    q = blocks.q8_0_encode(a)
    assert q.shape == (4, 3 * 34)
    back = blocks.decode_rows("q8_0", q.tobytes(), 4, 96)
    # step d = amax/127 stored as f16 (relative error <= 2^-11): a value is off by at most
    # half a step plus |q| <= 127 times the step's own rounding
    d = np.abs(a.reshape(4, 3, 32)).max(axis=2) / 127
    err = np.abs(back - a).reshape(4, 3, 32)
    assert np.all(err <= d[..., None] * (0.5 + 127 * 2.0 ** -11) * (1 + 1e-6))
    assert np.all(err.max(axis=2) > 0)  # it is a quantiser, not a copy
    assert blocks.row_bytes("q8_0", 96) == 102
    with pytest.raises(memra.InvalidArgumentError):
        blocks.q8_0_encode(a[:, :40])
    with pytest.raises(memra.InvalidArgumentError):
        blocks.decode_rows("q8_0", q.tobytes()[:-1], 4, 96)


# ---- weights -------------------------------------------------------------------------------

def test_weight_constructors_and_state(rt, rng):
    a = rand(rng, 64, 256, lo=0.01, hi=0.5)
    for fmt, kw in [("f32", {}), ("f16", {}), ("q8_0", {}), ("e4m3", {}), ("e4m3", {"block_scales": True})]:
        w = memra.Weight.from_array(rt, a, fmt, name="w_" + fmt, **kw)
        assert w.format == fmt and w.shape == (64, 256) and w.out_f == 64 and w.in_f == 256
        assert fmt in repr(w)
        st = w.state(rt.host)
        assert not st.prepared and w.operands(rt.host) == []
        w.prepare(rt.host).prepare(rt.host)  # idempotent
        assert w.state(rt.host).prepared and "raw" in w.operands(rt.host) or w.operands(rt.host)
        if kw:
            assert len(w.grid) == 1 * 2 and all(g > 0 for g in w.grid)
        w.close()
    wb = memra.Weight(rt, blocks.q8_0_encode(a).tobytes(), "q8_0", (64, 256))
    assert wb.format == "q8_0"
    w16 = memra.Weight.from_array(rt, a.astype(np.float16))
    assert w16.format == "f16"


@pytest.mark.parametrize("args, needle", [
    (lambda a: (a.tobytes()[:-4], "f32", (8, 32)), "bytes given"),
    (lambda a: (a.tobytes(), "f32", (8, 31)), ""),
    (lambda a: (a.tobytes(), "q9_9", (8, 32)), "no format named"),
    (lambda a: (a.tobytes(), "f32", (8,)), "shape is (out_f, in_f)"),
    (lambda a: (12345, "f32", (8, 32)), "bytes-like"),
])
def test_weight_bad_input(rt, rng, args, needle):
    a = rand(rng, 8, 32)
    with pytest.raises(memra.InvalidArgumentError) as e:
        memra.Weight(rt, *args(a))
    assert needle in str(e.value)


def test_weight_bad_scales(rt):
    codes = np.full((128, 128), 0x38, np.uint8)
    with pytest.raises(memra.InvalidArgumentError) as e:
        memra.Weight(rt, codes, "e4m3", (128, 128), scale=float("nan"))
    assert "scale" in e.value.detail
    with pytest.raises(memra.InvalidArgumentError) as e:
        memra.Weight(rt, codes, "e4m3", (128, 128), grid=[1.0, 1.0])
    assert "grid" in e.value.detail
    with pytest.raises(memra.InvalidArgumentError):
        memra.Weight.from_array(rt, np.ones((4, 4, 4), np.float32))
    with pytest.raises(memra.InvalidArgumentError):
        memra.Weight.from_array(rt, np.ones((4, 32), np.int32), "f32")
    with pytest.raises(memra.InvalidArgumentError):
        memra.Weight.from_array(rt, np.ones((4, 32), np.uint8), "q8_0")
    with pytest.raises(memra.InvalidArgumentError):
        memra.Weight.from_array(rt, np.full((4, 32), np.inf, np.float32), "e4m3")
    with pytest.raises(memra.InvalidArgumentError):
        memra.Weight("not a runtime", b"", "f32", (1, 1))


# ---- matmul against numpy --------------------------------------------------------------------

@pytest.mark.parametrize("m, k, n", [(1, 32, 16), (5, 256, 96), (17, 512, 40)])
def test_matmul_f32_weight(rt, rng, m, k, n):
    w = rand(rng, n, k, lo=0.01, hi=0.5)
    x = rand(rng, m, k)
    W = memra.Weight.from_array(rt, w)
    y = memra.matmul(W, x)
    assert y.shape == (m, n) and y.dtype == np.float32
    wh = w.astype(np.float16)  # F32 weights are served through an f16 mirror made at prepare
    ref, xh = ref_f16(x, wh)
    assert_band(y, ref, f16_band(xh, wh, 1.0))
    assert rt.ledger().hits("gemm_f16", "host") == 1
    # the band is tight enough to fail: a wrong alpha or a dropped 32-column block
    wrong = ref_f16(np.concatenate([x[:, :-32], np.zeros((m, 32), np.float32)], axis=1), wh)[0]
    assert np.any(np.abs(y - wrong) > EPS32 * np.abs(wrong) + f16_band(xh, wh, 1.0))


def test_matmul_forms(rt, rng):
    n, k = 48, 128
    w = rand(rng, n, k, lo=0.01, hi=0.5)
    W = memra.Weight.from_array(rt, w.astype(np.float16))
    wh = w.astype(np.float16)
    x = rand(rng, 2, 3, k)  # any leading shape
    y = memra.matmul(W, x, alpha=2.5)
    ref, xh = ref_f16(x.reshape(6, k), wh, 2.5)
    assert y.shape == (2, 3, n)
    assert_band(y.reshape(6, n), ref, f16_band(xh, wh, 2.5))
    # f16 activations are taken as pre-converted
    y16 = memra.matmul(W, x.reshape(6, k).astype(np.float16))
    assert_band(y16, ref_f16(x.reshape(6, k), wh)[0], f16_band(xh, wh, 1.0))
    # into a given output, and at a row offset into a wider matrix (row stride > out_f)
    out = np.full((6, n), np.nan, np.float32)
    assert memra.matmul(W, x.reshape(6, k), out=out) is out
    assert_band(out, ref_f16(x.reshape(6, k), wh)[0], f16_band(xh, wh, 1.0))
    big = np.full((10, n + 16), -7.0, np.float32)
    view = big[:, :n]
    memra.matmul(W, x.reshape(6, k), out=view, row_offset=3)
    assert_band(big[3:9, :n], ref_f16(x.reshape(6, k), wh)[0], f16_band(xh, wh, 1.0))
    assert np.all(big[:3] == -7.0) and np.all(big[9:] == -7.0) and np.all(big[:, n:] == -7.0)


def test_matmul_e4m3_bit_identical(rt, rng):
    m, k, n = 7, 256, 40
    w = rand(rng, n, k, lo=0.01, hi=0.5)
    x = rand(rng, m, k)
    W = memra.Weight.from_array(rt, w, "e4m3")
    y = memra.matmul(W, x, alpha=0.75)
    assert rt.ledger().hits("gemm_fp8", "host") == 1
    wcodes = blocks.e4m3_encode(w / np.float32(W.scale))
    amax = np.float32(np.abs(x).max())
    sx = amax / np.float32(448.0)
    q = blocks.e4m3_decode(blocks.e4m3_encode(x / sx)).astype(np.float64)
    S = q @ blocks.e4m3_decode(wcodes).astype(np.float64).T  # exact (see the module docstring)
    ref = (((0.75 * float(np.float32(W.scale))) * float(sx)) * S).astype(np.float32)
    assert np.array_equal(y, ref), np.abs(y - ref).max()


def test_matmul_e4m3_block128_bit_identical(rt, rng):
    m, k, n = 3, 320, 136  # short last blocks both ways
    w = rand(rng, n, k, lo=0.01, hi=0.5)
    x = rand(rng, m, k)
    W = memra.Weight.from_array(rt, w, "e4m3", block_scales=True)
    y = memra.matmul(W, x)
    assert rt.ledger().hits("gemm_fp8_blk", "host") == 1
    grid = np.array(W.grid, np.float32).reshape(2, 3)
    wdec = np.empty((n, k), np.float64)
    for i in range(2):
        for j in range(3):
            blk = w[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
            wdec[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = blocks.e4m3_decode(blocks.e4m3_encode(blk / grid[i, j]))
    ref = ref_fp8_blk(x, wdec, grid)
    assert np.array_equal(y, ref), np.abs(y - ref).max()


def test_matmul_q8_0(rt, rng):
    m, k, n = 4, 256, 32
    w = rand(rng, n, k, lo=0.01, hi=0.5)
    x = rand(rng, m, k)
    W = memra.Weight.from_array(rt, w, "q8_0")
    y = memra.matmul(W, x)
    wdec = blocks.decode_rows("q8_0", blocks.q8_0_encode(w).tobytes(), n, k)
    led = rt.ledger()
    assert led.hits("gemm_f16", "host") == 1 and "f16_mirror" in W.operands(rt.host)
    wh = wdec.astype(np.float16)  # the mirror: GGML's decode, then f16 RNE
    ref, xh = ref_f16(x, wh)
    assert_band(y, ref, f16_band(xh, wh, 1.0))


@pytest.mark.parametrize("bad, needle", [
    (lambda W, x: memra.matmul(W, x.astype(np.float64)), "float32"),
    (lambda W, x: memra.matmul(W, x[:, :-1]), "in_f"),
    (lambda W, x: memra.matmul(W, np.asfortranarray(x)), "C-contiguous"),
    (lambda W, x: memra.matmul(W, x, alpha=0), "alpha"),
    (lambda W, x: memra.matmul(W, x, out=np.zeros((4, 32), np.float64)), "float32"),
    (lambda W, x: memra.matmul(W, x, out=np.zeros((4, 31), np.float32)), "out"),
    (lambda W, x: memra.matmul(W, x, out=np.zeros((5, 32), np.float32), row_offset=2), "do not fit"),
    (lambda W, x: memra.matmul(W, x, row_offset=1), "row_offset"),
    (lambda W, x: memra.matmul("w", x), "memra.Weight"),
    (lambda W, x: memra.matmul(W, [[1.0] * 64]), "numpy array"),
    (lambda W, x: memra.matmul(W, np.zeros((0, 64), np.float32)), "rows"),
    (lambda W, x: memra.matmul(W, x, stream="s"), "stream"),
])
def test_matmul_bad_input(rt, rng, bad, needle):
    W = memra.Weight.from_array(rt, rand(rng, 32, 64))
    x = rand(rng, 4, 64)
    with pytest.raises(memra.InvalidArgumentError) as e:
        bad(W, x)
    assert needle in str(e.value)
    assert rt.ledger().hits() == 0  # nothing reached a lane


# ---- module_call ---------------------------------------------------------------------------------

def test_module_call_gemm_f16_equals_matmul(rt, rng):
    m, k, n = 6, 128, 24
    wh = rand(rng, n, k, lo=0.01, hi=0.5).astype(np.float16)
    x = rand(rng, m, k)
    y = np.zeros((m, n), np.float32)
    memra.module_call(rt.host, "host", "gemm_f16", gemm=dict(m=m, n=n, k=k, w=wh, x=x, y=y))
    y2 = memra.matmul(memra.Weight.from_array(rt, wh), x)
    assert np.array_equal(y, y2)  # the same host code on the same operands
    assert rt.ledger().hits("gemm_f16", "host") == 2


def test_module_call_other_ops(rt, rng):
    x = rand(rng, 1000)
    h = np.zeros(1000, np.float16)
    memra.module_call(rt.host, "host", "cvt_f16", src=x, dst=h, n=1000)
    assert np.array_equal(h.view(np.uint16), x.astype(np.float16).view(np.uint16))
    buf = rt.host.buffer(4000)
    buf.write(x)
    memra.module_call(rt.host, "host", "scale", src=buf, n=1000, s=0.5)
    assert np.array_equal(np.frombuffer(buf.read(), np.float32), x * np.float32(0.5))
    with pytest.raises(memra.NotFoundError):
        memra.module_call(rt.host, "nosuch", "scale", src=buf, n=10, s=1.0)
    with pytest.raises(memra.InvalidArgumentError):
        memra.module_call(rt.host, "host", "scale", srcx=buf)
    with pytest.raises(memra.InvalidArgumentError):
        memra.module_call(rt.host, "host", "gemm_f16", gemm=dict(mm=1))
    with pytest.raises(memra.InvalidArgumentError):
        memra.module_call("host", "host", "scale")


def test_module_call_decline_and_race(testmods, rng):
    with memra.Runtime(no_cuda=True, module_path=testmods, no_default_modules=True) as rt:
        x = rand(rng, 8)
        with pytest.raises(memra.DeclinedError) as e:
            memra.module_call(rt.host, "testdecline", "scale", src=x.copy(), n=7, s=2.0)
        assert e.value.reason == "odd length" and e.value.status == 1
        (c,) = rt.ledger().select(op="scale", module="testdecline")
        assert c.declines == {"odd length": 1} and c.hits == 0
        results = {}
        for mod in ("host", "testgood", "testdecline"):
            v = x.copy()
            memra.module_call(rt.host, mod, "scale", src=v, n=8, s=2.0)
            results[mod] = v
        assert np.array_equal(results["host"], x * np.float32(2.0))
        assert rt.ledger().hits("scale", "testgood") == 1


def test_cuda_array_interface_is_read_and_checked(rt, rng):
    """An object with __cuda_array_interface__ is read as device memory: on the host device it is refused."""
    x = rand(rng, 4, 64)

    class Fake:
        __cuda_array_interface__ = {"shape": (4, 64), "typestr": "<f4", "data": (x.ctypes.data, False),
                                    "version": 3, "strides": None}

    from memra._arrays import view
    v = view(Fake())
    assert (v.where, v.dtype, v.shape, v.strides, v.ptr) == ("cuda", "float32", (4, 64), (64, 1), x.ctypes.data)
    W = memra.Weight.from_array(rt, rand(rng, 32, 64))
    with pytest.raises(memra.InvalidArgumentError) as e:
        memra.matmul(W, Fake(), device=rt.host)
    assert "cuda memory but the device is the host" in str(e.value)
    Fake.__cuda_array_interface__ = dict(Fake.__cuda_array_interface__, typestr="<c8")
    with pytest.raises(memra.InvalidArgumentError):
        view(Fake())


def test_matmul_e4m3_given_scales(rt, rng):
    """A static input_scale and a producer x_amax (memra_matmul_args.x_amax): one
    pass at the given scale, values above 448 s saturating, bit-identical to the
    contract; x_amax wins over input_scale; a wrong scale is not what ran."""
    m, k, n = 5, 256, 24
    w = rand(rng, n, k, lo=0.01, hi=0.5)
    x = rand(rng, m, k)
    codes = blocks.e4m3_encode(w / np.float32(0.01))
    wdec = blocks.e4m3_decode(codes).astype(np.float64)
    amax = np.float32(np.abs(x).max())
    xs = np.float32(amax / np.float32(448.0) * np.float32(0.6))
    W = memra.Weight(rt, codes.tobytes(), "e4m3", (n, k), scale=0.01, input_scale=float(xs))
    assert W.input_scale == float(xs)

    def ref(sx):
        q = blocks.e4m3_decode(blocks.e4m3_encode(x / sx)).astype(np.float64)
        return ((float(np.float32(0.01)) * float(sx)) * (q @ wdec.T)).astype(np.float32)

    y = memra.matmul(W, x)
    assert np.any(np.abs(x) > np.float32(448.0) * xs)  # some values saturate
    assert np.array_equal(y, ref(xs)), np.abs(y - ref(xs)).max()
    assert not np.array_equal(y, ref(amax / np.float32(448.0)))
    given = np.array([amax * np.float32(0.8)], np.float32)
    y2 = memra.matmul(W, x, x_amax=given)
    sx = given[0] / np.float32(448.0)
    assert np.array_equal(y2, ref(sx)), np.abs(y2 - ref(sx)).max()
    with pytest.raises(memra.InvalidArgumentError):
        memra.Weight(rt, codes.tobytes(), "e4m3", (n, k), scale=0.01, input_scale=-1.0)


@pytest.fixture
def rt_w16():
    with memra.Runtime(no_cuda=True, settings={"MEMRA_W16": "auto"}) as r:
        yield r


def test_runtime_settings():
    """Runtime(settings=...) sets knobs by name over the environment; a bad one fails open naming it."""
    with memra.Runtime(no_cuda=True, settings=["MEMRA_F16_BUDGET_MB=0"]) as r:
        assert r.host.f16_budget_mb == 0
    with memra.Runtime(no_cuda=True, settings={"MEMRA_F16_BUDGET_MB": 7}, ignore_environment=True) as r:
        assert r.host.f16_budget_mb == 7
    with pytest.raises(memra.InvalidArgumentError) as e:
        memra.Runtime(no_cuda=True, settings={"MEMRA_W16": "sometimes"})
    assert "MEMRA_W16" in str(e.value)
    for bad in ({"": "1"}, ["MEMRA_W16"], "MEMRA_W16=1", [3]):
        with pytest.raises(memra.InvalidArgumentError):
            memra.Runtime(no_cuda=True, settings=bad)


def test_device_policy_and_plan(rt_w16, rng):
    """Device.f16_budget_mb / set_w16 / set_floor_f16_m and Weight.plan on the host (MEMRA_W16=auto: the lane
    loaded, the host's switch its own): the plan follows the budget and the W16 switch for weights prepared
    afterwards; the W16 operand's result is the f16 mirror's bit for bit (the host's gemm_w16 decodes the
    operand to the mirror, then gemm_f16)."""
    rt = rt_w16
    dev = rt.host
    m, k, n = 5, 256, 24
    w = rand(rng, n, k, lo=0.01, hi=0.5)
    x = rand(rng, m, k)
    budget = dev.f16_budget_mb
    try:
        W0 = memra.Weight.from_array(rt, w, "q8_0")
        p0 = W0.plan(dev)
        assert p0.lane == "f16 mirror" and ("gemm_f16", "host") in p0.steps and p0.operand_bytes > 0, p0
        y0 = memra.matmul(W0, x)
        dev.f16_budget_mb = 0
        assert dev.f16_budget_mb == 0
        W1 = memra.Weight.from_array(rt, w, "q8_0")
        p1 = W1.plan(dev)
        assert p1.lane == "mmq records" and ("gemm_q8_0r", "host") in p1.steps and "budget" in p1.why, p1
        dev.set_w16(True)
        W2 = memra.Weight.from_array(rt, w, "q8_0")
        p2 = W2.plan(dev)
        assert p2.lane == "w16" and p2.steps[-1] == ("gemm_w16", "host"), p2
        y2 = memra.matmul(W2, x)
        assert "w16" in W2.operands(dev) and "q8_0_records" not in W2.operands(dev)
        assert np.array_equal(y2.view(np.uint32), y0.view(np.uint32))
        assert rt.ledger().hits("gemm_w16", "host") >= 1
        dev.set_w16(None)  # back to MEMRA_W16's rule: auto keeps the host on its floor
        assert memra.Weight.from_array(rt, w, "q8_0").plan(dev).lane == "mmq records"
        assert W2.plan(dev).lane == "w16"  # a prepared weight keeps what its prepare built
        for v in (0, 512, "auto", None):
            dev.set_floor_f16_m(v)
        for call, arg in ((lambda v: setattr(dev, "f16_budget_mb", v), -1), (dev.set_w16, 2),
                          (dev.set_floor_f16_m, "never"), (dev.set_floor_f16_m, -3)):
            with pytest.raises(memra.InvalidArgumentError):
                call(arg)
    finally:
        dev.set_w16(None)
        dev.set_floor_f16_m(None)
        dev.f16_budget_mb = budget
