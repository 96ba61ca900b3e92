"""Programs for bench/xla_compare of the JAX features the other files leave out: fused attention
(jax.nn.dot_product_attention), grouped matmuls (lax.ragged_dot), batched linear algebra
(cholesky, triangular solves, QR, eigh, SVD, solve: LAPACK on the CPU), float8 and int4
quantized matmuls, the 'rbg' random-number generator (an rng-bit-generator op), image resizing,
bincount, real FFTs, lax.map, remat with a saving policy, three-operand einsums, NaN-aware
reductions, gamma / truncated-normal / choice sampling, unique and nonzero with a size, 1-D
convolutions, cumulative logsumexp, complex matmuls, reduce_precision, attention with a bias and
a mask, glu / standardize, a depthwise kernel's gradient, a reversed unrolled scan, switch,
matrix norms, array manipulation (rot90, roll, repeat, tile, diagonal, trace, kron), einsum
diagonals and ellipses, select_n, quantiles, the less common activations and math functions,
counting ops, clamped dynamic slices, shard_map's stacked all_gather / pmean / pmin / partial
ppermute and two-axis psum, vmap with an axis name, forward-mode derivatives, and model pieces:
ViT patch embedding, a CLIP loss, timestep embedding with GroupNorm, label smoothing with ignored
labels, clipping with a cosine-scheduled AdamW step, a beam-search step, a CTC-style recursion,
WaveNet's dilated causal convolutions, a 3-D convolution, SAME average pooling, batch norm with
running statistics and a U-Net up block, each on sharded inputs.
"""
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax.sharding import PartitionSpec as P

from programs import Program, _ids, _plain, _rand, _smap


def _sdpa(q, k, v):
    # [batch, seq, heads, head_dim], causal; the XLA implementation (the one JAX's CPU backend has).
    return jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation="xla")


def _ragged(x, w, sizes):
    # Rows of x in contiguous groups, each group times its own expert matrix (MoE grouped GEMM).
    return jnp.tanh(jax.lax.ragged_dot(x, w, sizes))


def _spd(a):
    # Symmetric positive definite from a batch of square matrices.
    n = a.shape[-1]
    return a @ jnp.swapaxes(a, -1, -2) / n + jnp.eye(n, dtype=a.dtype)


def _cholesky_solve(a, b):
    l = jnp.linalg.cholesky(_spd(a))
    y = jax.scipy.linalg.solve_triangular(l, b, lower=True)
    return jax.scipy.linalg.solve_triangular(jnp.swapaxes(l, -1, -2), y, lower=False)


def _qr_eigh(a):
    q, r = jnp.linalg.qr(a)
    w = jnp.linalg.eigvalsh(_spd(a))
    # Q and R are unique up to the signs of R's diagonal: compare sign-free quantities.
    return jnp.abs(r), q @ r, w


def _svd_solve(a, b):
    s = jnp.linalg.svd(a, compute_uv=False)
    return s, jnp.linalg.solve(_spd(a), b), jnp.linalg.slogdet(_spd(a))[1]


def _f8_matmul(x, w):
    # Per-tensor scaled float8 (e4m3) operands, f32 accumulation, rescaled result.
    sx = jnp.max(jnp.abs(x)) / 448.0
    sw = jnp.max(jnp.abs(w)) / 448.0
    x8 = (x / sx).astype(jnp.float8_e4m3fn)
    w8 = (w / sw).astype(jnp.float8_e4m3fn)
    return jnp.dot(x8, w8, preferred_element_type=jnp.float32) * (sx * sw)


def _int4_matmul(x, w):
    # int4 weights (values -8..7) widened to int8 for an int32-accumulating matmul.
    w4 = jnp.clip(jnp.round(w * 4.0), -8, 7).astype(jnp.int4)
    xq = jnp.clip(jnp.round(x * 16.0), -127, 127).astype(jnp.int8)
    acc = jax.lax.dot(xq, w4.astype(jnp.int8), preferred_element_type=jnp.int32)
    return acc.astype(jnp.float32) / 64.0


