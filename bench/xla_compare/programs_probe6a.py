"""Probe programs for bench/xla_compare (names p6a_, `--only p6a_` runs them): 64-bit programs
(jax_enable_x64: f64 matmul / reductions / cumsum / sort, int64 / uint64 arithmetic, segment_sum
with int64 ids, f64 cholesky / solve with rows sharded), forward-mode AD (jvp, linearize applied
twice, jacfwd / jacrev of a sharded MLP, Hessian-vector products, custom_jvp in a training step)
and ops on sharded dims (atan2 / hypot over meshgrid grids, diff n=1 / n=2, cross, uneven
array_split, float8_e5m2 / e4m3fn scaled matmuls, hand-written transposed convolutions by
lhs_dilation, vander / polyval / kron, uint32 bit ops, ellipsis einsums, trace with an offset,
tensordot over sharded contracting axes, variadic lax.reduce argmax, two-key sorts, bf16 top_k,
nancumsum, rem / floor_divide of negatives, clamp with array bounds, dot_product_attention with a
mask and causal on 2 x 4).

The 64-bit programs are _X64Program: the harness lowers and calls outside any x64 context, so
their jitted() hands back a wrapper that re-places the inputs, lowers, compiles and calls inside
`with jax.enable_x64(True)`, leaving the global config alone.
"""
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

from programs import Program, _axis_size, _ids, _plain, _rand, _smap, _wsc

M8, AX = (8,), ("x",)
M24, M42, XY = (2, 4), (4, 2), ("x", "y")
M222, XYZ = (2, 2, 2), ("x", "y", "z")
M44, M28, M16 = (4, 4), (2, 8), (16,)


# ==== 64-bit programs ============================================================================
class _X64Compiled:
    def __init__(self, compiled, placed):
        self._c, self._placed = compiled, placed

    def __call__(self, *_ignored):
        with jax.enable_x64(True):
            return self._c(*self._placed)

    def __getattr__(self, name):
        return getattr(self._c, name)


class _X64Lowered:
    def __init__(self, lowered, placed):
        self._l, self._placed = lowered, placed

    def compile(self):
        with jax.enable_x64(True):
            return _X64Compiled(self._l.compile(), self._placed)

    def __getattr__(self, name):
        return getattr(self._l, name)


class _X64Jit:
    def __init__(self, prog):
        self._p = prog

    def lower(self, *_ignored):
        # The harness placed the inputs outside x64 (64-bit ones narrowed): place them again.
        with jax.enable_x64(True):
            fn, in_sh = Program.jitted(self._p)
            placed = [jax.device_put(np.asarray(a), s) for a, s in zip(self._p.make_args(), in_sh)]
            return _X64Lowered(fn.lower(*placed), placed)


class _X64Program(Program):
    def jitted(self):
        mesh = self.mesh()
        return _X64Jit(self), tuple(NamedSharding(mesh, s) for s in self.in_specs)


def _uneven(f, sizes, specs):
    """make_fn: the inputs (even, as jit's in_shardings need) cut inside to sizes (None: whole; else
    the leading dims' new sizes) and constrained to specs, so the sharded dims are uneven."""
    def make(mesh):
        def g(*args):
            cut = []
            for a, n, sp in zip(args, sizes, specs):
                if n is not None:
                    a = a[tuple(slice(0, k) for k in n)]
                cut.append(_wsc(mesh, a, sp) if sp is not None else a)
            return f(*cut)
        return g
    return make


def _r64(shape, seed, scale=1.0):
    return np.random.default_rng(seed).standard_normal(shape) * scale


def _f64_stats(x, w):
    # f64 matmul, reductions over the sharded dim, cumsum and sort along it.
    y = x @ w
    s = jnp.sum(x, axis=0)
    lse = jax.nn.logsumexp(x, axis=0)
    c = jnp.cumsum(x, axis=0)
    srt = jnp.sort(x, axis=0)
    return y, s, lse, c, srt, jnp.var(x, axis=0), y.dtype == jnp.float64


def _int64_arith(a, b, u):
    # int64 values past 2^32 (wrapping products), floor division / mod of negatives, shifts,
    # reductions over the sharded dim; uint64 arithmetic, shifts and popcount.
    prod = a * b
    q = a // jnp.where(b == 0, 1, b)
    r = a % jnp.where(b == 0, 1, b)
    sh = (a >> 7) ^ (b << 3)
    tot = jnp.sum(a, axis=0)
    cs = jnp.cumsum(b, axis=0)
    mx = jnp.max(a * 3, axis=0)
    u2 = u * np.uint64(0x9E3779B97F4A7C15) + (u >> np.uint64(17))
    pc = jax.lax.population_count(u2)
    return prod, q, r, sh, tot, cs, mx, u2, pc, jnp.sum(u2, axis=0)


def _int64_args():
    rng = np.random.default_rng(601)
    a = rng.integers(-(2 ** 40), 2 ** 40, (20, 12)).astype(np.int64)
    b = rng.integers(-(2 ** 33), 2 ** 33, (20, 12)).astype(np.int64)
    u = rng.integers(0, 2 ** 63, (20, 12), dtype=np.uint64)
    return [a, b, u]


def _seg64(ids, data):
    # segment_sum / segment_max with int64 ids (uneven rows over x), f64 data.
    s = jax.ops.segment_sum(data, ids, num_segments=12)
    m = jax.ops.segment_max(data, ids, num_segments=12)
    cnt = jax.ops.segment_sum(jnp.ones_like(ids), ids, num_segments=12)
    return s, m, cnt, ids.dtype == jnp.int64


def _f64_linalg(a, b):
    n = a.shape[-1]
    spd = a @ a.T / n + jnp.eye(n, dtype=a.dtype)
    l = jnp.linalg.cholesky(spd)
    x = jnp.linalg.solve(spd, b)
    y = jax.scipy.linalg.cho_solve((l, True), b)
    return l, x, y, jnp.linalg.slogdet(spd)[1]


def _f64_topk_argsort(x):
    # argsort (int64 indices under x64) and top_k of f64 along the sharded dim, int64 positions.
    idx = jnp.argsort(x, axis=1)
    v, i = jax.lax.top_k(x, 5)
    pos = jnp.arange(x.shape[1], dtype=jnp.int64) * np.int64(2 ** 35)
    return idx, v, i, jnp.take_along_axis(pos[None, :] + jnp.zeros_like(idx), idx, axis=1), jnp.argmax(x, axis=1)


def _mixed_precision64(x, w):
    # f32 inputs promoted to f64 for an accumulation, f64 -> f32 -> bf16 round trips.
    y = jnp.dot(x.astype(jnp.float64), w.astype(jnp.float64))
    z = (y.astype(jnp.float32) * 1.5).astype(jnp.float64) - y
    return y, z, jnp.mean(y, axis=0), jnp.cumprod(1.0 + 0.01 * y, axis=1)


# ==== forward-mode AD ============================================================================
def _mlp(params, x):
    w1, b1, w2 = params
    return jnp.tanh(x @ w1 + b1) @ w2


