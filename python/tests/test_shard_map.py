"""xshard.shard_map from Python with xshard.lax's collectives: results against numpy (seed 003's
matmul_basic and hand-computed collectives on a 4x2 mesh)."""
import numpy as np
import pytest

import xshard
from xshard import P, lax


@pytest.fixture(scope="module")
def mesh():
    return xshard.make_mesh((4, 2), ("x", "y"))


def test_matmul_basic(mesh):
    # Seed 003: each device multiplies its blocks, psum over 'y' finishes the contraction.
    def matmul_basic(a, b):
        assert a.shape == (2, 8) and b.shape == (8, 4)
        return lax.psum(a @ b, "y")

    f = xshard.shard_map(matmul_basic, mesh, in_specs=(P("x", "y"), P("y", None)),
                         out_specs=P("x", None))
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((16, 4)).astype(np.float32)
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-5, atol=1e-5)


def test_axis_index_and_gather(mesh):
    def body(x):
        i, j = lax.axis_index("x"), lax.axis_index("y")
        assert lax.axis_size(("x", "y")) == 8
        ids = np.full((1, 1), 10 * i + j, np.int32)
        row = lax.all_gather(ids, "y", axis=1, tiled=True)      # (1, 2) over y
        return lax.all_gather(row, "x", axis=0, tiled=True), lax.pmax(x, ("x", "y"))

    f = xshard.shard_map(body, mesh, in_specs=P("x", "y"), out_specs=(P(), P()))
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    ids, biggest = f(x)
    assert ids.tolist() == [[0, 1], [10, 11], [20, 21], [30, 31]]
    assert biggest.tolist() == [[7.0]]


def test_ppermute_ring(mesh):
    def shift(x):  # each x-row moves one step down the ring along 'x'
        return lax.ppermute(x, "x", [(k, (k + 1) % 4) for k in range(4)])

    f = xshard.shard_map(shift, mesh, in_specs=P("x"), out_specs=P("x"))
    x = np.arange(4 * 3, dtype=np.float64).reshape(4, 3)
    np.testing.assert_array_equal(f(x), np.roll(x, 1, axis=0))


def test_errors(mesh):
    def bad(x):
        if lax.axis_index("x") == 2:
            raise ValueError("boom on one device")
        return lax.psum(x, "x")  # the others wait here and are stopped

    f = xshard.shard_map(bad, mesh, in_specs=P("x"), out_specs=P())
    with pytest.raises(ValueError, match="boom on one device"):
        f(np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match="'z'"):
        xshard.shard_map(lambda x: x, mesh, in_specs=P("z"), out_specs=P())
    with pytest.raises(RuntimeError, match="inside a function run by xshard.shard_map"):
        lax.psum(np.ones(2), "x")
