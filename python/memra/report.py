"""`python -m memra report`: merge bench receipts from several machines and runs.

Reads every receipt memra writes for timing: "memra-bench" (versions 1 to 4:
version 4's "per_device" section gives one set of rows per device; modes arms,
vs, lane, model and python), "memra-bench-raw", "memra-bench-accprobe" and
"memra-tune" (one row per race arm; sheet "tune"). The receipts without
timings ("memra-check", "memra-info", "memra-model-ls", "memra-jit-ls") and
other JSON files are skipped with a note on stderr saying exactly why. One
row per (receipt, shape, arm):

  machine  the host name (version-2 receipts), else "-"
  run      the receipt's folder name (e.g. h200-2026-11-29-j) and file stem
  gpu, driver, memra, commit ("-" before version 2), sheet, m, batch, shape, arm
  rate     flops / median time with its unit scaled by magnitude (GFLOP/s,
           TFLOP/s; GB/s for the non-GEMM lanes); CSV has flops_per_s and
           bytes_per_s as numbers, and tflops
  spread   half the interquartile range of the timed calls, relative to the
           median ("-" when the receipt has fewer than two times)
  ratio    speed against the shape's baseline arm, baseline_ms / arm_ms:
           f16 (mode arms), the first module (vs), the named baseline
           (python), the raw cuBLASLt arm of the same family (raw: f16_raw,
           fp8_raw, fp8blk_raw; raw arms are 1), s32 (accprobe)

Filters (--arm, --m, --sheet, --machine, --batch; each a comma-separated list) keep
the rows that match, before the table and the figures.

Plots (matplotlib, ``pip install ./python[plot]``): one figure per (sheet, m,
batch): the rate per shape, one bar per (machine or run, arm). One such group:
the figure is the file named; several: one file each, the name given plus the
group (FILE-27b-m512.png), each listed on stderr.
"""

import csv
import io
import json
import os
import sys
from collections import OrderedDict

COLUMNS = ["machine", "run", "gpu", "driver", "memra", "commit", "sheet", "m", "batch", "shape", "arm", "op",
           "median_ms", "spread", "rate", "ratio", "valid"]
CSV_COLUMNS = [c for c in COLUMNS if c != "rate"] + ["flops_per_s", "bytes_per_s", "tflops"]

# Receipts memra writes that carry no timings: why the report skips each.
NO_TIMINGS = {
    "memra-check": "a memra-check receipt holds pass/fail rows against the host reference, no timings",
    "memra-info": "a memra-info receipt describes devices and modules, no timings",
    "memra-model-ls": "a memra-model-ls receipt lists a model file's tensors and lanes, no timings",
    "memra-jit-ls": "a memra-jit-ls receipt lists JIT cache entries, no timings",
}


def rate_str(per_s, base="FLOP/s"):
    """A rate with its unit scaled by magnitude: 123.4 GFLOP/s, 1.23 TFLOP/s, 45.6 GB/s."""
    if not per_s or per_s <= 0:
        return "-"
    v, i = float(per_s), 0
    while i < 5 and v >= 1000.0:
        v /= 1000.0
        i += 1
    return ("%.1f %s%s" if v >= 100 else "%.2f %s%s") % (v, ["", "k", "M", "G", "T", "P"][i], base)


def _quartiles(times):
    t = sorted(x for x in times if isinstance(x, (int, float)))
    if len(t) < 2:
        return None

    def at(q):
        pos = q * (len(t) - 1)
        lo = int(pos)
        f = pos - lo
        return t[lo] * (1 - f) + t[lo + 1] * f if lo + 1 < len(t) else t[lo]
    return at(0.25), at(0.75)


