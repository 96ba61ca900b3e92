"""Programs for the auto-sharding table: each with its mesh and one or more hand-written shardings.

A Program is a JAX function, example arguments, a mesh (shape, axis names) and a dict of named
hand-written in_specs (out_specs are left to propagation, as under jax.jit without out_shardings).
bench/jax_compare's workloads are reused where they are plain jit programs.
"""
import dataclasses
import sys
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "jax_compare"))
import workloads as W  # noqa: E402


@dataclasses.dataclass
class Program:
    name: str
    what: str
    fn: Callable
    make_args: Callable
    mesh_shape: tuple
    axis_names: tuple
    hand: dict  # label -> list of in PartitionSpecs

    @property
    def devices(self):
        return int(np.prod(self.mesh_shape))

    def mesh_flag(self):
        return ",".join(f"{a}={s}" for a, s in zip(self.axis_names, self.mesh_shape))


def _rand(shape, seed, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape, dtype=np.float32) * scale).astype(np.float32)


def _from_workload(w, extra=None):
    hand = {"jax_compare's": list(w.in_specs)}
    hand.update(extra or {})
    return Program(w.name, w.what, w.fn, w.make_args, w.mesh_shape, w.axis_names, hand)


# A decoder block's training step (forward, gradient, SGD): b8 s128 d256 h8, mesh data=4 x model=2.
DB, DS, DD, DH = 8, 128, 256, 8