def _jvp_mlp(w1, b1, w2, x, tw1, tb1, tw2, tx):
    y, ty = jax.jvp(lambda p, xx: _mlp(p, xx), ((w1, b1, w2), x), ((tw1, tb1, tw2), tx))
    return y, ty


def _linearize_twice(w, x, t1, t2):
    f = lambda xx: jnp.sum(jax.nn.gelu(xx @ w) ** 2, axis=-1)
    y, lin = jax.linearize(f, x)
    return y, lin(t1), lin(t2), lin(t1 + 2.0 * t2)


def _jac_mlp(w1, b1, w2, x):
    # jacrev wrt the input (per example, vmapped) and jacfwd wrt w2 of a summed output.
    jx = jax.vmap(jax.jacrev(lambda xx: _mlp((w1, b1, w2), xx)))(x)
    jw = jax.jacfwd(lambda ww: jnp.sum(_mlp((w1, b1, ww), x), axis=0))(w2)
    return jx, jw


def _hvp(w1, w2, x, y, v1, v2):
    def loss(ws):
        return jnp.mean((jnp.tanh(x @ ws[0]) @ ws[1] - y) ** 2)

    g, hv = jax.jvp(jax.grad(loss), ((w1, w2),), ((v1, v2),))
    return g, hv


@jax.custom_jvp
def _softplus(x):
    return jnp.log1p(jnp.exp(-jnp.abs(x))) + jnp.maximum(x, 0.0)


@_softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _softplus(x), jax.nn.sigmoid(x) * t


@jax.custom_jvp
def _clip_grad(x):
    return x


@_clip_grad.defjvp
def _clip_grad_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    # Linear in t (reverse mode transposes it): the gradient damped 10x where |x| > 0.3.
    return x, t * jnp.where(jnp.abs(x) > 0.3, 0.1, 1.0)


def _custom_jvp_step(w1, w2, x, y):
    def loss(ws):
        h = _softplus(x @ _clip_grad(ws[0]))
        return jnp.mean((h @ ws[1] - y) ** 2)

    l, g = jax.value_and_grad(loss)((w1, w2))
    return w1 - 0.1 * g[0], w2 - 0.1 * g[1], l, g[0]


# ==== ops ========================================================================================
def _polar_grid(x):
    # meshgrid positional grids (H over x, W over y, W uneven), atan2 / hypot of offsets.
    b, h, w = x.shape
    yy, xx = jnp.meshgrid(jnp.arange(h, dtype=jnp.float32), jnp.arange(w, dtype=jnp.float32), indexing="ij")
    ang = jnp.arctan2(yy - h / 2 + 0.25, xx - w / 2 + 0.25)
    rad = jnp.hypot(yy - h / 2, xx - w / 2)
    feat = x * jnp.cos(ang)[None] + jnp.log1p(rad)[None]
    return feat, jnp.arctan2(x, x[:, ::-1]), jnp.hypot(x, 1.0 + x * x)


def _diff_cross(x, v, u):
    return (jnp.diff(x, axis=0), jnp.diff(x, n=2, axis=0), jnp.diff(x, axis=1, prepend=0.0),
            jnp.cross(v, u), jnp.cross(v[:, None, :], u[None, :4, :]))


def _array_split(x):
    parts = jnp.array_split(x, 3, axis=0)  # 22 rows: 8, 7, 7
    return parts[0] * 2.0, parts[1].sum(0), parts[2][::-1], jnp.concatenate([parts[2], parts[0]], axis=0)


def _f8_mixed(x, w):
    # e5m2 activations with per-row scales, e4m3fn weights with per-column scales.
    sx = jnp.max(jnp.abs(x), axis=1, keepdims=True) / 57344.0
    sw = jnp.max(jnp.abs(w), axis=0, keepdims=True) / 448.0
    x8 = (x / sx).astype(jnp.float8_e5m2)
    w8 = (w / sw).astype(jnp.float8_e4m3fn)
    y = jnp.dot(x8, w8, preferred_element_type=jnp.float32) * sx * sw
    y2 = jnp.dot(x8, x8.T, preferred_element_type=jnp.float32)
    return y, y2, x8.astype(jnp.float32)


def _tconv1d(x, w):
    # A transposed 1-D convolution written by hand: lhs_dilation 2, full padding, NWC, W over x.
    k = w.shape[0]
    return jax.lax.conv_general_dilated(x, w, window_strides=(1,), padding=[(k - 1, k - 1)], lhs_dilation=(2,),
                                        dimension_numbers=("NWC", "WIO", "NWC"))


def _tconv2d(x, w):
    # lhs_dilation (2, 2) with asymmetric padding and a rhs dilation; batch over x, H over y.
    return jax.nn.relu(jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding=[(2, 1), (1, 2)],
                                                    lhs_dilation=(2, 2), rhs_dilation=(1, 1),
                                                    dimension_numbers=("NHWC", "HWIO", "NHWC")))


def _vander_kron(x, a, b):
    v = jnp.vander(x, 5)
    p = jnp.polyval(jnp.array([0.5, -1.0, 2.0, 0.25]), x)
    return v, p, jnp.kron(a, b), v @ jnp.arange(5.0)


def _bits(u, s):
    # uint32: popcount, logical / left shifts by per-element amounts, a rotate, packbits-like
    # packing of 32 flags along the sharded axis.
    sh = s % 32
    rot = (u << sh) | jax.lax.shift_right_logical(u, (32 - sh) % 32)
    flags = (u & 1).astype(jnp.uint32)
    packed = jnp.sum(flags[:, :32] << jnp.arange(32, dtype=jnp.uint32)[None, :], axis=1, dtype=jnp.uint32)
    return (jax.lax.population_count(u), jax.lax.shift_right_logical(u, sh), u << sh, rot, packed,
            jnp.sum(u >> 4, axis=0, dtype=jnp.uint32), jax.lax.shift_right_arithmetic(u.astype(jnp.int32), sh.astype(jnp.int32)))


def _einsum_ellipsis(a, b, c):
    s = jnp.einsum("...qd,...kd->...qk", a, b)
    o = jnp.einsum("...qk,...kd->...qd", jax.nn.softmax(s, axis=-1), b)
    outer = jnp.einsum("...i,...j->...ij", c, c)
    dg = jnp.einsum("...ii->...i", outer)
    return o, outer, dg, jnp.einsum("b...,b...->b", a, a)


def _trace_tensordot(a, b, m):
    t = jnp.tensordot(a, b, axes=([1, 2], [0, 1]))
    return t, jnp.trace(m, offset=2), jnp.trace(m, offset=-3), jnp.trace(a, offset=1, axis1=1, axis2=2)


