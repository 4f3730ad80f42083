"""The binding's API on the host device: runtime, devices, modules, routing, the
ledger, buffers, timers, errors, version and library finding."""

import ctypes.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import memra
from memra import _lib

from conftest import PYDIR, REPO


# ---- version and loading -----------------------------------------------------------

def test_version_matches_library_and_sources():
    assert memra.version().split(".")[:2] == memra.__version__.split(".")[:2]
    cm = open(os.path.join(REPO, "CMakeLists.txt")).read()
    assert re.search(r"project\(memra VERSION ([0-9.]+)", cm).group(1) == memra.__version__
    pp = open(os.path.join(PYDIR, "pyproject.toml")).read()
    assert re.search(r'^version = "([0-9.]+)"', pp, re.M).group(1) == memra.__version__


def test_version_mismatch_is_a_clear_error():
    with pytest.raises(memra.VersionMismatchError) as e:
        memra._check_version("0.1.0", "1.4.2")
    assert "0.1.0" in str(e.value) and "1.4.2" in str(e.value) and "MEMRA_LIBRARY" in str(e.value)
    memra._check_version("0.1.0", "0.1.7")  # a patch difference is accepted


def _import_in_subprocess(env_update, cwd=None, pkgdir=PYDIR):
    env = dict(os.environ)
    env.pop("MEMRA_LIBRARY", None)
    env.update(env_update)
    code = "import sys; sys.path.insert(0, %r); import memra; print(memra.library_path())" % pkgdir
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=cwd, timeout=60)


def test_memra_library_wrong_path_lists_it():
    r = _import_in_subprocess({"MEMRA_LIBRARY": "/nonexistent/dir/libmemra.so"})
    assert r.returncode != 0
    assert "cannot load libmemra" in r.stderr and "/nonexistent/dir/libmemra.so" in r.stderr
    assert "LibraryNotFound" in r.stderr and issubclass(_lib.LibraryNotFound, ImportError)


def test_memra_library_relative_path_refused():
    r = _import_in_subprocess({"MEMRA_LIBRARY": "build/lib/libmemra.so"}, cwd=REPO)
    assert r.returncode != 0 and "must be an absolute path" in r.stderr


def test_memra_library_not_libmemra():
    libc = ctypes.util.find_library("m")
    path = next((p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                             "/lib64/libm.so.6") if os.path.exists(p)), None)
    if path is None:
        pytest.skip("no libm path to try (%s)" % libc)
    r = _import_in_subprocess({"MEMRA_LIBRARY": path})
    assert r.returncode != 0 and "not libmemra" in r.stderr


def test_search_order_without_memra_library():
    places = _lib.candidates({})
    kinds = [k for _p, k in places]
    assert kinds[0] == "beside the package"
    assert kinds.index("install prefix") < kinds.index("build tree") < kinds.index("system loader")
    assert os.path.join(REPO, "build", "lib", "libmemra.so") in [p for p, _k in places]
    assert all(os.path.isabs(p) for p, k in places if k != "system loader")
    assert _lib.candidates({"MEMRA_LIBRARY": "/x/libmemra.so"}) == [("/x/libmemra.so", "MEMRA_LIBRARY")]


def test_nothing_found_lists_every_place(tmp_path):
    if ctypes.util.find_library("memra"):
        pytest.skip("a libmemra is installed system-wide: the system loader would find it")
    pkg = tmp_path / "pkg"
    os.makedirs(pkg)
    subprocess.run(["cp", "-r", os.path.join(PYDIR, "memra"), str(pkg)], check=True)
    r = _import_in_subprocess({"LD_LIBRARY_PATH": ""}, cwd=str(tmp_path), pkgdir=str(pkg))
    assert r.returncode != 0
    err = r.stderr
    assert str(pkg / "memra" / "libmemra.so") in err
    assert os.path.join(sys.prefix, "lib", "libmemra.so") in err
    assert "libmemra.so.0" in err and "system loader" in err
    assert "build tree" not in err  # a copy outside a checkout has no build tree to look in


