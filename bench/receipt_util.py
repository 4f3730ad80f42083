"""Helpers shared by the bench/*_table.py scripts that read `memra bench` receipts."""
import json
import math


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def arm_rows(d, names):
    """(shape, arm) for every arm of a receipt d whose name is in names, in receipt order"""
    for s in d["shapes"]:
        for a in s["arms"]:
            if a["arm"] in names:
                yield s["shape"], a


def ggml_ms(a):
    """GGML's figure quoted in the receipt beside arm a, in ms, or None"""
    us = a.get("ggml_issue_text_us")
    return us / 1000.0 if us else None


def load(path):
    """(the device's name, the receipt as parsed)"""
    with open(path) as f:
        d = json.load(f)
    dev = d.get("device", "?")
    return str(dev.get("name", dev) if isinstance(dev, dict) else dev), d
