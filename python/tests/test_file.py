"""memra.File and memra.Weight.from_file on files written by the reference packages
(gguf, safetensors, ml_dtypes: installed by .ci/run), on the host device, against
numpy references with the values decoded by the packages' own dequantisers.

Bands are test_matmul.py's (derived there from the host module's contract):
- gemm_f16 (Q8_0 and Q4_K through their f16 mirror: the package's dequantised
  values rounded to f16 RNE, as memra's mirror is made): |got - ref| <=
  2^-23 |ref| + 2 k 2^-53 sum |x_h| |w_h|.
- gemm_bf16: the activation rounded to bf16 (RNE); bf16 x bf16 products are
  exact in double, so the same argument and band as gemm_f16.
- gemm_fp8_blk / gemm_fp8: every product exact in double, scales applied in the
  same double operations: bit-identical.
"""

import os

import numpy as np
import pytest

import memra
from memra import blocks

gguf = pytest.importorskip("gguf")
ml_dtypes = pytest.importorskip("ml_dtypes")
st_numpy = pytest.importorskip("safetensors.numpy")

from test_matmul import assert_band, f16_band, rand, ref_fp8_blk  # noqa: E402

Q = gguf.GGMLQuantizationType


def random_k_blocks(rng, qtype, rows, cols):
    """Q4_K blocks of random bytes with finite, positive d and dmin (like bench/make_layer_files.py)."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    nb = cols // block
    raw = rng.integers(0, 256, size=(rows, nb, size), dtype=np.uint8)
    d = rng.uniform(0.0005, 0.005, size=(rows, nb, 2)).astype(np.float16)
    raw[:, :, 0:4] = d.view(np.uint8).reshape(rows, nb, 4)
    return raw.reshape(rows, nb * size)


@pytest.fixture
def gguf_file(tmp_path, rng):
    """A GGUF v3 file: Q8_0 (quantised by gguf.quants), Q4_K (random blocks), BF16, a 1-D F32."""
    path = str(tmp_path / "t.gguf")
    w = gguf.GGUFWriter(path, "memra")
    w.add_name("memra python test")
    w.add_uint32("memra.test.u32", 4000000000)
    w.add_float32("memra.test.f32", 0.25)
    vals = {}
    q8 = rand(rng, 48, 256, lo=0.01, hi=0.5)
    vals["blk.0.attn_q.weight"] = quant = gguf.quants.quantize(q8, Q.Q8_0)
    w.add_tensor("blk.0.attn_q.weight", quant, raw_dtype=Q.Q8_0)
    vals["blk.0.ffn_up.weight"] = k4 = random_k_blocks(rng, Q.Q4_K, 40, 512)
    w.add_tensor("blk.0.ffn_up.weight", k4, raw_dtype=Q.Q4_K)
    bf = rand(rng, 24, 192, lo=0.01, hi=0.5)
    vals["blk.0.ffn_down.weight"] = bq = gguf.quants.quantize(bf, Q.BF16)
    w.add_tensor("blk.0.ffn_down.weight", bq, raw_dtype=Q.BF16)
    w.add_tensor("output_norm.weight", rand(rng, 64))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path, vals


@pytest.fixture
def st_file(tmp_path, rng):
    """safetensors: F8_E4M3 with a block-128 weight_scale_inv grid, one with a scalar
    weight_scale, one with a per-row scale (refused), and a BF16 tensor."""
    path = str(tmp_path / "m.safetensors")
    t = {}
    codes = blocks.e4m3_encode(rand(rng, 136, 320, lo=0.01, hi=400.0))
    t["model.layers.0.self_attn.q_proj.weight"] = codes.view(ml_dtypes.float8_e4m3fn)
    t["model.layers.0.self_attn.q_proj.weight_scale_inv"] = rng.uniform(1e-3, 1e-2, (2, 3)).astype(np.float32)
    c2 = blocks.e4m3_encode(rand(rng, 64, 256, lo=0.01, hi=400.0))
    t["model.layers.0.mlp.down_proj.weight"] = c2.view(ml_dtypes.float8_e4m3fn)
    t["model.layers.0.mlp.down_proj.weight_scale"] = np.array(0.0123, np.float32)
    c3 = blocks.e4m3_encode(rand(rng, 32, 128, lo=0.01, hi=400.0))
    t["model.layers.0.mlp.gate_proj.weight"] = c3.view(ml_dtypes.float8_e4m3fn)
    t["model.layers.0.mlp.gate_proj.weight_scale"] = rng.uniform(1e-3, 1e-2, (32, 1)).astype(np.float32)
    t["model.embed.weight"] = rand(rng, 16, 64).astype(ml_dtypes.bfloat16)
    st_numpy.save_file(t, path, metadata={"format": "pt"})
    return path, t


def test_file_lists_tensors_and_metadata(gguf_file):
    path, vals = gguf_file
    with memra.File(None, path) as f:
        assert f.kind == "gguf" and f.description == "GGUF v3" and len(f) == 4
        names = [t.name for t in f.tensors]
        assert names == ["blk.0.attn_q.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight", "output_norm.weight"]
        q = f.tensor("blk.0.attn_q.weight")
        assert (q.type, q.format, q.shape, q.elements, q.bytes) == ("Q8_0", "q8_0", (48, 256), 48 * 256, 48 * 8 * 34)
        assert f.tensor("blk.0.ffn_up.weight").format == "q4_k"
        assert f.tensor("blk.0.ffn_down.weight").type == "BF16"
        assert f.tensor("output_norm.weight").shape == (64,)
        assert q.offset % 32 == 0 and q.path == path
        md = f.metadata
        assert md["general.name"] == "memra python test"
        assert md["memra.test.u32"] == 4000000000 and md["memra.test.f32"] == 0.25
        assert md["general.architecture"] == "memra"
        for name, raw in vals.items():  # the bytes in the mapping are the ones written
            assert f.read(name) == np.ascontiguousarray(raw).tobytes(), name
        with pytest.raises(KeyError, match="nosuch"):
            f.tensor("nosuch")
    with pytest.raises(memra.InvalidArgumentError, match="closed"):
        f.read("blk.0.attn_q.weight")


def test_file_bad_files(tmp_path):
    p = tmp_path / "bad.gguf"
    p.write_bytes(b"GGUF" + (9).to_bytes(4, "little") + bytes(16))
    with pytest.raises(memra.InvalidArgumentError, match=r"bad.gguf: byte 4: unknown GGUF version 9"):
        memra.File(None, str(p))
    q = tmp_path / "trunc.safetensors"
    q.write_bytes((1000).to_bytes(8, "little") + b"{}")
    with pytest.raises(memra.InvalidArgumentError, match="trunc.safetensors"):
        memra.File(None, str(q))
    with pytest.raises(memra.Error, match="nosuch"):
        memra.File(None, str(tmp_path / "nosuch.gguf"))
    with pytest.raises(memra.InvalidArgumentError, match="Runtime or None"):
        memra.File("rt", str(p))


def test_weight_from_file_q8_0_and_q4_k(rt, rng, gguf_file):
    path, _ = gguf_file
    reader = gguf.GGUFReader(path)
    deq = {t.name: gguf.quants.dequantize(t.data, t.tensor_type) for t in reader.tensors}
    with memra.File(rt, path) as f:
        wq = f.weight("blk.0.attn_q.weight")
    wk = memra.Weight.from_file(rt, path, "blk.0.ffn_up.weight")  # a path: opened and closed here
    assert wq.format == "q8_0" and wq.shape == (48, 256) and wk.format == "q4_k" and wk.shape == (40, 512)
    for w, name, k in ((wq, "blk.0.attn_q.weight", 256), (wk, "blk.0.ffn_up.weight", 512)):
        x = rand(rng, 5, k)
        y = memra.matmul(w, x)  # the file is closed: the weight holds its mapping
        assert "f16_mirror" in w.operands(rt.host)
        wh = deq[name].reshape(w.shape).astype(np.float32).astype(np.float16)
        xh = x.astype(np.float16)
        ref = (xh.astype(np.float64) @ wh.astype(np.float64).T).astype(np.float32)
        assert_band(y, ref, f16_band(xh, wh, 1.0))
    assert rt.ledger().hits("gemm_f16", "host") == 2


def test_weight_from_file_bf16(rt, rng, gguf_file):
    path, _ = gguf_file
    reader = gguf.GGUFReader(path)
    t = next(t for t in reader.tensors if t.name == "blk.0.ffn_down.weight")
    wv = gguf.quants.dequantize(t.data, t.tensor_type).reshape(24, 192).astype(np.float64)
    w = memra.Weight.from_file(rt, path, "blk.0.ffn_down.weight")
    assert w.format == "bf16"
    x = rand(rng, 3, 192)
    y = memra.matmul(w, x)
    assert rt.ledger().hits("gemm_bf16", "host") == 1
    xb = x.astype(ml_dtypes.bfloat16).astype(np.float64)  # RNE, as the lane rounds the activation
    ref = (xb @ wv.T).astype(np.float32)
    band = 2 * 192 * 2.0 ** -53 * (np.abs(xb) @ np.abs(wv).T)
    assert_band(y, ref, band)


def test_weight_from_file_fp8_scales(rt, rng, st_file):
    path, t = st_file
    with memra.File(rt, path) as f:
        assert f.kind == "safetensors" and f.metadata == {"format": "pt"}
        assert f.tensor("model.layers.0.self_attn.q_proj.weight").type == "F8_E4M3"
        assert f.tensor("model.embed.weight").format == "bf16"
        wb = f.weight("model.layers.0.self_attn.q_proj.weight")
        wt = f.weight("model.layers.0.mlp.down_proj.weight")
        with pytest.raises(memra.NotSupportedError, match="per-row"):
            f.weight("model.layers.0.mlp.gate_proj.weight")
        assert f.weight("model.embed.weight").format == "bf16"
    # block-128: test_matmul's bit-identical reference with the file's grid
    m, k = 3, 320
    x = rand(rng, m, k)
    y = memra.matmul(wb, x)
    assert rt.ledger().hits("gemm_fp8_blk", "host") == 1
    grid = t["model.layers.0.self_attn.q_proj.weight_scale_inv"].astype(np.float64)
    wdec = blocks.e4m3_decode(t["model.layers.0.self_attn.q_proj.weight"].view(np.uint8)).astype(np.float64)
    ref = ref_fp8_blk(x, wdec, grid)
    assert np.array_equal(y, ref), np.abs(y - ref).max()
    # per-tensor scale
    x2 = rand(rng, 4, 256)
    y2 = memra.matmul(wt, x2)
    assert rt.ledger().hits("gemm_fp8", "host") == 1
    sx = np.float32(np.abs(x2).max()) / np.float32(448.0)
    q2 = blocks.e4m3_decode(blocks.e4m3_encode(x2 / sx)).astype(np.float64)
    S = q2 @ blocks.e4m3_decode(t["model.layers.0.mlp.down_proj.weight"].view(np.uint8)).astype(np.float64).T
    ref2 = ((float(np.float32(0.0123)) * float(sx)) * S).astype(np.float32)
    assert np.array_equal(y2, ref2), np.abs(y2 - ref2).max()


def test_weight_from_file_bad_input(rt, gguf_file):
    path, _ = gguf_file
    with pytest.raises(memra.NotSupportedError, match="output_norm"):
        memra.Weight.from_file(rt, path, "output_norm.weight")  # 1-D
    with pytest.raises(memra.NotFoundError, match="nosuch"):
        memra.Weight.from_file(rt, path, "nosuch")
    with pytest.raises(memra.InvalidArgumentError, match="memra.Runtime"):
        memra.Weight.from_file(None, path, "blk.0.attn_q.weight")
    assert os.path.exists(path)
