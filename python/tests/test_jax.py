"""xshard.from_jax next to JAX (skipped without JAX): the same function lowered by JAX and
partitioned by xshard gives JAX's outputs, for several shardings."""
import os

import numpy as np
import pytest

import xshard
from xshard import NamedSharding, P
from conftest import requires_jax

pytestmark = requires_jax


@pytest.fixture(scope="module")
def jax():
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    import jax
    return jax


def test_from_jax_matches_jax(jax):
    import jax.numpy as jnp

    def f(a, b):
        return jnp.tanh(a @ b).sum(axis=1), a * 2

    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((16, 8)).astype(np.float32)
    mesh = xshard.make_mesh((4, 2), ("x", "y"))
    prog = xshard.from_jax(f, a, b, in_shardings=[NamedSharding(mesh, P("x", "y")),
                                                  NamedSharding(mesh, P("y"))])
    assert prog.num_devices == 8
    got = prog(a, b)
    want = jax.jit(f)(a, b)
    np.testing.assert_allclose(got[0], np.asarray(want[0]), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[1], np.asarray(want[1]))
    assert prog.report().collectives  # the split contraction needs communication


def test_from_jax_with_jax_shardings(jax):
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding as JaxNamedSharding, PartitionSpec as JaxP
    if len(jax.devices()) < 4:
        pytest.skip("JAX was imported with fewer than 4 devices")
    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("a", "b"))
    s = JaxNamedSharding(mesh, JaxP("a", "b"))
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    prog = xshard.from_jax(lambda v: jnp.sin(v) + v.T.sum(), x, in_shardings=s)
    assert prog.num_devices == 4
    assert str(prog.in_shardings[0]) == "{devices=[2,2]<=[4]}"
    np.testing.assert_allclose(prog(x), np.sin(x) + x.sum(), rtol=1e-5)

