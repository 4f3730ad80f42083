"""Expert weights and memra.matmul_experts (mixture-of-experts prefill) on the host device.

What is checked (memra.h, "experts"): each routed row gets exactly what memra.matmul of its
own expert gives it on that expert's rows, so every comparison below is bit for bit against
the dense call (the same host module, the same numerics; for per-tensor e4m3 the activation's
scale is the expert's rows' own, which the dense call on those rows reproduces). Rows whose id
is outside [0, n_experts) keep their output row. The weights are fresh random values, never
zero; the routing is uneven (an expert without rows, one with a single row, one with most)
and unsorted. Then the readers: a GGUF 3-D expert tensor and a safetensors checkpoint's
per-expert FP8 tensors come out of memra.File as expert groups whose weights equal those made
from the same bytes; then the refusals.
"""

import numpy as np
import pytest

import memra
from memra import blocks

from test_matmul import rand

E, OUT, IN, ROWS = 5, 48, 256, 40
SENT = 1234.5


def routing(rng, rows=ROWS, n_experts=E):
    """Unsorted ids: expert 0 none, 1 one row, 2 most, the others a few; two rows skipped (a
    negative id and one past the last expert)."""
    ids = np.full(rows, 2, dtype=np.int32)
    ids[0], ids[1], ids[2] = 1, -1, n_experts
    for r in range(10, 10 + 3 * (n_experts - 3)):
        ids[r] = 3 + (r - 10) % (n_experts - 3)
    ids = ids[rng.permutation(rows)]
    assert not np.any(ids == 0) and np.sum(ids == 1) == 1 and np.sum((ids < 0) | (ids >= n_experts)) == 2
    return ids


def dense_rows(rt, w_dense, x, ids, y_shape, alpha=1.0):
    """The reference: each expert's rows through memra.matmul of its own dense weight; SENT elsewhere."""
    ref = np.full(y_shape, SENT, dtype=np.float32)
    for e, wd in enumerate(w_dense):
        rows = np.nonzero(ids == e)[0]
        if rows.size:
            ref[rows] = memra.matmul(wd, np.ascontiguousarray(x[rows]), alpha=alpha)
    return ref


@pytest.mark.parametrize("fmt,block", [("f32", False), ("f16", False), ("q8_0", False), ("e4m3", False),
                                       ("e4m3", True)])
def test_experts_match_the_dense_call_per_expert(rt, rng, fmt, block):
    W = rand(rng, E, OUT, IN, lo=0.01, hi=0.5)
    w = memra.Weight.experts_from_array(rt, W, fmt, block_scales=block)
    assert w.n_experts == E and w.shape == (OUT, IN) and w.format == fmt
    assert "%d experts" % E in repr(w)
    dense = [memra.Weight.from_array(rt, W[e], fmt, block_scales=block) for e in range(E)]
    assert all(d.n_experts == 0 for d in dense)
    x = rand(rng, ROWS, IN)
    ids = routing(rng)
    y = np.full((ROWS, OUT), SENT, dtype=np.float32)
    assert memra.matmul_experts(w, x, ids, out=y) is y
    ref = dense_rows(rt, dense, x, ids, y.shape)
    assert np.array_equal(y, ref), "first difference at %s" % (np.argwhere(y != ref)[:1].tolist(),)
    skipped = (ids < 0) | (ids >= E)
    assert np.all(y[skipped] == SENT)  # the skipped rows (also in ref: SENT there)
    assert rt.ledger().hits(op="gemm_experts") >= 1