def _variadic_argmax(x):
    # argmax by a variadic lax.reduce over (values, indices) along the sharded dim (30 over 4).
    idx = jax.lax.broadcasted_iota(jnp.int32, x.shape, 1)

    def comb(a, b):
        av, ai = a
        bv, bi = b
        take_b = (bv > av) | ((bv == av) & (bi < ai))
        return jnp.where(take_b, bv, av), jnp.where(take_b, bi, ai)

    v, i = jax.lax.reduce((x, idx), (np.float32(-np.inf), np.int32(0)), comb, (1,))
    return v, i


def _sort2(k1, k2, v):
    s = jax.lax.sort((k1, k2, v), dimension=1, num_keys=2)
    lx = jnp.lexsort((k2, k1), axis=1)
    return s[0], s[1], s[2], lx


def _topk_bf16(x):
    v, i = jax.lax.top_k(x, 6)
    return v, i, jnp.max(x, axis=-1)


def _nancum(x):
    xn = jnp.where(x > 1.2, jnp.nan, x)
    return jnp.nancumsum(xn, axis=0), jnp.nancumprod(1.0 + 0.1 * xn, axis=0), jax.lax.cumlogsumexp(x, axis=0)


def _int_div(a, b, x, lo, hi):
    bz = jnp.where(b == 0, 3, b)
    return (jax.lax.rem(a, bz), jnp.floor_divide(a, bz), jnp.remainder(a, bz), jax.lax.div(a, bz),
            jnp.fmod(x, 0.7), jax.lax.clamp(lo, x, hi), jnp.clip(a, -5, bz))


def _sdpa_mask_causal(q, k, v, mask):
    a = jax.nn.dot_product_attention(q, k, v, mask=mask, implementation="xla")
    c = jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation="xla")
    return a, c


def _sdpa_gqa_causal(q, k, v):
    # grouped-query attention (8 query heads, 2 kv heads) causal, bf16.
    return jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation="xla")


def _cross_pos(x, w):
    # 16 devices: rotary-style positions from meshgrid, cross products, uneven rows.
    n = x.shape[0]
    i, j = jnp.meshgrid(jnp.arange(n), jnp.arange(3), indexing="ij")
    ang = (i * 0.1 + j).astype(jnp.float32)
    r = x * jnp.cos(ang) + jnp.roll(x, 1, axis=1) * jnp.sin(ang)
    return jnp.cross(r, x @ w), jnp.diff(r, n=2, axis=0)


def _matpow_trace(m, x):
    p = jnp.linalg.matrix_power(m, 4)
    return p @ x, jnp.trace(p, offset=1), jnp.diff(p, axis=1)



# ==== batch 2: edges ==============================================================================
def _x64_consts(x, i):
    # Constants that need every digit: f64 1/3, 1 + 2^-52, 1e-300, pi; int64 2^53 + 1, int64 max.
    third = x * (1.0 / 3.0)
    eps = (x + 1.0000000000000002) - x
    tiny = x * 1e-300 / 1e-300
    big = i + np.int64(9007199254740993)
    mx = jnp.minimum(i * np.int64(3), np.int64(0x7FFFFFFFFFFFFFF0))
    return third, eps, tiny, x * np.pi, big, mx, jnp.sum(third, axis=0), (big.astype(jnp.float64) - 9007199254740992.0)


def _x64_consts_args():
    return [_r64((16, 8), 700), np.random.default_rng(701).integers(-(2 ** 55), 2 ** 55, (16, 8)).astype(np.int64)]


def _shift_edges(a, u, amt):
    # XLA semantics of shifts by >= the bit width: 0 for left / logical, the sign for arithmetic.
    a64 = a
    n = amt.astype(jnp.int64)
    return (a64 << n, jax.lax.shift_right_arithmetic(a64, n), jax.lax.shift_right_logical(a64, n),
            u << n.astype(jnp.uint64), u >> n.astype(jnp.uint64), jax.lax.clz(a64), jax.lax.population_count(a64))


def _shift_args():
    rng = np.random.default_rng(702)
    return [rng.integers(-(2 ** 62), 2 ** 62, (8, 24)).astype(np.int64),
            rng.integers(0, 2 ** 64 - 1, (8, 24), dtype=np.uint64),
            np.tile(np.arange(0, 72, 3, dtype=np.int32), (8, 1))]


def _shift_edges32(u, a, amt):
    return (u << amt.astype(jnp.uint32), jax.lax.shift_right_logical(u, amt.astype(jnp.uint32)),
            jax.lax.shift_right_arithmetic(a, amt), a << amt, jax.lax.shift_right_logical(a, amt))


def _u64_order(u, f):
    # uint64 values >= 2^63: max / min / argmax / sort over the sharded dim, division, conversions;
    # f64 -> int64 saturation of NaN / inf / huge values.
    return (jnp.max(u, axis=1), jnp.min(u, axis=1), jnp.argmax(u, axis=1), jnp.sort(u, axis=1),
            u // np.uint64(1000003), u % np.uint64(1000003), u > np.uint64(2 ** 63),
            u.astype(jnp.float64), u.astype(jnp.float32), (u >> np.uint64(1)).astype(jnp.int64).astype(jnp.float32),
            f.astype(jnp.int64), f.astype(jnp.uint64), f.astype(jnp.int32))


def _u64_args():
    rng = np.random.default_rng(703)
    u = rng.integers(0, 2 ** 64 - 1, (8, 16), dtype=np.uint64)
    f = rng.standard_normal((8, 16)) * 1e19
    f[0, :4] = [np.nan, np.inf, -np.inf, 2.5]
    f[1, :3] = [-1.5, 1e300, -0.0]
    return [u, f]


def _rand64(mesh):
    def f(seed, x):
        key = jax.random.key(seed[0])
        k1, k2, k3 = jax.random.split(key, 3)
        n = _wsc(mesh, jax.random.normal(k1, (32, 16), jnp.float64), P("x", "y"))
        b = _wsc(mesh, jax.random.bits(k2, (32, 16), jnp.uint64), P("y", "x"))
        r = jax.random.randint(k3, (32, 16), -(2 ** 40), 2 ** 40, jnp.int64)
        return n * x, b, r, jax.random.uniform(k1, (32,), jnp.float64)
    return f


def _c128(a, b):
    c = (a + 1j * b).astype(jnp.complex128)
    m = c @ jnp.conj(c.T)
    return m, jnp.fft.fft(c, axis=1), jnp.abs(c).sum(0), jnp.angle(m), jnp.linalg.det(m[:4, :4] + 8 * jnp.eye(4))


def _bitcast64(x, i):
    b = jax.lax.bitcast_convert_type(x, jnp.int64)
    h = jax.lax.bitcast_convert_type(x, jnp.uint32)  # [.., 2]
    f = jax.lax.bitcast_convert_type(i, jnp.float64)
    bytes_ = jax.lax.bitcast_convert_type(x.astype(jnp.float32), jnp.uint8)  # [.., 4]
    back = jax.lax.bitcast_convert_type(h, jnp.float64)
    return b, h, jnp.where(jnp.isfinite(f), f, 0.0), bytes_, back, jnp.sum(h.astype(jnp.uint64), axis=0)


