"""Probe programs for bench/xla_compare (names p5_, `--only p5_` runs them): training steps (AdamW with
a weight-decay mask and sharded moments, gradient accumulation + global-norm clipping, bf16 compute
with f32 masters and an EMA, Nesterov momentum), jax.checkpoint policies (dots_saveable,
save_only_these_names), custom_vjp with sharded residuals, nested jit with its own shardings,
shard_map-heavy programs (collective matmuls by ppermute, ring attention with heads automatic, top-2
expert dispatch by all_to_all, psum_scatter over two axes, vocab-parallel cross-entropy, shard_map
in scan and scan in shard_map, FSDP by all_gather and its gradient), control flow with sharded
carries (a while_loop decode with an early exit, per-row cache scatters in fori_loop, cond / switch,
power iteration), ops on sharded dims (top_k, stable argsort with ties, searchsorted methods,
segment max / min / prod, 2-D scatter-add, take_along_axis on the sharded dim, cumsum over merged
axes, max-pool gradient, QR / solve with rows sharded, FFT on 16 devices, 4-operand einsum, vmap of
a constrained function), models (GPT block gradient on 4 x 4 with the sequence sharded, ViT patchify,
U-Net with the height sharded, GRU, sequential Mamba scan, expert-choice MoE, CLIP loss in shard_map,
diffusion block) and meshes (2 x 2 x 2, 1 x 8, 8 x 1, 4 x 4, a transposed device order, uneven dims,
bf16 and f16). Then edge probes: padding of uneven shards under reductions / sorts / top_k, halos
wider than a shard, dilated windows, empty shards, misaligned reshapes, merged and reversed mesh
axes in shard_map, collectives of bf16 / int8 / bool / uint32 / complex, per-device control flow
in shard_map, batching-dim gathers and scatters, low-precision accumulation (bf16 / f16 lax.reduce,
every step rounded in the order of XLA:CPU's tree rewrite; cumsum, which XLA:CPU scans in f32; bf16 /
f16 all-reduce, bf16 in f32 and f16 rounded at each step), XLA's integer and float edge
semantics (division by zero, saturating conversions, NaN propagation), big per-device sizes past
the kernels' threading thresholds, lax.composite,
jax.debug.print, donation with resharded outputs, a beam search loop and an LM train step.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

from programs import Program, _axis_size, _ids, _plain, _rand, _smap, _wsc

M8, AX = (8,), ("x",)
M24, M42, A2 = (2, 4), (4, 2), ("data", "model")
M222 = (2, 2, 2)
M44 = (4, 4)
XY = ("x", "y")


def _ln(x, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + eps)


def _causal(s):
    n = s.shape[-1]
    return jnp.where(jnp.tril(jnp.ones((n, n), bool)), s, -1e30)


# ==== training ===================================================================================
def _mlp_ln(params, x):
    w1, b1, g, w2 = params
    h = jax.nn.gelu((_ln(x) * g) @ w1 + b1)
    return h @ w2


def _adamw_masked(*a):
    # AdamW: moments sharded like the params, weight decay only on matrices (mask), bias-corrected.
    params, m, v, (x, y, step) = a[0:4], a[4:8], a[8:12], a[12:15]
    loss, g = jax.value_and_grad(lambda p: jnp.mean((_mlp_ln(p, x) - y) ** 2))(params)
    t = step.astype(jnp.float32) + 1.0
    b1, b2, lr, wd = 0.9, 0.999, 1e-2, 0.1
    new_p, new_m, new_v = [], [], []
    for p, gi, mi, vi in zip(params, g, m, v):
        mi = b1 * mi + (1 - b1) * gi
        vi = b2 * vi + (1 - b2) * gi * gi
        upd = (mi / (1 - b1 ** t)) / (jnp.sqrt(vi / (1 - b2 ** t)) + 1e-8)
        if p.ndim >= 2:
            upd = upd + wd * p
        new_p.append(p - lr * upd)
        new_m.append(mi)
        new_v.append(vi)
    return tuple(new_p), tuple(new_m), tuple(new_v), loss


_ADAMW_SPECS = [P("fsdp", "tp"), P("tp"), P(), P("tp", "fsdp")]


def _adamw_args():
    ps = [_rand((32, 64), 1000, scale=0.15), _rand((64,), 1001, scale=0.1), 1.0 + _rand((32,), 1002, scale=0.1),
          _rand((64, 16), 1003, scale=0.12)]
    ms = [_rand(p.shape, 1010 + i, scale=0.01) for i, p in enumerate(ps)]
    vs = [np.abs(_rand(p.shape, 1020 + i, scale=0.01)) for i, p in enumerate(ps)]
    return ps + ms + vs + [_rand((16, 32), 1030), _rand((16, 16), 1031), np.array(4, np.int32)]


def _accum_clip(w1, w2, xs, ys):
    # Gradient accumulation over microbatches in lax.scan, then global-norm clipping and SGD.
    def loss(ws, x, y):
        return jnp.mean((jnp.tanh(x @ ws[0]) @ ws[1] - y) ** 2)

    def step(acc, xy):
        l, g = jax.value_and_grad(loss)((w1, w2), *xy)
        return jax.tree.map(jnp.add, acc, g), l

    zero = (jnp.zeros_like(w1), jnp.zeros_like(w2))
    g, ls = jax.lax.scan(step, zero, (xs, ys))
    g = jax.tree.map(lambda t: t / xs.shape[0], g)
    norm = jnp.sqrt(sum(jnp.sum(t * t) for t in g))
    scale = jnp.minimum(1.0, 0.5 / (norm + 1e-6))
    return w1 - 0.1 * scale * g[0], w2 - 0.1 * scale * g[1], norm, ls


def _bf16_master_ema(w1, w2, ema1, ema2, x, y):
    # bf16 compute from f32 master weights, static loss scale 1024, EMA of the updated params.
    def loss(ws):
        h = jax.nn.relu(x.astype(jnp.bfloat16) @ ws[0].astype(jnp.bfloat16))
        o = (h @ ws[1].astype(jnp.bfloat16)).astype(jnp.float32)
        return jnp.mean((o - y) ** 2) * 1024.0

    g = jax.grad(loss)((w1, w2))
    g = [gi.astype(jnp.float32) / 1024.0 for gi in g]
    n1, n2 = w1 - 0.05 * g[0], w2 - 0.05 * g[1]
    return n1, n2, 0.9 * ema1 + 0.1 * n1, 0.9 * ema2 + 0.1 * n2


def _nesterov(w1, w2, mu1, mu2, x, y):
    def loss(ws):
        return jnp.mean((jax.nn.silu(x @ ws[0]) @ ws[1] - y) ** 2)

    g = jax.grad(loss)((w1, w2))
    out = []
    for w, mu, gi in zip((w1, w2), (mu1, mu2), g):
        mu = 0.9 * mu + gi
        out += [w - 0.05 * (gi + 0.9 * mu), mu]
    return tuple(out)


# ==== remat / custom_vjp / nested jit ============================================================
def _remat_dots(w1, w2, w3, x):
    pol = jax.checkpoint_policies.dots_saveable

    @jax.checkpoint
    def layer_a(h, w):
        return jnp.sin(h @ w) * jnp.cos(h @ w)

    layer_b = jax.checkpoint(lambda h, w: jax.nn.gelu(h @ w), policy=pol)
    layer_c = jax.checkpoint(lambda h, w: jnp.tanh(h @ w) + h[..., :w.shape[1]], policy=jax.checkpoint_policies.nothing_saveable)

    def loss(ws):
        h = layer_b(x, ws[0])
        h = layer_a(h, ws[1])
        return jnp.sum(layer_c(h, ws[2]) ** 2)

    return jax.grad(loss)((w1, w2, w3))


def _remat_names(wq, wk, wv, wo, x):
    from jax.ad_checkpoint import checkpoint_name

    def attn(ws, x):
        b, s, d = x.shape
        q = checkpoint_name(x @ ws[0], "proj").reshape(b, s, 4, d // 4)
        k = checkpoint_name(x @ ws[1], "proj").reshape(b, s, 4, d // 4)
        v = checkpoint_name(x @ ws[2], "proj").reshape(b, s, 4, d // 4)
        sc = checkpoint_name(jnp.einsum("bqhd,bkhd->bhqk", q, k) / 4.0, "scores")
        p = jax.nn.softmax(_causal(sc), -1)
        o = jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, d)
        return o @ ws[3] + x

    f = jax.checkpoint(attn, policy=jax.checkpoint_policies.save_only_these_names("proj"))
    g = jax.checkpoint(attn, policy=jax.checkpoint_policies.save_any_names_but_these("scores"))
    return jax.grad(lambda ws: jnp.sum(g(ws, f(ws, x)) ** 2))((wq, wk, wv, wo))


def _custom_vjp_resid(mesh):
    # A custom_vjp dense layer whose residuals are constrained (x sharded on batch, pre-activation on
    # both axes) and a gradient-clipping identity on the activations.
    @jax.custom_vjp
    def dense(x, w):
        return jnp.tanh(x @ w)

    def fwd(x, w):
        z = _wsc(mesh, x @ w, P("x", "y"))
        return jnp.tanh(z), (_wsc(mesh, x, P("x", None)), w, z)

    def bwd(res, g):
        x, w, z = res
        dz = _wsc(mesh, g * (1 - jnp.tanh(z) ** 2), P("x", "y"))
        return dz @ w.T, x.T @ dz

    dense.defvjp(fwd, bwd)

    @jax.custom_vjp
    def clip_grad(x):
        return x

    clip_grad.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -0.01, 0.01),))

    def f(x, w1, w2):
        def loss(ws):
            h = clip_grad(dense(x, ws[0]))
            return jnp.sum(dense(h, ws[1]) ** 2)
        return jax.value_and_grad(loss)((w1, w2))
    return f


def _nested_jit(mesh):
    ns = lambda s: NamedSharding(mesh, s)
    inner = jax.jit(lambda a, b: jax.nn.relu(a @ b), in_shardings=(ns(P("x", None)), ns(P(None, "y"))),
                    out_shardings=ns(P(None, "y")))
    inner2 = jax.jit(lambda h: (h * 2.0).sum(0), out_shardings=ns(P("y")))

    def f(a, b, c):
        h = inner(a, b)
        h2 = inner(h, c)
        return h2, inner2(h2) + 1.0
    return f


# ==== shard_map ==================================================================================
def _coll_matmul_ag(mesh):
    # All-gather collective matmul: x's row blocks pass round the ring while each device multiplies
    # them by its column block of w.
    def body(xb, wb):
        n = _axis_size("x")
        me = jax.lax.axis_index("x")
        rows = xb.shape[0]
        perm = [(j, (j - 1) % n) for j in range(n)]

        def step(k, carry):
            acc, xc = carry
            src = (me + k) % n
            acc = jax.lax.dynamic_update_slice_in_dim(acc, xc @ wb, src * rows, 0)
            return acc, jax.lax.ppermute(xc, "x", perm)

        acc = jnp.zeros((n * rows, wb.shape[1]), xb.dtype)
        acc, _ = jax.lax.fori_loop(0, n, step, (acc, xb))
        return acc

    return _smap(mesh, body, (P("x", None), P(None, "x")), P(None, "x"), check_vma=False)


def _coll_matmul_rs(mesh):
    # Reduce-scatter collective matmul: partial products over the sharded contraction dim reduced
    # chunk by chunk round the ring.
    def body(xb, wb):
        n = _axis_size("x")
        me = jax.lax.axis_index("x")
        part = xb @ wb
        chunks = part.reshape(n, part.shape[0] // n, part.shape[1])
        perm = [(j, (j + 1) % n) for j in range(n)]
        acc = chunks[(me - 1) % n]

        def step(s, acc):
            acc = jax.lax.ppermute(acc, "x", perm)
            return acc + jax.lax.dynamic_index_in_dim(chunks, (me - s - 1) % n, 0, keepdims=False)

        return jax.lax.fori_loop(1, n, step, acc)

    return _smap(mesh, body, (P(None, "x"), P("x", None)), P("x", None))


def _ring_attn_heads_auto(mesh):
    # Non-causal ring attention over sp (scan over the ring steps), heads left to the automatic axis.
    def body(q, k, v):
        n = _axis_size("sp")
        perm = [(i, (i + 1) % n) for i in range(n)]
        m = jnp.full(q.shape[:1] + (q.shape[2], q.shape[1]), -1e30, jnp.float32)

        def step(carry, _):
            k, v, m, l, acc = carry
            s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(q.shape[-1]))
            m_new = jnp.maximum(m, s.max(-1))
            p = jnp.exp(s - m_new[..., None])
            corr = jnp.exp(m - m_new)
            l = l * corr + p.sum(-1)
            acc = acc * jnp.transpose(corr, (0, 2, 1))[..., None] + jnp.einsum("bhqk,bkhd->bqhd", p, v)
            return (jax.lax.ppermute(k, "sp", perm), jax.lax.ppermute(v, "sp", perm), m_new, l, acc), None

        (_, _, m, l, acc), _ = jax.lax.scan(step, (k, v, m, jnp.zeros_like(m), jnp.zeros_like(q)), None, length=n)
        return acc / jnp.transpose(l, (0, 2, 1))[..., None]

    spec = P(None, "sp")
    return _smap(mesh, body, (spec, spec, spec), spec, axis_names={"sp"}, check_vma=False)


def _a2a_top2(mesh):
    # Top-2 expert dispatch with capacity 2 per (device, expert): untiled all_to_all there and back.
    E, C = 8, 2

    def body(x, wg, we):
        logits = x @ wg                                   # [t, E]
        probs = jax.nn.softmax(logits, -1)
        top_p, top_e = jax.lax.top_k(probs, 2)            # [t, 2]
        oh = jax.nn.one_hot(top_e, E)                     # [t, 2, E]
        flat = oh.reshape(-1, E)                          # choice-major within a token
        pos = (jnp.cumsum(flat, 0) - 1.0) * flat          # slot in the expert's buffer
        keep = flat * (pos < C)
        slot = jax.nn.one_hot(pos.astype(jnp.int32), C) * keep[..., None]   # [t*2, E, C]
        slot = slot.reshape(x.shape[0], 2, E, C)
        disp = jnp.einsum("tkec,td->ecd", slot, x)        # [E, C, d]
        recv = jax.lax.all_to_all(disp, "x", 0, 0, tiled=False)   # [src, C, d] for my expert
        h = jnp.tanh(jnp.einsum("scd,df->scf", recv, we[0]))
        back = jax.lax.all_to_all(h, "x", 0, 0, tiled=False)      # [E, C, d]
        comb = jnp.einsum("tkec,tk->tkec", slot, top_p)
        return jnp.einsum("tkec,ecd->td", comb, back)

    return _smap(mesh, body, (P("x"), P(), P("x")), P("x"), check_vma=False)


def _psum_scatter_2axes(mesh):
    def body(a):
        r = jax.lax.psum_scatter(jnp.tanh(a), ("x", "y"), scatter_dimension=1, tiled=True)   # [16, 4]
        g = jax.lax.all_gather(r * 2.0, ("y", "x"), axis=0, tiled=True)                         # [128, 4]
        return r, g

    return _smap(mesh, body, P(), (P(None, ("x", "y")), P(None, ("x", "y"))), check_vma=False)


def _vocab_xent(mesh):
    # Megatron vocab-parallel cross-entropy: pmax / psum over the vocab shards, the target logit by an
    # axis_index offset mask, pmean over data.
    def body(logits, labels):
        vl = logits.shape[1]
        off = jax.lax.axis_index("model") * vl
        m = jax.lax.pmax(jax.lax.stop_gradient(logits.max(-1)), "model")
        se = jax.lax.psum(jnp.exp(logits - m[:, None]).sum(-1), "model")
        local = labels - off
        inside = (local >= 0) & (local < vl)
        tgt = jnp.take_along_axis(logits, jnp.clip(local, 0, vl - 1)[:, None], 1)[:, 0]
        tgt = jax.lax.psum(jnp.where(inside, tgt, 0.0), "model")
        nll = jnp.log(se) + m - tgt
        amax = jax.lax.pmax(logits.max(-1), "model")
        return jax.lax.pmean(nll.mean(), "data"), nll, amax

    return _smap(mesh, body, (P("data", "model"), P("data")), (P(), P("data"), P("data")), check_vma=False)


def _smap_one_of_three(mesh):
    # 2x2x2 mesh, shard_map manual over b only (a, c automatic): partial products psummed over b.
    def body(x, w):
        return jax.lax.psum(jnp.tanh(x) @ w, "b") + 1.0

    f = _smap(mesh, body, (P(None, "b"), P("b", None)), P(), axis_names={"b"})

    def g(x, w):
        y = f(x, w)
        return y, y.sum(1)
    return g


def _smap_in_scan(mesh):
    # lax.scan over 3 stacked TP MLP layers, each layer a shard_map (psum over model), and the grad.
    def layer(h, w1, w2):
        return jax.lax.psum(jax.nn.gelu(h @ w1) @ w2, "model")

    tp = _smap(mesh, layer, (P("data"), P(None, "model"), P("model", None)), P("data"))

    def fwd(ws, x):
        def step(h, w):
            return h + tp(h, w[0], w[1]), h.sum()
        return jax.lax.scan(step, x, ws)

    def f(w1s, w2s, x):
        def loss(ws):
            h, sums = fwd(ws, x)
            return jnp.mean(h ** 2) + 0.01 * sums.sum()
        return jax.value_and_grad(loss)((w1s, w2s))
    return f


def _scan_in_smap(mesh):
    # Sequence-parallel linear recurrence h_t = a_t h_{t-1} + b_t: each device scans its chunk, the
    # chunk carries are combined from an all_gather, then a second local scan applies the prefix.
    def body(a, b):
        def scan_from(h0):
            def step(h, ab):
                h = ab[0] * h + ab[1]
                return h, h
            return jax.lax.scan(step, h0, (a, b))

        _, hs = scan_from(jnp.zeros(a.shape[1:], a.dtype))
        aprod = jnp.prod(a, axis=0)
        allA = jax.lax.all_gather(aprod, "x")          # [n, w]
        allH = jax.lax.all_gather(hs[-1], "x")
        me = jax.lax.axis_index("x")

        def comb(h, i):
            h2 = allA[i] * h + allH[i]
            return jnp.where(i < me, h2, h), None

        h0, _ = jax.lax.scan(comb, jnp.zeros(a.shape[1:], a.dtype), jnp.arange(allA.shape[0]))
        _, out = scan_from(h0)
        return out

    return _smap(mesh, body, (P("x"), P("x")), P("x"), check_vma=False)


def _fsdp_smap_grad(mesh):
    # FSDP in shard_map: weights all_gathered inside (tiled), the gradient's transpose a psum_scatter.
    def fwd(w1, w2, x, y):
        W1 = jax.lax.all_gather(w1, "x", axis=0, tiled=True)
        W2 = jax.lax.all_gather(w2, "x", axis=0, tiled=True)
        o = jax.nn.relu(x @ W1) @ W2
        return jax.lax.psum(jnp.sum((o - y) ** 2), "x") / (x.shape[0] * _axis_size("x"))

    sm = _smap(mesh, fwd, (P("x"), P("x"), P("x"), P("x")), P())

    def f(w1, w2, x, y):
        l, g = jax.value_and_grad(lambda ws: sm(ws[0], ws[1], x, y))((w1, w2))
        return l, w1 - 0.1 * g[0], w2 - 0.1 * g[1]
    return f


# ==== control flow ===============================================================================
DB, DS, DH, DD = 4, 16, 4, 8


def _while_decode(mesh):
    # Greedy-ish decode in a while_loop: KV-cache DUS at the step, attention over the written prefix,
    # exit at 10 steps or early once every row's state is large.
    def f(h, ck, cv, wq, wk, wv, wo):
        d = DH * DD

        def cond(c):
            i, h = c[0], c[1]
            return (i < 10) & (jnp.max(jnp.abs(h)) < 3.0)

        def body(c):
            i, h, ck, cv = c
            q = (h @ wq).reshape(DB, DH, DD)
            ck = jax.lax.dynamic_update_slice(ck, (h @ wk).reshape(DB, 1, DH, DD), (0, i, 0, 0))
            cv = jax.lax.dynamic_update_slice(cv, (h @ wv).reshape(DB, 1, DH, DD), (0, i, 0, 0))
            s = jnp.einsum("bhd,bshd->bhs", q, ck) / np.float32(np.sqrt(DD))
            s = jnp.where(jnp.arange(DS)[None, None] <= i, s, -1e30)
            o = jnp.einsum("bhs,bshd->bhd", jax.nn.softmax(s, -1), cv).reshape(DB, d)
            h = h + 0.7 * jnp.tanh(o @ wo) + 0.3
            return i + 1, _wsc(mesh, h, P("data", None)), ck, cv

        return jax.lax.while_loop(cond, body, (jnp.int32(0), h, ck, cv))
    return f


def _while_decode_args():
    d = DH * DD
    return [_rand((DB, d), 1100, scale=0.3), np.zeros((DB, DS, DH, DD), np.float32),
            np.zeros((DB, DS, DH, DD), np.float32)] + [_rand((d, d), 1101 + i, scale=d ** -0.5) for i in range(4)]


def _fori_row_scatter(cache, new, pos, w):
    # Each row writes at its own position (a scatter, not a DUS) for 4 steps of a fori_loop.
    def body(t, c):
        cache, x = c
        rows = jnp.arange(cache.shape[0])
        cache = cache.at[rows, pos + t].set(x)
        att = jax.nn.softmax(jnp.einsum("bd,bsd->bs", x, cache), -1)
        x = jnp.tanh(jnp.einsum("bs,bsd->bd", att, cache) @ w)
        return cache, x
    return jax.lax.fori_loop(0, 4, body, (cache, new))


def _cond_branches(mesh):
    def f(pred, x, w):
        def yes(x, w):
            return _wsc(mesh, jnp.tanh(x @ w), P("y", "x"))

        def no(x, w):
            return _wsc(mesh, (x * 2.0) @ w.T, P("y", "x"))
        out = _wsc(mesh, jax.lax.cond(pred[0] > 0, yes, no, x, w), P(None, "y"))
        return out, jax.lax.cond(pred[0] < 0, lambda a: a.sum(0), lambda a: a.max(0), out)
    return f


def _switch_matmul(x, w1, w2, sel):
    idx = jnp.argmax(sel) % 3
    branches = [lambda x: x @ w1, lambda x: jnp.tanh(x) @ w2, lambda x: (x @ w1) * (x @ w2)]
    return jax.lax.switch(idx, branches, x), jax.lax.switch(jnp.int32(2) - idx, branches, -x)


def _power_iter(a, v0):
    # Power iteration on a sharded symmetric matrix until the change is small (data-dependent trips).
    s = a @ a.T

    def cond(c):
        return (c[2] > 1e-5) & (c[3] < 200)

    def body(c):
        v, lam, _, it = c
        w = s @ v
        nv = w / jnp.linalg.norm(w)
        return nv, nv @ s @ nv, jnp.linalg.norm(nv - v), it + 1

    v, lam, _, it = jax.lax.while_loop(cond, body, (v0 / jnp.linalg.norm(v0), 0.0, 1.0, 0))
    return jnp.abs(v), lam, it


# ==== ops on sharded dims ========================================================================
def _topk_uneven(mesh):
    def f(x):
        y = _wsc(mesh, x[:, :100], P(None, "data"))
        v, i = jax.lax.top_k(y, 5)
        return v, i, jax.lax.top_k(-y.T, 3)[1]
    return f


def _argsort_ties(keys, vals):
    i1 = jnp.argsort(keys, axis=1, stable=True)
    i0 = jnp.argsort(keys, axis=0, stable=True, descending=True)
    return i1, i0, jnp.take_along_axis(vals, i1, 1), jnp.sort(vals, axis=1, descending=True)


def _searchsorted_methods(sorted_a, q):
    outs = []
    for m in ("scan", "scan_unrolled", "sort", "compare_all"):
        outs.append(jnp.searchsorted(sorted_a, q, side="left", method=m))
        outs.append(jnp.searchsorted(sorted_a, q, side="right", method=m))
    return tuple(outs)


def _segment_ops(data, ids):
    return (jax.ops.segment_max(data, ids, 16), jax.ops.segment_min(data, ids, 16),
            jax.ops.segment_prod(jnp.tanh(data) + 1.0, ids, 16), jax.ops.segment_sum(data, ids, 16))


def _scatter2d(table, rows, cols, vals, grid):
    t1 = table.at[rows, cols].add(vals)
    t2 = grid.at[rows % 8].set(jnp.tanh(grid[(rows + 3) % 8]))
    return t1, t2


def _take_sharded_dim(x, idx, y, idx0):
    return jnp.take_along_axis(x, idx, 1), jnp.take_along_axis(y, idx0, 0) * 2.0


def _cumsum_merged(mesh):
    def f(x):
        c = jnp.cumsum(x, axis=0)
        p = jnp.cumprod(jnp.tanh(x) * 0.5 + 1.0, axis=1)
        m = jax.lax.cummax(x, axis=0, reverse=True)
        return _wsc(mesh, c, P(("x", "y"))), p, m
    return f


def _maxpool_grad(x, w):
    def loss(x, w):
        h = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        p = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        a = jax.lax.reduce_window(h, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
        return jnp.sum(p ** 2) + jnp.sum(jnp.sin(a))
    return jax.grad(loss, argnums=(0, 1))(x, w)


def _qr_solve_rows(a, b):
    q, r = jnp.linalg.qr(a)                       # a [B, 32, 8]: reduced QR
    x = jnp.linalg.solve(r, jnp.einsum("bmn,bm->bn", q, b)[..., None])[..., 0]
    res = jnp.linalg.norm(jnp.einsum("bmn,bn->bm", a, x) - b, axis=1)
    return jnp.abs(jnp.diagonal(r, axis1=1, axis2=2)), x, res, jnp.linalg.norm(a, axis=(1, 2))


def _fft16(x):
    # (rfft + irfft beside this fft trips XLA:CPU's fft_thunk layout check under Shardy: left out.)
    f = jnp.fft.fft(x, axis=-1)
    g = jnp.fft.ifft(f * jnp.exp(-jnp.arange(f.shape[-1]) / 8.0), axis=-1)
    return jnp.abs(f), jnp.real(g), jnp.angle(f[..., 1:4])


def _einsum4(a, b, c, d):
    e1 = jnp.einsum("bij,jk,bkl,lm->bim", a, b, c, d, optimize="greedy")
    e2 = jnp.einsum("bij,bkl,jk->bil", a, c, b)
    return e1, e2


def _vmap_wsc(mesh):
    def per_example(v, w):
        h = _wsc(mesh, jnp.tanh(w @ v), P("y"))
        return h * jnp.sum(v)

    def f(vs, w):
        return jax.vmap(per_example, in_axes=(1, None), out_axes=1)(vs, w)
    return f


# ==== models =====================================================================================
GB, GS, GD, GH = 8, 32, 64, 4


def _gpt_block(x, pos, wqkv, wo, w1, w2, g1, g2):
    b, s, d = x.shape
    x = x + pos[None]
    h = _ln(x) * g1
    q, k, v = (t.reshape(b, s, GH, d // GH) for t in jnp.split(h @ wqkv, 3, -1))
    sc = _causal(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(d // GH)))
    x = x + jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, -1), v).reshape(b, s, d) @ wo
    return x + jax.nn.gelu(_ln(x) * g2 @ w1) @ w2


def _gpt_grad(mesh):
    def f(x, pos, wqkv, wo, w1, w2, g1, g2):
        def loss(ws):
            y = _gpt_block(x, *ws)
            y = _wsc(mesh, y, P("data", "model"))
            return jnp.mean(y ** 2)
        return jax.value_and_grad(loss)((pos, wqkv, wo, w1, w2, g1, g2))
    return f


def _gpt_args():
    sc = GD ** -0.5
    return [_rand((GB, GS, GD), 1200), _rand((GS, GD), 1201, scale=0.1), _rand((GD, 3 * GD), 1202, scale=sc),
            _rand((GD, GD), 1203, scale=sc), _rand((GD, 4 * GD), 1204, scale=sc), _rand((4 * GD, GD), 1205, scale=sc / 2),
            1.0 + _rand((GD,), 1206, scale=0.1), 1.0 + _rand((GD,), 1207, scale=0.1)]


def _vit_patchify(img, wp, cls, pos, wh):
    b, hh, ww, c = img.shape
    p = 4
    x = img.reshape(b, hh // p, p, ww // p, p, c).transpose(0, 1, 3, 2, 4, 5).reshape(b, -1, p * p * c)
    x = x @ wp
    x = jnp.concatenate([jnp.broadcast_to(cls, (b, 1, x.shape[-1])), x], 1) + pos[None]
    x = _ln(x)
    attn = jax.nn.softmax(jnp.einsum("bd,bnd->bn", x[:, 0], x) / 4.0, -1)
    return jnp.einsum("bn,bnd->bd", attn, x) @ wh


def _conv(x, w, stride=1):
    return jax.lax.conv_general_dilated(x, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _unet(x, w_in, w_down, w_up, w_out):
    def loss(ws):
        h0 = jax.nn.relu(_conv(x, ws[0]))                       # [b, 32, 16, 8]
        h1 = jax.nn.relu(_conv(h0, ws[1], 2))                   # [b, 16, 8, 16]
        u = jax.lax.conv_transpose(h1, ws[2], (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jnp.concatenate([u, h0], -1)                        # skip
        o = _conv(h, ws[3])
        return jnp.mean((o - x) ** 2), o
    (l, o), g = jax.value_and_grad(loss, has_aux=True)((w_in, w_down, w_up, w_out))
    return l, o, g


def _gru_cell(ws, h, x):
    wx, wh, b = ws
    gx = x @ wx + b
    gh = h @ wh
    hd = h.shape[-1]
    r = jax.nn.sigmoid(gx[:, :hd] + gh[:, :hd])
    z = jax.nn.sigmoid(gx[:, hd:2 * hd] + gh[:, hd:2 * hd])
    n = jnp.tanh(gx[:, 2 * hd:] + r * gh[:, 2 * hd:])
    h = (1 - z) * n + z * h
    return h, h


def _gru(wx, wh, b, xs, h0):
    def loss(ws):
        h, hs = jax.lax.scan(lambda h, x: _gru_cell(ws, h, x), h0, xs)
        return jnp.mean(hs ** 2) + jnp.mean(h)
    return jax.value_and_grad(loss)((wx, wh, b))


def _mamba_seq(x, w_in, a_log, w_dt, w_b, w_c, w_out):
    # Mamba-like selective scan with a sequential lax.scan over time: x [b, t, d], state [b, d, n].
    def fwd(ws):
        w_in, a_log, w_dt, w_b, w_c, w_out = ws
        u = jax.nn.silu(x @ w_in)                         # [b, t, di]
        dt = jax.nn.softplus(u @ w_dt)                    # [b, t, di]
        bm = u @ w_b                                      # [b, t, n]
        cm = u @ w_c
        a = -jnp.exp(a_log)                               # [di, n]

        def step(h, inp):
            u_t, dt_t, b_t, c_t = inp
            da = jnp.exp(dt_t[..., None] * a[None])       # [b, di, n]
            h = da * h + (dt_t * u_t)[..., None] * b_t[:, None, :]
            return h, jnp.einsum("bdn,bn->bd", h, c_t)

        h0 = jnp.zeros((x.shape[0], a.shape[0], a.shape[1]), x.dtype)
        tm = lambda t: jnp.moveaxis(t, 1, 0)
        _, ys = jax.lax.scan(step, h0, (tm(u), tm(dt), tm(bm), tm(cm)))
        return jnp.moveaxis(ys, 0, 1) @ w_out

    return jax.value_and_grad(lambda ws: jnp.mean(fwd(ws) ** 2))((w_in, a_log, w_dt, w_b, w_c, w_out))


def _expert_choice(x, wg, w1, w2):
    # Expert-choice routing: each expert picks its top-C tokens (top_k along the token dim).
    t, d = x.shape
    E, C = w1.shape[0], 8
    scores = jax.nn.softmax(x @ wg, -1)                  # [t, E]
    g, idx = jax.lax.top_k(scores.T, C)                  # [E, C]
    xin = x[idx]                                         # [E, C, d]
    h = jax.nn.gelu(jnp.einsum("ecd,edf->ecf", xin, w1))
    y = jnp.einsum("ecf,efd->ecd", h, w2) * g[..., None]
    return jnp.zeros_like(x).at[idx.reshape(-1)].add(y.reshape(-1, d)), idx


def _clip_smap(mesh):
    # CLIP loss in shard_map: all_gather the other modality's embeddings, local logits, psum'd loss.
    def body(img, txt, wi, wt, temp):
        zi = img @ wi
        zt = txt @ wt
        zi = zi / jnp.linalg.norm(zi, axis=-1, keepdims=True)
        zt = zt / jnp.linalg.norm(zt, axis=-1, keepdims=True)
        all_t = jax.lax.all_gather(zt, "x", tiled=True)
        all_i = jax.lax.all_gather(zi, "x", tiled=True)
        n = zi.shape[0]
        me = jax.lax.axis_index("x")
        lab = me * n + jnp.arange(n)
        li = jnp.exp(temp) * zi @ all_t.T
        lt = jnp.exp(temp) * zt @ all_i.T
        ce = lambda l: -jnp.take_along_axis(jax.nn.log_softmax(l, -1), lab[:, None], 1).sum()
        total = n * _axis_size("x")
        return jax.lax.psum(ce(li) + ce(lt), "x") / (2 * total)

    sm = _smap(mesh, body, (P("x"), P("x"), P(), P(), P()), P(), check_vma=False)

    def f(img, txt, wi, wt, temp):
        return jax.value_and_grad(sm, argnums=(2, 3, 4))(img, txt, wi, wt, temp)
    return f


def _diffusion_block(x, t, w_t1, w_t2, gamma, beta, w_conv):
    half = 16
    freqs = jnp.exp(-np.log(10000.0) * jnp.arange(half) / half)
    emb = jnp.concatenate([jnp.sin(t[:, None] * freqs), jnp.cos(t[:, None] * freqs)], -1)   # [b, 32]
    temb = jax.nn.silu(emb @ w_t1) @ w_t2                    # [b, C]
    b, hh, ww, c = x.shape
    g = x.reshape(b, hh, ww, 4, c // 4)
    m = g.mean(axis=(1, 2, 4), keepdims=True)
    v = g.var(axis=(1, 2, 4), keepdims=True)
    hn = ((g - m) * jax.lax.rsqrt(v + 1e-5)).reshape(b, hh, ww, c) * gamma + beta
    h = _conv(jax.nn.silu(hn), w_conv) + temb[:, None, None, :]
    return x + h


# ==== meshes ===================================================================================
def _mesh3_ops(mesh):
    def f(x, w):
        t = jnp.transpose(x, (2, 0, 1))                       # [c, a, b]
        s = x.sum(1)                                          # [a, c]
        r = x.reshape(8, 64) @ w                              # merge b, c
        return _wsc(mesh, t * 2.0, P("a", "b", "c")), s, _wsc(mesh, r, P(("c", "a"), "b"))
    return f


def _mlp_grad(w1, w2, x, y):
    return jax.value_and_grad(lambda ws: jnp.mean((jax.nn.gelu(x @ ws[0]) @ ws[1] - y) ** 2))((w1, w2))


def _attn_heads(x, wq, wk, wv, wo):
    b, s, d = x.shape
    q, k, v = ((x @ w).reshape(b, s, 8, d // 8) for w in (wq, wk, wv))
    sc = _causal(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(d // 8)))
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, -1), v).reshape(b, s, d) @ wo


def _reshard44(mesh):
    def f(a):
        b = _wsc(mesh, a * 2.0, P("y", "x"))
        c = _wsc(mesh, b + 1.0, P(("x", "y"), None))
        d = _wsc(mesh, jnp.tanh(c), P(None, ("y", "x")))
        e = _wsc(mesh, d.T @ a, P("x", None))
        return d, e
    return f


def _perm_mesh_mix(mesh):
    sm = _smap(mesh, lambda a: (jax.lax.ppermute(a, "x", [(i, (i + 1) % 4) for i in range(4)]),
                                jax.lax.all_gather(a.sum(0), "y", tiled=True)),
               P("x", "y"), (P("x", "y"), P("x")), check_vma=False)

    def f(a, w):
        h = jnp.tanh(a @ w)
        r, g = sm(h)
        return r, g, h.sum(0)
    return f


def _uneven_conv(mesh):
    def f(x, w):
        y = _wsc(mesh, x[:, :30, :, :], P(None, "x"))
        h = jax.nn.relu(_conv(y, w))
        p = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")   # [b, 15, 4, c]
        return p, h.sum((1, 2))
    return f


def _uneven3(mesh):
    def f(x, w):
        y = _wsc(mesh, x[:9, :7, :5], P("a", "b", "c"))
        z = jnp.einsum("ijk,kl->ijl", jnp.tanh(y), w)
        return z, y.sum((0, 2)), _wsc(mesh, y * 3.0, P("c", None, "a"))
    return f


def _f16_ln_softmax(x, g):
    h = _ln(x.astype(jnp.float16)) * g
    s = jax.nn.softmax(h, axis=0)
    return s, h.max(1), jnp.mean(h, axis=0)


# ==== edge probes: uneven padding vs reductions, halos wider than a shard, batched dynamic slices =====
def _uneven_reduce_pad(mesh):
    # 13 columns over 8 (uneven): the padding must not leak into max of negatives, min of positives,
    # prod, argmin, logsumexp, int sums, sort (padding last) or top_k of negatives.
    def f(x, k):
        neg = _wsc(mesh, -jnp.abs(x[:, :13]) - 1.0, P(None, "x"))
        pos = _wsc(mesh, jnp.abs(x[:, :13]) + 1.0, P(None, "x"))
        ik = _wsc(mesh, k[:, :13] - 7, P(None, "x"))
        return (neg.max(1), pos.min(1), (pos * 0.5).prod(1), jnp.argmin(pos, 1), jnp.argmax(neg, 1),
                jax.nn.logsumexp(neg, 1), ik.sum(1), ik.max(1), jnp.sort(neg, 1), jax.lax.top_k(neg, 3)[0],
                jnp.cumprod(pos * 0.9, 1), jnp.flip(neg, 1))
    return f


def _wide_halo_window(x):
    # 16 rows over 8 (2 per shard): windows of 5 and 7 rows need halos from several shards away.
    a = jax.lax.reduce_window(x, 0.0, jax.lax.add, (5, 1), (1, 1), "SAME")
    b = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (7, 1), (3, 1), ((3, 3), (0, 0)))
    c = jnp.cumsum(x[::-1], 0)
    return a, b, c


def _dilated_conv_spatial(x, w):
    # Atrous 3x3 conv (rhs dilation 3) with the height sharded over 8, and a stride-3 conv on it.
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", rhs_dilation=(3, 3),
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    z = jax.lax.conv_general_dilated(x, w, (3, 3), ((2, 2), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return y, z


def _lhs_dilated_pad(x):
    # Interior and negative padding of a sharded dim; a strided slice after them.
    a = jax.lax.pad(x, 0.5, ((-3, 2, 0), (0, 0, 0)))
    b = jax.lax.pad(x, -1.0, ((5, 3, 2), (1, 1, 0)))
    return a * 2.0, b[1::3] + 1.0


def _batched_dyn_slice(x, starts, upd):
    # vmap of dynamic_slice / dynamic_update_slice: gathers / scatters with a sharded batch dim and
    # per-row traced starts into a sharded window dim.
    sl = jax.vmap(lambda row, s: jax.lax.dynamic_slice(row, (s, 0), (5, 4)))(x, starts)
    up = jax.vmap(lambda row, s, u: jax.lax.dynamic_update_slice(row, u, (s, 2)))(x, starts, upd)
    return sl, up


def _reshape_misaligned(mesh):
    def f(x):
        y = x.reshape(96)
        z = _wsc(mesh, y.reshape(4, 24), P("x"))          # 4 rows over 8: uneven, misaligned
        w = _wsc(mesh, y.reshape(12, 8).T, P(None, "x"))   # 12 columns over 8
        return z * 2.0, w + 1.0, z.sum(1)
    return f


def _smap_merged_reversed(mesh):
    # shard_map with P(('y','x')) (y major): axis_index over (y, x), psum, all_gather and ppermute
    # on the merged axes.
    def body(a):
        i = jax.lax.axis_index(("y", "x"))
        s = jax.lax.psum(a * (i + 1).astype(a.dtype), ("y", "x"))
        g = jax.lax.all_gather(a.sum(1), ("y", "x"), tiled=True)
        r = jax.lax.ppermute(a, ("y", "x"), [(j, (j + 3) % 8) for j in range(8)])
        return s, g, r + i.astype(a.dtype)

    return _smap(mesh, body, P(("y", "x")), (P(), P(), P(("y", "x"))), check_vma=False)


def _smap_dtypes(mesh):
    # Collectives of bf16, int8, bool and uint32 in a shard_map; psum over a size-1 axis.
    def body(a, b, c, u):
        s = jax.lax.psum(a, "x")
        t = jax.lax.all_to_all(b, "x", 0, 0, tiled=True)
        m = jax.lax.ppermute(c, "x", [(j, (j + 1) % 4) for j in range(4)])
        mx = jax.lax.pmax(u, "x")
        one = jax.lax.psum(a.astype(jnp.float32), "one")
        return s, t, m, mx, one

    return _smap(mesh, body, (P("x"), P("x"), P("x"), P("x")), (P(), P("x"), P("x"), P(), P("x")),
                 check_vma=False)


def _smap_out_axis_only(mesh):
    # Replicated inputs, outputs sharded by axis_index-dependent compute (out spec names an axis the
    # inputs do not), psum_scatter untiled, all_gather of a scalar.
    def body(a, w):
        i = jax.lax.axis_index("y")
        rows = jax.lax.dynamic_slice_in_dim(a, i * 4, 4, 0) @ w
        red = jax.lax.psum_scatter(a.reshape(4, 4, 8), "y", scatter_dimension=0, tiled=False)
        sc = jax.lax.all_gather(jnp.sum(rows), "y")
        return rows, red, sc

    return _smap(mesh, body, (P(), P()), (P("y"), P("y"), P()), check_vma=False)


def _while_reshard_carry(mesh):
    # A while_loop whose carry is constrained to a different sharding inside the body than outside,
    # with a dynamic trip count and a DUS at the counter into the carry's sharded dim.
    def f(x, n):
        def cond(c):
            return c[0] < n[0]

        def body(c):
            i, h, buf = c
            h = _wsc(mesh, jnp.tanh(h @ h.T) @ h, P(None, "x"))
            buf = jax.lax.dynamic_update_slice_in_dim(buf, h[:1], i, 0)
            return i + 1, h * 0.5, buf

        x = _wsc(mesh, x, P("x", None))
        return jax.lax.while_loop(cond, body, (jnp.int32(0), x, jnp.zeros((16, x.shape[1]))))
    return f


def _gather_2d_sharded(x, ii, jj):
    # x[ii, jj] (point gather, both operand dims sharded), x[ii] rows, x[:, jj] columns, and the
    # scatter-add transpose of the point gather.
    pts = x[ii, jj]
    rows = x[ii]
    cols = x[:, jj]
    back = jnp.zeros_like(x).at[ii, jj].add(pts * 2.0)
    return pts, rows, cols, back


def _eigh_chol_sharded(a, b):
    spd = jnp.einsum("bij,bkj->bik", a, a) + 8.0 * jnp.eye(a.shape[1])
    w, v = jnp.linalg.eigh(spd)
    l = jnp.linalg.cholesky(spd)
    x = jax.scipy.linalg.cho_solve((l, True), b)
    return w, jnp.abs(v[..., -1]), jnp.abs(jnp.diagonal(l, axis1=1, axis2=2)), x


def _conv_groups_sharded(x, w, wd):
    # feature_group_count=4 with the feature dim sharded over y; depthwise with channels over y.
    g = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=4,
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    d = jax.lax.conv_general_dilated(x, wd, (2, 2), "SAME", feature_group_count=x.shape[-1],
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return g, d


def _scan_len_edge(x, w):
    # scan of length 1, reverse scan with unroll > length, and a fori_loop with zero trips.
    h1, y1 = jax.lax.scan(lambda h, a: (jnp.tanh(h @ w + a), h.sum()), x[0], x[:1])
    h2, y2 = jax.lax.scan(lambda h, a: (h * 0.5 + a, h), x[0], x, reverse=True, unroll=20)
    h3 = jax.lax.fori_loop(3, 3, lambda i, h: h @ w, x[1])
    return h1, y1, h2, y2, h3


def _complex_sharded(a, b, idx):
    z = jax.lax.complex(a, b)
    g = z[idx]
    s = jnp.zeros_like(z).at[idx].add(g * 1j)
    return jnp.abs(z @ z.conj().T), jnp.real(s), jnp.imag(jnp.cumsum(z, 0))


def _dot_batch_middle(a, b):
    # dot_general with the batch dim in the middle of both operands and sharded contraction on a
    # different mesh axis than the batch, preferred f32 from bf16.
    return (jax.lax.dot_general(a, b, (((2,), (0,)), ((1,), (1,))), preferred_element_type=jnp.float32),
            jnp.einsum("ibk,kbj->bij", a, b).astype(jnp.float32).sum(0))


# ==== edge probes 2: low-precision accumulation, k larger than a shard, empty shards, odd shapes ====
def _long_sums(x):
    # Long reductions of a low-precision array along its sharded dim: XLA accumulates in f32.
    return (x.sum(1), x.mean(1), jnp.cumsum(x, 1)[:, ::512], jax.nn.logsumexp(x, 1), x.var(1),
            x.sum(0), jnp.sum(x), x.astype(jnp.float32).sum(1))


def _topk_k_gt_shard(x):
    v, i = jax.lax.top_k(x, 12)
    av, ai = jax.lax.approx_max_k(x, 12, recall_target=1.0)
    return v, i, av, jnp.argsort(x, 1)[:, :10], jnp.sort(x, 1)[:, -10:]


def _tiny_uneven(mesh):
    # 5 and 3 elements over 8 devices (made inside): shards of 1 and empty ones.
    def f(x, y):
        a = _wsc(mesh, x[:5], P("x"))
        b = _wsc(mesh, y[:3], P("x"))
        c = _wsc(mesh, jnp.concatenate([a, b]), P("x"))
        return (a.sum(0), a.max(0), jnp.argmax(a, 0), jnp.cumsum(a, 0), jnp.sort(a, 0), jnp.flip(b, 0),
                c * 2.0, jnp.argsort(c[:, 0]), c.min())
    return f


def _odd_shapes(mesh):
    def f(x, w, k):
        a = _wsc(mesh, x[:37, :29], P("x", "y"))
        h = jax.nn.softmax(a @ w[:29, :19], axis=0)
        t = _wsc(mesh, a.T, P("x", "y")) + 1.0
        img = _wsc(mesh, x[:33, :30].reshape(1, 33, 30, 1), P(None, "x", "y"))
        c = jax.lax.conv_general_dilated(img, k, (2, 3), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return h, t, c, a.sum()
    return f


def _typed_keys(mesh):
    def per_device(k):
        k = jax.random.fold_in(k[0], jax.lax.axis_index("x"))
        return jax.random.uniform(k, (1, 4))

    sm = _smap(mesh, per_device, P("x"), P("x"), check_vma=False)

    def f(seed, x):
        keys = jax.random.split(jax.random.key(seed[0]), 8)
        keys = _wsc(mesh, keys, P("x"))
        n = jax.vmap(lambda k, r: jax.random.normal(k, (4,)) + r)(keys, x)
        return n, sm(keys), jax.random.key_data(keys)
    return f


def _opt_barrier_scatter_flags(x, idx, vals):
    a, b = jax.lax.optimization_barrier((x * 2.0, x.sum(0)))
    s1 = a.at[idx].set(vals, unique_indices=True, indices_are_sorted=True)
    s2 = a.at[idx].add(vals, mode="promise_in_bounds")
    g = a.at[idx + 30].get(mode="fill", fill_value=-1.0)
    return s1, s2, g, b


def _cond_in_smap(mesh):
    # lax.cond inside a shard_map on a psum'd (uniform) predicate, collectives in both branches.
    def body(a):
        tot = jax.lax.psum(a.sum(), "x")

        def hi(a):
            return jax.lax.ppermute(a, "x", [(j, (j + 1) % 8) for j in range(8)]) * 2.0

        def lo(a):
            return a - jax.lax.pmean(a, "x")
        return jax.lax.cond(tot > 0, hi, lo, a), tot

    return _smap(mesh, body, P("x"), (P("x"), P()), check_vma=False)


def _while_smap_body(mesh):
    sm = _smap(mesh, lambda h: jax.lax.psum(jnp.tanh(h), "x") / 8.0 + h, P("x"), P("x"), check_vma=False)

    def f(x, limit):
        def cond(c):
            return (c[1] < limit[0]) & (jnp.max(jnp.abs(c[0])) < 50.0)

        def body(c):
            return sm(c[0]) * 1.5, c[1] + 1
        return jax.lax.while_loop(cond, body, (x, jnp.int32(0)))
    return f


def _sort_uneven_multi(mesh):
    def f(k1, k2, v):
        a = _wsc(mesh, k1[:, :13], P(None, "x"))
        b = _wsc(mesh, k2[:, :13], P(None, "x"))
        c = _wsc(mesh, v[:, :13], P(None, "x"))
        return jax.lax.sort((a, b, c), dimension=1, num_keys=2, is_stable=True)
    return f


def _conv_t_stride3(x, w):
    return jax.lax.conv_transpose(x, w, (3, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _rw_dilations(x):
    a = jax.lax.reduce_window(x, 0.0, jax.lax.add, (3, 1), (1, 1), ((2, 2), (0, 0)), window_dilation=(2, 1))
    b = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (3, 1), (2, 1), ((1, 1), (0, 0)), base_dilation=(2, 1))
    return a, b


def _gather_windows(x, starts):
    # Windows of 12 rows at traced starts along the sharded dim (gather slice size 12 over 8 shards).
    return jax.vmap(lambda s: jax.lax.dynamic_slice_in_dim(x, s, 12, 0))(starts).sum(-1)


def _lowp_accum(x, w, img, k):
    # Long low-precision accumulations that jnp does not widen: lax.reduce of the raw dtype, a dot
    # with K = 2048 and a conv over 3x3x128 inputs, all of positive values.
    r = jax.lax.reduce(x, jnp.array(0, x.dtype), jax.lax.add, (1,))
    d = x @ w
    c = jax.lax.conv_general_dilated(img, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return r, d, c


def _sort_nan_ties(x):
    # NaN, +-inf, -0.0 / 0.0 and ties along the sharded dim: sort (NaN last), stable argsort,
    # top_k (lowest index first on ties), argmax / argmin (first occurrence), cummax.
    # (NaN in an output never compares equal: the sorted values come back with NaN as 99.)
    return (jnp.nan_to_num(jnp.sort(x, 1), nan=99.0, posinf=50.0, neginf=-50.0),
            jnp.argsort(x, 1, stable=True), jax.lax.top_k(x, 6)[1],
            jnp.argmax(jnp.nan_to_num(x, nan=0.0), 1), jnp.argmin(jnp.nan_to_num(x, nan=0.0), 1),
            jnp.nanargmax(x, 1), jax.lax.cummax(jnp.nan_to_num(x, nan=-5.0), 1))


def _sort_nan_args():
    r = np.random.default_rng(1950)
    x = r.integers(-2, 3, (4, 64)).astype(np.float32)
    x[r.random((4, 64)) < 0.1] = np.nan
    x[r.random((4, 64)) < 0.05] = np.inf
    x[r.random((4, 64)) < 0.05] = -np.inf
    x[r.random((4, 64)) < 0.1] = -0.0
    return [x]


def _smap_auto_same_dim(mesh):
    # Input split over (x, y) on dim 0, shard_map manual over x only: in the body dim 0 is still split
    # over the automatic y; a cumsum along it and a psum over x.
    def body(a):
        return jnp.cumsum(a, 0) + jax.lax.psum(a.sum(0), "x")

    sm = _smap(mesh, body, P("x"), P("x"), axis_names={"x"}, check_vma=False)
    return lambda a: sm(a) * 2.0


def _smap_manual_minor(mesh):
    # Input split P(('y','x')) (x minor), shard_map manual over x (x major in its blocks).
    def body(a):
        return jax.lax.psum(a * jax.lax.axis_index("x").astype(a.dtype), "x") + a

    sm = _smap(mesh, body, P("x"), P("x"), axis_names={"x"}, check_vma=False)
    return lambda a: sm(a)


def _reshape_split_merged(mesh):
    def f(a):
        b = _wsc(mesh, a.reshape(2, 32, 4), P("x", "y"))
        c = _wsc(mesh, b.transpose(1, 0, 2).reshape(64, 4), P(("y", "x")))
        d = _wsc(mesh, a.reshape(8, 8, 4), P(("x", "y")))
        return b * 2.0, c + 1.0, d.sum(1)
    return f


def _coll_matmul_grad(mesh):
    fwd = _coll_matmul_ag(mesh)
    return lambda x, w: jax.grad(lambda x, w: jnp.sum(jnp.tanh(fwd(x, w)) ** 2), argnums=(0, 1))(x, w)


def _ulysses_grad(mesh):
    def body(q, k, v):
        a2a = lambda t: jax.lax.all_to_all(t, "sp", 2, 1, tiled=True)
        back = lambda t: jax.lax.all_to_all(t, "sp", 1, 2, tiled=True)
        q, k, v = a2a(q), a2a(k), a2a(v)
        s = _causal(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(q.shape[-1])))
        return back(jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v))

    spec = P(None, "sp")
    sm = _smap(mesh, body, (spec, spec, spec), spec, check_vma=False)
    return lambda q, k, v: jax.grad(lambda qkv: jnp.sum(sm(*qkv) ** 2))((q, k, v))


def _perm3_smap(mesh):
    # Permuted devices on 2x2x2, shard_map manual over (b, c) with a automatic: psum over (c, b),
    # all_gather over b, ppermute over c, axis_index over (b, c).
    def body(u):
        s = jax.lax.psum(u, ("c", "b"))
        g = jax.lax.all_gather(u.sum(1), "b", tiled=True)
        r = jax.lax.ppermute(u, "c", [(0, 1), (1, 0)])
        i = jax.lax.axis_index(("b", "c")).astype(u.dtype)
        return s, g, r + i

    sm = _smap(mesh, body, P(("b", "c"), None), (P(), P(), P(("b", "c"), None)), axis_names={"b", "c"},
               check_vma=False)

    def f(x, w):
        h = jnp.tanh(_wsc(mesh, x @ w, P(("b", "c"), "a")))
        s, g, r = sm(h)
        return s, g, r, _wsc(mesh, h.T, P("a", ("c", "b")))
    return f


def _perm16_reshard(mesh):
    def f(a, w):
        b = _wsc(mesh, jnp.tanh(a @ w), P("y", "x"))
        c = _wsc(mesh, b.T * 2.0, P(("x", "y")))
        d = _wsc(mesh, c.reshape(8, 4, 32).sum(1), P(None, ("y", "x")))
        return b, c, d
    return f


_LM_V, _LM_D, _LM_L, _LM_S, _LM_B = 128, 32, 2, 16, 8


def _lm_train_step(mesh):
    # Tied-embedding LM: embed (vocab over tp), scan over 2 checkpointed layers (attention + MLP),
    # cross-entropy, global-norm clip, AdamW with sharded moments; 2x2x2 (data, fsdp, tp).
    def layer(h, w):
        wqkv, wo, w1, w2 = w
        b, s, d = h.shape
        x = _ln(h)
        q, k, v = (t.reshape(b, s, 4, d // 4) for t in jnp.split(x @ wqkv, 3, -1))
        sc = _causal(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(d // 4)))
        h = h + jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, -1), v).reshape(b, s, d) @ wo
        h = h + jax.nn.gelu(_ln(h) @ w1) @ w2
        return _wsc(mesh, h, P(("data", "fsdp"))), None

    def loss_fn(params, ids, tgt):
        emb = params[0]
        h = emb[ids] * np.float32(np.sqrt(_LM_D))
        h, _ = jax.lax.scan(jax.checkpoint(layer), h, params[1:])
        logits = _ln(h) @ emb.T
        lp = jax.nn.log_softmax(logits, -1)
        return -jnp.mean(jnp.take_along_axis(lp, tgt[..., None], -1))

    def f(*a):
        params, m, v, ids, tgt = a[0:5], a[5:10], a[10:15], a[15], a[16]
        loss, g = jax.value_and_grad(loss_fn)(params, ids, tgt)
        gn = jnp.sqrt(sum(jnp.sum(t * t) for t in g))
        g = [t * jnp.minimum(1.0, 1.0 / (gn + 1e-6)) for t in g]
        outs_p, outs_m, outs_v = [], [], []
        for p_, g_, m_, v_ in zip(params, g, m, v):
            m_ = 0.9 * m_ + 0.1 * g_
            v_ = 0.99 * v_ + 0.01 * g_ * g_
            p_ = p_ - 1e-2 * (m_ / (jnp.sqrt(v_) + 1e-8) + (0.01 * p_ if p_.ndim >= 2 else 0.0))
            outs_p.append(p_)
            outs_m.append(m_)
            outs_v.append(v_)
        return tuple(outs_p), tuple(outs_m), tuple(outs_v), loss, gn
    return f


_LM_SPECS = [P("tp", "fsdp"), P(None, "fsdp", "tp"), P(None, "tp", "fsdp"), P(None, "fsdp", "tp"), P(None, "tp", "fsdp")]


def _lm_args():
    d, L = _LM_D, _LM_L
    ps = [_rand((_LM_V, d), 2000, scale=0.5), _rand((L, d, 3 * d), 2001, scale=d ** -0.5),
          _rand((L, d, d), 2002, scale=d ** -0.5), _rand((L, d, 4 * d), 2003, scale=d ** -0.5),
          _rand((L, 4 * d, d), 2004, scale=(4 * d) ** -0.5)]
    ms = [_rand(p.shape, 2010 + i, scale=1e-3) for i, p in enumerate(ps)]
    vs = [np.abs(_rand(p.shape, 2020 + i, scale=1e-3)) for i, p in enumerate(ps)]
    return ps + ms + vs + [_ids((_LM_B, _LM_S), _LM_V, 2030), _ids((_LM_B, _LM_S), _LM_V, 2031)]


def _int_edges(a, b, f):
    # XLA-defined integer edge cases: x / 0 = -1, x % 0 = x, INT_MIN / -1 = INT_MIN, shifts by the
    # bit width or more, and float -> int conversions out of range (saturating) and of NaN (0).
    q = jax.lax.div(a, b)
    r = jax.lax.rem(a, b)
    sl = jax.lax.shift_left(a, jnp.full_like(a, 33))
    srl = jax.lax.shift_right_logical(a, jnp.full_like(a, 40))
    sra = jax.lax.shift_right_arithmetic(a, jnp.full_like(a, 35))
    ci = f.astype(jnp.int32)
    cu = f.astype(jnp.uint8)
    c8 = f.astype(jnp.int8)
    return q, r, sl, srl, sra, ci, cu, c8


def _int_edge_args():
    a = np.array([7, -7, 0, -2 ** 31, 2 ** 31 - 1, 5, -5, 13] * 4, np.int32)
    b = np.array([0, 0, 0, -1, -1, 2, -3, 0] * 4, np.int32)
    f = np.array([1e10, -1e10, np.nan, np.inf, -np.inf, 300.7, -1.5, 255.9] * 4, np.float32)
    return [a, b, f]


def _float_edges(x, y, z):
    # NaN through elementwise max / min / clamp (XLA propagates it), complex functions on branch
    # cuts, f32 -> f16 / bf16 overflow and subnormals, nextafter.
    mx = jnp.nan_to_num(jnp.maximum(x, y), nan=77.0)
    mn = jnp.nan_to_num(jnp.minimum(x, y), nan=77.0)
    cl = jnp.nan_to_num(jax.lax.clamp(-1.0, x, 1.0), nan=77.0)
    relu = jnp.nan_to_num(jax.nn.relu(x), nan=77.0)
    c = jax.lax.complex(z, jnp.where(jnp.arange(z.shape[0]) % 2 == 0, 0.0, -0.0))
    cs = jnp.sqrt(c)
    cl2 = jnp.log(c)
    h = (z * 1e4).astype(jnp.float16).astype(jnp.float32)
    # bf16 rounding near the bottom of the normal range (XLA's CPU runtime flushes f32 subnormals
    # to zero and xshard keeps them, a documented difference: so no subnormal results here).
    bf = (z * 1e-36).astype(jnp.bfloat16).astype(jnp.float32) * 1e36
    na = jnp.nextafter(z, jnp.inf) - z
    return mx, mn, cl, relu, jnp.real(cs), jnp.imag(cs), jnp.real(cl2), jnp.imag(cl2), jnp.nan_to_num(h, posinf=1e9, neginf=-1e9), bf, na


def _float_edge_args():
    r = np.random.default_rng(2100)
    x = r.standard_normal(32).astype(np.float32)
    x[::5] = np.nan
    y = r.standard_normal(32).astype(np.float32)
    y[1::7] = np.nan
    z = (r.standard_normal(32) * 10).astype(np.float32)
    z[::3] = -np.abs(z[::3])
    return [x, y, z]


def _scatter_batching(t, i, v):
    # vmap of .at[i].add / .set / gather: scatter and gather with operand batching dims (batch over x,
    # the table rows over y).
    add = jax.vmap(lambda t, i, v: t.at[i].add(v))(t, i, v)
    st = jax.vmap(lambda t, i, v: t.at[i, 1:3].set(v[:, :2]))(t, i, v)
    g = jax.vmap(lambda t, i: t[i] * 2.0)(t, i)
    return add, st, g


def _while_swap(mesh):
    # A while_loop whose body swaps two carries of different shardings (and a cond that swaps too).
    def f(a, b, n):
        a = _wsc(mesh, a, P("x", None))
        b = _wsc(mesh, b, P(None, "x"))

        def body(c):
            i, a, b = c
            return i + 1, jnp.tanh(b) + 0.5 * a, a * 0.9

        i, a, b = jax.lax.while_loop(lambda c: c[0] < n[0], body, (jnp.int32(0), a, b))
        a2, b2 = jax.lax.cond(n[0] > 2, lambda a, b: (b, a), lambda a, b: (a, b), a, b)
        return a, b, a2 - b2
    return f


def _scan_time_sharded(mesh):
    # lax.scan over xs whose scanned (time) dim is sharded; ys constrained back to time-sharded.
    def f(h, xs, w):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, h * 2.0
        h, ys = jax.lax.scan(step, h, xs)
        return h, _wsc(mesh, ys, P("x"))
    return f


def _dyn_from_argmax(x, table):
    # A dynamic slice / update at an index computed by an argmax over the sharded dim.
    i = jnp.argmax(x.sum(1))
    row = jax.lax.dynamic_slice_in_dim(table, i, 4, 0)
    upd = jax.lax.dynamic_update_slice_in_dim(table, row * -1.0, (i + 5) % 32, 0)
    return i, row, upd


def _lowp_allreduce(mesh):
    # All-reduces of bf16 / f16 partial values: a psum in shard_map and the partial sums of a matmul
    # with its contraction dim over 16. XLA's CPU all-reduce adds low-precision values in f32.
    sm = _smap(mesh, lambda a: jax.lax.psum(a, "x"), P("x"), P(), check_vma=False)

    def f(a, b, w):
        return sm(a), b @ w
    return f


def _lowp_allreduce_args(dt):
    def make():
        big = 256.0 if dt == "bf16" else 2048.0
        a = np.ones((16, 8), np.float32)
        for j in range(8):
            a[2 * j, j] = big
        b = np.ones((4, 16), np.float32)
        b[:, 3] = big
        w = np.ones((16, 8), np.float32)
        cast = (lambda t: t.astype(jnp.bfloat16)) if dt == "bf16" else (lambda t: t.astype(np.float16))
        return [cast(a), cast(b), cast(w)]
    return make


def _f16_long_reduce(x):
    return jax.lax.reduce(x, np.float16(0), jax.lax.add, (1,)), jax.lax.reduce(x, np.float16(0), jax.lax.add, (0,))


def _lowp_scan_scatter(x, ids):
    # Low-precision cumsum along an unsharded dim (rows over 8) and a segment_sum with many
    # duplicates (scatter-add), both of positive values.
    return jnp.cumsum(x, 1)[:, ::256], jax.ops.segment_sum(x.reshape(-1), ids, 4)


def _wide_conv1d(x, k1, k2):
    # 1-D convs along a 128-long signal over 8 (16 per shard): kernels of 33 (halo = a shard) and
    # 49 (halo spans two shards), SAME and a strided VALID one, and jax.scipy.signal.convolve.
    dn = ("NWC", "WIO", "NWC")
    a = jax.lax.conv_general_dilated(x, k1, (1,), "SAME", dimension_numbers=dn)
    b = jax.lax.conv_general_dilated(x, k2, (1,), "SAME", dimension_numbers=dn)
    c = jax.lax.conv_general_dilated(x, k2, (5,), "VALID", dimension_numbers=dn)
    d = jax.vmap(lambda s: jax.scipy.signal.convolve(s, k1[:, 0, 0], mode="same"))(x[..., 0])
    return a, b, c, d


def _big_kernels(x, ids, img, k):
    # Per-device sizes past the kernels' threading thresholds (2^18 elements): windowed max, row /
    # column reductions, argmax, sort, cumsum, a big gather and scatter-add, a fused elementwise
    # chain and a conv. (Run with XSHARD_NUM_THREADS above the device count to split them.)
    rw = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (3, 3), (1, 1), "SAME")
    g = x[ids]
    sc = jnp.zeros_like(x).at[ids[:2048] % 1024].add(g[:2048] * 0.5)
    c = jax.lax.conv_general_dilated(img, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return (rw[::7, ::5], x.sum(1), x.max(0), jnp.argmax(x, 1), jnp.sort(x, 1)[:, ::31],
            jnp.cumsum(x, 1)[:, ::63], g.sum(1), sc[::3, ::11], (jnp.tanh(x) * 2.0 + 1.0)[::9, ::13],
            c[:, ::5, ::5])


def _fusion_stress(x, y):
    # Elementwise / reduce / broadcast chains of the shapes an executor fuses, past 2^16 elements per
    # device: softmax over a middle dim, norms over dim 0 and over (0, 2), iota masks, a transposed
    # add, reversed slices, an int detour, multiply-reduce, argmax over the middle dim.
    b, s_, d = x.shape
    sm = jax.nn.softmax(x, axis=1)
    n0 = (x - x.mean(0, keepdims=True)) * jax.lax.rsqrt(x.var(0, keepdims=True) + 1e-5)
    n02 = x - x.mean(axis=(0, 2), keepdims=True)
    mask = jnp.arange(s_)[None, :, None] > jnp.arange(d)[None, None, :]
    w = jnp.where(mask, x, x.max(2, keepdims=True))
    t = x + jnp.transpose(y, (0, 2, 1))
    r = x[:, ::-1, 1:-1][:, 1:] + x[:, 1:, :-1][:, ::-1, 1:]
    ints = ((x * 100).astype(jnp.int32) % 7).astype(jnp.float32) + jnp.where(x.sum(2, keepdims=True) > x.max(1, keepdims=True), 1.0, -1.0)
    mr = jnp.sum(x * y.transpose(0, 2, 1), axis=2)
    am = jnp.argmax(x, axis=1)
    cat = jnp.concatenate([x[:, :5], jnp.exp(-jnp.abs(x[:, -5:]))], 1).sum(1)
    return sm, n0, n02, w, t, r, ints, mr, am, cat


def _composite(x, w):
    # jax.lax.composite (a named decomposition, an HLO call marked composite) around a sharded matmul.
    def gelu_dense(x, w):
        return jax.nn.gelu(x @ w)

    my_gelu_dense = jax.lax.composite(gelu_dense, name="probe.gelu_dense")

    return my_gelu_dense(x, w) * 2.0, x.sum(0)


def _dot_algorithms(a, b):
    # Dots with explicit precision and DotAlgorithmPresets (HLO algorithm= / operand_precision=).
    p1 = jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)
    p2 = jax.lax.dot(a, b, precision=jax.lax.DotAlgorithmPreset.F32_F32_F32)
    p3 = jnp.einsum("ij,jk->ik", a, b, precision="bfloat16", preferred_element_type=jnp.float32)
    return p1, p2, p3


def _debug_print(x, w):
    # jax.debug.print inside a sharded jit (a host callback custom-call with side effects).
    h = jnp.tanh(x @ w)
    jax.debug.print("h mean {m}", m=h.mean())
    return h * 2.0


def _smap_complex_ints(mesh):
    # complex64 psum / all_gather / ppermute / psum_scatter and uint8 / int16 psums that wrap, in a
    # shard_map over 8.
    def body(zr, zi, u, i16):
        z = jax.lax.complex(zr, zi)
        s = jax.lax.psum(z, "x")
        g = jax.lax.all_gather(z[:1], "x", tiled=True)
        r = jax.lax.ppermute(z * 1j, "x", [(j, (j + 3) % 8) for j in range(8)])
        rs = jax.lax.psum_scatter(jnp.tile(z, (8, 1)), "x", scatter_dimension=0, tiled=True)
        return (jnp.real(s), jnp.imag(s), jnp.abs(g), jnp.angle(r), jnp.real(rs),
                jax.lax.psum(u, "x"), jax.lax.psum(i16, "x"), jax.lax.pmin(i16, "x"))

    return _smap(mesh, body, (P("x"), P("x"), P("x"), P("x")),
                 (P(), P(), P(), P("x"), P("x"), P(), P(), P()), check_vma=False)


def _smap_varying_control(mesh):
    # Per-device control flow in a shard_map: cond / switch on axis_index and a while_loop whose trip
    # count differs per device (no collectives inside), then a psum.
    def body(a):
        i = jax.lax.axis_index("x")
        c = jax.lax.cond(i % 2 == 0, lambda a: jnp.tanh(a) * 3.0, lambda a: a[::-1] - 1.0, a)
        sw = jax.lax.switch(i % 3, [lambda a: a * 2.0, lambda a: jnp.sin(a), lambda a: a @ a.T @ a], a)

        def cond(carry):
            return carry[0] < i + 1

        def step(carry):
            return carry[0] + 1, carry[1] * 0.5 + 1.0
        n, w = jax.lax.while_loop(cond, step, (jnp.int32(0), a))
        return c, sw, w, jax.lax.psum(n, "x")

    return _smap(mesh, body, P("x"), (P("x"), P("x"), P("x"), P()), check_vma=False)


def _vmap_of_smap(mesh):
    # vmap over a shard_map (the batch dim is added outside the manual region) and a vmap with
    # spmd_axis_name over a constrained function.
    sm = _smap(mesh, lambda a, w: jax.lax.psum(a @ w, "y"), (P("x", "y"), P("y", None)), P("x", None),
               check_vma=False)

    def per(v):
        return _wsc(mesh, jnp.tanh(v) * 2.0, P("y"))

    def f(a, w, v):
        return jax.vmap(sm, in_axes=(0, None))(a, w), jax.vmap(per, spmd_axis_name="x")(v)
    return f


def _remat_in_smap(mesh):
    # jax.checkpoint around a function with a psum inside a shard_map, differentiated: the backward
    # pass rematerializes the collective; a custom_vjp whose bwd has its own psum.
    @jax.custom_vjp
    def sp_norm(x):
        return x * jax.lax.rsqrt(jax.lax.psum(jnp.sum(x * x, -1, keepdims=True), "x") + 1e-6)

    def fwd(x):
        r = jax.lax.rsqrt(jax.lax.psum(jnp.sum(x * x, -1, keepdims=True), "x") + 1e-6)
        return x * r, (x, r)

    def bwd(res, g):
        x, r = res
        dot = jax.lax.psum(jnp.sum(g * x, -1, keepdims=True), "x")
        return (g * r - x * r ** 3 * dot,)

    sp_norm.defvjp(fwd, bwd)

    def body(x, w):
        @jax.checkpoint
        def blk(h):
            return jax.lax.psum(jnp.tanh(h @ w), "x")
        return sp_norm(blk(x) + x[:, :w.shape[1]])

    sm = _smap(mesh, body, (P(None, "x"), P("x", None)), P(None, "x"), check_vma=False)
    return lambda x, w: jax.grad(lambda x, w: jnp.sum(sm(x, w) ** 3), argnums=(0, 1))(x, w)


def _small_merged(mesh):
    # Dims of 4 and 6 over the merged (x, y) = 8 devices: empty and uneven shards in a 2-D merge.
    def f(a, b):
        u = _wsc(mesh, a[:, :4], P(None, ("x", "y")))
        v = _wsc(mesh, b[:6], P(("y", "x")))
        return u * 2.0, u.sum(1), v @ v.T, jnp.cumsum(v, 0), _wsc(mesh, u.T, P(("x", "y")))
    return f


def _donate_reshard(w, m, g):
    # Donated buffers updated in place, one of the outputs resharded away from its input's sharding.
    m2 = 0.9 * m + g
    return w - 0.1 * m2, m2, (w * 2.0).T


def _reshard_everywhere(mesh):
    # The same array resharded to the same target in the entry, in a fori_loop body (closed over),
    # in both branches of a cond, in a scan body and in a nested jit: reshards cached per computation.
    tgt = P(None, "x")

    @jax.jit
    def inner(x):
        return _wsc(mesh, x, tgt) * 3.0

    def f(x, flag):
        a = _wsc(mesh, x, tgt) + 1.0

        def body(i, h):
            return h + _wsc(mesh, x, tgt) * i.astype(x.dtype)
        h = jax.lax.fori_loop(0, 3, body, a)
        c = jax.lax.cond(flag[0] > 0, lambda: _wsc(mesh, x, tgt).sum(0), lambda: _wsc(mesh, x * 2.0, tgt).sum(0))

        def step(carry, k):
            return carry + _wsc(mesh, x, tgt)[k], None
        sc, _ = jax.lax.scan(step, jnp.zeros(x.shape[1]), jnp.arange(4))
        return a, h, c, sc, inner(x), _wsc(mesh, x, P("x", None)) - 1.0
    return f


def _lowp_reduce_scatter(mesh):
    # bf16 psum_scatter over 16 in a shard_map: one 256 and fifteen 1s per element.
    return _smap(mesh, lambda a: jax.lax.psum_scatter(a, "x", scatter_dimension=1, tiled=True), P("x"), P(None, "x"),
                 check_vma=False)


def _lowp_rs_args():
    a = np.ones((16, 16), np.float32)
    for j in range(16):
        a[j, j] = 256.0
    return [a.astype(jnp.bfloat16)]


def _fft_sharded_dim(x, shift):
    # FFT / rfft along the sharded dim itself, and a roll by a traced amount along it.
    f = jnp.fft.fft(x, axis=0)
    r = jnp.fft.irfft(jnp.fft.rfft(x, axis=0) * 0.5, n=x.shape[0], axis=0)
    return jnp.abs(f), r, jnp.roll(x, shift[0], axis=0)


def _beam_search(mesh):
    # Beam search (4 beams, 5 steps) in a while_loop: logits over a vocab sharded on model, top_k over
    # the flattened beam x vocab, beam reordering by gather, sampling noise from fold_in(step).
    K, V = 4, 64

    def f(h0, emb, wout, seed):
        b, d = h0.shape
        key = jax.random.key(seed[0])

        def cond(c):
            return c[0] < 5

        def body(c):
            t, h, scores, toks = c
            logits = jnp.einsum("bkd,dv->bkv", h, wout)                       # [b, K, V]
            logits = _wsc(mesh, logits, P("data", None, "model"))
            noise = jax.random.gumbel(jax.random.fold_in(key, t), logits.shape) * 0.01
            lp = jax.nn.log_softmax(logits + noise, -1) + scores[..., None]
            flat = lp.reshape(b, K * V)
            best, idx = jax.lax.top_k(flat, K)
            beam, tok = idx // V, idx % V
            h = jnp.take_along_axis(h, beam[..., None], 1) + emb[tok]
            toks = jnp.take_along_axis(toks, beam[..., None], 1).at[:, :, t].set(tok)
            return t + 1, jnp.tanh(h), best, toks

        h = jnp.broadcast_to(h0[:, None], (b, K, d))
        init = (jnp.int32(0), h, jnp.zeros((b, K)).at[:, 1:].set(-1e9), jnp.zeros((b, K, 5), jnp.int32))
        _, h, scores, toks = jax.lax.while_loop(cond, body, init)
        return scores, toks, h
    return f


def _iota_uneven(mesh):
    # Iotas on uneven sharded dims: one_hot over a 100-class dim over 8, an arange constrained to 13
    # over 8, triangular masks of a 13 x 13 (rows over 8) and an argmax of a one_hot matmul.
    def f(ids, w):
        oh = _wsc(mesh, jax.nn.one_hot(ids, 100), P(None, "x"))
        r = _wsc(mesh, jnp.arange(13, dtype=jnp.float32) * 2.0, P("x"))
        tri = _wsc(mesh, jnp.tril(jnp.ones((13, 13))) * r[None, :], P("x"))
        return oh.sum(0), r, tri, jnp.argmax(oh @ w[:100], 1), jnp.cumsum(oh, 1)[:, ::9]
    return f


def probe5_programs():
    ps = []

    def add(name, *a, **kw):
        ps.append(Program("p5_" + name, *a, **kw))

    # ---- training
    add("adamw_wd_mask", "AdamW: moments sharded like params, decay mask (matrices only), LN MLP, FSDP 4 x TP 2",
        _plain(_adamw_masked), M42, ("fsdp", "tp"),
        _ADAMW_SPECS * 3 + [P("fsdp"), P("fsdp"), P()],
        (tuple(_ADAMW_SPECS),) * 3 + (P(),), _adamw_args)
    add("accum_clip_1x8", "grad accumulation over 4 microbatches (scan) + global-norm clip, mesh 1 x 8",
        _plain(_accum_clip), (1, 8), A2, [P(None, "model"), P("model", None), P(None, "data"), P(None, "data")],
        None, lambda: [_rand((32, 64), 1040, scale=0.2), _rand((64, 16), 1041, scale=0.15), _rand((4, 8, 32), 1042),
                       _rand((4, 8, 16), 1043)])
    add("bf16_master_ema", "bf16 compute, f32 master weights, loss scale 1024, EMA of params, 2 x 4",
        _plain(_bf16_master_ema), M24, XY, [P("x", "y"), P("y", "x"), P("x", "y"), P("y", "x"), P("x"), P("x")],
        None, lambda: [_rand((32, 64), 1050, scale=0.2), _rand((64, 32), 1051, scale=0.15), _rand((32, 64), 1052, scale=0.2),
                       _rand((64, 32), 1053, scale=0.15), _rand((16, 32), 1054), _rand((16, 32), 1055)], "bf16")
    add("nesterov_8x1", "Nesterov momentum step, params and momenta FSDP over data=8, mesh 8 x 1",
        _plain(_nesterov), (8, 1), A2, [P("data", "model"), P("model", "data"), P("data", "model"), P("model", "data"),
                                        P("data"), P("data")],
        None, lambda: [_rand((32, 64), 1060, scale=0.2), _rand((64, 16), 1061, scale=0.15), _rand((32, 64), 1062, scale=0.01),
                       _rand((64, 16), 1063, scale=0.01), _rand((16, 32), 1064), _rand((16, 16), 1065)])
    # ---- remat / custom_vjp / nested jit
    add("remat_dots_saveable", "grad through checkpoint(dots_saveable), plain checkpoint, nothing_saveable, 2 x 4",
        _plain(_remat_dots), M24, A2, [P(None, "model"), P("model", None), P(None, "model"), P("data")], None,
        lambda: [_rand((32, 64), 1070, scale=0.2), _rand((64, 32), 1071, scale=0.15), _rand((32, 16), 1072, scale=0.2),
                 _rand((16, 32), 1073)])
    add("remat_save_names", "attention grad under save_only_these_names('proj') / save_any_names_but_these, 2x2x2",
        _plain(_remat_names), M222, ("data", "fsdp", "tp"),
        [P("fsdp", "tp"), P("fsdp", "tp"), P("fsdp", "tp"), P("tp", "fsdp"), P("data")], None,
        lambda: [_rand((32, 32), 1080 + i, scale=0.18) for i in range(4)] + [_rand((4, 16, 32), 1085)])
    add("custom_vjp_resid", "custom_vjp dense layer with constrained residuals + gradient-clip identity, 2 x 4",
        _custom_vjp_resid, M24, XY, [P("x"), P(None, "y"), P("y", None)], None,
        lambda: [_rand((16, 32), 1090), _rand((32, 32), 1091, scale=0.2), _rand((32, 32), 1092, scale=0.2)])
    add("nested_jit_shardings", "nested jax.jit with their own in_shardings / out_shardings, 2 x 4",
        _nested_jit, M24, XY, [P("y", "x"), P(), P("x", "y")], None,
        lambda: [_rand((16, 32), 1095), _rand((32, 32), 1096, scale=0.2), _rand((32, 16), 1097, scale=0.2)])
    # ---- shard_map
    add("coll_matmul_ag", "all-gather collective matmul: ppermute ring of x's row blocks in fori_loop, 8",
        _coll_matmul_ag, M8, AX, [P("x", None), P(None, "x")], None,
        lambda: [_rand((64, 32), 1110), _rand((32, 64), 1111, scale=0.2)])
    add("coll_matmul_rs", "reduce-scatter collective matmul: ring-reduced chunks of partial products, 8",
        _coll_matmul_rs, M8, AX, [P(None, "x"), P("x", None)], None,
        lambda: [_rand((64, 64), 1112), _rand((64, 32), 1113, scale=0.2)])
    add("ring_attn_heads_auto", "ring attention (scan over ring steps) manual over sp=4, heads automatic over model=2",
        _ring_attn_heads_auto, (2, 4), ("model", "sp"), [P(None, "sp", "model")] * 3, None,
        lambda: [_rand((2, 32, 4, 8), 1120 + i, scale=0.5) for i in range(3)])
    add("a2a_top2_capacity", "top-2 expert dispatch, capacity 2, untiled all_to_all there and back, 8 experts",
        _a2a_top2, M8, AX, [P("x"), P(), P("x")], None,
        lambda: [_rand((64, 16), 1130), _rand((16, 8), 1131), _rand((8, 16, 16), 1132, scale=0.25)])
    add("psum_scatter_2axes", "psum_scatter over (x, y) on dim 1 tiled, all_gather over (y, x) on dim 0",
        _psum_scatter_2axes, M24, XY, [P()], None, lambda: [_rand((16, 32), 1140)])
    add("vocab_parallel_xent", "Megatron vocab-parallel cross-entropy: pmax / psum / axis_index mask, pmean over data",
        _vocab_xent, M24, A2, [P("data", "model"), P("data")], None,
        lambda: [_rand((16, 128), 1150, scale=2.0), _ids((16,), 128, 1151)])
    add("smap_1_of_3_axes", "2x2x2, shard_map manual over b only (a, c automatic), psum over b",
        _smap_one_of_three, M222, ("a", "b", "c"), [P("a", "b"), P("b", "c")], None,
        lambda: [_rand((16, 32), 1160), _rand((32, 16), 1161, scale=0.2)])
    add("smap_in_scan_grad", "scan over 3 TP MLP layers, each a shard_map with a psum, and its gradient, 2 x 4",
        _smap_in_scan, M24, A2, [P(None, None, "model"), P(None, "model", None), P("data")], None,
        lambda: [_rand((3, 32, 64), 1170, scale=0.15), _rand((3, 64, 32), 1171, scale=0.1), _rand((8, 32), 1172)])
    add("scan_in_smap_linrec", "sequence-parallel linear recurrence: local scans + all_gather'd carries, 8",
        _scan_in_smap, M8, AX, [P("x"), P("x")], None,
        lambda: [0.5 + 0.5 * np.abs(_rand((64, 4), 1180, scale=0.5)) / 2, _rand((64, 4), 1181)])
    add("fsdp_smap_grad", "FSDP in shard_map (all_gather weights inside), value_and_grad, SGD step, 8",
        _fsdp_smap_grad, M8, AX, [P("x"), P("x"), P("x"), P("x")], None,
        lambda: [_rand((32, 64), 1190, scale=0.2), _rand((64, 16), 1191, scale=0.15), _rand((16, 32), 1192),
                 _rand((16, 16), 1193)])
    # ---- control flow
    add("while_decode_exit", "while_loop decode with KV-cache DUS and a data-dependent early exit, 2 x 4",
        _while_decode, M24, A2, [P("data"), P("data", None, "model"), P("data", None, "model"), P(None, "model"),
                                  P(None, "model"), P(None, "model"), P("model", None)], None, _while_decode_args)
    add("fori_row_scatter", "fori_loop: each row writes its own position (scatter), attention, batch x seq 2 x 4",
        _plain(_fori_row_scatter), M24, XY, [P("x", "y"), P("x"), P("x"), P()], None,
        lambda: [_rand((4, 16, 8), 1200, scale=0.3), _rand((4, 8), 1201), np.array([0, 3, 7, 11], np.int32),
                 _rand((8, 8), 1202, scale=0.3)])
    add("cond_branch_shardings", "lax.cond, branches constrained to P(y,x), operand P(x,y), result to P(None,y), 2 x 4",
        _cond_branches, M24, XY, [P(), P("x", "y"), P("y", "x")], None,
        lambda: [np.array([1.0], np.float32), _rand((16, 16), 1210), _rand((16, 16), 1211, scale=0.25)])
    add("cond_branch_false", "the same lax.cond taking the other branch",
        _cond_branches, M24, XY, [P(), P("x", "y"), P("y", "x")], None,
        lambda: [np.array([-1.0], np.float32), _rand((16, 16), 1212), _rand((16, 16), 1213, scale=0.25)])
    add("switch_data_index", "lax.switch on an index from argmax of sharded data, matmul branches, 4 x 2",
        _plain(_switch_matmul), M42, XY, [P("x", "y"), P("y", None), P("y", None), P("x")], None,
        lambda: [_rand((16, 32), 1220), _rand((32, 16), 1221, scale=0.2), _rand((32, 16), 1222, scale=0.2),
                 _rand((16,), 1223)])
    add("power_iteration", "power iteration in a while_loop until converged, matrix over 2 x 4",
        _plain(_power_iter), M24, XY, [P("x", "y"), P("y")], None,
        lambda: [_rand((32, 32), 1230), _rand((32,), 1231)])
    # ---- ops on sharded dims
    add("topk_uneven_8x1", "top_k along a 100-wide dim sharded over data=8 (uneven), and along the other",
        _topk_uneven, (8, 1), A2, [P(None, "data")], None, lambda: [_rand((16, 104), 1240)])
    add("argsort_stable_ties", "stable argsort of int keys with many ties along each sharded dim, 2 x 4",
        _plain(_argsort_ties), M24, XY, [P("x", "y"), P("x", "y")], None,
        lambda: [_ids((16, 64), 4, 1250), _rand((16, 64), 1251)])
    add("searchsorted_methods", "searchsorted scan / scan_unrolled / sort / compare_all, left and right, sorted array sharded",
        _plain(_searchsorted_methods), M8, AX, [P("x"), P("x")], None,
        lambda: [np.sort(np.round(_rand((64,), 1260) * 4) / 4), np.round(_rand((32,), 1261) * 4) / 4])
    add("segment_max_min_prod", "segment_max / min / prod / sum, 16 segments, data and ids sharded",
        _plain(_segment_ops), M8, AX, [P("x", None), P("x")], None,
        lambda: [_rand((64, 8), 1270), _ids((64,), 16, 1271)])
    add("scatter_2d_indices", "table.at[rows, cols].add (2-D indices) on a column-sharded table; row set with duplicates",
        _plain(_scatter2d), M24, XY, [P(None, "y"), P(), P(), P("x"), P("x", "y")], None,
        lambda: [_rand((32, 64), 1280), _ids((40,), 32, 1281), _ids((40,), 64, 1282), _rand((40,), 1283),
                 _rand((8, 16), 1284)])
    add("take_along_sharded_dim", "take_along_axis along the sharded dim (dim 1 over 8, and dim 0 over 8)",
        _plain(_take_sharded_dim), M8, AX, [P(None, "x"), P(), P("x"), P()], None,
        lambda: [_rand((16, 64), 1290), _ids((16, 10), 64, 1291), _rand((64, 4), 1292), _ids((12, 4), 64, 1293)])
    add("cumsum_merged_axes", "cumsum / reverse cummax along a dim over (x, y) merged, cumprod on the other",
        _cumsum_merged, M24, XY, [P(("x", "y"), None)], None, lambda: [_rand((64, 8), 1300)])
    add("maxpool_grad_spatial", "grad of conv + overlapping SAME max pool + avg pool, height over 8 (select-and-scatter)",
        _plain(_maxpool_grad), M8, AX, [P(None, "x"), P()], None,
        lambda: [_rand((2, 32, 8, 3), 1310), _rand((3, 3, 3, 4), 1311, scale=0.3)])
    add("qr_solve_rows_sharded", "batched reduced QR, triangular solve, residual norms, rows sharded over y, batch over x",
        _plain(_qr_solve_rows), M24, XY, [P("x", "y"), P("x", "y")], None,
        lambda: [_rand((4, 32, 8), 1320), _rand((4, 32), 1321)])
    add("fft_batch_16", "fft, filter, ifft along the last dim, batch dims over 4 x 4 (16 devices)",
        _plain(_fft16), M44, XY, [P("x", "y")], None, lambda: [_rand((16, 4, 32), 1330)])
    add("einsum4_operands", "4-operand einsum bij,jk,bkl,lm->bim (greedy path) and a 3-operand one, 2 x 4",
        _plain(_einsum4), M24, XY, [P("x", None, "y"), P("y", None), P("x", None, "y"), P("y", None)], None,
        lambda: [_rand((4, 8, 16), 1340), _rand((16, 8), 1341), _rand((4, 8, 16), 1342), _rand((16, 4), 1343)])
    add("vmap_wsc_in_axes1", "vmap (in_axes=1, out_axes=1) of a function constraining its vector to P('y'), 2 x 4",
        _vmap_wsc, M24, XY, [P("y", "x"), P()], None,
        lambda: [_rand((32, 8), 1350), _rand((32, 32), 1351, scale=0.2)], context_mesh=True)
    # ---- models
    add("gpt_block_seq_grad_44", "GPT block (pos emb, causal MHA, GELU MLP) loss + grad, seq over model, 4 x 4",
        _gpt_grad, M44, A2, [P("data", "model"), P("model"), P(None, "model"), P("model", None), P(None, "model"),
                             P("model", None), P(), P()], None, _gpt_args)
    add("vit_patchify", "ViT patchify by reshape / transpose, cls token, pos emb, attention pooling, 2 x 4",
        _plain(_vit_patchify), M24, XY, [P("x"), P(None, "y"), P(), P(), P("y", None)], None,
        lambda: [_rand((4, 16, 16, 3), 1360), _rand((48, 32), 1361, scale=0.15), _rand((1, 1, 32), 1362),
                 _rand((17, 32), 1363, scale=0.1), _rand((32, 10), 1364, scale=0.2)])
    add("unet_height_grad", "U-Net down (stride-2 conv) / up (conv_transpose) + skip, loss + grad, height over 8",
        _plain(_unet), M8, AX, [P(None, "x"), P(), P(), P(), P()], None,
        lambda: [_rand((2, 32, 16, 4), 1370), _rand((3, 3, 4, 8), 1371, scale=0.3), _rand((3, 3, 8, 16), 1372, scale=0.2),
                 _rand((2, 2, 16, 8), 1373, scale=0.2), _rand((3, 3, 16, 4), 1374, scale=0.15)])
    add("gru_scan_grad", "GRU in lax.scan over 10 steps, loss + grad, batch over data, gates over model, 2 x 4",
        _plain(_gru), M24, A2, [P(None, "model"), P(None, "model"), P("model"), P(None, "data"), P("data")], None,
        lambda: [_rand((16, 96), 1380, scale=0.2), _rand((32, 96), 1381, scale=0.15), _rand((96,), 1382, scale=0.1),
                 _rand((10, 8, 16), 1383), _rand((8, 32), 1384, scale=0.5)])
    add("mamba_seq_scan_grad", "Mamba-like selective scan as a sequential lax.scan, loss + grad, data 2 x model 4",
        _plain(_mamba_seq), M24, A2, [P("data"), P(None, "model"), P("model"), P("model", None), P("model", None),
                                      P("model", None), P("model", None)], None,
        lambda: [_rand((4, 12, 16), 1390), _rand((16, 32), 1391, scale=0.25), _rand((32, 8), 1392, scale=0.3),
                 _rand((32, 32), 1393, scale=0.1), _rand((32, 8), 1394, scale=0.2), _rand((32, 8), 1395, scale=0.2),
                 _rand((32, 16), 1396, scale=0.2)])
    add("expert_choice_moe", "expert-choice MoE: top_k along the sharded token dim per expert, gather, scatter-add",
        _plain(_expert_choice), M24, ("data", "expert"), [P("data"), P(), P("expert"), P("expert")], None,
        lambda: [_rand((64, 16), 1400), _rand((16, 4), 1401), _rand((4, 16, 32), 1402, scale=0.2),
                 _rand((4, 32, 16), 1403, scale=0.15)])
    add("clip_smap_grad", "CLIP loss in shard_map (all_gather embeddings, psum loss), grad of projections and temp",
        _clip_smap, M8, AX, [P("x"), P("x"), P(), P(), P()], None,
        lambda: [_rand((32, 24), 1410), _rand((32, 16), 1411), _rand((24, 16), 1412, scale=0.2),
                 _rand((16, 16), 1413, scale=0.25), np.array(1.5, np.float32)])
    add("diffusion_block_44", "timestep embedding MLP, GroupNorm(4), SiLU, 3x3 conv + temb, 4 x 4 (batch, channels)",
        _plain(_diffusion_block), M44, A2, [P("data", None, None, "model"), P("data"), P(), P(None, "model"),
                                             P("model"), P("model"), P(None, None, None, "model")], None,
        lambda: [_rand((8, 8, 8, 16), 1420), np.arange(8, dtype=np.float32) * 37.0, _rand((32, 32), 1421, scale=0.2),
                 _rand((32, 16), 1422, scale=0.2), 1.0 + _rand((16,), 1423, scale=0.1), _rand((16,), 1424, scale=0.1),
                 _rand((3, 3, 16, 16), 1425, scale=0.1)])
    # ---- meshes
    add("mesh222_all_axes", "2x2x2: [8,8,8] over all three axes, transpose, sum, merge reshape + matmul",
        _mesh3_ops, M222, ("a", "b", "c"), [P("a", "b", "c"), P("b", None)], None,
        lambda: [_rand((8, 8, 8), 1430), _rand((64, 16), 1431, scale=0.15)])
    add("mesh_1x8_mlp_grad", "MLP loss + grad on a 1 x 8 mesh, batch over data=1, hidden over model=8",
        _plain(_mlp_grad), (1, 8), A2, [P(None, "model"), P("model", None), P("data"), P("data")], None,
        lambda: [_rand((32, 64), 1440, scale=0.2), _rand((64, 16), 1441, scale=0.15), _rand((8, 32), 1442),
                 _rand((8, 16), 1443)])
    add("mesh_8x1_attention", "causal MHA on an 8 x 1 mesh: batch over data=8, heads over model=1",
        _plain(_attn_heads), (8, 1), A2, [P("data"), P(None, "model"), P(None, "model"), P(None, "model"),
                                          P("model", None)], None,
        lambda: [_rand((8, 16, 32), 1450)] + [_rand((32, 32), 1451 + i, scale=0.18) for i in range(4)])
    add("mesh44_reshard", "4 x 4: reshards P(x,y) -> P(y,x) -> P((x,y)) -> P(None,(y,x)) and a matmul",
        _reshard44, M44, XY, [P("x", "y")], None, lambda: [_rand((32, 32), 1460)])
    add("device_order_transposed_44", "4 x 4 mesh of devices in transposed order: matmul, shard_map ppermute + all_gather",
        _perm_mesh_mix, M44, XY, [P("x", "y"), P("y", None)], None,
        lambda: [_rand((16, 32), 1470), _rand((32, 32), 1471, scale=0.2)],
        device_order=tuple(np.arange(16).reshape(4, 4).T.reshape(-1).tolist()))
    add("uneven_conv_height", "conv 3x3 + 2x2 max pool on a 30-row image (made inside) with height over 8",
        _uneven_conv, M8, AX, [P(None, "x"), P()], None,
        lambda: [_rand((2, 32, 8, 3), 1480), _rand((3, 3, 3, 4), 1481, scale=0.3)])
    add("uneven_222", "[9,7,5] (made inside) over a, b, c of 2x2x2: einsum, sum, reshard to P(c, None, a)",
        _uneven3, M222, ("a", "b", "c"), [P("a", "b", "c"), P()], None,
        lambda: [_rand((10, 8, 6), 1490), _rand((5, 6), 1491, scale=0.3)])
    add("bf16_attention_grad", "bf16 causal MHA gradient w.r.t. the weights, batch over x, heads over y, 2 x 4",
        _plain(lambda x, *ws: jax.grad(lambda ws: jnp.sum(_attn_heads(x, *ws).astype(jnp.float32) ** 2))(ws)),
        M24, XY, [P("x"), P(None, "y"), P(None, "y"), P(None, "y"), P("y", None)], None,
        lambda: [_rand((4, 16, 32), 1500, "bf16")] + [_rand((32, 32), 1501 + i, "bf16", scale=0.18) for i in range(4)],
        "bf16")
    add("f16_ln_softmax", "f16 layer norm, softmax over the sharded dim 0, max and mean, 2 x 4",
        _plain(_f16_ln_softmax), M24, XY, [P("x", "y"), P("y")], None,
        lambda: [_rand((32, 64), 1510).astype(np.float16), (1.0 + _rand((64,), 1511, scale=0.1)).astype(np.float16)],
        "f16")
    # ---- edge probes
    add("uneven_reduce_padding", "13 columns over 8: max of negatives, min / prod / argmin / logsumexp / int sums / sort / top_k / cumprod / flip",
        _uneven_reduce_pad, M8, AX, [P(None, "x"), P(None, "x")], None,
        lambda: [_rand((4, 16), 1600), _ids((4, 16), 5, 1601)])
    add("wide_halo_window", "reduce_window of 5 and 7 rows (stride 3) over 16 rows on 8 (halos span shards), reverse cumsum",
        _plain(_wide_halo_window), M8, AX, [P("x")], None, lambda: [_rand((16, 4), 1610)])
    add("dilated_conv_spatial", "atrous 3x3 conv (rhs dilation 3) and a stride-3 conv, height over 8",
        _plain(_dilated_conv_spatial), M8, AX, [P(None, "x"), P()], None,
        lambda: [_rand((2, 32, 8, 3), 1620), _rand((3, 3, 3, 4), 1621, scale=0.3)])
    add("interior_negative_pad", "lax.pad with negative padding, and with interior padding, of the sharded dim, strided slice (both at once crash XLA)",
        _plain(_lhs_dilated_pad), M8, AX, [P("x")], None, lambda: [_rand((16, 4), 1630)])
    add("batched_dyn_slice", "vmap of dynamic_slice / dynamic_update_slice, batch over x, window dim over y",
        _plain(_batched_dyn_slice), M24, XY, [P("x", "y"), P("x"), P("x")], None,
        lambda: [_rand((4, 32, 8), 1640), np.array([0, 13, 27, 30], np.int32), _rand((4, 3, 4), 1641)])
    add("reshape_misaligned", "[16,6] rows over 8 reshaped to [96], [4,24] over 8 (uneven) and [12,8].T",
        _reshape_misaligned, M8, AX, [P("x")], None, lambda: [_rand((16, 6), 1650)])
    add("smap_merged_reversed", "shard_map over P(('y','x')): axis_index, psum, all_gather, ppermute on merged axes",
        _smap_merged_reversed, M24, XY, [P(("y", "x"))], None, lambda: [_rand((16, 4), 1660)])
    add("smap_collective_dtypes", "shard_map psum bf16, all_to_all int8, ppermute bool, pmax uint32, psum over a size-1 axis",
        _smap_dtypes, (4, 2, 1), ("x", "y", "one"), [P("x"), P("x"), P("x"), P("x")], None,
        lambda: [_rand((8, 4), 1670, "bf16"),
                 np.random.default_rng(1671).integers(-100, 100, (16, 4)).astype(np.int8),
                 np.random.default_rng(1672).integers(0, 2, (8, 4)).astype(bool),
                 np.random.default_rng(1673).integers(0, 2 ** 31, (8, 4)).astype(np.uint32)], "bf16")
    add("smap_out_axis_only", "shard_map of replicated inputs with outputs split by axis_index, untiled psum_scatter",
        _smap_out_axis_only, M24, XY, [P(), P()], None,
        lambda: [_rand((16, 8), 1680), _rand((8, 8), 1681, scale=0.3)])
    add("while_reshard_carry", "while_loop (dynamic trips) whose body constrains the carry P(None,x) vs P(x) outside, DUS",
        _while_reshard_carry, M8, AX, [P("x"), P()], None,
        lambda: [_rand((16, 8), 1700, scale=0.3), np.array([5], np.int32)])
    add("gather_point_2d", "x[ii, jj] point gather with both dims sharded, row / column gathers, scatter-add back",
        _plain(_gather_2d_sharded), M24, XY, [P("x", "y"), P("x"), P("x")], None,
        lambda: [_rand((16, 32), 1710), _ids((8,), 16, 1711), _ids((8,), 32, 1712)])
    add("eigh_cholesky_rows", "batched eigh / cholesky / cho_solve with the matrix rows sharded over y, batch over x",
        _plain(_eigh_chol_sharded), M24, XY, [P("x", "y"), P("x", "y")], None,
        lambda: [_rand((4, 8, 8), 1720), _rand((4, 8, 3), 1721)])
    add("conv_groups_channels", "grouped conv (4 groups) and stride-2 depthwise conv with channels over y, batch over x",
        _plain(_conv_groups_sharded), M24, XY, [P("x", None, None, "y"), P(None, None, None, "y"), P(None, None, None, "y")],
        None, lambda: [_rand((4, 8, 8, 16), 1730), _rand((3, 3, 4, 16), 1731, scale=0.3), _rand((3, 3, 1, 16), 1732, scale=0.3)])
    add("scan_length_edges", "scan of length 1, reverse scan unroll 20 > length, fori_loop with zero trips, batch over x",
        _plain(_scan_len_edge), M8, AX, [P(None, "x"), P()], None,
        lambda: [_rand((6, 16, 8), 1740), _rand((8, 8), 1741, scale=0.3)])
    add("complex_gather_scatter", "complex64 matmul with conj, gather / scatter-add of complex rows, cumsum, 2 x 4",
        _plain(_complex_sharded), M24, XY, [P("x", "y"), P("x", "y"), P()], None,
        lambda: [_rand((16, 8), 1750), _rand((16, 8), 1751), _ids((6,), 16, 1752)])
    add("dot_batch_middle", "dot_general with the batch dim in the middle, contraction over y, batch over x, bf16 -> f32",
        _plain(_dot_batch_middle), M24, XY, [P(None, "x", "y"), P("y", "x", None)], None,
        lambda: [_rand((8, 4, 16), 1760, "bf16"), _rand((16, 4, 8), 1761, "bf16")], "bf16")
    # ---- edge probes 2
    add("bf16_long_sums", "bf16 [8,4096] positive, sums / mean / cumsum / logsumexp / var along the dim over 8",
        _plain(_long_sums), M8, AX, [P(None, "x")], None,
        lambda: [(np.abs(_rand((8, 4096), 1800)) * 0.5 + 0.5).astype(jnp.bfloat16)], "bf16")
    add("f16_long_sums", "f16 [8,4096] positive, the same long reductions along the dim over 8",
        _plain(_long_sums), M8, AX, [P(None, "x")], None,
        lambda: [(np.abs(_rand((8, 4096), 1801)) * 0.5 + 0.5).astype(np.float16)], "f16")
    add("topk_k_gt_shard", "top_k / approx_max_k with k=12 along a 16 dim over 8 (2 per shard), argsort, sort",
        _plain(_topk_k_gt_shard), M8, AX, [P(None, "x")], None, lambda: [_rand((4, 16), 1810)])
    add("tiny_uneven_empty", "5 and 3 elements over 8 devices (empty shards): reductions, cumsum, sort, concat",
        _tiny_uneven, M8, AX, [P("x"), P("x")], None, lambda: [_rand((8, 3), 1820), _rand((8, 3), 1821)])
    add("odd_shapes", "[37,29] on 2 x 4 (made inside): matmul to 19, softmax over dim 0, transpose, strided conv 33x30",
        _odd_shapes, M24, XY, [P("x", "y"), P(), P()], None,
        lambda: [_rand((40, 32), 1830), _rand((32, 24), 1831, scale=0.2), _rand((3, 3, 1, 3), 1832, scale=0.3)])
    # (jax.experimental.custom_partitioning is refused by design, with a clear message: its
    # partitioner is a Python function of the tracing process; Executable tests pin that.)
    add("typed_keys_sharded", "new-style keys split and sharded, vmap normal, fold_in axis_index in shard_map",
        _typed_keys, M8, AX, [P(), P("x")], None,
        lambda: [np.array([7], np.uint32), _rand((8, 4), 1850)])
    add("opt_barrier_scatter_flags", "optimization_barrier, scatter unique_indices / sorted, promise_in_bounds, get fill",
        _plain(_opt_barrier_scatter_flags), M8, AX, [P("x"), P(), P()], None,
        lambda: [_rand((32, 4), 1860), np.array([1, 5, 9, 17, 30], np.int32), _rand((5, 4), 1861)])
    add("cond_in_smap", "lax.cond in a shard_map on a psum'd predicate, ppermute / pmean in the branches",
        _cond_in_smap, M8, AX, [P("x")], None, lambda: [np.abs(_rand((16, 4), 1870))])
    add("cond_in_smap_neg", "the same taking the other branch", _cond_in_smap, M8, AX, [P("x")], None,
        lambda: [-np.abs(_rand((16, 4), 1871))])
    add("while_smap_body", "while_loop (data-dependent exit) whose body is a shard_map with a psum",
        _while_smap_body, M8, AX, [P("x"), P()], None, lambda: [_rand((16, 4), 1880), np.array([7], np.int32)])
    add("sort_uneven_multi", "lax.sort of 3 operands, num_keys=2 stable, along a 13-wide dim over 8 (uneven)",
        _sort_uneven_multi, M8, AX, [P(None, "x")] * 3, None,
        lambda: [_ids((4, 16), 3, 1890), _ids((4, 16), 4, 1891), _rand((4, 16), 1892)])
    add("conv_transpose_stride3", "conv_transpose stride 3 with a 4-row kernel (overlapping), height over 8",
        _plain(_conv_t_stride3), M8, AX, [P(None, "x"), P()], None,
        lambda: [_rand((2, 16, 4, 3), 1900), _rand((4, 3, 3, 5), 1901, scale=0.3)])
    add("reduce_window_dilations", "reduce_window with window_dilation 2 and base_dilation 2 along the dim over 8",
        _plain(_rw_dilations), M8, AX, [P("x")], None, lambda: [_rand((32, 4), 1910)])
    add("gather_windows_sharded", "windows of 12 rows at traced starts along the dim over 8 (gather slice 12)",
        _plain(_gather_windows), M8, AX, [P("x"), P()], None,
        lambda: [_rand((64, 8), 1920), np.array([0, 7, 19, 33, 50, 52], np.int32)])
    add("f16_reduce_dot_conv", "f16: lax.reduce add over 2048 (dim over 8), dot K=2048 (K over 8), conv 3x3x128, positives",
        _plain(_lowp_accum), M8, AX, [P(None, "x"), P("x", None), P("x"), P()], None,
        lambda: [(np.abs(_rand((8, 2048), 1940)) * 0.5 + 0.5).astype(np.float16),
                 (np.abs(_rand((2048, 8), 1941)) * 0.5 + 0.5).astype(np.float16),
                 (np.abs(_rand((8, 6, 6, 128), 1942)) * 0.5 + 0.5).astype(np.float16),
                 (np.abs(_rand((3, 3, 128, 4), 1943)) * 0.5 + 0.5).astype(np.float16)], "f16")
    add("bf16_reduce_dot_conv", "bf16: the same long lax.reduce / dot / conv accumulations",
        _plain(_lowp_accum), M8, AX, [P(None, "x"), P("x", None), P("x"), P()], None,
        lambda: [(np.abs(_rand((8, 2048), 1944)) * 0.5 + 0.5).astype(jnp.bfloat16),
                 (np.abs(_rand((2048, 8), 1945)) * 0.5 + 0.5).astype(jnp.bfloat16),
                 (np.abs(_rand((8, 6, 6, 128), 1946)) * 0.5 + 0.5).astype(jnp.bfloat16),
                 (np.abs(_rand((3, 3, 128, 4), 1947)) * 0.5 + 0.5).astype(jnp.bfloat16)], "bf16")
    add("sort_nan_ties", "NaN / inf / -0.0 / ties along the dim over 8: sort, stable argsort, top_k, argmax, nanargmax, cummax",
        _plain(_sort_nan_ties), M8, AX, [P(None, "x")], None, _sort_nan_args)
    add("smap_auto_same_dim", "dim 0 over (x, y), shard_map manual over x: cumsum along the y-split dim inside, psum",
        _smap_auto_same_dim, M24, XY, [P(("x", "y"))], None, lambda: [_rand((32, 4), 1960)], context_mesh=True)
    add("smap_manual_minor", "input P(('y','x')) (x minor), shard_map manual over x: psum of axis_index-scaled values",
        _smap_manual_minor, M24, XY, [P(("y", "x"))], None, lambda: [_rand((32, 4), 1961)], context_mesh=True)
    add("reshape_split_merged", "[64,4] over (x, y) reshaped to [2,32,4] P(x,y), back via transpose P((y,x)), [8,8,4]",
        _reshape_split_merged, M24, XY, [P(("x", "y"))], None, lambda: [_rand((64, 4), 1962)])
    add("coll_matmul_ag_grad", "gradient through the ppermute collective matmul (transposed ring in fori_loop)",
        _coll_matmul_grad, M8, AX, [P("x", None), P(None, "x")], None,
        lambda: [_rand((64, 32), 1963), _rand((32, 64), 1964, scale=0.2)])
    add("ulysses_grad", "gradient of Ulysses attention (all_to_all seq <-> heads and their transposes), sp=8",
        _ulysses_grad, M8, ("sp",), [P(None, "sp")] * 3, None,
        lambda: [_rand((2, 32, 8, 8), 1965 + i, scale=0.5) for i in range(3)])
    add("perm3_smap_partial", "2x2x2 of devices 5,2,7,0,3,6,1,4: shard_map manual over (b, c), a automatic, collectives",
        _perm3_smap, M222, ("a", "b", "c"), [P("b", "a"), P("a", None)], None,
        lambda: [_rand((16, 8), 2040), _rand((8, 16), 2041, scale=0.3)], device_order=(5, 2, 7, 0, 3, 6, 1, 4))
    add("perm16_reshard", "4 x 4 of a random device permutation: matmul, reshards to P(y,x), P((x,y)), P(None,(y,x))",
        _perm16_reshard, M44, XY, [P("x", "y"), P("y", None)], None,
        lambda: [_rand((32, 32), 2050), _rand((32, 32), 2051, scale=0.2)],
        device_order=tuple(np.random.default_rng(2052).permutation(16).tolist()))
    add("mesh_2x8_mlp_grad", "MLP loss + grad on a 2 x 8 mesh (16 devices), hidden over model=8",
        _plain(_mlp_grad), (2, 8), A2, [P(None, "model"), P("model", None), P("data"), P("data")], None,
        lambda: [_rand((32, 64), 2060, scale=0.2), _rand((64, 16), 2061, scale=0.15), _rand((8, 32), 2062),
                 _rand((8, 16), 2063)])
    add("mesh_16_1d_attention", "causal MHA on a 1-D mesh of 16, batch 16 over it",
        _plain(_attn_heads), (16,), ("data",), [P("data"), P(), P(), P(), P()], None,
        lambda: [_rand((16, 16, 32), 2070)] + [_rand((32, 32), 2071 + i, scale=0.18) for i in range(4)])
    add("mesh_422_mixed", "4x2x2 (16 devices): [16,16,16] over all three, transpose, sum, merge + matmul",
        _mesh3_ops, (4, 2, 2), ("a", "b", "c"), [P("a", "b", "c"), P("b", None)], None,
        lambda: [_rand((8, 8, 8), 2080), _rand((64, 16), 2081, scale=0.15)])
    add("lm_train_step_222", "tied-embedding LM train step: scan over 2 remat layers, xent, clip, AdamW, 2x2x2",
        _lm_train_step, M222, ("data", "fsdp", "tp"), _LM_SPECS * 3 + [P(("data", "fsdp")), P(("data", "fsdp"))],
        None, _lm_args)
    add("int_edge_semantics", "lax.div / rem by 0 and INT_MIN / -1, shifts >= 32, float -> int32 / uint8 / int8 out of range and NaN",
        _plain(_int_edges), M8, AX, [P("x"), P("x"), P("x")], None, _int_edge_args)
    add("float_edge_semantics", "NaN through maximum / minimum / clamp / relu, complex sqrt / log on the cut, f16 overflow, bf16 rounding, nextafter",
        _plain(_float_edges), M8, AX, [P("x"), P("x"), P("x")], None, _float_edge_args)
    add("scatter_batching_dims", "vmap of .at[i].add / .at[i, 1:3].set / t[i]: batching-dim scatter / gather, batch over x, rows over y",
        _plain(_scatter_batching), M24, XY, [P("x", "y"), P("x"), P("x")], None,
        lambda: [_rand((4, 16, 8), 2200), _ids((4, 6), 16, 2201), _rand((4, 6, 8), 2202)])
    add("while_swap_carries", "while_loop swapping carries P(x, None) <-> P(None, x) each step, cond swapping them",
        _while_swap, M8, AX, [P(), P(), P()], None,
        lambda: [_rand((16, 16), 2210), _rand((16, 16), 2211), np.array([5], np.int32)])
    add("scan_time_sharded", "lax.scan over xs with the scanned time dim over 8, ys constrained time-sharded",
        _scan_time_sharded, M8, AX, [P(), P("x"), P()], None,
        lambda: [_rand((4, 8), 2220), _rand((16, 4, 8), 2221), _rand((8, 8), 2222, scale=0.3)])
    add("dyn_index_from_argmax", "dynamic_slice / update at an index from argmax over the sharded dim, table rows over 8",
        _plain(_dyn_from_argmax), M8, AX, [P("x"), P("x")], None,
        lambda: [_rand((16, 4), 2230), _rand((32, 4), 2231)])
    add("bf16_allreduce_rounding", "bf16 psum over 16 (shard_map) and a K-over-16 matmul: one 256 and fifteen 1s per sum",
        _lowp_allreduce, (16,), AX, [P("x"), P(None, "x"), P("x")], None, _lowp_allreduce_args("bf16"), "bf16")
    add("f16_allreduce_rounding", "f16 psum over 16 (shard_map) and a K-over-16 matmul: one 2048 and fifteen 1s per sum",
        _lowp_allreduce, (16,), AX, [P("x"), P(None, "x"), P("x")], None, _lowp_allreduce_args("f16"), "f16")
    add("f16_long_reduce_local", "f16 lax.reduce add over an unsharded 4096 dim (rows over 8) and over the sharded rows",
        _plain(_f16_long_reduce), M8, AX, [P("x")], None,
        lambda: [(np.abs(_rand((16, 4096), 2240)) * 0.5 + 0.5).astype(np.float16)], "f16")
    add("bf16_cumsum_segsum", "bf16 cumsum along an unsharded 2048 dim (rows over 8), segment_sum of 16384 into 4 segments",
        _plain(_lowp_scan_scatter), M8, AX, [P("x"), P("x")], None,
        lambda: [(np.abs(_rand((8, 2048), 2250)) * 0.5 + 0.5).astype(jnp.bfloat16), _ids((8 * 2048,), 4, 2251)], "bf16")
    add("f16_cumsum_segsum", "f16 cumsum along an unsharded 2048 dim (rows over 8), segment_sum of 16384 into 4 segments",
        _plain(_lowp_scan_scatter), M8, AX, [P("x"), P("x")], None,
        lambda: [(np.abs(_rand((8, 2048), 2252)) * 0.5 + 0.5).astype(np.float16), _ids((8 * 2048,), 4, 2253)], "f16")
    add("wide_conv1d_halo", "1-D convs with kernels 33 and 49 along a 128 signal over 8 (halos of 1-2 shards), strided VALID, scipy convolve",
        _plain(_wide_conv1d), M8, AX, [P(None, "x"), P(), P()], None,
        lambda: [_rand((2, 128, 2), 2260), _rand((33, 2, 3), 2261, scale=0.2), _rand((49, 2, 3), 2262, scale=0.15)])
    add("big_kernels_2dev", "2 devices, 1 MiB per device: reduce_window, reductions, argmax, sort, cumsum, gather, scatter, conv",
        _plain(_big_kernels), (2,), AX, [P("x"), P(), P("x"), P()], None,
        lambda: [_rand((1024, 512), 2270), _ids((4096,), 1024, 2271), _rand((8, 128, 128, 4), 2272),
                 _rand((3, 3, 4, 8), 2273, scale=0.3)])
    add("fusion_stress_2dev", "fusion patterns on [8,96,96] per device: middle-dim softmax, dim-0 / (0,2) norms, iota masks, transposed add, reversed slices",
        _plain(_fusion_stress), (2,), AX, [P("x"), P("x")], None,
        lambda: [_rand((16, 96, 96), 2280), _rand((16, 96, 96), 2281)])
    add("lax_composite", "jax.lax.composite around a sharded gelu(x @ w), 2 x 4",
        _plain(_composite), M24, XY, [P("x", "y"), P("y", None)], None,
        lambda: [_rand((16, 32), 2290), _rand((32, 16), 2291, scale=0.2)])
    add("dot_algorithms", "matmuls with Precision.HIGHEST, DotAlgorithmPreset.F32_F32_F32, precision='bfloat16', 2 x 4",
        _plain(_dot_algorithms), M24, XY, [P("x", "y"), P("y", None)], None,
        lambda: [_rand((16, 32), 2292), _rand((32, 16), 2293, scale=0.2)])
    add("debug_print", "jax.debug.print of a sharded mean inside jit (host callback), 8",
        _plain(_debug_print), M8, AX, [P("x"), P()], None,
        lambda: [_rand((16, 8), 2294), _rand((8, 8), 2295, scale=0.3)])
    add("smap_complex_int_collectives", "shard_map complex64 psum / all_gather / ppermute / psum_scatter, uint8 and int16 psums that wrap",
        _smap_complex_ints, M8, AX, [P("x"), P("x"), P("x"), P("x")], None,
        lambda: [_rand((16, 4), 2300), _rand((16, 4), 2301),
                 np.random.default_rng(2302).integers(0, 256, (16, 4)).astype(np.uint8),
                 np.random.default_rng(2303).integers(-30000, 30000, (16, 4)).astype(np.int16)])
    add("smap_varying_control", "shard_map with per-device cond / switch on axis_index and a while_loop of per-device trip counts",
        _smap_varying_control, M8, AX, [P("x")], None, lambda: [_rand((32, 4), 2310)])
    add("vmap_of_smap", "vmap of a shard_map (psum over y) and vmap(spmd_axis_name=x) of a constrained function, 2 x 4",
        _vmap_of_smap, M24, XY, [P(None, "x", "y"), P("y", None), P("x", None)], None,
        lambda: [_rand((3, 8, 16), 2320), _rand((16, 8), 2321, scale=0.3), _rand((8, 16), 2322)])
    add("remat_custom_vjp_in_smap", "grad of a shard_map: checkpointed block with a psum, custom_vjp norm with psums in fwd and bwd",
        _remat_in_smap, M8, AX, [P(None, "x"), P("x", None)], None,
        lambda: [_rand((8, 32), 2330), _rand((32, 4), 2331, scale=0.3)])
    add("small_dims_merged_axes", "dims of 4 and 6 over merged (x, y) / (y, x) = 8 devices: empty shards in 2-D merges",
        _small_merged, M24, XY, [P(), P()], None, lambda: [_rand((8, 8), 2340), _rand((8, 8), 2341)])
    add("donate_resharded", "donate_argnums=(0, 1) with outputs P(x,y), P(y,x) (reshard vs the donated P(x,y)) and a transpose",
        _plain(_donate_reshard), M24, XY, [P("x", "y"), P("x", "y"), P("y", "x")], (P("x", "y"), P("y", "x"), P("x", "y")),
        lambda: [_rand((16, 16), 2350), _rand((16, 16), 2351), _rand((16, 16), 2352)], donate_argnums=(0, 1))
    add("reshard_everywhere", "one array resharded P(x,None) -> P(None,x) in the entry, a loop body, cond branches, a scan body and a nested jit",
        _reshard_everywhere, M8, AX, [P("x"), P()], None, lambda: [_rand((16, 16), 2360), np.array([1.0], np.float32)])
    add("bf16_reduce_scatter_rounding", "bf16 psum_scatter over 16 (shard_map): one 256 and fifteen 1s per element",
        _lowp_reduce_scatter, (16,), AX, [P("x")], None, _lowp_rs_args, "bf16")
    add("fft_along_sharded_dim", "fft / rfft+irfft along the dim over 8 itself, and jnp.roll by a traced shift along it",
        _plain(_fft_sharded_dim), M8, AX, [P("x"), P()], None,
        lambda: [_rand((64, 4), 2370), np.array([13], np.int32)])
    add("beam_search_loop", "beam search in while_loop: vocab over model, top_k over beam x vocab, beam gathers, gumbel(fold_in(t)), 2 x 4",
        _beam_search, M24, A2, [P("data"), P(None, "model"), P(None, "model"), P()], None,
        lambda: [_rand((4, 16), 2380), _rand((64, 16), 2381, scale=0.3), _rand((16, 64), 2382, scale=0.5),
                 np.array([3], np.uint32)])
    add("f16_local_dot_conv", "f16 dot with an unsharded K=4096 and conv over 3x3x512 (batch rows over 8), positives",
        _plain(lambda a, w, img, k: (a @ w, jax.lax.conv_general_dilated(img, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))),
        M8, AX, [P("x"), P(), P("x"), P()], None,
        lambda: [(np.abs(_rand((16, 4096), 2390)) * 0.5 + 0.5).astype(np.float16),
                 (np.abs(_rand((4096, 8), 2391)) * 0.5 + 0.5).astype(np.float16),
                 (np.abs(_rand((8, 4, 4, 512), 2392)) * 0.5 + 0.5).astype(np.float16),
                 (np.abs(_rand((3, 3, 512, 4), 2393)) * 0.1 + 0.1).astype(np.float16)], "f16")
    add("iota_uneven", "one_hot over 100 classes over 8, arange(13) over 8, tril masks 13x13, cumsum of the one_hot",
        _iota_uneven, M8, AX, [P(), P()], None, lambda: [_ids((8,), 100, 2410), _rand((104, 8), 2411)])
    add("bf16_dp_grad_16", "bf16 MLP weight gradient, batch 128 over 16 devices (bf16 gradient all-reduces), replicated weights",
        _plain(_mlp_grad), (16,), ("data",), [P(), P(), P("data"), P("data")], None,
        lambda: [_rand((64, 128), 2420, "bf16", scale=0.1), _rand((128, 32), 2421, "bf16", scale=0.1),
                 _rand((128, 64), 2422, "bf16"), _rand((128, 32), 2423, "bf16")], "bf16")
    return ps
