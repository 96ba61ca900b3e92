"""Programs for bench/xla_compare of the kinds on which xshard once moved more bytes than XLA:
associative scans and a linear recurrence over a sharded dim (pads with interior padding), fused
projections split along a sharded dim (GLU, q / k / v; halos that differ per device), and a
transpose + reshape that merges a dim into a minor-major sharded one, from three input shardings.
"""
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from programs import Program, _plain, _rand


def _scan_add(x):
    return jax.lax.associative_scan(jnp.add, x, axis=0)


def _linear_recurrence(a, b):
    # h[t] = a[t] * h[t-1] + b[t] (a diagonal state-space layer's scan) by associative_scan.
    def combine(p, q):
        return q[0] * p[0], q[0] * p[1] + q[1]

    return jax.lax.associative_scan(combine, (a, b), axis=0)[1]


def _glu_split(x, w):
    # A gated unit whose gate and up projections are one fused matmul split in two (384 -> 2 x 192).
    gate, up = jnp.split(x @ w, 2, axis=-1)
    return jax.nn.silu(gate) * up


def _merge_reshape(x):
    # [a, b, c, d] -> [b, a, c, d] -> [b * a, c, d], summed over d.
    t = jnp.transpose(x, (1, 0, 2, 3))
    return jnp.sum(t.reshape(t.shape[0] * t.shape[1], t.shape[2], t.shape[3]), axis=-1)


def _qkv_attention(x, w):
    # Self-attention from one fused q / k / v projection split three ways along the sharded dim.
    q, k, v = jnp.split(x @ w, 3, axis=-1)
    return jax.nn.softmax(q @ k.T) @ v


def _split4(x):
    a, b, c, d = jnp.split(x, 4, axis=1)
    return a * b - c * d


def bytes_programs():
    m8, an_x = (8,), ("x",)
    m4 = (4,)
    m222, an_xyz = (2, 2, 2), ("x", "y", "z")
    return [
        Program("assoc_scan_rows", "lax.associative_scan(add) of f32[256,16] along the sharded dim",
                _plain(_scan_add), m8, an_x, [P("x", None)], None, lambda: [_rand((256, 16), 300)]),
        Program("linear_recurrence", "h = a * h + b by associative_scan over 128 steps sharded, width 8",
                _plain(_linear_recurrence), m8, an_x, [P("x", None), P("x", None)], None,
                lambda: [_rand((128, 8), 301, scale=0.3), _rand((128, 8), 302)]),
        Program("glu_split", "silu(gate) * up of x @ w split 384 -> 2 x 192, the 384 dim over 4",
                _plain(_glu_split), m4, an_x, [P(), P(None, "x")], None,
                lambda: [_rand((16, 32), 303), _rand((32, 384), 304, scale=0.2)]),
        Program("glu_split_8", "the same GLU with the 384 dim over 8 (halves four tiles away)",
                _plain(_glu_split), m8, an_x, [P(), P(None, "x")], None,
                lambda: [_rand((16, 32), 306), _rand((32, 384), 307, scale=0.2)]),
        Program("merge_reshape", "transpose (1,0,2,3), reshape merging dims, sum; out P(('y','x'),'z')",
                _plain(_merge_reshape), m222, an_xyz, [P("x", "y", None, "z")], P(("y", "x"), "z"),
                lambda: [_rand((8, 8, 16, 8), 305)]),
        Program("merge_reshape_xz", "the same from x in P('x', None, None, 'z') (y sliced, x moved)",
                _plain(_merge_reshape), m222, an_xyz, [P("x", None, None, "z")], P(("y", "x"), "z"),
                lambda: [_rand((8, 8, 16, 8), 308)]),
        Program("merge_reshape_xy", "the same from x in P('x', 'y', None, None) (z sliced before the all-to-all)",
                _plain(_merge_reshape), m222, an_xyz, [P("x", "y", None, None)], P(("y", "x"), "z"),
                lambda: [_rand((8, 8, 16, 8), 309)]),
        Program("scan_max_cols", "lax.associative_scan(max) along dim 1, both dims sharded on 2 x 4",
                _plain(lambda x: jax.lax.associative_scan(jnp.maximum, x, axis=1)), (2, 4), ("x", "y"),
                [P("x", "y")], None, lambda: [_rand((16, 64), 310)]),
        Program("scan_reverse", "lax.associative_scan(add, reverse=True) of f32[128,8] along the sharded dim",
                _plain(lambda x: jax.lax.associative_scan(jnp.add, x, axis=0, reverse=True)), m8, an_x,
                [P("x", None)], None, lambda: [_rand((128, 8), 311)]),
        Program("split4", "jnp.split of a 512 dim over 8 into 4, a * b - c * d",
                _plain(_split4), m8, an_x, [P(None, "x")], None, lambda: [_rand((8, 512), 312)]),
        Program("qkv_split", "attention from a fused q / k / v projection split 3 ways, the 96 dim over 4",
                _plain(_qkv_attention), m4, an_x, [P(), P(None, "x")], None,
                lambda: [_rand((16, 32), 313), _rand((32, 96), 314, scale=0.2)]),
    ]