def _f64_spectral(a):
    n = a.shape[0]
    sym = (a + a.T) / 2
    w = jnp.linalg.eigvalsh(sym)
    sv = jnp.linalg.svd(a, compute_uv=False)
    e = jax.scipy.linalg.expm(a / n)
    lu, piv = jax.scipy.linalg.lu_factor(a + n * jnp.eye(n))
    return w, sv, e, jnp.abs(lu), piv


def _gather64(table, idx, upd, start):
    t = jnp.take(table, idx, axis=0)
    s = jnp.zeros((20, 6), jnp.float64).at[idx].add(upd)
    d = jax.lax.dynamic_slice(table, (start[0], np.int64(1)), (8, 4))
    oh = jax.nn.one_hot(idx, 20, dtype=jnp.float64)
    return t, s, d, oh.sum(0), jnp.argsort(idx)


def _fp8_variants(x, w):
    outs = []
    for dt in (jnp.float8_e3m4, jnp.float8_e4m3, jnp.float8_e4m3fnuz, jnp.float8_e5m2fnuz, jnp.float8_e4m3b11fnuz,
               jnp.float4_e2m1fn):
        outs.append(jnp.sum(x.astype(dt).astype(jnp.float32), axis=0))
        outs.append((x * 0.5).astype(dt).astype(jnp.float32))
    w8 = w.astype(jnp.float8_e4m3fnuz)
    outs.append(jnp.dot(x.astype(jnp.float8_e4m3fnuz), w8, preferred_element_type=jnp.float32))
    return tuple(outs)


def _int4_reshard(mesh):
    def f(x):
        q = jnp.clip(jnp.round(x * 3.0), -8, 7).astype(jnp.int4)
        q2 = _wsc(mesh, q, P("y", "x"))                      # reshard the int4 array
        u = (q.astype(jnp.int8) + 8).astype(jnp.uint4)
        u2 = _wsc(mesh, u.T, P("x", None))
        g = _wsc(mesh, q2, P())                              # gather it
        return q2.astype(jnp.int32), u2.astype(jnp.int32), jnp.sum(g.astype(jnp.int32), axis=0)
    return f


def _jvp_scan_sort(h0, xs, w, th0, txs, tw, v, tv):
    def rnn(h0, xs, w):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, h.sum(-1)
        return jax.lax.scan(step, h0, xs)

    (h, ys), (th, tys) = jax.jvp(rnn, (h0, xs, w), (th0, txs, tw))
    (sv, tk), (tsv, ttk) = jax.jvp(lambda a: (jnp.sort(a, axis=1), jax.lax.top_k(a, 3)[0]), (v,), (tv,))
    cs, tcs = jax.jvp(lambda a: jnp.cumsum(a * a, axis=1), (v,), (tv,))
    return h, ys, th, tys, sv, tsv, ttk, tcs


def _jacfwd_softmax(x, xb):
    j = jax.jacfwd(jax.nn.softmax)(x)
    jb = jax.vmap(jax.jacfwd(lambda r: jax.nn.log_softmax(r) * r))(xb)
    return j, jb


def _linearize_transpose(w, x, t, ct):
    def f(xx):
        def step(c, r):
            c = jnp.sin(c @ w) + r
            return c, c
        return jax.lax.scan(step, xx[0], xx[1:])[1]

    y, lin = jax.linearize(f, x)
    lt = jax.linear_transpose(lin, x)
    return y, lin(t), lt(ct)[0]


def _tconv_groups(mesh):
    def f(x, w):
        x = _wsc(mesh, x[:, :29], P(None, "x", None))      # 29 positions over 8 (uneven)
        return jax.lax.conv_general_dilated(x, w, window_strides=(2,), padding=[(3, 2)], lhs_dilation=(3,),
                                            rhs_dilation=(2,), feature_group_count=2,
                                            dimension_numbers=("NWC", "WIO", "NWC"))
    return f


def _custom_jvp_scan(w, xs, ys):
    def loss(w):
        def step(c, xy):
            x, y = xy
            h = _softplus(x @ _clip_grad(w) + c)
            return h.mean(0, keepdims=True) * 0.1, jnp.mean((h - y) ** 2)
        _, ls = jax.lax.scan(step, jnp.zeros((1, w.shape[1])), (xs, ys))
        return ls.sum()

    l, g = jax.value_and_grad(loss)(w)
    return l, g, w - 0.1 * g


# ==== batch 3: conversions, 64-bit collectives and control flow ===================================
def _round_edges(x, i, u, i32, f):
    # Rounding at halfway-plus-a-little: f64 -> bf16 / f16 / f32, int64 / uint64 -> f32 / bf16,
    # int32 -> bf16, f32 -> float8 / float4 (all as XLA:CPU converts them; float8 outputs widened to
    # f32, which the harness reads).
    return (x.astype(jnp.bfloat16), x.astype(jnp.float16), x.astype(jnp.float32), i.astype(jnp.float32),
            i.astype(jnp.bfloat16), u.astype(jnp.float32), i32.astype(jnp.bfloat16), f.astype(jnp.float8_e4m3fn).astype(jnp.float32),
            f.astype(jnp.float8_e5m2).astype(jnp.float32), f.astype(jnp.float4_e2m1fn).astype(jnp.float32), f.astype(jnp.bfloat16))


def _round_edges_args():
    x = np.array([1 + 2 ** -8 + 2 ** -30, 1 + 2 ** -11 + 2 ** -30, 1 + 2 ** -24 + 2 ** -50, -(1 + 2 ** -8 + 2 ** -40),
                  3.0e38 * 1.5, 6.5e4 + 16.0, 1e-45, 2 ** -130 * 1.5], np.float64)
    x = np.tile(x, (4, 2))
    i = np.tile(np.array([2 ** 60 + 2 ** 36 + 1, -(2 ** 60 + 2 ** 36 + 1), 2 ** 40 + 2 ** 32 + 1, 2 ** 62 - 1,
                          -(2 ** 63), 2 ** 24 + 1, 2 ** 53 + 1, 12345678901234567], np.int64), (4, 2))
    u = np.tile(np.array([2 ** 63 + 2 ** 39 + 1, 2 ** 64 - 1, 2 ** 63, 2 ** 40 + 2 ** 16 + 1, 1, 0, 2 ** 50 + 3,
                          2 ** 64 - 2 ** 40 - 1], np.uint64), (4, 2))
    i32 = np.tile(np.array([(1 << 24) + (1 << 16) + 1, -((1 << 24) + (1 << 16) + 1), (1 << 30) + (1 << 22) + 1,
                            2 ** 31 - 1, -(2 ** 31), 257, 16777217, 33554435], np.int32), (4, 2))
    f = np.tile(np.array([1 + 2 ** -4 + 2 ** -12, 1 + 2 ** -3 + 2 ** -12, 1.25 + 2 ** -20, 2.5 + 2 ** -12, 400.0,
                          -7.0, 1e-3, 3.0 + 2 ** -9], np.float32), (4, 2))  # (not 500: NaN in e4m3fn, and the harness's allclose fails on NaN)
    return [x, i, u, i32, f]