def _ln(x):
    m = x.mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def decoder_block(params, x, b, s, d, h):
    """A pre-norm decoder block (causal attention with h heads, a 4d gelu MLP) on x[b, s, d]."""
    wq, wk, wv, wo, w1, w2 = params
    n = _ln(x)
    q = (n @ wq).reshape(b, s, h, d // h)
    k = (n @ wk).reshape(b, s, h, d // h)
    v = (n @ wv).reshape(b, s, h, d // h)
    sc = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(d // h))
    sc = jnp.where(jnp.tril(jnp.ones((s, s), bool)), sc, -1e9)
    a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, -1), v).reshape(b, s, d)
    x = x + a @ wo
    return x + jax.nn.gelu(_ln(x) @ w1) @ w2


def _decoder(params, x):
    return decoder_block(params, x, DB, DS, DD, DH)


def _decoder_step(wq, wk, wv, wo, w1, w2, x, y):
    def loss(p):
        return jnp.mean((_decoder(p, x) - y) ** 2)
    l, g = jax.value_and_grad(loss)((wq, wk, wv, wo, w1, w2))
    return (l,) + tuple(p - 0.01 * gp for p, gp in zip((wq, wk, wv, wo, w1, w2), g))


def _decoder_args():
    sc = 1 / np.sqrt(DD)
    return [_rand((DD, DD), 40 + i, sc) for i in range(4)] + [_rand((DD, 4 * DD), 44, sc),
            _rand((4 * DD, DD), 45, sc / 2), _rand((DB, DS, DD), 46), _rand((DB, DS, DD), 47)]


def decoder_train():
    mp = [P(None, "model")] * 3 + [P("model", None), P(None, "model"), P("model", None)]
    return Program("decoder_train", "decoder block train step b8 s128 d256 h8, 4x2", _decoder_step, _decoder_args,
                   (4, 2), ("data", "model"),
                   {"Megatron + data": mp + [P("data"), P("data")],
                    "data parallel": [P()] * 6 + [P(("data", "model")), P(("data", "model"))]})


# FSDP-style training step of a 3-layer MLP (d1024, h2048, batch 128) on 8 devices.
FD, FH, FB = 1024, 2048, 128


def _fsdp_step(w1, w2, w3, x, y):
    def loss(p):
        a, b, c = p
        return jnp.mean((jax.nn.relu(jax.nn.relu(x @ a) @ b) @ c - y) ** 2)
    l, g = jax.value_and_grad(loss)((w1, w2, w3))
    return (l,) + tuple(p - 0.01 * gp for p, gp in zip((w1, w2, w3), g))


def fsdp_step():
    return Program("fsdp_step", "3-layer MLP train step d1024 h2048 b128, 8 devices", _fsdp_step,
                   lambda: [_rand((FD, FH), 50, FD ** -.5), _rand((FH, FH), 51, FH ** -.5),
                            _rand((FH, FD), 52, FH ** -.5), _rand((FB, FD), 53), _rand((FB, FD), 54)],
                   (8,), ("fsdp",),
                   {"FSDP": [P("fsdp")] * 3 + [P("fsdp"), P("fsdp")],
                    "data parallel": [P()] * 3 + [P("fsdp"), P("fsdp")]})


# A mixture-of-experts layer (GShard-style dense dispatch, top-1): tokens 1024 x d256, 8 experts of
# h512, mesh expert=4 x data=2.
ME, MT, MDm, MF = 8, 1024, 256, 512


def _moe(x, wg, w1, w2):
    gates = jax.nn.softmax(x @ wg, -1)
    top = jax.nn.one_hot(jnp.argmax(gates, -1), ME, dtype=x.dtype) * gates
    xe = jnp.einsum("te,td->etd", top, x)
    h = jax.nn.relu(jnp.einsum("etd,edf->etf", xe, w1))
    return jnp.einsum("etf,efd->td", h, w2)


def moe_layer():
    return Program("moe_layer", "MoE layer top-1, 8 experts, t1024 d256 h512, 4x2", _moe,
                   lambda: [_rand((MT, MDm), 60), _rand((MDm, ME), 61, .1), _rand((ME, MDm, MF), 62, MDm ** -.5),
                            _rand((ME, MF, MDm), 63, MF ** -.5)],
                   (4, 2), ("expert", "data"),
                   {"experts split": [P("data"), P(), P("expert"), P("expert")],
                    "data parallel": [P(("expert", "data")), P(), P(), P()]})


# A small CNN forward pass: NHWC batch 32, 32x32, 16 -> 32 -> 32 channels, 3x3 convs, dense head.
def _cnn(x, k1, k2, wd):
    dn = ("NHWC", "HWIO", "NHWC")
    h = jax.nn.relu(jax.lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn))
    h = jax.nn.relu(jax.lax.conv_general_dilated(h, k2, (1, 1), "SAME", dimension_numbers=dn))
    return h.mean((1, 2)) @ wd


def cnn():
    return Program("cnn_fwd", "CNN fwd b32 32x32 16-32-32ch, 8 devices", _cnn,
                   lambda: [_rand((32, 32, 32, 16), 70), _rand((3, 3, 16, 32), 71, .1), _rand((3, 3, 32, 32), 72, .1),
                            _rand((32, 10), 73, .1)],
                   (8,), ("batch",),
                   {"data parallel": [P("batch"), P(), P(), P()]})


def all_programs():
    ws = {w.name: w for w in W.all_workloads()}
    progs = [
        _seed000(ws),
        _from_workload(ws["seed001_mul"]),
        _from_workload(ws["seed001_matmul"]),
        _from_workload(ws["seed004_jit"]),
        _from_workload(ws["transformer_fwd"], {"data parallel": [P(("data", "model"))] + [P()] * 6}),
        _from_workload(ws["mlp_train_step"], {"data parallel": [P()] * 3 + [P(("data", "model"))] * 2}),
        decoder_train(), fsdp_step(), moe_layer(), cnn(),
    ]
    return progs


def _seed000(ws):
    """Seed 000's three cases are three hand-written shardings of one matmul."""
    w = ws["seed000_outer"]
    hand = {case: list(ws[f"seed000_{case}"].in_specs) for case in ("outer", "full", "inner")}
    return Program("seed000_matmul", "seed 000 matmul f32[2048,2048]^2, 4x2", w.fn, w.make_args, w.mesh_shape,
                   w.axis_names, hand)
