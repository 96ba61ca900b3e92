#!/usr/bin/env python3
"""Generates tests/data/seeds_global/: the seed notebooks' sharded programs as global modules (the
HLO JAX lowers before partitioning, with the compile option num_partitions=N written into the
header), their fixed inputs as .npy files, and JAX's outputs for them (expected.txt, printed as
numpy prints them, which is what `xshard run --print` must show). tests/cli/run_sharded.test runs
each module with `xshard run --check --print` and pins these values.

* Seed 000 (the pjit blog, f16 x[4,16] @ y[16,4] on mesh a=4, b=2): x = repeat([1,2,3,4], 16),
  y = x.T, shared by the four cases in tests/data/spmd_partition/seed000_<case>.hlo.
* Seed 001 (PyTorch/XLA SPMD): ShardedMatMul (x @ y, both {devices=[2,2]0,1,2,3} on 4 devices),
  ShardedMultiply (x * y, {devices=[2,4]0..7} on 8), ShardedAddForwardWithCustomCall (x + y,
  {devices=[2,1]0,1} on 2) and sharded_jit(f, in_parts=(P(2,1), P(2,1)), out_parts=P(2,1)) with
  f = x * y. The seed puts a "Sharding" custom-call on each operand and a sharding on the result;
  here jax.lax.with_sharding_constraint lowers to that same custom-call, and in/out shardings
  annotate the parameters and the result. Shapes are small (the seed's 8192x8192 would make the
  printed outputs unreadable); inputs follow the seed where its values are distinct enough (add:
  3s + 4s; sharded_jit: arange(4) twice), and use arange-like values elsewhere so that a shard
  put in the wrong place changes the result.
* Seed 002 (pjit on mesh x=4, y=2): the pjit modules already committed
  (tests/data/propagate/seed002_{square,dot}.hlo); only their inputs and outputs are written:
  data = arange(32).reshape(8, 4) squared; jnp.dot(eye(8), arange(8).reshape(8, 1)).

The modules are lowered through GSPMD (jax_use_shardy_partitioner=False), which prints shardings as
sharding={...} attributes, as XLA and the seed notebooks show them.

Run with the reference JAX: /opt/jaxref/bin/python tests/tools/gen_seeds_global.py
"""
import os
import re
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "seeds_global")


def lower(fn, mesh, in_specs, out_spec, args):
    """Global HLO of jit(fn) with the specs, num_partitions written into the header."""
    shardings = tuple(NamedSharding(mesh, s) for s in in_specs)
    jitted = jax.jit(fn, in_shardings=shardings, out_shardings=NamedSharding(mesh, out_spec))
    text = jitted.lower(*args).as_text(dialect="hlo")
    text = re.sub(r", metadata=\{[^}]*\}", "", text)
    n = mesh.devices.size
    text = re.sub(r"^(HloModule [^,\n]+), ", rf"\1, num_partitions={n}, ", text, count=1)
    return text.strip() + "\n", np.asarray(jitted(*args))


def constrained(op, sharding):
    """op applied to operands pinned by with_sharding_constraint (the seed's Sharding custom-calls)."""
    def f(x, y):
        x = jax.lax.with_sharding_constraint(x, sharding)
        y = jax.lax.with_sharding_constraint(y, sharding)
        return op(x, y)
    return f


