"""Programs for bench/xla_compare on which xshard once moved more bytes than XLA: an associative
scan and a linear recurrence over a sharded dim (pads with interior padding), a GLU whose fused
projection is split along a sharded dim (halos that differ per device), and a transpose + reshape
that merges a dim into a minor-major sharded one.
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
    ]

