"""`python -m memra report`: merge bench receipts from several machines and runs.

Reads every receipt memra writes for timing: "memra-bench" (versions 1 to 4:
version 4's "per_device" section gives one set of rows per device; modes arms,
vs, lane, model and python), "memra-bench-raw" and
"memra-bench-accprobe". Other JSON files (memra-check receipts, anything
else) are skipped with a note on stderr. One row per (receipt, shape, arm):

  machine  the host name (version-2 receipts), else "-"
  run      the receipt's folder name (e.g. h200-2026-11-29-j) and file stem
  gpu, driver, memra, commit ("-" before version 2), sheet, m, batch, shape, arm
  tflops   flops / median time (the unit is TFLOP/s everywhere, host included)
  ratio    speed against the shape's baseline arm, baseline_ms / arm_ms:
           f16 (mode arms), the first module (vs), the named baseline
           (python), the raw cuBLASLt arm of the same family (raw: f16_raw,
           fp8_raw, fp8blk_raw; raw arms are 1), s32 (accprobe)

Plots (matplotlib, ``pip install ./python[plot]``): one figure per sheet
(sheet, m, batch): TFLOP/s per shape, one bar per (machine or run, arm).
"""

import csv
import io
import json
import os
import sys
from collections import OrderedDict

COLUMNS = ["machine", "run", "gpu", "driver", "memra", "commit", "sheet", "m", "batch", "shape", "arm", "op",
           "median_ms", "tflops", "ratio", "valid"]


class ReceiptError(ValueError):
    """A file that is not a receipt this report reads (the message says why)."""


