"""More programs for bench/xla_compare: the everyday JAX features past the first suite's
(activations and their erf, logsumexp, depthwise and transposed convolutions, int8 matmuls,
random numbers, segment sums, argsort, complex FFTs, data-dependent while loops, cond, vmap,
remat, integer and bit ops, f16), each on sharded inputs.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from programs import Program, _ids, _plain, _rand, _smap


def _depthwise(x, w):
    # NHWC image, HWIO kernel with one filter per channel (feature_group_count = channels).
    return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                        feature_group_count=x.shape[-1])


def _conv_transpose(x, w):
    return jax.lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _random_mix(key_data, x):
    key = jax.random.wrap_key_data(key_data)
    k1, k2 = jax.random.split(key)
    noise = jax.random.normal(k1, x.shape)
    keep = jax.random.bernoulli(k2, 0.75, x.shape)
    return jnp.where(keep, x + 0.1 * noise, 0.0)


def _segment_sum(data, seg):
    return jax.ops.segment_sum(data, seg, num_segments=8) * 2.0


def _newton_sqrt(a):
    # Data-dependent trip count: iterate until every element has converged.
    def cond(s):
        x, prev = s
        return jnp.max(jnp.abs(x - prev)) > 1e-6

    def body(s):
        x, _ = s
        return 0.5 * (x + a / x), x

    x, _ = jax.lax.while_loop(cond, body, (a, jnp.zeros_like(a)))
    return x


def _cond(x, flag):
    return jax.lax.cond(flag[0] > 0, lambda v: jnp.sin(v) * 2.0, lambda v: jnp.cos(v) - 1.0, x)


def _remat_grad(w, x):
    @jax.checkpoint
    def layer(w, h):
        return jnp.tanh(h @ w)

    def loss(w):
        return jnp.sum(layer(w, layer(w, x)) ** 2)

    return jax.grad(loss)(w)


def _int_ops(a, b):
    b = jnp.where(b == 0, 3, b)
    return (a // b, a % b, a >> 2, a << 3, jnp.bitwise_xor(a, b), jax.lax.population_count(a),
            jax.lax.clz(a), jnp.minimum(a, b), jnp.abs(a))


def _float_bits(x):
    u = jax.lax.bitcast_convert_type(x, jnp.uint32)
    return u >> 23, jnp.isnan(jnp.log(x)), jnp.sign(x), jnp.floor(x * 3.0), jnp.round(x * 3.0)


def _attention_heads(q, k):
    return jax.nn.softmax(jnp.einsum("bhqd,bhkd->bhqk", q, k) / 4.0, axis=-1)


def more_programs():
    m24, an_xy = (2, 4), ("x", "y")
    m8, an_x = (8,), ("x",)
    key = np.asarray(jax.random.key_data(jax.random.key(7)))
    return [
        Program("gelu_erf", "exact gelu (erf) and softplus of x @ w, batch over x, hidden over y",
                _plain(lambda x, w: jax.nn.gelu(x @ w, approximate=False) + jax.nn.softplus(x @ w)), m24, an_xy,
                [P("x", None), P(None, "y")], None, lambda: [_rand((16, 32), 200), _rand((32, 64), 201, scale=0.2)]),
        Program("logsumexp_vocab", "logsumexp and log_softmax over a vocab-sharded dim",
                _plain(lambda z: (jax.nn.logsumexp(z, axis=-1), jax.nn.log_softmax(z, axis=-1))), m24, an_xy,
                [P("x", "y")], None, lambda: [_rand((8, 64), 202, scale=3.0)]),
        Program("depthwise_conv", "depthwise 3x3 conv (feature_group_count=C), batch over x",
                _plain(_depthwise), m8, an_x, [P("x"), P()], None,
                lambda: [_rand((8, 10, 10, 6), 203), _rand((3, 3, 1, 6), 204, scale=0.3)]),
        Program("conv_transpose", "2x upsampling transposed conv (lhs dilation), batch over x",
                _plain(_conv_transpose), m8, an_x, [P("x"), P()], None,
                lambda: [_rand((8, 5, 5, 4), 205), _rand((3, 3, 4, 3), 206, scale=0.3)]),
        Program("int8_matmul", "int8 x int8 -> int32 matmul (preferred_element_type), 2 x 4",
                _plain(lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.int32)), m24, an_xy,
                [P("x", "y"), P("y", None)], None,
                lambda: [np.random.default_rng(207).integers(-128, 128, (16, 64)).astype(np.int8),
                         np.random.default_rng(208).integers(-128, 128, (64, 8)).astype(np.int8)]),
        Program("random_dropout", "jax.random split / normal / bernoulli (threefry) on a sharded array",
                _plain(_random_mix), m24, an_xy, [P(), P("x", "y")], None,
                lambda: [key, _rand((16, 32), 209)]),
        Program("segment_sum", "jax.ops.segment_sum (scatter-add), data rows sharded",
                _plain(_segment_sum), m8, an_x, [P("x", None), P("x")], None,
                lambda: [_rand((32, 4), 210), np.sort(_ids((32,), 8, 211))]),
        Program("argsort", "argsort along the sharded dim and along the other",
                _plain(lambda x: (jnp.argsort(x, axis=0), jnp.argsort(x, axis=1))), m24, an_xy,
                [P("x", "y")], None, lambda: [_rand((16, 8), 212)]),
        Program("fft_batch", "complex FFT along an unsharded dim, batch over x; |.| of it",
                _plain(lambda x: jnp.abs(jnp.fft.fft(x.astype(jnp.complex64), axis=1))), m8, an_x,
                [P("x", None)], None, lambda: [_rand((16, 12), 213)]),
        Program("while_converge", "Newton sqrt in a while_loop whose trip count depends on the data",
                _plain(_newton_sqrt), m8, an_x, [P("x")], None,
                lambda: [np.abs(_rand((32,), 214)) + 0.5]),
        Program("cond_sharded", "lax.cond on a scalar flag, operand sharded",
                _plain(_cond), m8, an_x, [P("x"), P()], None,
                lambda: [_rand((16,), 215), np.array([1], np.int32)]),
        Program("vmap_matvec", "vmap of a matrix-vector product, batch over x",
                _plain(jax.vmap(lambda m, v: jnp.tanh(m @ v))), m8, an_x, [P("x"), P("x")], None,
                lambda: [_rand((8, 6, 5), 216), _rand((8, 5), 217)]),
        Program("remat_grad", "grad through jax.checkpoint'ed layers, w over y",
                _plain(_remat_grad), m24, an_xy, [P(None, "y"), P("x", None)], None,
                lambda: [_rand((16, 16), 218, scale=0.25), _rand((8, 16), 219)]),
        Program("int_ops", "s32 floor division, remainder, shifts, xor, popcount, clz, min, abs",
                _plain(_int_ops), m8, an_x, [P("x"), P("x")], None,
                lambda: [np.random.default_rng(220).integers(-1000, 1000, (32,)).astype(np.int32),
                         np.random.default_rng(221).integers(-9, 9, (32,)).astype(np.int32)]),
        Program("float_bits", "bitcast f32 -> u32, isnan(log x), sign, floor, round",
                _plain(_float_bits), m8, an_x, [P("x")], None, lambda: [_rand((32,), 222)]),
        Program("f16_mlp", "f16 tanh(x @ w) + x, batch over x",
                _plain(lambda x, w: jnp.tanh(x @ w) + x), m24, an_xy, [P("x", None), P(None, "y")], None,
                lambda: [_rand((16, 32), 223).astype(np.float16), (_rand((32, 32), 224) * 0.2).astype(np.float16)],
                "f16"),
        Program("attention_heads", "softmax(q k^T) per head, heads over y, batch over x",
                _plain(_attention_heads), m24, an_xy, [P("x", "y"), P("x", "y")], None,
                lambda: [_rand((2, 4, 8, 16), 225), _rand((2, 4, 8, 16), 226)]),
        Program("smap_pmax_axis_index", "shard_map pmax and axis_index over x",
                lambda mesh: _smap(mesh, lambda v: jax.lax.pmax(v, "x") + jax.lax.axis_index("x"),
                                   in_specs=(P("x"),), out_specs=P("x")),
                m8, an_x, [P("x")], None, lambda: [_rand((16,), 227)]),
    ]
