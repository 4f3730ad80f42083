"""`pip install ./python` into a fresh virtualenv, then the README's example.

pip builds the wheel as a user's pip does: in an isolated build environment
with scikit-build-core from PyPI, which runs the repository's CMake build and
puts libmemra.so, its module folder and the trial helper inside the package
(python/pyproject.toml). MEMRA_GPU_MODULES=OFF keeps the build to the host
library (a few seconds; the GPU modules take minutes of nvcc). Then, with
nothing set, `import memra` loads the library inside the installed package
and the README's Python example runs; MEMRA_LIBRARY still wins; and
`python -m memra --help` / `report` need no library at all.

Without network (no scikit-build-core to fetch) the test skips, except on CI,
which has PyPI.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import PYDIR, REPO

OFFLINE = ("No matching distribution", "Could not find a version", "NewConnectionError", "Network is unreachable",
           "Temporary failure in name resolution", "ProxyError")


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)


def readme_example():
    text = open(os.path.join(REPO, "README.md")).read()
    sec = text.split("## From Python", 1)[1]
    return re.search(r"```python\n(.*?)```", sec, re.S).group(1)


def _clean_env():
    env = {k: v for k, v in os.environ.items() if k not in ("MEMRA_LIBRARY", "PYTHONPATH")}
    env["LD_LIBRARY_PATH"] = ""
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh venv with `pip install ./python` done in it; (python, site folder of memra)."""
    tmp = tmp_path_factory.mktemp("pipvenv")
    v = tmp / "venv"
    r = _run([sys.executable, "-m", "venv", str(v)])
    if r.returncode != 0:
        why = "python3 -m venv failed (Debian: apt-get install python3-venv): " + r.stderr[-2000:]
        if os.environ.get("CI"):
            pytest.fail(why)  # .ci/run installs python3-venv: CI never skips this
        pytest.skip(why)
    py = str(v / "bin" / "python")
    env = _clean_env()
    env["MEMRA_GPU_MODULES"] = "OFF"
    r = _run([py, "-m", "pip", "install", "-q", PYDIR], env=env, cwd=str(tmp))
    if r.returncode != 0:
        out = r.stdout[-4000:] + r.stderr[-4000:]
        if any(s in out for s in OFFLINE) and not os.environ.get("CI"):
            pytest.skip("pip install ./python needs scikit-build-core from PyPI (no network here): " + out[-500:])
        pytest.fail("pip install ./python failed:\n" + out)
    r = _run([py, "-c", "import memra, os; print(os.path.dirname(memra.__file__))"], env=_clean_env(), cwd=str(tmp))
    assert r.returncode == 0, r.stderr
    site = r.stdout.strip()
    assert site.startswith(str(v)), site  # the installed copy, not the checkout's
    return py, site, tmp


def test_pip_install_leaves_the_source_tree_clean():
    r = _run(["git", "-C", REPO, "status", "--porcelain", "--ignored", "python"])
    if r.returncode != 0:
        pytest.skip("not a git checkout")
    left = [l for l in r.stdout.splitlines() if "__pycache__" not in l and ".pytest_cache" not in l]
    assert not [l for l in left if l.startswith("!!")], left


def test_wheel_carries_the_library(venv):
    py, site, tmp = venv
    assert os.path.isfile(os.path.join(site, "libmemra.so"))
    assert os.access(os.path.join(site, "memra", "memra-trial"), os.X_OK)  # the trial helper, beside the library
    r = _run([py, "-c", "import memra; print(memra.library_path()); print(memra.version())"], env=_clean_env(),
             cwd=str(tmp))
    assert r.returncode == 0, r.stderr
    path, ver = r.stdout.split()
    assert path == os.path.join(site, "libmemra.so") and ver.split(".")[:2] == ["0", "1"], r.stdout


def test_readme_example_in_the_fresh_venv(venv, build_dir):
    py, site, tmp = venv
    ex = tmp / "example.py"
    ex.write_text(readme_example())
    env = _clean_env()
    if _run([py, "-c", "import numpy"]).returncode != 0:
        # numpy from the test's own interpreter (the example needs it; the package does not)
        import numpy
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(numpy.__file__))
    r = _run([py, str(ex)], env=env, cwd=str(tmp))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "max error" in r.stdout and "'host'" in r.stdout, r.stdout


def test_memra_library_still_wins(venv, build_dir):
    py, site, tmp = venv
    lib = os.path.join(build_dir, "lib", "libmemra.so")
    env = dict(_clean_env(), MEMRA_LIBRARY=lib)
    r = _run([py, "-c", "import memra; print(memra.library_path())"], env=env, cwd=str(tmp))
    assert r.returncode == 0 and r.stdout.strip() == lib, r.stdout + r.stderr


def test_report_and_help_need_no_library(venv, tmp_path):
    py, site, tmp = venv
    env = dict(_clean_env(), MEMRA_LIBRARY="/nonexistent/libmemra.so")  # any load would fail
    r = _run([py, "-m", "memra", "--help"], env=env, cwd=str(tmp))
    assert r.returncode == 0 and "report" in r.stdout, r.stdout + r.stderr
    r = _run([py, "-m", "memra", "report", "--help"], env=env, cwd=str(tmp))
    assert r.returncode == 0 and "RECEIPTS" in r.stdout, r.stdout + r.stderr
    receipt = tmp_path / "r.json"
    receipt.write_text(json.dumps({
        "format": "memra-bench", "version": 3, "mode": "arms", "sheet": "1p7b", "m": 2, "host": "h",
        "device": {"name": "host", "profile": "host"},
        "shapes": [{"shape": "2048->2048", "in_f": 2048, "out_f": 2048, "flops": 1.6e7,
                    "arms": [{"arm": "f16", "median_ms": 1.0, "times_ms": [1.0], "flops_per_s": 1.6e10}]}]}))
    r = _run([py, "-m", "memra", "report", str(receipt)], env=env, cwd=str(tmp))
    assert r.returncode == 0 and "2048->2048" in r.stdout, r.stdout + r.stderr
    # and the library is only loaded by what needs it: the error names the place
    r = _run([py, "-c", "import memra; memra.Runtime()"], env=env, cwd=str(tmp))
    assert r.returncode != 0 and "/nonexistent/libmemra.so" in r.stderr, r.stderr
