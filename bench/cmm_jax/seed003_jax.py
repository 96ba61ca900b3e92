#!/usr/bin/env python3
"""Seed 003's nine collective matmuls in JAX (the notebook's code), timed like `xshard bench cmm`.

Runs GSPMD / Wang / Systolic x OS / IS / WS with jax.shard_map on 8 virtual CPU devices, mesh
row=2, col=4, at B,S,H,D (default the seed's 4,256,48,64), with the seed's last cells' chaining:
OS(X, W), IS(Y, W), WS(X, Y) where X f32[B*S,H*D], W f32[H*D,4*H*D], Y f32[B*S,4*H*D] (uniform
[-1, 1) values). Each is checked against jnp.dot on one device (max abs error) and timed: --warmup
untimed calls, then --iters calls with block_until_ready; prints the median wall ms and the
process CPU ms per call (all threads). Needs JAX (bench/jax_compare/jax_compare.py --setup makes a
venv with jax 0.10.2).

Usage: seed003_jax.py [--bshd 4,256,48,64] [--iters 3] [--warmup 1] [--only gspmd_os,...]
"""
import argparse
import os
import statistics
import time

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

from functools import partial  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

MESH = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("row", "col"))
RC = P("row", "col")


def smap(f):
    return jax.jit(jax.shard_map(f, mesh=MESH, in_specs=(RC, RC), out_specs=RC, check_vma=False))


# The notebook's functions, unchanged but for removed prints.
def gspmd_os(Xij, Wij):
    Xi = jax.lax.all_gather(Xij, 'col', tiled=True, axis=1)
    Wj = jax.lax.all_gather(Wij, 'row', tiled=True, axis=0)
    return Xi @ Wj


def gspmd_is(Xij, Wji):
    Wj = jax.lax.all_gather(Wji, 'row', tiled=True, axis=0)
    Yp = jnp.einsum('mn,kn->mk', Xij, Wj)
    return jax.lax.psum_scatter(Yp, 'col', scatter_dimension=1, tiled=True)


def gspmd_ws(Xji, Wij):
    Xi = jax.lax.all_gather(Xji, 'col', tiled=True, axis=1)
    Yp = jnp.einsum('ib,io->bo', Xi, Wij)
    return jax.lax.psum_scatter(Yp, 'row', scatter_dimension=0, tiled=True)


def _shifts(axis, size):
    up = partial(jax.lax.ppermute, axis_name=axis, perm=[(i, (i + 1) % size) for i in range(size)])
    dn = partial(jax.lax.ppermute, axis_name=axis, perm=[(i, (i - 1) % size) for i in range(size)])
    return up, dn


def wang_os(Xij, Wij):
    Wj = jax.lax.all_gather(Wij, 'row', tiled=True, axis=0)
    size = jax.lax.psum(1, 'col')
    idx = jax.lax.axis_index('col')
    shift_up, shift_dn = _shifts('col', size)
    B = Wj.shape[0] // size // 2
    w_blocks = lambda i, hi: jax.lax.dynamic_slice_in_dim(Wj, (2 * i + hi) * B, B, 0)
    x_lo, x_hi = jnp.split(Xij, 2, axis=1)
    out_block = x_lo @ w_blocks(idx, 0)
    out_block += x_hi @ w_blocks(idx, 1)
    for i in range(1, size):
        x_lo = shift_up(x_lo)
        x_hi = shift_dn(x_hi)
        out_block += x_lo @ w_blocks((idx - i) % size, 0)
        out_block += x_hi @ w_blocks((idx + i) % size, 1)
    return out_block


def wang_is(Xij, Wji):
    Wj = jax.lax.all_gather(Wji, 'row', tiled=True, axis=0)
    size = jax.lax.psum(1, 'col')
    idx = jax.lax.axis_index('col')
    shift_up, shift_dn = _shifts('col', size)
    B = Wj.shape[0] // size // 2
    w_blocks = lambda i, hi: jax.lax.dynamic_slice_in_dim(Wj, (2 * i + hi) * B, B, 0)
    y_lo = jnp.einsum('bi,oi->bo', Xij, w_blocks((idx - 1) % size, 0))
    y_hi = jnp.einsum('bi,oi->bo', Xij, w_blocks((idx + 1) % size, 1))

    def body_fn(ii, carry):
        low, high = carry
        low = shift_up(low)
        high = shift_dn(high)
        low += jnp.einsum('bi,oi->bo', Xij, w_blocks((idx - ii - 1) % size, 0))
        high += jnp.einsum('bi,oi->bo', Xij, w_blocks((idx + ii + 1) % size, 1))
        return (low, high)
    y_lo, y_hi = jax.lax.fori_loop(1, size, body_fn, init_val=(y_lo, y_hi))
    return jnp.concatenate([y_lo, y_hi], axis=1)


