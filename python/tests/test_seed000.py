"""The seed 000 notebook replayed in Python (python/examples/seed000.py): z = x @ y is the
notebook's printed product in every case, the collectives are the ones XLA inserted, and with JAX
installed JAX's z is the same."""
import importlib.util
import io
import os

import numpy as np
import pytest

from conftest import source_dir


def _load_example():
    path = os.path.join(source_dir(), "python", "examples", "seed000.py")
    spec = importlib.util.spec_from_file_location("seed000_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def results():
    out = io.StringIO()
    return _load_example().run(out=out, timing_iters=3), out.getvalue()


def test_every_case_prints_the_notebooks_product(results):
    by_case, _ = results
    assert len(by_case) == 4
    # The notebook's print(z): z[i, j] = 16 (i + 1) (j + 1).
    expected = 16.0 * np.outer(np.arange(1, 5), np.arange(1, 5))
    for title, (z, _, _, jax_z) in by_case.items():
        assert z.dtype == np.float16, title
        np.testing.assert_array_equal(z, expected.astype(np.float16), err_msg=title)
        if jax_z is not None:
            np.testing.assert_array_equal(jax_z, z, err_msg=title)


def test_collectives_against_xla(results):
    by_case, _ = results
    # Inner axes and full sharding: exactly XLA's collectives (kind, shape, bytes, groups).
    for title in ("Case 1: inner axes", "Full sharding"):
        _, mine, xla, _ = by_case[title]
        assert sorted(mine) == sorted(xla), title
    # Outer axes: XLA's kinds, shapes and bytes; the permute's pairs are another valid choice.
    _, mine, xla, _ = by_case["Case 2: outer axes"]
    assert sorted(c[:3] for c in mine) == sorted(c[:3] for c in xla)
    # Mesh-axes mismatch: xshard moves y's shards into place (permute + all-reduce) where XLA
    # all-gathers both operands, and receives half the bytes.
    _, mine, xla, _ = by_case["Case 1B: mesh-axes mismatch"]
    assert [c[0] for c in mine] == ["collective-permute", "all-reduce"]
    assert sum(c[2] for c in mine) == 80 and sum(c[2] for c in xla) == 160


def test_notebook_output(results):
    _, text = results
    assert "CPU 0,1" in text  # the drawings of the replicated cases
    assert text.count("xshard inserted:") == 4