def test_install_prefix_is_searched(tmp_path, build_dir):
    """A copy of the package outside the checkout finds <sys.prefix>/lib/libmemra.so only when it is there;
    here: beside the package, the next place in the order."""
    pkg = tmp_path / "pkg"
    os.makedirs(pkg)
    subprocess.run(["cp", "-r", os.path.join(PYDIR, "memra"), str(pkg)], check=True)
    lib = os.path.join(build_dir, "lib", "libmemra.so")
    os.symlink(os.path.realpath(lib), str(pkg / "memra" / "libmemra.so"))
    r = _import_in_subprocess({}, cwd=str(tmp_path), pkgdir=str(pkg))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(pkg / "memra" / "libmemra.so")


# ---- errors ---------------------------------------------------------------------

def test_status_table_matches_status_h():
    text = open(os.path.join(REPO, "include", "memra", "status.h")).read()
    header = [(int(v), n) for n, v in re.findall(r"X\((\w+), (\d+),", text)]
    assert header == memra.STATUSES
    for code, name in header:
        assert memra.status_str(code) != "unknown status", name
        assert memra.error_class(code).status == (code if code else None) or code == 0
    assert memra.status_str(999) == "unknown status"


def test_error_carries_status_and_last_error(rt):
    with pytest.raises(memra.InvalidArgumentError) as e:
        memra.Weight(rt, b"\x00" * 33, "q8_0", (1, 32))
    err = e.value
    assert isinstance(err, memra.Error) and isinstance(err, ValueError)
    assert err.status == 2 and err.status_name == "INVALID_ARGUMENT" and err.status_text == "invalid argument"
    assert err.call == "memra_weight_create"
    assert "33 bytes given" in err.detail and "34" in err.detail
    assert "33 bytes given" in str(err)
    assert "33 bytes given" in memra.last_error()  # the thread's memra_last_error, as the exception read it


# ---- runtime and devices --------------------------------------------------------------

def test_runtime_lifecycle():
    rt = memra.Runtime(no_cuda=True)
    assert not rt.closed and "host" in repr(rt)
    w = memra.Weight.from_array(rt, np.ones((32, 32), np.float32))
    buf = rt.host.buffer(64)
    rt.close()
    rt.close()  # idempotent
    assert rt.closed and "closed" in repr(rt)
    for f in (lambda: rt.devices, lambda: rt.driver_status, lambda: w.format, lambda: buf.ptr,
              lambda: rt.ledger()):
        with pytest.raises(memra.InvalidArgumentError):
            f()
    with memra.open(no_cuda=True) as r2:
        assert r2.devices
    assert r2.closed


@pytest.mark.parametrize("kw, needle", [
    ({"prefer": "garbage"}, "preferences are op=module"),
    ({"disable": "nonsense=host"}, "'nonsense' is not an op"),
    ({"force_arch": "zzz"}, "MEMRA_ARCH=zzz (memra_options): expected one of sm90|sm120|cuda|host"),
])
def test_bad_options_fail_open(kw, needle):
    with pytest.raises(memra.InvalidArgumentError) as e:
        memra.Runtime(**kw)
    assert needle in e.value.detail and e.value.call == "memra_open"


def test_profile_forced_per_device(monkeypatch):
    """force_arch per ordinal on two fake devices (MEMRA_TEST_FAKE_DEVICES, no GPU needed)."""
    monkeypatch.setenv("MEMRA_TEST_FAKE_DEVICES", "2")
    monkeypatch.delenv("MEMRA_ARCH", raising=False)
    with memra.Runtime(no_default_modules=True, force_arch="1:cuda") as r:
        d0, d1, h = r.devices
        assert (d0.profile, d0.profile_forced) == ("sm90", False)
        assert (d1.profile, d1.profile_forced) == ("cuda", True)
        assert d1.ordinal == 1 and h.profile_forced is False
    with pytest.raises(memra.InvalidArgumentError) as e:
        memra.Runtime(no_default_modules=True, force_arch="0:sm90,0:cuda")
    assert "MEMRA_ARCH=0:sm90,0:cuda" in e.value.detail


