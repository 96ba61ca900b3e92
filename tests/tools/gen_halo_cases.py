#!/usr/bin/env python3
"""Generates the halo exchange's CLI test data (tests/cli/partition_halo.test) in
tests/data/spmd_partition/: a small CNN with the image height sharded over 8 devices (mesh x=8),
lowered by JAX 0.10.2 with its defaults (Shardy form, jit with in_shardings only):

  cnn_spatial_fwd_jax.hlo   3x3 conv, 2x2 max pool, 3x3 stride-2 conv, 3x3 average pool, sum of
                            squares; f32[2,64,16,3] images sharded P(None, 'x'), weights replicated
  cnn_spatial_step_jax.hlo  the SGD step of the same loss (its gradient: lhs-dilated conv,
                            weight-gradient convs, select-and-scatter, padded reduce-window)

and prints what XLA's compiled program receives per device for each (bench/xla_compare's ring
model: collective-permute the whole operand, all-reduce 2(g-1)/g).

Run: bench/jax_compare/.venv/bin/python tests/tools/gen_halo_cases.py
"""
import os
import sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "xla_compare"))
import collectives

DATA = os.path.join(HERE, "..", "data", "spmd_partition")


def conv(x, w, stride=1):
    return jax.lax.conv_general_dilated(x, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def loss(params, x):
    w1, w2 = params
    h = jax.nn.relu(conv(x, w1))
    h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = jax.nn.relu(conv(h, w2, stride=2))
    a = jax.lax.reduce_window(h, 0.0, jax.lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME") / 9.0
    return jnp.sum(a ** 2)


def step(params, x):
    g = jax.grad(loss)(params, x)
    return [p - 0.1 * gi for p, gi in zip(params, g)]


mesh = jax.make_mesh((8,), ("x",))
xs, rs = NamedSharding(mesh, P(None, "x")), NamedSharding(mesh, P())
args = ([jax.ShapeDtypeStruct((3, 3, 3, 8), jnp.float32), jax.ShapeDtypeStruct((3, 3, 8, 8), jnp.float32)],
        jax.ShapeDtypeStruct((2, 64, 16, 3), jnp.float32))
for name, f in (("fwd", loss), ("step", step)):
    lowered = jax.jit(f, in_shardings=([rs, rs], xs)).lower(*args)
    with open(os.path.join(DATA, f"cnn_spatial_{name}_jax.hlo"), "w") as out:
        out.write(lowered.as_text(dialect="hlo"))
    counted = collectives.count(lowered.compile().as_text(), 8)
    print(f"{name}: XLA {counted['count']} collectives, {counted['bytes']} B per device, {counted['by_kind']}")