def wang_ws(Xji, Wij):
    R = jax.lax.psum(1, 'row')
    C = jax.lax.psum(1, 'col')
    if C * Xji.shape[0] > R * Wij.shape[1]:
        Xi = jax.lax.all_gather(Xji, 'col', tiled=True, axis=1)
        size = R
        idx = jax.lax.axis_index('row')
        shift_up, shift_dn = _shifts('row', size)
        B = Xi.shape[1] // size // 2
        x_blocks = lambda i, hi: jax.lax.dynamic_slice_in_dim(Xi, (2 * i + hi) * B, B, 1)
        y_lo = jnp.einsum('ib,io->bo', x_blocks((idx - 1) % size, 0), Wij)
        y_hi = jnp.einsum('ib,io->bo', x_blocks((idx + 1) % size, 1), Wij)

        def body_fn(ii, carry):
            low, high = carry
            low = shift_up(low)
            high = shift_dn(high)
            low += jnp.einsum('ib,io->bo', x_blocks((idx - ii - 1) % size, 0), Wij)
            high += jnp.einsum('ib,io->bo', x_blocks((idx + ii + 1) % size, 1), Wij)
            return (low, high)
        y_lo, y_hi = jax.lax.fori_loop(1, size, body_fn, init_val=(y_lo, y_hi))
        return jnp.concatenate([y_lo, y_hi], axis=0)
    size = C
    idx = jax.lax.axis_index('col')
    shift_up, shift_dn = _shifts('col', size)
    Yj = jnp.zeros((Xji.shape[1] * C, Wij.shape[1]), Xji.dtype)
    B = Yj.shape[0] // size // 2
    Yk = jnp.einsum('ib,io->bo', Xji, Wij)
    Yj = jax.lax.dynamic_update_slice_in_dim(Yj, Yk, 2 * (idx % size) * B, axis=0)
    x_lo, x_hi = jnp.split(Xji, 2, 1)

    def body_fn(ii, carry):
        lo, hi, Yj = carry
        lo = shift_up(lo)
        hi = shift_dn(hi)
        Y_lo = jnp.einsum('ib,io->bo', lo, Wij)
        Yj = jax.lax.dynamic_update_slice_in_dim(Yj, Y_lo, 2 * ((idx - ii) % size) * B, axis=0)
        Y_hi = jnp.einsum('ib,io->bo', hi, Wij)
        Yj = jax.lax.dynamic_update_slice_in_dim(Yj, Y_hi, 2 * ((idx + ii) % size) * B + B, axis=0)
        return (lo, hi, Yj)
    Yj = jax.lax.fori_loop(1, size, body_fn, init_val=(x_lo, x_hi, Yj))[2]
    return jax.lax.psum_scatter(Yj, 'row', scatter_dimension=0, tiled=True)