def _spread(a, med):
    """Half the IQR relative to the median, from q1_ms/q3_ms or the times."""
    if not med or med <= 0:
        return None
    if isinstance(a.get("q1_ms"), (int, float)) and isinstance(a.get("q3_ms"), (int, float)):
        q = (a["q1_ms"], a["q3_ms"])
    else:
        q = _quartiles(a.get("times_ms") or [])
    if q is None:
        return None
    return 0.5 * (q[1] - q[0]) / med


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
    if not isinstance(d, dict):
        raise ReceiptError("%s: the JSON is not an object: not a memra receipt" % path)
    if "format" not in d:
        if "memra_tune" in d:  # memra tune before receipt version 2
            d = dict(d, format="memra-tune", version=1)
        else:
            raise ReceiptError("%s: no \"format\" key: not a memra receipt" % path)
    fmt = d["format"]
    if fmt in NO_TIMINGS:
        raise ReceiptError("%s: %s (not a bench receipt)" % (path, NO_TIMINGS[fmt]))
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
                bps = a.get("bytes_per_s") if flops in (None, 0) or a.get("flops_per_s") is None else None
                rows.append(dict(common, m=m, shape=s.get("shape", "%s->%s" % (s.get("in_f"), s.get("out_f"))),
                                 arm=a["arm"], op=a.get("op") or "-", median_ms=med,
                                 tflops=None if bps else _tflops(flops, med), ratio=_ratio(base.get("median_ms"), med),
                                 valid=a.get("valid", True), spread=_spread(a, med), bytes_per_s=bps))
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
                                     ratio=_ratio(raw.get("median_ms"), med) if raw else None, valid=True,
                                     spread=_spread(a, med)))
    elif fmt == "memra-bench-moe":
        # memra bench moe (issue 30): per (sheet, projection, routing) the grouped call and the loop of
        # per-expert calls; ratio = loop time / grouped time for the grouped row (the loop is the baseline);
        # version 2 adds the dense arm (the same lane over all rows: the same FLOPs in one GEMM), version 3
        # timestamp, commit and host
        if d.get("version") not in (1, 2, 3):
            raise ReceiptError("%s: memra-bench-moe version %r is newer than this report reads (1, 2, 3)" % (path, d.get("version")))
        if d.get("complete") is False:
            raise ReceiptError("%s: an incomplete memra-bench-moe receipt" % path)
        for r in d.get("rows", []):
            shape = "%s %s %s->%s %s" % (r.get("sheet", "-"), r.get("proj", "-"), r.get("in_f"), r.get("out_f"),
                                         r.get("routing", "-"))
            for arm, key in (("grouped", "grouped"), ("loop", "loop"), ("dense", "dense")):
                med = r.get(key + "_ms")
                if med is None:
                    continue  # a version 1 receipt has no dense arm
                a = {"times_ms": r.get(key + "_times_ms") or []}
                rows.append(dict(common, sheet="moe %s" % d.get("weight_format", "-"), m=r.get("m"), shape=shape,
                                 arm="%s (%s)" % (arm, r.get(key + "_lane", r.get("loop_lane", "-"))),
                                 op="gemm_experts" if arm == "grouped" else arm, median_ms=med, tflops=_tflops(r.get("flops"), med),
                                 ratio=_ratio(r.get("loop_ms"), med), valid=True, spread=_spread(a, med)))
    elif fmt == "memra-bench-accprobe":
        for s in d.get("shapes", []):
            shape = "%s->%s" % (s.get("in_f"), s.get("out_f"))
            arms = [(k[:-3], v) for k, v in s.items() if k.endswith("_ms") and isinstance(v, (int, float))]
            base = dict(arms).get("s32", arms[0][1] if arms else None)
            for name, med in arms:
                rows.append(dict(common, sheet="%s accprobe-%s" % (d.get("sheet", "-"), d.get("dist", "?")),
                                 shape=shape, arm="accprobe_" + name, op="accprobe", median_ms=med,
                                 tflops=_tflops(s.get("flops"), med), ratio=_ratio(base, med), valid=True))
    elif fmt == "memra-tune":
        if d.get("version") not in (1, 2, 3):  # 3 (issue 29): adds intervals, claims and the verify run
            raise ReceiptError("%s: memra-tune version %r is newer than this report reads (1, 2, 3)"
                               % (path, d.get("version")))
        common["gpu"] = d.get("device") if isinstance(d.get("device"), str) else common["gpu"]
        for res in d.get("results", []):
            arms = res.get("arms", [])
            b = res.get("baseline", -1)
            base = arms[b] if isinstance(b, int) and 0 <= b < len(arms) else None

            def ms(a):
                return a.get("median_ms", a["median_us"] * 1e-3 if a.get("median_us") else None)
            flops = 2.0 * res["m"] * res["n"] * res["k"]
            for a in arms:
                med = ms(a) if a.get("ok", True) else None
                name = a["module"] + ("." + a["variant"] if a.get("variant") else "")
                rows.append(dict(common, sheet="tune %s" % d.get("sheet", "-"), m=res["m"], batch=1,
                                 shape="%s->%s" % (res["k"], res["n"]), arm=name, op=res.get("op", "-"),
                                 median_ms=med, tflops=_tflops(flops, med),
                                 ratio=_ratio(ms(base), med) if base is not None and med else None,
                                 valid=bool(a.get("ok", True)), spread=_spread(a, med)))
    else:
        raise ReceiptError("%s: format %r is not a receipt this report reads (memra-bench, memra-bench-raw, "
                           "memra-bench-accprobe, memra-bench-moe, memra-tune)" % (path, fmt))
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


