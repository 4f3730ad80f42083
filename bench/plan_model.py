#!/usr/bin/env python3
"""gemm_q8_0r's tile plan (modules/kernels/mmq/mmq_ops.c plan_tiles) checked against receipts.

    python3 bench/plan_model.py RECORDS.json WG.json [AUTO.json]

RECORDS.json and WG.json: `memra bench` receipts of one m, run with MEMRA_MMQ_WG=0 (the records
plan) and MEMRA_MMQ_WG=all (the seeded warpgroup tile on every call), e.g. device.sh wgplan's
knobab receipts. For each shape it prints both plans as the model makes them (tile, slices, cost
in paired steps), the GEMM's measured time alone (the receipt's mmq_split records_gemm median, so
no quantiser and nothing between the ops), the time per unit of cost, which arm the model picks
below MMQ_WG_AUTO_M tokens, and which one ran faster; with AUTO.json (the default) also the whole
call's time under auto against the faster arm's.

The model's constants (k_plan_h200: FILL, LONE, BYTES, the records tiles' steps, step_wg) and
MMQ_WG_AUTO_M are read from mmq_ops.c; the tiles are memra__mmq_r3_tiles (128 x 128, 64 x 128,
128 x 96, 64 x 96 at R3_STAGES = 3 stages of 144-byte rows, two CTAs an SM where two fit) and the
warpgroup tile (128 x 128, one CTA an SM). The machine is the H100 / H200's: 132 SMs, 232448
bytes of shared memory a block. Standard library only.
"""
import json
import math
import os
import re
import sys

SMS = 132
OPTIN = 232448
ROW = 144
STAGES = 3
HERE = os.path.dirname(os.path.abspath(__file__))
OPS = os.path.join(HERE, "..", "modules", "kernels", "mmq", "mmq_ops.c")


def constants():
    src = open(OPS, encoding="utf-8").read()
    m = re.search(r"k_plan_h200 = \{([^;]*)\};", src)
    if not m:
        sys.exit(f"{OPS}: no k_plan_h200 initialiser")
    nums = [float(x) for x in re.findall(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", m.group(1))]
    fill, lone, nbytes = nums[0:3]
    step = nums[3:7]
    step_wg = nums[11]
    auto_m = int(re.search(r"#define MMQ_WG_AUTO_M (\d+)", src).group(1))
    return fill, lone, nbytes, step, step_wg, auto_m


def plan(tiles, m, n, k, c, force_split=0):
    """plan_tiles: the cheapest (cost, bm, bn, split) over tiles = [(bm, bn, smem, one, step)]"""
    fill, lone, nbytes = c[0], c[1], c[2]
    g = (k + 127) // 128
    best = None
    for bm, bn, smem, one, step in tiles:
        ty = (n + bn - 1) // bn
        two = not one and OPTIN >= 2 * smem + 1024
        ctas = (m + bm - 1) // bm * ty
        for s in range(1, 17):
            if force_split and s != force_split:
                continue
            if not force_split and s > 1 and (g // s < 4 or s * m * n * 4.0 > 256 * 1024 * 1024):
                continue
            per = (ctas * s + SMS - 1) // SMS
            steps = (g + s - 1) // s + fill
            rounds = per // 2 + (per % 2) * lone if two else per * lone
            cost = rounds * steps * step
            if s > 1:
                cost += (s + 1) * m * n * 4.0 / nbytes
            if best is None or cost < best[0]:
                best = (cost, bm, bn, s)
    return best


def records_tiles(step):
    shapes = [(128, 128), (64, 128), (128, 96), (64, 96)]
    return [(bm, bn, STAGES * (bm + bn) * ROW, 0, st) for (bm, bn), st in zip(shapes, step)]


def receipt(path):
    d = json.load(open(path))
    out = {}
    for s in d["shapes"]:
        sp = s.get("mmq_split") or {}
        whole = next((a["median_ms"] for a in s["arms"] if a["arm"] == "mmq"), None)
        out[s["shape"]] = (s["in_f"], s["out_f"], sp.get("records_gemm_median_ms"), whole)
    return d["m"], out


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    c = constants()
    fill, lone, nbytes, step, step_wg, auto_m = c
    m, rec = receipt(sys.argv[1])
    m2, wg = receipt(sys.argv[2])
    auto = receipt(sys.argv[3])[1] if len(sys.argv) == 4 else None
    if m2 != m:
        sys.exit(f"the receipts are of m = {m} and m = {m2}")
    print(f"m = {m}; FILL {fill}, LONE {lone}, BYTES {nbytes:g}, steps {step}, step_wg {step_wg}, auto below {auto_m}")
    hits = 0
    for shape, (k, n, t_rec, w_rec) in rec.items():
        t_wg, w_wg = wg[shape][2], wg[shape][3]
        pr = plan(records_tiles(step), m, n, k, c)
        split = plan([(128, 128, 0, 1, 1.0)], m, n, k, c)[3]
        pw = plan([(128, 128, 0, 1, step_wg)], m, n, k, c, force_split=split)
        model = "wg" if pw[0] < pr[0] else "rec"
        fast = "wg" if t_wg < t_rec else "rec"
        hits += model == fast
        line = (f"{shape:12s} rec {pr[1]}x{pr[2]}/{pr[3]} cost {pr[0]:6.1f} gemm {t_rec * 1e3:7.1f} us "
                f"({t_rec * 1e3 / pr[0]:.2f}) | wg /{pw[3]} cost {pw[0]:6.1f} gemm {t_wg * 1e3:7.1f} us "
                f"({t_wg * 1e3 / pw[0]:.2f}) | model {model:3s} faster {fast:3s}")
        if auto is not None:
            line += f" | auto call {auto[shape][3]:.4f} ms, {auto[shape][3] / min(w_rec, w_wg):.3f} of the faster call"
        print(line)
    print(f"the model picks the faster GEMM on {hits} of {len(rec)} shapes")


if __name__ == "__main__":
    main()
