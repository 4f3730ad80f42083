"""`pip install ./python` into a fresh virtualenv, offline, then the README's example.

pip runs with --no-index (no network) and --no-build-isolation, so the build
uses the setuptools the venv already has. ensurepip's setuptools (Python
<= 3.11: 65.x, without `wheel`) cannot build a wheel offline, and 3.12+ has
none; then the venv is made with --system-site-packages to see the system's
setuptools and wheel (.ci/run installs them). The package still installs into
the venv and is imported from there. The package is copied first so
the build leaves nothing in the source tree.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import PYDIR, REPO


# A setuptools that can build a wheel without fetching anything: 70.1+ has
# bdist_wheel built in, older ones need the `wheel` package beside them.
CAN_BUILD = ("import setuptools\ntry:\n    import setuptools.command.bdist_wheel\nexcept ImportError:\n"
             "    import wheel")


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def readme_example():
    text = open(os.path.join(REPO, "README.md")).read()
    sec = text.split("## From Python", 1)[1]
    return re.search(r"```python\n(.*?)```", sec, re.S).group(1)


def test_fresh_venv_install_and_readme_example(tmp_path, build_dir):
    venv = tmp_path / "venv"
    r = _run([sys.executable, "-m", "venv", str(venv)])
    if r.returncode != 0:
        why = "python3 -m venv failed (Debian: apt-get install python3-venv): " + r.stderr[-2000:]
        if os.environ.get("CI"):
            pytest.fail(why)  # .ci/run installs python3-venv: CI never skips this
        pytest.skip(why)
    py = str(venv / "bin" / "python")
    if _run([py, "-c", CAN_BUILD]).returncode != 0:
        shutil.rmtree(venv)
        r = _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
        assert r.returncode == 0, r.stderr
        if _run([py, "-c", CAN_BUILD]).returncode != 0:
            pytest.fail("neither the fresh venv nor the system has a setuptools that builds wheels offline "
                        "(setuptools >= 70.1, or setuptools + wheel): pip install setuptools wheel")
    src = tmp_path / "src"
    shutil.copytree(PYDIR, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "tests"))
    r = _run([py, "-m", "pip", "install", "--no-index", "--no-build-isolation", "--no-deps", str(src)])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    site = _run([py, "-c", "import memra, os; print(os.path.dirname(memra.__file__))"],
                env=dict(os.environ, MEMRA_LIBRARY=os.path.join(build_dir, "lib", "libmemra.so")), cwd=str(tmp_path))
    assert site.returncode == 0, site.stderr
    assert site.stdout.strip().startswith(str(venv)), site.stdout  # the installed copy, not the checkout's
    # installed outside a checkout: without MEMRA_LIBRARY it says where it looked
    env = {k: v for k, v in os.environ.items() if k != "MEMRA_LIBRARY"}
    env["LD_LIBRARY_PATH"] = ""
    r = _run([py, "-c", "import memra"], env=env, cwd=str(tmp_path))
    if r.returncode == 0:
        pytest.skip("a libmemra is installed system-wide")
    assert os.path.join(str(venv), "lib", "libmemra.so") in r.stderr and "build tree" not in r.stderr
    # the install prefix is searched: <venv>/lib/libmemra.so
    os.symlink(os.path.realpath(os.path.join(build_dir, "lib", "libmemra.so")), str(venv / "lib" / "libmemra.so"))
    r = _run([py, "-c", "import memra; print(memra.library_path())"], env=env, cwd=str(tmp_path))
    assert r.returncode == 0 and r.stdout.strip() == str(venv / "lib" / "libmemra.so"), r.stderr
    # the README's example, as a user runs it (numpy from the test's own interpreter when the venv lacks it)
    ex = tmp_path / "example.py"
    ex.write_text(readme_example())
    env["MEMRA_LIBRARY"] = os.path.join(build_dir, "lib", "libmemra.so")
    if _run([py, "-c", "import numpy"]).returncode != 0:
        import numpy
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(numpy.__file__))
    r = _run([py, str(ex)], env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "max error" in r.stdout
