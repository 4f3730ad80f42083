#!/usr/bin/env python3
"""Tabulate device.sh krpre's receipts: the K-quant rows per MEMRA_MMQ_KR_WG arm.

usage: krpre_table.py DIR [BASE [TAG]]

DIR holds receipts named krpre_27b_m<M>_<ARM>_<ROUND>_<TAG>.json (bench 27b, one
per arm and round, the arms rotated within each round). For each m, format
(q4_k, q5_k) and shape: the median over rounds of each arm's median time (ms),
its time over the BASE arm's (default "0", the records tiles), and the speed
over GGML's figure the receipt quotes (issue 26's H200 table: cross-card unless
the run was on an H200). Then per (m, format, arm) the geometric means and the
range. An arm whose ledger showed no hit (valid false) is marked INVALID. TAG:
only the receipts whose names end in _<TAG>.json.
"""
import math
import os
import re
import sys
from collections import defaultdict

from receipt_util import arm_rows, geomean, ggml_ms, load, median

NAME = re.compile(r"^krpre_27b_m(\d+)_([A-Za-z0-9]+)_(\d+)_.*\.json$")
FORMATS = ("q4_k", "q5_k")


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    folder, base = argv[1], argv[2] if len(argv) > 2 else "0"
    tag = argv[3] if len(argv) > 3 else None
    times = defaultdict(list)  # (m, fmt, shape, arm) -> per-round medians
    valid = defaultdict(lambda: True)
    ggml = {}
    device = set()
    for name in sorted(os.listdir(folder)):
        mo = NAME.match(name)
        if not mo or (tag is not None and not name.endswith(f"_{tag}.json")):
            continue
        m, arm = int(mo.group(1)), mo.group(2)
        dev, d = load(os.path.join(folder, name))
        device.add(dev)
        for shape, a in arm_rows(d, FORMATS):
            key = (m, a["arm"], shape, arm)
            times[key].append(a["median_ms"])
            valid[key] = valid[key] and bool(a.get("valid", False))
            if ggml_ms(a):
                ggml[(m, a["arm"], shape)] = ggml_ms(a)
    if not times:
        print(f"krpre_table: no krpre_27b_m*_*.json receipts in {folder}", file=sys.stderr)
        return 1
    print("device:", ", ".join(sorted(device)))
    arms = sorted({k[3] for k in times}, key=lambda a: (a != base, a))
    summary = defaultdict(list)  # (m, fmt, arm) -> [(time / base, ggml / time)]
    for m in sorted({k[0] for k in times}):
        for fmt in FORMATS:
            shapes = [k[2] for k in times if k[0] == m and k[1] == fmt and k[3] == arms[0]]
            shapes = list(dict.fromkeys(shapes))
            if not shapes:
                continue
            print(f"\nm = {m}, {fmt}: ms (time / {base}; speed over GGML's quoted figure)")
            print("| shape | " + " | ".join(arms) + " |")
            print("| --- |" + " --- |" * len(arms))
            for sh in shapes:
                b = times.get((m, fmt, sh, base))
                bt = median(b) if b else None
                cells = []
                for arm in arms:
                    v = times.get((m, fmt, sh, arm))
                    if not v:
                        cells.append("-")
                        continue
                    t = median(v)
                    g = ggml.get((m, fmt, sh))
                    rel = t / bt if bt else float("nan")
                    summary[(m, fmt, arm)].append((rel, g / t if g else float("nan")))
                    cells.append(f"{t:.4f} ({rel:.3f}; {g / t:.2f}x)" if g else f"{t:.4f} ({rel:.3f})")
                    if not valid[(m, fmt, sh, arm)]:
                        cells[-1] += " INVALID"
                print(f"| {sh} | " + " | ".join(cells) + " |")
    print(f"\ngeomean (range): time / {base}; speed over GGML")
    for (m, fmt, arm), v in sorted(summary.items()):
        rel = [x[0] for x in v]
        sp = [x[1] for x in v if not math.isnan(x[1])]
        line = f"  m={m} {fmt} {arm}: {geomean(rel):.3f} ({min(rel):.3f}-{max(rel):.3f})"
        if sp:
            line += f"; {geomean(sp):.2f}x GGML ({min(sp):.2f}-{max(sp):.2f})"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
