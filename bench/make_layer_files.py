"""Model files shaped like one layer of the 27b sheet, for `memra check --model`
and `memra bench --model` (phase 2 of issue 17).

    python3 bench/make_layer_files.py OUTDIR [--div D] [--types q8_0,q4_k,...]

writes OUTDIR/layer27b.<type>.gguf for each GGUF type (f32 f16 bf16 q8_0 q4_0 q4_k
q5_k q6_k) with seven projections covering the six shapes of the 27b sheet
(SHEET below), named as llama.cpp names them, and OUTDIR/layer27b.fp8.safetensors with the same projections in
F8_E4M3 with block-128 weight_scale_inv grids (Hugging Face names). Values are
random (Q8_0, Q4_0 and BF16 quantised by gguf.quants from Gaussian values; the
K-quants as random blocks with finite scales). --div divides every dimension
(for a small local run); the shapes stay multiples of 256.
"""
import argparse
import os

import gguf
import ml_dtypes
import numpy as np
import safetensors.numpy
from gguf import GGMLQuantizationType as Q
from gguf import quants

# (class, gguf name, hf name, in_f, out_f): the 27b sheet's six shapes
SHEET = [
    ("q", "attn_q", "self_attn.q_proj", 5120, 12288),
    ("k", "attn_k", "self_attn.k_proj", 5120, 1024),
    ("v", "attn_v", "self_attn.v_proj", 5120, 5120),
    ("o", "attn_output", "self_attn.o_proj", 6144, 5120),
    ("gate", "ffn_gate", "mlp.gate_proj", 5120, 17408),
    ("up", "ffn_up", "mlp.up_proj", 5120, 17408),
    ("down", "ffn_down", "mlp.down_proj", 17408, 5120),
]
TYPES = {"f32": Q.F32, "f16": Q.F16, "bf16": Q.BF16, "q8_0": Q.Q8_0, "q4_0": Q.Q4_0, "q4_k": Q.Q4_K,
         "q5_k": Q.Q5_K, "q6_k": Q.Q6_K}

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--div", type=int, default=1)
ap.add_argument("--types", default=",".join(TYPES))
ap.add_argument("--no-fp8", action="store_true")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
rng = np.random.default_rng()


def dims(in_f, out_f):
    return max(256, in_f // a.div // 256 * 256), max(256, out_f // a.div // 256 * 256)


def random_blocks(qtype, rows, cols):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    nb = cols // block
    raw = rng.integers(0, 256, size=(rows, nb, size), dtype=np.uint8)
    d = (rng.uniform(0.0005, 0.005, size=(rows, nb)) * rng.choice([-1, 1], size=(rows, nb))).astype(np.float16)
    d = d.view(np.uint8).reshape(rows, nb, 2)
    if qtype in (Q.Q4_K, Q.Q5_K):
        raw[:, :, 0:2] = d
        raw[:, :, 2:4] = np.abs(d.view(np.float16)).view(np.uint8).reshape(rows, nb, 2)
    else:  # Q6_K
        raw[:, :, 208:210] = d
    return raw.reshape(rows, nb * size)


for tname in a.types.split(","):
    qtype = TYPES[tname]
    path = os.path.join(a.out, f"layer27b.{tname}.gguf")
    w = gguf.GGUFWriter(path, "memra")
    w.add_name(f"memra 27b layer ({tname})")
    for _, gname, _, in_f, out_f in SHEET:
        in_f, out_f = dims(in_f, out_f)
        name = f"blk.0.{gname}.weight"
        if qtype in (Q.Q4_K, Q.Q5_K, Q.Q6_K):
            w.add_tensor(name, random_blocks(qtype, out_f, in_f), raw_dtype=qtype)
            continue
        x = (rng.standard_normal((out_f, in_f), dtype=np.float32) * 0.02).astype(np.float32)
        if qtype == Q.F32:
            w.add_tensor(name, x)
        elif qtype == Q.F16:
            w.add_tensor(name, x.astype(np.float16))
        else:
            w.add_tensor(name, quants.quantize(x, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(path, os.path.getsize(path))

if not a.no_fp8:
    tensors = {}
    for _, _, hname, in_f, out_f in SHEET:
        in_f, out_f = dims(in_f, out_f)
        codes = rng.integers(0, 256, size=(out_f, in_f), dtype=np.uint8)
        codes[(codes & 0x7F) == 0x7F] = 0x30
        base = f"model.layers.0.{hname}"
        tensors[f"{base}.weight"] = codes.view(ml_dtypes.float8_e4m3fn)
        tensors[f"{base}.weight_scale_inv"] = rng.uniform(1e-4, 1e-3, size=((out_f + 127) // 128, (in_f + 127) // 128)).astype(np.float32)
    path = os.path.join(a.out, "layer27b.fp8.safetensors")
    safetensors.numpy.save_file(tensors, path, metadata={"format": "pt"})
    print(path, os.path.getsize(path))
