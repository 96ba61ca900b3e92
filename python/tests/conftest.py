"""Shared pytest fixtures for the xshard Python package's tests."""
import os
import shutil

import pytest

import xshard

requires_jax = pytest.mark.skipif(not xshard.jax_available(), reason="JAX is not installed")


@pytest.fixture
def xshard_binary():
    """The `xshard` CLI (ctest passes its path), or skip."""
    path = os.environ.get("XSHARD_BINARY") or shutil.which("xshard")
    if not path or not os.path.exists(path):
        pytest.skip("the xshard CLI is not built (ctest sets XSHARD_BINARY)")
    return path


def source_dir():
    return os.environ.get("XSHARD_SOURCE_DIR",
                          os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
