"""Fixtures of the Python package tests (pytest tests/python).

The package under test is python/mxfp4 from this checkout with the extension ``_C`` from the
folder named by MXFP4_PYTHON_BUILD if it holds one, else the installed ``mxfp4``
(``pip install --no-build-isolation .``), else python/mxfp4 with the ``_C`` of a CMake build
configured with -DMXFP4_BUILD_PYTHON=ON (newest ``build*/python/_C*.so`` or
``build*/*/python/_C*.so``). Without either, the tests are not collected (pytest exit code 5).

numpy + ml_dtypes are required; torch tests skip without torch (CI installs it and sets
MXFP4_REQUIRE_TORCH=1, which makes a missing torch an error) and
CUDA tests skip without a CUDA-capable torch and a CUDA build of the extension. When the
MXFP4_CLI environment variable names the `mxfp4` command-line tool (or the CMake build that
holds the extension also holds it), Python results are also compared with the C++ CLI's.
"""
import glob
import importlib.util
import os
import sys
import warnings

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)  # ref.py


def _import_mxfp4():
    """Imports mxfp4; returns the CMake build folder it came from (None when installed).
    MXFP4_PYTHON_BUILD (a folder holding _C*.so) wins over an installed package."""
    explicit = os.environ.get("MXFP4_PYTHON_BUILD")
    if explicit and not glob.glob(os.path.join(explicit, "_C*.so")):
        explicit = None  # named but not built (e.g. no nanobind there): installed / other builds
    if not explicit:
        try:
            import mxfp4  # noqa: F401

            return None
        except ImportError:
            pass
    dirs = [explicit] if explicit else []
    sos = glob.glob(os.path.join(ROOT, "build*", "python", "_C*.so"))
    sos += glob.glob(os.path.join(ROOT, "build*", "*", "python", "_C*.so"))
    sos.sort(key=os.path.getmtime, reverse=True)
    dirs += [os.path.dirname(s) for s in sos]
    for d in dirs:
        spec = importlib.util.spec_from_file_location(
            "mxfp4", os.path.join(ROOT, "python", "mxfp4", "__init__.py"),
            submodule_search_locations=[os.path.join(ROOT, "python", "mxfp4"), d])
        mod = importlib.util.module_from_spec(spec)
        sys.modules["mxfp4"] = mod
        try:
            spec.loader.exec_module(mod)
            return os.path.dirname(d)
        except ImportError:
            del sys.modules["mxfp4"]
    raise ImportError("mxfp4 is neither installed nor built")


if os.environ.get("MXFP4_REQUIRE_TORCH") == "1":
    # CI sets this: a missing torch must fail the run, not skip the torch and tensor-parallel tests.
    import torch  # noqa: F401

try:
    _BUILD = _import_mxfp4()
except ImportError:
    _BUILD = None
    collect_ignore_glob = ["test_*.py"]
    warnings.warn("tests/python: mxfp4 is not importable: run `pip install --no-build-isolation .` or build "
                  "with -DMXFP4_BUILD_PYTHON=ON; Python tests not collected")
else:
    if not os.environ.get("MXFP4_CLI") and _BUILD and os.access(os.path.join(_BUILD, "mxfp4"), os.X_OK):
        os.environ["MXFP4_CLI"] = os.path.join(_BUILD, "mxfp4")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(scope="session")
def cli_path():
    path = os.environ.get("MXFP4_CLI")
    if not path:
        pytest.skip("MXFP4_CLI is not set (export MXFP4_CLI=build/mxfp4 to compare with the C++ CLI)")
    if not os.access(path, os.X_OK):
        pytest.fail(f"MXFP4_CLI={path} is not an executable file")
    return path


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="session")
def cuda(torch):
    import mxfp4

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch")
    if not mxfp4.built_with_cuda():
        pytest.skip("mxfp4 was built without the CUDA backend")
    return torch.device("cuda")
