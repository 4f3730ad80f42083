"""Write model files with the reference writers and dump their values as the
reference packages decode them (files.reference, run_reference.sh).

ref.gguf        gguf.GGUFWriter: F32, F16, BF16, Q8_0, Q4_0 (quantised by
                gguf.quants.quantize), Q4_K, Q5_K, Q6_K (random blocks with
                finite f16 scales: the package has no quantiser for them);
                values by gguf.quants.dequantize.
ref.safetensors safetensors.numpy.save_file: F32, F16, BF16 and F8_E4M3 (the
                ml_dtypes types) with a per-tensor weight_scale and a block-128
                weight_scale_inv; values by ml_dtypes' conversion to float32.
Each tensor's values go to <file>.<tensor name>.f32 (raw little-endian float32,
row-major), fresh random data on every run.
"""
import os
import sys

import gguf
import ml_dtypes
import numpy as np
import safetensors.numpy
from gguf import GGMLQuantizationType as Q
from gguf import quants

out = sys.argv[1]
rng = np.random.default_rng()


def dump(file, name, values):
    np.ascontiguousarray(values, dtype="<f4").tofile(os.path.join(out, f"{file}.{name}.f32"))


def random_blocks(qtype, rows, cols):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(rows, cols // block, size), dtype=np.uint8)
    d = (rng.uniform(0.001, 0.05, size=(rows, cols // block)) * rng.choice([-1, 1], size=(rows, cols // block)))
    d = d.astype(np.float16).view(np.uint8).reshape(rows, cols // block, 2)
    if qtype in (Q.Q4_K, Q.Q5_K):
        raw[:, :, 0:2] = d
        raw[:, :, 2:4] = np.abs(d.view(np.float16)).view(np.uint8).reshape(rows, cols // block, 2)
    elif qtype == Q.Q6_K:
        raw[:, :, 208:210] = d
    return raw.reshape(rows, cols // block * size)


w = gguf.GGUFWriter(os.path.join(out, "ref.gguf"), "memra")
w.add_name("memra reference")
rows, cols = 4, 512
for name, qtype in [("f32", Q.F32), ("f16", Q.F16), ("bf16", Q.BF16), ("q8_0", Q.Q8_0), ("q4_0", Q.Q4_0),
                    ("q4_k", Q.Q4_K), ("q5_k", Q.Q5_K), ("q6_k", Q.Q6_K)]:
    tname = f"blk.0.{name}.weight"
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    if qtype == Q.F32:
        w.add_tensor(tname, x)
        dump("ref.gguf", tname, x)
    elif qtype == Q.F16:
        h = x.astype(np.float16)
        w.add_tensor(tname, h)
        dump("ref.gguf", tname, h.astype(np.float32))
    else:
        raw = quants.quantize(x, qtype) if qtype in (Q.BF16, Q.Q8_0, Q.Q4_0) else random_blocks(qtype, rows, cols)
        w.add_tensor(tname, raw, raw_dtype=qtype)
        dump("ref.gguf", tname, quants.dequantize(raw, qtype))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

tensors = {}
x = rng.standard_normal((5, 96)).astype(np.float32)
tensors["st.f32.weight"] = x
tensors["st.f16.weight"] = x.astype(np.float16)
tensors["st.bf16.weight"] = x.astype(ml_dtypes.bfloat16)


def fp8(rows, cols):
    codes = rng.integers(0, 256, size=(rows, cols), dtype=np.uint8)
    codes[(codes & 0x7F) == 0x7F] = 0x30
    return codes.view(ml_dtypes.float8_e4m3fn)


tensors["fp8.tensor.weight"] = fp8(9, 160)
tensors["fp8.tensor.weight_scale"] = np.array(0.0123, dtype=np.float32)
tensors["fp8.block.weight"] = fp8(130, 160)
tensors["fp8.block.weight_scale_inv"] = rng.uniform(0.001, 0.01, size=(2, 2)).astype(np.float32)
safetensors.numpy.save_file(tensors, os.path.join(out, "ref.safetensors"), metadata={"format": "pt"})
for name, value in tensors.items():
    dump("ref.safetensors", name, value.astype(np.float32))
