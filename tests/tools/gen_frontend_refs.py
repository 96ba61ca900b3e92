#!/usr/bin/env python3
"""JAX reference values for the C++ front end's tests (src/xshard/frontend/jax_ref_test.cc):
seed 002's CNN (Conv 32 3x3 SAME, relu, avg_pool 2x2, Conv 64, relu, avg_pool, flatten, Dense 256,
relu, Dense 10, log_softmax) on one 28x28x1 image, the gradients of sum(conv(x, k)^2) (SAME,
stride 2, NHWC / HWIO) w.r.t. x and k, and value_and_grad of the MLP loss
mean((relu(x W1) W2 - y)^2) with its first three SGD steps (lr 0.1). Parameters come from the
same 32-bit LCG the C++ test uses, so both sides see identical f32 inputs.

Usage, from the repository root:
  bench/jax_compare/.venv/bin/python tests/tools/gen_frontend_refs.py > tests/data/frontend/jax_refs.txt
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

jax.config.update("jax_platform_name", "cpu")


def lcg(dims, seed, lo, hi):
    n = int(np.prod(dims))
    out = np.empty(n, np.float64)
    for i in range(n):
        seed = (seed * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = (seed >> 8) / float(1 << 24) * (hi - lo) + lo
    return out.astype(np.float32).reshape(dims)


def cnn(p, image):
    x = image[None]
    dn = ("NHWC", "HWIO", "NHWC")
    pool = lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
    x = jax.nn.relu(lax.conv_general_dilated(x, p[0], (1, 1), "SAME", dimension_numbers=dn) + p[1])
    x = pool(x)
    x = jax.nn.relu(lax.conv_general_dilated(x, p[2], (1, 1), "SAME", dimension_numbers=dn) + p[3])
    x = pool(x)
    x = x[0].reshape(7, -1)
    x = jax.nn.relu(x @ p[4] + p[5])
    return jax.nn.log_softmax(x @ p[6] + p[7])


def loss(w1, w2, x, y):
    return jnp.mean((jax.nn.relu(x @ w1) @ w2 - y) ** 2)


def fmt(name, a):
    a = np.asarray(a, np.float64).ravel()
    print(name, len(a), " ".join("%.9g" % v for v in a))


def main():
    shapes = [(3, 3, 1, 32), (32,), (3, 3, 32, 64), (64,), (448, 256), (256,), (256, 10), (10,)]
    params = [jnp.asarray(lcg(s, i + 1, -0.1, 0.1)) for i, s in enumerate(shapes)]
    image = jnp.asarray(lcg((28, 28, 1), 99, -1.0, 1.0))
    fmt("cnn_log_softmax", jax.jit(cnn)(params, image))

    cx, ck = jnp.asarray(lcg((1, 5, 5, 2), 21, -1.0, 1.0)), jnp.asarray(lcg((3, 3, 2, 3), 22, -1.0, 1.0))
    conv_loss = lambda x, k: jnp.sum(lax.conv_general_dilated(
        x, k, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) ** 2)
    gx, gk = jax.grad(conv_loss, argnums=(0, 1))(cx, ck)
    fmt("conv_grad_x", gx)
    fmt("conv_grad_k", gk)

    w1, w2 = jnp.asarray(lcg((16, 64), 11, -0.3, 0.3)), jnp.asarray(lcg((64, 4), 12, -0.3, 0.3))
    x, y = jnp.asarray(lcg((32, 16), 13, -1.0, 1.0)), jnp.asarray(lcg((32, 4), 14, -1.0, 1.0))
    step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    for i in range(3):
        value, (g1, g2) = step(w1, w2, x, y)
        fmt("mlp_loss_%d" % i, value)
        fmt("mlp_grad_w2_%d" % i, g2)
        w1, w2 = w1 - 0.1 * g1, w2 - 0.1 * g2
    fmt("mlp_w1_after_3", w1)


if __name__ == "__main__":
    main()