def test_experts_alpha_row_offset_and_shapes(rt, rng):
    W = rand(rng, E, OUT, IN, lo=0.01, hi=0.5)
    w = memra.Weight.experts_from_array(rt, W, "q8_0")
    dense = [memra.Weight.from_array(rt, W[e], "q8_0") for e in range(E)]
    x = rand(rng, ROWS, IN)
    ids = routing(rng)
    ref = dense_rows(rt, dense, x, ids, (ROWS, OUT), alpha=0.75)
    # a larger output matrix written from row 7; the rows around stay untouched
    big = np.full((ROWS + 12, OUT), SENT, dtype=np.float32)
    memra.matmul_experts(w, x, ids, out=big, row_offset=7, alpha=0.75)
    assert np.array_equal(big[7:7 + ROWS], ref)
    assert np.all(big[:7] == SENT) and np.all(big[7 + ROWS:] == SENT)
    # x [4 x 10 x in_f] with ids [4 x 10]: the output takes x's leading dimensions
    y3 = memra.matmul_experts(w, x.reshape(4, 10, IN), ids.reshape(4, 10), alpha=0.75)
    assert y3.shape == (4, 10, OUT)
    routed = (ids >= 0) & (ids < E)
    assert np.array_equal(y3.reshape(ROWS, OUT)[routed], ref[routed])


def test_experts_from_bytes_equal_from_array(rt, rng):
    W = rand(rng, E, OUT, IN, lo=0.01, hi=0.5)
    raw = np.concatenate([blocks.q8_0_encode(W[e]).reshape(-1) for e in range(E)])
    wb = memra.Weight.experts(rt, raw, "q8_0", E, (OUT, IN), name="gate")
    wa = memra.Weight.experts_from_array(rt, W, "q8_0")
    x = rand(rng, ROWS, IN)
    ids = rng.integers(0, E, ROWS).astype(np.int32)
    assert np.array_equal(memra.matmul_experts(wb, x, ids), memra.matmul_experts(wa, x, ids))
    # per-tensor e4m3 experts with their scales given
    codes = [blocks.e4m3_encode(rand(rng, OUT, IN, lo=0.01, hi=400.0)) for _ in range(E)]
    scales = rng.uniform(1e-3, 1e-2, E).astype(np.float32)
    we = memra.Weight.experts(rt, np.concatenate([c.reshape(-1) for c in codes]), "e4m3", E, (OUT, IN),
                              scales=scales)
    dense = [memra.Weight(rt, codes[e], "e4m3", (OUT, IN), scale=float(scales[e])) for e in range(E)]
    ref = dense_rows(rt, dense, x, ids, (ROWS, OUT))
    assert np.array_equal(memra.matmul_experts(we, x, ids), ref)


def test_experts_refusals(rt, rng):
    W = rand(rng, E, OUT, IN, lo=0.01, hi=0.5)
    w = memra.Weight.experts_from_array(rt, W, "q8_0")
    dense = memra.Weight.from_array(rt, W[0], "q8_0")
    x = rand(rng, ROWS, IN)
    ids = routing(rng)
    with pytest.raises(memra.InvalidArgumentError, match="dense weight"):
        memra.matmul_experts(dense, x, ids)
    with pytest.raises(memra.InvalidArgumentError, match="int32"):
        memra.matmul_experts(w, x, ids.astype(np.int64))
    with pytest.raises(memra.InvalidArgumentError, match="one contiguous id per row"):
        memra.matmul_experts(w, x, ids[:-1])
    with pytest.raises(memra.InvalidArgumentError, match="in_f"):
        memra.matmul_experts(w, x[:, :128], ids)
    with pytest.raises(memra.Error):  # memra_matmul refuses an expert weight
        memra.matmul(w, x)
    ro = np.zeros((ROWS, OUT), np.float32)
    ro.setflags(write=False)
    with pytest.raises(memra.InvalidArgumentError, match="out"):  # never written through a read-only array
        memra.matmul_experts(w, x, ids, out=ro)
    assert not np.any(ro)
    with pytest.raises(memra.InvalidArgumentError, match="rows"):  # rows past the end of out
        memra.matmul_experts(w, x, ids, out=np.zeros((ROWS + 3, OUT), np.float32), row_offset=4)
    raw = blocks.q8_0_encode(W[0]).reshape(-1)
    with pytest.raises(memra.InvalidArgumentError, match="13056 bytes given, 2 experts"):  # one expert's bytes
        memra.Weight.experts(rt, raw, "q8_0", 2, (OUT, IN))
    with pytest.raises(memra.InvalidArgumentError, match="scales holds 2 values for 3 experts"):
        memra.Weight.experts(rt, np.zeros(3 * OUT * IN, np.uint8), "e4m3", 3, (OUT, IN), scales=[1.0, 2.0])
    with pytest.raises(memra.InvalidArgumentError, match="3-D"):
        memra.Weight.experts_from_array(rt, W[0], "q8_0")


