"""torch.ops.memra.matmul / matmul_out on CPU tensors (the host device): the kernel equals
memra.matmul bit for bit, the fake implementation gives shapes without running, and
torch.compile(fullgraph=True) traces the op. Skipped without torch (CI has none; the
CUDA side, CUDA graphs and inductor are in test_gpu.py)."""

import numpy as np
import pytest

import memra

torch = pytest.importorskip("torch")
import memra.torch_op as mt  # noqa: E402  (registers the ops)


@pytest.fixture
def lin(rt, rng):
    a = rng.uniform(-0.5, 0.5, (48, 64)).astype(np.float32)
    w = memra.Weight.from_array(rt, a, "q8_0")
    w.prepare(rt.host)
    return w


def test_ops_are_registered():
    assert mt.registered()
    assert "memra::matmul" in str(torch.ops.memra.matmul.default._schema)
    assert "Tensor(a!) out" in str(torch.ops.memra.matmul_out.default._schema)


def test_cpu_kernel_equals_matmul(lin, rng):
    x = torch.from_numpy(rng.uniform(-2, 2, (5, 64)).astype(np.float32))
    ref = memra.matmul(lin, x.numpy())
    y = torch.ops.memra.matmul(x, mt.weight_id(lin), lin.out_f)
    assert y.shape == (5, 48) and y.dtype == torch.float32
    assert np.array_equal(y.numpy(), ref)
    out = torch.full((5, 48), float("nan"))
    torch.ops.memra.matmul_out(x, mt.weight_id(lin), out, 2.0)
    assert np.allclose(out.numpy(), 2.0 * ref, rtol=1e-6, atol=0)
    # the eager fast path, a 3-D activation, a second call reusing the bound arguments
    x3 = x.reshape(1, 5, 64).contiguous()
    for _ in range(2):
        y3 = mt.matmul(lin, x3)
        assert y3.shape == (1, 5, 48) and np.array_equal(y3.reshape(5, 48).numpy(), ref)
    z = torch.empty(5, 48)
    assert mt.matmul(lin, x, out=z) is z and np.array_equal(z.numpy(), ref)


def test_bad_inputs_raise(lin):
    wid = mt.weight_id(lin)
    with pytest.raises(memra.InvalidArgumentError) as e:
        torch.ops.memra.matmul(torch.zeros(3, 63), wid, lin.out_f)
    assert "64" in str(e.value)
    with pytest.raises(memra.InvalidArgumentError):
        torch.ops.memra.matmul(torch.zeros(6, 64)[::2], wid, lin.out_f)  # not contiguous
    with pytest.raises(memra.InvalidArgumentError):
        torch.ops.memra.matmul(torch.zeros(3, 64), 12345, 48)  # no such weight
    with pytest.raises(memra.InvalidArgumentError):
        torch.ops.memra.matmul_out(torch.zeros(3, 64), wid, torch.zeros(2, 48))  # rows differ


def test_fake_implementation_gives_shapes(lin):
    from torch._subclasses.fake_tensor import FakeTensorMode
    wid = mt.weight_id(lin)
    with FakeTensorMode():
        x = torch.empty(7, 3, 64)
        y = torch.ops.memra.matmul(x, wid, lin.out_f)
        assert tuple(y.shape) == (7, 3, 48) and y.dtype == torch.float32
    x = torch.empty(2, 64, device="meta")
    assert tuple(torch.ops.memra.matmul(x, wid, lin.out_f).shape) == (2, 48)


