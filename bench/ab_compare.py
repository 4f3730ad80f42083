#!/usr/bin/env python3
"""Compare memra bench receipts of two builds run alternately (bench/device.sh ab).

usage: ab_compare.py BEFORE_1.json AFTER_1.json [BEFORE_2.json AFTER_2.json ...]

For each (m, shape, arm) it takes the median over the runs of each build's
per-run median time, prints after/before, and the geometric mean per arm; an
arm whose ledger showed no hit (valid false) in any run is marked INVALID.
"""
import json
import math
import sys
from collections import defaultdict


def load(path):
    with open(path) as f:
        d = json.load(f)
    out = {}
    for s in d["shapes"]:
        for a in s["arms"]:
            out[(d["m"], d.get("batch", 1), s["shape"], a["arm"])] = (a["median_ms"], a.get("valid", False))
    return out


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs = {"before": defaultdict(list), "after": defaultdict(list)}
    valid = defaultdict(lambda: True)
    for i, path in enumerate(argv):
        side = "before" if i % 2 == 0 else "after"
        for key, (ms, ok) in load(path).items():
            runs[side][key].append(ms)
            valid[key] &= bool(ok)
    keys = sorted(set(runs["before"]) & set(runs["after"]))
    per_arm = defaultdict(list)
    print("%-6s %-6s %-13s %-7s %11s %11s %8s" % ("m", "batch", "shape", "arm", "before ms", "after ms", "after/before"))
    for key in keys:
        b, a = median(runs["before"][key]), median(runs["after"][key])
        r = a / b if b > 0 else float("nan")
        per_arm[(key[0], key[1], key[3])].append(r)
        print("%-6s %-6s %-13s %-7s %11.4f %11.4f %8.3f%s" % (key[0], key[1], key[2], key[3], b, a, r,
                                                               "" if valid[key] else "  INVALID"))
    for (m, batch, arm), rs in sorted(per_arm.items()):
        g = math.exp(sum(math.log(x) for x in rs) / len(rs))
        print("AB m=%s batch=%s arm=%-7s time after/before: geomean %.3f, range %.3f..%.3f over %d shapes" %
              (m, batch, arm, g, min(rs), max(rs), len(rs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