def test_host_device(rt):
    host = rt.host
    assert rt.devices[-1] == host and rt.device("host") == host and rt.device(len(rt.devices) - 1) == host
    assert host.is_host and host.profile == "host" and host.name == "host" and host.cc == 0
    assert host.ordinal == -1 and host.jit_target is None and host.sm_count >= 1 and host.total_mem > 0
    assert host.capabilities == ["host"] and host.caps == 1
    assert host.clocks() == (0, 0) and host.label == "host"
    assert rt.driver_version == 0 and rt.driver_status != "ok"  # no_cuda: the driver is not even tried
    host.synchronize()
    ji = rt.jit_info()
    assert set(ji) >= {"available", "why", "folder", "entries", "bytes", "compiles"} and isinstance(ji["why"], str)
    assert ji["compiles"] == 0  # nothing is compiled for the host device
    with pytest.raises(memra.InvalidArgumentError):
        rt.device(99)
    with pytest.raises(memra.NoDeviceError):
        rt.device("cuda:7")
    with pytest.raises(memra.InvalidArgumentError):
        rt.device(3.5)


def test_ops_and_formats():
    ops = memra.ops()
    assert ops[:3] == ["cvt_f16", "gemm_f16", "gemm_fp8"] and "gemm_q8_0r" in ops
    assert memra.op_id("gemm_f16") == 1 and memra.op_id(1) == 1
    with pytest.raises(memra.InvalidArgumentError):
        memra.op_id("gemm_nope")
    with pytest.raises(memra.InvalidArgumentError):
        memra.op_id(len(ops))
    f = memra.formats()
    assert f["f32"] == 0 and f["q8_0"] == 2 and f["e4m3"] == 7
    assert memra.format_id("Q8_0") == 2
    with pytest.raises(memra.InvalidArgumentError):
        memra.format_id("q3_z")


# ---- modules and routing -----------------------------------------------------------------

def test_modules_loaded_and_refused(testmods):
    with memra.Runtime(no_cuda=True, module_path=testmods, no_default_modules=True) as rt:
        mods = {m.name: m for m in rt.modules}
        assert mods["host"].loaded and mods["host"].path == "(built-in)" and mods["host"].reason == ""
        assert mods["testgood"].loaded and mods["testgood"].path.endswith("testgood.so")
        refused = rt.refused_modules
        assert "score 0" in refused["testscore0"]
        assert any("notalib" in n or "notalib" in (m.path or "") for n, m in mods.items() if not m.loaded)
        assert all(r for r in refused.values())  # every refusal says why
        assert mods["testscore0"].notes.get("host") == "score 0"
        host = rt.host
        # scores: testdecline 20, testgood 10 (tests/modules/testmod.c); the host module serves scale too
        assert host.routing("scale")[:2] == ["testdecline", "testgood"] and "host" in host.routing("scale")
        assert host.module_score("testgood") == 10 and host.module_score("testscore0") == 0
        assert host.provides("testgood", "scale") and not host.provides("testgood", "gemm_f16")
        assert not host.provides("nosuch", "scale")
        rt.routing_configure(prefer={"scale": "host"})
        assert host.routing("scale")[0] == "host"
        rt.routing_configure(prefer="", disable=["testdecline"])
        assert "testdecline" not in host.routing("scale")
        rt.routing_configure(disable="")
        assert host.routing("scale")[0] == "testdecline"
        with pytest.raises(memra.InvalidArgumentError):
            rt.routing_configure(prefer="junk")
        table = host.routing_table()
        assert list(table) == memra.ops() and table["gemm_f16"] == ["host"]