def _driver(v):
    if not v:
        return "-"
    return "%d.%d" % (v // 1000, (v % 1000) // 10)


def _run(path):
    parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
    stem = os.path.splitext(os.path.basename(path))[0]
    return "%s/%s" % (parent, stem) if parent else stem


def _tflops(flops, ms):
    if not ms or ms <= 0 or flops is None:
        return None
    return flops / (ms * 1e-3) / 1e12


def _ratio(base_ms, ms):
    if not base_ms or not ms or ms <= 0:
        return None
    return base_ms / ms


def load(path):
    """The rows of one receipt (list of dicts with COLUMNS), or ReceiptError."""
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        raise ReceiptError("%s: not a JSON receipt (%s)" % (path, e)) from None
    return rows_of(d, path)


def rows_of(d, path):
    """The rows of a receipt already parsed (e.g. memra.bench.Bench.receipt()); `path` names its run."""
    if not isinstance(d, dict) or "format" not in d:
        raise ReceiptError("%s: no \"format\" key: not a memra receipt" % path)
    fmt = d["format"]
    common = {"machine": d.get("host") or "-", "run": _run(path), "driver": _driver(d.get("driver_version")),
              "memra": d.get("memra", "-"), "commit": d.get("commit") or "-", "m": d.get("m"),
              "batch": d.get("batch", 1), "sheet": d.get("sheet", "-")}
    dev = d.get("device")
    common["gpu"] = dev.get("name", "-") if isinstance(dev, dict) else (dev or "-")
    rows = []
    if fmt == "memra-bench" and d.get("version") == 4 and isinstance(d.get("per_device"), list):
        # --device all: every device's object; the top level repeats the first one's figures
        for sub in d["per_device"]:
            if not isinstance(sub, dict) or "per_device" in sub:
                raise ReceiptError("%s: a per_device entry is not one device's receipt" % path)
            sdev = sub.get("device") if isinstance(sub.get("device"), dict) else {}
            label = "%s [%s %s]" % (sdev.get("name", "-"), sub.get("device_index", "?"), sdev.get("profile", "-"))
            for r in rows_of(dict(sub, format="memra-bench"), path):
                rows.append(dict(r, gpu=label))
        return rows
    if fmt == "memra-bench":
        if d.get("version") not in (1, 2, 3, 4):
            raise ReceiptError("%s: memra-bench version %r is newer than this report reads (1 to 4)"
                               % (path, d.get("version")))
        mode = d.get("mode", "arms")
        for s in d.get("shapes", []):
            arms = s.get("arms", [])
            if not arms:
                continue
            if mode == "arms":
                base = next((a for a in arms if a["arm"] == "f16"), arms[0])
            elif mode == "python":
                base = next((a for a in arms if a["arm"] == s.get("baseline")), arms[0])
            else:
                base = arms[0]
            m = s.get("m", d.get("m"))
            flops = s.get("flops")
            for a in arms:
                med = a.get("median_ms")
                rows.append(dict(common, m=m, shape=s.get("shape", "%s->%s" % (s.get("in_f"), s.get("out_f"))),
                                 arm=a["arm"], op=a.get("op") or "-", median_ms=med,
                                 tflops=_tflops(flops, med), ratio=_ratio(base.get("median_ms"), med),
                                 valid=a.get("valid", True)))
    elif fmt == "memra-bench-raw":
        if d.get("complete") is False:
            raise ReceiptError("%s: an incomplete memra-bench-raw receipt" % path)
        for sh in d.get("sheets", []):
            for s in sh.get("shapes", []):
                by = {a["arm"]: a for a in s.get("arms", [])}
                for a in s.get("arms", []):
                    name = a["arm"]
                    fam = name[:-4] if name.endswith("_raw") else name.split("_")[0]
                    raw = by.get(fam + "_raw")
                    med = a.get("median_ms")
                    rows.append(dict(common, sheet=sh.get("sheet", "-"), shape=s["shape"], arm=name,
                                     op=a.get("op") or "-", median_ms=med, tflops=_tflops(s.get("flops"), med),
                                     ratio=_ratio(raw.get("median_ms"), med) if raw else None, valid=True))
    elif fmt == "memra-bench-accprobe":
        for s in d.get("shapes", []):
            shape = "%s->%s" % (s.get("in_f"), s.get("out_f"))
            arms = [(k[:-3], v) for k, v in s.items() if k.endswith("_ms") and isinstance(v, (int, float))]
            base = dict(arms).get("s32", arms[0][1] if arms else None)
            for name, med in arms:
                rows.append(dict(common, sheet="%s accprobe-%s" % (d.get("sheet", "-"), d.get("dist", "?")),
                                 shape=shape, arm="accprobe_" + name, op="accprobe", median_ms=med,
                                 tflops=_tflops(s.get("flops"), med), ratio=_ratio(base, med), valid=True))
    else:
        raise ReceiptError("%s: format %r is not a bench receipt" % (path, fmt))
    return rows


def collect(paths, warn=None):
    """Rows of every receipt under `paths` (files, or folders searched for *.json)."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, _dirs, names in sorted(os.walk(p)):
                files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".json")]
        else:
            files.append(p)
    rows, skipped = [], []
    for f in files:
        try:
            rows += load(f)
        except ReceiptError as e:
            skipped.append(str(e))
            if warn:
                warn(str(e))
    return merge(rows), skipped


def merge(rows):
    """Order rows so one shape's arms from every machine and run stand together:
    by sheet, m, batch, shape and arm (each in first-seen order), then machine and run."""
    first = {}
    for r in rows:
        for k in ("sheet", "shape", "arm"):
            first.setdefault((k, r[k]), len(first))
    return sorted(rows, key=lambda r: (first[("sheet", r["sheet"])], r["m"] or 0, r["batch"] or 1,
                                       first[("shape", r["shape"])], first[("arm", r["arm"])], r["machine"],
                                       r["run"]))


def _cell(v, key):
    if v is None:
        return "-"
    if key == "tflops":
        return "%.3f" % v
    if key == "ratio":
        return "%.3f" % v
    if key == "median_ms":
        return "%.4f" % v
    if key == "valid":
        return "yes" if v else "INVALID"
    return str(v)


def table(rows, style="text", columns=None):
    """rows -> text: "text" (aligned), "md" (a Markdown table) or "csv"."""
    cols = columns or COLUMNS
    if style == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(cols)
        for r in rows:
            w.writerow(["" if r.get(c) is None else r.get(c) for c in cols])
        return buf.getvalue()
    cells = [[_cell(r.get(c), c) for c in cols] for r in rows]
    if style == "md":
        out = ["| " + " | ".join(cols) + " |", "|" + "|".join(" --- " for _ in cols) + "|"]
        out += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(out) + "\n"
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    fmt = "  ".join("%%-%ds" % w for w in widths)
    out = [fmt % tuple(cols)] + [fmt % tuple(row) for row in cells]
    return "\n".join(line.rstrip() for line in out) + "\n"


def sheets(rows):
    """{sheet key: rows} with key "<sheet> m=<m>[ batch=<n>]", in first-seen order."""
    out = OrderedDict()
    for r in rows:
        key = "%s m=%s" % (r["sheet"], r["m"])
        if r.get("batch") not in (None, 1):
            key += " batch=%s" % r["batch"]
        out.setdefault(key, []).append(r)
    return out


def _source(r):
    return r["machine"] if r["machine"] != "-" else r["run"].split("/")[0]


def plot(rows, path):
    """One figure per sheet: TFLOP/s per shape, a bar per (machine or run, arm).
    Writes `path` for one sheet, else <stem>-<sheet><ext> per sheet; returns the files."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("--plot needs matplotlib: pip install ./python[plot] (or pip install matplotlib)") from None
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".png", ".svg", ".pdf"):
        raise RuntimeError("--plot %s: the file name must end in .png, .svg or .pdf" % path)
    groups = sheets([r for r in rows if r.get("tflops")])
    if not groups:
        raise RuntimeError("--plot: no row has a rate to plot")
    files = []
    for key, rs in groups.items():
        shapes = list(OrderedDict.fromkeys(r["shape"] for r in rs))
        # a source that holds several receipts of the sheet is told apart by the file
        per_source = {}
        for r in rs:
            per_source.setdefault(_source(r), set()).add(r["run"])
        series = OrderedDict()
        for r in rs:
            src = _source(r)
            if len(per_source[src]) > 1:
                src = r["run"] if r["machine"] == "-" else "%s %s" % (src, r["run"].split("/")[-1])
            series.setdefault("%s %s" % (src, r["arm"]), {})[r["shape"]] = r["tflops"]
        n = len(series)
        width = 0.8 / max(n, 1)
        fig, ax = plt.subplots(figsize=(max(6.0, 1.2 + len(shapes) * (0.35 + 0.12 * n)), 4.8 + 0.12 * n))
        cmap = plt.get_cmap("tab20" if n > 10 else "tab10")
        for i, (label, vals) in enumerate(series.items()):
            xs = [j + (i - (n - 1) / 2.0) * width for j in range(len(shapes))]
            ys = [vals.get(sh, 0.0) for sh in shapes]
            ax.bar(xs, ys, width, label=label, color=cmap(i % cmap.N))
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels(shapes, rotation=20, ha="right")
        ax.set_ylabel("TFLOP/s")
        ax.set_title("memra bench: %s" % key)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize="x-small", ncol=max(1, n // 12 + 1), loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        if len(groups) == 1:
            out = path
        else:
            safe = "".join(c for c in key.replace(" ", "-") if c.isalnum() or c in "-_.")
            out = "%s-%s%s" % (os.path.splitext(path)[0], safe, ext)
        fig.savefig(out, dpi=110, bbox_inches="tight")
        plt.close(fig)
        files.append(out)
    return files


USAGE = """usage: python -m memra report RECEIPTS... [--md|--csv] [--plot FILE.png|.svg] [-o FILE]
  RECEIPTS  receipt files, or folders searched for *.json (memra-bench v1/v2, -raw, -accprobe)
  --md      a Markdown table      --csv  CSV (default: aligned text)
  --plot F  one figure per sheet (sheet, m, batch): TFLOP/s per arm per machine; needs matplotlib
  -o F      write the table to F instead of stdout
"""


def main(argv):
    style, plot_path, out_path, paths = "text", None, None, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        if a == "--md":
            style = "md"
        elif a == "--csv":
            style = "csv"
        elif a.startswith("--plot="):
            plot_path = a.split("=", 1)[1]
        elif a == "--plot" or a == "-o":
            if i + 1 >= len(argv):
                sys.stderr.write("memra report: %s needs a file name\n%s" % (a, USAGE))
                return 2
            if a == "--plot":
                plot_path = argv[i + 1]
            else:
                out_path = argv[i + 1]
            i += 1
        elif a.startswith("-") and a != "-":
            sys.stderr.write("memra report: unknown option %s\n%s" % (a, USAGE))
            return 2
        else:
            paths.append(a)
        i += 1
    if not paths:
        sys.stderr.write("memra report: no receipts given\n" + USAGE)
        return 2
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        sys.stderr.write("memra report: no such file or folder: %s\n" % ", ".join(missing))
        return 2
    rows, _skipped = collect(paths, warn=lambda m: sys.stderr.write("memra report: skipped %s\n" % m))
    if not rows:
        sys.stderr.write("memra report: no bench receipt among %s\n" % ", ".join(paths))
        return 1
    text = table(rows, style)
    if out_path and out_path != "-":
        with open(out_path, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if plot_path:
        try:
            files = plot(rows, plot_path)
        except RuntimeError as e:
            sys.stderr.write("memra report: %s\n" % e)
            return 3
        for f in files:
            sys.stderr.write("memra report: wrote %s\n" % f)
    return 0