def _smap64(mesh):
    def body(i, u, f, c):
        return (jax.lax.psum(i, "x"), jax.lax.pmax(u, "x"), jax.lax.pmin(u, ("x", "y")), jax.lax.psum(u, "y"),
                jax.lax.pmax(f, "y"), jax.lax.all_to_all(f, "x", 0, 0, tiled=True),
                jax.lax.ppermute(c, "y", [(k, (k + 1) % 4) for k in range(4)]),
                jax.lax.psum_scatter(i, "y", scatter_dimension=1, tiled=True), jax.lax.all_gather(i, "x", tiled=True),
                jax.lax.pmin(i, "y"))
    s2 = P("x", "y")
    return _smap(mesh, body, in_specs=(s2, s2, s2, s2),
                 out_specs=(s2, s2, s2, s2, s2, s2, s2, s2, P(None, "y"), s2), check_vma=False)


def _smap64_args():
    rng = np.random.default_rng(740)
    i = rng.integers(-(2 ** 61), 2 ** 61, (4, 16)).astype(np.int64)
    u = rng.integers(0, 2 ** 64 - 1, (4, 16), dtype=np.uint64)
    f = rng.standard_normal((4, 16))
    f[2, 5] = -0.0  # (no NaN: XLA:CPU's all-reduce max drops NaN, the harness's allclose fails on it)
    c = (rng.standard_normal((4, 16)) + 1j * rng.standard_normal((4, 16))).astype(np.complex128)
    return [i, u, f, c]


def _int64_div_edges(a, b, u, v):
    # int64: MIN // -1, MIN % -1, x // 0, x % 0 (XLA: -1 and x); uint64: x // 0 (all ones), x % 0.
    return (jax.lax.div(a, b), jax.lax.rem(a, b), a // jnp.where(b == 0, 1, b), jax.lax.div(u, v), jax.lax.rem(u, v),
            jnp.sum(jax.lax.div(a, b), axis=0))


def _int64_div_args():
    mn = -(2 ** 63)
    a = np.tile(np.array([mn, mn, 7, -7, 2 ** 62, mn + 1, -1, 0], np.int64), (4, 1))
    b = np.tile(np.array([-1, 0, 0, 2, -3, -1, 0, 0], np.int64), (4, 1))
    u = np.tile(np.array([2 ** 64 - 1, 5, 2 ** 63, 0, 17, 2 ** 63 + 5, 1, 9], np.uint64), (4, 1))
    v = np.tile(np.array([0, 0, 3, 0, 2 ** 63, 2 ** 62, 1, 10], np.uint64), (4, 1))
    return [a, b, u, v]


def _loops64(x, w, n):
    # fori_loop with an int64 induction variable and f64 carry (rows over x); while_loop on an int64
    # counter bound by a sharded reduction.
    def body(k, c):
        return jnp.tanh(c @ w) + k.astype(jnp.float64) * 1e-3

    y = jax.lax.fori_loop(np.int64(0), n[0], body, x)

    def cond(st):
        k, acc = st
        return (k < np.int64(2 ** 40 + 5)) & (jnp.sum(acc) < 1e6)

    def wbody(st):
        k, acc = st
        return k + 1, acc * 1.5 + 1.0

    k, acc = jax.lax.while_loop(cond, wbody, (np.int64(2 ** 40), x))
    return y, k, acc


def _nan_order64(x):
    # f64 with NaN / -0.0 / inf: sort, argsort, argmax / argmin (first NaN wins), max, over the sharded dim.
    # (NaN outputs replaced by 99: the harness's allclose fails on NaN; no max over NaN: XLA:CPU's
    # all-reduce max drops NaN, so JAX's sharded run is wrong there.)
    srt = jnp.sort(x, axis=1)
    return (jnp.where(jnp.isnan(srt), 99.0, srt), jnp.argsort(x, axis=1, stable=True), jnp.argmax(x, axis=1),
            jnp.argmin(x, axis=1), jnp.nanmax(x, axis=1), jnp.signbit(srt), jnp.isnan(srt))


def _nan_order_args():
    rng = np.random.default_rng(741)
    x = np.round(rng.standard_normal((6, 24)), 1)
    x[0, [3, 17]] = np.nan
    x[1, [2, 5, 20]] = [-0.0, 0.0, -0.0]
    x[2, [0, 23]] = [np.inf, -np.inf]
    x[3, 22] = np.nan
    x[4] = 0.0
    x[4, [7, 9]] = -0.0
    return [x]


def _oob64(table, idx, upd):
    # int64 indices out of range: gather clamps (jnp.take mode clip), scatter drops, negative indices
    # wrap in jnp; dynamic_update_slice at a clamped int64 start.
    g = jnp.take(table, idx, axis=0, mode="clip")
    g2 = jnp.take(table, idx, axis=0, mode="fill", fill_value=-1.0)
    s = table.at[idx].add(upd, mode="drop")
    d = jax.lax.dynamic_update_slice(table, upd[:2], (idx[0], np.int64(-3)))
    return g, g2, s, d



# ==== batch 4 =====================================================================================
def _topk_big_k(mesh):
    def f(x):
        x = _wsc(mesh, x[:, :45], P(None, "x"))   # 45 over 16: shards of 3 (the last ones short)
        v, i = jax.lax.top_k(x, 7)                # k larger than a shard
        return v, i, jnp.argsort(-x, axis=1)[:, :7]
    return f


def _reduce2d_variadic(x, y):
    # variadic (min value, its flat index, a payload) over both sharded dims.
    r, c = x.shape
    flat = jax.lax.broadcasted_iota(jnp.int32, x.shape, 0) * c + jax.lax.broadcasted_iota(jnp.int32, x.shape, 1)

    def comb(a, b):
        av, ai, ap = a
        bv, bi, bp = b
        take = (bv < av) | ((bv == av) & (bi < ai))
        return jnp.where(take, bv, av), jnp.where(take, bi, ai), jnp.where(take, bp, ap)

    return jax.lax.reduce((x, flat, y), (np.float32(np.inf), np.int32(2 ** 30), np.float32(0)), comb, (0, 1))


def _sort_dim0_keys(mesh):
    def f(k1, k2, v):
        k1, k2, v = (_wsc(mesh, a[:27], P("x")) for a in (k1, k2, v))
        s = jax.lax.sort((k1, k2, v), dimension=0, num_keys=2, is_stable=True)
        return s
    return f


