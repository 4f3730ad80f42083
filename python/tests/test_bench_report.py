"""memra.bench's protocol and receipt; `python -m memra report` on the committed receipts."""

import csv
import glob
import io
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np
import pytest

import memra
import memra.bench as mb
from memra import report

from conftest import PYDIR, REPO

RECEIPTS = os.path.join(REPO, "bench", "receipts")


def _bench_files():
    out = []
    for p in sorted(glob.glob(os.path.join(RECEIPTS, "**", "*.json"), recursive=True)):
        with open(p) as f:
            if json.load(f).get("format", "").startswith("memra-bench"):
                out.append(p)
    return out


# ---- the harness ---------------------------------------------------------------------------

def test_bench_protocol_on_host(rt, rng, tmp_path):
    k, n, m = 256, 64, 8
    W = memra.Weight.from_array(rt, rng.uniform(0.01, 0.5, (n, k)).astype(np.float32))
    x = rng.uniform(0.25, 4.0, (m, k)).astype(np.float32)
    y = np.zeros((m, n), np.float32)
    calls = []
    wt = np.asarray(rng.uniform(0.01, 0.5, (n, k)), np.float32)

    def numpy_arm():
        calls.append("numpy")
        np.matmul(x, wt.T)

    arms = [mb.matmul_arm("memra", W, x, y, expect=("gemm_f16", "host")),
            mb.python_arm("numpy", numpy_arm),
            mb.matmul_arm("wrong", W, x, y, expect="gemm_fp8")]  # claims an op that never runs
    b = mb.Bench(rt.host, reps=4, warmup=2, flush_l2=True, flush_bytes=1 << 20, sheet="test")
    calls_before = rt.ledger().hits("gemm_f16", "host")
    entry = b.case("%d->%d" % (k, n), in_f=k, out_f=n, m=m, arms=arms)
    # warm-up 2 + 4 timed per arm; the flush ran before each of the 12 timed calls
    assert len(calls) == 6
    assert rt.ledger().hits("gemm_f16", "host") - calls_before == 2 * 6  # two memra arms, 2 + 4 calls each
    assert rt.ledger().hits("scale", "host") == 12
    a = {r["arm"]: r for r in entry["arms"]}
    assert a["memra"]["valid"] and a["numpy"]["valid"] and not a["wrong"]["valid"]
    assert "INVALID" in a["wrong"]["note"]
    assert a["memra"]["served"] == [{"op": "gemm_f16", "module": "host", "hits": 4}]  # timed calls only
    assert a["numpy"]["served"] == [] and a["numpy"]["kind"] == "python"
    for r in entry["arms"]:
        assert len(r["times_ms"]) == 4 and all(t > 0 for t in r["times_ms"])
        assert r["median_ms"] == pytest.approx(float(np.median(r["times_ms"])), rel=1e-5)
        assert r["flops_per_s"] == pytest.approx(2.0 * m * n * k / (r["median_ms"] * 1e-3))
    assert a["memra"]["ratio"] == 1.0
    assert a["numpy"]["ratio"] == pytest.approx(a["memra"]["median_ms"] / a["numpy"]["median_ms"])
    rec = b.write(str(tmp_path / "r.json"))
    disk = json.load(open(tmp_path / "r.json"))
    assert disk == json.loads(json.dumps(rec))
    assert rec["invalid_arms"] == ["wrong"] and rec["mode"] == "python" and rec["version"] == 3
    assert set(rec["geomean_ratio"]) == {"memra", "numpy", "wrong"}
    # every key of the C program's receipt header is there (tools/bench.c, bench/README.md)
    c_receipt = json.load(open(os.path.join(RECEIPTS, "h200-2026-11-29-j", "bench_27b_m512_j.json")))
    header = set(c_receipt) - {"geomean_ratio_to_f16"}
    assert header <= set(rec), header - set(rec)
    assert set(c_receipt["device"]) <= set(rec["device"])
    assert {"commit", "host", "clocks"} <= set(rec)
    assert {"arm", "op", "times_ms", "median_ms", "flops_per_s", "valid", "note", "served"} <= set(rec["shapes"][0]["arms"][0])
    rows = report.load(str(tmp_path / "r.json"))
    assert [r["arm"] for r in rows] == ["memra", "numpy", "wrong"] and rows[2]["valid"] is False
    assert "memra" in b.table() and "INVALID" in b.table()


