#!/usr/bin/env python3
"""Writes the seed corpora under tests/fuzz/corpus/ (committed; rerun after a
change of a harness's input layout). Each seed is a small, hand-shaped input
that reaches one path of its harness: see the layout comments in
fuzz_jit_cache.c and fuzz_matmul.c."""
import hashlib
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- jit_cache_entry: mode byte + entry file -------------------------------
def entry(payload, key=b"\x5a" * 32, target=b"sm_90a", version=1, hsize=104, size=None, magic=b"MEMRAJIT"):
    hdr = magic + struct.pack("<II", version, hsize) + target.ljust(16, b"\0")[:16] + key
    hdr += struct.pack("<Q", len(payload) if size is None else size) + hashlib.sha256(payload).digest()
    return hdr + payload


cubin = bytes(range(256)) * 2
key = hashlib.sha256(b"memra fuzz seed key").digest()
J = "jit_cache_entry"
write(J, "valid_fixed_key", bytes([0x08]) + entry(cubin))            # passes, read through a file
write(J, "valid_own_key", bytes([0x0B]) + entry(cubin, key=key, target=b"sm_120a"))
write(J, "fixup_any_target", bytes([0x3D]) + entry(b"x" * 40, key=key))
write(J, "truncated_header", bytes([0x08]) + entry(cubin)[:60])
write(J, "wrong_magic", bytes([0x08]) + entry(cubin, magic=b"MEMRAJIX"))
write(J, "other_version", bytes([0x09]) + entry(cubin, key=key, version=2))
write(J, "wrong_header_size", bytes([0x09]) + entry(cubin, key=key, hsize=96))
write(J, "payload_short", bytes([0x09]) + entry(cubin, key=key, size=len(cubin) + 1))
write(J, "payload_trailing", bytes([0x09]) + entry(cubin, key=key) + b"tail")
write(J, "empty_payload", bytes([0x0D]) + entry(b"", key=key))
write(J, "target_unterminated", bytes([0x0B]) + entry(cubin, key=key, target=b"sm_90a_0123456789"))
write(J, "bad_checksum", bytes([0x09]) + entry(cubin, key=key)[:-1] + b"\0")


