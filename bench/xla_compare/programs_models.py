"""Programs for bench/xla_compare (models): pieces of the models people shard today, with the
shardings they use: attention variants (sliding window with ALiBi, T5 relative-position buckets,
blockwise online-softmax attention as a scan, zigzag ring attention, a GQA decode step with RoPE
at a traced position), state-space and recurrent layers (Mamba's selective scan, RWKV, LSTM),
MoE (Switch with capacity and auxiliary losses, GShard top-2 on 16 devices), optimizers
(Adafactor, Lion with f32 masters, LAMB, gradient accumulation, dynamic loss scaling), sampling
(top-k / top-p, speculative decoding, a greedy while_loop decode), others (GNN message passing,
DLRM, DDPM loss, PPO with GAE, int8 weight-only MLP, LoRA, a pipeline with tensor parallelism
inside) and decode-cache writes and reads at traced positions (decode_wsc_loop, at_set_window).
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from programs import Program, _axis_size, _ids, _plain, _rand, _smap, _wsc


M8, AX = (8,), ("x",)
M24, M42, A2 = (2, 4), (4, 2), ("data", "model")
M222, A3 = (2, 2, 2), ("data", "fsdp", "model")


def _key(seed):
    return np.array([0, seed], np.uint32)


# ---- attention variants ----------------------------------------------------------------------------
AB, AS, AH, AD = 4, 32, 8, 8


def _alibi_window(mesh):
    # Sliding-window causal attention (window 8) with ALiBi's per-head linear distance biases.
    def f(q, k, v):
        slopes = 2.0 ** (-8.0 * jnp.arange(1, AH + 1, dtype=jnp.float32) / AH)
        i, j = jnp.arange(AS)[:, None], jnp.arange(AS)[None, :]
        bias = -slopes[:, None, None] * (i - j).astype(jnp.float32)[None]
        allowed = (j <= i) & (i - j < 8)
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(AD)) + bias[None]
        s = jnp.where(allowed[None, None], s, -1e30)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v)
        return _wsc(mesh, o, P("data", None, "model"))
    return f


def _t5_bucket(rel, num_buckets=16, max_distance=64):
    # T5's bidirectional relative-position buckets: exact for small distances, log-spaced beyond.
    nb = num_buckets // 2
    ret = (rel > 0).astype(jnp.int32) * nb
    n = jnp.abs(rel)
    max_exact = nb // 2
    large = max_exact + (jnp.log(n.astype(jnp.float32) / max_exact + 1e-6) /
                         np.log(max_distance / max_exact) * (nb - max_exact)).astype(jnp.int32)
    large = jnp.minimum(large, nb - 1)
    return ret + jnp.where(n < max_exact, n, large)


def _t5_attention(x, wq, wk, wv, wo, rel_emb):
    b, s, d = x.shape
    q = (x @ wq).reshape(b, s, AH, AD)
    k = (x @ wk).reshape(b, s, AH, AD)
    v = (x @ wv).reshape(b, s, AH, AD)
    rel = jnp.arange(s)[None, :] - jnp.arange(s)[:, None]
    bias = jnp.transpose(rel_emb[_t5_bucket(rel)], (2, 0, 1))           # [h, q, k]
    sc = jnp.einsum("bqhd,bkhd->bhqk", q, k) + bias[None]              # T5: no 1/sqrt(d)
    o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, axis=-1), v).reshape(b, s, AH * AD)
    return o @ wo


def _t5_args():
    d = AH * AD
    return [_rand((AB, AS, d), 700)] + [_rand((d, d), 701 + i, scale=d ** -0.5) for i in range(4)] + \
           [_rand((16, AH), 705, scale=0.5)]


def _flash_scan(mesh):
    # Blockwise causal attention: lax.scan over KV blocks of 8 with an online softmax.
    def f(q, k, v):
        b, s, h, d = q.shape
        blk = 8
        kb = jnp.moveaxis(k.reshape(b, s // blk, blk, h, d), 1, 0)
        vb = jnp.moveaxis(v.reshape(b, s // blk, blk, h, d), 1, 0)
        qpos = jnp.arange(s)

        def step(carry, inp):
            m, l, acc = carry
            kj, vj, j = inp
            sc = jnp.einsum("bqhd,bkhd->bhqk", q, kj) / np.float32(np.sqrt(d))
            kpos = j * blk + jnp.arange(blk)
            sc = jnp.where(kpos[None, :] <= qpos[:, None], sc, -1e30)
            m_new = jnp.maximum(m, sc.max(-1))
            p = jnp.exp(sc - m_new[..., None])
            corr = jnp.exp(m - m_new)
            l = l * corr + p.sum(-1)
            acc = acc * corr[..., None] + jnp.einsum("bhqk,bkhd->bhqd", p, vj)
            return (m_new, l, acc), None

        m0 = jnp.full((b, h, s), -1e30, jnp.float32)
        init = (m0, jnp.zeros_like(m0), jnp.zeros((b, h, s, d), jnp.float32))
        (m, l, acc), _ = jax.lax.scan(step, init, (kb, vb, jnp.arange(s // blk)))
        o = jnp.transpose(acc / l[..., None], (0, 2, 1, 3))
        return _wsc(mesh, o, P("data", None, "model"))
    return f


def _qkv(seed, b=AB, s=AS, h=AH, d=AD):
    return [_rand((b, s, h, d), seed + i, scale=0.5) for i in range(3)]


# ---- GQA decode step: RoPE at a traced position, KV cache write, attention over the cache ----------
DB, DT, DHQ, DHK, DDH = 4, 32, 8, 4, 8


def _rope_at(x, pos):
    d = x.shape[-1]
    freqs = 1.0 / (10000.0 ** (jnp.arange(d // 2, dtype=jnp.float32) / (d // 2)))
    ang = pos.astype(jnp.float32) * freqs
    c, s = jnp.cos(ang), jnp.sin(ang)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return jnp.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)


def _gqa_decode(x, pos, kc, vc, wq, wk, wv, wo):
    b = x.shape[0]
    q = _rope_at((x @ wq).reshape(b, DHQ, DDH), pos)
    k = _rope_at((x @ wk).reshape(b, DHK, DDH), pos)
    v = (x @ wv).reshape(b, DHK, DDH)
    kc = jax.lax.dynamic_update_slice(kc, k[:, None], (0, pos, 0, 0))
    vc = jax.lax.dynamic_update_slice(vc, v[:, None], (0, pos, 0, 0))
    qg = q.reshape(b, DHK, DHQ // DHK, DDH)
    sc = jnp.einsum("bkgd,btkd->bkgt", qg, kc) / np.float32(np.sqrt(DDH))
    sc = jnp.where(jnp.arange(DT) <= pos, sc, -1e30)
    o = jnp.einsum("bkgt,btkd->bkgd", jax.nn.softmax(sc, axis=-1), vc).reshape(b, DHQ * DDH)
    return o @ wo, kc, vc


def _gqa_decode_args():
    d = DHQ * DDH
    kc = _rand((DB, DT, DHK, DDH), 711)
    vc = _rand((DB, DT, DHK, DDH), 712)
    return [_rand((DB, d), 710), np.int32(13), kc, vc, _rand((d, d), 713, scale=d ** -0.5),
            _rand((d, DHK * DDH), 714, scale=d ** -0.5), _rand((d, DHK * DDH), 715, scale=d ** -0.5),
            _rand((d, d), 716, scale=d ** -0.5)]


# ---- state-space and recurrent layers ---------------------------------------------------------------
SB, SL, SD, SN = 4, 16, 32, 8


def _mamba_inputs(x, w_dt, w_b, w_c, a_log):
    delta = jax.nn.softplus(x @ w_dt)                                   # [b, l, d]
    bm, cm = x @ w_b, x @ w_c                                           # [b, l, n]
    a = -jnp.exp(a_log)                                                 # [d, n]
    da = jnp.exp(delta[..., None] * a)                                  # [b, l, d, n]
    dbx = delta[..., None] * bm[:, :, None, :] * x[..., None]
    return da, dbx, cm


def _mamba_assoc(mesh):
    # Mamba's selective scan as an associative scan over the sequence; batch over data, d over model.
    def f(x, w_dt, w_b, w_c, a_log, dskip):
        x = _wsc(mesh, x, P("data", None, "model"))
        da, dbx, cm = _mamba_inputs(x, w_dt, w_b, w_c, a_log)

        def comb(l, r):
            return l[0] * r[0], r[0] * l[1] + r[1]
        _, h = jax.lax.associative_scan(comb, (da, dbx), axis=1)
        y = jnp.einsum("bldn,bln->bld", h, cm) + dskip * x
        return _wsc(mesh, y * jax.nn.silu(x), P("data", None, "model"))
    return f


def _mamba_args(seed):
    return [_rand((SB, SL, SD), seed), _rand((SD, SD), seed + 1, scale=SD ** -0.5),
            _rand((SD, SN), seed + 2, scale=SD ** -0.5), _rand((SD, SN), seed + 3, scale=SD ** -0.5),
            np.log(np.tile(np.arange(1, SN + 1, dtype=np.float32), (SD, 1))), np.ones((SD,), np.float32)]


def _rwkv(mesh):
    # RWKV-4 time mixing: token shift, the WKV recurrence (numerically stable form) in lax.scan,
    # receptance gate; batch over data, channels over model.
    def f(x, mix_k, mix_v, mix_r, wk, wv, wr, wo, decay, first):
        xprev = jnp.pad(x, ((0, 0), (1, 0), (0, 0)))[:, :-1]
        k = (x * mix_k + xprev * (1 - mix_k)) @ wk
        v = (x * mix_v + xprev * (1 - mix_v)) @ wv
        r = jax.nn.sigmoid((x * mix_r + xprev * (1 - mix_r)) @ wr)
        k = _wsc(mesh, k, P("data", None, "model"))
        v = _wsc(mesh, v, P("data", None, "model"))
        w = -jnp.exp(decay)

        def step(state, kv):
            aa, bb, pp = state
            kt, vt = kv
            ww = first + kt
            qq = jnp.maximum(pp, ww)
            e1, e2 = jnp.exp(pp - qq), jnp.exp(ww - qq)
            out = (e1 * aa + e2 * vt) / (e1 * bb + e2)
            ww = pp + w
            qq = jnp.maximum(ww, kt)
            e1, e2 = jnp.exp(ww - qq), jnp.exp(kt - qq)
            return (e1 * aa + e2 * vt, e1 * bb + e2, qq), out
        z = jnp.zeros((x.shape[0], x.shape[2]), jnp.float32)
        _, wkv = jax.lax.scan(step, (z, z, z - 1e30), (jnp.swapaxes(k, 0, 1), jnp.swapaxes(v, 0, 1)))
        return (r * jnp.swapaxes(wkv, 0, 1)) @ wo
    return f


def _rwkv_args():
    d = SD
    return [_rand((SB, SL, d), 720), np.full((d,), 0.6, np.float32), np.full((d,), 0.4, np.float32),
            np.full((d,), 0.5, np.float32)] + [_rand((d, d), 721 + i, scale=d ** -0.5) for i in range(4)] + \
           [_rand((d,), 725, scale=0.5), _rand((d,), 726, scale=0.5)]


RB, RT, RI, RH = 8, 12, 16, 32


def _lstm(xs, h0, c0, wi, wh, b):
    # LSTM over time (time-major xs [t, b, i]); the gates as one matmul; returns all h and the last c.
    def cell(carry, x):
        h, c = carry
        z = x @ wi + h @ wh + b
        i, f, g, o = jnp.split(z, 4, axis=-1)
        c = jax.nn.sigmoid(f + 1.0) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h
    (h, c), hs = jax.lax.scan(cell, (h0, c0), xs)
    return hs, c


def _lstm_args():
    return [_rand((RT, RB, RI), 730), np.zeros((RB, RH), np.float32), np.zeros((RB, RH), np.float32),
            _rand((RI, 4 * RH), 731, scale=RI ** -0.5), _rand((RH, 4 * RH), 732, scale=RH ** -0.5),
            np.zeros((4 * RH,), np.float32)]


# ---- Switch MoE with capacity, z-loss and load-balancing loss ------------------------------------------
EG, ES, EM, EE, EH, ECAP = 4, 16, 32, 4, 64, 6


def _switch_moe(mesh):
    def loss(params, x, y):
        w_router, w_in, w_out = params
        logits = jnp.einsum("gsm,me->gse", x, w_router)
        probs = jax.nn.softmax(logits, axis=-1)
        expert = jnp.argmax(probs, axis=-1)
        gate = jnp.max(probs, axis=-1)
        mask = jax.nn.one_hot(expert, EE, dtype=jnp.float32)                 # [g, s, e]
        pos = jnp.cumsum(mask, axis=1) * mask - 1.0                           # slot in the expert
        keep = mask * (pos < ECAP)
        slot = jax.nn.one_hot(pos.astype(jnp.int32), ECAP, dtype=jnp.float32)  # [g, s, e, c]
        dispatch = keep[..., None] * slot
        combine = dispatch * gate[..., None, None]
        xe = jnp.einsum("gsec,gsm->egcm", dispatch, x)
        xe = _wsc(mesh, xe, P("expert", None, None, None))
        he = jax.nn.relu(jnp.einsum("egcm,emh->egch", xe, w_in))
        ye = jnp.einsum("egch,ehm->egcm", he, w_out)
        ye = _wsc(mesh, ye, P("expert", None, None, None))
        out = jnp.einsum("gsec,egcm->gsm", combine, ye)
        out = _wsc(mesh, out, P("data", None, None))
        density = jnp.mean(mask, axis=1)
        density_proxy = jnp.mean(probs, axis=1)
        lb_loss = jnp.mean(density * density_proxy) * EE * EE
        z_loss = jnp.mean(jax.nn.logsumexp(logits, axis=-1) ** 2)
        return jnp.mean((out + x - y) ** 2) + 0.01 * lb_loss + 1e-3 * z_loss, (lb_loss, z_loss)

    def f(x, y, w_router, w_in, w_out):
        params = (w_router, w_in, w_out)
        (l, aux), g = jax.value_and_grad(loss, has_aux=True)(params, x, y)
        return tuple(p - 0.1 * gp for p, gp in zip(params, g)) + (l,) + aux
    return f


def _switch_args():
    return [_rand((EG, ES, EM), 750), _rand((EG, ES, EM), 751), _rand((EM, EE), 752, scale=0.5),
            _rand((EE, EM, EH), 753, scale=EM ** -0.5), _rand((EE, EH, EM), 754, scale=EH ** -0.5)]


# ---- optimizers ----------------------------------------------------------------------------------------
OD, OH, OB = 32, 64, 16


def _mlp_loss(params, x, y):
    w1, b1, w2 = params
    return jnp.mean((jnp.tanh(x @ w1 + b1) @ w2 - y) ** 2)


def _opt_args(seed):
    return [_rand((OD, OH), seed, scale=OD ** -0.5), np.zeros((OH,), np.float32),
            _rand((OH, OD), seed + 1, scale=OH ** -0.5), _rand((OB, OD), seed + 2), _rand((OB, OD), seed + 3)]


def _adafactor(w1, b1, w2, x, y, vr1, vc1, v_b1, vr2, vc2):
    # Adafactor: factored second moments for matrices (row / column means), full for vectors,
    # update clipping by RMS, relative step size.
    params = (w1, b1, w2)
    l, (g1, gb, g2) = jax.value_and_grad(_mlp_loss)(params, x, y)
    beta, eps, lr = 0.8, 1e-30, 0.01

    def factored(p, g, vr, vc):
        g2_ = g * g + eps
        vr = beta * vr + (1 - beta) * g2_.mean(axis=1)
        vc = beta * vc + (1 - beta) * g2_.mean(axis=0)
        v = vr[:, None] * vc[None, :] / vr.mean()
        u = g * jax.lax.rsqrt(v)
        u = u / jnp.maximum(1.0, jnp.sqrt(jnp.mean(u * u)))
        scale = jnp.maximum(1e-3, jnp.sqrt(jnp.mean(p * p)))
        return p - lr * scale * u, vr, vc
    w1n, vr1, vc1 = factored(w1, g1, vr1, vc1)
    w2n, vr2, vc2 = factored(w2, g2, vr2, vc2)
    v_b1 = beta * v_b1 + (1 - beta) * (gb * gb + eps)
    ub = gb * jax.lax.rsqrt(v_b1)
    b1n = b1 - lr * ub / jnp.maximum(1.0, jnp.sqrt(jnp.mean(ub * ub)))
    return w1n, b1n, w2n, vr1, vc1, v_b1, vr2, vc2, l


def _adafactor_args():
    return _opt_args(760) + [np.full((OD,), 1e-3, np.float32), np.full((OH,), 1e-3, np.float32),
                             np.full((OH,), 1e-3, np.float32), np.full((OH,), 1e-3, np.float32),
                             np.full((OD,), 1e-3, np.float32)]


def _lion(mesh):
    # Lion with bf16 compute from f32 master weights (tensor parallel), decoupled weight decay.
    def f(w1, b1, w2, x, y, m1, mb, m2):
        master = (w1, b1, w2)

        def loss(ps):
            w1, b1, w2 = (p.astype(jnp.bfloat16) for p in ps)
            h = jnp.tanh(x.astype(jnp.bfloat16) @ w1 + b1)
            h = _wsc(mesh, h, P("data", "model"))
            return jnp.mean(((h @ w2).astype(jnp.float32) - y) ** 2)
        l, g = jax.value_and_grad(loss)(master)
        b1_, b2_, lr, wd = 0.9, 0.99, 1e-3, 0.1
        new_p, new_m = [], []
        for p, gp, m in zip(master, g, (m1, mb, m2)):
            u = jnp.sign(b1_ * m + (1 - b1_) * gp)
            new_p.append(p - lr * (u + wd * p))
            new_m.append(b2_ * m + (1 - b2_) * gp)
        return tuple(new_p) + tuple(new_m) + (l,)
    return f


def _lion_args():
    return _opt_args(770) + [_rand((OD, OH), 775, scale=0.01), _rand((OH,), 776, scale=0.01),
                             _rand((OH, OD), 777, scale=0.01)]


def _lamb(w1, b1, w2, x, y, m1, mb, m2, v1, vb, v2, step):
    # LAMB: Adam moments, per-layer trust ratio ||w|| / ||update||, FSDP-sharded states.
    params, ms, vs = (w1, b1, w2), (m1, mb, m2), (v1, vb, v2)
    l, g = jax.value_and_grad(_mlp_loss)(params, x, y)
    b1_, b2_, lr, wd, eps = 0.9, 0.999, 1e-2, 0.01, 1e-6
    t = step.astype(jnp.float32) + 1.0
    out_p, out_m, out_v = [], [], []
    for p, gp, m, v in zip(params, g, ms, vs):
        m = b1_ * m + (1 - b1_) * gp
        v = b2_ * v + (1 - b2_) * gp * gp
        u = (m / (1 - b1_ ** t)) / (jnp.sqrt(v / (1 - b2_ ** t)) + eps) + wd * p
        wn, un = jnp.linalg.norm(p), jnp.linalg.norm(u)
        trust = jnp.where((wn > 0) & (un > 0), wn / un, 1.0)
        out_p.append(p - lr * trust * u)
        out_m.append(m)
        out_v.append(v)
    return tuple(out_p) + tuple(out_m) + tuple(out_v) + (l,)


def _lamb_args():
    a = _opt_args(780)
    zeros = [np.zeros_like(a[0]), np.zeros_like(a[1]), np.zeros_like(a[2])]
    return a + [z + 0.01 for z in zeros] + [z + 1e-4 for z in zeros] + [np.int32(3)]


def _grad_accum(mesh):
    # Gradient accumulation over 4 microbatches in lax.scan, then one SGD step (FSDP + data parallel).
    def f(w1, b1, w2, xs, ys):
        params = (w1, b1, w2)

        def micro(acc, batch):
            x, y = batch
            x = _wsc(mesh, x, P(("data", "fsdp")))
            l, g = jax.value_and_grad(_mlp_loss)(params, x, y)
            return (jax.tree.map(jnp.add, acc[0], g), acc[1] + l), None
        zero = (jax.tree.map(jnp.zeros_like, params), jnp.float32(0.0))
        (g, l), _ = jax.lax.scan(micro, zero, (xs, ys))
        return tuple(p - 0.1 * gp / 4 for p, gp in zip(params, g)) + (l / 4,)
    return f


def _grad_accum_args():
    a = _opt_args(800)
    return a[:3] + [_rand((4, OB, OD), 803), _rand((4, OB, OD), 804)]


def _loss_scale_loop(w1, b1, w2, xs, ys, scale0):
    # Dynamic loss scaling over 3 steps with f16 compute and f32 master weights: non-finite scaled
    # gradients skip the update (lax.cond) and halve the scale, finite ones apply it and grow it.
    def loss(ps, x, y, scale):
        w1, b1, w2 = (p.astype(jnp.float16) for p in ps)
        h = jnp.tanh(x.astype(jnp.float16) @ w1 + b1)
        out = (h @ w2).astype(jnp.float32)
        return jnp.mean((out - y) ** 2) * scale

    def step(carry, batch):
        params, scale = carry
        x, y = batch
        g = jax.grad(loss)(params, x, y, scale)
        g = jax.tree.map(lambda t: t.astype(jnp.float32) / scale, g)
        finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(t)) for t in jax.tree.leaves(g)]))
        params = jax.lax.cond(finite, lambda p: jax.tree.map(lambda a, b: a - 0.1 * b, p, g), lambda p: p, params)
        scale = jnp.where(finite, scale * 2.0, scale * 0.5)
        return (params, scale), finite
    (params, scale), finite = jax.lax.scan(step, ((w1, b1, w2), scale0), (xs, ys))
    return params + (scale, finite)


def _loss_scale_args():
    a = _opt_args(810)
    return a[:3] + [_rand((3, OB, OD), 813), _rand((3, OB, OD), 814, scale=200.0), np.float32(2.0 ** 14)]


# ---- sampling ----------------------------------------------------------------------------------------
VB, VV = 8, 64


def _top_k_p(mesh):
    # Temperature, top-k (k=16) then top-p (0.9) filtering, one categorical sample per row.
    def f(logits, kd):
        key = jax.random.wrap_key_data(kd)
        logits = logits / 0.7
        vals, idx = jax.lax.top_k(logits, 16)
        probs = jax.nn.softmax(vals, axis=-1)
        cum = jnp.cumsum(probs, axis=-1)
        keep = (cum - probs) < 0.9
        vals = jnp.where(keep, vals, -jnp.inf)
        choice = jax.random.categorical(key, vals, axis=-1)
        tok = jnp.take_along_axis(idx, choice[:, None], axis=-1)[:, 0]
        return _wsc(mesh, tok, P("data")), jnp.sum(keep, axis=-1)
    return f


def _spec_decode(p_logits, q_logits, draft, kd):
    # Speculative decoding accept / reject of 4 draft tokens against the target's probabilities,
    # resampling the first rejected position from max(p - q, 0) (or the bonus token after all 4).
    key = jax.random.wrap_key_data(kd)
    k1, k2 = jax.random.split(key)
    p = jax.nn.softmax(p_logits, axis=-1)                                # [b, 5, v]
    q = jax.nn.softmax(q_logits, axis=-1)                                # [b, 4, v]
    pd = jnp.take_along_axis(p[:, :4], draft[..., None], axis=-1)[..., 0]
    qd = jnp.take_along_axis(q, draft[..., None], axis=-1)[..., 0]
    u = jax.random.uniform(k1, draft.shape)
    accept = u < jnp.minimum(1.0, pd / qd)
    n_acc = jnp.sum(jnp.cumprod(accept.astype(jnp.int32), axis=1), axis=1)   # [b]
    qpad = jnp.concatenate([q, jnp.zeros_like(q[:, :1])], axis=1)
    resid = jnp.maximum(p - qpad, 0.0)
    resid = resid / jnp.maximum(resid.sum(-1, keepdims=True), 1e-9)
    dist = jnp.take_along_axis(resid, n_acc[:, None, None], axis=1)[:, 0]
    extra = jax.random.categorical(k2, jnp.log(dist + 1e-20), axis=-1)
    pos = jnp.arange(5)[None, :]
    toks = jnp.where(pos < n_acc[:, None], jnp.pad(draft, ((0, 0), (0, 1))), 0)
    toks = jnp.where(pos == n_acc[:, None], extra[:, None], toks)
    return toks, n_acc


def _spec_args():
    return [_rand((VB, 5, VV), 820), _rand((VB, 4, VV), 821), _ids((VB, 4), VV, 822), _key(823)]


GD, GV, GT = 32, 48, 12


def _greedy_loop(emb, wh, wout, start):
    # Greedy decode with lax.while_loop until every row has emitted EOS (token 0) or 12 steps.
    b = start.shape[0]

    def cond(s):
        t, _, _, done = s
        return (t < GT) & ~jnp.all(done)

    def body(s):
        t, h, toks, done = s
        prev = jnp.where(t == 0, start, toks[:, jnp.maximum(t - 1, 0)])
        h = jnp.tanh(emb[prev] + h @ wh)
        nxt = jnp.argmax(h @ wout, axis=-1).astype(jnp.int32)
        nxt = jnp.where(done, 0, nxt)
        toks = jax.lax.dynamic_update_slice(toks, nxt[:, None], (0, t))
        return t + 1, h, toks, done | (nxt == 0)
    init = (jnp.int32(0), jnp.zeros((b, GD), jnp.float32), jnp.full((b, GT), -1, jnp.int32), jnp.zeros((b,), bool))
    t, _, toks, done = jax.lax.while_loop(cond, body, init)
    return toks, t


def _greedy_args():
    wout = _rand((GD, GV), 832, scale=GD ** -0.5)
    wout[:, 0] += 0.15
    return [_rand((GV, GD), 830), _rand((GD, GD), 831, scale=GD ** -0.5), wout, _ids((8,), GV, 833) + 1 - 1]


# ---- others --------------------------------------------------------------------------------------------
NN, NE, NF = 32, 128, 16


def _gnn(h, src, dst, w_msg, w_self, w_out):
    # Two rounds of GCN-style message passing: messages along sharded edges, segment_sum to nodes,
    # mean by in-degree, then a graph readout.
    deg = jax.ops.segment_sum(jnp.ones_like(dst, jnp.float32), dst, NN)
    for _ in range(2):
        msg = jax.nn.relu(h[src] @ w_msg)
        agg = jax.ops.segment_sum(msg, dst, NN) / jnp.maximum(deg, 1.0)[:, None]
        h = jax.nn.relu(agg + h @ w_self)
    return h, jnp.mean(h, axis=0) @ w_out


def _gnn_args():
    return [_rand((NN, NF), 840), _ids((NE,), NN, 841), _ids((NE,), NN, 842),
            _rand((NF, NF), 843, scale=NF ** -0.5), _rand((NF, NF), 844, scale=NF ** -0.5),
            _rand((NF, 4), 845, scale=NF ** -0.5)]


KB, KT, KV, KD, KBAG, KF = 16, 4, 64, 16, 3, 8


def _dlrm(mesh):
    # DLRM: embedding bags over 4 tables sharded on rows (model), bottom MLP on dense features,
    # pairwise dot interactions (upper triangle), top MLP, BCE loss; value_and_grad wrt the tables.
    def f(tables, ids, dense, wb, wt, labels):
        def loss(tables, wb, wt):
            bags = jax.vmap(lambda t, i: jnp.take(t, i, axis=0).sum(1), in_axes=(0, 1), out_axes=1)(tables, ids)
            z = jax.nn.relu(dense @ wb)                                          # [b, d]
            feats = jnp.concatenate([z[:, None], bags], axis=1)                  # [b, t+1, d]
            feats = _wsc(mesh, feats, P("data"))
            inter = jnp.einsum("bid,bjd->bij", feats, feats)
            iu, ju = np.triu_indices(KT + 1, k=1)
            top = jnp.concatenate([z, inter[:, iu, ju]], axis=-1) @ wt
            return jnp.mean(jnp.logaddexp(0.0, top[:, 0]) - labels * top[:, 0])
        l, g = jax.value_and_grad(loss, argnums=(0, 1, 2))(tables, wb, wt)
        return l, tables - 0.5 * g[0], wb - 0.1 * g[1], wt - 0.1 * g[2]
    return f


def _dlrm_args():
    return [_rand((KT, KV, KD), 850, scale=0.3), _ids((KB, KT, KBAG), KV, 851), _rand((KB, KF), 852),
            _rand((KF, KD), 853, scale=KF ** -0.5), _rand((KD + KT * (KT + 1) // 2, 1), 854, scale=0.2),
            (np.random.default_rng(855).random(KB) > 0.5).astype(np.float32)]


IB, IDIM, ITS = 16, 32, 100


def _timestep_emb(t, dim):
    half = dim // 2
    freqs = jnp.exp(-np.log(10000.0) * jnp.arange(half, dtype=jnp.float32) / half)
    a = t.astype(jnp.float32)[:, None] * freqs[None]
    return jnp.concatenate([jnp.sin(a), jnp.cos(a)], axis=-1)


def _ddpm_step(x0, t, noise, w1, wt, w2):
    # DDPM training loss (epsilon prediction) with a cosine schedule gathered at the timesteps,
    # a sinusoidal timestep embedding, value_and_grad and SGD.
    s = jnp.arange(ITS + 1, dtype=jnp.float32) / ITS
    abar = jnp.cos((s + 0.008) / 1.008 * np.pi / 2) ** 2
    abar = abar / abar[0]
    a_t = abar[t][:, None]
    xt = jnp.sqrt(a_t) * x0 + jnp.sqrt(1 - a_t) * noise

    def loss(ws):
        w1, wt, w2 = ws
        h = jax.nn.silu(xt @ w1 + _timestep_emb(t, 16) @ wt)
        return jnp.mean((h @ w2 - noise) ** 2)
    l, g = jax.value_and_grad(loss)((w1, wt, w2))
    return tuple(w - 0.05 * gw for w, gw in zip((w1, wt, w2), g)) + (l,)


def _ddpm_args():
    return [_rand((IB, IDIM), 860), _ids((IB,), ITS, 861) + 1, _rand((IB, IDIM), 862),
            _rand((IDIM, 64), 863, scale=IDIM ** -0.5), _rand((16, 64), 864, scale=0.25),
            _rand((64, IDIM), 865, scale=0.125)]


PT, PBT, PF, PA = 8, 16, 12, 6


def _ppo(obs, actions, old_logp, rewards, dones, values, w_pi, w_v):
    # PPO: GAE by a reverse lax.scan over time, clipped surrogate, value loss, entropy bonus; the
    # gradient of the loss wrt the policy and value heads (time-major, envs sharded).
    def gae_step(carry, inp):
        r, d, v, v_next = inp
        delta = r + 0.99 * v_next * (1 - d) - v
        carry = delta + 0.99 * 0.95 * (1 - d) * carry
        return carry, carry
    v_next = jnp.concatenate([values[1:], values[-1:]], axis=0)
    _, adv = jax.lax.scan(gae_step, jnp.zeros_like(values[0]), (rewards, dones, values, v_next), reverse=True)
    ret = adv + values
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)

    def loss(ws):
        w_pi, w_v = ws
        logits = obs @ w_pi
        logp_all = jax.nn.log_softmax(logits, axis=-1)
        logp = jnp.take_along_axis(logp_all, actions[..., None], axis=-1)[..., 0]
        ratio = jnp.exp(logp - old_logp)
        surr = jnp.minimum(ratio * adv, jnp.clip(ratio, 0.8, 1.2) * adv)
        v = (obs @ w_v)[..., 0]
        ent = -jnp.sum(jnp.exp(logp_all) * logp_all, axis=-1)
        return -surr.mean() + 0.5 * jnp.mean((v - ret) ** 2) - 0.01 * ent.mean()
    l, g = jax.value_and_grad(loss)((w_pi, w_v))
    return l, g[0], g[1], adv


def _ppo_args():
    rng = np.random.default_rng(871)
    return [_rand((PT, PBT, PF), 870), _ids((PT, PBT), PA, 872), _rand((PT, PBT), 873, scale=0.3) - 1.8,
            _rand((PT, PBT), 874), (rng.random((PT, PBT)) < 0.1).astype(np.float32), _rand((PT, PBT), 875),
            _rand((PF, PA), 876, scale=0.3), _rand((PF, 1), 877, scale=0.3)]


def _int8_wo(x, w1q, s1, w2q, s2):
    # int8 weight-only quantized MLP: per-output-channel scales, bf16 activations, column- then
    # row-parallel (Megatron) over model.
    h = (x @ w1q.astype(jnp.bfloat16)) * s1.astype(jnp.bfloat16)
    h = jax.nn.gelu(h)
    return (h @ w2q.astype(jnp.bfloat16)) * s2.astype(jnp.bfloat16)


def _int8_args():
    def quant(w):
        s = np.abs(w).max(axis=0) / 127.0
        return np.clip(np.round(w / s), -127, 127).astype(np.int8), s.astype(np.float32)
    w1q, s1 = quant(_rand((64, 128), 881, scale=0.125))
    w2q, s2 = quant(_rand((128, 64), 882, scale=0.09))
    return [_rand((16, 64), 880, "bf16"), w1q, s1, w2q, s2]


LRD, LRR = 64, 4


def _lora(mesh):
    # LoRA on a frozen tensor-parallel projection: grads and Adam-free SGD on A and B only.
    def f(x, y, w, a, b):
        def loss(ad):
            a, b = ad
            base = x @ jax.lax.stop_gradient(w)
            base = _wsc(mesh, base, P("data", "model"))
            return jnp.mean((base + (x @ a) @ b * (16.0 / LRR) - y) ** 2)
        l, (ga, gb) = jax.value_and_grad(loss)((a, b))
        return a - 0.01 * ga, b - 0.01 * gb, l
    return f


def _lora_args():
    return [_rand((32, LRD), 890), _rand((32, LRD), 891), _rand((LRD, LRD), 892, scale=LRD ** -0.5),
            _rand((LRD, LRR), 893, scale=0.1), _rand((LRR, LRD), 894, scale=0.1)]


def _zigzag_ring(mesh):
    # Causal ring attention with the zigzag (load-balanced) layout: device i holds sequence chunks i
    # and 2n-1-i; k / v blocks go round the 'sp' ring by ppermute inside lax.scan.
    def body(q, k, v, qpos, kpos):
        n = _axis_size("sp")
        perm = [(i, (i + 1) % n) for i in range(n)]

        def step(c, _):
            k, v, kpos, m, l, acc = c
            s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(q.shape[-1]))
            s = jnp.where(kpos[None, :] <= qpos[:, None], s, -1e30)
            m_new = jnp.maximum(m, s.max(-1))
            p = jnp.exp(s - m_new[..., None])
            corr = jnp.exp(m - m_new)
            acc = acc * corr[..., None] + jnp.einsum("bhqk,bkhd->bhqd", p, v)
            l = l * corr + p.sum(-1)
            k, v, kpos = (jax.lax.ppermute(t, "sp", perm) for t in (k, v, kpos))
            return (k, v, kpos, m_new, l, acc), None

        m0 = jnp.full((q.shape[0], q.shape[2], q.shape[1]), -1e30, jnp.float32)
        init = (k, v, kpos, m0, jnp.zeros_like(m0), jnp.zeros(m0.shape + (q.shape[3],), jnp.float32))
        (_, _, _, _, l, acc), _ = jax.lax.scan(step, init, None, length=n)
        return jnp.transpose(acc / l[..., None], (0, 2, 1, 3))

    spec = P("data", "sp")
    ring = _smap(mesh, body, (spec, spec, spec, P("sp"), P("sp")), spec, check_vma=False)

    def f(q, k, v):
        n = mesh.shape["sp"]
        s = q.shape[1]
        c = s // (2 * n)
        order = np.concatenate([np.r_[i * c:(i + 1) * c, (2 * n - 1 - i) * c:(2 * n - i) * c] for i in range(n)])
        pos = jnp.asarray(order, jnp.int32)
        o = ring(q[:, order], k[:, order], v[:, order], pos, pos)
        return o[:, np.argsort(order)]
    return f


def _pipeline_tp(mesh):
    # Pipeline over 'stage' (shard_map, manual over stage only) with tensor-parallel weights inside
    # (the model axis left automatic): microbatches move by ppermute in a fori_loop.
    def body(w1, w2, xs):
        n = _axis_size("stage")
        me = jax.lax.axis_index("stage")
        w1, w2 = w1[0], w2[0]
        nm = xs.shape[0]
        perm = [(i, (i + 1) % n) for i in range(n)]

        def step(t, c):
            state, outs = c
            inp = jnp.where(me == 0, xs[jnp.minimum(t, nm - 1)], state)
            out = inp + jax.nn.relu(inp @ w1) @ w2
            j = jnp.clip(t - (n - 1), 0, nm - 1)
            outs = jax.lax.dynamic_update_index_in_dim(
                outs, jnp.where((me == n - 1) & (t >= n - 1), out, outs[j]), j, 0)
            return jax.lax.ppermute(out, "stage", perm), outs
        state, outs = jax.lax.fori_loop(0, nm + n - 1, step, (jnp.zeros_like(xs[0]), jnp.zeros_like(xs)))
        return jax.lax.psum(jnp.where(me == n - 1, outs, 0.0), "stage")
    return _smap(mesh, body, (P("stage"), P("stage"), P()), P(), axis_names={"stage"}, check_vma=False)


def _pipeline_tp_args():
    return [_rand((2, 32, 64), 915, scale=32 ** -0.5), _rand((2, 64, 32), 916, scale=64 ** -0.5),
            _rand((4, 8, 32), 917)]


def _decode_wsc_loop(mesh):
    # A fori_loop decode whose cache the body constrains to sequence-over-model while the caller
    # holds it batch-over-data (MaxText's constraints inside the loop).
    def f(cache, x0, w):
        def body(t, c):
            cache, h = c
            h = jnp.tanh(h @ w)
            cache = jax.lax.dynamic_update_slice(cache, h[:, None], (0, t, 0))
            cache = _wsc(mesh, cache, P(None, "model"))
            return cache, h + cache.mean(1)
        cache, h = jax.lax.fori_loop(0, 6, body, (cache, x0))
        return _wsc(mesh, cache, P("data")), h
    return f


def _at_set_window(cache, new, pos):
    # cache.at[:, pos:pos+2].set(new) with a traced pos (a scatter), and a read of the 4 positions
    # before it (dynamic_slice); batch over data, sequence over model.
    cache = cache.at[:, pos].set(new[:, 0])
    cache = jax.lax.dynamic_update_slice_in_dim(cache, new[:, 1:], pos + 1, axis=1)
    window = jax.lax.dynamic_slice_in_dim(cache, jnp.maximum(pos - 3, 0), 4, axis=1)
    return cache, window.sum(1)


# ---- 16 devices -------------------------------------------------------------------------------------
M16, A16 = (2, 4, 2), ("data", "expert", "model")


def _gshard_moe16(mesh):
    # GShard top-2 MoE on 16 devices: tokens over (data, expert), experts over expert, each
    # expert's hidden over model; dispatch / combine one-hot einsums with capacity 4 per group.
    def f(x, wr, w1, w2):
        g, s_, m = x.shape
        logits = x @ wr
        probs = jax.nn.softmax(logits, -1)
        top, idx = jax.lax.top_k(probs, 2)
        mask = jax.nn.one_hot(idx, wr.shape[1])                                  # [g, s, 2, e]
        pos = (jnp.cumsum(mask.reshape(g, s_ * 2, -1), axis=1).reshape(mask.shape) - 1.0) * mask
        keep = mask * (pos < 4)
        disp = keep[..., None] * jax.nn.one_hot(pos.astype(jnp.int32), 4)        # [g, s, 2, e, c]
        comb = (disp * top[..., None, None]).sum(2)
        disp = disp.sum(2)
        xe = _wsc(mesh, jnp.einsum("gsec,gsm->egcm", disp, x), P("expert", "data", None, None))
        h = _wsc(mesh, jax.nn.gelu(jnp.einsum("egcm,emh->egch", xe, w1)), P("expert", "data", None, "model"))
        ye = _wsc(mesh, jnp.einsum("egch,ehm->egcm", h, w2), P("expert", "data", None, None))
        out = jnp.einsum("gsec,egcm->gsm", comb, ye)
        return _wsc(mesh, out, P(("data", "expert"))), jnp.mean(jax.nn.logsumexp(logits, -1) ** 2)
    return f


def models_programs():
    return [
        Program("gqa_decode_rope", "GQA decode step: RoPE at a traced position, KV-cache write, grouped attention, kv heads over model",
                _plain(_gqa_decode), M24, A2,
                [P("data"), P(), P("data", None, "model"), P("data", None, "model"), P(None, "model"),
                 P(None, "model"), P(None, "model"), P("model", None)],
                (P("data"), P("data", None, "model"), P("data", None, "model")), _gqa_decode_args),
        Program("alibi_window_attn", "sliding-window (8) causal attention with ALiBi biases, batch over data, heads over model",
                _alibi_window, M24, A2, [P("data", None, "model")] * 3, None, lambda: _qkv(700)),
        Program("t5_relpos_attn", "T5 attention with relative-position bucket biases (gathered per head), batch over data, heads over model",
                _plain(_t5_attention), M24, A2,
                [P("data"), P(None, "model"), P(None, "model"), P(None, "model"), P("model", None), P(None, "model")],
                P("data"), _t5_args),
        Program("flash_attn_scan", "blockwise causal attention: lax.scan over KV blocks with an online softmax, 2 x 4",
                _flash_scan, M24, A2, [P("data", None, "model")] * 3, None, lambda: _qkv(706)),
        Program("zigzag_ring_attn", "causal ring attention, zigzag layout, ppermute in lax.scan over sp (shard_map)",
                _zigzag_ring, (2, 4), ("data", "sp"), [P("data", "sp")] * 3, P("data", "sp"), lambda: _qkv(717)),
        Program("mamba_assoc_scan", "Mamba selective scan (associative_scan over the sequence), batch over data, d over model",
                _mamba_assoc, M24, A2, [P("data", None, "model"), P(None, "model"), P(), P(), P("model"), P("model")],
                None, lambda: _mamba_args(718)),
        Program("rwkv_time_mix", "RWKV-4 time mixing: token shift, WKV recurrence in lax.scan, batch over data, channels over model",
                _rwkv, M42, A2, [P("data"), P(), P(), P(), P(None, "model"), P(None, "model"), P(None, "model"),
                                 P("model", None), P("model"), P("model")], P("data"), _rwkv_args),
        Program("lstm_scan", "LSTM over 12 steps in lax.scan, batch over data, gates over model",
                _plain(_lstm), M42, A2, [P(None, "data"), P("data"), P("data"), P(None, "model"), P(None, "model"), P("model")],
                None, _lstm_args),
        Program("switch_moe_aux", "Switch top-1 MoE, capacity 6, z-loss + load-balancing loss, grad step, experts over expert",
                _switch_moe, (2, 4), ("data", "expert"),
                [P("data"), P("data"), P(), P("expert"), P("expert")],
                (P(), P("expert"), P("expert"), P(), P(), P()), _switch_args),
            Program("gshard_moe_16", "GShard top-2 MoE on 16 devices: tokens over (data, expert), experts over expert, hidden over model",
                _gshard_moe16, M16, A16, [P(("data", "expert")), P(), P("expert", None, "model"), P("expert", "model")],
                None, lambda: [_rand((8, 16, 16), 1085), _rand((16, 4), 1086), _rand((4, 16, 32), 1087, scale=0.25),
                               _rand((4, 32, 16), 1088, scale=0.18)]),
        Program("adafactor_step", "Adafactor step (factored second moments, update clipping), FSDP over x",
                _plain(_adafactor), M8, AX,
                [P("x"), P(), P(None, "x"), P("x"), P("x"), P("x"), P(), P(), P(), P("x")],
                (P("x"), P(), P(None, "x"), P("x"), P(), P(), P(), P("x"), P()), _adafactor_args),
        Program("lion_bf16_step", "Lion step, bf16 compute from f32 master weights, data 4 x model 2",
                _lion, M42, A2, [P(None, "model"), P("model"), P("model", None), P("data"), P("data"),
                                 P(None, "model"), P("model"), P("model", None)],
                (P(None, "model"), P("model"), P("model", None)) * 2 + (P(),), _lion_args, "bf16"),
        Program("lamb_step", "LAMB step with per-layer trust ratios, params and moments FSDP over fsdp, 3-axis mesh",
                _plain(_lamb), M222, A3,
                [P("fsdp", "model"), P("model"), P("model", "fsdp"), P(("data", "fsdp")), P(("data", "fsdp")),
                 P("fsdp", "model"), P("model"), P("model", "fsdp"), P("fsdp", "model"), P("model"),
                 P("model", "fsdp"), P()],
                (P("fsdp", "model"), P("model"), P("model", "fsdp")) * 3 + (P(),), _lamb_args),
        Program("grad_accum_scan", "gradient accumulation over 4 microbatches in lax.scan, batch over (data, fsdp)",
                _grad_accum, M222, A3, [P("fsdp"), P(), P(None, "fsdp"), P(None, ("data", "fsdp")),
                                        P(None, ("data", "fsdp"))],
                (P("fsdp"), P(), P(None, "fsdp"), P()), _grad_accum_args),
        # f16 tolerance: the f32 master weights take f16 gradients, and JAX's own runs of it on sharded
        # and unsharded inputs differ by 7.8e-4 (one f16 rounding of the gradient sums), past f32's.
        Program("loss_scale_skip", "dynamic loss scaling, f16 compute, isfinite + lax.cond skip over 3 steps, batch over x",
                _plain(_loss_scale_loop), M8, AX, [P(), P(), P(), P(None, "x"), P(None, "x"), P()], None,
                _loss_scale_args, "f16"),
        Program("top_k_p_sample", "temperature / top-k / top-p filtering and categorical sampling, batch over data",
                _top_k_p, M42, A2, [P("data", "model"), P()], None, lambda: [_rand((VB, VV), 824, scale=3.0), _key(825)]),
        Program("spec_decode_accept", "speculative decoding accept / reject and residual resampling, batch over x",
                _plain(_spec_decode), M8, AX, [P("x"), P("x"), P("x"), P()], None, _spec_args),
        Program("greedy_while_decode", "greedy decode in lax.while_loop until all rows emit EOS, batch over x, vocab over y",
                _plain(_greedy_loop), M24, ("x", "y"), [P(None, "y"), P(), P(None, "y"), P("x")], None, _greedy_args),
        Program("gnn_segment_sum", "2-round GCN message passing, edges sharded, segment_sum to nodes",
                _plain(_gnn), M8, AX, [P(), P("x"), P("x"), P(), P(), P()], None, _gnn_args),
        Program("dlrm_step", "DLRM: embedding bags on row-sharded tables, dot interactions, BCE grad step, 4 x 2",
                _dlrm, M42, A2, [P(None, "model"), P("data"), P("data"), P(), P(), P("data")],
                (P(), P(None, "model"), P(), P()), _dlrm_args),
        Program("ddpm_loss_step", "DDPM eps-prediction loss with timestep embedding, grad step, batch over x",
                _plain(_ddpm_step), M8, AX, [P("x"), P("x"), P("x"), P(), P(), P()], None, _ddpm_args),
        Program("ppo_gae_grad", "PPO clipped loss with GAE by reverse scan, envs over x",
                _plain(_ppo), M8, AX, [P(None, "x")] * 6 + [P(), P()], None, _ppo_args),
        Program("lora_grad", "LoRA A/B grads and step on a frozen column-parallel projection, 4 x 2",
                _lora, M42, A2, [P("data"), P("data"), P(None, "model"), P(), P()], None, _lora_args),
        Program("int8_weight_only", "int8 weight-only MLP, per-channel scales, bf16 activations, 2 x 4 Megatron",
                _plain(_int8_wo), M24, A2, [P("data"), P(None, "model"), P("model"), P("model", None), P()], None,
                _int8_args, "bf16"),
        Program("pipeline_stage_tp", "pipeline over stage (partially manual shard_map, fori_loop) with TP inside",
                _pipeline_tp, (2, 4), ("stage", "model"), [P("stage", None, "model"), P("stage", "model", None), P()],
                None, _pipeline_tp_args, context_mesh=True),
        Program("decode_wsc_loop", "fori_loop decode writing a cache the body constrains seq-over-model, held batch-over-data",
                _decode_wsc_loop, M24, A2, [P("data"), P("data"), P()], None,
                lambda: [np.zeros((4, 8, 16), np.float32), _rand((4, 16), 1029), _rand((16, 16), 1030, scale=0.25)], quick=True),
        Program("at_set_window", "cache.at[:, pos].set and a dynamic_slice read at a traced position, 2 x 4",
                _plain(_at_set_window), M24, A2, [P("data", "model"), P("data"), P()], None,
                lambda: [_rand((4, 16, 8), 1045), _rand((4, 2, 8), 1046), np.int32(6)], quick=True),
    ]
