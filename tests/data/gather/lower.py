# How the modules of this folder were made (take_along_axis_jax0430.hlo and its _grad_ aside:
# bench/xla_compare's take_along_axis program and its gradient under JAX 0.4.30, GSPMD): JAX 0.10 with its defaults (Shardy), 8 CPU devices,
# jax.jit(f, in_shardings=..., out_shardings=...).lower(*args).as_text(dialect='hlo').
# XLA's compiled collectives per device (from .compile().as_text()) are in
# tests/cli/gather_reshard.test next to xshard's.
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

m1 = Mesh(np.array(jax.devices()).reshape(8), ('x',))
m2 = Mesh(np.array(jax.devices()).reshape(4, 2), ('x', 'y'))
S, f32, i32 = jax.ShapeDtypeStruct, jnp.float32, jnp.int32

def emb(t, i): return t[i]
def emb_train(t, i, g):  # one SGD step of an embedding: lookup, squared error, scatter-add gradient
    return t - 0.1 * jax.grad(lambda t: jnp.sum((t[i] - g) ** 2))(t)
def ident(a): return a
def tr(a): return a.T
def cat(a, b): return jnp.concatenate([a, b], axis=0)
def flip(a): return jnp.flip(a, 0)
def roll(a): return jnp.roll(a, 3, axis=0)
def sort0(a): return jnp.sort(a, axis=0)
cases = [
    ("emb_train", emb_train, m1, (S((1024, 64), f32), S((32,), i32), S((32, 64), f32)), (P('x', None), P(), P()), P('x', None)),
    ("emb_train_small", emb_train, m1, (S((64, 16), f32), S((8,), i32), S((8, 16), f32)), (P('x', None), P(), P()), P('x', None)),
    ("emb_dp", emb, m2, (S((1024, 64), f32), S((16, 8), i32)), (P('y', None), P('x', None)), P('x', None, None)),
    ("reshard_yx_xy", ident, m2, (S((64, 64), f32),), (P('y', 'x'),), P('x', 'y')),
    ("transpose", tr, m2, (S((64, 32), f32),), (P('x', 'y'),), P('x', 'y')),
    ("concat", cat, m1, (S((64, 16), f32), S((64, 16), f32)), (P('x', None), P('x', None)), P('x', None)),
    ("flip", flip, m1, (S((64, 16), f32),), (P('x', None),), P('x', None)),
    ("roll", roll, m1, (S((64, 16), f32),), (P('x', None),), P('x', None)),
    ("sort0", sort0, m1, (S((64, 128), f32),), (P('x', None),), P('x', None)),
]
for name, f, mesh, args, ins, outs in cases:
    j = jax.jit(f, in_shardings=tuple(NamedSharding(mesh, s) for s in ins), out_shardings=NamedSharding(mesh, outs))
    open(f"{name}.hlo", "w").write(j.lower(*args).as_text(dialect='hlo'))
