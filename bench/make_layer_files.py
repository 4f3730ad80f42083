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

--moe also writes one Qwen3-30B-A3B-like MoE layer (issue 30): OUTDIR/layermoe.<type>.gguf
with blk.0.ffn_{gate,up,down}_exps.weight as 3D tensors (GGUF ne = {in_f, out_f, E}),
and OUTDIR/layermoe.fp8.safetensors with the per-expert 2D tensors
model.layers.0.mlp.experts.J.{gate,up,down}_proj.weight and their block-128
weight_scale_inv (E experts, 2048 -> 768 gate/up, 768 -> 2048 down, divided by
--div; --experts E sets E, default 128), always by the numpy writers.

Without the gguf / safetensors / ml_dtypes packages (the lent GPU machine has
numpy only), or with --writer numpy, the files are written by the small
writers below from the format descriptions: GGUF v3 (32-byte alignment) and
safetensors, every GGML block type as random blocks with finite f16 scales,
F32 / F16 / BF16 from the same Gaussian values (BF16 rounded to nearest even).
"""
import argparse
import json
import os
import struct

import numpy as np

try:
    import gguf
    import ml_dtypes
    import safetensors.numpy
    from gguf import GGMLQuantizationType as Q
    from gguf import quants
    HAVE_PACKAGES = True
except ImportError:
    HAVE_PACKAGES = False

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
# GGML type ids and (values, bytes) per block, from the GGUF format description
GGML = {"f32": (0, 1, 4), "f16": (1, 1, 2), "q4_0": (2, 32, 18), "q8_0": (8, 32, 34), "q4_k": (12, 256, 144),
        "q5_k": (13, 256, 176), "q6_k": (14, 256, 210), "bf16": (30, 1, 2)}

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--div", type=int, default=1)
ap.add_argument("--types", default=",".join(GGML))
ap.add_argument("--no-fp8", action="store_true")
ap.add_argument("--moe", action="store_true", help="also a Qwen3-30B-A3B-like MoE layer (3D GGUF, per-expert safetensors)")
ap.add_argument("--experts", type=int, default=128)
ap.add_argument("--moe-only", action="store_true", help="the MoE layer alone (implies --moe)")
ap.add_argument("--writer", choices=["auto", "packages", "numpy"], default="auto",
                help="auto: the gguf/safetensors packages when importable, else the numpy writers")
a = ap.parse_args()
if a.writer == "packages" and not HAVE_PACKAGES:
    ap.error("--writer packages: gguf, safetensors or ml_dtypes is not importable")
use_packages = HAVE_PACKAGES and a.writer != "numpy"
os.makedirs(a.out, exist_ok=True)
rng = np.random.default_rng()
if use_packages:
    TYPES = {"f32": Q.F32, "f16": Q.F16, "bf16": Q.BF16, "q8_0": Q.Q8_0, "q4_0": Q.Q4_0, "q4_k": Q.Q4_K,
             "q5_k": Q.Q5_K, "q6_k": Q.Q6_K}
types = [t for t in a.types.split(",") if t]  # "" : no GGUF file
for t in types:
    if t not in GGML:
        ap.error("--types: unknown type %r (types: %s)" % (t, ",".join(GGML)))


def dims(in_f, out_f):
    return max(256, in_f // a.div // 256 * 256), max(256, out_f // a.div // 256 * 256)


def np_blocks(tname, rows, cols):
    """Random GGML blocks with finite f16 scales (the d / dmin / d fields)."""
    _, block, size = GGML[tname]
    nb = cols // block
    raw = rng.integers(0, 256, size=(rows, nb, size), dtype=np.uint8)
    d = (rng.uniform(0.0005, 0.005, size=(rows, nb)) * rng.choice([-1, 1], size=(rows, nb))).astype(np.float16)
    d = d.view(np.uint8).reshape(rows, nb, 2)
    if tname == "q8_0":
        raw[:, :, 0:2] = d
        codes = raw[:, :, 2:].view(np.int8)
        codes[codes == -128] = -127  # the quantiser's range
    elif tname == "q4_0":
        raw[:, :, 0:2] = d
    elif tname in ("q4_k", "q5_k"):
        raw[:, :, 0:2] = d
        raw[:, :, 2:4] = np.abs(d.view(np.float16)).view(np.uint8).reshape(rows, nb, 2)
    else:  # q6_k
        raw[:, :, 208:210] = d
    return raw.reshape(rows, nb * size)


def np_tensor(tname, rows, cols):
    if GGML[tname][1] > 1:
        return np_blocks(tname, rows, cols).tobytes()
    x = (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float32)
    if tname == "f32":
        return x.tobytes()
    if tname == "f16":
        return x.astype(np.float16).tobytes()
    u = x.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16).tobytes()  # bf16, round to nearest even


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def np_write_gguf(path, name, tensors):
    """GGUF v3: header, two string keys, tensor infos, data aligned to 32."""
    kv = [("general.architecture", "memra"), ("general.name", name)]
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for k, v in kv:
        head += gguf_str(k) + struct.pack("<I", 8) + gguf_str(v)
    off, infos, blobs = 0, b"", []
    for tn, tname, rows, cols, data in tensors:
        infos += gguf_str(tn) + struct.pack("<IQQIQ", 2, cols, rows, GGML[tname][0], off)
        pad = (-len(data)) % 32
        blobs.append(data + b"\0" * pad)
        off += len(data) + pad
    head += infos
    head += b"\0" * ((-len(head)) % 32)
    with open(path, "wb") as f:
        f.write(head)
        for b in blobs:
            f.write(b)


def np_write_safetensors(path, tensors):
    """safetensors: u64 header length, the JSON header padded with spaces to 8, the data."""
    hdr, off = {"__metadata__": {"format": "pt"}}, 0
    for tn, dtype, shape, data in tensors:
        hdr[tn] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((-len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for _, _, _, data in tensors:
            f.write(data)


# (class, gguf name, hf name, in_f, out_f): a Qwen3-30B-A3B-like MoE layer's experts
MOE = [("gate", "ffn_gate_exps", "gate_proj", 2048, 768), ("up", "ffn_up_exps", "up_proj", 2048, 768),
       ("down", "ffn_down_exps", "down_proj", 768, 2048)]


def np_write_gguf_nd(path, name, tensors):
    """GGUF v3 as np_write_gguf, tensors given as (name, type, ne[] in GGUF order, data)."""
    kv = [("general.architecture", "memra"), ("general.name", name)]
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for k, v in kv:
        head += gguf_str(k) + struct.pack("<I", 8) + gguf_str(v)
    off, blobs = 0, []
    for tn, tname, ne, data in tensors:
        head += gguf_str(tn) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        head += struct.pack("<IQ", GGML[tname][0], off)
        pad = (-len(data)) % 32
        blobs.append(data + b"\0" * pad)
        off += len(data) + pad
    head += b"\0" * ((-len(head)) % 32)
    with open(path, "wb") as f:
        f.write(head)
        for b in blobs:
            f.write(b)


if a.moe or a.moe_only:
    E = a.experts
    for tname in types:
        path = os.path.join(a.out, f"layermoe.{tname}.gguf")
        ts = []
        for _, gname, _, in_f, out_f in MOE:
            in_f, out_f = dims(in_f, out_f)
            data = b"".join(np_tensor(tname, out_f, in_f) for _ in range(E))
            ts.append((f"blk.0.{gname}.weight", tname, [in_f, out_f, E], data))
        np_write_gguf_nd(path, f"memra MoE layer ({tname}, {E} experts)", ts)
        print(path, os.path.getsize(path))
    if not a.no_fp8:
        ts = []
        for _, _, hname, in_f, out_f in MOE:
            in_f, out_f = dims(in_f, out_f)
            for j in range(E):
                codes = rng.integers(0, 256, size=(out_f, in_f), dtype=np.uint8)
                codes[(codes & 0x7F) == 0x7F] = 0x30
                grid = rng.uniform(1e-4, 1e-3, size=((out_f + 127) // 128, (in_f + 127) // 128)).astype(np.float32)
                base = f"model.layers.0.mlp.experts.{j}.{hname}"
                ts.append((f"{base}.weight", "F8_E4M3", codes.shape, codes.tobytes()))
                ts.append((f"{base}.weight_scale_inv", "F32", grid.shape, grid.tobytes()))
        path = os.path.join(a.out, "layermoe.fp8.safetensors")
        np_write_safetensors(path, ts)
        print(path, os.path.getsize(path))
    if a.moe_only:
        raise SystemExit(0)

if not use_packages:
    for tname in types:
        path = os.path.join(a.out, f"layer27b.{tname}.gguf")
        ts = []
        for _, gname, _, in_f, out_f in SHEET:
            in_f, out_f = dims(in_f, out_f)
            ts.append((f"blk.0.{gname}.weight", tname, out_f, in_f, np_tensor(tname, out_f, in_f)))
        np_write_gguf(path, f"memra 27b layer ({tname})", ts)
        print(path, os.path.getsize(path))
    if not a.no_fp8:
        ts = []
        for _, _, hname, in_f, out_f in SHEET:
            in_f, out_f = dims(in_f, out_f)
            codes = rng.integers(0, 256, size=(out_f, in_f), dtype=np.uint8)
            codes[(codes & 0x7F) == 0x7F] = 0x30
            grid = rng.uniform(1e-4, 1e-3, size=((out_f + 127) // 128, (in_f + 127) // 128)).astype(np.float32)
            base = f"model.layers.0.{hname}"
            ts.append((f"{base}.weight", "F8_E4M3", codes.shape, codes.tobytes()))
            ts.append((f"{base}.weight_scale_inv", "F32", grid.shape, grid.tobytes()))
        path = os.path.join(a.out, "layer27b.fp8.safetensors")
        np_write_safetensors(path, ts)
        print(path, os.path.getsize(path))
    raise SystemExit(0)

for tname in types:
    qtype = TYPES[tname]
    path = os.path.join(a.out, f"layer27b.{tname}.gguf")
    w = gguf.GGUFWriter(path, "memra")
    w.add_name(f"memra 27b layer ({tname})")
    for _, gname, _, in_f, out_f in SHEET:
        in_f, out_f = dims(in_f, out_f)
        name = f"blk.0.{gname}.weight"
        if qtype in (Q.Q4_K, Q.Q5_K, Q.Q6_K):
            w.add_tensor(name, np_blocks(tname, out_f, in_f), raw_dtype=qtype)
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
