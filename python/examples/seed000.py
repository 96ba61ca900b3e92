"""Seed 000 (the pjit blog's x @ y on mesh a=4, b=2 over 8 devices) replayed in Python, cell by
cell as the notebook runs it: device_put x and y, draw their shardings, z = x @ y partitioned by
xshard, the collectives it inserted next to the ones XLA inserted, and timings. With JAX installed
the same cells run through JAX too (8 host CPU devices) and the outputs are compared.

Run: .venv/bin/python python/examples/seed000.py   (python/tests/test_seed000.py runs it)
"""
import os
import sys

# In [1]: 8 CPU devices for JAX, when it is installed (set before JAX is imported).
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8").strip()

import numpy as np  # noqa: E402

import xshard  # noqa: E402
from xshard import NamedSharding, P  # noqa: E402

# The notebook's four cases: (title, x spec, y spec, the collectives XLA inserted as
# (kind, per-device shape, bytes received per device, replica groups or permute pairs)).
CASES = [
    ("Case 1: inner axes", P(None, "a"), P("a", None),
     [("all-reduce", "f16[4,4]", 48, "{{0,2,4,6},{1,3,5,7}}")]),
    ("Case 1B: mesh-axes mismatch", P(None, "a"), P("b", None),
     [("all-gather", "f16[16,4]", 64, "{{0,1},{2,3},{4,5},{6,7}}"),
      ("all-gather", "f16[4,16]", 96, "{{0,2,4,6},{1,3,5,7}}")]),
    ("Case 2: outer axes", P("b", "a"), P("b", None),
     [("collective-permute", "f16[4,4]", 32, "{{0,0},{2,1},{4,2},{6,3},{1,4},{3,5},{5,6},{7,7}}"),
      ("all-reduce", "f16[2,4]", 24, "{{0,2,4,6},{1,3,5,7}}")]),
    ("Full sharding", P("b", "a"), P("b", "a"),
     [("all-gather", "f16[16,1]", 16, "{{0,1},{2,3},{4,5},{6,7}}"),
      ("all-gather", "f16[2,16]", 48, "{{0,2,4,6},{1,3,5,7}}")]),
]

# jax.jit(jnp.matmul).lower(x, y).as_text(dialect='hlo'): the program every case partitions.
MATMUL_HLO = """
HloModule jit_matmul, entry_computation_layout={(f16[4,16]{1,0}, f16[16,4]{1,0})->f16[4,4]{1,0}}

ENTRY main.1 {
  a.1 = f16[4,16]{1,0} parameter(0)
  b.1 = f16[16,4]{1,0} parameter(1)
  ROOT dot_general.1 = f16[4,4]{1,0} dot(a.1, b.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def run(out=sys.stdout, timing_iters=20):
    """Runs every case; returns {title: (z, collectives, jax z or None)}."""
    # In [2]
    mesh = xshard.make_mesh((4, 2), ("a", "b"))
    jax_mesh = None
    if xshard.jax_available():
        import jax
        from jax.sharding import Mesh as JaxMesh
        if len(jax.devices()) >= 8:
            jax_mesh = JaxMesh(np.array(jax.devices()[:8]).reshape(4, 2), ("a", "b"))
    print("mesh =", mesh, "   JAX:", "8 devices" if jax_mesh is not None else "not used", file=out)

    # In [4]: x = rows of 1, 2, 3, 4 repeated 16 times, as f16; y = x.T
    v = np.arange(1, 5)
    x = np.asarray(np.repeat(v[:, None], 16, axis=1), dtype="f2")
    y = np.copy(x).T
    results = {}
    for title, x_spec, y_spec, xla_collectives in CASES:
        print(f"\n### {title}: x {x_spec}, y {y_spec}", file=out)
        # In [5]
        xs = xshard.device_put(x, NamedSharding(mesh, x_spec))
        xshard.visualize_array_sharding(xs, file=out)
        ys = xshard.device_put(y, NamedSharding(mesh, y_spec))
        xshard.visualize_array_sharding(ys, file=out)

        # In [6]: z = x @ y, partitioned by xshard for the 8 devices
        matmul = xshard.compile(MATMUL_HLO, in_shardings=[xs.sharding, ys.sharding],
                                propagate_to_output=True)
        z = matmul(xs, ys)
        print("z sharding:", matmul.out_shardings[0], file=out)
        xshard.visualize_sharding(z.shape, matmul.out_shardings[0], devices=8, file=out)
        print(z, file=out)

        # In [8]: the collectives, xshard's and XLA's
        report = matmul.report()
        mine = [(c.kind, c.shape, c.bytes, c.groups) for c in report.collectives]
        print("xshard inserted:", file=out)
        for c in mine:
            print("  ", *c, file=out)
        print("XLA inserted:", file=out)
        for c in xla_collectives:
            print("  ", *c, file=out)

        # In [7]: %timeit of the sharded matmul
        timing = matmul.time(xs, ys, iters=timing_iters)
        print(f"xshard: {timing.median * 1e3:.1f} µs median per run "
              f"({len(timing.samples_ms)} runs)", file=out)

        jax_z = None
        if jax_mesh is not None:
            import jax
            import jax.numpy as jnp
            from jax.sharding import NamedSharding as JaxNamedSharding
            from jax.sharding import PartitionSpec as JaxP
            jx = jax.device_put(x, JaxNamedSharding(jax_mesh, JaxP(*x_spec)))
            jy = jax.device_put(y, JaxNamedSharding(jax_mesh, JaxP(*y_spec)))
            jax_z = np.asarray(jnp.matmul(jx, jy))
            same = np.array_equal(jax_z, z)
            print("JAX z equal to xshard's:", same, file=out)
            # The same function through JAX's lowering, compiled by xshard.
            from_jax = xshard.from_jax(jnp.matmul, jx, jy,
                                       in_shardings=[jx.sharding, jy.sharding])
            print("from_jax z equal:", np.array_equal(from_jax(x, y), jax_z), file=out)
        results[title] = (z, mine, xla_collectives, jax_z)
    return results


if __name__ == "__main__":
    run()
