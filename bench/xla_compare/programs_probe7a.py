"""Probe programs for bench/xla_compare (names p7a_, `--only p7a_` runs them): numerics and the
jnp / lax API breadth an ML-systems user writes, under sharding.

Linear algebra in realistic programs: a Gaussian-process posterior (cholesky, cho_solve,
solve_triangular, log marginal likelihood) over a batch of kernels with the points sharded, a
Kalman filter in scan over an uneven batch (solve, slogdet), PCA by eigh of a covariance whose rows
are contracted over 8, spectral normalisation by power iteration in fori_loop with its gradient,
Muon's Newton-Schulz orthogonalisation on 4 x 4, Shampoo's inverse fourth roots by eigh, a GMM
E-step with per-component cholesky and multivariate_normal.logpdf, ridge regression over 100 rows
on 8 (scipy solve assume_a='pos', norm ords), a Glow 1x1 invertible convolution (LU
parametrisation, slogdet, inv) on 2x2x2, triangular solves (trans / lower / unit diagonal /
right side) with the right-hand sides' columns sharded, Lanczos with full reorthogonalisation
writing its basis by dynamic_update_slice in fori_loop, scipy.sparse.linalg cg / bicgstab
(while_loop) on a 2-D sharded matrix, log-domain Sinkhorn over an uneven 30 x 13 cost matrix,
expm / matrix_power of CTMC generators on a 2x2x2x2 mesh, spectral clustering by eigh of a
normalised Laplacian, truncated SVD reconstruction.
FFTs: FFT convolution by rfft2 / irfft2 against scipy.signal.convolve2d, fftn over two sharded
dims with fftshift and a radial power spectrum, a Fourier neural operator layer and its gradient
with the grid sharded, an STFT / log-mel frontend with the samples sharded.
Sorting and selection: robust aggregation (median / trimmed mean / percentiles over the sharded
clients dim), Spearman ranks by descending stable argsort and scatter, calibration error by
digitize / bincount(length) / histogram, k-NN by argpartition, sparsemax by sort and by bisection
in a while_loop, quantile regression with quantile / nanquantile over sharded dims, Gumbel top-k
sampling.
Scans: a Mamba selective scan by associative_scan along the sharded time dim with its gradient,
Welford statistics by a three-component associative_scan, drawdowns by cummax / cummin /
reverse cumlogsumexp over an uneven time dim, convolve / correlate modes over 100 samples on 8,
scipy.signal convolve2d / correlate2d, a Viterbi / CRF with the states sharded, a stacked RNN as a
nested scan, chunked attention in lax.map.
Reductions with where= / initial= / keepdims, average(weights, returned), nanmean / nanvar /
nanstd, logsumexp(b=, where=, return_sign) and softmax(where=) over a sharded key dim, packed
sequences' segment statistics with indices_are_sorted, token statistics by bincount on 4 x 4.
Dtypes: W8A8 dynamic per-row quantisation with an int32 dot over a sharded contraction, bf16
RMSNorm + SwiGLU on 4 x 4, f16 cross-entropy over a sharded vocab, uint32 murmur hashing for a
hash embedding (popcount / clz / rotates), complex RoPE, LSQ fake quantisation with a
straight-through custom_vjp (round half-even, decimals, floor_divide / remainder of negatives,
nextafter, reduce_precision, integer pow).
Autodiff: Newton steps by jax.hessian with the data contracted over 8, Levenberg-Marquardt with
jacfwd / jacrev, DP-SGD (vmap of grad, per-example clipping, noise from a key), second-order MAML,
a neural ODE (RK4 in fori_loop) gradient, gradients through sort / top_k / cumsum / gather.
Control flow and vmap: vmap of cond / switch (selects), random crops by vmap of dynamic_slice on a
sharded width, a deep ensemble by vmap(spmd_axis_name=...) with a constraint inside, k-means in
fori_loop over 100 points on 8, random-number programs from a key argument (mixup with
permutation / beta / bernoulli, random Fourier features with a ridge solve).
Then edges: factorisations of one 20 x 20 matrix with both dims sharded over 4 x 4 (cholesky, qr,
eigvalsh, svd, solve, inv, slogdet), top_k / sorts over a 1000 vocab on 2x2x2x2, forward and
reverse associative scans of 2x2 affine maps over 50 steps on 8, Lambert W by Halley iterations in
a while_loop, a running median over an uneven time dim on merged axes, lax.linalg.tridiagonal_solve
and vmapped scipy eigh_tridiagonal with the system dim sharded, polar decompositions (QDWH, SVD) on
4 x 4, scipy.signal welch / stft / istft / csd with the samples sharded, an int8 conv accumulating
in int32 over sharded input channels.

Left out because JAX's own run fails (XLA:CPU's FFT thunk, RET_CHECK
IsMonotonicWithDim0Major, under the Shardy lowering): irfft2 / padded rfft2 with a spatial dim
sharded, and FFTs of a constrained, unevenly sharded operand (100 rows over 8).
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from programs import Program, _axis_size, _ids, _plain, _rand, _smap, _wsc  # noqa: F401
from programs_probe6a import _uneven as _cut  # inputs cut inside to uneven sizes

M8, AX = (8,), ("x",)
M24, M42, XY = (2, 4), (4, 2), ("x", "y")
M222, XYZ = (2, 2, 2), ("x", "y", "z")
M44 = (4, 4)
M2222, ABCD = (2, 2, 2, 2), ("a", "b", "c", "d")


def _key(seed):
    return np.array([0, seed], np.uint32)


def _spd(n, seed, batch=None, ridge=1.0):
    shape = (n, n) if batch is None else (batch, n, n)
    a = _rand(shape, seed)
    return (a @ np.swapaxes(a, -1, -2) / n + ridge * np.eye(n, dtype=np.float32)).astype(np.float32)


# ==== linear algebra =============================================================================
GP_N, GP_M = 16, 8


def _gp_posterior(xtr, ytr, xte, log_ls, log_noise):
    ls = jnp.exp(log_ls)[:, None, None]

    def rbf(a, b):
        d2 = jnp.sum((a[:, :, None, :] - b[:, None, :, :]) ** 2, -1)
        return jnp.exp(-0.5 * d2 / ls ** 2)

    k = rbf(xtr, xtr) + (jnp.exp(log_noise)[:, None, None] + 1e-2) * jnp.eye(GP_N)
    l = jnp.linalg.cholesky(k)
    alpha = jax.scipy.linalg.cho_solve((l, True), ytr[..., None])[..., 0]
    ks = rbf(xte, xtr)                                                   # [B, M, N]
    mean = jnp.einsum("bmn,bn->bm", ks, alpha)
    v = jax.scipy.linalg.solve_triangular(l, jnp.swapaxes(ks, 1, 2), lower=True)
    var = 1.0 - jnp.sum(v ** 2, axis=1)
    lml = (-0.5 * jnp.sum(ytr * alpha, -1) - jnp.sum(jnp.log(jnp.diagonal(l, axis1=1, axis2=2)), -1)
           - 0.5 * GP_N * np.log(2 * np.pi))
    return mean, var, lml


KS, KO, KT = 4, 2, 10


def _kalman(f, h, q, r, ys, m0):
    # ys [B, T, O] with the (uneven) batch sharded: a batch of filters in one scan over time.
    p0 = jnp.broadcast_to(jnp.eye(KS), (m0.shape[0], KS, KS))

    def step(c, y):
        m, p = c
        m = m @ f.T
        p = f @ p @ f.T + q
        s = h @ p @ h.T + r                                            # [B, O, O]
        k = jnp.swapaxes(jnp.linalg.solve(s, h @ p), 1, 2)             # P H^T S^-1
        innov = y - m @ h.T
        m = m + jnp.einsum("bso,bo->bs", k, innov)
        p = p - k @ h @ p
        ll = -0.5 * (jnp.einsum("bo,bo->b", innov, jnp.linalg.solve(s, innov[..., None])[..., 0])
                     + jnp.linalg.slogdet(s)[1])
        return (m, p), ll

    (m, p), lls = jax.lax.scan(step, (m0, p0), jnp.swapaxes(ys, 0, 1))
    return m, p, jnp.sum(lls, 0)


def _kalman_args():
    rng = np.random.default_rng(7000)
    f = (0.9 * np.eye(KS) + 0.05 * rng.standard_normal((KS, KS))).astype(np.float32)
    h = rng.standard_normal((KO, KS)).astype(np.float32)
    q = (0.1 * np.eye(KS)).astype(np.float32)
    r = (0.5 * np.eye(KO)).astype(np.float32)
    return [f, h, q, r, _rand((16, KT, KO), 7001), _rand((16, KS), 7002)]


def _pca(x):
    # rows (samples) over 8: the covariance contracts the sharded dim; eigh of the small covariance.
    xc = x - jnp.mean(x, axis=0)
    cov = xc.T @ xc / (x.shape[0] - 1)
    w, v = jnp.linalg.eigh(cov)
    w, v = w[::-1], v[:, ::-1]
    top = v[:, :3]
    z = xc @ top
    recon = z @ top.T + jnp.mean(x, axis=0)
    err = jnp.mean((recon - x) ** 2, axis=1)
    return w, w[:3] / jnp.sum(w), top @ top.T, jnp.abs(z), err


def _pca_args():
    scales = np.array([6, 4, 3, 2, 1.5, 1.2, 1, 0.8, 0.6, 0.5, 0.4, 0.3], np.float32)
    return [_rand((96, 12), 7010) * scales + 1.0]


def _spectral_norm(w, u0, x, y):
    def sn(w):
        def it(_, uv):
            u, _v = uv
            v = w.T @ u
            v = v / jnp.linalg.norm(v)
            u = w @ v
            return u / jnp.linalg.norm(u), v
        u, v = jax.lax.fori_loop(0, 4, it, (u0, jnp.zeros((w.shape[1],), w.dtype)))
        u, v = jax.lax.stop_gradient(u), jax.lax.stop_gradient(v)
        sigma = u @ w @ v
        return w / sigma, sigma, u

    def loss(w):
        wn, sigma, u = sn(w)
        return jnp.mean((jnp.tanh(x @ wn) - y) ** 2), (sigma, u)

    (l, (sigma, u)), g = jax.value_and_grad(loss, has_aux=True)(w)
    return l, sigma, u, g


def _muon(w, buf, g):
    # Muon: momentum, Newton-Schulz quintic iteration to orthogonalise, scaled update; 2-D sharded.
    buf = 0.95 * buf + g
    upd = g + 0.95 * buf
    x = upd / (jnp.linalg.norm(upd) + 1e-7)
    x = x.T                                       # [48, 64]: rows <= cols
    a, b, c = 3.4445, -4.7750, 2.0315
    for _ in range(5):
        am = x @ x.T
        bm = b * am + c * am @ am
        x = a * x + bm @ x
    x = x.T
    w = w - 0.02 * x * np.sqrt(max(1.0, 64 / 48))
    return w, buf, jnp.linalg.norm(x.T @ x - jnp.eye(48))


def _shampoo(g, l0, r0, w):
    l = 0.9 * l0 + g @ g.T                                 # contracts the dim over y
    r = 0.9 * r0 + g.T @ g                                 # contracts the dim over x

    def inv_root(m, eps=1e-3):
        e, v = jnp.linalg.eigh(m)
        return (v * (jnp.maximum(e, 0.0) + eps) ** -0.25) @ v.T

    pg = inv_root(l) @ g @ inv_root(r)
    pg = pg * (jnp.linalg.norm(g) / (jnp.linalg.norm(pg) + 1e-12))
    return w - 0.1 * pg, l, r, pg


GK, GD = 6, 4


def _gmm_estep(x, mu, a, logw):
    cov = a @ jnp.swapaxes(a, 1, 2) / GD + 0.5 * jnp.eye(GD)         # [K, D, D]
    l = jnp.linalg.cholesky(cov)
    diff = x[None, :, :] - mu[:, None, :]                            # [K, N, D]
    z = jax.scipy.linalg.solve_triangular(l, jnp.swapaxes(diff, 1, 2), lower=True)   # [K, D, N]
    maha = jnp.sum(z ** 2, axis=1)                                   # [K, N]
    logdet = 2 * jnp.sum(jnp.log(jnp.diagonal(l, axis1=1, axis2=2)), -1)
    logp = -0.5 * (maha + logdet[:, None] + GD * np.log(2 * np.pi)) + jax.nn.log_softmax(logw)[:, None]
    ref = jax.vmap(lambda m, c: jax.scipy.stats.multivariate_normal.logpdf(x, m, c))(mu, cov)
    lse = jax.nn.logsumexp(logp, axis=0)                             # over the components
    resp = jnp.exp(logp - lse)
    nk = jnp.sum(resp, axis=1)
    new_mu = resp @ x / nk[:, None]
    return jnp.sum(lse), resp, nk, new_mu, ref


def _ridge(x, y):
    lam = 0.5
    a = x.T @ x + lam * jnp.eye(x.shape[1])
    w = jax.scipy.linalg.solve(a, x.T @ y, assume_a="pos")
    res = x @ w - y
    r2 = 1 - jnp.sum(res ** 2) / jnp.sum((y - jnp.mean(y)) ** 2)
    norms = jnp.stack([jnp.linalg.norm(res, ord=o) for o in (1, 2, np.inf, -np.inf, 3)])
    return w, res, r2, norms, jnp.linalg.norm(jnp.where(jnp.abs(res) > 0.5, res, 0.0), ord=0)


def _ridge_args():
    x = _rand((104, 8), 7030)
    y = x @ np.linspace(-1, 1, 8).astype(np.float32) + 0.3 * _rand((104,), 7031)
    return [x, y.astype(np.float32)]


def _glow(x, lmat, umat, logs):
    c = x.shape[-1]
    lo = jnp.tril(lmat, -1) + jnp.eye(c)
    up = jnp.triu(umat, 1) + jnp.diag(jnp.exp(logs))
    perm = jnp.eye(c)[::-1]
    w = perm @ lo @ up
    y = jnp.einsum("bhwc,dc->bhwd", x, w)
    hw = x.shape[1] * x.shape[2]
    logdet_lu = hw * jnp.sum(logs)
    sign, logdet = jnp.linalg.slogdet(w)
    xr = jnp.einsum("bhwd,cd->bhwc", y, jnp.linalg.inv(w))
    return y, logdet_lu, hw * logdet, sign, xr


def _tri_solves(a, b, c):
    # a [8, 6, 6] one matrix per device; b [8, 6, 10] with the columns sharded; c [8, 10, 6].
    lo = jnp.tril(a) + 3.0 * jnp.eye(6)
    up = jnp.triu(a) + 3.0 * jnp.eye(6)
    s = jax.scipy.linalg.solve_triangular
    x1 = s(lo, b, lower=True)
    x2 = s(up, b, lower=False, trans=1)
    x3 = s(lo, b, lower=True, unit_diagonal=True)
    x4 = s(up, b, lower=False, trans="T")
    x5 = jax.lax.linalg.triangular_solve(lo, c, left_side=False, lower=True, transpose_a=True)
    return x1, x2, x3, x4, x5


LZ_N, LZ_K = 32, 8


def _lanczos(b, v0):
    a = b.T @ b / LZ_N
    v0 = v0 / jnp.linalg.norm(v0)
    vmat = jnp.zeros((LZ_N, LZ_K)).at[:, 0].set(v0)

    def body(k, c):
        vmat, alphas, betas = c
        v = jax.lax.dynamic_slice_in_dim(vmat, k, 1, axis=1)[:, 0]
        w = a @ v
        alpha = v @ w
        w = w - vmat @ (vmat.T @ w)                      # full reorthogonalisation (twice)
        w = w - vmat @ (vmat.T @ w)
        beta = jnp.linalg.norm(w)
        nxt = w / beta
        vmat = jax.lax.dynamic_update_slice_in_dim(vmat, nxt[:, None], jnp.minimum(k + 1, LZ_K - 1), axis=1)
        vmat = jnp.where(k + 1 < LZ_K, vmat, c[0])
        return vmat, alphas.at[k].set(alpha), betas.at[k].set(beta)

    vmat, alphas, betas = jax.lax.fori_loop(0, LZ_K, body, (vmat, jnp.zeros(LZ_K), jnp.zeros(LZ_K)))
    t = jnp.diag(alphas) + jnp.diag(betas[:-1], 1) + jnp.diag(betas[:-1], -1)
    ritz = jnp.linalg.eigvalsh(t)
    return ritz, jnp.max(jnp.abs(vmat.T @ vmat - jnp.eye(LZ_K))) < 1e-4, alphas, jnp.linalg.eigvalsh(a)[-3:]


def _krylov(a, b):
    mat = a @ a.T / a.shape[0] + jnp.eye(a.shape[0])
    mv = lambda v: mat @ v
    x_cg, _ = jax.scipy.sparse.linalg.cg(mv, b, tol=1e-6, maxiter=200)
    x_bi, _ = jax.scipy.sparse.linalg.bicgstab(mv, b, tol=1e-6, maxiter=200)
    return x_cg, x_bi, jnp.linalg.norm(mv(x_cg) - b) < 1e-4 * jnp.linalg.norm(b)


def _sinkhorn(x, y):
    n, m = x.shape[0], y.shape[0]
    cost = jnp.sum((x[:, None, :] - y[None, :, :]) ** 2, -1)
    eps = 0.1
    loga, logb = -jnp.log(n) * jnp.ones(n), -jnp.log(m) * jnp.ones(m)

    def body(_, fg):
        f, g = fg
        f = -eps * jax.nn.logsumexp((g[None, :] - cost) / eps + logb[None, :], axis=1)
        g = -eps * jax.nn.logsumexp((f[:, None] - cost) / eps + loga[:, None], axis=0)
        return f, g

    f, g = jax.lax.fori_loop(0, 30, body, (jnp.zeros(n), jnp.zeros(m)))
    plan = jnp.exp((f[:, None] + g[None, :] - cost) / eps + loga[:, None] + logb[None, :])
    return plan, jnp.sum(plan * cost), jnp.sum(plan, 1), f, g


def _ctmc(q_raw, t, p_raw):
    # CTMC generators (rows sum to 0) of a batch: expm(Q t); stochastic matrices' powers.
    q = jnp.abs(q_raw) * (1.0 - jnp.eye(q_raw.shape[-1]))
    q = q - jnp.eye(q.shape[-1]) * jnp.sum(q, -1, keepdims=True)
    pt = jax.vmap(jax.scipy.linalg.expm)(q * t[:, None, None])
    pm = jax.nn.softmax(p_raw, axis=-1)
    p5 = jnp.linalg.matrix_power(pm, 5)
    p64 = jnp.linalg.matrix_power(pm, 64)
    return pt, jnp.sum(pt, -1), p5, p64[:, 0, :]


def _spectral_clustering(x):
    d2 = jnp.sum((x[:, None, :] - x[None, :, :]) ** 2, -1)
    adj = jnp.exp(-d2 / 2.0) * (1.0 - jnp.eye(x.shape[0]))
    deg = jnp.sum(adj, 1)
    dis = 1.0 / jnp.sqrt(deg)
    lap = jnp.eye(x.shape[0]) - dis[:, None] * adj * dis[None, :]
    e, v = jnp.linalg.eigh(lap)
    u = v[:, :3]
    return e, u @ u.T


def _svd_lowrank(a):
    u, s, vt = jnp.linalg.svd(a, full_matrices=False)
    r = 3
    rec = (u[..., :r] * s[..., None, :r]) @ vt[..., :r, :]
    return s, rec, jnp.sum(s, -1), jnp.linalg.norm(a - rec, axis=(1, 2))


def _svd_args():
    rng = np.random.default_rng(7090)
    u = rng.standard_normal((8, 16, 6))
    v = rng.standard_normal((8, 6, 12))
    s = np.array([8, 5, 3, 0.5, 0.3, 0.1])
    return [((u * s) @ v / 4 + 0.01 * rng.standard_normal((8, 16, 12))).astype(np.float32)]


# ==== FFT ========================================================================================
def _fft_conv2d(mesh):
    # H over y for the direct convolution; the FFT path constrains the images to the batch over
    # (x, y) first (XLA:CPU's FFT thunk fails on irfft2 / padded rfft2 with H or W sharded).
    def f(img, ker):
        hh, ww = img.shape[1:]
        kh, kw = ker.shape
        s = (hh + kh - 1, ww + kw - 1)
        ib = _wsc(mesh, img, P(("x", "y"), None, None))
        out = jnp.fft.irfft2(jnp.fft.rfft2(ib, s=s) * jnp.fft.rfft2(ker, s=s), s=s)
        same = out[:, kh // 2:kh // 2 + hh, kw // 2:kw // 2 + ww]
        ref = jax.vmap(lambda im: jax.scipy.signal.convolve2d(im, ker, mode="same"))(img)
        return same, ref
    return f


def _fftn_two(x):
    f = jnp.fft.fftn(x, axes=(1, 2))
    fs = jnp.fft.fftshift(f, axes=(1, 2))
    pw = jnp.abs(fs) ** 2
    ky = jnp.arange(x.shape[1]) - x.shape[1] // 2
    kx = jnp.arange(x.shape[2]) - x.shape[2] // 2
    rad = jnp.sqrt(ky[:, None] ** 2 + kx[None, :] ** 2).astype(jnp.int32)
    radial = jax.vmap(lambda p: jnp.bincount(rad.ravel(), weights=p.ravel(), length=12))(pw)
    back = jnp.fft.ifftn(jnp.fft.ifftshift(fs, axes=(1, 2)), axes=(1, 2)).real
    return pw, radial, back, jnp.angle(f[:, 1, 2])


FNO_MODES = 12


def _fno(u, wr, wi, w, y):
    def layer(ps):
        wr, wi, w = ps
        n = u.shape[1]
        uh = jnp.fft.rfft(u, axis=1)[:, :FNO_MODES]                     # [B, modes, C]
        wc = jax.lax.complex(wr, wi)
        vh = jnp.einsum("bmc,mcd->bmd", uh, wc)
        v = jnp.fft.irfft(vh, n=n, axis=1)
        out = jax.nn.gelu(v + u @ w)
        return jnp.mean((out - y) ** 2)

    return jax.value_and_grad(layer)((wr, wi, w))


def _stft(audio, mel):
    win, hop = 128, 64
    nf = (audio.shape[1] - win) // hop + 1
    idx = jnp.arange(nf)[:, None] * hop + jnp.arange(win)[None, :]
    frames = audio[:, idx] * jnp.hanning(win)                               # [B, F, win]
    spec = jnp.abs(jnp.fft.rfft(frames, axis=-1)) ** 2                      # [B, F, 65]
    logmel = jnp.log(spec @ mel + 1e-6)
    return logmel, logmel - jnp.mean(logmel, axis=1, keepdims=True)


# ==== sorting / selection ========================================================================
def _robust_agg(u):
    med = jnp.median(u, axis=0)
    s = jnp.sort(u, axis=0)
    trimmed = jnp.mean(s[1:-1], axis=0)
    pct = jnp.percentile(u, jnp.array([25.0, 75.0]), axis=0)
    norms = jnp.linalg.norm(u, axis=1, keepdims=True)
    clipped = jnp.mean(u * jnp.minimum(1.0, jnp.median(norms) / norms), axis=0)
    d = jnp.sum((u[:, None] - u[None]) ** 2, -1)
    krum = jnp.sum(jnp.sort(d, axis=1)[:, 1:5], axis=1)
    return med, trimmed, pct, clipped, u[jnp.argmin(krum)]


def _spearman(x, y, t):
    def ranks(a):
        order = jnp.argsort(a, axis=1, descending=True, stable=True)
        iota = jnp.broadcast_to(jnp.arange(a.shape[1]), a.shape)
        return jnp.zeros_like(order).at[jnp.arange(a.shape[0])[:, None], order].set(iota).astype(jnp.float32)

    rx, ry = ranks(x), ranks(y)
    rx, ry = rx - jnp.mean(rx, 1, keepdims=True), ry - jnp.mean(ry, 1, keepdims=True)
    rho = jnp.sum(rx * ry, 1) / jnp.sqrt(jnp.sum(rx ** 2, 1) * jnp.sum(ry ** 2, 1))
    avg = jax.scipy.stats.rankdata(t, method="average", axis=1)
    dense = jax.scipy.stats.rankdata(t, method="dense", axis=1)
    return rho, rx, avg, dense


def _ece(logits, labels):
    p = jax.nn.softmax(logits, axis=-1)
    conf = jnp.max(p, -1)
    correct = (jnp.argmax(p, -1) == labels).astype(jnp.float32)
    edges = jnp.linspace(0.0, 1.0, 16)
    b = jnp.clip(jnp.digitize(conf, edges[1:-1]), 0, 14)
    cnt = jnp.bincount(b, length=15)
    acc = jnp.bincount(b, weights=correct, length=15)
    cs = jnp.bincount(b, weights=conf, length=15)
    ece = jnp.sum(jnp.abs(acc - cs)) / conf.shape[0]
    hist, _ = jnp.histogram(conf, bins=15, range=(0.0, 1.0))
    b2 = jnp.searchsorted(edges, conf, side="right")
    return ece, cnt, acc, hist, b2


def _knn(q, db):
    d = jnp.sum(q ** 2, 1)[:, None] - 2 * q @ db.T + jnp.sum(db ** 2, 1)[None, :]
    idx = jnp.argpartition(d, 4, axis=1)[:, :5]
    vals = jnp.take_along_axis(d, idx, axis=1)
    part = jnp.partition(d, 4, axis=1)[:, 4]
    return jnp.sort(vals, 1), jnp.sort(idx, 1), part


def _sparsemax(z):
    # by sort: tau from the sorted cumulative sum; by bisection in a while_loop.
    zs = jnp.sort(z, axis=-1, descending=True)
    k = jnp.arange(1, z.shape[-1] + 1)
    cs = jnp.cumsum(zs, -1)
    support = 1 + k * zs > cs
    kz = jnp.sum(support, -1, keepdims=True)
    tau = (jnp.take_along_axis(cs, kz - 1, -1) - 1) / kz
    p_sort = jnp.maximum(z - tau, 0.0)

    lo0 = jnp.max(z, -1) - 1.0
    hi0 = jnp.max(z, -1)

    def cond(c):
        lo, hi, it = c
        return (jnp.max(hi - lo) > 1e-6) & (it < 60)

    def body(c):
        lo, hi, it = c
        mid = 0.5 * (lo + hi)
        s = jnp.sum(jnp.maximum(z - mid[:, None], 0.0), -1)
        return jnp.where(s > 1, mid, lo), jnp.where(s > 1, hi, mid), it + 1

    lo, hi, it = jax.lax.while_loop(cond, body, (lo0, hi0, 0))
    p_bis = jnp.maximum(z - (0.5 * (lo + hi))[:, None], 0.0)
    return p_sort, p_bis, kz[:, 0]


def _quantile_loss(pred, y, r):
    qs = jnp.array([0.1, 0.25, 0.5, 0.75, 0.9])
    e = y[:, None] - pred
    pinball = jnp.mean(jnp.maximum(qs * e, (qs - 1) * e), axis=0)
    q_lin = jnp.quantile(r, qs, axis=0)
    q_near = jnp.quantile(r, qs, axis=1, method="nearest", keepdims=True)
    rn = jnp.where(jnp.abs(r) > 1.5, jnp.nan, r)
    q_nan = jnp.nanquantile(rn, 0.5, axis=0)
    q_all = jnp.quantile(r, 0.3, axis=(0, 1))
    return pinball, q_lin, q_near, q_nan, q_all


def _gumbel_topk(logits, key):
    key = jax.random.wrap_key_data(key)
    k1, k2 = jax.random.split(key)
    g = jax.random.gumbel(k1, logits.shape)
    _, idx = jax.lax.top_k(logits / 0.7 + g, 4)
    cat = jax.random.categorical(k2, logits, axis=-1)
    lp = jax.nn.log_softmax(logits, -1)
    return jnp.sort(idx, -1), cat, jnp.sum(jnp.take_along_axis(lp, idx, -1), -1)


# ==== scans ======================================================================================
MB_N = 4


def _mamba(x, a_log, wdt, wb, wc, y):
    def loss(ps):
        a_log, wdt, wb, wc = ps
        dt = jax.nn.softplus(x @ wdt)                                     # [B, L, D]
        a = -jnp.exp(a_log)                                               # [D, N]
        bm, cm = x @ wb, x @ wc                                           # [B, L, N]
        da = jnp.exp(dt[..., None] * a)                                   # [B, L, D, N]
        dbx = (dt * x)[..., None] * bm[:, :, None, :]

        def op(l, r):
            return l[0] * r[0], r[0] * l[1] + r[1]

        _, h = jax.lax.associative_scan(op, (da, dbx), axis=1)
        out = jnp.einsum("bldn,bln->bld", h, cm)
        return jnp.mean((out - y) ** 2)

    return jax.value_and_grad(loss)((a_log, wdt, wb, wc))


def _welford(x):
    n = jnp.ones(x.shape[:1] + (1,) * (x.ndim - 1))
    n = jnp.broadcast_to(n, x.shape)

    def comb(l, r):
        na, ma, m2a = l
        nb, mb, m2b = r
        nn = na + nb
        d = mb - ma
        return nn, ma + d * nb / nn, m2a + m2b + d ** 2 * na * nb / nn

    cnt, mean, m2 = jax.lax.associative_scan(comb, (n, x, jnp.zeros_like(x)), axis=0)
    return mean, m2 / cnt, jnp.cumsum(x, 0) / cnt


def _drawdown(r):
    logp = jnp.cumsum(r, axis=1)
    peak = jax.lax.cummax(logp, axis=1)
    dd = logp - peak
    trough = jax.lax.cummin(logp, axis=1, reverse=True)
    growth = jax.lax.cumprod(1.0 + 0.1 * r, axis=1)
    rlse = jax.lax.cumlogsumexp(r, axis=1, reverse=True)
    return dd, jnp.min(dd, 1), trough, growth, rlse


def _conv1d_modes(sig, k, k2):
    outs = [jnp.convolve(sig, k, mode=m) for m in ("full", "same", "valid")]
    outs += [jnp.correlate(sig, k2, mode=m) for m in ("full", "same", "valid")]
    return tuple(outs)


def _convolve2d(img, k):
    c = jax.scipy.signal.convolve2d
    r = jax.scipy.signal.correlate2d
    return c(img, k, mode="same"), c(img, k, mode="full"), r(img, k, mode="valid"), \
        jax.scipy.signal.convolve(img, k, mode="same", method="direct")


VS = 8


def _viterbi_crf(em, trans, tags):
    # em [B, T, S] with the states sharded; forward algorithm (log Z), Viterbi decode, CRF nll grad.
    def logz(trans):
        def step(alpha, e):
            return jax.nn.logsumexp(alpha[:, :, None] + trans[None], axis=1) + e, None
        alpha, _ = jax.lax.scan(step, em[:, 0], jnp.swapaxes(em[:, 1:], 0, 1))
        return jax.nn.logsumexp(alpha, -1)

    def gold(trans):
        e = jnp.sum(jnp.take_along_axis(em, tags[..., None], -1)[..., 0], -1)
        return e + jnp.sum(trans[tags[:, :-1], tags[:, 1:]], -1)

    nll_fn = lambda tr: jnp.mean(logz(tr) - gold(tr))
    nll, gtr = jax.value_and_grad(nll_fn)(trans)

    def vstep(score, e):
        cand = score[:, :, None] + trans[None]
        return jnp.max(cand, 1) + e, jnp.argmax(cand, 1)

    score, bp = jax.lax.scan(vstep, em[:, 0], jnp.swapaxes(em[:, 1:], 0, 1))
    last = jnp.argmax(score, -1)

    def back(tag, b):
        prev = jnp.take_along_axis(b, tag[:, None], 1)[:, 0]
        return prev, prev

    _, path = jax.lax.scan(back, last, bp, reverse=True)
    path = jnp.concatenate([jnp.swapaxes(path, 0, 1), last[:, None]], 1)
    return nll, gtr, path, jnp.max(score, -1)


def _stacked_rnn(ws, us, x, y):
    # scan over 3 stacked layers, each a scan over time: x [T, B, D].
    def loss(ps):
        ws, us = ps

        def layer(h_seq, wu):
            w, u = wu

            def cell(h, xt):
                h = jnp.tanh(xt @ w + h @ u)
                return h, h
            _, out = jax.lax.scan(cell, jnp.zeros(h_seq.shape[1:]), h_seq)
            return out, jnp.mean(out ** 2)

        out, aux = jax.lax.scan(layer, x, (ws, us))
        return jnp.mean((out[-1] - y) ** 2) + 0.01 * jnp.sum(aux)

    return jax.value_and_grad(loss)((ws, us))


def _chunked_attn(q, k, v):
    # memory-efficient attention: lax.map over query chunks (the sharded sequence split into 4).
    b, t, d = q.shape
    qc = jnp.moveaxis(q.reshape(b, 4, t // 4, d), 1, 0)

    def chunk(qi):
        s = jnp.einsum("bqd,bkd->bqk", qi, k) / np.sqrt(d)
        return jax.nn.softmax(s, -1) @ v

    out = jax.lax.map(chunk, qc)
    return jnp.moveaxis(out, 0, 1).reshape(b, t, d)


# ==== reductions =================================================================================
def _masked_pool(h, lengths):
    t = h.shape[1]
    mask = jnp.arange(t)[None, :] < lengths[:, None]                     # [B, T]
    m3 = mask[..., None]
    mean = jnp.mean(h, axis=1, where=m3)
    mx = jnp.max(h, axis=1, where=m3, initial=-1e9)
    mn = jnp.min(h, axis=1, where=m3, initial=1e9)
    s = jnp.sum(h, axis=1, keepdims=True, where=m3)
    avg, wsum = jnp.average(h, axis=1, weights=jnp.broadcast_to(m3, h.shape).astype(h.dtype), returned=True)
    hn = jnp.where(m3, h, jnp.nan)
    return mean, mx, mn, s, avg, wsum, jnp.nanmean(hn, 1), jnp.nanvar(hn, 1), jnp.nanstd(hn, 1, ddof=1), \
        jnp.any(h > 2.5, axis=1, where=m3), jnp.prod(1 + 0.1 * h, axis=1, where=m3)


def _masked_lse(s, w, keep):
    mask = keep > 0
    sm = jax.nn.softmax(s, axis=-1, where=mask)
    lse = jax.nn.logsumexp(s, axis=-1, where=mask)
    lseb, sign = jax.nn.logsumexp(s, axis=-1, b=w, where=mask, return_sign=True)
    lsm = jax.nn.log_softmax(s, axis=-1, where=mask)
    return jnp.where(mask, sm, 0.0), lse, lseb, sign, jnp.where(mask, lsm, 0.0)


def _packed_segments(x, starts):
    seg = jnp.cumsum(starts) - 1
    ns = 16
    tot = jax.ops.segment_sum(x, seg, ns, indices_are_sorted=True)
    cnt = jax.ops.segment_sum(jnp.ones(x.shape[0]), seg, ns, indices_are_sorted=True)
    mx = jax.ops.segment_max(x, seg, ns, indices_are_sorted=True)
    mean = tot / jnp.maximum(cnt, 1)[:, None]
    var = jax.ops.segment_sum((x - mean[seg]) ** 2, seg, ns, indices_are_sorted=True) / jnp.maximum(cnt, 1)[:, None]
    normed = (x - mean[seg]) / jnp.sqrt(var[seg] + 1e-5)
    pos = jnp.arange(x.shape[0]) - jax.ops.segment_min(jnp.arange(x.shape[0]), seg, ns, indices_are_sorted=True)[seg]
    return tot, cnt, jnp.where(cnt[:, None] > 0, mx, 0.0), normed, pos


def _packed_args():
    rng = np.random.default_rng(7290)
    starts = np.zeros(104, np.int32)
    starts[np.sort(rng.choice(np.arange(1, 100), 11, replace=False))] = 1
    starts[0] = 1
    return [_rand((104, 8), 7291), starts]


def _token_stats(ids, x):
    cnt = jnp.bincount(ids.ravel(), length=50)
    p = cnt / ids.size
    ent = -jnp.sum(jnp.where(p > 0, p * jnp.log(p), 0.0))
    hist, edges = jnp.histogram(x, bins=10, range=(-3.0, 3.0))
    uv, uc = jnp.unique_counts(ids.ravel(), size=50, fill_value=-1)
    per_row = jax.vmap(lambda r: jnp.bincount(r, length=50))(ids)
    return cnt, ent, hist, uv, uc, jnp.max(per_row, 0), jnp.count_nonzero(ids == 7, axis=1)


# ==== dtypes =====================================================================================
def _w8a8(x, wq, wscale):
    s = jnp.max(jnp.abs(x), axis=1, keepdims=True) / 127.0
    xq = jnp.clip(jnp.round(x / s), -127, 127).astype(jnp.int8)
    acc = jax.lax.dot_general(xq, wq, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
    y = acc.astype(jnp.float32) * s * wscale[None, :]
    ref = x @ (wq.astype(jnp.float32) * wscale[None, :])
    return acc, y, jnp.max(jnp.abs(y - ref)), jnp.sum(xq.astype(jnp.int32), axis=0)


def _bf16_rms_swiglu(x, g, w1, w3, w2):
    xf = x.astype(jnp.float32)
    h = (xf * jax.lax.rsqrt(jnp.mean(xf ** 2, -1, keepdims=True) + 1e-6)).astype(jnp.bfloat16) * g
    a = jax.nn.silu(h @ w1) * (h @ w3)
    out = x + a @ w2
    return out, jnp.mean(out.astype(jnp.float32) ** 2)


def _f16_xent(x, w, labels):
    logits = x @ w
    lp = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(lp, labels[:, None], axis=-1)[:, 0]
    z = jax.nn.logsumexp(logits.astype(jnp.float32), axis=-1)
    return nll, jnp.mean(nll.astype(jnp.float32)), jnp.mean(z ** 2), jnp.argmax(logits, -1)


def _fmix32(h):
    h = h ^ (h >> 16)
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> 13)
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> 16)


def _hash_embed(ids, table):
    u = ids.astype(jnp.uint32)
    h1 = _fmix32(u ^ np.uint32(0x9747B28C))
    h2 = _fmix32((u << 7 | u >> 25) + np.uint32(0x5BD1E995))
    b1 = (h1 % np.uint32(127)).astype(jnp.int32)
    b2 = (h2 % np.uint32(127)).astype(jnp.int32)
    sign = jnp.where((h1 >> 31) == 1, -1.0, 1.0)
    emb = table[b1] * sign[..., None] + table[b2]
    pc = jax.lax.population_count(h1)
    lz = jax.lax.clz(h2)
    return jnp.sum(emb, 1), pc, lz, jnp.sum(h1 ^ h2, axis=1), jnp.max(h1, axis=0)


def _complex_rope(q, k, pos):
    d = q.shape[-1]
    freqs = 1.0 / (10000 ** (jnp.arange(0, d, 2) / d))
    ang = pos[:, None].astype(jnp.float32) * freqs[None, :]                # [T, d/2]
    rot = jnp.exp(1j * ang.astype(jnp.complex64))
    qc = jax.lax.complex(q[..., 0::2], q[..., 1::2]) * rot[None, :, None, :]
    kc = jax.lax.complex(k[..., 0::2], k[..., 1::2]) * rot[None, :, None, :]
    qr = jnp.stack([qc.real, qc.imag], -1).reshape(q.shape)
    kr = jnp.stack([kc.real, kc.imag], -1).reshape(k.shape)
    s = jnp.einsum("bqhd,bkhd->bhqk", qr, kr)
    herm = jnp.einsum("bqhd,bkhd->bhqk", qc, jnp.conj(kc))
    return s, herm.real, jnp.abs(qc), jnp.angle(qc * jnp.conj(kc))


@jax.custom_vjp
def _ste_round(x):
    return jnp.round(x)


def _ste_fwd(x):
    return jnp.round(x), None


def _ste_bwd(_, g):
    return (g,)


_ste_round.defvjp(_ste_fwd, _ste_bwd)


def _lsq_fake_quant(w, step, x, iw):
    def loss(ps):
        w, step = ps
        qw = _ste_round(jnp.clip(w / step, -8, 7)) * step
        return jnp.mean((x @ qw) ** 2)

    l, (gw, gs) = jax.value_and_grad(loss)((w, step))
    r2 = jnp.round(x, 2)
    fd = jnp.floor_divide(x, 0.3)
    rm = jnp.remainder(x, -0.7)
    fm = jnp.fmod(x, 0.7)
    na = jnp.nextafter(x, jnp.inf) - x
    rp = jax.lax.reduce_precision(x, exponent_bits=4, mantissa_bits=3)
    ip = iw ** 3 + jax.lax.integer_pow(iw, 2) - jnp.floor_divide(iw, -3) * jnp.remainder(iw, -3)
    return l, gw, gs, jnp.round(x * 4.0) / 4.0, r2, fd, rm, fm, na, rp, ip


# ==== autodiff ===================================================================================
def _newton_logreg(x, y, w0):
    def loss(w):
        z = x @ w
        return jnp.mean(jax.nn.softplus(z) - y * z) + 0.05 * jnp.sum(w ** 2)

    w = w0
    ls = []
    for _ in range(3):
        g = jax.grad(loss)(w)
        h = jax.hessian(loss)(w)
        w = w - jnp.linalg.solve(h, g)
        ls.append(loss(w))
    return w, jnp.stack(ls), jax.hessian(loss)(w)


def _lm_fit(t, obs, p0):
    def resid(p):
        return p[0] * jnp.exp(-p[1] * t) * jnp.sin(p[2] * t + p[3]) + p[4] - obs

    p = p0
    lam = 1e-2
    costs = []
    for _ in range(4):
        r = resid(p)
        j = jax.jacfwd(resid)(p)
        jtj = j.T @ j
        step = jnp.linalg.solve(jtj + lam * jnp.diag(jnp.diag(jtj)), j.T @ r)
        p = p - step
        costs.append(0.5 * jnp.sum(resid(p) ** 2))
    jr = jax.jacrev(resid)(p)
    return p, jnp.stack(costs), jr


def _lm_args():
    t = np.linspace(0, 6, 48).astype(np.float32)
    true = np.array([2.0, 0.4, 1.5, 0.3, 0.5], np.float32)
    obs = true[0] * np.exp(-true[1] * t) * np.sin(true[2] * t + true[3]) + true[4]
    obs = (obs + 0.02 * np.random.default_rng(7500).standard_normal(48)).astype(np.float32)
    return [t, obs, np.array([1.8, 0.5, 1.45, 0.2, 0.4], np.float32)]


def _dp_sgd(w1, w2, x, y, key):
    def loss(ps, xi, yi):
        w1, w2 = ps
        return jnp.sum((jnp.tanh(xi @ w1) @ w2 - yi) ** 2)

    per = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))((w1, w2), x, y)
    norms = jnp.sqrt(sum(jnp.sum(g.reshape(g.shape[0], -1) ** 2, 1) for g in per))
    scale = jnp.minimum(1.0, 1.0 / (norms + 1e-6))
    k = jax.random.wrap_key_data(key)
    k1, k2 = jax.random.split(k)
    noisy = []
    for g, kk in zip(per, (k1, k2)):
        s = jnp.sum(g * scale.reshape((-1,) + (1,) * (g.ndim - 1)), 0)
        noisy.append((s + 0.5 * jax.random.normal(kk, s.shape)) / x.shape[0])
    return norms, w1 - 0.1 * noisy[0], w2 - 0.1 * noisy[1]


def _maml(w, xs, ys, xq, yq):
    def inner_loss(w, x, y):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    def adapted(w, x, y):
        return w - 0.5 * jax.grad(inner_loss)(w, x, y)

    def outer(w):
        per_task = jax.vmap(lambda a, b, c, d: inner_loss(adapted(w, a, b), c, d))(xs, ys, xq, yq)
        return jnp.mean(per_task)

    l, g = jax.value_and_grad(outer)(w)
    return l, g, w - 0.1 * g


def _node(w1, w2, x0, y):
    def f(h, ps):
        w1, w2 = ps
        return jnp.tanh(h @ w1) @ w2

    def loss(ps):
        dt = 0.1

        def rk4(_, h):
            k1 = f(h, ps)
            k2 = f(h + 0.5 * dt * k1, ps)
            k3 = f(h + 0.5 * dt * k2, ps)
            k4 = f(h + dt * k3, ps)
            return h + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

        h = jax.lax.fori_loop(0, 6, rk4, x0)
        return jnp.mean((h - y) ** 2)

    return jax.value_and_grad(loss)((w1, w2))


def _grad_sort_ops(x, w, v, idx):
    def loss(x):
        s = jnp.sort(x, axis=1)
        tv, _ = jax.lax.top_k(x, 5)
        c = jnp.cumsum(x, axis=1)
        gth = jnp.take(x, idx, axis=1)
        rc = jnp.cumsum(x[:, ::-1], axis=1)
        return jnp.sum(s * w) + jnp.sum(tv ** 2) + jnp.sum(c * v) + jnp.sum(gth ** 3) + jnp.sum(jnp.sin(rc))

    return jax.value_and_grad(loss)(x)


# ==== control flow / vmap ========================================================================
def _vmap_cond_switch(x, w, flags, br):
    def per(xi, fi, bi):
        a = jax.lax.cond(fi > 0, lambda v: jnp.tanh(v @ w), lambda v: v * 2.0 - 1.0, xi)
        b = jax.lax.switch(bi, [lambda v: jnp.sin(v), lambda v: v @ w @ w.T, lambda v: jnp.cumsum(v)], xi)
        return a, b

    return jax.vmap(per)(x, flags, br)


def _crops(imgs, offs, flip, idx):
    def one(im, o, fl, ix):
        c = jax.lax.dynamic_slice(im, (o[0], o[1], 0), (10, 10, 3))
        c = jnp.where(fl > 0, c[:, ::-1], c)
        row = jnp.take(im[0, :, 0], ix)
        return c, row

    return jax.vmap(one)(imgs, offs, flip, idx)


def _crops_args():
    rng = np.random.default_rng(7700)
    return [_rand((8, 16, 16, 3), 7701), rng.integers(0, 7, (8, 2)).astype(np.int32),
            rng.integers(0, 2, (8,)).astype(np.int32), rng.integers(0, 16, (8, 5)).astype(np.int32)]


def _ensemble(mesh):
    def f(w1, w2, x, y):
        def member(w1, w2):
            def loss(ps):
                w1, w2 = ps
                h = jax.nn.relu(x @ w1)
                h = _wsc(mesh, h, P(None, "y"))
                return jnp.mean((h @ w2 - y) ** 2)
            return jax.value_and_grad(loss)((w1, w2))

        l, (g1, g2) = jax.vmap(member, spmd_axis_name="x")(w1, w2)
        return l, w1 - 0.1 * g1, w2 - 0.1 * g2, jnp.var(l)
    return f


def _kmeans(x, c0):
    k = c0.shape[0]

    def step(_, c):
        cc, _inertia = c
        d2 = jnp.sum((x[:, None, :] - cc[None]) ** 2, -1)
        a = jnp.argmin(d2, 1)
        s = jax.ops.segment_sum(x, a, k)
        n = jax.ops.segment_sum(jnp.ones(x.shape[0]), a, k)
        new = jnp.where(n[:, None] > 0, s / jnp.maximum(n, 1)[:, None], cc)
        return new, jnp.sum(jnp.min(d2, 1))

    c, inertia = jax.lax.fori_loop(0, 4, step, (c0, jnp.float32(0)))
    assign = jnp.argmin(jnp.sum((x[:, None, :] - c[None]) ** 2, -1), 1)
    return c, inertia, assign


def _kmeans_args():
    rng = np.random.default_rng(7800)
    centers = rng.standard_normal((6, 4)) * 4
    x = centers[rng.integers(0, 6, 104)] + rng.standard_normal((104, 4)) * 0.5
    return [x.astype(np.float32), (centers + 0.7 * rng.standard_normal((6, 4))).astype(np.float32)]


def _mixup(w, x, y, key):
    k = jax.random.wrap_key_data(key)
    k1, k2, k3 = jax.random.split(k, 3)
    perm = jax.random.permutation(k1, x.shape[0])
    lam = jax.random.beta(k2, 0.4, 0.4, (x.shape[0], 1))
    xm = lam * x + (1 - lam) * x[perm]
    yh = jax.nn.one_hot(y, 10)
    ym = lam * yh + (1 - lam) * yh[perm]
    keep = jax.random.bernoulli(k3, 0.9, xm.shape)
    xd = jnp.where(keep, xm / 0.9, 0.0)

    def loss(w):
        return -jnp.mean(jnp.sum(ym * jax.nn.log_softmax(xd @ w), -1))

    l, g = jax.value_and_grad(loss)(w)
    return l, w - 0.1 * g, perm, lam


def _rff(x, y, xt, key):
    k = jax.random.wrap_key_data(key)
    k1, k2 = jax.random.split(k)
    f = 64
    om = jax.random.normal(k1, (x.shape[1], f)) / 0.8
    b = jax.random.uniform(k2, (f,), maxval=2 * np.pi)
    phi = lambda z: np.sqrt(2.0 / f) * jnp.cos(z @ om + b)
    px = phi(x)
    a = px.T @ px + 0.1 * jnp.eye(f)
    wt = jnp.linalg.solve(a, px.T @ y)
    return phi(xt) @ wt, jnp.mean((px @ wt - y) ** 2)


# ==== sharded core dims, uneven sizes and less common APIs =======================================
def _linalg_core(a, b):
    # one 20 x 20 matrix (uneven) with both dims sharded over 4 x 4: the factorisations' own dims.
    n = a.shape[0]
    spd = a @ a.T / n + jnp.eye(n)
    l = jnp.linalg.cholesky(spd)
    q, r = jnp.linalg.qr(a)
    w = jnp.linalg.eigvalsh(spd)
    sv = jnp.linalg.svd(a, compute_uv=False)
    x = jnp.linalg.solve(spd, b)
    return l, jnp.abs(jnp.diagonal(r)), q @ r, w, sv, x, jnp.linalg.inv(spd) @ b, jnp.linalg.slogdet(spd)[1]


def _topk_16(logits):
    v, i = jax.lax.top_k(logits, 8)
    lp = jax.nn.log_softmax(logits, -1)
    srt = jnp.sort(logits, axis=-1, descending=True)[:, :10]
    order = jnp.argsort(logits, axis=-1, stable=True)[:, -10:]
    return v, i, jnp.argmax(logits, -1), jnp.take_along_axis(lp, i, -1), srt, order, jnp.argmin(logits, -1)


def _affine_scan(a, b, c):
    # compositions of affine maps x -> A x + b, reverse associative scan over 50 steps on 8.
    def op(l, r):
        return jnp.einsum("tij,tjk->tik", r[0], l[0]), jnp.einsum("tij,tj->ti", r[0], l[1]) + r[1]

    am, bm = jax.lax.associative_scan(op, (a, b), axis=0, reverse=True)
    fm, fb = jax.lax.associative_scan(op, (a, b), axis=0)
    return am, bm, fm, fb, jax.lax.cumsum(c, axis=0, reverse=True), jax.lax.cummax(c, axis=0, reverse=True)


def _lambertw(y):
    # W(y): w e^w = y by Halley's method in a while_loop until every element has converged.
    def cond(c):
        w, d, it = c
        return (jnp.max(jnp.abs(d)) > 1e-6) & (it < 50)

    def body(c):
        w, _, it = c
        ew = jnp.exp(w)
        f = w * ew - y
        d = f / (ew * (w + 1) - (w + 2) * f / (2 * w + 2))
        return w - d, d, it + 1

    w0 = jnp.log1p(y)
    w, d, it = jax.lax.while_loop(cond, body, (w0, jnp.ones_like(y), 0))
    return w, jnp.max(jnp.abs(w * jnp.exp(w) - y) / y) < 1e-4


def _median_filter(x):
    # running median / max / min of 5 along a 50-step time dim over (y, x) = 8 (uneven).
    pad = jnp.pad(x, ((0, 0), (2, 2)), mode="edge")
    t = x.shape[1]
    stack = jnp.stack([pad[:, i:i + t] for i in range(5)], 0)
    med = jnp.median(stack, axis=0)
    mx = jax.lax.reduce_window(pad, -jnp.inf, jax.lax.max, (1, 5), (1, 1), "VALID")
    mn = jnp.min(stack, axis=0)
    return med, mx, mn, jnp.sort(x, axis=1), jnp.argsort(-x, axis=1, stable=True)


def _tridiag(dl, d, du, b):
    dl = dl.at[:, 0].set(0.0)
    du = du.at[:, -1].set(0.0)
    d = jnp.abs(d) + jnp.abs(dl) + jnp.abs(du) + 1.0
    x = jax.lax.linalg.tridiagonal_solve(dl, d, du, b)
    m = d.shape[-1]
    dense = (jax.vmap(jnp.diag)(d) + jax.vmap(lambda v: jnp.diag(v[1:], -1))(dl)
             + jax.vmap(lambda v: jnp.diag(v[:-1], 1))(du))
    return x, jnp.linalg.solve(dense, b), jnp.eye(m)[0] @ dense[0]


def _eigh_tridiag(d, e):
    ev = jax.vmap(lambda dd, ee: jax.scipy.linalg.eigh_tridiagonal(dd, ee[:-1], eigvals_only=True))(d, e)
    dense = (jax.vmap(jnp.diag)(d) + jax.vmap(lambda v: jnp.diag(v[:-1], -1))(e)
             + jax.vmap(lambda v: jnp.diag(v[:-1], 1))(e))
    return ev, jnp.linalg.eigvalsh(dense)


def _polar(a):
    u, p = jax.scipy.linalg.polar(a, side="right", method="qdwh")
    u2, p2 = jax.scipy.linalg.polar(a, side="left", method="svd")
    return u, p, u2, p2


def _welch(x):
    f, pxx = jax.scipy.signal.welch(x, fs=100.0, nperseg=32, axis=-1)
    _, _, zxx = jax.scipy.signal.stft(x, nperseg=32, noverlap=16, axis=-1)
    _, xr = jax.scipy.signal.istft(zxx, nperseg=32, noverlap=16)
    _, cxy = jax.scipy.signal.csd(x, x[::-1], nperseg=32)
    return f, pxx, jnp.abs(zxx), xr, jnp.abs(cxy)


def _int8_conv(x, w, scale):
    acc = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                       preferred_element_type=jnp.int32)
    return acc, jnp.max(acc, axis=(1, 2)), acc.astype(jnp.float32) * scale


def probe7a_programs():
    ps = []

    def add(name, *a, **kw):
        ps.append(Program("p7a_" + name, *a, **kw))

    # ---- linear algebra --------------------------------------------------------------------------
    add("gp_posterior_chol", "GP posterior: RBF kernels, cholesky, cho_solve, solve_triangular, log ML; batch over x, points over y",
        _plain(_gp_posterior), M24, XY, [P("x", "y", None), P("x", "y"), P("x", "y", None), P("x"), P("x")], None,
        lambda: [_rand((4, GP_N, 3), 7003), _rand((4, GP_N), 7004), _rand((4, GP_M, 3), 7005),
                 _rand((4,), 7006, scale=0.2), _rand((4,), 7007, scale=0.3) - 2.0])
    add("kalman_scan_uneven", "Kalman filter scan (predict / update, solve, slogdet) over 12 filters on 8 (uneven)",
        _cut(_kalman, [None, None, None, None, (12,), (12,)], [None, None, None, None, P("x"), P("x")]), M8, AX,
        [P(), P(), P(), P(), P("x"), P("x")], None, _kalman_args)
    add("pca_eigh_rows", "PCA: covariance contracting 96 rows over 8, eigh, top-3 projector, |scores|, reconstruction",
        _plain(_pca), M8, AX, [P("x", None)], None, _pca_args)
    add("spectral_norm_grad", "spectral norm by power iteration (fori_loop, stop_gradient) in a loss, grad, W over 2 x 4",
        _plain(_spectral_norm), M24, XY, [P("x", "y"), P("x"), P(None, "x"), P(None, "y")], None,
        lambda: [_rand((64, 32), 7020, scale=0.2), _rand((64,), 7021), _rand((16, 64), 7022), _rand((16, 32), 7023)])
    add("muon_newton_schulz_44", "Muon: momentum, 5 Newton-Schulz quintic steps on a [64,48] gradient over 4 x 4, update",
        _plain(_muon), M44, XY, [P("x", "y"), P("x", "y"), P("x", "y")], None,
        lambda: [_rand((64, 48), 7024, scale=0.1), _rand((64, 48), 7025, scale=0.05), _rand((64, 48), 7026)])
    add("shampoo_inv_root", "Shampoo: G G^T / G^T G stats over 2 x 4 contractions, eigh inverse 4th roots, preconditioned step",
        _plain(_shampoo), M24, XY, [P("x", "y"), P("x", None), P("y", None), P("x", "y")], None,
        lambda: [_rand((32, 24), 7027), np.eye(32, dtype=np.float32), np.eye(24, dtype=np.float32),
                 _rand((32, 24), 7028)])
    add("gmm_estep_chol", "GMM E/M step: per-component cholesky, solve_triangular Mahalanobis, mvn logpdf, lse over K; N over x",
        _plain(_gmm_estep), M42, XY, [P("x", None), P("y", None), P("y", None, None), P("y")], None,
        lambda: [_rand((40, GD), 7029, scale=2.0), _rand((GK, GD), 7032, scale=2.0), _rand((GK, GD, GD), 7033),
                 _rand((GK,), 7034, scale=0.3)])
    add("ridge_uneven_rows", "ridge regression over 100 rows on 8 (uneven): scipy solve assume_a=pos, R^2, norms ord 1/2/inf/-inf/3/0",
        _cut(_ridge, [(100,), (100,)], [P("x", None), P("x")]), M8, AX, [P("x", None), P("x")], None, _ridge_args)
    add("glow_invconv_222", "Glow 1x1 invertible conv: LU-parametrised W, einsum over channels, slogdet, inv, 2x2x2",
        _plain(_glow), M222, XYZ, [P("x", "y", "z", None), P(), P(), P()], None,
        lambda: [_rand((4, 8, 8, 8), 7035), _rand((8, 8), 7036, scale=0.3), _rand((8, 8), 7037, scale=0.3),
                 _rand((8,), 7038, scale=0.2)])
    add("tri_solve_variants_222", "solve_triangular lower/upper, trans 1/'T', unit diagonal, right side; rhs columns over (y,z)",
        _plain(_tri_solves), M222, XYZ, [P(("x", "y", "z")), P("x", None, ("y", "z")), P("x", ("y", "z"), None)], None,
        lambda: [_rand((8, 6, 6), 7039, scale=0.5), _rand((8, 6, 8), 7040), _rand((8, 8, 6), 7041)])
    add("lanczos_fori_dus", "Lanczos, full reorthogonalisation, basis written by dynamic_update_slice in fori_loop, 2 x 4",
        _plain(_lanczos), M24, XY, [P("x", "y"), P("x")], None,
        lambda: [_rand((LZ_N, LZ_N), 7042), _rand((LZ_N,), 7043)])
    add("cg_bicgstab", "scipy.sparse.linalg cg and bicgstab (while_loop) of an SPD matrix over 4 x 2",
        _plain(_krylov), M42, XY, [P("x", "y"), P("x")], None, lambda: [_rand((48, 48), 7044), _rand((48,), 7045)])
    add("sinkhorn_uneven", "log-domain Sinkhorn (fori_loop, logsumexp over both dims) on a 30 x 13 cost, 4 x 2 (uneven)",
        _cut(_sinkhorn, [(30,), (13,)], [P("x", None), P("y", None)]), M42, XY, [P("x", None), P("y", None)], None,
        lambda: [_rand((32, 3), 7046), _rand((14, 3), 7047) + 0.5])
    add("ctmc_expm_2222", "CTMC expm(Q t) by vmap, matrix_power 5 / 64 of stochastic matrices, 2x2x2x2",
        _plain(_ctmc), M2222, ABCD, [P(("a", "b"), "c", "d"), P(("a", "b")), P(("a", "b"), "c", "d")], None,
        lambda: [_rand((4, 8, 8), 7048, scale=0.5), np.abs(_rand((4,), 7049)) + 0.2, _rand((4, 8, 8), 7050)])
    add("spectral_clustering", "normalised Laplacian of an RBF graph over 4 x 2, eigh, eigenvalues and top-3 projector",
        _plain(_spectral_clustering), M42, XY, [P("x", "y")], None, lambda: [_rand((24, 2), 7051, scale=1.5)])
    add("svd_lowrank", "batched SVD full_matrices=False, rank-3 reconstruction, nuclear norm, batch over x, rows over y",
        _plain(_svd_lowrank), M42, XY, [P("x", "y", None)], None, _svd_args)

    # ---- FFT -------------------------------------------------------------------------------------
    add("fft_conv2d", "FFT convolution (rfft2 / irfft2 with s=) after a reshard H over y -> batch over (x,y), vs convolve2d",
        _fft_conv2d, M24, XY, [P("x", "y", None), P()], None,
        lambda: [_rand((8, 16, 16), 7100), _rand((5, 5), 7101, scale=0.3)])
    add("fftn_two_sharded", "fftn over two sharded dims (4 x 2), fftshift, radial power spectrum by bincount, ifftn",
        _plain(_fftn_two), M42, XY, [P(None, "x", "y")], None, lambda: [_rand((3, 16, 12), 7102)])
    add("fno_layer_grad", "Fourier neural operator layer: rfft of the grid over 8, complex modes weights, irfft, grad",
        _plain(_fno), M8, AX, [P(None, "x", None), P(), P(), P(), P(None, "x", None)], None,
        lambda: [_rand((4, 64, 8), 7103), _rand((FNO_MODES, 8, 8), 7104, scale=0.2),
                 _rand((FNO_MODES, 8, 8), 7105, scale=0.2), _rand((8, 8), 7106, scale=0.3), _rand((4, 64, 8), 7107)])
    add("stft_logmel", "STFT (frames gathered from samples over 8, hann, rfft), mel matmul, log, per-bin normalisation",
        _plain(_stft), M8, AX, [P(None, "x"), P()], None,
        lambda: [_rand((2, 1024), 7108), np.abs(_rand((65, 16), 7109))])

    # ---- sorting / selection -----------------------------------------------------------------------
    add("robust_aggregate", "federated robust aggregation over 8 clients on 8: median, trimmed mean, percentiles, clip, Krum",
        _plain(_robust_agg), M8, AX, [P("x", None)], None, lambda: [_rand((8, 40), 7200)])
    add("spearman_rank_44", "Spearman: descending stable argsort, rank scatter, rankdata average / dense with ties, 4 x 4",
        _plain(_spearman), M44, XY, [P("x", "y"), P("x", "y"), P("x", "y")], None,
        lambda: [_rand((8, 24), 7201), _rand((8, 24), 7202),
                 np.random.default_rng(7203).integers(0, 6, (8, 24)).astype(np.float32)], quick=True)
    add("ece_calibration", "calibration error: softmax over y, digitize, bincount(length, weights), histogram, searchsorted, 4 x 2",
        _plain(_ece), M42, XY, [P("x", "y"), P("x")], None,
        lambda: [_rand((64, 10), 7204, scale=2.0), _ids((64,), 10, 7205)])
    add("knn_argpartition", "k-NN: distances queries over x, database over y, argpartition / partition kth=4, sorted, 2 x 4",
        _plain(_knn), M24, XY, [P("x", None), P("y", None)], None,
        lambda: [_rand((16, 8), 7206), _rand((40, 8), 7207)])
    add("sparsemax_sort_bisect", "sparsemax by descending sort + cumsum and by bisection in a while_loop; classes over y",
        _plain(_sparsemax), M24, XY, [P("x", "y")], None, lambda: [_rand((8, 20), 7208, scale=1.5)])
    add("quantile_loss", "pinball loss, quantile linear over sharded dim 0, nearest keepdims, nanquantile, axis=(0,1), 2 x 4",
        _plain(_quantile_loss), M24, XY, [P("x", None), P("x"), P("x", "y")], None,
        lambda: [_rand((16, 5), 7209), _rand((16,), 7210), _rand((16, 12), 7211)])
    add("gumbel_topk_key", "Gumbel top-k sampling without replacement and categorical from a key, vocab over y, 2 x 4",
        _plain(_gumbel_topk), M24, XY, [P("x", "y"), P()], None, lambda: [_rand((4, 64), 7212), _key(7213)])

    # ---- scans -----------------------------------------------------------------------------------
    add("mamba_assoc_scan_grad", "Mamba selective scan by associative_scan along the time dim over y, grad, batch over x",
        _plain(_mamba), M24, XY, [P("x", "y", None), P(), P(), P(), P(), P("x", "y", None)], None,
        lambda: [_rand((2, 32, 8), 7300, scale=0.5), _rand((8, MB_N), 7301, scale=0.3), _rand((8, 8), 7302, scale=0.3),
                 _rand((8, MB_N), 7303, scale=0.3), _rand((8, MB_N), 7304, scale=0.3), _rand((2, 32, 8), 7305)])
    add("welford_assoc_scan", "running mean / variance by a 3-component (count, mean, M2) associative_scan over 8",
        _plain(_welford), M8, AX, [P("x", None)], None, lambda: [_rand((64, 6), 7306) + 3.0])
    add("drawdown_cum_uneven", "cumsum, cummax drawdown, reverse cummin, cumprod, reverse cumlogsumexp; 50 steps over 4 (uneven)",
        _cut(_drawdown, [(8, 50)], [P("y", "x")]), M42, XY, [P("y", "x")], None,
        lambda: [_rand((8, 52), 7307, scale=0.1)])
    add("convolve1d_modes_uneven", "jnp.convolve / correlate full / same / valid of a 100-sample signal over 8 (uneven)",
        _cut(_conv1d_modes, [(100,), None, None], [P("x"), None, None]), M8, AX, [P("x"), P(), P()], None,
        lambda: [_rand((104,), 7308), _rand((7,), 7309), _rand((4,), 7310)])
    add("convolve2d_scipy", "scipy.signal convolve2d same / full, correlate2d valid, convolve direct; 21 x 22 over 2 x 4 (uneven)",
        _cut(_convolve2d, [(21, 22), None], [P("x", "y"), None]), M24, XY, [P("x", "y"), P()], None,
        lambda: [_rand((22, 24), 7311), _rand((3, 5), 7312)])
    add("viterbi_crf_grad", "CRF: forward algorithm (lse scan), nll grad wrt transitions, Viterbi + backtrace; states over y",
        _plain(_viterbi_crf), M24, XY, [P("x", None, "y"), P(None, "y"), P("x", None)], None,
        lambda: [_rand((4, 12, VS), 7313), _rand((VS, VS), 7314, scale=0.5), _ids((4, 12), VS, 7315)])
    add("stacked_rnn_nested_scan", "stacked RNN: scan over 3 layers of scans over time, grad; batch over x, hidden over y",
        _plain(_stacked_rnn), M24, XY, [P(None, None, "y"), P(None, None, "y"), P(None, "x", None), P("x", None)], None,
        lambda: [_rand((3, 16, 16), 7316, scale=0.25), _rand((3, 16, 16), 7317, scale=0.25),
                 _rand((10, 8, 16), 7318), _rand((8, 16), 7319)])
    add("chunked_attn_lax_map", "memory-efficient attention: lax.map over 4 query chunks of the sequence over y, batch over x",
        _plain(_chunked_attn), M24, XY, [P("x", "y", None), P("x", "y", None), P("x", "y", None)], None,
        lambda: [_rand((2, 32, 16), 7320), _rand((2, 32, 16), 7321), _rand((2, 32, 16), 7322)])

    # ---- reductions ------------------------------------------------------------------------------
    add("masked_pooling_where", "mean / max / min / sum / prod / any with where= and initial=, average returned, nan stats; T over y",
        _plain(_masked_pool), M24, XY, [P("x", "y", None), P("x")], None,
        lambda: [_rand((4, 24, 16), 7400), np.array([24, 5, 13, 1], np.int32)])
    add("masked_lse_where", "softmax / log_softmax / logsumexp (b<0, return_sign) with where= over a key dim over x, 4 x 2",
        _plain(_masked_lse), M42, XY, [P("y", None, "x"), P("y", None, "x"), P("y", None, "x")], None,
        lambda: [_rand((4, 6, 20), 7401), _rand((4, 6, 20), 7402),
                 (np.random.default_rng(7403).random((4, 6, 20)) > 0.3).astype(np.int32)])
    add("packed_segments_uneven", "packed sequences: sorted segment sum / max / min / count, per-segment norm; 100 tokens over 8",
        _cut(_packed_segments, [(100,), (100,)], [P("x", None), P("x")]), M8, AX, [P("x", None), P("x")], None,
        _packed_args)
    add("token_stats_44", "bincount(length=50), entropy, histogram, unique_counts(size), per-row bincount; 4 x 4",
        _plain(_token_stats), M44, XY, [P("x", "y"), P("y", "x")], None,
        lambda: [_ids((16, 32), 50, 7404), _rand((16, 16), 7405)])

    # ---- dtypes ----------------------------------------------------------------------------------
    add("w8a8_dynamic_quant", "W8A8: per-row dynamic int8 quantisation, int8 dot -> int32 over a contraction over y, scales",
        _plain(_w8a8), M24, XY, [P("x", "y"), P("y", None), P()], None,
        lambda: [_rand((16, 64), 7500),
                 np.random.default_rng(7501).integers(-127, 128, (64, 32)).astype(np.int8),
                 np.abs(_rand((32,), 7502, scale=0.01)) + 0.001])
    add("bf16_rmsnorm_swiglu_44", "bf16 RMSNorm (f32 statistics) + SwiGLU MLP + residual, 4 x 4",
        _plain(_bf16_rms_swiglu), M44, XY, [P("x", None), P(), P(None, "y"), P(None, "y"), P("y", None)], None,
        lambda: [_rand((32, 64), 7503, "bf16"), _rand((64,), 7504, "bf16", 0.2) + 1,
                 _rand((64, 128), 7505, "bf16", 0.125), _rand((64, 128), 7506, "bf16", 0.125),
                 _rand((128, 64), 7507, "bf16", 0.09)], dtype="bf16")
    add("f16_xent_vocab", "f16 logits, log_softmax / nll over a vocab over y, f32 logsumexp z-loss, argmax, 2 x 4",
        _plain(_f16_xent), M24, XY, [P("x", None), P(None, "y"), P("x")], None,
        lambda: [_rand((16, 32), 7508).astype(np.float16), _rand((32, 96), 7509, scale=0.2).astype(np.float16),
                 _ids((16,), 96, 7510)], dtype="f16")
    add("hash_embedding_u32", "uint32 murmur fmix hashing trick: rotates, mod 127, signed buckets, popcount / clz, 2x2x2x2",
        _plain(_hash_embed), M2222, ABCD, [P(("a", "b"), "c"), P(("c", "d"), None)], None,
        lambda: [_ids((16, 8), 1 << 30, 7511), _rand((128, 16), 7512)])
    add("complex_rope", "RoPE by complex multiplication (lax.complex, exp(1j a)), scores, abs / angle; T over y, heads over x",
        _plain(_complex_rope), M24, XY, [P(None, "y", "x", None), P(None, "y", "x", None), P("y")], None,
        lambda: [_rand((2, 16, 4, 8), 7513), _rand((2, 16, 4, 8), 7514), np.arange(16, dtype=np.int32) * 3])
    add("lsq_fake_quant_ste", "LSQ fake quant (custom_vjp STE), round(decimals), floor_divide / remainder / fmod, nextafter, reduce_precision, int pow",
        _plain(_lsq_fake_quant), M42, XY, [P("x", "y"), P(), P(None, "x"), P("x", "y")], None,
        lambda: [_rand((16, 8), 7515, scale=0.5), np.float32(0.1), _rand((12, 16), 7516),
                 np.random.default_rng(7517).integers(-50, 50, (16, 8)).astype(np.int32)])

    # ---- autodiff --------------------------------------------------------------------------------
    add("newton_logreg_hessian", "logistic regression: 3 Newton steps by jax.hessian + solve, 64 rows contracted over 8",
        _plain(_newton_logreg), M8, AX, [P("x", None), P("x"), P()], None,
        lambda: [_rand((64, 6), 7600), (np.random.default_rng(7601).random(64) > 0.5).astype(np.float32),
                 np.zeros(6, np.float32)])
    add("levenberg_marquardt_jac", "Levenberg-Marquardt: jacfwd of 48 residuals over 4, J^T J solve, 4 steps, jacrev, 4 x 2",
        _plain(_lm_fit), M42, XY, [P("x"), P("x"), P()], None, _lm_args)
    add("dp_sgd_key", "DP-SGD: vmap(grad) per example, per-example clipping, Gaussian noise from a key; batch x, hidden y",
        _plain(_dp_sgd), M24, XY, [P(None, "y"), P("y", None), P("x", None), P("x", None), P()], None,
        lambda: [_rand((12, 32), 7602, scale=0.3), _rand((32, 4), 7603, scale=0.2), _rand((16, 12), 7604),
                 _rand((16, 4), 7605), _key(7606)])
    add("maml_second_order", "MAML: grad through an inner SGD step (second order), vmap over 4 tasks over x, W over y",
        _plain(_maml), M24, XY, [P(None, "y"), P("x"), P("x"), P("x"), P("x")], None,
        lambda: [_rand((8, 16), 7607, scale=0.3), _rand((4, 10, 8), 7608), _rand((4, 10, 16), 7609),
                 _rand((4, 6, 8), 7610), _rand((4, 6, 16), 7611)])
    add("neural_ode_rk4_222", "neural ODE: RK4 in fori_loop (6 steps), grad wrt the MLP, batch over x, hidden over (y,z)",
        _plain(_node), M222, XYZ, [P(None, ("y", "z")), P(("y", "z"), None), P("x", None), P("x", None)], None,
        lambda: [_rand((16, 32), 7612, scale=0.25), _rand((32, 16), 7613, scale=0.18), _rand((8, 16), 7614),
                 _rand((8, 16), 7615)])
    add("grad_sort_topk_cumsum", "grad through sort, top_k, cumsum, reversed cumsum and a take along the dim over y, 2 x 4",
        _plain(_grad_sort_ops), M24, XY, [P("x", "y"), P("x", "y"), P("x", "y"), P()], None,
        lambda: [_rand((4, 24), 7616), _rand((4, 24), 7617), _rand((4, 24), 7618),
                 np.array([0, 5, 5, 23, 11, 12], np.int32)])

    # ---- control flow / vmap / random --------------------------------------------------------------
    add("vmap_cond_switch", "vmap of lax.cond and a 3-way lax.switch per example (selects), batch over x, features over y",
        _plain(_vmap_cond_switch), M42, XY, [P("x", "y"), P("y", None), P("x"), P("x")], None,
        lambda: [_rand((8, 12), 7700), _rand((12, 12), 7702, scale=0.3),
                 np.array([1, 0, 1, 1, 0, 0, 1, 0], np.int32), np.array([0, 1, 2, 2, 1, 0, 5, -1], np.int32)])
    add("random_crops_vmap", "random crops by vmap(dynamic_slice) + per-example flip and take; batch over x, width over y",
        _plain(_crops), M24, XY, [P("x", None, "y", None), P("x"), P("x"), P("x")], None, _crops_args)
    add("ensemble_vmap_spmd", "deep ensemble: vmap(spmd_axis_name='x') of an MLP grad with a constraint inside, hidden over y",
        _ensemble, M24, XY, [P("x", None, "y"), P("x", "y", None), P(), P()], None,
        lambda: [_rand((4, 8, 32), 7703, scale=0.35), _rand((4, 32, 4), 7704, scale=0.18), _rand((16, 8), 7705),
                 _rand((16, 4), 7706)])
    add("kmeans_fori_uneven", "k-means: 4 Lloyd steps in fori_loop (argmin, segment_sum), 100 points over 8 (uneven)",
        _cut(_kmeans, [(100,), None], [P("x", None), None]), M8, AX, [P("x", None), P()], None, _kmeans_args,
        quick=True)
    add("mixup_dropout_key", "mixup (permutation, beta) + bernoulli dropout from a key, softmax regression step, batch over 8",
        _plain(_mixup), M8, AX, [P(), P("x", None), P("x"), P()], None,
        lambda: [_rand((16, 10), 7707, scale=0.25), _rand((32, 16), 7708), _ids((32,), 10, 7709), _key(7710)])
    add("rff_ridge_key", "random Fourier features from a key, ridge solve contracting 48 rows over x, features over y, 4 x 2",
        _plain(_rff), M42, XY, [P("x", None), P("x"), P("x", None), P()], None,
        lambda: [_rand((48, 5), 7711), _rand((48,), 7712), _rand((16, 5), 7713), _key(7714)])
    # ---- sharded core dims, uneven sizes, less common APIs ---------------------------------------
    add("linalg_core_dims_44", "cholesky / qr / eigvalsh / svd / solve / inv / slogdet of one 20x20 matrix, both dims over 4 x 4 (uneven)",
        _cut(_linalg_core, [(20, 20), (20,)], [P("x", "y"), P("y", None)]), M44, XY, [P("x", "y"), P("y", None)], None,
        lambda: [_rand((24, 24), 7900), _rand((24, 3), 7901)])
    add("topk_1000_over_16", "top_k 8, argmax / argmin, descending sort, stable argsort over a 1000 vocab over 2x2x2x2 (uneven)",
        _cut(_topk_16, [(4, 1000)], [P(None, ("a", "b", "c", "d"))]), M2222, ABCD, [P(None, ("a", "b", "c", "d"))], None,
        lambda: [_rand((4, 1024), 7903)])
    add("affine_assoc_scan_uneven", "associative_scan of 2x2 affine-map compositions, forward and reverse, 50 steps over 8 (uneven)",
        _cut(_affine_scan, [(50,), (50,), (50,)], [P("x", None, None), P("x", None), P("x", None)]), M8, AX,
        [P("x", None, None), P("x", None), P("x", None)], None,
        lambda: [_rand((56, 2, 2), 7904, scale=0.5), _rand((56, 2), 7905), _rand((56, 3), 7906)])
    add("lambertw_while_2222", "Lambert W by Halley iterations in a while_loop with a data-dependent exit, 2x2x2x2",
        _plain(_lambertw), M2222, ABCD, [P(("a", "b"), ("c", "d"))], None,
        lambda: [np.exp(_rand((16, 12), 7907)).astype(np.float32)])
    add("median_filter_uneven", "running median of 5 (stacked shifts), reduce_window max, sort / argsort along 50 steps over (y,x)",
        _cut(_median_filter, [(4, 50)], [P(None, ("y", "x"))]), M24, XY, [P(None, ("y", "x"))], None,
        lambda: [_rand((4, 56), 7908)])
    add("tridiagonal_solve", "lax.linalg.tridiagonal_solve vs a dense solve, batch over x, system dim over y, 2 x 4",
        _plain(_tridiag), M24, XY, [P("x", "y"), P("x", "y"), P("x", "y"), P("x", "y", None)], None,
        lambda: [_rand((8, 16), 7909), _rand((8, 16), 7910), _rand((8, 16), 7911), _rand((8, 16, 3), 7912)])
    add("eigh_tridiagonal_vmap", "vmap of scipy eigh_tridiagonal (bisection loops) vs eigvalsh, batch over x, diagonal over y",
        _plain(_eigh_tridiag), M24, XY, [P("x", "y"), P("x", "y")], None,
        lambda: [_rand((4, 12), 7913), _rand((4, 12), 7914)])
    add("polar_qdwh_svd", "scipy polar decomposition by QDWH (while_loop, qr / cholesky) and by SVD, 16x16 over 4 x 4",
        _plain(_polar), M44, XY, [P("x", "y")], None, lambda: [_rand((16, 16), 7915) + 2 * np.eye(16, dtype=np.float32)])
    add("scipy_signal_welch", "scipy.signal welch / stft / istft / csd of signals with 256 samples over 8",
        _plain(_welch), M8, AX, [P(None, "x")], None, lambda: [_rand((4, 256), 7916)])
    add("int8_conv_int32", "int8 x int8 3x3 conv with preferred_element_type=int32, input channels over y, batch over x",
        _plain(_int8_conv), M24, XY, [P("x", None, None, "y"), P(None, None, "y", None), P()], None,
        lambda: [np.random.default_rng(7917).integers(-128, 128, (4, 8, 8, 8)).astype(np.int8),
                 np.random.default_rng(7918).integers(-128, 128, (3, 3, 8, 6)).astype(np.int8), np.float32(0.01)])
    return ps
