"""xshard.autoshard: plans from HLO text (always) and from JAX functions, whose specs jax.jit
accepts and runs to JAX's own results (skipped without JAX)."""
import os

import numpy as np
import pytest

import xshard
from conftest import requires_jax

ELEMENTWISE = """
HloModule m
ENTRY e {
  x = f32[64,1024] parameter(0)
  t = f32[64,1024] tanh(x)
  ROOT y = f32[64,1024] multiply(t, t)
}
"""

MATVEC = """
HloModule m
ENTRY e {
  x = f32[8,1024] parameter(0)
  w = f32[1024,1024] parameter(1)
  ROOT d = f32[8,1024] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_hlo_text_elementwise_splits_every_device():
    plan = xshard.autoshard(ELEMENTWISE, "a=4,b=2")
    (x_spec,), y_spec = plan
    # Elementwise work: all 8 devices share it and nothing moves.
    used = [a for d in x_spec for a in ((d,) if isinstance(d, str) else (d or ()))]
    assert sorted(used) == ["a", "b"]
    assert y_spec == x_spec
    assert plan.predicted_seconds > 0
    assert "plan: search" in plan.report
    assert "num_partitions=8" in plan.hlo


def test_memory_budget_splits_the_weight():
    plan = xshard.autoshard(MATVEC, {"x": 4}, memory_per_device=2 << 20)
    _, w_spec = plan.in_specs
    assert tuple(w_spec) != ()
    assert plan.peak_bytes <= 2 << 20


def test_errors_are_clear():
    with pytest.raises(MemoryError, match="no plan fits"):
        xshard.autoshard(MATVEC, "x=4", memory_per_device=1000)
    with pytest.raises(ValueError, match="memory_per_device"):
        xshard.autoshard(MATVEC, "x=4", memory_per_device=0)
    with pytest.raises(ValueError):
        xshard.autoshard(MATVEC, "x=four")
    with pytest.raises(TypeError, match="mesh"):
        xshard.autoshard(MATVEC, 4)


@pytest.fixture(scope="module")
def jax():
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    import jax
    return jax


@requires_jax
def test_jax_function_specs_run_in_jax(jax):
    import jax.numpy as jnp
    from jax.sharding import NamedSharding

    def step(params, x, y):
        def loss(p):
            w1, w2 = p
            return jnp.mean((jnp.tanh(x @ w1) @ w2 - y) ** 2)
        l, g = jax.value_and_grad(loss)(params)
        return l, jax.tree.map(lambda p, gp: p - 0.1 * gp, params, g)

    rng = np.random.default_rng(0)
    params = (rng.standard_normal((256, 512), dtype=np.float32) / 16,
              rng.standard_normal((512, 256), dtype=np.float32) / 22)
    x = rng.standard_normal((64, 256), dtype=np.float32)
    y = rng.standard_normal((64, 256), dtype=np.float32)
    mesh = jax.make_mesh((4, 2), ("data", "model"))
    in_specs, out_specs = xshard.autoshard(step, mesh, params, x, y)
    assert isinstance(in_specs, tuple) and len(in_specs) == 3 and isinstance(in_specs[0], tuple)
    named = lambda tree: jax.tree.map(lambda s: NamedSharding(mesh, s), tree)
    f = jax.jit(step, in_shardings=named(in_specs), out_shardings=named(out_specs))
    got, want = f(params, x, y), step(params, x, y)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-5)
    # The outputs carry the shardings xshard chose.
    assert jax.tree.leaves(got)[1].sharding.spec == jax.tree.leaves(out_specs)[1]
