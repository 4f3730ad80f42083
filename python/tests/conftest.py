"""pytest fixtures: the package from this checkout, libmemra from MEMRA_LIBRARY (ctest
sets it to the build's) or the checkout's build/lib, fresh random data each run."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYDIR)
sys.path.insert(0, PYDIR)

np = pytest.importorskip("numpy")

import memra  # noqa: E402


def _build_dir():
    lib = memra.library_path()
    d = os.path.dirname(os.path.dirname(os.path.abspath(lib)))  # <build>/lib/libmemra.so -> <build>
    return d if os.path.isdir(os.path.join(d, "lib")) else None


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def build_dir():
    d = _build_dir()
    if d is None:
        pytest.skip("libmemra is not in a build tree")
    return d


@pytest.fixture
def rt():
    with memra.Runtime(no_cuda=True) as r:
        yield r


@pytest.fixture
def rng():
    seed = int.from_bytes(os.urandom(8), "little")
    print("seed", seed)
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def testmods(build_dir):
    d = os.path.join(build_dir, "tests", "modules", "set")
    if not os.path.isdir(d):
        pytest.skip("the test modules are not built (BUILD_TESTING off)")
    return d