def systolic_os(Xij, Wij, B=8, K=8):
    X_split = Xij.reshape(Xij.shape[0], Xij.shape[1] // (K * B), K, B)
    W_split = Wij.reshape(Wij.shape[0] // (K * B), K, B, Wij.shape[1])
    x_blocks = lambda i: jax.lax.dynamic_slice_in_dim(X_split, i, 1, 2)
    w_blocks = lambda i: jax.lax.dynamic_slice_in_dim(W_split, i, 1, 1)
    Xk = jax.lax.all_gather(x_blocks(0), 'col', tiled=True, axis=1)
    Wk = jax.lax.all_gather(w_blocks(0), 'row', tiled=True, axis=0)
    Yij = Xk.reshape(Xij.shape[0], -1) @ Wk.reshape(-1, Wij.shape[1])
    for k in range(1, K):
        Xk = jax.lax.all_gather(x_blocks(k), 'col', tiled=True, axis=1)
        Wk = jax.lax.all_gather(w_blocks(k), 'row', tiled=True, axis=0)
        Yij += Xk.reshape(Xij.shape[0], -1) @ Wk.reshape(-1, Wij.shape[1])
    return Yij


def systolic_is(Xij, Wji, B=8, K=8):
    O = Wji.shape[0] * jax.lax.psum(1, 'row')
    C = jax.lax.psum(1, 'col')
    W_split = Wji.reshape(Wji.shape[0] // K // B, K, B, Wji.shape[1])
    w_blocks = lambda i: jax.lax.dynamic_slice_in_dim(W_split, i, 1, 1)
    Yij = jnp.zeros((Xij.shape[0], O // (K * B * C), K, B), Xij.dtype)
    Wk = jax.lax.all_gather(w_blocks(0), 'row', tiled=True, axis=0)
    Yk = jnp.einsum('ni,okbi->nokb', Xij, Wk)
    Yk2 = jax.lax.psum_scatter(Yk, 'col', scatter_dimension=1, tiled=True)
    Yij = jax.lax.dynamic_update_index_in_dim(Yij, Yk2, 0, axis=2)

    def body_fn(kk, carry):
        Wk = jax.lax.all_gather(w_blocks(kk), 'row', tiled=True, axis=0)
        Yk = jnp.einsum('ni,okbi->nokb', Xij, Wk)
        Yk2 = jax.lax.psum_scatter(Yk, 'col', scatter_dimension=1, tiled=True)
        return jax.lax.dynamic_update_index_in_dim(carry, Yk2, kk, axis=2)
    Yij = jax.lax.fori_loop(1, K, body_fn, init_val=Yij)
    return Yij.reshape(Xij.shape[0], -1)


def systolic_ws(Xji, Wij, B=8, K=8):
    N = Xji.shape[1] * jax.lax.psum(1, 'col')
    R = jax.lax.psum(1, 'row')
    X_split = Xji.reshape(Xji.shape[0], Xji.shape[1] // K // B, K, B)
    x_blocks = lambda i: jax.lax.dynamic_slice_in_dim(X_split, i, 1, 2)
    Yij = jnp.zeros((N // (K * B * R), K, B, Wij.shape[1]), Xji.dtype)
    Xk = jax.lax.all_gather(x_blocks(0), 'col', tiled=True, axis=1)
    Yk = jnp.einsum('inkb,io->nkbo', Xk, Wij)
    Yk2 = jax.lax.psum_scatter(Yk, 'row', scatter_dimension=0, tiled=True)
    Yij = jax.lax.dynamic_update_index_in_dim(Yij, Yk2, 0, axis=1)

    def body_fn(kk, carry):
        Xk = jax.lax.all_gather(x_blocks(kk), 'col', tiled=True, axis=1)
        Yk = jnp.einsum('inkb,io->nkbo', Xk, Wij)
        Yk2 = jax.lax.psum_scatter(Yk, 'row', scatter_dimension=0, tiled=True)
        return jax.lax.dynamic_update_index_in_dim(carry, Yk2, kk, axis=1)
    Yij = jax.lax.fori_loop(1, K, body_fn, init_val=Yij)
    return Yij.reshape(-1, Wij.shape[1])


FUNCS = {"gspmd_os": gspmd_os, "gspmd_is": gspmd_is, "gspmd_ws": gspmd_ws,
         "wang_os": wang_os, "wang_is": wang_is, "wang_ws": wang_ws,
         "systolic_os": systolic_os, "systolic_is": systolic_is, "systolic_ws": systolic_ws}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bshd", default="4,256,48,64")
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--only", default=",".join(FUNCS))
    args = ap.parse_args()
    b, s, h, d = (int(v) for v in args.bshd.split(","))
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (b * s, h * d)).astype(np.float32)
    w = rng.uniform(-1, 1, (h * d, 4 * h * d)).astype(np.float32)
    y = rng.uniform(-1, 1, (b * s, 4 * h * d)).astype(np.float32)
    operands = {"os": (x, w), "is": (y, w), "ws": (x, y)}
    wants = {"os": lambda: x @ w, "is": lambda: y @ w.T, "ws": lambda: x.T @ y}
    flops = 2.0 * b * s * h * d * 4 * h * d
    print(f"jax {jax.__version__}, B,S,H,D = {args.bshd}, mesh row=2 col=4, {flops / 8e9:.2f} GFLOP per device")
    for name in args.only.split(","):
        variant = name.split("_")[1]
        f = smap(FUNCS[name])
        a, bb = (jax.device_put(o, NamedSharding(MESH, RC)) for o in operands[variant])
        for _ in range(args.warmup):
            f(a, bb).block_until_ready()
        ms, cpu0 = [], time.process_time()
        for _ in range(args.iters):
            t0 = time.perf_counter()
            out = f(a, bb).block_until_ready()
            ms.append((time.perf_counter() - t0) * 1e3)
        cpu = (time.process_time() - cpu0) * 1e3 / args.iters
        err = float(np.max(np.abs(np.asarray(out) - wants[variant]())))
        print(f"{name:12s} median_ms={statistics.median(ms):.1f} cpu_ms_per_call={cpu:.1f} max_abs_err={err:.2e}",
              flush=True)


if __name__ == "__main__":
    main()
