#!/usr/bin/env python3
"""JAX's side of bench/frontend_dispatch_bench.cc: the median time of a cached jitted call
(jax.jit(sigmoid)(x).block_until_ready() for x f32[1] and f32[1000]), an eager jnp.exp on
f32[1000], and jax.jit(jnp.matmul) on seed 000's sharded f32 inputs over 8 CPU devices.
Prints one line per case: name, median microseconds (of --repeats runs of --number calls each).

Usage: bench/jax_compare/.venv/bin/python bench/jax_compare/frontend_dispatch.py
"""
import argparse
import os
import timeit

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402


def sigmoid(x):
    return 1 / (1 + jnp.exp(-x))


def median_us(fn, number, repeats):
    fn()
    times = timeit.repeat(fn, number=number, repeat=repeats)
    return float(np.median(times)) / number * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--number", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    f = jax.jit(sigmoid)
    for n in (1, 1000):
        x = jnp.ones(n)
        print(f"jit_sigmoid/{n} {median_us(lambda: f(x).block_until_ready(), a.number, a.repeats):.2f}")
    x = jnp.ones(1000)
    print(f"eager_exp/1000 {median_us(lambda: jnp.exp(x).block_until_ready(), a.number, a.repeats):.2f}")
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("a", "b"))
    xs = jax.device_put(jnp.ones((4, 16)), NamedSharding(mesh, P(None, "a")))
    ys = jax.device_put(jnp.ones((16, 4)), NamedSharding(mesh, P("a", None)))
    mm = jax.jit(jnp.matmul)
    print(f"jit_sharded_matmul {median_us(lambda: mm(xs, ys).block_until_ready(), a.number, a.repeats):.2f}")


if __name__ == "__main__":
    main()