def test_bench_rotates_the_first_arm(rt):
    order = []
    arms = [mb.python_arm(c, (lambda c=c: order.append(c))) for c in "abc"]
    mb.Bench(rt.host, reps=3, warmup=0).case("s", 1, 1, 1, arms)
    assert order == list("abc" "bca" "cab")


def test_bench_bad_input(rt):
    with pytest.raises(memra.InvalidArgumentError):
        mb.Bench(rt.host, reps=0)
    b = mb.Bench(rt.host, reps=1, warmup=0)
    with pytest.raises(memra.InvalidArgumentError):
        b.case("s", 1, 1, 1, [])
    f = mb.python_arm("a", lambda: None)
    with pytest.raises(memra.InvalidArgumentError):
        b.case("s", 1, 1, 1, [f, f])


def test_module_arms_race_two_modules(testmods, rng):
    """The tuning experiment on the host device: two modules' `scale`, raced."""
    with memra.Runtime(no_cuda=True, module_path=testmods, no_default_modules=True) as rt:
        buf = np.ones(4096, np.float32)
        arms = [mb.module_arm(mod, rt.host, mod, "scale", src=buf, n=4096, s=1.0) for mod in ("host", "testgood")]
        b = mb.Bench(rt.host, reps=3, warmup=1)
        e = b.case("4096", 4096, 1, 1, arms, flops=4096)
        assert [a["valid"] for a in e["arms"]] == [True, True]
        assert [a["served"] for a in e["arms"]] == [[{"op": "scale", "module": "host", "hits": 3}],
                                                   [{"op": "scale", "module": "testgood", "hits": 3}]]
        odd = mb.module_arm("decl", rt.host, "testdecline", "scale", src=buf, n=7, s=1.0)
        with pytest.raises(memra.DeclinedError):
            b.case("7", 7, 1, 1, [odd])


# ---- the report ---------------------------------------------------------------------------

def test_report_reads_every_committed_receipt():
    files = _bench_files()
    assert len(files) >= 20
    for p in files:
        rows = report.load(p)
        assert rows, p
        d = json.load(open(p))
        for r in rows:
            # the lent cards: an H200, or an H100 since run i1, each receipt in its card's folder
            assert r["gpu"] in ("NVIDIA H200", "NVIDIA H100 80GB HBM3") and r["memra"] == "0.1.0", (p, r["gpu"])
            if "/h100-" in str(p):
                assert "H100" in r["gpu"], (p, r["gpu"])
            # (the first torch-op receipts, run p2, were written before the script recorded the driver)
            assert r["driver"] == "13.0" or (d.get("mode") == "python" and "driver_version" not in d), (p, r["driver"])
            # commit and host from memra-bench version 2, memra-bench-moe and memra-bench-raw version 3 on
            first = 3 if d["format"] in ("memra-bench-moe", "memra-bench-raw") else 2
            if d.get("version", 1) < first:
                assert r["commit"] == "-" and r["machine"] == "-"  # earlier versions have neither
            else:
                assert r["commit"] not in ("-", "") and r["machine"] not in ("-", "")
            if r["median_ms"]:
                assert r["tflops"] > 0
        if d["format"] == "memra-bench" and d["mode"] == "arms":
            f16 = [r for r in rows if r["arm"] == "f16"]
            assert f16 and all(r["ratio"] == 1.0 for r in f16)
            s0 = d["shapes"][0]
            mmq = [a for a in s0["arms"] if a["arm"] == "mmq"][0]
            row = [r for r in rows if r["shape"] == s0["shape"] and r["arm"] == "mmq"][0]
            assert row["tflops"] == pytest.approx(mmq["flops_per_s"] / 1e12, rel=1e-4)
            assert row["ratio"] == pytest.approx(mmq["ratio_to_f16"], rel=1e-3)
        if d["format"] == "memra-bench-raw":
            s0 = d["sheets"][0]["shapes"][0]
            row = [r for r in rows if r["shape"] == s0["shape"] and r["arm"] == "fp8"][0]
            assert row["ratio"] == pytest.approx(s0["ratios"]["fp8"], rel=1e-3)