def main():
    jax.config.update("jax_use_shardy_partitioner", False)
    os.makedirs(OUT, exist_ok=True)
    devs = np.array(jax.devices()[:8])
    expected = []

    def record(name, value, note):
        expected.append(f"# {name}: {note}\n{value.dtype}{list(value.shape)}\n{value}\n")

    # Seed 000.
    mesh_ab = Mesh(devs.reshape(4, 2), ("a", "b"))
    v = jnp.arange(1, 5)
    x = np.asarray(jnp.asarray(jnp.repeat(v[:, None], 16, axis=1), dtype="f2"))
    y = x.T.copy()
    np.save(os.path.join(OUT, "seed000_x.npy"), x)
    np.save(os.path.join(OUT, "seed000_y.npy"), y)
    for case, (px, py) in {"inner": (P(None, "a"), P("a", None)),
                           "mismatch": (P(None, "a"), P("b", None)),
                           "outer": (P("b", "a"), P("b", None)),
                           "full": (P("b", "a"), P("b", "a"))}.items():
        xs = jax.device_put(x, NamedSharding(mesh_ab, px))
        ys = jax.device_put(y, NamedSharding(mesh_ab, py))
        record(f"seed000_{case}", np.asarray(jnp.matmul(xs, ys)), f"x {px} @ y {py}")

    # Seed 001.
    mesh22 = Mesh(devs[:4].reshape(2, 2), ("x", "y"))
    mesh24 = Mesh(devs.reshape(2, 4), ("x", "y"))
    mesh2 = Mesh(devs[:2].reshape(2, 1), ("x", "y"))
    cases = [
        ("seed001_matmul", jnp.matmul, mesh22, P("x", "y"),
         np.arange(16, dtype=np.float32).reshape(4, 4),
         (np.arange(16) % 3 - 1).astype(np.float32).reshape(4, 4),
         "ShardedMatMul: x @ y, x = arange(16), y = k % 3 - 1, all {devices=[2,2]0,1,2,3}"),
        ("seed001_multiply", jnp.multiply, mesh24, P("x", "y"),
         np.arange(32, dtype=np.float32).reshape(4, 8),
         (np.arange(32) % 5 + 1).astype(np.float32).reshape(4, 8),
         "ShardedMultiply: x * y, x = arange(32), y = k % 5 + 1, all {devices=[2,4]0,...,7}"),
        ("seed001_add", jnp.add, mesh2, P("x", None),
         np.full((2, 2), 3, np.float32), np.full((2, 2), 4, np.float32),
         "ShardedAddForwardWithCustomCall: 3s + 4s, all {devices=[2,1]0,1}"),
        ("seed001_sharded_jit", jnp.multiply, mesh2, P("x", None),
         np.arange(4, dtype=np.float32).reshape(2, 2), np.arange(4, dtype=np.float32).reshape(2, 2),
         "sharded_jit(f = x * y, P(2, 1)): x = y = arange(4).reshape(2, 2)"),
    ]
    for name, op, mesh, spec, a, b, note in cases:
        sharding = NamedSharding(mesh, spec)
        text, z = lower(constrained(op, sharding), mesh, (spec, spec), spec, (a, b))
        with open(os.path.join(OUT, name + ".hlo"), "w") as f:
            f.write(text)
        np.save(os.path.join(OUT, name + ".arg0.npy"), a)
        np.save(os.path.join(OUT, name + ".arg1.npy"), b)
        record(name, z, note)

    # Seed 002: the committed pjit modules' inputs.
    mesh_xy = Mesh(devs.reshape(4, 2), ("x", "y"))
    data = np.arange(8 * 4, dtype=np.int32).reshape(8, 4)
    np.save(os.path.join(OUT, "seed002_square.arg0.npy"), data)
    sq = jax.jit(lambda x: x * x, in_shardings=NamedSharding(mesh_xy, P("x", "y")),
                 out_shardings=NamedSharding(mesh_xy, P("x", "y")))
    record("seed002_square", np.asarray(sq(data)), "pjit(square, P('x', 'y')) on arange(32)")
    m = np.eye(8, dtype=np.float32)
    vec = np.arange(8, dtype=np.int32).reshape(8, 1)
    np.save(os.path.join(OUT, "seed002_dot.arg0.npy"), m)
    np.save(os.path.join(OUT, "seed002_dot.arg1.npy"), vec)
    spec = NamedSharding(mesh_xy, P(("x", "y"), None))
    dot = jax.jit(jnp.dot, in_shardings=(spec, NamedSharding(mesh_xy, P())), out_shardings=spec)
    record("seed002_dot", np.asarray(dot(m, vec)), "pjit(jnp.dot, (P(('x','y'), None), None)) on eye(8), arange(8)")

    with open(os.path.join(OUT, "expected.txt"), "w") as f:
        f.write("# JAX's outputs for tests/data/seeds_global (tests/tools/gen_seeds_global.py)\n\n")
        f.write("\n".join(expected))
    print("\n".join(expected))
    return 0


if __name__ == "__main__":
    sys.exit(main())