def _rbg_noise(seed, x):
    key = jax.random.key(seed[0], impl="rbg")
    k1, k2 = jax.random.split(key)
    return x + jax.random.uniform(k1, x.shape), jax.random.randint(k2, x.shape, 0, 10)


def _resize(img):
    n, h, w, c = img.shape
    up = jax.image.resize(img, (n, 2 * h, 2 * w, c), "bilinear")
    return up, jax.image.resize(img, (n, h // 2, w // 2, c), "linear", antialias=True)


def _bincount(ids, weights):
    return jnp.bincount(ids, weights, length=32), jnp.histogram(weights, bins=8, range=(-3.0, 3.0))[0]


def _rfft(x):
    f = jnp.fft.rfft(x, axis=-1)
    return jnp.abs(f), jnp.fft.irfft(f * 0.5, n=x.shape[-1], axis=-1)


def _lax_map(x, w):
    return jax.lax.map(lambda r: jnp.tanh(r @ w).sum(), x, batch_size=4)


def _remat_policy_grad(w1, w2, x):
    policy = jax.checkpoint_policies.dots_with_no_batch_dims_saveable

    @jax.checkpoint
    def inner(w1, w2, h):
        return jnp.tanh(h @ w1) @ w2

    layer = jax.checkpoint(lambda w1, w2, h: jax.nn.gelu(inner(w1, w2, h)), policy=policy)
    return jax.grad(lambda w1, w2: jnp.sum(layer(w1, w2, layer(w1, w2, x)) ** 2), argnums=(0, 1))(w1, w2)


def _einsum3(a, b, c):
    return jnp.einsum("bi,ij,bj->b", a, b, c), jnp.einsum("bij,bjk,bk->bi", a[:, None, :] * b[None],
                                                          b[None] * c[:, :, None], c)


def _nan_reductions(x):
    x = jnp.where(x > 1.2, jnp.nan, x)
    return jnp.nanmean(x, axis=0), jnp.nanmax(x, axis=1), jnp.nanstd(x), jnp.nansum(x * x, axis=0)


def _int4_args():
    return [_rand((32, 64), 411), _rand((64, 16), 412, scale=0.8)]

def _gamma(kd, x):
    key = jax.random.wrap_key_data(kd)
    k1, k2, k3 = jax.random.split(key, 3)
    return (x + jax.random.gamma(k1, 2.5, x.shape), jax.random.truncated_normal(k2, -1.0, 1.0, x.shape),
            jax.random.choice(k3, 16, (6,), replace=False))

def _unique_nonzero(x):
    xi = jnp.round(x * 2).astype(jnp.int32)
    u = jnp.unique(xi, size=8, fill_value=-99)
    nz = jnp.nonzero(xi > 0, size=10, fill_value=-1)[0]
    return u, nz

def _conv1d(x, w):
    return jax.vmap(lambda r: jnp.convolve(r, w, mode="same"))(x), jnp.polyval(w, x)

def _cum(x):
    return jax.lax.cumlogsumexp(x, axis=1), jax.lax.cummin(x, axis=0), jnp.argmin(x, axis=0)

def _cplx(a, b):
    c = (a + 1j * b).astype(jnp.complex64)
    return jnp.abs(c @ c.T), jnp.angle(jnp.sum(c * jnp.conj(c), axis=1) + 1j)

def _reduce_prec(x):
    return jax.lax.reduce_precision(x, exponent_bits=5, mantissa_bits=2), x.astype(jnp.bfloat16).astype(jnp.float32) * 3

def _sdpa_bias(q, k, v, bias):
    mask = jnp.tril(jnp.ones((16, 16), bool))[None, None]
    return jax.nn.dot_product_attention(q, k, v, bias=bias, mask=mask, implementation="xla")

def _glu(x, w):
    return jax.nn.glu(x @ w, axis=-1), jax.nn.standardize(x, axis=-1)

def _conv_grad_depthwise(x, w):
    def f(w):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=x.shape[-1])
        return jnp.sum(y ** 2)
    return jax.grad(f)(w)

def _explicit(mesh):
    def f(x, w):
        y = x @ w
        return jnp.tanh(y).sum(axis=0)
    return f

def _scan_unroll_reverse(x, w):
    def step(h, xt):
        h = jnp.tanh(h @ w + xt)
        return h, h.sum(-1)
    h, ys = jax.lax.scan(step, jnp.zeros((x.shape[1], w.shape[0])), x, reverse=True, unroll=2)
    return h, ys


def _switch(x, i):
    branches = [lambda v: v * 2.0, lambda v: jnp.sin(v), lambda v: v - jnp.mean(v)]
    return jax.lax.switch(jnp.clip(i[0], 0, 2), branches, x)


def _norms(x):
    return (jnp.linalg.norm(x), jnp.linalg.norm(x, ord=jnp.inf, axis=1), jnp.linalg.norm(x, ord=1, axis=0),
            jnp.linalg.norm(x[:4, :4], ord="nuc"), jnp.linalg.norm(x[:4, :4], ord=2))


def _array_manip(x):
    return (jnp.rot90(x), jnp.roll(x, (1, -2), axis=(0, 1)), jnp.repeat(x[:, :2], 2, axis=1, total_repeat_length=4),
            jnp.tile(x[:2], (2, 1)), jnp.diagonal(x, offset=1), jnp.trace(x), jnp.kron(x[:2, :2], x[:2, :2]))


def _einsum_diag(a, b):
    return jnp.einsum("ii->i", a), jnp.einsum("...ij,...jk->...ik", b, b), jnp.tensordot(b, b, axes=([1, 2], [2, 1]))


def _select_n(x, k):
    return jax.lax.select_n(k % 3, x, -x, x * x), jnp.where(x > 0, 1.0, x)


def _quantiles(x):
    return jnp.median(x, axis=0), jnp.percentile(x, jnp.array([10.0, 90.0]), axis=1), jnp.quantile(x, 0.25)


def _activations(x):
    return (jax.nn.log_sigmoid(x), jax.nn.celu(x), jax.nn.selu(x), jax.nn.hard_tanh(x), jax.nn.relu6(x * 4),
            jax.nn.softmax(x, where=x > -0.5), jax.nn.elu(x), jax.nn.mish(x), jax.nn.squareplus(x))


def _math(x, y):
    return (jnp.arctan2(x, y), jnp.hypot(x, y), jnp.logaddexp(x, y), jnp.sinc(x), jnp.power(x, 3),
            jnp.float_power(jnp.abs(x), y), jnp.i0(x), jnp.cbrt(x), jnp.exp2(x), jnp.fmod(x, 0.3), jnp.copysign(x, y))


def _counting(x):
    return jnp.count_nonzero(x > 0, axis=0), jnp.cumsum(x > 0, axis=1), jnp.digitize(x, jnp.array([-1.0, 0.0, 1.0])), jnp.lexsort((x[:, 0], x[:, 1]))


def _dyn_slice_clamp(x, i):
    return jax.lax.dynamic_slice(x, (i[0], i[0] * 2), (4, 4)), jax.lax.dynamic_update_slice(x, jnp.ones((3, 3)), (i[0], 5))


def _smap_collectives(mesh):
    def body(v):
        g = jax.lax.all_gather(v, "x")  # stacked (not tiled)
        m = jax.lax.pmean(v, "x")
        mn = jax.lax.pmin(v, "y")
        perm = jax.lax.ppermute(v, "x", [(0, 1)])  # only device 1 receives
        return g.sum(0) + m + mn + perm
    return _smap(mesh, body, P("x", "y"), P("x", "y"))


def _smap_two_axes(mesh):
    def body(v):
        return jax.lax.psum(v.sum(), ("x", "y")) + v
    return _smap(mesh, body, P(("x", "y")), P(("x", "y")))


def _vmap_axis_name(x):
    return jax.vmap(lambda r: r - jax.lax.pmean(r, "b"), axis_name="b")(x)


def _hessian(x):
    f = lambda v: jnp.sum(jnp.sin(v) * v ** 2)
    return jax.hessian(f)(x[0]), jax.jacfwd(lambda v: jnp.tanh(v) * 2)(x[1])

def _vit_embed(img, w, cls, pos):
    # Patch embedding as a strided conv, class token, position embedding, then a layer norm.
    p = jax.lax.conv_general_dilated(img, w, (4, 4), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    n, h, ww, d = p.shape
    tokens = p.reshape(n, h * ww, d)
    tokens = jnp.concatenate([jnp.broadcast_to(cls, (n, 1, d)), tokens], axis=1) + pos
    m = tokens.mean(-1, keepdims=True)
    return (tokens - m) * jax.lax.rsqrt(((tokens - m) ** 2).mean(-1, keepdims=True) + 1e-6)


def _clip_loss(a, b):
    a = a / jnp.linalg.norm(a, axis=-1, keepdims=True)
    b = b / jnp.linalg.norm(b, axis=-1, keepdims=True)
    logits = a @ b.T * 10.0
    labels = jnp.arange(a.shape[0])
    la = -jnp.take_along_axis(jax.nn.log_softmax(logits, axis=1), labels[:, None], axis=1).mean()
    lb = -jnp.take_along_axis(jax.nn.log_softmax(logits, axis=0), labels[None, :], axis=0).mean()
    return (la + lb) / 2


def _group_norm_time(x, t):
    # Diffusion: sinusoidal timestep embedding added to NHWC features, then GroupNorm(4 groups).
    half = 4
    freqs = jnp.exp(-jnp.log(10000.0) * jnp.arange(half) / half)
    emb = jnp.concatenate([jnp.sin(t[:, None] * freqs), jnp.cos(t[:, None] * freqs)], axis=-1)
    x = x + emb[:, None, None, :]
    n, h, w, c = x.shape
    g = x.reshape(n, h, w, 4, c // 4)
    m = g.mean(axis=(1, 2, 4), keepdims=True)
    v = g.var(axis=(1, 2, 4), keepdims=True)
    return ((g - m) / jnp.sqrt(v + 1e-5)).reshape(n, h, w, c)


def _label_smooth_ce(logits, labels):
    valid = labels >= 0
    onehot = jax.nn.one_hot(jnp.where(valid, labels, 0), logits.shape[-1])
    target = onehot * 0.9 + 0.1 / logits.shape[-1]
    loss = -(target * jax.nn.log_softmax(logits)).sum(-1)
    return jnp.sum(jnp.where(valid, loss, 0.0)) / jnp.maximum(valid.sum(), 1)


def _clip_adamw(w1, w2, g1, g2, m1, m2, step):
    grads = (g1, g2)
    norm = jnp.sqrt(sum(jnp.sum(g * g) for g in grads))
    scale = jnp.minimum(1.0, 1.0 / (norm + 1e-6))
    lr = 1e-3 * 0.5 * (1 + jnp.cos(jnp.pi * jnp.minimum(step[0], 100).astype(jnp.float32) / 100))
    out = []
    for w, g, m in ((w1, g1, m1), (w2, g2, m2)):
        g = g * scale
        m = 0.9 * m + 0.1 * g
        out.append((w - lr * (m + 0.01 * w), m))
    return out


def _beam_step(scores, logp, tokens):
    # scores [batch, beam], logp [batch, beam, vocab]: best beam*vocab continuations.
    b, k, v = logp.shape
    total = (scores[:, :, None] + logp).reshape(b, k * v)
    top, idx = jax.lax.top_k(total, k)
    beam = idx // v
    word = idx % v
    prev = jnp.take_along_axis(tokens, beam[:, :, None], axis=1)
    return top, jnp.concatenate([prev, word[:, :, None]], axis=-1)


def _ctc_like(logp, labels):
    # A forward (alpha) recursion over time in log space, as CTC losses compute it.
    t_len, b, s = logp.shape[0], logp.shape[1], labels.shape[1]
    emit = jnp.take_along_axis(logp, jnp.broadcast_to(labels[None], (t_len, b, s)), axis=2)
    def step(alpha, e):
        shifted = jnp.concatenate([jnp.full((b, 1), -1e9), alpha[:, :-1]], axis=1)
        return jnp.logaddexp(alpha, shifted) + e, None
    alpha, _ = jax.lax.scan(step, emit[0], emit[1:])
    return -jax.nn.logsumexp(alpha[:, -2:], axis=1)


def _wavenet(x, w1, w2):
    # Causal dilated 1-D convolutions (rhs dilation 1 then 2), gated activation.
    def conv(x, w, d):
        pad = (w.shape[0] - 1) * d
        return jax.lax.conv_general_dilated(x, w, (1,), [(pad, 0)], rhs_dilation=(d,), dimension_numbers=("NWC", "WIO", "NWC"))
    h = conv(x, w1, 1)
    h = jnp.tanh(h) * jax.nn.sigmoid(h)
    return conv(h, w2, 2) + x


def _conv3d(x, w):
    return jax.nn.relu(jax.lax.conv_general_dilated(x, w, (1, 2, 2), "SAME", dimension_numbers=("NDHWC", "DHWIO", "NDHWC")))


def _avg_pool_same(x):
    s = jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")
    c = jax.lax.reduce_window(jnp.ones_like(x), 0.0, jax.lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")
    return s / c


def _ema_bn_train(x, scale, bias, rm, rv):
    m = x.mean(axis=(0, 1, 2))
    v = x.var(axis=(0, 1, 2))
    y = (x - m) / jnp.sqrt(v + 1e-5) * scale + bias
    return y, 0.9 * rm + 0.1 * m, 0.9 * rv + 0.1 * v


def _unet_up(x, skip, w):
    up = jax.lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jnp.concatenate([up, skip], axis=-1)


def recent_programs():
    m8, an_x = (8,), ("x",)
    m24, an_xy = (2, 4), ("x", "y")
    m42 = (4, 2)
    m4 = (4,)
    return [
        Program("sdpa_causal", "jax.nn.dot_product_attention, causal, batch over x, heads over y",
                _plain(_sdpa), m24, an_xy, [P("x", None, "y"), P("x", None, "y"), P("x", None, "y")], None,
                lambda: [_rand((4, 16, 4, 8), 400), _rand((4, 16, 4, 8), 401), _rand((4, 16, 4, 8), 402)]),
        Program("ragged_dot", "lax.ragged_dot: rows in 4 groups of uneven sizes times per-group weights, rows over x",
                _plain(_ragged), m4, an_x, [P("x", None), P(), P()], None,
                lambda: [_rand((64, 16), 403), _rand((4, 16, 8), 404, scale=0.3),
                         np.array([10, 22, 0, 32], np.int32)]),
        Program("cholesky_solve", "batched cholesky and two triangular solves, batch over x",
                _plain(_cholesky_solve), m4, an_x, [P("x"), P("x")], None,
                lambda: [_rand((8, 6, 6), 405), _rand((8, 6, 3), 406)]),
        Program("qr_eigh", "batched QR (|R|, QR) and eigvalsh of an SPD matrix, batch over x",
                _plain(_qr_eigh), m8, an_x, [P("x")], None, lambda: [_rand((8, 5, 5), 407)]),
        Program("svd_solve", "batched singular values, linalg.solve and slogdet, batch over x",
                _plain(_svd_solve), m4, an_x, [P("x"), P("x")], None,
                lambda: [_rand((8, 6, 6), 408), _rand((8, 6, 2), 409)]),
        Program("f8_matmul", "per-tensor scaled float8_e4m3fn matmul, f32 accumulation, 2 x 4",
                _plain(_f8_matmul), m24, an_xy, [P("x", "y"), P("y", None)], None,
                lambda: [_rand((32, 64), 410), _rand((64, 16), 413, scale=0.5)]),
        Program("int4_matmul", "int4 weights widened to int8, int32-accumulating matmul, 4 x 2",
                _plain(_int4_matmul), m42, an_xy, [P("x", "y"), P("y", None)], None, _int4_args),
        Program("rbg_random", "jax.random with the 'rbg' generator (rng-bit-generator): uniform and randint",
                _plain(_rbg_noise), m8, an_x, [P(), P("x")], None,
                lambda: [np.array([7], np.int32), _rand((16, 8), 414)]),
        Program("image_resize", "jax.image.resize bilinear 2x up and antialiased 2x down, batch over x",
                _plain(_resize), m4, an_x, [P("x")], None, lambda: [_rand((4, 8, 8, 3), 415)]),
        Program("bincount_hist", "jnp.bincount with weights and jnp.histogram, ids sharded",
                _plain(_bincount), m8, an_x, [P("x"), P("x")], None,
                lambda: [_ids((64,), 32, 416), _rand((64,), 417)]),
        Program("rfft_irfft", "rfft / irfft along the unsharded dim, rows over x",
                _plain(_rfft), m8, an_x, [P("x")], None, lambda: [_rand((16, 32), 418)], quick=True),
        Program("lax_map_batched", "lax.map with batch_size=4 of a row-wise matvec, rows over x",
                _plain(_lax_map), m4, an_x, [P("x"), P()], None,
                lambda: [_rand((16, 8), 419), _rand((8, 8), 420)]),
        Program("remat_policy_grad", "grad through nested checkpoints with dots_with_no_batch_dims_saveable, 2 x 4",
                _plain(_remat_policy_grad), m24, an_xy, [P(None, "y"), P("y", None), P("x", None)], None,
                lambda: [_rand((16, 32), 421, scale=0.25), _rand((32, 16), 422, scale=0.2), _rand((8, 16), 423)]),
        Program("einsum3", "three-operand einsums, batch over x, the inner dim over y",
                _plain(_einsum3), m24, an_xy, [P("x", "y"), P("y", None), P("x", None)], None,
                lambda: [_rand((8, 8), 424), _rand((8, 8), 425), _rand((8, 8), 426)]),
        Program("nan_reductions", "nanmean / nanmax / nanstd / nansum with NaNs, 2 x 4",
                _plain(_nan_reductions), m24, an_xy, [P("x", "y")], None, lambda: [_rand((16, 16), 427)]),

        Program("random_gamma_choice", "gamma / truncated_normal / choice without replacement", _plain(_gamma), m8, an_x,
                [P(), P("x")], None, lambda: [np.array([0, 42], np.uint32), _rand((16, 4), 500)]),
        Program("unique_nonzero", "jnp.unique(size) and nonzero(size)", _plain(_unique_nonzero), m8, an_x, [P("x")], None,
                lambda: [_rand((32,), 501)], quick=True),
        Program("conv1d_polyval", "vmap(jnp.convolve) and polyval", _plain(_conv1d), m8, an_x, [P("x"), P()], None,
                lambda: [_rand((16, 32), 502), _rand((5,), 503)]),
        Program("cum_more", "cumlogsumexp, cummin, argmin", _plain(_cum), m24, an_xy, [P("x", "y")], None,
                lambda: [_rand((8, 16), 504)]),
        Program("complex_matmul", "complex64 matmul, conj, angle", _plain(_cplx), m24, an_xy, [P("x", "y"), P("x", "y")], None,
                lambda: [_rand((8, 8), 505), _rand((8, 8), 506)]),
        Program("reduce_precision", "reduce_precision and bf16 round trip", _plain(_reduce_prec), m8, an_x, [P("x")], None,
                lambda: [_rand((16, 8), 507)]),
        Program("sdpa_bias_mask", "dot_product_attention with bias and mask", _plain(_sdpa_bias), m24, an_xy,
                [P("x", None, "y"), P("x", None, "y"), P("x", None, "y"), P("x", "y")], None,
                lambda: [_rand((2, 16, 4, 8), 508), _rand((2, 16, 4, 8), 509), _rand((2, 16, 4, 8), 510), _rand((2, 4, 16, 16), 511)]),
        Program("glu_standardize", "nn.glu and nn.standardize", _plain(_glu), m24, an_xy, [P("x", None), P(None, "y")], None,
                lambda: [_rand((8, 16), 512), _rand((16, 32), 513)]),
        Program("depthwise_conv_grad", "grad wrt a depthwise kernel (batch_group_count)", _plain(_conv_grad_depthwise), m4, an_x,
                [P("x"), P()], None, lambda: [_rand((4, 8, 8, 6), 514), _rand((3, 3, 1, 6), 515)]),
        Program("scan_unroll_reverse", "lax.scan reverse=True unroll=2 of an RNN cell, batch over x",
                _plain(_scan_unroll_reverse), m8, an_x, [P(None, "x"), P()], None,
                lambda: [_rand((6, 16, 8), 520), _rand((8, 8), 521, scale=0.3)]),
        Program("switch_branches", "lax.switch over 3 branches on a data index", _plain(_switch), m8, an_x,
                [P("x"), P()], None, lambda: [_rand((16, 4), 522), np.array([1], np.int32)]),
        Program("norms", "linalg.norm: fro, inf, 1, nuc, 2", _plain(_norms), m24, an_xy, [P("x", "y")], None,
                lambda: [_rand((8, 8), 523)]),
        Program("array_manip", "rot90, roll of two axes, repeat, tile, diagonal, trace, kron", _plain(_array_manip),
                m24, an_xy, [P("x", "y")], None, lambda: [_rand((8, 8), 524)]),
        Program("einsum_diag", "einsum ii->i, ellipsis batch matmul, tensordot over two axes", _plain(_einsum_diag),
                m24, an_xy, [P("x", "y"), P("x", None, "y")], None, lambda: [_rand((8, 8), 525), _rand((4, 8, 8), 526)]),
        Program("select_n", "lax.select_n of 3 cases, where with a scalar", _plain(_select_n), m8, an_x,
                [P("x"), P("x")], None, lambda: [_rand((16, 4), 527), _ids((16, 4), 7, 528)]),
        Program("quantiles", "median, percentile, quantile", _plain(_quantiles), m24, an_xy, [P("x", "y")], None,
                lambda: [_rand((8, 16), 529)]),
        Program("activations", "log_sigmoid, celu, selu, hard_tanh, relu6, softmax(where), elu, mish, squareplus",
                _plain(_activations), m24, an_xy, [P("x", "y")], None, lambda: [_rand((8, 16), 530)]),
        Program("math_fns", "arctan2, hypot, logaddexp, sinc, power, float_power, i0, cbrt, exp2, fmod, copysign",
                _plain(_math), m8, an_x, [P("x"), P("x")], None, lambda: [_rand((16, 4), 531), _rand((16, 4), 532)]),
        Program("counting", "count_nonzero, cumsum of bools, digitize, lexsort", _plain(_counting), m8, an_x,
                [P("x")], None, lambda: [_rand((16, 4), 533)]),
        Program("dyn_slice_clamp", "dynamic_slice / update_slice with clamped out-of-range starts", _plain(_dyn_slice_clamp),
                m24, an_xy, [P("x", "y"), P()], None, lambda: [_rand((8, 8), 534), np.array([6], np.int32)]),
        Program("smap_stack_pmean_pmin_perm", "shard_map all_gather (stacked), pmean, pmin, partial ppermute",
                _smap_collectives, m24, an_xy, [P("x", "y")], P("x", "y"), lambda: [_rand((8, 8), 535)]),
        Program("smap_two_axes", "shard_map over P(('x','y')) with a psum over both axes", _smap_two_axes, m24, an_xy,
                [P(("x", "y"))], P(("x", "y")), lambda: [_rand((16, 4), 536)]),
        Program("vmap_axis_name", "vmap with an axis name and pmean inside", _plain(_vmap_axis_name), m8, an_x,
                [P("x")], None, lambda: [_rand((16, 4), 537)]),
        Program("hessian_jacfwd", "jax.hessian and jacfwd (forward mode)", _plain(_hessian), m4, an_x, [P()], None,
                lambda: [_rand((2, 8), 538)]),
        Program("vit_embed", "ViT patch embedding (strided conv), class token, position embedding, layer norm, batch over x",
                _plain(_vit_embed), m8, an_x, [P("x"), P(), P(), P()], None,
                lambda: [_rand((8, 16, 16, 3), 540), _rand((4, 4, 3, 16), 541, scale=0.2), _rand((1, 1, 16), 542),
                         _rand((1, 17, 16), 543)]),
        Program("clip_loss", "CLIP contrastive loss, batch over x (logits need every pair)", _plain(_clip_loss), m8, an_x,
                [P("x"), P("x")], None, lambda: [_rand((32, 16), 544), _rand((32, 16), 545)], quick=True),
        Program("group_norm_time", "timestep embedding + GroupNorm(4) of NHWC features, batch over x, channels over y",
                _plain(_group_norm_time), m24, an_xy, [P("x", None, None, "y"), P("x")], None,
                lambda: [_rand((4, 8, 8, 8), 546), np.arange(4, dtype=np.float32) * 10]),
        Program("label_smooth_ce", "label-smoothed cross entropy with ignored labels, batch over x, vocab over y",
                _plain(_label_smooth_ce), m24, an_xy, [P("x", "y"), P("x")], None,
                lambda: [_rand((16, 32), 547), np.where(np.arange(16) % 5 == 0, -1, _ids((16,), 32, 548)).astype(np.int32)]),
        Program("clip_adamw", "global-norm gradient clipping, cosine lr, AdamW-style update, FSDP over x",
                _plain(_clip_adamw), m24, an_xy, [P("x", "y"), P("y", "x"), P("x", "y"), P("y", "x"), P("x", "y"), P("y", "x"), P()],
                None, lambda: [_rand((16, 8), 549), _rand((8, 16), 550), _rand((16, 8), 551), _rand((8, 16), 552),
                               _rand((16, 8), 553), _rand((8, 16), 554), np.array([30], np.int32)]),
        Program("beam_step", "beam search step: top_k over beam x vocab, gather of the beams' tokens, batch over x",
                _plain(_beam_step), m8, an_x, [P("x"), P("x"), P("x")], None,
                lambda: [_rand((8, 4), 555), _rand((8, 4, 16), 556), _ids((8, 4, 3), 16, 557)]),
        Program("ctc_alpha", "CTC-style log-space alpha recursion (scan, take_along_axis), batch over x",
                _plain(_ctc_like), m8, an_x, [P(None, "x"), P("x")], None,
                lambda: [_rand((12, 8, 10), 558), _ids((8, 5), 10, 559)]),
        Program("wavenet", "causal dilated 1-D convolutions with a gated activation, batch over x",
                _plain(_wavenet), m4, an_x, [P("x"), P(), P()], None,
                lambda: [_rand((4, 32, 8), 560), _rand((2, 8, 8), 561, scale=0.3), _rand((2, 8, 8), 562, scale=0.3)]),
        Program("conv3d", "3-D convolution NDHWC, spatial stride 2, batch over x", _plain(_conv3d), m4, an_x, [P("x"), P()],
                None, lambda: [_rand((4, 4, 8, 8, 3), 563), _rand((3, 3, 3, 3, 8), 564, scale=0.2)]),
        Program("avg_pool_same", "SAME average pool dividing by the window's valid count, H over x",
                _plain(_avg_pool_same), m4, an_x, [P(None, "x")], None, lambda: [_rand((2, 16, 8, 4), 565)]),
        Program("bn_train_ema", "batch norm in training mode with running-statistics update, batch over x, channels over y",
                _plain(_ema_bn_train), m24, an_xy, [P("x", None, None, "y"), P("y"), P("y"), P("y"), P("y")], None,
                lambda: [_rand((4, 6, 6, 8), 566), _rand((8,), 567), _rand((8,), 568), _rand((8,), 569), np.ones(8, np.float32)]),
        Program("unet_up", "U-Net up block: transposed conv and skip concatenation, batch over x",
                _plain(_unet_up), m4, an_x, [P("x"), P("x"), P()], None,
                lambda: [_rand((4, 4, 4, 8), 570), _rand((4, 8, 8, 4), 571), _rand((2, 2, 8, 4), 572, scale=0.3)]),
    ]