def _cell(v, key, row=None):
    if key == "rate" and row is not None:
        if row.get("bytes_per_s"):
            return rate_str(row["bytes_per_s"], "B/s")
        return rate_str(row["tflops"] * 1e12 if row.get("tflops") else None)
    if key in ("flops_per_s",) and row is not None:
        return row["tflops"] * 1e12 if row.get("tflops") else None
    if v is None:
        return "-"
    if key == "spread":
        return "+-%.1f%%" % (100.0 * v)
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
    if style == "csv":
        cols = columns or CSV_COLUMNS
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(cols)
        for r in rows:
            vals = []
            for c in cols:
                v = _cell(None, c, r) if c == "flops_per_s" else r.get(c)
                vals.append("" if v is None else v)
            w.writerow(vals)
        return buf.getvalue()
    cols = columns or COLUMNS
    cells = [[_cell(r.get(c), c, r) for c in cols] for r in rows]
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
    ext = os.path.splitext(path)[1].lower()  # the name first: a wrong one is wrong with or without matplotlib
    if ext not in (".png", ".svg", ".pdf"):
        raise RuntimeError("--plot %s: the file name must end in .png, .svg or .pdf" % path)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("--plot needs matplotlib: pip install ./python[plot] (or pip install matplotlib)") from None
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
        if n > 24:
            sys.stderr.write("memra report: the figure for %s has %d bars per shape (machine or run x arm); "
                             "--arm, --machine and --m keep the ones to compare\n" % (key, n))
        top = max([v for vals in series.values() for v in vals.values()] or [0.0])
        scale, unit = (1.0, "TFLOP/s") if top >= 1.0 else (1e3, "GFLOP/s")
        width = 0.8 / max(n, 1)
        fig, ax = plt.subplots(figsize=(max(6.0, 1.2 + len(shapes) * (0.35 + 0.12 * n)), 4.8 + 0.12 * n))
        cmap = plt.get_cmap("tab20" if n > 10 else "tab10")
        for i, (label, vals) in enumerate(series.items()):
            xs = [j + (i - (n - 1) / 2.0) * width for j in range(len(shapes))]
            ys = [vals.get(sh, 0.0) * scale for sh in shapes]
            ax.bar(xs, ys, width, label=label, color=cmap(i % cmap.N))
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels(shapes, rotation=20, ha="right")
        ax.set_ylabel(unit)
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


USAGE = """usage: python -m memra report RECEIPTS... [--md|--csv] [--plot FILE.png|.svg|.pdf] [-o FILE]
                              [--arm A,..] [--m M,..] [--sheet S,..] [--machine H,..]
  RECEIPTS  receipt files, or folders searched for *.json (memra-bench v1-v4, -raw, -accprobe,
            memra-tune; receipts without timings are skipped, saying why)
  --md      a Markdown table      --csv  CSV (default: aligned text)
  --plot F  one figure per (sheet, m, batch): the rate per arm per machine; one group is written
            to F itself, several to F's name plus the group (F-27b-m512.png); needs matplotlib
  --arm, --m, --sheet, --machine, --batch  keep only the rows that match (comma-separated lists)
  -o F      write the table to F instead of stdout
"""

FILTERS = {"--arm": "arm", "--m": "m", "--sheet": "sheet", "--machine": "machine", "--batch": "batch"}


def select(rows, filters):
    """The rows whose column matches one of the filter's values, for every filter ({column: [values]})."""
    out = []
    for r in rows:
        if all(str(r.get(col)) in vals for col, vals in filters.items()):
            out.append(r)
    return out


def main(argv):
    style, plot_path, out_path, paths, filters = "text", None, None, [], {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        key, eq, val = a.partition("=")
        if key in FILTERS:
            if not eq:
                if i + 1 >= len(argv):
                    sys.stderr.write("memra report: %s needs a value\n%s" % (a, USAGE))
                    return 2
                val = argv[i + 1]
                i += 1
            filters.setdefault(FILTERS[key], set()).update(v for v in val.split(",") if v)
        elif a == "--md":
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
    if filters:
        kept = select(rows, filters)
        if not kept:
            have = {col: sorted({str(r.get(col)) for r in rows}) for col in filters}
            sys.stderr.write("memra report: no row matches %s; the receipts have %s\n" % (
                ", ".join("%s=%s" % (c, ",".join(sorted(v))) for c, v in filters.items()),
                "; ".join("%s: %s" % (c, ", ".join(v[:20])) for c, v in have.items())))
            return 1
        rows = kept
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
        if len(files) > 1:
            sys.stderr.write("memra report: %d figures, one per (sheet, m, batch); --sheet, --m and --batch select one, "
                             "which is then written to %s itself\n" % (len(files), plot_path))
    return 0