def test_opcheck(lin, rng):
    opcheck = getattr(torch.library, "opcheck", None)
    if opcheck is None:
        pytest.skip("torch.library.opcheck needs torch 2.4")
    x = torch.from_numpy(rng.uniform(-2, 2, (4, 64)).astype(np.float32))
    wid = mt.weight_id(lin)
    opcheck(torch.ops.memra.matmul.default, (x, wid, lin.out_f, 1.0),
            test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_static"))
    opcheck(torch.ops.memra.matmul_out.default, (x, wid, torch.empty(4, 48), 1.0),
            test_utils=("test_schema", "test_faketensor"))


def test_compile_fullgraph_traces_the_op(lin, rng):
    x = torch.from_numpy(rng.uniform(-2, 2, (6, 64)).astype(np.float32))
    ref = memra.matmul(lin, x.numpy())
    mod = mt.Linear(lin)

    def f(t):
        return mod(t) * 2.0 + mt.matmul(lin, t)

    g = torch.compile(f, fullgraph=True, backend="aot_eager")
    got = g(x)
    assert np.allclose(got.numpy(), 3.0 * ref, rtol=1e-6, atol=1e-6)
    # and the graph holds the op (not a Python call dynamo stepped into)
    from torch._dynamo.testing import CompileCounter
    cnt = CompileCounter()
    torch._dynamo.reset()
    torch.compile(f, fullgraph=True, backend=cnt)(x)
    assert cnt.frame_count == 1 and cnt.op_count >= 3


def test_overhead_benchmark_dry_run(tmp_path):
    """bench/torch_op_overhead.py --host --stub: every arm agrees with the bound call (checked before
    the stub goes in), the compiled graph is checked, and the receipt is one the report reads (the
    figures themselves are the H200's to give)."""
    import json
    import os
    import subprocess
    import sys
    from conftest import REPO
    out = tmp_path / "tov.json"
    r = subprocess.run([sys.executable, os.path.join(REPO, "bench", "torch_op_overhead.py"), "--host", "--calls", "20",
                        "--batches", "3", "--n", "64", "--k", "64", "--stub", "--clock", "thread", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.load(open(out))
    c = d["torch_op"]["checks"]
    assert all(c[k] is True for k in c if k != "cuda_graph"), c
    assert {a["arm"] for a in d["shapes"][0]["arms"]} == {"bound", "fast", "op_out", "op", "op_noop", "matmul",
                                                           "torch_mm"}
    from memra import report
    rows = report.load(str(out))
    assert len(rows) == 7 and [x for x in rows if x["arm"] == "bound"][0]["ratio"] == 1.0


def test_a_destroyed_weight_is_not_called(rt, rng):
    """A weight destroyed after its arguments were bound: the next call names it instead of using stale sizes."""
    a = rng.uniform(-0.5, 0.5, (16, 64)).astype(np.float32)
    w = memra.Weight.from_array(rt, a, "f32")
    wid = mt.weight_id(w)
    x = torch.ones(2, 64)
    torch.ops.memra.matmul(x, wid, 16)
    w.close()
    with pytest.raises(memra.InvalidArgumentError) as e:
        torch.ops.memra.matmul(x, wid, 16)
    assert "no live memra.Weight" in str(e.value)


def test_a_kept_signature_still_checks_layout_and_liveness(lin, rng):
    """The second call of a signature takes the short path: it must still refuse a non-contiguous
    tensor of the same shape, a closed weight, and alpha = 0, and give the checked path's errors."""
    wid = mt.weight_id(lin)
    x = torch.from_numpy(rng.uniform(-2, 2, (3, 64)).astype(np.float32))
    ref = memra.matmul(lin, x.numpy())
    out = torch.empty(3, 48)
    for _ in range(2):  # the first call keeps the signature, the second uses it
        torch.ops.memra.matmul_out(x, wid, out)
        assert np.array_equal(out.numpy(), ref)
        assert np.array_equal(torch.ops.memra.matmul(x, wid, 48).numpy(), ref)
    xt = torch.zeros(64, 3).t()  # shape (3, 64) like x, not contiguous
    with pytest.raises(memra.InvalidArgumentError) as e:
        torch.ops.memra.matmul_out(xt, wid, out)
    assert "contiguous" in str(e.value)
    with pytest.raises(memra.InvalidArgumentError):
        torch.ops.memra.matmul(xt, wid, 48)
    with pytest.raises(memra.InvalidArgumentError):
        torch.ops.memra.matmul_out(x, wid, torch.empty(48, 3).t())  # out not contiguous
    with pytest.raises(memra.InvalidArgumentError) as e:
        torch.ops.memra.matmul_out(x, wid, out, 0.0)
    assert "alpha" in str(e.value)
    with pytest.raises(memra.InvalidArgumentError) as e:
        torch.ops.memra.matmul(x, wid, 47)  # out_f is the weight's
    assert "out_f" in str(e.value)
    with pytest.raises(memra.InvalidArgumentError) as e:
        torch.ops.memra.matmul_out(x, wid, torch.empty(3, 48, dtype=torch.float64))
    assert "float32" in str(e.value)
    with pytest.raises(memra.InvalidArgumentError):
        torch.ops.memra.matmul_out(x, wid, torch.empty(1, 3, 48))  # same elements, not x's rows
    lin.close()
    with pytest.raises(memra.InvalidArgumentError) as e:
        torch.ops.memra.matmul_out(x, wid, out)
    assert "no live memra.Weight" in str(e.value)
    with pytest.raises(memra.InvalidArgumentError):
        mt.matmul(lin, x, out=out)


def test_eager_path_takes_tensors_only_and_subclasses_through_the_op(lin, rng):
    x = rng.uniform(-2, 2, (2, 64)).astype(np.float32)
    ref = memra.matmul(lin, x)
    with pytest.raises(memra.InvalidArgumentError) as e:
        mt.matmul(lin, x)  # a numpy array: memra.matmul's job
    assert "x must be a torch tensor" in str(e.value)
    with pytest.raises(memra.InvalidArgumentError) as e:
        mt.matmul(lin, torch.from_numpy(x), out=np.empty((2, 48), np.float32))
    assert "out must be a torch tensor" in str(e.value)
    p = torch.nn.Parameter(torch.from_numpy(x), requires_grad=False)
    assert np.array_equal(mt.matmul(lin, p).numpy(), ref)
    y = torch.empty(2, 48)
    assert mt.matmul(lin, p, out=y) is y and np.array_equal(y.numpy(), ref)
    # float16 activations: their own signature, bit for bit memra.matmul's
    x16 = torch.from_numpy(x).half()
    ref16 = memra.matmul(lin, x16.numpy())
    for _ in range(2):
        assert np.array_equal(mt.matmul(lin, x16).numpy(), ref16)
        mt.matmul(lin, x16, out=y)
        assert np.array_equal(y.numpy(), ref16)


def test_two_weights_of_one_shape_keep_their_own_arguments(rt, rng):
    ws = [memra.Weight.from_array(rt, rng.uniform(-0.5, 0.5, (16, 32)).astype(np.float32), "f32") for _ in range(2)]
    x = torch.from_numpy(rng.uniform(-2, 2, (4, 32)).astype(np.float32))
    refs = [memra.matmul(w, x.numpy()) for w in ws]
    for _ in range(2):
        for w, ref in zip(ws, refs):
            assert np.array_equal(mt.matmul(w, x).numpy(), ref)
            assert np.array_equal(torch.ops.memra.matmul(x, mt.weight_id(w), 16).numpy(), ref)


def test_linear_eager_and_fx(lin, rng):
    """Linear: eager calls the kernel, an fx trace records the op (not a Python call into it)."""
    x = torch.from_numpy(rng.uniform(-2, 2, (3, 64)).astype(np.float32))
    ref = memra.matmul(lin, x.numpy())
    mod = mt.Linear(lin)
    for _ in range(2):
        assert np.array_equal(mod(x).numpy(), ref)
    gm = torch.fx.symbolic_trace(mod)
    assert any(n.target is torch.ops.memra.matmul for n in gm.graph.nodes if n.op == "call_function")
    assert np.array_equal(gm(x).numpy(), ref)


def test_threads_do_not_share_an_argument_structure(lin, rng):
    """ctypes lets go of the GIL during memra_matmul_ex: two threads calling with one signature
    each keep their own structure, so neither reads the other's pointers."""
    import threading
    wid = mt.weight_id(lin)
    xs = [torch.from_numpy(rng.uniform(-2, 2, (4, 64)).astype(np.float32)) for _ in range(2)]
    refs = [memra.matmul(lin, x.numpy()) for x in xs]
    bad_calls = []

    def work(j):
        out = torch.empty(4, 48)
        for _ in range(300):
            torch.ops.memra.matmul_out(xs[j], wid, out)
            if not np.array_equal(out.numpy(), refs[j]):
                bad_calls.append(j)
            if not np.array_equal(mt.matmul(lin, xs[j]).numpy(), refs[j]):
                bad_calls.append(j)

    ts = [threading.Thread(target=work, args=(j,)) for j in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad_calls
