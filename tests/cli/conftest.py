"""Fixtures of the CLI contract tests: every test runs the real `mxfp4` binary (path in the
MXFP4_CLI environment variable, set by ctest) on real .npy files."""
import os

import pytest

from cli_helpers import Cli


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("MXFP4_CLI")
    if not path:
        pytest.skip("MXFP4_CLI is not set (run through ctest, or export MXFP4_CLI=build/mxfp4)")
    if not os.access(path, os.X_OK):
        pytest.fail(f"MXFP4_CLI={path} is not an executable file")
    return Cli(path)
