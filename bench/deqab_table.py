#!/usr/bin/env python3
"""Tabulate device.sh deqab's receipts: the floor against the per-call dequantisation routes.

usage: deqab_table.py DIR [TAG]

DIR holds, per m, the receipts of three runs of `memra bench`:
  knobab_<sheet>_m<M>_MEMRA_Q8_0_RECORDS_0_<R>_on0_<TAG>.json   the floor (records made at prepare)
  knobab_<sheet>_m<M>_MEMRA_Q8_0_RECORDS_1_<R>_on0_<TAG>.json   no records: the raw copy's dequant_f16 + gemm_f16
  deqab_kr_<sheet>_m<M>_<TAG>.json                              MEMRA_FLOOR_F16_M=1: dequant_kr_f16 + gemm_f16
(in the knobab names the digit before the round is the arm: 1 = MEMRA_Q8_0_RECORDS=0; for the mmq arm, Q8_0,
that run is the floor on the blocks, gemm_q8_0, not a dequantisation). For each m, arm
(mmq = Q8_0, q4_0, q4_k, q5_k, q6_k) and shape: each run's median time (ms; the median over rounds where
there are several), the routes' time over the floor's, and the route's speed over GGML's figure where the
receipt quotes one (issue 26's H200 table: cross-card unless the run was on an H200). Then per (m, arm) the
geometric means and ranges. The floor's arm must be valid with the floor's own GEMM (its ledger showed
gemm_q8_0r / gemm_q8_0 / gemm_kr, not the route's dequant_kr_f16, which is off unless MEMRA_FLOOR_F16_M
sets it); the routes' arms are not filtered.
"""
import os
import re
import sys
from collections import defaultdict

from receipt_util import arm_rows, geomean, ggml_ms, load, median

KNOB = re.compile(r"^knobab_[a-z0-9]+_m(\d+)_MEMRA_Q8_0_RECORDS_([01])_(\d+)_on0_.*\.json$")
ROUTE = re.compile(r"^deqab_kr_[a-z0-9]+_m(\d+)_.*\.json$")
ARMS = ("mmq", "q4_0", "q4_k", "q5_k", "q6_k")
RUNS = ("floor", "raw", "route")


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    folder, tag = argv[1], argv[2] if len(argv) > 2 else None
    times = defaultdict(list)  # (m, arm, shape, run) -> medians
    floor_ok = defaultdict(lambda: True)
    ggml, device = {}, set()
    for name in sorted(os.listdir(folder)):
        if tag is not None and not name.endswith(f"_{tag}.json"):
            continue
        mk, mr = KNOB.match(name), ROUTE.match(name)
        if mk:
            m, run = int(mk.group(1)), "raw" if mk.group(2) == "1" else "floor"
        elif mr:
            m, run = int(mr.group(1)), "route"
        else:
            continue
        dev, d = load(os.path.join(folder, name))
        device.add(dev)
        for shape, a in arm_rows(d, ARMS):
            key = (m, a["arm"], shape, run)
            times[key].append(a["median_ms"])
            if run == "floor":
                # valid and the floor's own GEMM (a routed arm is valid too, its op dequant_kr_f16)
                floor_ok[key] = floor_ok[key] and bool(a.get("valid", False)) and a.get("op") != "dequant_kr_f16"
            if ggml_ms(a):
                ggml[(m, a["arm"], shape)] = ggml_ms(a)
    if not times:
        print(f"deqab_table: no deqab receipts in {folder}", file=sys.stderr)
        return 1
    print("device:", ", ".join(sorted(device)))
    summary = defaultdict(list)  # (m, arm, run) -> time / floor
    for m in sorted({k[0] for k in times}):
        for arm in ARMS:
            shapes = list(dict.fromkeys(k[2] for k in times if k[0] == m and k[1] == arm))
            if not shapes:
                continue
            print(f"\nm = {m}, {arm}: ms (time / floor; the route's speed over GGML's quoted figure)")
            print("| shape | floor | raw dequant_f16 + gemm_f16 | dequant_kr_f16 + gemm_f16 |")
            print("| --- | --- | --- | --- |")
            for sh in shapes:
                fl = times.get((m, arm, sh, "floor"))
                fm = median(fl) if fl else None
                cells = [f"{fm:.4f}" + ("" if floor_ok[(m, arm, sh, "floor")] else " INVALID") if fm else "-"]
                for run in ("raw", "route"):
                    t = times.get((m, arm, sh, run))
                    if not t:
                        cells.append("-")
                        continue
                    tm = median(t)
                    c = f"{tm:.4f}"
                    if fm:
                        c += f" ({tm / fm:.3f}"
                        summary[(m, arm, run)].append(tm / fm)
                        g = ggml.get((m, arm, sh))
                        c += f"; {g / tm:.2f}x GGML)" if g and run == "route" else ")"
                    cells.append(c)
                print(f"| {sh} | " + " | ".join(cells) + " |")
    print()
    for (m, arm, run), r in sorted(summary.items()):
        print(f"  m={m} {arm} {run} / floor: {geomean(r):.3f} ({min(r):.3f}-{max(r):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
