"""Single-device workloads of the ops real JAX programs use beyond the seeds' matmuls (the `ops`
suite of jax_compare.py): convolutions and their gradients, cross-entropy, normalizations,
attention, embedding lookups and their gradients, segment sums, sort, top-k, argmax, pooling,
random numbers, scans and loops. Each is what a jitted JAX function lowers to on one device.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec as P

from workloads import Workload, _rand


def _ints(n, high, seed):
    return np.random.default_rng(seed).integers(0, high, n).astype(np.int32)


def _conv_block(x, w, b):
    y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y + b)


def _conv_grad(x, w, b):
    return jax.grad(lambda w: jnp.sum(_conv_block(x, w, b) ** 2))(w)


def _xent(logits, labels):
    lse = jax.nn.logsumexp(logits, axis=-1)
    return jnp.mean(lse - jnp.take_along_axis(logits, labels[:, None], axis=-1)[:, 0])


def _layernorm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


def _batchnorm(x, g, b):
    m, v = x.mean((0, 1, 2)), x.var((0, 1, 2))
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


def _attention(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / 8.0
    s = jnp.where(jnp.tril(jnp.ones((q.shape[2], k.shape[2]), bool)), s, -1e9)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)


def _embed_grad(table, ids, g):
    # The table enters the loss (a weight decay term) so that JAX keeps it as an argument.
    return jax.grad(lambda t: jnp.sum(jnp.take(t, ids, axis=0) * g) + 1e-4 * jnp.sum(t * t))(table)


def _rnn(h, w, xs):
    return lax.scan(lambda h, x: (jnp.tanh(h @ w + x),) * 2, h, xs)[0]


def _w(name, what, fn, make_args, flops=0.0):
    return Workload(name, what, fn, (1,), ("d",), [P()] * len(make_args()), None, make_args, flops)


def op_workloads():
    return [
        _w("op_conv3x3", "1 device conv 3x3 SAME + bias + relu, NHWC f32[8,56,56,64] x [3,3,64,64]",
           _conv_block, lambda: [_rand((8, 56, 56, 64), 1), _rand((3, 3, 64, 64), 2) * 0.05, _rand((64,), 3)],
           2.0 * 8 * 56 * 56 * 64 * 64 * 9),
        _w("op_conv3x3_grad", "1 device grad wrt the kernel of sum(conv_block(x)^2), f32[8,28,28,64]",
           _conv_grad, lambda: [_rand((8, 28, 28, 64), 1), _rand((3, 3, 64, 64), 2) * 0.05, _rand((64,), 3)],
           2 * 2.0 * 8 * 28 * 28 * 64 * 64 * 9),
        _w("op_xent", "1 device softmax cross-entropy, logits f32[512,32000]", _xent,
           lambda: [_rand((512, 32000), 4), _ints(512, 32000, 5)]),
        _w("op_xent_grad", "1 device grad of the cross-entropy wrt the logits", jax.grad(_xent),
           lambda: [_rand((512, 32000), 4), _ints(512, 32000, 5)]),
        _w("op_layernorm", "1 device layer norm f32[8192,1024]", _layernorm,
           lambda: [_rand((8192, 1024), 6), _rand((1024,), 7), _rand((1024,), 8)]),
        _w("op_batchnorm", "1 device batch norm (batch statistics) f32[32,28,28,128]", _batchnorm,
           lambda: [_rand((32, 28, 28, 128), 27), _rand((128,), 28), _rand((128,), 29)]),
        _w("op_attention", "1 device causal attention b4 h8 s512 d64", _attention,
           lambda: [_rand((4, 8, 512, 64), 9), _rand((4, 8, 512, 64), 10), _rand((4, 8, 512, 64), 11)],
           2 * 2.0 * 4 * 8 * 512 * 512 * 64),
        _w("op_embed", "1 device jnp.take(table f32[32000,512], ids s32[8192], axis=0)",
           lambda t, i: jnp.take(t, i, axis=0), lambda: [_rand((32000, 512), 12), _ints(8192, 32000, 13)]),
        _w("op_embed_grad", "1 device grad of an embedding lookup (scatter-add of [8192,512] rows)",
           _embed_grad, lambda: [_rand((32000, 512), 12), _ints(8192, 32000, 13), _rand((8192, 512), 14)]),
        _w("op_segment_sum", "1 device segment_sum f32[262144,64] into 1024 segments",
           lambda x, s: jax.ops.segment_sum(x, s, num_segments=1024),
           lambda: [_rand((262144, 64), 15), _ints(262144, 1024, 16)]),
        _w("op_scatter_set", "1 device x.at[idx].set(u), x f32[65536,128], 4096 rows",
           lambda x, i, u: x.at[i].set(u), lambda: [_rand((65536, 128), 35), _ints(4096, 65536, 36),
                                                   _rand((4096, 128), 37)]),
        _w("op_sort", "1 device jnp.sort f32[1048576]", jnp.sort, lambda: [_rand((1 << 20,), 17)]),
        _w("op_argsort", "1 device jnp.argsort f32[256,4096] along rows", lambda x: jnp.argsort(x, axis=-1),
           lambda: [_rand((256, 4096), 18)]),
        _w("op_top_k", "1 device lax.top_k(x, 8), x f32[256,32000]", lambda x: lax.top_k(x, 8),
           lambda: [_rand((256, 32000), 18)]),
        _w("op_argmax", "1 device jnp.argmax(x, -1), x f32[512,32000]", lambda x: jnp.argmax(x, axis=-1),
           lambda: [_rand((512, 32000), 20)]),
        _w("op_maxpool", "1 device 3x3 stride-2 SAME max pool f32[8,56,56,64]",
           lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
           lambda: [_rand((8, 56, 56, 64), 19)]),
        _w("op_column_sum", "1 device x.sum(0), x f32[8192,1024]", lambda x: x.sum(0),
           lambda: [_rand((8192, 1024), 34)]),
        _w("op_softmax", "1 device softmax f32[4096,4096]", lambda x: jax.nn.softmax(x, -1),
           lambda: [_rand((4096, 4096), 33)]),
        _w("op_random_normal", "1 device jax.random.normal(key, (4096, 1024)) (threefry)",
           lambda k: jax.random.normal(jax.random.wrap_key_data(k), (4096, 1024)),
           lambda: [np.array([0, 42], np.uint32)]),
        _w("op_rnn_scan", "1 device lax.scan of tanh(h @ W + x_t), 200 steps, h f32[64,256]", _rnn,
           lambda: [_rand((64, 256), 22), _rand((256, 256), 23) * 0.05, _rand((200, 64, 256), 24)],
           200 * 2.0 * 64 * 256 * 256),
        _w("op_cumsum_dim0", "1 device jnp.cumsum(x, 0), x f32[4096,1024]", lambda x: jnp.cumsum(x, 0),
           lambda: [_rand((4096, 1024), 42)]),
        _w("op_transpose", "1 device x.T + 1, x f32[4096,4096]", lambda x: x.T + 1.0,
           lambda: [_rand((4096, 4096), 21)]),
    ]