def test_report_reads_a_version_2_raw_receipt(tmp_path):
    """memra-bench-raw version 2 (issue 25): a per-shape quant_bound and more verdicts, the same arms."""
    src = os.path.join(RECEIPTS, "h200-2026-12-02-q", "raw_27b_m512_h200-2026-12-02-q6.json")
    d = json.load(open(src))
    assert d["version"] == 1
    d["version"] = 2
    for sh in d["sheets"]:
        for s in sh["shapes"]:
            s["quant_bound"] = {"op": "gemm_fp8", "bytes_read": 1, "bytes_written": 1, "bytes": 2, "copy_bytes": 1,
                                "copy_times_ms": [0.01], "copy_ms": 0.01, "cost_ms": 0.012, "x_bound": 1.2,
                                "best_ratio": 0.9}
        sh["quant_bound"] = {"max_x_bound": 1.2, "geomean_best_ratio": 0.9}
        sh["verdicts"].append({"target": "fp8_quant", "measure": "max_x_bound", "value": 1.2, "threshold": 1.25,
                               "bound": "at_most", "issue": 25, "met": True, "missed_by_pct": 0})
    out = tmp_path / "raw_v2.json"
    out.write_text(json.dumps(d))
    rows, rows1 = report.load(str(out)), report.load(src)
    assert rows and len(rows) == len(rows1)
    assert {r["arm"] for r in rows} == {r["arm"] for r in rows1} and "copy" not in {r["arm"] for r in rows}