def test_module_unload_and_load(testmods):
    with memra.Runtime(no_cuda=True, module_path=testmods, no_default_modules=True) as rt:
        rt.module_unload("testgood")
        assert "testgood" not in rt.host.routing("scale")
        with pytest.raises(memra.Error):
            rt.module_unload("testgood")
        with pytest.raises(memra.Error) as e:
            rt.module_load(os.path.join(testmods, "notalib.so"))
        assert e.value.detail
        with pytest.raises(memra.Error):
            rt.module_load("relative/mod.so")


def test_routing_disable_makes_matmul_not_supported(rt):
    w = memra.Weight.from_array(rt, np.ones((32, 64), np.float32))
    rt.routing_configure(disable="gemm_f16")
    assert rt.host.routing("gemm_f16") == []
    with pytest.raises(memra.NotSupportedError) as e:
        memra.matmul(w, np.ones((2, 64), np.float32))
    assert "no module provides it" in e.value.detail
    rt.routing_configure(disable="")
    assert rt.host.routing("gemm_f16") == ["host"]


# ---- the ledger ------------------------------------------------------------------------------

def test_ledger_counts_hits_and_declines(rt, rng):
    assert rt.ledger().hits() == 0
    w = memra.Weight.from_array(rt, rng.standard_normal((32, 64)).astype(np.float32))
    x = rng.standard_normal((3, 64)).astype(np.float32)
    for _ in range(3):
        memra.matmul(w, x)
    led = rt.ledger()
    (e,) = led.select(op="gemm_f16")
    assert (e.device, e.module, e.entries, e.hits, e.errors) == ("host", "host", 3, 3, 0)
    assert led.hits("gemm_f16", "host") == 3 == rt.host.ledger_hits("gemm_f16", "host")
    assert "gemm_f16" in str(led)
    # the core declines an FP8 lane for a weight holding NaN codes, and says why
    codes = np.full((32, 64), 0x38, np.uint8)
    codes[5, 7] = 0x7F
    wn = memra.Weight(rt, codes, "e4m3", (32, 64), scale=1.0)
    with pytest.raises(memra.NotSupportedError) as exc:
        memra.matmul(wn, x)
    assert "NaN" in exc.value.detail
    (c,) = rt.ledger().select(op="gemm_fp8", module="core")
    assert c.hits == 0 and list(c.declines.values()) == [1] and "NaN" in list(c.declines)[0]
    assert wn.state(rt.host).nan_codes == 1
    rt.ledger_reset()
    assert rt.ledger().hits() == 0


# ---- buffers and timers ------------------------------------------------------------------------

def test_buffer_roundtrip_and_bounds(rt, rng):
    data = rng.integers(0, 256, 1000, dtype=np.uint8).tobytes()
    buf = rt.host.buffer(1024)
    assert buf.size == 1024 and buf.ptr != 0
    buf.write(data, offset=24)
    assert buf.read(1000, offset=24) == data
    buf.write(np.arange(6, dtype=np.float32))
    assert np.array_equal(np.frombuffer(buf.read(24), np.float32), np.arange(6, dtype=np.float32))
    with pytest.raises(memra.InvalidArgumentError):
        buf.write(data, offset=100)
    with pytest.raises(memra.InvalidArgumentError):
        buf.read(2000)
    with pytest.raises(memra.InvalidArgumentError):
        rt.host.buffer(0)
    buf.close()
    with pytest.raises(memra.InvalidArgumentError):
        buf.ptr


def test_timer_on_host(rt):
    t = rt.host.timer()
    t.start()
    sum(range(20000))
    t.stop()
    ms = t.elapsed_ms()
    assert 0 < ms < 10000
    with pytest.raises(memra.InvalidArgumentError):
        t.start(stream="not a stream")


def test_stream_reserve(rt):
    """memra_stream_reserve through Device.stream_reserve: OK on the host device
    (nothing to pin), bad arguments refused by the library."""
    w = memra.Weight.from_array(rt, np.random.default_rng(3).standard_normal((8, 64)).astype(np.float32), "f32")
    rt.host.stream_reserve(None, [w], 16)
    with pytest.raises(memra.InvalidArgumentError):
        rt.host.stream_reserve(None, [w], 0)
