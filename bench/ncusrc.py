#!/usr/bin/env python3
"""Summarise ncu's source page (bench/device.sh ncusrc: ncusrc_<name>.csv, one row per SASS
instruction with its warp-stall samples) by opcode and by loop.

    python3 bench/ncusrc.py logs/<run>/ncusrc_q8_0r.csv [--top 25]

The page's column names differ between ncu versions, so the reader looks them up: the SASS text
column ("Source"), the address column ("Address"), and every column whose header mentions
"Samples" or "Stall" and holds numbers. Loops are found from the backward branches in the SASS
text (BRA to a lower address), as bench/RESULTS.md's loop counts are. Prints, per sampled column:
the total, the share of each opcode (its first dotted word), the share inside each loop, and the
top instructions. With --reasons, each loop's samples by stall reason (the page's stall_<reason>
columns, all samples not only the unissued ones: which share of a loop's warps waited on what).
Standard library only.
"""
import argparse
import collections
import csv
import re
import sys


def read_page(path):
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        rows = list(csv.reader(f))
    head = None
    for i, r in enumerate(rows):
        if any(c.strip() == "Source" for c in r) and any("Address" in c for c in r):
            head = i
            break
    if head is None:
        sys.exit(f"{path}: no header row with 'Source' and 'Address' (is this ncu's --page source --csv output?)")
    names = [c.strip() for c in rows[head]]
    body = [r for r in rows[head + 1:] if len(r) == len(names)]
    return names, body


def number(s):
    s = s.strip().replace(",", "")
    try:
        return float(s)
    except ValueError:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--reasons", action="store_true", help="each loop's samples by stall reason")
    a = ap.parse_args()
    names, body = read_page(a.csv)
    src = names.index("Source")
    adr = next(i for i, n in enumerate(names) if "Address" in n)
    cols = [i for i, n in enumerate(names)
            if ("Samples" in n or "Stall" in n) and i not in (src, adr)
            and sum(number(r[i]) is not None for r in body) > len(body) // 2]
    if not cols:
        sys.exit(f"{a.csv}: no sampled columns among {names}")
    ins = []
    for r in body:
        try:
            addr = int(r[adr].strip(), 16)
        except ValueError:
            continue
        ins.append((addr, r[src].strip(), [number(r[i]) or 0.0 for i in cols]))
    ins.sort()
    loops = []
    for addr, text, _ in ins:
        m = re.search(r"\bBRA\b.*?0x([0-9a-fA-F]+)", text)
        if m and int(m.group(1), 16) < addr:
            loops.append((int(m.group(1), 16), addr))

    def opcode(text):
        return re.sub(r"^@!?U?P\w+\s+", "", text).split(" ")[0].split(".")[0] if text else "?"

    for k, i in enumerate(cols):
        total = sum(v[k] for _, _, v in ins)
        print(f"== {names[i]}: {total:.0f} samples over {len(ins)} instructions")
        if total <= 0:
            continue
        by = collections.Counter()
        for _, text, v in ins:
            by[opcode(text)] += v[k]
        print("   by opcode: " + ", ".join(f"{o} {100 * s / total:.1f}%" for o, s in by.most_common(14)))
        for lo, hi in loops:
            s = sum(v[k] for addr, _, v in ins if lo <= addr <= hi)
            n = sum(1 for addr, _, _ in ins if lo <= addr <= hi)
            print(f"   loop {lo:#x}-{hi:#x} ({n} instructions): {100 * s / total:.1f}%")
        print(f"   top {a.top}:")
        for addr, text, v in sorted(ins, key=lambda t: -t[2][k])[:a.top]:
            print(f"     {addr:#07x} {100 * v[k] / total:5.1f}%  {text[:90]}")


    if a.reasons:
        reasons = [(i, n[len("stall_"):]) for i, n in enumerate(names)
                   if n.startswith("stall_") and "Not Issued" not in n]
        rows = []
        for r in body:
            try:
                rows.append((int(r[adr].strip(), 16), [number(r[i]) or 0.0 for i, _ in reasons]))
            except ValueError:
                continue
        every = sum(sum(v) for _, v in rows)
        print(f"== stall reasons by loop ({len(reasons)} reasons, {every:.0f} samples)")
        for lo, hi in loops:
            sums = [sum(v[j] for addr, v in rows if lo <= addr <= hi) for j in range(len(reasons))]
            s = sum(sums)
            if every <= 0 or s <= 0:
                continue
            top = sorted(zip(sums, (n for _, n in reasons)), reverse=True)
            print(f"   loop {lo:#x}-{hi:#x}: {100 * s / every:.1f}% of samples; "
                  + ", ".join(f"{n} {100 * v / s:.1f}" for v, n in top if v / s >= 0.02))


if __name__ == "__main__":
    main()