def test_file_expert_groups(rt, rng, tmp_path):
    gguf = pytest.importorskip("gguf")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    st_numpy = pytest.importorskip("safetensors.numpy")
    # GGUF: one 3-D Q8_0 tensor [E x out x in] (ggml's ffn_gate_exps layout), and a dense one
    path = str(tmp_path / "moe.gguf")
    wr = gguf.GGUFWriter(path, "memra")
    W = rand(rng, E, OUT, IN, lo=0.01, hi=0.5)
    q = gguf.quants.quantize(W, gguf.GGMLQuantizationType.Q8_0)
    wr.add_tensor("blk.0.ffn_gate_exps.weight", q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    wr.add_tensor("blk.0.attn_q.weight", gguf.quants.quantize(W[0], gguf.GGMLQuantizationType.Q8_0),
                  raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    x = rand(rng, ROWS, IN)
    ids = routing(rng)
    with memra.File(rt, path) as f:
        assert [g.name for g in f.expert_groups] == ["blk.0.ffn_gate_exps.weight"]
        g = f.expert_groups[0]
        assert (g.format, g.from_3d, g.n_experts, g.shape, g.bytes) == ("q8_0", True, E, (OUT, IN), q.nbytes)
        wf = f.experts(g.name)
    assert wf.n_experts == E and wf.shape == (OUT, IN)
    wb = memra.Weight.experts(rt, np.ascontiguousarray(q).reshape(-1), "q8_0", E, (OUT, IN))
    assert np.array_equal(memra.matmul_experts(wf, x, ids, out=np.full((ROWS, OUT), SENT, np.float32)),
                          memra.matmul_experts(wb, x, ids, out=np.full((ROWS, OUT), SENT, np.float32)))
    # safetensors: per-expert F8_E4M3 tensors with a per-tensor weight_scale each, grouped by the reader
    path = str(tmp_path / "moe.safetensors")
    t, codes = {}, []
    scales = rng.uniform(1e-3, 1e-2, E).astype(np.float32)
    for e in range(E):
        c = blocks.e4m3_encode(rand(rng, OUT, IN, lo=0.01, hi=400.0))
        codes.append(c)
        t["model.layers.0.mlp.experts.%d.up_proj.weight" % e] = c.view(ml_dtypes.float8_e4m3fn)
        t["model.layers.0.mlp.experts.%d.up_proj.weight_scale" % e] = np.array(scales[e], np.float32)
    st_numpy.save_file(t, path, metadata={"format": "pt"})
    with memra.File(rt, path) as f:
        name = "model.layers.0.mlp.experts.*.up_proj.weight"
        assert [g.name for g in f.expert_groups] == [name]
        g = f.expert_groups[0]
        assert (g.format, g.from_3d, g.n_experts, g.shape) == ("e4m3", False, E, (OUT, IN))
        ws = f.experts(name)
        with pytest.raises(memra.NotFoundError):
            f.experts("model.layers.0.mlp.experts.*.down_proj.weight")
    wb = memra.Weight.experts(rt, np.concatenate([c.reshape(-1) for c in codes]), "e4m3", E, (OUT, IN),
                              scales=scales)
    assert np.array_equal(memra.matmul_experts(ws, x, ids, out=np.full((ROWS, OUT), SENT, np.float32)),
                          memra.matmul_experts(wb, x, ids, out=np.full((ROWS, OUT), SENT, np.float32)))