# ---- weight_matmul ---------------------------------------------------------
# format, out_f, in_f, size mode (3 = exact), grid mode, [scale], desc struct
# size code (1 = full), name (0 = named), m pick, ldy mode, [ldy pick], f16 x
# code, alpha code (0 = 1), args struct size code (1 = full), x_amax mode (0
# none, 1 the maxima, 2 misaligned), input_scale mode (0 none, 1 a float
# follows, 2 0.03125), then bytes (the weight's, the grid's, the maxima's, x).
def dim(n):
    if n % 8 == 0 and n < 512:
        return bytes([n // 8])  # take_dim: a code below 64 is 8 * code
    return bytes([128]) + struct.pack("<H", n)  # 128..191: two bytes, mod 600


def gmode_for(scale, grid, grid_null=False):
    for g in range(256):
        if (g & 1) == (scale is not None) and ((g >> 1) % 3 == 0) == grid and (g >> 3) % 4 == 0 and \
                ((g >> 5) % 5 == 0) == grid_null and (g >> 7) == 0:
            return g
    raise ValueError("no grid mode")


K_M = [1, 2, 3, 4, 7, 8, 16, 17, 0, -1, -2**31]
K_LDY = [0, 0, 1, 3, -1, -100, -2**63]


def mm(fmt, out_f, in_f, smode=3, scale=None, grid=False, m=2, off=0, ldy=None, f16=False, tail=b"", amax=0,
       in_scale=None):
    b = bytes([fmt]) + dim(out_f) + dim(in_f) + bytes([smode, gmode_for(scale, grid)])
    if scale is not None:
        b += struct.pack("<f", scale)
    b += bytes([1, 0, K_M.index(m)])
    lmode = (off + 1) << 2 | (0 if ldy is None else 1)
    b += bytes([lmode])
    if ldy is not None:
        b += bytes([K_LDY.index(ldy)])
    b += bytes([1 if f16 else 0, 0, 1, amax])
    b += bytes([0]) if in_scale is None else bytes([1]) + struct.pack("<f", in_scale)
    return b + tail


W = "weight_matmul"
F32, F16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, E4M3 = range(8)
write(W, "f32_32x32_m2", mm(F32, 32, 32))
write(W, "f16_40x64_m3_off1_ldy3", mm(F16, 40, 64, m=3, off=1, ldy=3))
write(W, "q8_0_64x96_m4", mm(Q8_0, 64, 96, m=4))
write(W, "q8_0_f16x", mm(Q8_0, 32, 64, f16=True))
write(W, "f16_f16x", mm(F16, 32, 64, f16=True))
write(W, "q4_0_33x64", mm(Q4_0, 33, 64))
write(W, "q4_k_8x256", mm(Q4_K, 8, 256))
write(W, "q5_k_16x256", mm(Q5_K, 16, 256))
write(W, "q6_k_8x256_m17", mm(Q6_K, 8, 256, m=17))
write(W, "e4m3_scale", mm(E4M3, 48, 64, scale=0.25))
write(W, "e4m3_grid_129x160", mm(E4M3, 129, 160, grid=True, m=1))
write(W, "e4m3_input_scale", mm(E4M3, 48, 64, scale=0.25, in_scale=0.01))
write(W, "e4m3_x_amax", mm(E4M3, 48, 64, scale=0.25, amax=1, m=3))
write(W, "e4m3_grid_x_amax", mm(E4M3, 129, 300, grid=True, amax=1, m=2, in_scale=0.02))
write(W, "e4m3_x_amax_misaligned", mm(E4M3, 48, 64, scale=0.25, amax=2))
write(W, "size_one_short", mm(F16, 32, 32, smode=2))
write(W, "bad_format", mm(9, 32, 32))
write(W, "ldy_below_out_f", mm(F32, 32, 32, ldy=-1))
write(W, "m_zero", mm(F32, 32, 32, m=0))
write(W, "struct_small", bytes([F32, 4, 4, 3, 2, 0, 0, 1, 4, 0, 0, 0, 0, 0]))


# ---- experts ---------------------------------------------------------------
# runtime (0 the defaults, 1 no mirror budget, 2 that and MEMRA_W16=1), format, E pick, out_f, in_f, size
# mode (3 = exact), grid mode, desc struct size code (1 = full), name (0 =
# named), then bytes (the weights', the scales' codes, the grid's codes), the
# call: rows pick, ldy mode, [ldy pick], f16 x code, alpha code (0 = 1), args
# struct size code (1 = full), each row's id code, then x.
K_E = [1, 2, 3, 4, 5, 8, 16, 64, 0, -1, 65536, 65537, 2**31 - 1, -2**31]
K_ROWS = [1, 2, 3, 5, 8, 16, 17, 33, 0, -1, -2**31]
ROW_BYTES = {F32: (1, 4), F16: (1, 2), Q8_0: (32, 34), Q4_0: (32, 18), Q4_K: (256, 144), Q5_K: (256, 176),
             Q6_K: (256, 210), E4M3: (1, 1), 8: (1, 2)}


def xdim(n):
    if n % 8 == 0 and 8 <= n <= 256:
        return bytes([n // 8 - 1 + 32])  # take_dim: codes 32..127 give 8 * (code % 32) + 8
    return bytes([128]) + struct.pack("<H", n)  # 128..191: two bytes, mod 300


def xe(rt, fmt, e, out_f, in_f, ids, smode=3, scales=False, grid=False, rows=None, off=0, ldy=None, f16=False):
    vals, nb = ROW_BYTES[fmt]
    g = 0
    for g in range(256):
        if (g & 1) == scales and ((g >> 1) % 3 == 0) == grid and (g >> 3) % 4 == 0 and (g >> 5) % 5 != 0 and \
                (g >> 7) == 0:
            break
    b = bytes([rt, fmt, K_E.index(e)]) + xdim(out_f) + xdim(in_f) + bytes([smode, g, 1, 0])
    wbytes = e * out_f * (in_f // vals) * nb
    mod = 0x70 if fmt == E4M3 else 251  # e4m3: no NaN codes (the per-tensor lane refuses them)
    b += bytes((0x21 + 7 * i) % mod for i in range(wbytes)) if fmt not in (F32, F16, 8) else \
        (struct.pack("<f", 0.25) * (wbytes // 4) if fmt == F32 else struct.pack("<e", 0.25) * (wbytes // 2))
    if scales:
        b += bytes([1]) * e  # codes not 0 mod 8: 0.125 * (1 + e % 5)
    if grid:
        b += bytes([1]) * (e * ((out_f + 127) // 128) * ((in_f + 127) // 128))
    rows = len(ids) if rows is None else rows
    lmode = (off + 1) << 2 | (0 if ldy is None else 1)
    b += bytes([K_ROWS.index(rows), lmode])
    if ldy is not None:
        b += bytes([K_LDY.index(ldy)])
    b += bytes([1 if f16 else 0, 0, 1])
    b += bytes(ids)
    return b


X = "experts"
write(X, "f32_e4_32x32", xe(0, F32, 4, 32, 32, [0, 1, 2, 3, 1]))
write(X, "f16_e3_f16x", xe(0, F16, 3, 16, 64, [2, 0, 1], f16=True))
write(X, "q8_0_e4_dropped", xe(0, Q8_0, 4, 16, 64, [3, 200, 1, 201, 0, 2, 240, 1]))
write(X, "q8_0_e4_w16", xe(2, Q8_0, 4, 16, 64, [3, 0, 1, 2, 0, 2, 1, 1]))
write(X, "q4_0_e2_w16_off1_ldy3", xe(2, Q4_0, 2, 24, 64, [1, 0, 1], off=1, ldy=3))
write(X, "q4_k_e2_w16", xe(2, Q4_K, 2, 8, 256, [1, 0, 1, 1, 0]))
write(X, "q5_k_e2_floor", xe(1, Q5_K, 2, 8, 256, [0, 1, 202]))
write(X, "q6_k_e3_w16", xe(2, Q6_K, 3, 8, 256, [2, 2, 0, 1, 0]))
write(X, "e4m3_e2_scales", xe(0, E4M3, 2, 16, 64, [0, 1, 1], scales=True))
write(X, "e4m3_e2_grid", xe(0, E4M3, 2, 129, 160, [1, 0], grid=True))
write(X, "bf16_e2", xe(0, 8, 2, 16, 32, [1, 0, 1]))
write(X, "size_one_short", xe(0, F16, 2, 16, 32, [0], smode=2))
write(X, "rows_zero", xe(0, F32, 2, 16, 16, [], rows=0))
write(X, "q8_0_e3_floor", xe(1, Q8_0, 3, 16, 64, [2, 0, 201, 1, 2]))
write(X, "q4_0_e2_floor_f16x", xe(1, Q4_0, 2, 16, 64, [1, 0], f16=True))
write(X, "q4_k_e2_floor", xe(1, Q4_K, 2, 8, 256, [1, 1, 0]))
write(X, "q6_k_e2_floor", xe(1, Q6_K, 2, 8, 256, [0, 1]))
write(X, "e4m3_e2_grid_floor", xe(1, E4M3, 2, 129, 160, [1, 0], grid=True))
write(X, "q5_k_e2_w16_dropped", xe(2, Q5_K, 2, 8, 256, [0, 202, 1]))
write(X, "ldy_below_out_f", xe(2, Q8_0, 2, 16, 32, [0, 1], ldy=-1))
