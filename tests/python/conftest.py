"""Fixtures of the Python package tests (pytest tests/python).

numpy + ml_dtypes are required; torch tests skip without torch (the CPU CI has none) and
CUDA tests skip without a CUDA-capable torch and a CUDA build of the extension. When the
MXFP4_CLI environment variable names the `mxfp4` command-line tool, Python results are also
compared with the C++ CLI's.
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # ref.py


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
