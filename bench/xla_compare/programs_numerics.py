"""Programs for bench/xla_compare of JAX's numerical library: jnp.linalg (inv, det, matrix_power,
pinv, lstsq), jax.scipy.linalg (lu, lu_factor / lu_solve, expm, toeplitz / block_diag),
complex-valued linalg, jax.scipy.special and jax.scipy.stats, jax.random's distributions with the
threefry and unsafe_rbg generators, set operations and histograms with a size, bit manipulation,
FFTs in several dims, jnp.gradient / trapezoid, partition / percentile methods, indexing modes and
the scatter combiners, the less common lax reductions (approx_max_k, a multi-operand reduce,
multi-key sort, an associative scan along a sharded dim), NaN-propagating reductions over sharded
dims and grouped convolutions, each on sharded inputs.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from programs import Program, _ids, _plain, _rand


def _spd(a):
    n = a.shape[-1]
    return a @ jnp.swapaxes(a, -1, -2) / n + jnp.eye(n, dtype=a.dtype)


def _inv_det(a):
    m = _spd(a)
    return jnp.linalg.inv(m), jnp.linalg.det(m), jnp.linalg.matrix_power(m, 3), jnp.linalg.matrix_power(m, -2)


def _pinv_lstsq(a, b):
    # Tall matrices: least squares through pinv and lstsq, and the residual norms.
    x = jax.vmap(lambda m, r: jnp.linalg.lstsq(m, r)[0])(a, b)
    return jnp.linalg.pinv(a) @ b, x, jnp.linalg.norm(a @ x - b, axis=(-2, -1))


def _lu_solve(a, b):
    lu, piv = jax.scipy.linalg.lu_factor(a)
    x = jax.scipy.linalg.lu_solve((lu, piv), b)
    p, l, u = jax.vmap(jax.scipy.linalg.lu)(a)
    return x, p @ l @ u, jnp.abs(jnp.diagonal(u, axis1=-2, axis2=-1)).prod(-1)


def _expm(a):
    a = a * 0.3
    e = jax.vmap(jax.scipy.linalg.expm)(a)
    return e, jnp.trace(e, axis1=-2, axis2=-1)


def _structured(c, r, x):
    t = jax.scipy.linalg.toeplitz(c, r)
    bd = jax.scipy.linalg.block_diag(t[:4, :4], 2 * t[4:, 4:], jnp.ones((2, 2)))
    return x @ t, bd @ jnp.concatenate([x, x[:, :2]], axis=1).T


def _special(x):
    a = jnp.abs(x) + 0.5
    u = jax.nn.sigmoid(x)
    sp = jax.scipy.special
    return (sp.gammaln(a), sp.digamma(a), sp.polygamma(1, a), sp.gammainc(a, 1.5), sp.gammaincc(a, 1.5),
            sp.betainc(a, 2.0, u), sp.erfinv(2 * u - 1), sp.ndtri(u), sp.log_ndtr(x), sp.xlogy(u, a),
            sp.xlog1py(u, jnp.abs(x) * 0.5), sp.i0e(x), sp.i1e(x), sp.logit(u), sp.zeta(a + 1.0, 1.0))


def _lse_b(x, w):
    v, s = jax.scipy.special.logsumexp(x, axis=1, b=w, return_sign=True)
    return v, s, jax.scipy.special.logsumexp(x, axis=0, keepdims=True), jax.scipy.special.entr(jax.nn.sigmoid(x))


def _stats(x, mu):
    st = jax.scipy.stats
    u = jax.nn.sigmoid(x)
    return (st.norm.logpdf(x, mu, 2.0), st.norm.cdf(x), st.t.logpdf(x, 4.0), st.beta.logpdf(u, 2.0, 3.0),
            st.gamma.logpdf(jnp.abs(x) + 0.1, 2.0), st.poisson.logpmf(jnp.round(jnp.abs(x) * 3), 2.5),
            st.laplace.cdf(x), st.cauchy.logpdf(x), st.logistic.ppf(u))


def _rand_dists(kd, x):
    key = jax.random.wrap_key_data(kd)
    ks = jax.random.split(key, 8)
    r = jax.random
    return (x + r.poisson(ks[0], 3.0, x.shape), r.beta(ks[1], 2.0, 3.0, x.shape), r.dirichlet(ks[2], jnp.ones(4) * 2, (16,)),
            r.bernoulli(ks[3], 0.3, x.shape), r.laplace(ks[4], x.shape), r.gumbel(ks[5], x.shape),
            r.categorical(ks[6], x, axis=-1), r.t(ks[7], 5.0, x.shape))


def _rand_rbg(seed, x):
    key = jax.random.key(seed[0], impl="unsafe_rbg")
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return (x * jax.random.normal(k1, x.shape), jax.random.permutation(k2, x, axis=1, independent=True),
            jax.random.orthogonal(k3, 4, (2,)), jax.random.binomial(k4, 10, 0.4, x.shape))


def _sets(a, b):
    ai = jnp.round(a * 2).astype(jnp.int32)
    bi = jnp.round(b * 2).astype(jnp.int32)
    u, inv, cnt = jnp.unique(ai, size=12, fill_value=0, return_inverse=True, return_counts=True)
    return (u, inv, cnt, jnp.isin(ai, bi), jnp.setdiff1d(ai, bi, size=6, fill_value=-9),
            jnp.union1d(ai, bi, size=14, fill_value=-9), jnp.intersect1d(ai, bi, size=6, fill_value=-9))


def _hist2d(x, y, w):
    h2, _, _ = jnp.histogram2d(x, y, bins=(4, 6), range=((-2, 2), (-3, 3)), weights=w)
    h, e = jnp.histogram(x, bins=jnp.array([-3.0, -1.0, 0.0, 0.5, 3.0]), density=True)
    return h2, h, e


def _bits(a, b):
    ai = jnp.round(a * 100).astype(jnp.int32)
    bi = jnp.round(b * 100).astype(jnp.int32)
    u8 = (jnp.abs(ai) % 256).astype(jnp.uint8)
    packed = jnp.packbits(u8 > 100, axis=1)
    return (jnp.gcd(ai, bi), jnp.lcm(ai % 50, bi % 30), jnp.bitwise_count(ai), packed,
            jnp.unpackbits(u8, axis=1), jax.lax.clz(ai), ai // (bi % 7 - 3), ai % (bi % 7 - 3),
            jnp.left_shift(ai, 28) + ai * 1000003, jnp.right_shift(ai, 3))


def _fftn(x):
    f2 = jnp.fft.fft2(x)
    fn = jnp.fft.fftn(x, axes=(0, 1, 2))
    return jnp.abs(jnp.fft.fftshift(f2, axes=(-2, -1))), jnp.fft.ifftn(fn * 0.5, axes=(0, 1, 2)).real, jnp.fft.hfft(x[..., :5], n=8)


def _calc(x, y):
    return (jnp.gradient(x, axis=1), jnp.gradient(x, 0.5, axis=0), jnp.trapezoid(x, dx=0.1, axis=1),
            jnp.ediff1d(x[:, 3], to_begin=jnp.array([0.0])), jnp.vander(y, 4),
            jnp.piecewise(x, [x < -0.5, x > 0.5], [lambda v: v * 2, lambda v: v ** 2, 0.0]),
            jnp.select([x < 0, x > 1], [x, -x], default=9.0))


def _partition_pct(x):
    return (jnp.partition(x, 3, axis=1)[:, :4], jnp.sort(jnp.argpartition(x, 2, axis=1)[:, :2], axis=1),
            jnp.percentile(x, jnp.array([10.0, 50.0, 90.0]), axis=1, method="nearest"),
            jnp.percentile(x, 30.0, axis=0, method="lower"), jnp.quantile(x, 0.7, axis=1, method="midpoint"),
            jnp.nanpercentile(jnp.where(x > 1.0, jnp.nan, x), 75.0, axis=1), jnp.median(x, axis=0))


def _take_modes(x, idx):
    return (jnp.take(x, idx, axis=1, mode="fill", fill_value=-5.0), jnp.take(x, idx, axis=1, mode="clip"),
            jnp.take(x, idx, axis=1, mode="wrap"), jnp.argwhere(x > 1.0, size=6, fill_value=-1),
            jnp.flatnonzero(x > 1.5, size=4))


def _scatter_ops(x, idx, v):
    return (x.at[idx].min(v), x.at[idx].max(v), x.at[idx].multiply(v), x.at[idx].divide(v + 3.0),
            x.at[idx].power(2.0), x.at[:, idx[:4]].add(1.0, mode="drop"))


def _approx_topk(x):
    v, i = jax.lax.approx_max_k(x, 4, recall_target=1.0)
    w, j = jax.lax.approx_min_k(x, 3, reduction_dimension=0)
    return v, i, w, j


def _argmax_reduce(x):
    # A two-operand lax.reduce: (value, index) pairs keeping the max and its smallest index.
    idx = jax.lax.broadcasted_iota(jnp.int32, x.shape, 1)

    def comb(a, b):
        av, ai = a
        bv, bi = b
        take_a = (av > bv) | ((av == bv) & (ai < bi))
        return jnp.where(take_a, av, bv), jnp.where(take_a, ai, bi)

    v, i = jax.lax.reduce((x, idx), (-jnp.inf, jnp.int32(0)), comb, (1,))
    return v, i


def _multikey_sort(x, k):
    ki = k % 3
    a, b, c = jax.lax.sort((ki, x, jnp.arange(x.shape[1], dtype=jnp.int32)[None].repeat(x.shape[0], 0)),
                           dimension=1, num_keys=2, is_stable=True)
    return a, b, c, jax.lax.cummax(x, axis=0), jax.lax.cumlogsumexp(x, axis=0, reverse=True)


def _grouped_conv(x, w, w2):
    # feature_group_count=2 (grouped conv) and the depthwise kernel gradient (batch_group_count).
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                     feature_group_count=2, rhs_dilation=(2, 1))
    g = jax.grad(lambda k: jnp.sum(jax.lax.conv_general_dilated(x, k, (2, 2), "VALID",
                                                                 dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                                                 feature_group_count=4) ** 2))(w2)
    return y, g


def _complex_linalg(a, b):
    c = (a + 1j * b).astype(jnp.complex64)
    h = c @ jnp.conj(jnp.swapaxes(c, -1, -2)) + 4 * jnp.eye(c.shape[-1])
    x = jnp.linalg.solve(h, c[..., :1])
    return jnp.linalg.eigvalsh(h), jnp.abs(x), jnp.abs(jnp.linalg.det(h)), jnp.abs(jnp.linalg.inv(c) @ c)


def _assoc_scan(a, b):
    # A first-order linear recurrence h_t = a_t h_{t-1} + b_t with associative_scan along time.
    def comb(l, r):
        return r[0] * l[0], r[0] * l[1] + r[1]
    return jax.lax.associative_scan(comb, (jax.nn.sigmoid(a), b), axis=1)[1]


def _nan_reduce(x, k):
    # NaN-propagating max / min / argmax across the sharded dims (the partial results of devices
    # meet in all-reduces), int8 / uint8 reductions that wrap, prod and any.
    xn = jnp.where(x > 1.2, jnp.nan, x)
    i8 = (k % 256 - 128).astype(jnp.int8)
    return (jnp.nan_to_num(jnp.max(xn, axis=1), nan=99.0), jnp.nan_to_num(jnp.min(xn, axis=0), nan=-99.0),
            jnp.argmax(xn, axis=1), jnp.argmin(xn, axis=0), jnp.sum(i8, axis=1, dtype=jnp.int8),
            jnp.max(k.astype(jnp.uint8), axis=0), jnp.prod(1.0 + x * 0.05, axis=1), jnp.any(xn != xn, axis=0),
            jnp.nan_to_num(jax.lax.cumsum(xn, axis=1, reverse=True), nan=5.0))


def numerics_programs():
    m8, an_x = (8,), ("x",)
    m24, an_xy = (2, 4), ("x", "y")
    m4 = (4,)
    kd = lambda: np.array([0, 1234], np.uint32)
    return [
        Program("linalg_inv_det_power", "batched inv, det, matrix_power(3) and (-2) of SPD matrices, batch over x",
                _plain(_inv_det), m4, an_x, [P("x")], None, lambda: [_rand((8, 5, 5), 600)]),
        Program("pinv_lstsq", "batched pinv and lstsq of tall matrices with residual norms, batch over x",
                _plain(_pinv_lstsq), m4, an_x, [P("x"), P("x")], None,
                lambda: [_rand((8, 7, 4), 601), _rand((8, 7, 2), 602)]),
        Program("lu_factor_solve", "scipy lu_factor / lu_solve and lu (P L U), batch over x",
                _plain(_lu_solve), m8, an_x, [P("x"), P("x")], None,
                lambda: [_rand((8, 6, 6), 603), _rand((8, 6, 3), 604)]),
        Program("expm_trace", "vmap(scipy.linalg.expm) (Pade + squaring) and trace, batch over x",
                _plain(_expm), m4, an_x, [P("x")], None, lambda: [_rand((8, 4, 4), 605)]),
        Program("toeplitz_blockdiag", "toeplitz from sharded c / r and block_diag, rows of x over x",
                _plain(_structured), m4, an_x, [P("x"), P(), P("x")], None,
                lambda: [_rand((8,), 608), _rand((8,), 609), _rand((8, 8), 610)]),
        Program("scipy_special", "gammaln, digamma, polygamma, gammainc(c), betainc, erfinv, ndtri, log_ndtr, xlogy, i0e/i1e, logit, zeta",
                _plain(_special), m24, an_xy, [P("x", "y")], None, lambda: [_rand((8, 16), 611)]),
        Program("logsumexp_b_sign", "logsumexp with negative weights b and return_sign, keepdims, entr, 2 x 4",
                _plain(_lse_b), m24, an_xy, [P("x", "y"), P("x", "y")], None,
                lambda: [_rand((8, 16), 612), _rand((8, 16), 613)]),
        Program("scipy_stats", "norm / t / beta / gamma / poisson / laplace / cauchy / logistic densities, batch over x",
                _plain(_stats), m8, an_x, [P("x"), P()], None, lambda: [_rand((16, 8), 614), _rand((8,), 615)]),
        Program("random_dists", "threefry poisson, beta, dirichlet, bernoulli, laplace, gumbel, categorical, t",
                _plain(_rand_dists), m8, an_x, [P(), P("x")], None, lambda: [kd(), _rand((16, 4), 619)]),
        Program("random_unsafe_rbg", "unsafe_rbg normal, permutation(independent), orthogonal, binomial",
                _plain(_rand_rbg), m8, an_x, [P(), P("x")], None,
                lambda: [np.array([3], np.int32), _rand((16, 6), 620)]),
        Program("set_ops", "unique(size, return_inverse, return_counts), isin, setdiff1d / union1d / intersect1d with size",
                _plain(_sets), m8, an_x, [P("x"), P("x")], None, lambda: [_rand((32,), 622), _rand((16,), 623)]),
        Program("histogram2d", "histogram2d with weights and histogram with explicit edges and density",
                _plain(_hist2d), m8, an_x, [P("x"), P("x"), P("x")], None,
                lambda: [_rand((64,), 624), _rand((64,), 625), _rand((64,), 626)]),
        Program("int_bits", "gcd, lcm, bitwise_count, packbits/unpackbits, clz, floor div / mod of negatives, wrap",
                _plain(_bits), m24, an_xy, [P("x", "y"), P("x", "y")], None,
                lambda: [_rand((8, 32), 632), _rand((8, 32), 633)]),
        Program("fft_nd", "fft2 + fftshift, fftn / ifftn over 3 axes (one sharded), hfft, batch over x",
                _plain(_fftn), m4, an_x, [P("x")], None, lambda: [_rand((4, 8, 8), 635)], quick=True),
        Program("gradient_trapz", "gradient, trapezoid, ediff1d, vander, piecewise, select, 2 x 4",
                _plain(_calc), m24, an_xy, [P("x", "y"), P("x")], None,
                lambda: [_rand((8, 16), 636), _rand((8,), 637)], quick=True),
        Program("partition_percentile", "partition / argpartition, percentile nearest / lower / midpoint, nanpercentile",
                _plain(_partition_pct), m24, an_xy, [P("x", "y")], None, lambda: [_rand((8, 16), 638)]),
        Program("take_modes", "take mode fill / clip / wrap with out-of-range ids, argwhere / flatnonzero size",
                _plain(_take_modes), m24, an_xy, [P("x", "y"), P()], None,
                lambda: [_rand((8, 16), 639), np.array([0, 3, 17, -2, 40, 15, -20, 5], np.int32)]),
        Program("scatter_combiners", ".at[].min / max / multiply / divide / power with duplicate ids, add mode=drop",
                _plain(_scatter_ops), m24, an_xy, [P(None, "y"), P(), P(None, "y")], None,
                lambda: [_rand((12, 8), 640), np.array([1, 5, 1, 11, 20, 0], np.int32), _rand((6, 8), 641)]),
        Program("approx_topk", "lax.approx_max_k along rows, approx_min_k along dim 0, 2 x 4",
                _plain(_approx_topk), m24, an_xy, [P("x", "y")], None, lambda: [_rand((8, 32), 642)]),
        Program("argmax_reduce", "two-operand lax.reduce (value, index) with a custom comparator, rows over x, cols over y",
                _plain(_argmax_reduce), m24, an_xy, [P("x", "y")], None, lambda: [_rand((8, 16), 643)]),
        Program("multikey_sort", "lax.sort num_keys=2 stable of 3 operands, cummax and reverse cumlogsumexp along sharded dim",
                _plain(_multikey_sort), m24, an_xy, [P("x", "y"), P("x", "y")], None,
                lambda: [_rand((8, 16), 645), _ids((8, 16), 100, 646)]),
        Program("grouped_conv", "feature_group_count=2 dilated conv and a depthwise stride-2 kernel's gradient, batch over x",
                _plain(_grouped_conv), m4, an_x, [P("x"), P(), P()], None,
                lambda: [_rand((4, 8, 8, 4), 648), _rand((3, 3, 2, 6), 649, scale=0.3), _rand((3, 3, 1, 4), 650, scale=0.3)]),
        Program("complex_linalg", "complex64 Hermitian eigvalsh, solve, det, inv, batch over x",
                _plain(_complex_linalg), m4, an_x, [P("x"), P("x")], None,
                lambda: [_rand((4, 4, 4), 653), _rand((4, 4, 4), 654)]),
        Program("assoc_scan_linrec", "associative_scan of a linear recurrence along the sharded time dim",
                _plain(_assoc_scan), m24, an_xy, [P("x", "y"), P("x", "y")], None,
                lambda: [_rand((4, 16), 677), _rand((4, 16), 678)], quick=True),
        Program("nan_reductions_wrap", "max / min / argmax / argmin with NaNs over sharded dims, int8 sum wrap, uint8 max, prod",
                _plain(_nan_reduce), m24, an_xy, [P("x", "y"), P("x", "y")], None,
                lambda: [_rand((8, 16), 684), _ids((8, 16), 1000, 685)]),
    ]
