#!/usr/bin/env python3
"""Writes tests/data/kernels/tanh_f32_jax.txt: JAX's CPU jnp.tanh on f32 inputs, as bit patterns.

Run with JAX (not needed in CI; the output is committed):
  bench/jax_compare/.venv/bin/python tests/tools/gen_tanh_refs.py

Each line is `<input bits> <output bits>` in hex. Inputs: a grid over [-10, 10] in steps of 1/64,
small magnitudes around the |x| < 4e-4 cut-over, the clamp edges and +-0. xshard's f32 tanh on a
CPU with FMA must give exactly these bits (kernels/elementwise_simd_test.cc).
"""
import os

import numpy as np
import jax
import jax.numpy as jnp

jax.config.update("jax_platform_name", "cpu")

xs = [k / 64.0 for k in range(-640, 641)]
xs += [s * v for s in (1, -1) for v in (1e-30, 1e-8, 1e-5, 3.9e-4, 4e-4, 4.1e-4, 1e-3, 0.0625,
                                         7.9, 7.99, 7.9988, 8.0, 9.0, 20.0, 1e30)]
xs += [0.0, -0.0]
x = np.array(xs, dtype=np.float32)
y = np.asarray(jax.jit(jnp.tanh)(x))
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "kernels",
                    "tanh_f32_jax.txt")
with open(path, "w") as f:
    f.write(f"# jnp.tanh on CPU, JAX {jax.__version__}: input bits, output bits (tests/tools/gen_tanh_refs.py)\n")
    for a, b in zip(x.view(np.uint32), y.view(np.uint32)):
        f.write(f"{a:08x} {b:08x}\n")
print(f"wrote {len(x)} values to {path}")