def probe6a_programs():
    ps = []

    def add(name, *a, **kw):
        ps.append(Program("p6a_" + name, *a, **kw))

    def add64(name, *a, **kw):
        ps.append(_X64Program("p6a_" + name, *a, **kw))

    # ---- x64 -------------------------------------------------------------------------------------
    add64("x64_f64_stats", "f64 matmul, sum / logsumexp / var / cumsum / sort over the sharded dim, 2 x 4",
          _plain(_f64_stats), M24, XY, [P("x", "y"), P("y", None)], None,
          lambda: [_r64((24, 16), 600), _r64((16, 8), 605)])
    add64("x64_int64_uint64", "int64 past 2^32 (wrap, floor div/mod, shifts, sum, cumsum) and uint64 hash / popcount, uneven rows",
          _plain(_int64_arith), M24, XY, [P("x", "y"), P("x", "y"), P("y", "x")], None, _int64_args)
    add64("x64_segment_int64", "segment_sum / segment_max with int64 ids, f64 data, 50 rows over 8",
          _uneven(_seg64, [(50,), (50,)], [P("x"), P("x", None)]), M8, AX, [P("x"), P("x", None)], None,
          lambda: [np.random.default_rng(602).integers(0, 12, (56,)).astype(np.int64), _r64((56, 6), 603)])
    add64("x64_f64_cholesky_solve", "f64 SPD cholesky, solve, cho_solve, slogdet with rows sharded, 4 x 2",
          _plain(_f64_linalg), M42, XY, [P("x", "y"), P("x", None)], None,
          lambda: [_r64((24, 24), 604), _r64((24, 3), 606)])
    add64("x64_argsort_topk", "f64 argsort (int64 indices), top_k, argmax along the sharded dim, int64 positions, 4 x 4",
          _plain(_f64_topk_argsort), M44, XY, [P("x", "y")], None, lambda: [_r64((8, 20), 607)])
    add64("x64_mixed_precision", "f32 promoted to f64 matmul with a sharded contraction, f64 cumprod, 2 x 2 x 2",
          _plain(_mixed_precision64), M222, XYZ, [P(("x", "y"), "z"), P("z", None)], None,
          lambda: [_rand((16, 12), 608), _rand((12, 10), 609)])

    # ---- forward-mode AD -------------------------------------------------------------------------
    add("jvp_mlp", "jax.jvp of an MLP wrt params and input, params over model, batch over data, 2 x 4",
        _plain(_jvp_mlp), M24, ("data", "model"),
        [P(None, "model"), P("model"), P("model", None), P("data"), P(None, "model"), P("model"), P("model", None),
         P("data")], None,
        lambda: [_rand((16, 32), 610, scale=0.25), _rand((32,), 611, scale=0.1), _rand((32, 8), 612, scale=0.2),
                 _rand((8, 16), 613), _rand((16, 32), 614), _rand((32,), 615), _rand((32, 8), 616), _rand((8, 16), 617)])
    add("linearize_twice", "jax.linearize of a gelu MLP, the linear map applied to three tangents, 8 devices",
        _plain(_linearize_twice), M8, AX, [P(None, "x"), P("x"), P("x"), P(None, "x")], None,
        lambda: [_rand((16, 24), 618, scale=0.25), _rand((16, 16), 619), _rand((16, 16), 620), _rand((16, 16), 621)])
    add("jacrev_jacfwd_mlp", "vmap(jacrev) wrt inputs and jacfwd wrt w2 of an MLP, hidden over y, batch over x, 2 x 4",
        _plain(_jac_mlp), M24, XY, [P(None, "y"), P("y"), P("y", None), P("x")], None,
        lambda: [_rand((6, 16), 622, scale=0.4), _rand((16,), 623, scale=0.1), _rand((16, 5), 624, scale=0.3),
                 _rand((8, 6), 625)])
    add("hvp_jvp_of_grad", "Hessian-vector product (jvp of grad) of a 2-layer loss, weights 2-D sharded, 4 x 2",
        _plain(_hvp), M42, XY, [P("x", "y"), P("y", None), P("x"), P("x"), P("x", "y"), P("y", None)], None,
        lambda: [_rand((16, 24), 626, scale=0.25), _rand((24, 8), 627, scale=0.2), _rand((32, 16), 628),
                 _rand((32, 8), 629), _rand((16, 24), 630), _rand((24, 8), 631)])
    add("custom_jvp_step", "SGD step with custom_jvp softplus and a clip-gradient custom_jvp, 2 x 2 x 2",
        _plain(_custom_jvp_step), M222, XYZ, [P("y", "z"), P("z", None), P("x"), P("x")], None,
        lambda: [_rand((16, 32), 632, scale=0.25), _rand((32, 8), 633, scale=0.2), _rand((16, 16), 634),
                 _rand((16, 8), 635)])

    # ---- ops -------------------------------------------------------------------------------------
    add("polar_meshgrid", "meshgrid grids, atan2 / hypot of offsets, H over x, W=10 over y (uneven), 2 x 4",
        _uneven(_polar_grid, [(3, 12, 10)], [P(None, "x", "y")]), M24, XY, [P(None, "x", "y")], None,
        lambda: [_rand((3, 12, 12), 636)])
    add("diff_cross_uneven", "diff n=1 / n=2 along the sharded dim (37 rows over 8), prepend, cross of (N,3)",
        _uneven(_diff_cross, [(37,)] * 3, [P("x", None)] * 3), M8, AX, [P("x", None), P("x", None), P("x", None)], None,
        lambda: [_rand((40, 6), 637), _rand((40, 3), 638), _rand((40, 3), 639)])
    add("array_split_uneven", "array_split into 3 uneven parts along the sharded dim (22 rows over 8), concat",
        _uneven(_array_split, [(22,)], [P("x", None)]), M8, AX, [P("x", None)], None, lambda: [_rand((24, 16), 640)])
    add("f8_e5m2_e4m3_rowscale", "float8_e5m2 x float8_e4m3fn matmul with row / column scales, and e5m2 x e5m2^T, 2 x 4",
        _plain(_f8_mixed), M24, XY, [P("x", "y"), P("y", None)], None,
        lambda: [_rand((16, 32), 641), _rand((32, 16), 642, scale=0.5)])
    add("tconv1d_lhs_dilation", "transposed 1-D conv by lhs_dilation 2 and full padding, spatial dim over 8",
        _plain(_tconv1d), M8, AX, [P(None, "x", None), P()], None,
        lambda: [_rand((2, 32, 4), 643), _rand((5, 4, 6), 644, scale=0.3)])
    add("tconv2d_lhs_dilation", "lhs_dilation (2,2) conv with asymmetric padding, batch over x, H over y, 2 x 4",
        _plain(_tconv2d), M24, XY, [P("x", "y"), P()], None,
        lambda: [_rand((2, 8, 6, 3), 645), _rand((3, 4, 3, 5), 646, scale=0.3)])
    add("vander_polyval_kron", "vander / polyval of a sharded vector (uneven 30 over 4), kron of sharded operands, 4 x 2",
        _uneven(_vander_kron, [(30,), None, None], [P("x"), None, None]), M42, XY, [P("x"), P("x", "y"), P("y", "x")], None,
        lambda: [0.5 * _rand((32,), 647), _rand((4, 6), 648), _rand((6, 4), 649)])
    add("uint32_bits", "uint32 popcount, shifts by per-element amounts, rotate, packing 32 flags, wrapping sum, 4 x 2",
        _plain(_bits), M42, XY, [P("x", "y"), P("x", "y")], None,
        lambda: [np.random.default_rng(650).integers(0, 2 ** 32, (12, 40), dtype=np.uint32),
                 np.random.default_rng(651).integers(0, 64, (12, 40)).astype(np.uint32)])
    add("einsum_ellipsis", "einsums with ellipsis batch dims, outer / diagonal, b...,b...->b, 2 x 2 x 2",
        _plain(_einsum_ellipsis), M222, XYZ, [P("x", "y", None, "z"), P("x", "y", None, None), P("x", "z", None)],
        None, lambda: [_rand((2, 4, 8, 6), 652), _rand((2, 4, 8, 6), 653), _rand((4, 6, 5), 654)])
    add("tensordot_trace_offset", "tensordot over two sharded contracting axes, trace with offsets 2 / -3 / batched, 2 x 4",
        _plain(_trace_tensordot), M24, XY, [P(None, "x", "y"), P("x", "y", None), P("x", "y")], None,
        lambda: [_rand((6, 8, 8), 655), _rand((8, 8, 5), 656), _rand((12, 12), 657)])
    add("variadic_reduce_argmax", "argmax by a variadic lax.reduce of (values, iota) over the sharded dim, 30 over 4, with ties",
        _uneven(_variadic_argmax, [(6, 30)], [P("x", "y")]), M24, XY, [P("x", "y")], None,
        lambda: [np.round(_rand((6, 32), 658) * 2.0).astype(np.float32)])
    add("sort_two_keys_lexsort", "lax.sort num_keys=2 of 3 operands and lexsort along the sharded dim (uneven 18 over 4), 2 x 8",
        _uneven(_sort2, [(4, 18)] * 3, [P("x", "y")] * 3), M28, XY, [P("x", "y"), P("x", "y"), P("x", "y")], None,
        lambda: [_ids((4, 24), 3, 659), _ids((4, 24), 4, 660), _rand((4, 24), 661)])
    add("topk_bf16_sharded", "lax.top_k k=6 of bf16 along the sharded last dim (ties), 4 x 4",
        _plain(_topk_bf16), M44, XY, [P("x", "y")], None, lambda: [_rand((8, 64), 662, "bf16")], dtype="bf16")
    add("nancumsum_uneven", "nancumsum / nancumprod with NaNs, cumlogsumexp along the sharded dim, 21 rows over 16",
        _uneven(_nancum, [(21,)], [P("x", None)]), M16, AX, [P("x", None)], None, lambda: [_rand((32, 5), 663)])
    add("rem_floordiv_clamp", "lax.rem / floor_divide / remainder / div of negative ints, fmod, clamp with array bounds, 2 x 4",
        _plain(_int_div), M24, XY, [P("x", "y"), P("y", "x"), P("x", "y"), P("x", None), P(None, "y")], None,
        lambda: [_ids((8, 12), 41, 664) - 20, _ids((8, 12), 13, 665) - 6, _rand((8, 12), 666),
                 -np.abs(_rand((8, 12), 667)), np.abs(_rand((8, 12), 668))])
    add("sdpa_mask_and_causal", "dot_product_attention with a boolean mask and with is_causal, seq over x, heads over y, 2 x 4",
        _plain(_sdpa_mask_causal), M24, XY, [P(None, "x", "y"), P(None, "x", "y"), P(None, "x", "y"), P(None, "y", "x")],
        None, lambda: [_rand((2, 16, 4, 8), 669), _rand((2, 16, 4, 8), 670), _rand((2, 16, 4, 8), 671),
                       np.random.default_rng(672).random((2, 4, 16, 16)) > 0.3])
    add("sdpa_gqa_causal_bf16", "grouped-query causal dot_product_attention, bf16, batch over x, q heads over y, 2 x 4",
        _plain(_sdpa_gqa_causal), M24, XY, [P("x", None, "y"), P("x"), P("x")], None,
        lambda: [_rand((2, 12, 8, 8), 673, "bf16"), _rand((2, 12, 2, 8), 674, "bf16"), _rand((2, 12, 2, 8), 675, "bf16")],
        dtype="bf16")
    add("meshgrid_cross_16", "meshgrid angles, cross product of rotated rows, diff n=2, 27 rows over 16",
        _uneven(_cross_pos, [(27,), None], [P("x", None), None]), M16, AX, [P("x", None), P()], None,
        lambda: [_rand((32, 3), 676), _rand((3, 3), 677)])
    add("matrix_power_trace", "matrix_power(4) of a row-sharded matrix, trace offset 1, diff along the sharded cols, 4 x 4",
        _plain(_matpow_trace), M44, XY, [P("x", "y"), P("y", None)], None,
        lambda: [_rand((16, 16), 678, scale=0.25), _rand((16, 4), 679)])
    # ---- batch 2 ---------------------------------------------------------------------------------
    add64("x64_const_precision", "f64 / int64 constants needing every digit (1/3, 1+2^-52, 1e-300, 2^53+1, int64 max), 2 x 4",
          _plain(_x64_consts), M24, XY, [P("x", "y"), P("y", "x")], None, _x64_consts_args)
    add64("x64_shift_edges", "int64 / uint64 shifts by 0..69 (past the width), clz, popcount of negatives, 2 x 4",
          _plain(_shift_edges), M24, XY, [P("x", "y"), P("y", "x"), P("x", "y")], None, _shift_args)
    add("shift_edges32", "uint32 / int32 shifts by 0..46 (past the width) on sharded arrays, 8 devices",
        _plain(_shift_edges32), M8, AX, [P(None, "x"), P(None, "x"), P(None, "x")], None,
        lambda: [np.random.default_rng(704).integers(0, 2 ** 32, (4, 16), dtype=np.uint32),
                 np.random.default_rng(705).integers(-(2 ** 31), 2 ** 31, (4, 16)).astype(np.int32),
                 np.tile(np.arange(0, 48, 3, dtype=np.int32), (4, 1))])
    add64("x64_uint64_order", "uint64 >= 2^63: max / min / argmax / sort over the sharded dim, div, conversions; f64->int saturation",
          _plain(_u64_order), M42, XY, [P("y", "x"), P("y", "x")], None, _u64_args)
    add64("x64_random_f64", "threefry normal f64, bits uint64, randint int64 with sharded outputs, 2 x 4",
          _rand64, M24, XY, [P(), P("x", "y")], None, lambda: [np.array([11], np.uint32), _r64((32, 16), 706)])
    add64("x64_complex128", "complex128 matmul with conj, fft, angle, det, rows over x, 2 x 4",
          _plain(_c128), M24, XY, [P("x", "y"), P("x", "y")], None, lambda: [_r64((8, 8), 707), _r64((8, 8), 708)])
    add64("x64_bitcast", "bitcast f64 <-> int64, f64 -> uint32 pairs and back, f32 -> uint8 x4, sharded, 4 x 2",
          _plain(_bitcast64), M42, XY, [P("x", "y"), P("y", "x")], None,
          lambda: [_r64((8, 8), 709), np.random.default_rng(710).integers(-(2 ** 62), 2 ** 62, (8, 8)).astype(np.int64)])
    add64("x64_f64_spectral", "f64 eigvalsh, singular values, expm, lu_factor of a row-sharded matrix, 8 devices",
          _plain(_f64_spectral), M8, AX, [P("x", None)], None, lambda: [_r64((16, 16), 711)])
    add64("x64_gather_scatter_int64", "take / scatter-add / one_hot with int64 ids, dynamic_slice at an int64 start, 2 x 2 x 2",
          _plain(_gather64), M222, XYZ, [P("x", "y"), P(("x", "y", "z")), P(("x", "y"), "z"), P()], None,
          lambda: [_r64((20, 6), 712), np.random.default_rng(713).integers(0, 20, (16,)).astype(np.int64),
                   _r64((16, 6), 714), np.array([9], np.int64)])
    add("fp8_variants", "f32 <-> e3m4 / e4m3 / e4m3fnuz / e5m2fnuz / e4m3b11fnuz / float4_e2m1fn, sums, e4m3fnuz matmul, 2 x 4",
        _plain(_fp8_variants), M24, XY, [P("x", "y"), P("y", None)], None, lambda: [_rand((16, 32), 715), _rand((32, 8), 716)])
    add("int4_reshard", "int4 / uint4 arrays resharded (x,y)->(y,x), transposed and gathered, 2 x 4",
        _int4_reshard, M24, XY, [P("x", "y")], None, lambda: [_rand((16, 16), 717)])
    add("jvp_scan_sort_topk", "jvp through an RNN scan (batch over x) and of sort / top_k / cumsum along the sharded dim, 2 x 4",
        _plain(_jvp_scan_sort), M24, XY,
        [P("x"), P(None, "x"), P(), P("x"), P(None, "x"), P(), P("x", "y"), P("x", "y")], None,
        lambda: [_rand((8, 16), 718), _rand((5, 8, 16), 719), _rand((16, 16), 720, scale=0.25), _rand((8, 16), 721),
                 _rand((5, 8, 16), 722), _rand((16, 16), 723), _rand((4, 32), 724), _rand((4, 32), 725)])
    add("jacfwd_softmax_sharded", "jacfwd of softmax over a sharded vector (16 over 16) and vmapped over sharded rows, 4 x 4",
        _plain(_jacfwd_softmax), M44, XY, [P(("x", "y")), P("x", "y")], None,
        lambda: [_rand((16,), 726), _rand((8, 12), 727)])
    add("linearize_transpose_scan", "linearize of a scan and linear_transpose of its linear map, rows over x, 8 devices",
        _plain(_linearize_transpose), M8, AX, [P(), P(None, "x"), P(None, "x"), P(None, "x")], None,
        lambda: [_rand((8, 8), 728, scale=0.3), _rand((6, 16, 8), 729), _rand((6, 16, 8), 730), _rand((5, 16, 8), 731)])
    add("tconv_stride_groups_uneven", "conv with lhs_dilation 3, stride 2, rhs_dilation 2, 2 feature groups, 29 positions over 8",
        _tconv_groups, M8, AX, [P(None, "x"), P()], None, lambda: [_rand((2, 32, 4), 732), _rand((3, 2, 6), 733, scale=0.4)])
    add("custom_jvp_in_scan_grad", "grad through a scan whose body calls custom_jvp softplus / gradient damping, 4 x 2",
        _plain(_custom_jvp_scan), M42, XY, [P(None, "y"), P(None, "x"), P(None, "x")], None,
        lambda: [_rand((16, 8), 734, scale=0.3), _rand((4, 8, 16), 735), _rand((4, 8, 8), 736)])
    # ---- batch 3 ---------------------------------------------------------------------------------
    add64("x64_round_edges", "halfway-plus-epsilon conversions f64->bf16/f16/f32, int64/uint64->f32, int32->bf16, f32->f8/f4, 2 x 4",
          _plain(_round_edges), M24, XY, [P("x", "y")] * 5, None, _round_edges_args)
    add64("x64_smap_collectives", "shard_map psum / pmax / pmin of int64 and uint64 (>= 2^63), f64 pmax with -0.0, all_to_all, c128 ppermute, int64 psum_scatter / all_gather",
          _smap64, M24, XY, [P("x", "y")] * 4, None, _smap64_args)
    add64("x64_int64_div_edges", "int64 MIN // -1, MIN % -1, x // 0, x % 0, uint64 // 0 and % 0 (XLA semantics), 8 devices",
          _plain(_int64_div_edges), M8, AX, [P(None, "x")] * 4, None, _int64_div_args)
    add64("x64_loops_int64", "fori_loop with int64 bounds and f64 carry (rows over x), while_loop on an int64 counter past 2^40",
          _plain(_loops64), M42, XY, [P("x", None), P(None, "y"), P()], None,
          lambda: [_r64((16, 8), 742, 0.5), _r64((8, 8), 743, 0.3), np.array([5], np.int64)])
    add64("x64_nan_order", "f64 sort / stable argsort / argmax / argmin / nanmax with NaN, -0.0, inf over the sharded dim, 2 x 4",
          _plain(_nan_order64), M24, XY, [P("x", "y")], None, _nan_order_args)
    add64("x64_out_of_range_int64", "int64 out-of-range / negative ids: take clip / fill, scatter-add drop, dynamic_update_slice clamp, 2 x 4",
          _plain(_oob64), M24, XY, [P("x", "y"), P("y"), P("y", "x")], None,
          lambda: [_r64((16, 8), 744), np.array([3, -1, 15, 16, -17, 2 ** 40, -(2 ** 62), 7], np.int64), _r64((8, 8), 745)])
    # ---- batch 4 ---------------------------------------------------------------------------------
    add("topk_k_over_shard_16", "top_k k=7 along a 45-wide dim over 16 (shards of 3, short ones), argsort prefix",
        _topk_big_k, M16, AX, [P(None, "x")], None, lambda: [_rand((4, 48), 750)])
    add("variadic_reduce_2d", "variadic lax.reduce (min, flat index, payload) over both sharded dims with ties, 4 x 4",
        _plain(_reduce2d_variadic), M44, XY, [P("x", "y"), P("y", "x")], None,
        lambda: [np.round(_rand((8, 12), 751)).astype(np.float32), _rand((8, 12), 752)])
    add("sort_dim0_two_keys_uneven", "lax.sort num_keys=2 stable along dim 0 (27 rows over 8) of int / float keys, 2-D payload",
        _sort_dim0_keys, M8, AX, [P("x")] * 3, None,
        lambda: [_ids((32, 3), 4, 753), np.round(_rand((32, 3), 754)).astype(np.float32), _rand((32, 3), 755)])
    return ps
