"""The binding cannot be used to corrupt memory (issue 27): arrays handed to the
C library are checked for dtype, size, layout, device and writability against
the op's arguments; None and NUL bytes in paths and names raise. Each case
here crashed the interpreter, wrote into read-only memory, or opened the wrong
file before the checks."""

import os

import pytest

from conftest import np

import memra


def rand(rng, *shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def _raises(fn, *needles):
    with pytest.raises(memra.InvalidArgumentError) as e:
        fn()
    for n in needles:
        assert n in str(e.value), str(e.value)
    return e.value


# ---- module_call: sizes, dtypes, layout, writability ---------------------------------------------

def test_gemm_arrays_too_small_for_the_sizes(rt):
    a = np.zeros(4, np.float32)
    # was: double free or corruption / SIGSEGV inside the host GEMM
    _raises(lambda: memra.module_call(rt.host, "host", "gemm_f16", gemm=dict(m=512, n=512, k=512, w=a, x=a, y=a)),
            "gemm.w")
    h = np.zeros(4, np.float16)
    _raises(lambda: memra.module_call(rt.host, "host", "gemm_f16", gemm=dict(m=512, n=512, k=512, w=h, x=a, y=a)),
            "gemm.w", "holds 8 bytes", "needs 524288")
    assert rt.ledger().hits() == 0


@pytest.mark.parametrize("field", ["w", "x", "y"])
def test_gemm_each_operand_is_sized(rt, rng, field):
    m, n, k = 4, 16, 64
    ops = dict(w=rand(rng, n, k).astype(np.float16), x=rand(rng, m, k), y=np.zeros((m, n), np.float32))
    short = dict(ops)
    short[field] = ops[field].ravel()[:-1].copy()
    _raises(lambda: memra.module_call(rt.host, "host", "gemm_f16", gemm=dict(m=m, n=n, k=k, **short)),
            "gemm." + field, "bytes")
    memra.module_call(rt.host, "host", "gemm_f16", gemm=dict(m=m, n=n, k=k, **ops))  # the right sizes pass


def test_gemm_y_with_row_offset_and_ldy(rt, rng):
    m, n, k = 3, 8, 32
    w, x = rand(rng, n, k).astype(np.float16), rand(rng, m, k)
    y = np.zeros((m + 1, n + 2), np.float32)
    memra.module_call(rt.host, "host", "gemm_f16", gemm=dict(m=m, n=n, k=k, w=w, x=x, y=y, ldy=n + 2, y_row_offset=1))
    _raises(lambda: memra.module_call(rt.host, "host", "gemm_f16",
                                      gemm=dict(m=m, n=n, k=k, w=w, x=x, y=y, ldy=n + 2, y_row_offset=2)), "gemm.y")
    _raises(lambda: memra.module_call(rt.host, "host", "gemm_f16",
                                      gemm=dict(m=m, n=n, k=k, w=w, x=x, y=y, ldy=n - 1)), "gemm.ldy")


def test_dtype_and_layout_checked(rt, rng):
    m, n, k = 2, 8, 32
    w, y = rand(rng, n, k).astype(np.float16), np.zeros((m, n), np.float32)
    _raises(lambda: memra.module_call(rt.host, "host", "gemm_f16",
                                      gemm=dict(m=m, n=n, k=k, w=w, x=rand(rng, m, k).astype(np.float64), y=y)),
            "gemm.x", "float32")
    xt = rand(rng, k, m).T  # the right size, not C-contiguous
    _raises(lambda: memra.module_call(rt.host, "host", "gemm_f16", gemm=dict(m=m, n=n, k=k, w=w, x=xt, y=y)),
            "gemm.x", "C-contiguous")


def test_outputs_must_be_writable(rt, rng):
    x = rand(rng, 100)
    ro = np.zeros(100, np.float16)
    ro.flags.writeable = False
    _raises(lambda: memra.module_call(rt.host, "host", "cvt_f16", src=x, dst=ro, n=100), "dst", "read-only")
    assert not ro.any()
    y = np.frombuffer(bytes(400), np.float32)  # memory of a bytes object
    _raises(lambda: memra.module_call(rt.host, "host", "scale", src=y, n=100, s=2.0), "src", "read-only")


@pytest.mark.parametrize("op,fields,needle", [
    ("cvt_f16", lambda: dict(src=np.zeros(10, np.float32), dst=np.zeros(9, np.float16), n=10), "dst"),
    ("scale", lambda: dict(src=np.zeros(10, np.float32), n=11, s=1.0), "src"),
    ("quant_q8_1", lambda: dict(src=np.zeros((2, 64), np.float32), dst=np.zeros(100, np.uint8), rows=2, cols=64),
     "dst"),
    ("dequant_f16", lambda: dict(format="q8_0", src=np.zeros(33, np.uint8), dst=np.zeros(32, np.float16), rows=1,
                                 cols=32), "src"),
    ("fp8_nan_count", lambda: dict(src=np.zeros(10, np.uint8), dst=np.zeros(1, np.uint32), n=10), "dst"),
    ("repack_q8_0", lambda: dict(src=np.zeros(34, np.uint8), dst=np.zeros(143, np.uint8), rows=1, cols=32), "dst"),
])
def test_other_ops_are_sized(rt, op, fields, needle):
    _raises(lambda: memra.module_call(rt.host, "host", op, **fields()), needle)
    assert rt.ledger().hits() == 0


def test_gemm_w16_operand_is_sized(rt, rng):
    # the W16 operand of a 16 x 64 Q8_0 weight: one row tile, two groups of (4096 codes + 256 scale) bytes
    from memra.runtime import format_id
    m, n, k = 2, 16, 64
    x, y = rand(rng, m, k), np.zeros((m, n), np.float32)
    w = np.zeros(2 * (4096 + 256), np.uint8)
    g = dict(m=m, n=n, k=k, x=x, y=y, w_format=format_id("q8_0"))
    _raises(lambda: memra.module_call(rt.host, "host", "gemm_w16", gemm=dict(g, w=w[:-1].copy())),
            "gemm.w", "needs 8704")
    _raises(lambda: memra.module_call(rt.host, "host", "gemm_w16", gemm=dict(g, w=w, x=x.astype(np.float16))),
            "gemm.x", "float32")
    assert rt.ledger().hits() == 0
    memra.module_call(rt.host, "host", "gemm_w16", gemm=dict(g, w=w))  # the right sizes pass (scales 0: y 0)
    assert not y.any()
    memra.module_call(rt.host, "host", "gemm_w16", gemm=dict(g, w=w, x=x.astype(np.float16), x_is_f16=1))


def test_buffer_too_small(rt):
    buf = rt.host.buffer(40)
    _raises(lambda: memra.module_call(rt.host, "host", "scale", src=buf, n=11, s=1.0), "src", "40 bytes")
    memra.module_call(rt.host, "host", "scale", src=buf, n=10, s=1.0)


# ---- matmul: writability of out -------------------------------------------------------------------

def test_matmul_out_read_only(rt, rng, tmp_path):
    W = memra.Weight.from_array(rt, rand(rng, 8, 32))
    x = rand(rng, 2, 32)
    ro = np.zeros((2, 8), np.float32)
    ro.flags.writeable = False
    _raises(lambda: memra.matmul(W, x, out=ro), "out", "read-only")
    assert not ro.any()
    _raises(lambda: memra.matmul(W, x, out=np.frombuffer(bytes(64), np.float32).reshape(2, 8)), "out", "read-only")
    p = tmp_path / "y.bin"
    p.write_bytes(bytes(64))
    mm = np.memmap(str(p), dtype=np.float32, mode="r", shape=(2, 8))  # was: SIGSEGV
    _raises(lambda: memra.matmul(W, x, out=mm), "out", "read-only")
    _raises(lambda: memra.matmul(W, x, out=b"\0" * 64), "out")
    assert rt.ledger().hits() == 0


# ---- None and NUL in paths and names --------------------------------------------------------------

def test_file_path_none_and_nul(rt, tmp_path):
    cwd = os.getcwd()
    os.chdir(str(tmp_path))
    try:
        (tmp_path / "None").write_bytes(b"GGUF")  # what File(rt, None) used to open
        _raises(lambda: memra.File(rt, None), "path", "None")
    finally:
        os.chdir(cwd)
    (tmp_path / "a").write_bytes(b"GGUF")
    _raises(lambda: memra.File(rt, str(tmp_path / "a") + "\0.gguf"), "path", "NUL")
    _raises(lambda: memra.File(rt, 42), "path")


def test_names_none_and_nul(rt, rng):
    _raises(lambda: rt.module_load(None), "path", "None")
    _raises(lambda: rt.module_load("/no/such\0.so"), "path", "NUL")
    _raises(lambda: rt.module_unload("host\0x"), "name", "NUL")
    _raises(lambda: memra.module_call(rt.host, "ho\0st", "scale", src=np.zeros(1, np.float32), n=1, s=1.0),
            "module", "NUL")
    _raises(lambda: memra.Weight.from_array(rt, rand(rng, 4, 32), name="w\0x"), "name", "NUL")
    memra.Weight.from_array(rt, rand(rng, 4, 32), name=None)  # no name is fine


def test_weight_name_from_file(rt, tmp_path):
    import struct
    # a minimal GGUF v3: one F32 tensor "w" [2 x 32]
    name = b"w"
    hdr = b"GGUF" + struct.pack("<IQQ", 3, 1, 0)
    info = struct.pack("<Q", len(name)) + name + struct.pack("<I", 2) + struct.pack("<QQ", 32, 2) + \
        struct.pack("<IQ", 0, 0)
    body = hdr + info
    body += b"\0" * ((32 - len(body) % 32) % 32)
    body += bytes(2 * 32 * 4)
    p = tmp_path / "m.gguf"
    p.write_bytes(body)
    with memra.File(rt, str(p)) as f:
        _raises(lambda: memra.Weight.from_file(rt, f, None), "name", "None")
        _raises(lambda: memra.Weight.from_file(rt, f, "w\0junk"), "name", "NUL")
        w = memra.Weight.from_file(rt, f, "w")
        assert w.shape == (2, 32)
