"""More programs for bench/xla_compare: the everyday JAX features past the first suite's
(activations and their erf, logsumexp, depthwise and transposed convolutions, int8 matmuls,
random numbers, segment sums, argsort, complex FFTs, data-dependent while loops, cond, vmap,
remat, integer and bit ops, f16, a KV-cache decode step, special functions, pad modes, multi-key
sorts, permutations, out-of-range gathers, cumulative ops, associative scans, searchsorted,
mixed precision, an FSDP Adam step, a top-2 MoE layer, a ResNet block, a scan over stacked layers,
expert parallelism by all_to_all), each on sharded inputs.
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



def _kv_cache_step(cache, new, pos):
    # A decode step's cache write at a runtime position, then attention over the cache.
    cache = jax.lax.dynamic_update_slice(cache, new[:, None], (0, pos[0], 0))
    scores = jnp.einsum("bd,bsd->bs", new, cache)
    return cache, jax.nn.softmax(scores, axis=-1)


def _special(x):
    return (jax.lax.lgamma(jnp.abs(x) + 0.5), jax.lax.digamma(jnp.abs(x) + 0.5),
            jax.scipy.special.erfinv(jnp.tanh(x) * 0.9), jax.lax.rsqrt(jnp.abs(x) + 1.0), jnp.expm1(x), jnp.log1p(jnp.abs(x)))


def _pads(x):
    return (jnp.pad(x, ((1, 2), (0, 0)), mode="reflect"), jnp.pad(x, ((2, 1), (0, 0)), mode="edge"),
            jnp.pad(x, ((1, 1), (0, 0)), mode="wrap"))


def _two_key_sort(a, b):
    return jax.lax.sort((a, b, jnp.arange(a.shape[0], dtype=jnp.int32)), num_keys=2)


def _random_perm(key_data, x):
    key = jax.random.wrap_key_data(key_data)
    return jax.random.permutation(key, x, axis=0), jax.random.categorical(key, x, axis=-1)


def _gather_fill(table, idx):
    return jnp.take(table, idx, axis=0, mode="fill", fill_value=-1.0) + jnp.take(table, -idx - 1, axis=0, mode="wrap")


def _cum_ops(x):
    return jax.lax.cummax(x, axis=0), jax.lax.cumprod(x * 0.1 + 1.0, axis=1), jax.lax.cumsum(x, axis=0, reverse=True)


def _associative_scan(x):
    return jax.lax.associative_scan(jnp.add, x, axis=0)


def _searchsorted(edges, x):
    return jnp.searchsorted(edges, x), jnp.interp(x, edges, edges * 2.0 + 1.0)


def _mixed_precision_step(w, x, y):
    def loss(w):
        h = (x.astype(jnp.bfloat16) @ w.astype(jnp.bfloat16)).astype(jnp.float32)
        return jnp.mean((h - y) ** 2) * 128.0

    g = jax.grad(loss)(w) / 128.0
    return w - 0.1 * g


def _tri_masks(x):
    return jnp.tril(x) - jnp.triu(x, k=1) * 2.0, jnp.outer(x[0], x[:, 0])


def _fsdp_adam_step(w1, w2, g, m1, m2, mg, v1, v2, vg, x, y):
    # A two-layer model with layer norm; params sharded FSDP-style (rows over x); one Adam step.
    params, m, v = (w1, w2, g), (m1, m2, mg), (v1, v2, vg)

    def loss(p):
        w1, w2, g = p
        h = x @ w1
        mu = jnp.mean(h, axis=-1, keepdims=True)
        var = jnp.var(h, axis=-1, keepdims=True)
        h = (h - mu) * jax.lax.rsqrt(var + 1e-5) * g
        logits = jax.nn.relu(h) @ w2
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    grads = jax.grad(loss)(params)
    b1, b2, lr, eps = 0.9, 0.999, 1e-2, 1e-8
    m = jax.tree.map(lambda a, g: b1 * a + (1 - b1) * g, m, grads)
    v = jax.tree.map(lambda a, g: b2 * a + (1 - b2) * g * g, v, grads)
    params = jax.tree.map(lambda p, a, b: p - lr * a / (jnp.sqrt(b) + eps), params, m, v)
    return params, m, v


def _fsdp_args():
    w1, w2, g = _rand((16, 32), 250, scale=0.25), _rand((32, 8), 251, scale=0.2), np.ones((32,), np.float32)
    zeros = [np.zeros_like(a) for a in (w1, w2, g)]
    labels = np.eye(8, dtype=np.float32)[_ids((16,), 8, 252)]
    return [w1, w2, g, *zeros, *(np.abs(z) + 1e-3 for z in zeros), _rand((16, 16), 253), labels]


def _moe(x, router, experts):
    # Top-2 routing with one-hot dispatch / combine einsums (the common JAX MoE layer).
    logits = x @ router
    gates, idx = jax.lax.top_k(jax.nn.softmax(logits, axis=-1), 2)
    dispatch = jax.nn.one_hot(idx, experts.shape[0])                      # [t, 2, e]
    expert_in = jnp.einsum("tke,td->etd", dispatch, x)
    expert_out = jnp.tanh(jnp.einsum("etd,edf->etf", expert_in, experts))
    return jnp.einsum("tke,tk,etf->tf", dispatch, gates, expert_out)


def _resnet_block(x, w1, w2, scale, bias):
    # conv -> batch norm (batch statistics) -> relu -> conv -> residual.
    def bn(h):
        mean = jnp.mean(h, axis=(0, 1, 2))
        var = jnp.var(h, axis=(0, 1, 2))
        return (h - mean) * jax.lax.rsqrt(var + 1e-5) * scale + bias

    conv = lambda h, w: jax.lax.conv_general_dilated(h, w, (1, 1), "SAME",
                                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    h = jax.nn.relu(bn(conv(x, w1)))
    return jax.nn.relu(x + conv(h, w2))


def _scan_layers_grad(ws, x):
    # "Scan over layers" with stacked weights, and its weight gradient (Flax nn.scan's pattern).
    def loss(ws):
        def layer(h, w):
            return h + jnp.tanh(h @ w), None

        h, _ = jax.lax.scan(layer, x, ws)
        return jnp.sum(h * h)

    return jax.grad(loss)(ws)


def _smap_expert_all_to_all(mesh):
    # Expert parallelism in shard_map: tokens grouped per destination expert shard are exchanged
    # with all_to_all, transformed by the local expert, and sent back.
    def body(tokens, w):
        # tokens: [n_dev, t, d] grouped by destination; w: [1, d, d] the local expert.
        routed = jax.lax.all_to_all(tokens, "x", 0, 0, tiled=True)
        out = jnp.tanh(jnp.einsum("std,de->ste", routed, w[0]))
        return jax.lax.all_to_all(out, "x", 0, 0, tiled=True)

    return _smap(mesh, body, in_specs=(P("x"), P("x")), out_specs=P("x"))


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
        Program("kv_cache_step", "decode step: cache write at a runtime position, attention over it, batch over x",
                _plain(_kv_cache_step), m8, an_x, [P("x"), P("x"), P()], None,
                lambda: [_rand((8, 12, 16), 228), _rand((8, 16), 229), np.array([5], np.int32)]),
        Program("special_fns", "lgamma, digamma, erfinv, rsqrt, expm1, log1p on a sharded array",
                _plain(_special), m24, an_xy, [P("x", "y")], None, lambda: [_rand((8, 16), 230)]),
        Program("pad_modes", "jnp.pad reflect / edge / wrap along the sharded dim",
                _plain(_pads), m8, an_x, [P("x", None)], None, lambda: [_rand((16, 3), 231)]),
        Program("sort_two_keys", "lax.sort with num_keys=2 and a payload, sorted dim sharded",
                _plain(_two_key_sort), m8, an_x, [P("x"), P("x")], None,
                lambda: [_ids((32,), 4, 232).astype(np.float32), _rand((32,), 233)]),
        Program("random_permutation", "jax.random.permutation and categorical, rows sharded",
                _plain(_random_perm), m8, an_x, [P(), P("x", None)], None,
                lambda: [key, _rand((16, 6), 234)]),
        Program("gather_fill_wrap", "jnp.take mode=fill and mode=wrap with out-of-range ids, table rows sharded",
                _plain(_gather_fill), m8, an_x, [P("x", None), P()], None,
                lambda: [_rand((16, 4), 235), np.random.default_rng(236).integers(-20, 20, (10,)).astype(np.int32)]),
        Program("cum_ops", "cummax / cumprod / reverse cumsum, both dims sharded",
                _plain(_cum_ops), m24, an_xy, [P("x", "y")], None, lambda: [_rand((16, 8), 237)]),
        Program("associative_scan", "lax.associative_scan(add) along the sharded dim",
                _plain(_associative_scan), m8, an_x, [P("x", None)], None, lambda: [_rand((16, 4), 238)]),
        Program("searchsorted_interp", "searchsorted and interp of sharded queries",
                _plain(_searchsorted), m8, an_x, [P(), P("x")], None,
                lambda: [np.sort(_rand((9,), 239)), _rand((32,), 240)]),
        Program("mixed_precision_step", "bf16 compute / f32 master weights SGD step with loss scaling",
                _plain(_mixed_precision_step), m24, an_xy, [P(None, "y"), P("x", None), P("x", "y")], None,
                lambda: [_rand((16, 16), 241, scale=0.25), _rand((8, 16), 242), _rand((8, 16), 243)]),
        Program("tri_outer", "tril / triu masks and an outer product of a row and a column",
                _plain(_tri_masks), m8, an_x, [P("x", None)], None, lambda: [_rand((8, 8), 244)]),
        Program("fsdp_adam_step", "layer-norm MLP, params FSDP over x, batch over x, one Adam step",
                _plain(_fsdp_adam_step), m8, an_x,
                [P("x")] * 11, None, _fsdp_args),
        Program("moe_top2", "top-2 MoE layer (one-hot dispatch / combine einsums), tokens over x, experts over y",
                _plain(_moe), m24, an_xy, [P("x", None), P(), P("y")], None,
                lambda: [_rand((16, 8), 254), _rand((8, 4), 255), _rand((4, 8, 8), 256, scale=0.3)]),
        Program("resnet_block", "conv / batch-norm (batch statistics) / relu / conv / residual, batch over x",
                _plain(_resnet_block), m8, an_x, [P("x"), P(), P(), P(), P()], None,
                lambda: [_rand((8, 6, 6, 4), 257), _rand((3, 3, 4, 4), 258, scale=0.2),
                         _rand((3, 3, 4, 4), 259, scale=0.2), np.ones((4,), np.float32), np.zeros((4,), np.float32)]),
        Program("scan_layers_grad", "lax.scan over 4 stacked layers and its weight gradient, batch over x, width over y",
                _plain(_scan_layers_grad), m24, an_xy, [P(None, None, "y"), P("x", None)], None,
                lambda: [_rand((4, 16, 16), 260, scale=0.2), _rand((8, 16), 261)]),
        Program("smap_expert_a2a", "expert parallelism: shard_map all_to_all tokens to their expert and back",
                _smap_expert_all_to_all, m8, an_x, [P("x"), P("x")], None,
                lambda: [_rand((64, 3, 8), 262), _rand((8, 8, 8), 263, scale=0.3)]),
    ]