def test_report_reads_the_c_programs_receipt(build_dir, tmp_path):
    exe = os.path.join(build_dir, "bin", "memra")
    if not os.path.exists(exe):
        pytest.skip("no memra program in the build")
    out = tmp_path / "v3.json"
    r = subprocess.run([exe, "bench", "--device", "host", "--reps", "1", "--m", "2", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    d = json.load(open(out))
    assert d["version"] == 3 and d["host"] and d["commit"] and d["clocks"]["timer"] == "monotonic"
    rows = report.load(str(out))
    assert rows and all(x["machine"] == d["host"] and x["commit"] == d["commit"] for x in rows)
    merged, skipped = report.collect([str(out), os.path.join(RECEIPTS, "h200-2026-11-29-j")])
    assert {x["machine"] for x in merged} == {d["host"], "-"} and not skipped


def test_report_reads_a_version_4_receipt_of_every_device(build_dir, tmp_path):
    """memra bench --device all on two fake devices (one forced to cuda): one row set per device."""
    exe = os.path.join(build_dir, "bin", "memra")
    if not os.path.exists(exe):
        pytest.skip("no memra program in the build")
    out = tmp_path / "v3.json"
    env = dict(os.environ, MEMRA_TEST_FAKE_DEVICES="2", MEMRA_ARCH="1:cuda")
    r = subprocess.run([exe, "bench", "--device", "all", "--reps", "1", "--m", "2", "--json", str(out)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    d = json.load(open(out))
    assert d["version"] == 4 and [p["device_index"] for p in d["per_device"]] == [0, 1]
    assert [p["device"]["profile"] for p in d["per_device"]] == ["sm90", "cuda"]
    assert d["shapes"] == d["per_device"][0]["shapes"]
    rows = report.load(str(out))
    gpus = sorted({x["gpu"] for x in rows})
    assert gpus == ["fake device 0 [0 sm90]", "fake device 1 [1 cuda]"]
    per = len(rows) // 2
    assert per > 0 and len(rows) == 2 * per


def _cli(*args, env=None):
    e = dict(os.environ)
    e["PYTHONPATH"] = PYDIR + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "memra", "report"] + list(args), capture_output=True, text=True,
                          env=e, timeout=300)


def test_report_cli_tables():
    r = _cli(RECEIPTS)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:6] == ["machine", "run", "gpu", "driver", "memra", "commit"]
    assert "skipped" in r.stderr and "memra-check" in r.stderr
    # one line per row of every receipt the report reads (bench kinds, and memra-tune since run q3)
    nrows = 0
    for p in sorted(glob.glob(os.path.join(RECEIPTS, "**", "*.json"), recursive=True)):
        try:
            nrows += len(report.load(p))
        except report.ReceiptError:
            pass  # named on stderr as skipped (memra-check, ...)
    assert len(lines) == nrows + 1
    md = _cli(os.path.join(RECEIPTS, "h200-2026-11-29-j"), "--md")
    assert md.returncode == 0
    mdl = md.stdout.splitlines()
    assert mdl[0].startswith("| machine | run |") and set(mdl[1]) <= set("|- ") and len(mdl) == 2 + 2 * 6 * 4
    cs = _cli(os.path.join(RECEIPTS, "h200-2026-11-29-j"), "--csv")
    rows = list(csv.DictReader(io.StringIO(cs.stdout)))
    assert len(rows) == 48 and rows[0]["gpu"] == "NVIDIA H200"
    # one shape's arm from two runs stands together
    two = _cli(os.path.join(RECEIPTS, "h200-2026-11-29-j", "bench_27b_m512_j.json"),
               os.path.join(RECEIPTS, "h200-2026-11-29-i", "bench_27b_m512_i.json"), "--csv")
    rows = list(csv.DictReader(io.StringIO(two.stdout)))
    assert len(rows) == 48
    assert (rows[0]["shape"], rows[0]["arm"]) == (rows[1]["shape"], rows[1]["arm"]) == ("5120->12288", "f16")
    assert {rows[0]["run"], rows[1]["run"]} == {"h200-2026-11-29-j/bench_27b_m512_j",
                                                "h200-2026-11-29-i/bench_27b_m512_i"}
    assert _cli().returncode == 2 and _cli("/nonexistent.json").returncode == 2
    assert _cli("--bogus", RECEIPTS).returncode == 2
    h = _cli("--help")
    assert h.returncode == 0 and "usage" in h.stdout


def _png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", head[:8]
    assert head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def test_report_plot_png_and_svg(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "fig.png"
    r = _cli(os.path.join(RECEIPTS, "h200-2026-11-29-j"), os.path.join(RECEIPTS, "h200-2026-11-29-i"),
             "--plot", str(out))
    assert r.returncode == 0, r.stderr
    files = sorted(glob.glob(str(tmp_path / "fig-*.png")))
    # sheets: 27b m=512 and 27b m=512 batch=8 (run i and j each have both)
    assert [os.path.basename(f) for f in files] == ["fig-27b-m512-batch8.png", "fig-27b-m512.png"]
    for f in files:
        w, h = _png_size(f)
        assert w >= 600 and h >= 300 and os.path.getsize(f) > 20000
    svg = tmp_path / "one.svg"
    r = _cli(os.path.join(RECEIPTS, "h200-2026-11-29-j", "bench_27b_m512_j.json"), "--plot", str(svg))
    assert r.returncode == 0, r.stderr
    text = svg.read_text()
    assert "<svg" in text and "5120-&gt;12288" in text or "5120->12288" in text


def test_report_plot_without_matplotlib(tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None; sys.path.insert(0, %r); from memra import report; "
            "sys.exit(report.main([%r, '--plot', %r]))" % (PYDIR, os.path.join(RECEIPTS, "h200-2026-11-29-j"),
                                                             str(tmp_path / "x.png")))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 3 and "needs matplotlib" in r.stderr and "pip install ./python[plot]" in r.stderr
    assert not os.path.exists(tmp_path / "x.png")
    r = _cli(os.path.join(RECEIPTS, "h200-2026-11-29-j"), "--plot", str(tmp_path / "x.jpg"))
    assert r.returncode == 3 and ".png, .svg or .pdf" in r.stderr


def test_report_rejects_non_receipts(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"format": "memra-bench", "version": 9}')
    with pytest.raises(report.ReceiptError) as e:
        report.load(str(p))
    assert "version 9" in str(e.value)
    p.write_text("not json")
    with pytest.raises(report.ReceiptError):
        report.load(str(p))
    assert _cli(str(p)).returncode == 1


def test_example_race_on_host(tmp_path):
    """python/examples/race.py on the host device: the host module against numpy, a receipt and a figure."""
    rec, fig = tmp_path / "race.json", tmp_path / "race.png"
    cmd = [sys.executable, os.path.join(PYDIR, "examples", "race.py"), "--sheet", "tiny", "--m", "2", "--reps", "2",
           "--warmup", "1", "--json", str(rec)]
    have_mpl = True
    try:
        import matplotlib  # noqa: F401 (the figure is made only where it is installed)
        cmd += ["--plot", str(fig)]
    except ImportError:
        have_mpl = False
    # the host device even where a GPU is present (the race picks device 0)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ, MEMRA_ARCH="host"))
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.load(open(rec))
    assert d["mode"] == "python" and d["invalid_arms"] == [] and len(d["shapes"]) == 2
    assert [a["arm"] for a in d["shapes"][0]["arms"]] == ["host", "matmul", "matmul_bound", "numpy"]
    assert d["shapes"][0]["arms"][0]["served"] == [{"op": "gemm_f16", "module": "host", "hits": 2}]
    if have_mpl:
        assert _png_size(str(fig))[0] > 300


def test_python_m_memra_usage():
    e = dict(os.environ, PYTHONPATH=PYDIR)
    r = subprocess.run([sys.executable, "-m", "memra"], capture_output=True, text=True, env=e, timeout=60)
    assert r.returncode == 2 and "usage" in r.stdout
    r = subprocess.run([sys.executable, "-m", "memra", "frobnicate"], capture_output=True, text=True, env=e,
                       timeout=60)
    assert r.returncode == 2 and "unknown command" in r.stderr


def test_report_units_spread_filters_and_every_receipt_kind(build_dir, tmp_path):
    """Host receipts read in GFLOP/s (not 0.000 TFLOP/s) with a spread; tune receipts are rows; receipts without
    timings are skipped saying why; --arm/--m/--sheet/--machine filter; one selected group is the figure named."""
    exe = os.path.join(build_dir, "bin", "memra")
    if not os.path.exists(exe):
        pytest.skip("no memra program in the build")
    bench = tmp_path / "bench.json"
    r = subprocess.run([exe, "bench", "--device", "host", "--reps", "3", "--m", "2", "--quiet", "--json", str(bench)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    check = tmp_path / "check.json"
    r = subprocess.run([exe, "check", "--device", "host", "--op", "scale", "--quick", "--quiet", "--json", str(check)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    info = tmp_path / "info.json"
    subprocess.run([exe, "info", "--json", str(info)], capture_output=True, text=True, timeout=300, check=True)
    tune = tmp_path / "tune.json"
    tune.write_text(json.dumps({"format": "memra-tune", "version": 2, "device": "host", "sheet": "1p7b", "results": [
        {"op": "gemm_bf16", "m": 16, "n": 128, "k": 128, "m_class": 16, "winner": 1, "baseline": 0, "arms": [
            {"module": "host", "variant": "", "median_us": 100.0, "median_ms": 0.1, "q1_ms": 0.09, "q3_ms": 0.11,
             "hits": 4, "ok": True, "verdict": "ok"},
            {"module": "testgemm", "variant": "fast", "median_us": 50.0, "median_ms": 0.05, "q1_ms": 0.05,
             "q3_ms": 0.05, "hits": 4, "ok": True, "verdict": "ok"}]}]}))
    r = _cli(str(bench), str(check), str(info), str(tune))
    assert r.returncode == 0, r.stderr
    assert "memra-check receipt holds pass/fail rows" in r.stderr and "memra-info receipt" in r.stderr, r.stderr
    head = r.stdout.splitlines()[0].split()
    assert "rate" in head and "spread" in head and "tflops" not in head
    assert "GFLOP/s" in r.stdout and " 0.000 " not in r.stdout
    assert re.search(r"\+-[0-9.]+%", r.stdout)
    assert "testgemm.fast" in r.stdout and "tune 1p7b" in r.stdout
    rows = list(csv.DictReader(io.StringIO(_cli(str(tune), "--csv").stdout)))
    assert [x["arm"] for x in rows] == ["host", "testgemm.fast"] and float(rows[1]["ratio"]) == pytest.approx(2.0)
    # filters
    r = _cli(str(bench), "--arm", "f16,mmq", "--csv")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert rows and {x["arm"] for x in rows} == {"f16", "mmq"}
    assert _cli(str(bench), "--machine=nosuch").returncode == 1
    assert _cli(str(bench), "--m").returncode == 2
    r = _cli(os.path.join(RECEIPTS, "h200-2026-11-29-j"), "--sheet", "27b", "--m", "512", "--arm", "f16", "--csv")
    assert r.returncode == 0 and {x["arm"] for x in csv.DictReader(io.StringIO(r.stdout))} == {"f16"}
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    fig = tmp_path / "host.png"
    r = _cli(str(bench), "--plot", str(fig))
    assert r.returncode == 0 and os.path.exists(fig), r.stderr  # one (sheet, m) group: the name given
