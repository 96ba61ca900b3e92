"""Probe programs for bench/xla_compare (names p6b_, `--only p6b_` runs them): whole training steps
of models the suite did not have (T5 encoder-decoder with cross-attention, BERT MLM with a
masked-position gather, Mixtral top-2 MoE with experts sharded by the partitioner, ViT on 4 x 4 and
bf16 on 2 x 8, a Whisper conv1d frontend with the time dim sharded, DPO, SimCLR NT-Xent, a GAN step,
a VAE with jax.random from a key argument, a graph attention net with segment softmax, RNN-T loss,
sparse embeddings deduplicated by jnp.unique(size=), SwAV Sinkhorn, DINO centering), sharding APIs
as written in practice (constraints switching sequence / tensor / data parallel between layers,
tuple-of-axes specs on 4 x 4, out_shardings against propagation on 2x2x2, uneven vocab 1000 and
sequence 100 over 16, nested jit with static args and its own shardings, scan over stacked layers
sharded on the layer axis with remat and donated Adam state) and inference (prefill + fori_loop
greedy decode with a cache over batch and heads, MQA decode in scan at a traced position, while_loop
top-p sampling, paged attention with a page table, kNN retrieval top_k over a sharded database).
Then edges: uneven dims over merged mesh axes (100 tokens / 1000-word vocab over 16), a conv1d
frontend over 100 frames, ragged_dot with the experts sharded, a batch reshaped into scanned
microbatches, an int8 KV cache, mixture-of-depths, 2-D weight-stationary TP, a 4-axis mesh,
non-adjacent merged axes, batch-1 decode on a data axis, aliased / duplicated / constant outputs,
stochastic depth (cond in scan), context-parallel cross-attention, a Conformer conv module,
dot_product_attention with sequence lengths, padded ids (take fill / scatter drop), a ring-buffer
cache, a beam cache reorder, ALBERT shared layers in fori_loop and naive context-parallel attention.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

from programs import Program, _axis_size, _ids, _plain, _rand, _smap, _wsc

M24, M42, DM = (2, 4), (4, 2), ("data", "model")
M222, DFT = (2, 2, 2), ("data", "fsdp", "tensor")


def _ln(x, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + eps)


def _rms(x, g, eps=1e-6):
    return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + eps) * g


def _mha(xq, xkv, wq, wk, wv, wo, heads, mask=None):
    b, sq, _ = xq.shape
    sk = xkv.shape[1]
    q = (xq @ wq).reshape(b, sq, heads, -1)
    k = (xkv @ wk).reshape(b, sk, heads, -1)
    v = (xkv @ wv).reshape(b, sk, heads, -1)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(q.shape[-1]))
    if mask is not None:
        s = jnp.where(mask, s, -1e9)
    p = jax.nn.softmax(s, -1)
    return jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, sq, -1) @ wo


def _xent_ids(logits, labels, w=None):
    lp = jax.nn.log_softmax(logits, -1)
    nll = -jnp.take_along_axis(lp, labels[..., None], -1)[..., 0]
    if w is None:
        return nll.mean()
    return jnp.sum(nll * w) / jnp.maximum(jnp.sum(w), 1.0)


# ==== T5 encoder-decoder =========================================================================
T5V, T5D, T5H, T5F = 64, 32, 4, 64


def _t5_loss(params, src, tgt_in, tgt_out):
    (emb, e_g1, e_wq, e_wk, e_wv, e_wo, e_g2, e_w1, e_w2, e_gf,
     d_g1, d_wq, d_wk, d_wv, d_wo, d_g2, c_wq, c_wk, c_wv, c_wo, d_g3, d_w1, d_w2, d_gf) = params
    x = emb[src]
    x = x + _mha(_rms(x, e_g1), _rms(x, e_g1), e_wq, e_wk, e_wv, e_wo, T5H)
    x = x + jax.nn.relu(_rms(x, e_g2) @ e_w1) @ e_w2
    enc = _rms(x, e_gf)
    y = emb[tgt_in]
    st = tgt_in.shape[1]
    causal = jnp.tril(jnp.ones((st, st), bool))
    h = _rms(y, d_g1)
    y = y + _mha(h, h, d_wq, d_wk, d_wv, d_wo, T5H, causal)
    y = y + _mha(_rms(y, d_g2), enc, c_wq, c_wk, c_wv, c_wo, T5H)  # cross-attention: 8 queries, 16 keys
    y = y + jax.nn.relu(_rms(y, d_g3) @ d_w1) @ d_w2
    logits = (_rms(y, d_gf) * np.float32(T5D ** -0.5)) @ emb.T
    return _xent_ids(logits, tgt_out, (tgt_out != 0).astype(jnp.float32))


def _t5_step(*a):
    params, (src, tgt_in, tgt_out) = a[:-3], a[-3:]
    loss, g = jax.value_and_grad(_t5_loss)(params, src, tgt_in, tgt_out)
    return loss, tuple(p - 0.05 * gi for p, gi in zip(params, g))


def _t5_specs_args():
    col, row, rep = P(None, "model"), P("model", None), P()
    specs, args, seed = [P("model", None)], [_rand((T5V, T5D), 6000)], 6001
    layout = ["g", "c", "c", "c", "r", "g", "c", "r", "g",
              "g", "c", "c", "c", "r", "g", "c", "c", "c", "r", "g", "c", "r", "g"]
    for kind in layout:
        if kind == "g":
            specs.append(rep)
            args.append(1.0 + _rand((T5D,), seed, scale=0.1))
        elif kind == "c":
            specs.append(col)
            args.append(_rand((T5D, T5D), seed, scale=T5D ** -0.5))
        else:
            specs.append(row)
            args.append(_rand((T5D, T5D), seed, scale=T5D ** -0.5))
        seed += 1
    # The MLP weights (indices 7, 8 and 21, 22) are D x F / F x D.
    args[7], args[8] = _rand((T5D, T5F), 6050, scale=T5D ** -0.5), _rand((T5F, T5D), 6051, scale=T5F ** -0.5)
    args[21], args[22] = _rand((T5D, T5F), 6052, scale=T5D ** -0.5), _rand((T5F, T5D), 6053, scale=T5F ** -0.5)
    specs += [P("data"), P("data"), P("data")]
    tgt = _ids((4, 9), T5V, 6060)
    tgt[:, -2:] = 0  # padding: masked out of the loss
    args += [_ids((4, 16), T5V, 6061), tgt[:, :-1], tgt[:, 1:]]
    return specs, args


# ==== BERT masked-LM =============================================================================
BV, BD, BS, BM = 128, 32, 16, 3


def _bert_loss(params, ids, mpos, mlab, mw):
    emb, pos, wq, wk, wv, wo, w1, w2, wt, bias = params
    x = _ln(emb[ids] + pos[None])
    x = _ln(x + _mha(x, x, wq, wk, wv, wo, 4))
    x = _ln(x + jax.nn.gelu(x @ w1) @ w2)
    hm = jnp.take_along_axis(x, mpos[:, :, None], axis=1)        # [B, M, D] at the masked positions
    t = _ln(jax.nn.gelu(hm @ wt))
    logits = t @ emb.T + bias
    return _xent_ids(logits, mlab, mw)


def _bert_step(*a):
    params, rest = a[:10], a[10:]
    loss, g = jax.value_and_grad(_bert_loss)(params, *rest)
    return loss, g


def _bert_args():
    sc = BD ** -0.5
    ps = [_rand((BV, BD), 6100), _rand((BS, BD), 6101, scale=0.1)] + \
         [_rand((BD, BD), 6102 + i, scale=sc) for i in range(4)] + \
         [_rand((BD, 4 * BD), 6106, scale=sc), _rand((4 * BD, BD), 6107, scale=sc / 2),
          _rand((BD, BD), 6108, scale=sc), _rand((BV,), 6109, scale=0.1)]
    rng = np.random.default_rng(6110)
    mpos = np.stack([rng.choice(BS, BM, replace=False) for _ in range(8)]).astype(np.int32)
    mw = np.ones((8, BM), np.float32)
    mw[::3, -1] = 0.0
    return ps + [_ids((8, BS), BV, 6111), mpos, _ids((8, BM), BV, 6112), mw]


_BERT_SPECS = [P("model", None), P(), P(None, "model"), P(None, "model"), P(None, "model"), P("model", None),
               P(None, "model"), P("model", None), P(), P("model"), P("data"), P("data"), P("data"), P("data")]


# ==== Mixtral top-2 MoE, experts sharded by the partitioner =======================================
ME, MD_, MF = 4, 16, 32


def _mixtral_loss(params, x, y):
    wr, w1, w3, w2, wout = params
    b, s, d = x.shape
    t = x.reshape(b * s, d)
    logits = t @ wr                                              # [T, E]
    vals, idx = jax.lax.top_k(logits, 2)
    gates_k = jax.nn.softmax(vals, -1)                            # renormalised over the top 2
    gates = jnp.sum(jax.nn.one_hot(idx, ME) * gates_k[..., None], axis=1)   # [T, E]
    h = jax.nn.silu(jnp.einsum("td,edf->etf", t, w1)) * jnp.einsum("td,edf->etf", t, w3)
    eo = jnp.einsum("etf,efd->etd", h, w2)
    o = jnp.einsum("etd,te->td", eo, gates)
    probs = jax.nn.softmax(logits, -1)
    frac = jnp.mean(jax.nn.one_hot(idx[:, 0], ME), 0)
    aux = ME * jnp.sum(frac * probs.mean(0))
    out = (t + o) @ wout
    return jnp.mean((out.reshape(b, s, -1) - y) ** 2) + 0.01 * aux


def _mixtral_step(*a):
    params, x, y = a[:5], a[5], a[6]
    loss, g = jax.value_and_grad(_mixtral_loss)(params, x, y)
    return loss, tuple(p - 0.1 * gi for p, gi in zip(params, g))


def _mixtral_args():
    return [_rand((MD_, ME), 6200, scale=0.5), _rand((ME, MD_, MF), 6201, scale=MD_ ** -0.5),
            _rand((ME, MD_, MF), 6202, scale=MD_ ** -0.5), _rand((ME, MF, MD_), 6203, scale=MF ** -0.5),
            _rand((MD_, 8), 6204, scale=0.25), _rand((4, 8, MD_), 6205), _rand((4, 8, 8), 6206)]


_MIXTRAL_SPECS = [P(), P("expert", None, "model"), P("expert", None, "model"), P("expert", "model", None),
                  P(), P("data"), P("data")]


# ==== ViT with 2-D sharding ======================================================================
def _vit_loss(params, img, lab, heads, dt):
    wp, cls, pos, g1, wq, wk, wv, wo, g2, w1, w2, wh = params
    c = lambda t: t.astype(dt)
    p = jax.lax.conv_general_dilated(c(img), c(wp), (4, 4), "VALID",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    b = p.shape[0]
    x = p.reshape(b, -1, p.shape[-1])
    x = jnp.concatenate([jnp.broadcast_to(c(cls), (b, 1, x.shape[-1])), x], 1) + c(pos)[None]
    h = (_ln(x) * c(g1))
    x = x + _mha(h, h, c(wq), c(wk), c(wv), c(wo), heads)
    x = x + jax.nn.gelu(_ln(x) * c(g2) @ c(w1)) @ c(w2)
    logits = (_ln(x[:, 0]) @ c(wh)).astype(jnp.float32)
    return _xent_ids(logits, lab)


def _vit_step(heads, dt):
    def f(*a):
        params, img, lab = a[:12], a[12], a[13]
        loss, g = jax.value_and_grad(_vit_loss)(params, img, lab, heads, dt)
        return loss, tuple(p - 0.05 * gi.astype(jnp.float32) for p, gi in zip(params, g))
    return f


def _vit_args(b):
    d = 32
    sc = d ** -0.5
    return [_rand((4, 4, 3, d), 6300, scale=0.15), _rand((1, 1, d), 6301, scale=0.1), _rand((17, d), 6302, scale=0.1),
            1.0 + _rand((d,), 6303, scale=0.1)] + [_rand((d, d), 6304 + i, scale=sc) for i in range(4)] + \
           [1.0 + _rand((d,), 6308, scale=0.1), _rand((d, 64), 6309, scale=sc), _rand((64, d), 6310, scale=0.125),
            _rand((d, 10), 6311, scale=sc), _rand((b, 16, 16, 3), 6312), _ids((b,), 10, 6313)]


_VIT_SPECS = [P(None, None, None, "model"), P(), P(), P(), P(None, "model"), P(None, "model"), P(None, "model"),
              P("model", None), P(), P(None, "model"), P("model", None), P(), P("data"), P("data")]


# ==== Whisper-like conv1d frontend + transformer ==================================================
def _whisper(mesh):
    def conv1d(x, w, stride):
        return jax.lax.conv_general_dilated(x, w, (stride,), [(1, 1)], dimension_numbers=("NWC", "WIO", "NWC"))

    def loss(params, mel, y):
        c1, b1, c2, b2, wq, wk, wv, wo, w1, w2 = params
        h = jax.nn.gelu(conv1d(mel, c1, 1) + b1)
        h = jax.nn.gelu(conv1d(h, c2, 2) + b2)                  # [B, 32, 32]: time halved
        t = h.shape[1]
        d = h.shape[2]
        inv = np.exp(-np.log(10000.0) * np.arange(d // 2) / (d // 2 - 1)).astype(np.float32)
        ang = np.arange(t, dtype=np.float32)[:, None] * inv[None]
        h = h + jnp.asarray(np.concatenate([np.sin(ang), np.cos(ang)], 1))
        h = _wsc(mesh, h, P("data", None, None))                 # time gathered for attention
        x = _ln(h)
        h = h + _mha(x, x, wq, wk, wv, wo, 4)
        h = h + jax.nn.gelu(_ln(h) @ w1) @ w2
        return jnp.mean((_ln(h).mean(1) - y) ** 2)

    def f(*a):
        params, mel, y = a[:10], a[10], a[11]
        l, g = jax.value_and_grad(loss)(params, mel, y)
        return l, g
    return f


def _whisper_args():
    d = 32
    sc = d ** -0.5
    return [_rand((3, 16, d), 6400, scale=0.15), _rand((d,), 6401, scale=0.1), _rand((3, d, d), 6402, scale=0.1),
            _rand((d,), 6403, scale=0.1)] + [_rand((d, d), 6404 + i, scale=sc) for i in range(4)] + \
           [_rand((d, 64), 6408, scale=sc), _rand((64, d), 6409, scale=0.125), _rand((4, 64, 16), 6410),
            _rand((4, d), 6411)]


_WHISPER_SPECS = [P(), P(), P(None, None, "model"), P("model"), P(None, "model"), P(None, "model"),
                  P(None, "model"), P("model", None), P(None, "model"), P("model", None),
                  P("data", "model", None), P("data")]


# ==== MQA decoder: KV cache updated at a traced position in a scan ================================
def _mqa_decode(emb, wq, wk, wv, wo, kc, vc, tok0, pos0):
    h_, dh = 4, 8

    def step(carry, i):
        kc, vc, tok = carry
        pos = pos0 + i
        x = emb[tok]                                            # [B, D]
        q = (x @ wq).reshape(x.shape[0], h_, dh)
        k = x @ wk                                              # one shared kv head
        v = x @ wv
        kc = jax.lax.dynamic_update_slice(kc, k[:, None, :], (0, pos, 0))
        vc = jax.lax.dynamic_update_slice(vc, v[:, None, :], (0, pos, 0))
        s = jnp.einsum("bhd,bld->bhl", q, kc) / np.float32(np.sqrt(dh))
        s = jnp.where(jnp.arange(kc.shape[1])[None, None] <= pos, s, -1e9)
        o = jnp.einsum("bhl,bld->bhd", jax.nn.softmax(s, -1), vc).reshape(x.shape[0], -1)
        logits = (x + o @ wo) @ emb.T
        nxt = jnp.argmax(logits, -1).astype(jnp.int32)
        return (kc, vc, nxt), (nxt, jnp.max(logits, -1))
    (kc, vc, _), (toks, lmax) = jax.lax.scan(step, (kc, vc, tok0), jnp.arange(4))
    return toks.T, lmax.T, kc, vc


def _mqa_args():
    d = 32
    return [_rand((64, d), 6500), _rand((d, 32), 6501, scale=d ** -0.5), _rand((d, 8), 6502, scale=d ** -0.5),
            _rand((d, 8), 6503, scale=d ** -0.5), _rand((32, d), 6504, scale=0.2),
            _rand((4, 24, 8), 6505), _rand((4, 24, 8), 6506), _ids((4,), 64, 6507), np.int32(11)]


# ==== DPO loss ===================================================================================
def _dpo(w0, wv, rw0, rwv, hc, hr, yc, yr, mc, mr):
    def logp(w0, wv, h, y, m):
        z = jax.nn.gelu(h.astype(jnp.bfloat16) @ w0.astype(jnp.bfloat16))
        logits = (z @ wv.astype(jnp.bfloat16)).astype(jnp.float32)
        lp = jnp.take_along_axis(jax.nn.log_softmax(logits, -1), y[..., None], -1)[..., 0]
        return jnp.sum(lp * m, -1)

    def loss(pol):
        pc, pr = logp(*pol, hc, yc, mc), logp(*pol, hr, yr, mr)
        rc, rr = logp(rw0, rwv, hc, yc, mc), logp(rw0, rwv, hr, yr, mr)
        margin = 0.1 * ((pc - rc) - (pr - rr))
        return -jnp.mean(jax.nn.log_sigmoid(margin)), (jnp.mean(margin > 0), jnp.mean(pc - rc))
    (l, aux), g = jax.value_and_grad(loss, has_aux=True)((w0, wv))
    return l, aux, g


def _dpo_args():
    d, v = 32, 64
    m = np.ones((8, 12), np.float32)
    m[:, :4] = 0.0   # the prompt
    mr = m.copy()
    mr[::2, -3:] = 0.0
    return [_rand((d, d), 6600, scale=d ** -0.5), _rand((d, v), 6601, scale=d ** -0.5),
            _rand((d, d), 6602, scale=d ** -0.5), _rand((d, v), 6603, scale=d ** -0.5),
            _rand((8, 12, d), 6604), _rand((8, 12, d), 6605), _ids((8, 12), v, 6606), _ids((8, 12), v, 6607), m, mr]


# ==== SimCLR NT-Xent =============================================================================
def _simclr(w1, w2, x1, x2):
    def loss(ws):
        def proj(x):
            z = jax.nn.relu(x @ ws[0]) @ ws[1]
            return z / jnp.linalg.norm(z, axis=-1, keepdims=True)
        z = jnp.concatenate([proj(x1), proj(x2)], 0)            # [2B, K]
        n = z.shape[0]
        sim = z @ z.T / 0.2
        sim = jnp.where(jnp.eye(n, dtype=bool), -jnp.inf, sim)
        pos = (jnp.arange(n) + n // 2) % n
        return jnp.mean(jax.nn.logsumexp(sim, -1) - sim[jnp.arange(n), pos])
    return jax.value_and_grad(loss)((w1, w2))


# ==== GAN step ===================================================================================
def _gan(g1, g2, d1, d2, z, real):
    def gen(gp, z):
        return jnp.tanh(jax.nn.leaky_relu(z @ gp[0], 0.2) @ gp[1])

    def disc(dp, x):
        return (jax.nn.leaky_relu(x @ dp[0], 0.2) @ dp[1])[:, 0]

    gp, dp = (g1, g2), (d1, d2)

    def d_loss(dp):
        fake = jax.lax.stop_gradient(gen(gp, z))
        return jnp.mean(jax.nn.softplus(-disc(dp, real)) + jax.nn.softplus(disc(dp, fake)))

    def g_loss(gp):
        return jnp.mean(jax.nn.softplus(-disc(dp, gen(gp, z))))
    ld, gd = jax.value_and_grad(d_loss)(dp)
    dp = tuple(p - 0.05 * g for p, g in zip(dp, gd))
    lg, gg = jax.value_and_grad(g_loss)(gp)
    gp = tuple(p - 0.05 * g for p, g in zip(gp, gg))
    return ld, lg, gp, dp


# ==== VAE with a key argument ====================================================================
def _vae(we, wmu, wlv, wd1, wd2, x, key):
    def loss(ps):
        we, wmu, wlv, wd1, wd2 = ps
        h = jax.nn.relu(x @ we)
        mu, lv = h @ wmu, h @ wlv
        eps = jax.random.normal(key, mu.shape)
        z = mu + jnp.exp(0.5 * lv) * eps
        xr = jax.nn.relu(z @ wd1) @ wd2
        rec = jnp.sum((xr - x) ** 2, -1)
        kl = -0.5 * jnp.sum(1 + lv - mu ** 2 - jnp.exp(lv), -1)
        return jnp.mean(rec + kl), jnp.mean(kl)
    (l, kl), g = jax.value_and_grad(loss, has_aux=True)((we, wmu, wlv, wd1, wd2))
    return l, kl, tuple(p - 0.01 * gi for p, gi in zip((we, wmu, wlv, wd1, wd2), g))


# ==== graph attention with segment softmax =======================================================
GN = 32


def _gat(w, a_src, a_dst, x, src, dst, y):
    def loss(ps):
        w, a_s, a_d = ps
        h = (x @ w).reshape(GN, 4, 8)                           # 4 heads
        e = jax.nn.leaky_relu(jnp.sum(h[src] * a_s, -1) + jnp.sum(h[dst] * a_d, -1), 0.2)   # [E, H]
        emax = jax.ops.segment_max(e, dst, GN)
        ex = jnp.exp(e - emax[dst])
        den = jax.ops.segment_sum(ex, dst, GN)
        alpha = ex / den[dst]
        out = jax.ops.segment_sum(alpha[..., None] * h[src], dst, GN)   # [N, H, F]
        out = jax.nn.elu(out.mean(1))
        return jnp.mean((out - y) ** 2)
    return jax.value_and_grad(loss)((w, a_src, a_dst))


def _gat_args():
    rng = np.random.default_rng(6900)
    src = rng.integers(0, GN, 128).astype(np.int32)
    dst = np.concatenate([np.arange(GN), rng.integers(0, GN, 128 - GN)]).astype(np.int32)  # every node has an in-edge
    return [_rand((16, 32), 6901, scale=0.25), _rand((4, 8), 6902, scale=0.3), _rand((4, 8), 6903, scale=0.3),
            _rand((GN, 16), 6904), src, dst, _rand((GN, 8), 6905)]


# ==== sparse embeddings deduplicated by unique ===================================================
def _sparse_unique(table, acc, ids, w, y):
    uids, inv = jnp.unique(ids.reshape(-1), size=64, fill_value=0, return_inverse=True)
    rows = table[uids]                                          # [64, D]: one gather per unique id

    def loss(rows):
        e = rows[inv.reshape(ids.shape)]                        # [B, S, D]
        return jnp.mean((jnp.tanh(e.sum(1)) @ w - y) ** 2)
    l, gr = jax.value_and_grad(loss)(rows)
    acc_rows = acc[uids] + jnp.sum(gr * gr, -1)                 # row-wise Adagrad
    upd = -0.5 * gr / jnp.sqrt(acc_rows + 1e-6)[:, None]
    valid = (jnp.arange(64) < jnp.sum(jnp.diff(jnp.sort(ids.reshape(-1))) != 0) + 1)[:, None]
    table = table.at[uids].add(jnp.where(valid, upd, 0.0))
    acc = acc.at[uids].set(jnp.where(valid[:, 0], acc_rows, acc[uids]))
    return l, table, acc


# ==== Megatron-SP / TP / DP activation reshards per layer (2x2x2) =================================
def _sp_tp_layers(mesh):
    def layer(x, wq, wk, wv, wo, w1, w2, seq_spec, tp_spec):
        x = _wsc(mesh, x, seq_spec)                              # norm on sequence shards
        h = _wsc(mesh, _ln(x), P("data", None, None))            # all-gather the sequence
        a = _mha(h, h, wq, wk, wv, wo, 4)
        x = x + _wsc(mesh, a, seq_spec)                          # reduce-scatter back onto the sequence
        h2 = _wsc(mesh, _ln(x), P("data", None, None))
        hid = _wsc(mesh, jax.nn.gelu(h2 @ w1), tp_spec)          # hidden over the TP axis
        return x + _wsc(mesh, hid @ w2, seq_spec)

    def loss(ps, x):
        x = layer(x, *ps[0:6], P("data", "tensor", None), P("data", None, "tensor"))
        x = layer(x, *ps[6:12], P("data", "fsdp", None), P("data", None, "fsdp"))
        x = _wsc(mesh, x, P(("data", "fsdp"), None, None))
        return jnp.mean(_ln(x) ** 2 * jnp.arange(x.shape[-1], dtype=jnp.float32) / 32.0)

    def f(*a):
        return jax.value_and_grad(loss)(a[:12], a[12])
    return f


def _sp_args():
    d = 32
    sc = d ** -0.5
    out = []
    for l in range(2):
        out += [_rand((d, d), 7000 + 10 * l + i, scale=sc) for i in range(4)]
        out += [_rand((d, 64), 7005 + 10 * l, scale=sc), _rand((64, d), 7006 + 10 * l, scale=0.125)]
    return out + [_rand((4, 16, d), 7050)]


_SP_SPECS = ([P(None, "tensor"), P(None, "tensor"), P(None, "tensor"), P("tensor", None), P(None, "tensor"),
              P("tensor", None)] + [P("fsdp", "tensor"), P("fsdp", "tensor"), P("fsdp", "tensor"),
              P("tensor", "fsdp"), P("fsdp", "tensor"), P("tensor", "fsdp")] + [P("data", "tensor", None)])


# ==== tuple-of-axes specs on 4 x 4 ===============================================================
def _tuple_axes_mlp(w1, b1, w2, x, y):
    def loss(ps):
        w1, b1, w2 = ps
        return jnp.mean((jax.nn.gelu(x @ w1 + b1) @ w2 - y) ** 2)
    l, g = jax.value_and_grad(loss)((w1, b1, w2))
    return l, w1 - 0.1 * g[0], b1 - 0.1 * g[1], w2 - 0.1 * g[2], jax.nn.gelu(x @ w1 + b1)


# ==== uneven vocab 1000 and sequence 100 over 16 =================================================
def _uneven16(mesh):
    def f(hfull, wfull, labfull):
        h = _wsc(mesh, hfull[:, :100], P(None, "x", None))      # sequence 100 over 16
        w = _wsc(mesh, wfull[:, :1000], P(None, "x"))           # vocab 1000 over 16
        lab = labfull[:, :100] % 1000

        def loss(w):
            logits = _ln(h) @ w
            return _xent_ids(logits, lab), jnp.argmax(logits, -1)
        (l, am), g = jax.value_and_grad(loss, has_aux=True)(w)
        return l, am, _wsc(mesh, w - 0.5 * g, P(None, "x"))
    return f


# ==== nested jit with static args and its own shardings ==========================================
def _nested_static(mesh):
    @functools.partial(jax.jit, static_argnames=("act", "heads"))
    def attn(x, wqkv, act, heads):
        b, s, d = x.shape
        q, k, v = jnp.split(x @ wqkv, 3, -1)
        q, k, v = (t.reshape(b, s, heads, -1) for t in (q, k, v))
        sc = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(d // heads))
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, -1), v).reshape(b, s, d)
        return {"gelu": jax.nn.gelu, "relu": jax.nn.relu}[act](o)

    mlp_a = jax.jit(lambda x, w: jnp.tanh(x @ w),
                    in_shardings=(NamedSharding(mesh, P("data", None, None)), NamedSharding(mesh, P(None, "model"))),
                    out_shardings=NamedSharding(mesh, P("data", None, "model")))
    mlp_b = jax.jit(lambda x, w: x @ w, out_shardings=NamedSharding(mesh, P(None, "model", None)))

    def f(x, wqkv, w1, w2):
        h = x + attn(x, wqkv, act="gelu", heads=4)
        h = mlp_b(mlp_a(h, w1), w2) + h
        h = h + attn(h, wqkv, act="relu", heads=2)
        return h, jax.grad(lambda w: jnp.sum(attn(x, w, act="gelu", heads=4) ** 2))(wqkv)
    return f


# ==== scan over layer-sharded stacked params, remat, donated Adam state ===========================
def _scan_fsdp_adam(mesh):
    def layer(h, w):
        w1, w2, g = w
        return h + jax.nn.gelu(_rms(h, g) @ w1) @ w2, None

    def loss(ps, x, y):
        h, _ = jax.lax.scan(jax.checkpoint(layer), x, ps)
        return jnp.mean((h - y) ** 2)

    def f(w1, w2, g, m1, m2, mg, v1, v2, vg, x, y, step):
        ps, ms, vs = (w1, w2, g), (m1, m2, mg), (v1, v2, vg)
        l, gr = jax.value_and_grad(loss)(ps, x, y)
        t = step + 1.0
        outs = []
        for p, gi, m, v in zip(ps, gr, ms, vs):
            m = 0.9 * m + 0.1 * gi
            v = 0.999 * v + 0.001 * gi * gi
            p = p - 1e-2 * (m / (1 - 0.9 ** t)) / (jnp.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
            outs.append((p, m, v))
        return tuple(o[0] for o in outs), tuple(o[1] for o in outs), tuple(o[2] for o in outs), l
    return f


def _scan_fsdp_args():
    l, d, f = 4, 16, 32
    ps = [_rand((l, d, f), 7300, scale=d ** -0.5), _rand((l, f, d), 7301, scale=f ** -0.5 / 2),
          1.0 + _rand((l, d), 7302, scale=0.1)]
    ms = [_rand(p.shape, 7310 + i, scale=0.01) for i, p in enumerate(ps)]
    vs = [np.abs(_rand(p.shape, 7320 + i, scale=0.01)) for i, p in enumerate(ps)]
    return ps + ms + vs + [_rand((8, 8, d), 7330), _rand((8, 8, d), 7331), np.float32(3.0)]


_SCAN_FSDP_SPECS = [P("fsdp", None, "tensor"), P("fsdp", "tensor", None), P("fsdp")] * 3 + \
                   [P("data"), P("data"), P()]


# ==== prefill + fori_loop greedy decode, cache over batch and heads ===============================
def _prefill_decode(mesh):
    H, DH = 4, 8

    def attend(x, wqkv, wo, kc, vc, start, n):
        b, s, d = x.shape
        q, k, v = (t.reshape(b, s, H, DH) for t in jnp.split(x @ wqkv, 3, -1))
        kc = jax.lax.dynamic_update_slice(kc, k, (0, start, 0, 0))
        vc = jax.lax.dynamic_update_slice(vc, v, (0, start, 0, 0))
        kc = _wsc(mesh, kc, P("data", None, "model", None))
        vc = _wsc(mesh, vc, P("data", None, "model", None))
        sc = jnp.einsum("bqhd,bkhd->bhqk", q, kc) / np.float32(np.sqrt(DH))
        qpos = start + jnp.arange(s)
        sc = jnp.where(jnp.arange(kc.shape[1])[None, None, None] <= qpos[None, None, :, None], sc, -1e9)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, -1), vc).reshape(b, s, d)
        return x + o @ wo, kc, vc

    def f(emb, wqkv, wo, w1, w2, prompt):
        b, pl = prompt.shape
        kc = jnp.zeros((b, 16, H, DH), jnp.float32)
        vc = jnp.zeros((b, 16, H, DH), jnp.float32)

        def fwd(ids, kc, vc, start):
            x = emb[ids]
            x, kc, vc = attend(_ln(x), wqkv, wo, kc, vc, start, ids.shape[1])
            x = x + jax.nn.gelu(_ln(x) @ w1) @ w2
            return _ln(x[:, -1]) @ emb.T, kc, vc
        logits, kc, vc = fwd(prompt, kc, vc, 0)
        tok = jnp.argmax(logits, -1).astype(jnp.int32)
        out = jnp.zeros((b, 4), jnp.int32).at[:, 0].set(tok)

        def body(i, c):
            tok, kc, vc, out = c
            lg, kc, vc = fwd(tok[:, None], kc, vc, pl + i)
            tok = jnp.argmax(lg, -1).astype(jnp.int32)
            return tok, kc, vc, out.at[:, i + 1].set(tok)
        tok, kc, vc, out = jax.lax.fori_loop(0, 3, body, (tok, kc, vc, out))
        return out, kc
    return f


def _prefill_args():
    d = 32
    return [_rand((64, d), 7400), _rand((d, 3 * d), 7401, scale=d ** -0.5), _rand((d, d), 7402, scale=0.2),
            _rand((d, 64), 7403, scale=d ** -0.5), _rand((64, d), 7404, scale=0.125), _ids((4, 8), 64, 7405)]


# ==== while_loop decode with top-p sampling =====================================================
def _topp_loop(emb, wh, wout, h0, key, n):
    def cond(c):
        return c[0] < n

    def body(c):
        i, h, tok, out = c
        h = jnp.tanh(emb[tok] + h @ wh)
        logits = (h @ wout) / 0.7
        srt = jnp.sort(logits, -1)[:, ::-1]
        cp = jnp.cumsum(jax.nn.softmax(srt, -1), -1)
        keep = cp - jax.nn.softmax(srt, -1) < 0.9
        thresh = jnp.min(jnp.where(keep, srt, jnp.inf), -1, keepdims=True)
        logits = jnp.where(logits >= thresh, logits, -jnp.inf)
        tok = jax.random.categorical(jax.random.fold_in(key, i), logits).astype(jnp.int32)
        return i + 1, h, tok, out.at[:, i].set(tok)
    b = h0.shape[0]
    _, h, tok, out = jax.lax.while_loop(cond, body, (jnp.int32(0), h0, jnp.zeros((b,), jnp.int32),
                                                       jnp.full((b, 6), -1, jnp.int32)))
    return out, h


# ==== paged attention decode =====================================================================
def _paged_attn(q, knew, vnew, kpages, vpages, table, lens):
    b, h, dh = q.shape
    ps = kpages.shape[1]
    pos = lens                                                  # the new token's position
    page = jnp.take_along_axis(table, (pos // ps)[:, None], 1)[:, 0]
    slot = pos % ps
    kpages = kpages.at[page, slot].set(knew)
    vpages = vpages.at[page, slot].set(vnew)
    k = kpages[table].reshape(b, -1, h, dh)                     # [B, MP * PS, H, DH]
    v = vpages[table].reshape(b, -1, h, dh)
    s = jnp.einsum("bhd,bkhd->bhk", q, k) / np.float32(np.sqrt(dh))
    s = jnp.where(jnp.arange(k.shape[1])[None, None] <= pos[:, None, None], s, -1e9)
    o = jnp.einsum("bhk,bkhd->bhd", jax.nn.softmax(s, -1), v)
    return o, kpages, vpages


def _paged_args():
    table = np.array([[3, 7, 1, 12], [0, 5, 9, 14], [2, 4, 6, 8], [10, 11, 13, 15]], np.int32)
    return [_rand((4, 4, 8), 7600), _rand((4, 4, 8), 7601), _rand((4, 4, 8), 7602), _rand((16, 4, 4, 8), 7603),
            _rand((16, 4, 4, 8), 7604), table, np.array([5, 14, 9, 0], np.int32)]


# ==== kNN retrieval over a sharded database ======================================================
def _knn(q, db, vals):
    qn = q / jnp.linalg.norm(q, axis=-1, keepdims=True)
    dn = db / jnp.linalg.norm(db, axis=-1, keepdims=True)
    scores, idx = jax.lax.top_k(qn @ dn.T, 5)
    got = vals[idx]                                             # [B, 5, Dv]
    w = jax.nn.softmax(scores * 10.0, -1)
    return scores, idx, jnp.einsum("bk,bkd->bd", w, got)


# ==== SwAV Sinkhorn ==============================================================================
def _swav(protos, z1, z2):
    def sinkhorn(s):
        qm = jnp.exp(s / 0.05).T                                # [K, B]
        qm = qm / jnp.sum(qm)

        def it(_, qm):
            qm = qm / jnp.sum(qm, 1, keepdims=True) / qm.shape[0]
            return qm / jnp.sum(qm, 0, keepdims=True) / qm.shape[1]
        return (jax.lax.fori_loop(0, 3, it, qm) * qm.shape[1]).T

    def loss(c):
        c = c / jnp.linalg.norm(c, axis=0, keepdims=True)
        n1 = z1 / jnp.linalg.norm(z1, axis=-1, keepdims=True)
        n2 = z2 / jnp.linalg.norm(z2, axis=-1, keepdims=True)
        s1, s2 = n1 @ c, n2 @ c
        q1, q2 = jax.lax.stop_gradient(sinkhorn(s1)), jax.lax.stop_gradient(sinkhorn(s2))
        l = -jnp.mean(jnp.sum(q1 * jax.nn.log_softmax(s2 / 0.1, -1), -1) +
                      jnp.sum(q2 * jax.nn.log_softmax(s1 / 0.1, -1), -1))
        return l
    return jax.value_and_grad(loss)(protos)


# ==== DINO loss with centering ===================================================================
def _dino(ws, wt, center, xs, xt):
    t = jax.nn.gelu(xt @ wt)
    center_new = 0.9 * center + 0.1 * jnp.mean(t, 0)

    def loss(ws):
        s = jax.nn.gelu(xs @ ws)
        pt = jax.nn.softmax((t - center) / 0.04, -1)
        return -jnp.mean(jnp.sum(pt * jax.nn.log_softmax(s / 0.1, -1), -1))
    l, g = jax.value_and_grad(loss)(ws)
    ws = ws - 0.01 * g
    wt = 0.99 * wt + 0.01 * ws
    return l, ws, wt, center_new


# ==== RNN-T loss =================================================================================
def _rnnt(wout, enc, pred, labels):
    def loss(wout):
        joint = jnp.tanh(enc[:, :, None, :] + pred[:, None, :, :])   # [B, T, U+1, D]
        lp = jax.nn.log_softmax(joint @ wout, -1)                # [B, T, U+1, V]
        blank = lp[..., 0]                                       # [B, T, U+1]
        yl = jnp.take_along_axis(lp[:, :, :-1, :], labels[:, None, :, None], -1)[..., 0]  # [B, T, U]
        b, t, u1 = blank.shape

        def row(alpha_prev, tt):
            # alpha[t, u] = logaddexp(alpha[t-1, u] + blank[t-1, u], alpha[t, u-1] + y[t, u-1])
            from_top = alpha_prev + blank[:, tt - 1]

            def col(a_left, u):
                a = jnp.where(u == 0, from_top[:, 0], jnp.logaddexp(from_top[:, u], a_left + yl[:, tt, u - 1]))
                return a, a
            _, a = jax.lax.scan(col, jnp.full((b,), -jnp.inf), jnp.arange(u1))
            return a.T, None
        first = jnp.concatenate([jnp.zeros((b, 1)), jnp.cumsum(yl[:, 0], -1)], -1)
        alpha, _ = jax.lax.scan(row, first, jnp.arange(1, t))
        return -jnp.mean(alpha[:, -1] + blank[:, -1, -1])
    return jax.value_and_grad(loss)(wout)


# ==== round 2: uneven dims over merged axes, ragged_dot experts, microbatch reshape, int8 cache ===
def _uneven_attn_44(mesh):
    # 100 tokens over ('x','y') = 16 (7 per shard, the last two shards short / empty), causal MHA + grad.
    def loss(ws, xfull):
        wq, wk, wv, wo = ws
        x = _wsc(mesh, xfull[:, :100], P(None, ("x", "y"), None))
        h = _ln(x)
        mask = jnp.tril(jnp.ones((100, 100), bool))
        a = _wsc(mesh, _mha(h, h, wq, wk, wv, wo, 4, mask), P(None, ("x", "y"), None))
        return jnp.mean((x + a) ** 2), a

    def f(wq, wk, wv, wo, xfull):
        (l, a), g = jax.value_and_grad(loss, has_aux=True)((wq, wk, wv, wo), xfull)
        return l, a, g
    return f


def _uneven_embed_44(mesh):
    # vocab 1000 (made inside) with rows over ('x','y') = 16: lookup, loss, scatter-add gradient, SGD.
    def f(tfull, ids, w, y):
        t = _wsc(mesh, tfull[:1000], P(("x", "y"), None))
        ids = ids % 1000

        def loss(t):
            e = t[ids]                                          # [B, S, D]
            return jnp.mean((jnp.tanh(e).mean(1) @ w - y) ** 2)
        l, g = jax.value_and_grad(loss)(t)
        return l, _wsc(mesh, t - 10.0 * g, P(("x", "y"), None))
    return f


def _whisper_uneven(mesh):
    # 100 frames (made inside) over 8: conv1d k3 SAME, stride-2 conv1d -> 50 frames, avg pool 2, grad.
    def conv1d(x, w, stride):
        return jax.lax.conv_general_dilated(x, w, (stride,), [(1, 1)], dimension_numbers=("NWC", "WIO", "NWC"))

    def loss(ws, mel):
        c1, c2 = ws
        h = jax.nn.gelu(conv1d(mel, c1, 1))
        h = _wsc(mesh, jax.nn.gelu(conv1d(h, c2, 2)), P(None, "x", None))
        p = jax.lax.reduce_window(h, 0.0, jax.lax.add, (1, 2, 1), (1, 2, 1), "VALID") / 2.0
        return jnp.mean(p ** 2), p

    def f(c1, c2, melfull):
        mel = _wsc(mesh, melfull[:, :100], P(None, "x", None))
        (l, p), g = jax.value_and_grad(loss, has_aux=True)((c1, c2), mel)
        return l, p, g
    return f


def _ragged_moe(wr, w1, w2, x):
    # Megablox-style top-1 MoE: argsort tokens by expert, group sizes by bincount, ragged_dot with the
    # expert weights sharded on the expert dim (no shard_map), unsort, gate; loss + grads.
    e = w1.shape[0]

    def loss(ws):
        wr, w1, w2 = ws
        logits = x @ wr
        eid = jnp.argmax(logits, -1)
        gate = jnp.max(jax.nn.softmax(logits, -1), -1)
        order = jnp.argsort(eid)
        xs = x[order]
        gs = jnp.bincount(eid, length=e).astype(jnp.int32)
        h = jax.nn.gelu(jax.lax.ragged_dot(xs, w1, gs))
        o = jax.lax.ragged_dot(h, w2, gs)
        out = jnp.zeros_like(o).at[order].set(o) * gate[:, None]
        return jnp.mean((x + out) ** 2)
    return jax.value_and_grad(loss)((wr, w1, w2))


def _micro_reshape(w1, w2, x, y):
    # The batch (sharded over data) reshaped into [micro, mb, ...] and scanned over micro: the sharding
    # lands on the scanned dim. Gradient accumulation, then SGD.
    xs = x.reshape(4, -1, x.shape[-1])
    ys = y.reshape(4, -1, y.shape[-1])

    def step(acc, xy):
        g = jax.grad(lambda ws: jnp.mean((jnp.tanh(xy[0] @ ws[0]) @ ws[1] - xy[1]) ** 2))((w1, w2))
        return jax.tree.map(jnp.add, acc, g), None
    g, _ = jax.lax.scan(step, (jnp.zeros_like(w1), jnp.zeros_like(w2)), (xs, ys))
    return w1 - 0.1 * g[0] / 4, w2 - 0.1 * g[1] / 4


def _int8_kv_decode(q, knew, vnew, kq, ks, vq, vs, pos):
    # int8 KV cache with per-(token, head) scales, heads over model: quantise the new token, DUS at a
    # traced position, dequantise to bf16, attention.
    def quant(t):
        sc = jnp.max(jnp.abs(t), -1) / 127.0 + 1e-8
        return jnp.round(t / sc[..., None]).astype(jnp.int8), sc
    knq, kns = quant(knew)
    vnq, vns = quant(vnew)
    kq = jax.lax.dynamic_update_slice(kq, knq[:, None], (0, pos, 0, 0))
    vq = jax.lax.dynamic_update_slice(vq, vnq[:, None], (0, pos, 0, 0))
    ks = jax.lax.dynamic_update_slice(ks, kns[:, None], (0, pos, 0))
    vs = jax.lax.dynamic_update_slice(vs, vns[:, None], (0, pos, 0))
    k = kq.astype(jnp.bfloat16) * ks[..., None].astype(jnp.bfloat16)
    v = vq.astype(jnp.bfloat16) * vs[..., None].astype(jnp.bfloat16)
    s = jnp.einsum("bhd,blhd->bhl", q.astype(jnp.bfloat16), k, preferred_element_type=jnp.float32) / np.float32(np.sqrt(8))
    s = jnp.where(jnp.arange(k.shape[1])[None, None] <= pos, s, -1e9)
    o = jnp.einsum("bhl,blhd->bhd", jax.nn.softmax(s, -1).astype(jnp.bfloat16), v, preferred_element_type=jnp.float32)
    return o, kq, ks, vq, vs


def _int8_args():
    rng = np.random.default_rng(8200)
    kq = rng.integers(-127, 128, (4, 16, 4, 8)).astype(np.int8)
    vq = rng.integers(-127, 128, (4, 16, 4, 8)).astype(np.int8)
    return [_rand((4, 4, 8), 8201), _rand((4, 4, 8), 8202), _rand((4, 4, 8), 8203), kq,
            np.abs(_rand((4, 16, 4), 8204, scale=0.01)), vq, np.abs(_rand((4, 16, 4), 8205, scale=0.01)), np.int32(9)]


def _mod(mesh):
    # Mixture-of-depths: a router picks the top 8 of 32 tokens per sequence (seq over model), the
    # block runs on them (gathered), results scattered back along the sequence; loss + grads.
    def loss(ws, x):
        wr, w1, w2 = ws
        r = (x @ wr)[..., 0]                                    # [B, S]
        top, idx = jax.lax.top_k(r, 8)
        idx = jnp.sort(idx, -1)
        sel = jnp.take_along_axis(x, idx[..., None], 1)         # [B, 8, D]
        w = jnp.take_along_axis(jax.nn.sigmoid(r), idx, 1)
        h = jax.nn.gelu(_ln(sel) @ w1) @ w2 * w[..., None]
        b = jnp.arange(x.shape[0])[:, None]
        y = x.at[b, idx].add(h)
        y = _wsc(mesh, y, P("data", "model", None))
        return jnp.mean(_ln(y) * jnp.tanh(y))

    def f(wr, w1, w2, x):
        return jax.value_and_grad(loss)((wr, w1, w2), x)
    return f


def _tp2d(mesh):
    # 2-D weight-stationary TP (PaLM inference layout) on 4 x 4: weights P('x','y') and P('y','x'),
    # activations constrained P(None, 'y') between them, a 3-layer MLP and its gradient.
    def loss(ws, x):
        h = x
        for i, w in enumerate(ws):
            h = jnp.tanh(h @ w)
            h = _wsc(mesh, h, P(None, "y") if i % 2 == 0 else P(None, "x"))
        return jnp.mean(h ** 2)

    def f(w1, w2, w3, x):
        return jax.value_and_grad(loss)((w1, w2, w3), x)
    return f


def _topk_vocab1000(mesh):
    # Sampling head with a 1000-word vocab over (data, model) = 16 (made inside): temperature, top-k 40
    # via argsort, top-p 0.9 via cumsum of the sorted probs, gumbel-max with a key.
    def f(h, wfull, key):
        w = _wsc(mesh, wfull[:, :1000], P(None, ("data", "model")))
        logits = (h @ w) / 0.8
        order = jnp.argsort(-logits, -1)
        srt = jnp.take_along_axis(logits, order, -1)
        p = jax.nn.softmax(srt, -1)
        keep = (jnp.cumsum(p, -1) - p < 0.9) & (jnp.arange(1000) < 40)
        srt = jnp.where(keep, srt, -jnp.inf)
        g = jax.random.gumbel(key, srt.shape)
        choice = jnp.argmax(srt + g, -1)
        tok = jnp.take_along_axis(order, choice[:, None], -1)[:, 0]
        return tok, jnp.sum(keep, -1), jnp.max(srt, -1)
    return f


# ==== round 3: 4-axis mesh, non-adjacent merged axes, batch 1, output aliasing, cond in scan =======
def _mesh4d(mesh):
    # (pp, dp, fsdp, tp) = 2x2x2x2: layers stacked on a layer axis over pp (no shard_map), batch over
    # (dp, fsdp), weights over fsdp / tp; scan over the 2 layers, loss + SGD.
    def layer(h, w):
        wqkv, wo, w1, w2 = w
        b, s, d = h.shape
        x = _ln(h)
        q, k, v = (t.reshape(b, s, 4, d // 4) for t in jnp.split(x @ wqkv, 3, -1))
        sc = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(d // 4))
        sc = jnp.where(jnp.tril(jnp.ones((s, s), bool)), sc, -1e9)
        h = h + jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, -1), v).reshape(b, s, d) @ wo
        h = h + jax.nn.gelu(_ln(h) @ w1) @ w2
        return _wsc(mesh, h, P(("dp", "fsdp"), None, None)), None

    def loss(ps, x, y):
        h, _ = jax.lax.scan(layer, x, ps)
        return jnp.mean((h - y) ** 2)

    def f(*a):
        ps, x, y = a[:4], a[4], a[5]
        l, g = jax.value_and_grad(loss)(ps, x, y)
        return l, tuple(p - 0.1 * gi for p, gi in zip(ps, g))
    return f


def _mesh4d_args():
    d = 32
    return [_rand((2, d, 3 * d), 8300, scale=d ** -0.5), _rand((2, d, d), 8301, scale=0.1),
            _rand((2, d, 64), 8302, scale=d ** -0.5), _rand((2, 64, d), 8303, scale=0.1),
            _rand((8, 8, d), 8304), _rand((8, 8, d), 8305)]


def _nonadjacent(mesh):
    # merged axes that are not adjacent in the mesh: P(('data','tensor'), 'fsdp'), a reshard to
    # P(('tensor','data'), 'fsdp'), cumsum along the merged dim, P(None, ('fsdp','data')) out.
    def f(x, w):
        y = _wsc(mesh, x @ w, P(("tensor", "data"), "fsdp"))
        c = jnp.cumsum(y, 0)
        t = _wsc(mesh, jnp.tanh(c).T, P(None, ("fsdp", "data")))
        return c, t, y.sum(0), jnp.max(y, 1)
    return f


def _batch1_decode(mesh):
    # batch-1 serving with the usual specs (batch over data=2): the batch dim of 1 is split over 2
    # (one shard empty); heads over model; cache DUS at a traced pos, attention, next-token logits.
    def f(emb, wq, wk, wv, wo, kc, vc, tok, pos):
        x = _wsc(mesh, emb[tok], P("data", None))               # [1, D]
        q = (x @ wq).reshape(1, 4, 8)
        k = (x @ wk).reshape(1, 1, 4, 8)
        v = (x @ wv).reshape(1, 1, 4, 8)
        kc = _wsc(mesh, jax.lax.dynamic_update_slice(kc, k, (0, pos, 0, 0)), P("data", None, "model", None))
        vc = _wsc(mesh, jax.lax.dynamic_update_slice(vc, v, (0, pos, 0, 0)), P("data", None, "model", None))
        s = jnp.einsum("bhd,blhd->bhl", q, kc) / np.float32(np.sqrt(8))
        s = jnp.where(jnp.arange(kc.shape[1])[None, None] <= pos, s, -1e9)
        o = jnp.einsum("bhl,blhd->bhd", jax.nn.softmax(s, -1), vc).reshape(1, 32)
        logits = _wsc(mesh, (x + o @ wo) @ emb.T, P("data", "model"))
        return logits, jnp.argmax(logits, -1), kc, vc
    return f


def _outputs_alias(x, w):
    # an input returned as it is (different out sharding), one value returned twice with two
    # out shardings, a constant, an int scalar and a bool.
    y = jnp.tanh(x @ w)
    return x, y, y, jnp.zeros((8, 16), jnp.float32), jnp.sum(y > 0).astype(jnp.int32), jnp.all(y < 1.0)


def _stoch_depth(mesh):
    # stochastic depth: scan over 4 stacked residual layers, each skipped by lax.cond on a keep
    # flag drawn from a key (bernoulli per layer), loss + grads through the conds.
    def layer(h, wk):
        w1, w2, keep = wk
        def run(h):
            return h + jax.nn.gelu(_ln(h) @ w1) @ w2 / 0.8
        return jax.lax.cond(keep, run, lambda h: h, h), jnp.mean(h)

    def loss(ws, x, keep):
        h, means = jax.lax.scan(layer, x, (ws[0], ws[1], keep))
        return jnp.mean(h ** 2) + 0.0 * means.sum(), means

    def f(w1, w2, x, key):
        keep = jax.random.bernoulli(key, 0.6, (4,))
        (l, m), g = jax.value_and_grad(loss, has_aux=True)((w1, w2), x, keep)
        return l, m, g, keep
    return f


def _cp_cross_attn(mesh):
    # Perceiver-style: 8 replicated latents cross-attend to 64 inputs whose sequence is over model
    # (softmax over the sharded key dim), then latent self-attention; loss + grads.
    def loss(ws, lat, x):
        wq, wk, wv, wo, wq2, wk2, wv2, wo2 = ws
        b = x.shape[0]
        l = jnp.broadcast_to(lat, (b,) + lat.shape)
        l = l + _mha(_ln(l), _ln(x), wq, wk, wv, wo, 4)
        l = l + _mha(_ln(l), _ln(l), wq2, wk2, wv2, wo2, 4)
        return jnp.mean(l ** 2)

    def f(*a):
        return jax.value_and_grad(loss)(a[:8], a[8], a[9])
    return f


def _conformer_conv(w_in, w_dw, gamma, beta, w_out, x):
    # Conformer conv module: pointwise conv + GLU, depthwise conv1d k=7 along time (time over model),
    # batch norm over (batch, time), swish, pointwise; loss + grads.
    def loss(ws):
        w_in, w_dw, gamma, beta, w_out = ws
        h = jax.nn.glu(x @ w_in, -1)                              # [B, T, C]
        c = h.shape[-1]
        h = jax.lax.conv_general_dilated(h, w_dw, (1,), [(3, 3)], dimension_numbers=("NWC", "WIO", "NWC"),
                                         feature_group_count=c)
        m = h.mean((0, 1))
        v = ((h - m) ** 2).mean((0, 1))
        h = (h - m) * jax.lax.rsqrt(v + 1e-5) * gamma + beta
        h = jax.nn.swish(h) @ w_out
        return jnp.mean((x + h) ** 2)
    return jax.value_and_grad(loss)((w_in, w_dw, gamma, beta, w_out))


# ==== round 4 ====================================================================================
def _dpa_lengths(q, k, v, ql, kl, wo):
    # jax.nn.dot_product_attention with per-sequence query / kv lengths, GQA (8 q heads, 4 kv heads;
    # 2 kv heads make JAX's own GSPMD lowering fail), causal; loss + grads w.r.t. q, k, v, wo.
    def loss(q, k, v, wo):
        o = jax.nn.dot_product_attention(q, k, v, is_causal=True, query_seq_lengths=ql, key_value_seq_lengths=kl)
        b, s, h, d = o.shape
        return jnp.mean(jnp.tanh(o.reshape(b, s, h * d) @ wo) ** 2)
    return jax.value_and_grad(loss, argnums=(0, 1, 2, 3))(q, k, v, wo)


def _embed_pad_ids(table, ids, w, y):
    # padded ids (-1): take(mode='fill') gives zeros, the gradient scatter drops them (mode='drop'),
    # table rows over model; masked mean pooling.
    def loss(t):
        e = jnp.take(t, ids, axis=0, mode="fill", fill_value=0.0)
        m = (ids >= 0).astype(jnp.float32)[..., None]
        pooled = jnp.sum(e * m, 1) / jnp.maximum(jnp.sum(m, 1), 1.0)
        return jnp.mean((pooled @ w - y) ** 2)
    l, g = jax.value_and_grad(loss)(table)
    e = jnp.take(table, ids, axis=0, mode="fill", fill_value=0.0)
    manual = jnp.zeros_like(table).at[ids].add(e * 0.5, mode="drop")
    return l, table - 5.0 * g, manual


def _embed_pad_args():
    ids = _ids((8, 6), 64, 8400)
    ids[:, 4:] = -1
    ids[::3, 2:] = -1
    return [_rand((64, 16), 8401), ids, _rand((16, 4), 8402, scale=0.25), _rand((8, 4), 8403)]


def _ring_cache(mesh):
    # sliding-window decode with a ring-buffer KV cache of 12 slots (slots over model): 5 steps in
    # fori_loop writing at (p0 + i) % 12 (wrapping), attention over the filled slots.
    def f(kc, vc, xs, wq, wk, wv, p0):
        def body(i, c):
            kc, vc, acc = c
            pos = p0 + i
            slot = pos % 12
            x = xs[:, i]
            q, k, v = x @ wq, x @ wk, x @ wv
            kc = jax.lax.dynamic_update_slice(kc, k[:, None], (0, slot, 0))
            vc = jax.lax.dynamic_update_slice(vc, v[:, None], (0, slot, 0))
            kc = _wsc(mesh, kc, P("data", "model", None))
            vc = _wsc(mesh, vc, P("data", "model", None))
            s = jnp.einsum("bd,bld->bl", q, kc) / np.float32(4.0)
            valid = jnp.arange(12) <= jnp.minimum(pos, 11)
            s = jnp.where(valid[None], s, -1e9)
            o = jnp.einsum("bl,bld->bd", jax.nn.softmax(s, -1), vc)
            return kc, vc, acc.at[:, i].set(o)
        return jax.lax.fori_loop(0, 5, body, (kc, vc, jnp.zeros(xs.shape[:2] + (16,), jnp.float32)))
    return f


def _beam_reorder(cache, parent, k_new, pos):
    # beam search: reorder the KV cache [batch * beams, L, H, dh] by the chosen parents (gather on the
    # dim over data), then write the new token at a traced position.
    cache = jnp.take(cache, parent, axis=0)
    cache = jax.lax.dynamic_update_slice(cache, k_new[:, None], (0, pos, 0, 0))
    return cache, jnp.sum(cache * cache, (1, 3))


def _beam_args():
    parent = np.array([2, 2, 0, 3, 5, 4, 4, 7, 8, 11, 11, 9, 15, 12, 13, 13], np.int32)  # 4 batches x 4 beams
    return [_rand((16, 12, 4, 8), 8410), parent, _rand((16, 4, 8), 8411), np.int32(6)]


def _albert(mesh):
    # ALBERT: one layer's weights applied 3 times in fori_loop (shared), loss + grads, 2 x 4.
    def loss(ws, x):
        wq, wk, wv, wo, w1, w2 = ws

        def body(i, h):
            h = _ln(h + _mha(h, h, wq, wk, wv, wo, 4))
            return _ln(h + jax.nn.gelu(h @ w1) @ w2)
        h = jax.lax.fori_loop(0, 3, body, x)
        return jnp.mean(h[:, 0] ** 2 * jnp.arange(32, dtype=jnp.float32) / 32.0)

    def f(*a):
        return jax.value_and_grad(loss)(a[:6], a[6])
    return f


def _cp_naive(mesh):
    # context parallel left to the partitioner: q, k, v with the sequence over model, causal
    # attention written plainly (scores have both sequence dims), loss + grads.
    def loss(ws, x):
        wq, wk, wv, wo = ws
        x = _wsc(mesh, x, P("data", "model", None))
        q = _wsc(mesh, x @ wq, P("data", "model", None)).reshape(x.shape[0], x.shape[1], 4, 8)
        k = _wsc(mesh, x @ wk, P("data", "model", None)).reshape(x.shape[0], x.shape[1], 4, 8)
        v = _wsc(mesh, x @ wv, P("data", "model", None)).reshape(x.shape[0], x.shape[1], 4, 8)
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(8))
        s = jnp.where(jnp.tril(jnp.ones((x.shape[1],) * 2, bool)), s, -1e9)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v).reshape(x.shape)
        o = _wsc(mesh, o @ wo, P("data", "model", None))
        return jnp.mean((x + o) ** 2)

    def f(*a):
        return jax.value_and_grad(loss)(a[:4], a[4])
    return f


def probe6b_programs():
    ps = []

    def add(name, *a, **kw):
        ps.append(Program("p6b_" + name, *a, **kw))

    t5_specs, t5_args = _t5_specs_args()
    add("t5_encdec_step", "T5 encoder-decoder (cross-attention 8 <- 16 tokens, tied vocab-sharded embedding), loss + SGD, 2 x 4",
        _plain(_t5_step), M24, DM, t5_specs, None, lambda: _t5_specs_args()[1])
    add("bert_mlm_gather", "BERT MLM: encoder layer, gather of masked positions, tied-vocab logits, weighted xent + grads, 4 x 2",
        _plain(_bert_step), M42, DM, _BERT_SPECS, None, _bert_args)
    add("mixtral_top2_222", "Mixtral top-2 MoE (dense einsum over experts), experts over expert, ffn over model, grad step, 2x2x2",
        _plain(_mixtral_step), M222, ("data", "expert", "model"), _MIXTRAL_SPECS, None, _mixtral_args)
    add("vit_grad_44", "ViT (stride-4 patch conv, cls, MHA, MLP) loss + SGD, batch over data=4, heads over model=4",
        _plain(_vit_step(4, jnp.float32)), (4, 4), DM, _VIT_SPECS, None, lambda: _vit_args(8))
    add("vit_bf16_28", "ViT in bf16 from f32 masters, 8 heads over model=8, batch over data=2 (16 devices)",
        _plain(_vit_step(8, jnp.bfloat16)), (2, 8), DM, _VIT_SPECS, None, lambda: _vit_args(4), "bf16")
    add("whisper_frontend", "Whisper frontend: conv1d k3 + stride-2 conv1d with time over model, sinusoid pos, block, grad, 2 x 4",
        _whisper, M24, DM, _WHISPER_SPECS, None, _whisper_args)
    add("mqa_scan_decode", "multi-query attention decode: 4 steps in scan, KV cache DUS at traced pos, argmax, 2 x 4",
        _plain(_mqa_decode), M24, DM,
        [P("model", None), P(None, "model"), P(), P(), P("model", None), P("data", "model", None),
         P("data", "model", None), P("data"), P()], None, _mqa_args)
    add("dpo_loss_bf16", "DPO loss: policy vs reference log-probs of chosen / rejected, bf16 matmuls, grads, 4 x 2",
        _plain(_dpo), M42, DM, [P(None, "model"), P(None, "model"), P(None, "model"), P(None, "model"),
                                P("data"), P("data"), P("data"), P("data"), P("data"), P("data")], None, _dpo_args, "bf16")
    add("simclr_ntxent", "SimCLR NT-Xent: 2B x 2B similarity of the batch over data, projection over model, grads, 2 x 4",
        _plain(_simclr), M24, DM, [P(None, "model"), P("model", None), P("data"), P("data")], None,
        lambda: [_rand((32, 64), 6700, scale=0.18), _rand((64, 16), 6701, scale=0.125), _rand((16, 32), 6702),
                 _rand((16, 32), 6703)])
    add("gan_step", "GAN step: discriminator then generator grads and updates, batch over data, hidden over model, 4 x 2",
        _plain(_gan), M42, DM, [P(None, "model"), P("model", None), P(None, "model"), P("model", None), P("data"),
                                P("data")], None,
        lambda: [_rand((8, 32), 6800, scale=0.35), _rand((32, 16), 6801, scale=0.18), _rand((16, 32), 6802, scale=0.25),
                 _rand((32, 1), 6803, scale=0.18), _rand((16, 8), 6804), np.tanh(_rand((16, 16), 6805))])
    add("vae_reparam_key", "VAE: reparameterisation with jax.random.normal(key) in jit, KL, SGD, batch over 8",
        _plain(_vae), (8,), ("data",), [P(), P(), P(), P(), P(), P("data"), P()], None,
        lambda: [_rand((32, 64), 6850, scale=0.18), _rand((64, 8), 6851, scale=0.125), _rand((64, 8), 6852, scale=0.05),
                 _rand((8, 64), 6853, scale=0.35), _rand((64, 32), 6854, scale=0.125), _rand((16, 32), 6855),
                 np.array([0, 42], np.uint32)])
    add("gat_segment_softmax", "graph attention: per-edge scores, segment_max / segment_sum softmax, 4 heads, edges over (x, y), grads",
        _plain(_gat), M24, ("x", "y"), [P(), P(), P(), P(), P(("x", "y")), P(("x", "y")), P()], None, _gat_args)
    add("sparse_unique_adagrad", "sparse embeddings: unique(size=64) dedup, gather rows of a vocab-sharded table, row Adagrad scatter, 2 x 4",
        _plain(_sparse_unique), M24, DM, [P("model", None), P("model"), P("data"), P(), P("data")], None,
        lambda: [_rand((256, 16), 6950), np.abs(_rand((256,), 6951)), _ids((8, 6), 256, 6952),
                 _rand((16, 4), 6953, scale=0.25), _rand((8, 4), 6954)])
    add("sp_tp_layer_reshards", "2 layers: seq over tensor then seq over fsdp, all-gather before attention, reduce-scatter after, grad, 2x2x2",
        _sp_tp_layers, M222, DFT, _SP_SPECS, None, _sp_args)
    add("tuple_axes_44", "MLP step with P(('x','y'), None) batch, P(None, ('y','x')) w1, P(('y','x'), None) w2 on 4 x 4",
        _plain(_tuple_axes_mlp), (4, 4), ("x", "y"),
        [P(None, ("y", "x")), P(("y", "x")), P(("y", "x"), None), P(("x", "y"), None), P(("x", "y"), None)],
        (P(), P(None, ("y", "x")), P(("y", "x")), P(("y", "x"), None), P(None, ("x", "y"))),
        lambda: [_rand((32, 64), 7100, scale=0.18), _rand((64,), 7101, scale=0.1), _rand((64, 16), 7102, scale=0.125),
                 _rand((32, 32), 7103), _rand((32, 16), 7104)])
    add("uneven_vocab1000_seq100_16", "LM head: sequence 100 and vocab 1000 over 16 (made inside), xent, argmax, SGD",
        _uneven16, (16,), ("x",), [P(), P(), P()], None,
        lambda: [_rand((2, 112, 32), 7200), _rand((32, 1024), 7201, scale=0.18), _ids((2, 112), 1024, 7202)])
    add("nested_jit_static", "nested jit: static act / heads args, inner jits with own in / out shardings, grad through one, 4 x 2",
        _nested_static, M42, DM, [P("data"), P(None, "model"), P(None, "model"), P("model", None)], None,
        lambda: [_rand((4, 8, 32), 7250), _rand((32, 96), 7251, scale=0.18), _rand((32, 64), 7252, scale=0.18),
                 _rand((64, 32), 7253, scale=0.125)])
    add("scan_layer_sharded_adam", "scan over 4 remat layers stacked on a layer axis over fsdp, Adam with donated state, 2x2x2",
        _scan_fsdp_adam, M222, DFT, _SCAN_FSDP_SPECS, None, _scan_fsdp_args, donate_argnums=(0, 1, 2, 3, 4, 5, 6, 7, 8))
    add("prefill_fori_decode", "prefill 8 tokens then fori_loop greedy decode 3 steps, cache over batch and heads, 2 x 4",
        _prefill_decode, M24, DM, [P(None, "model"), P(None, "model"), P("model", None), P(None, "model"),
                                   P("model", None), P("data")], None, _prefill_args)
    add("topp_while_sample", "while_loop decode of 6 steps: top-p (sort + cumsum) sampling with fold_in keys, vocab over model, 2 x 4",
        _plain(_topp_loop), M24, DM, [P(), P(), P(None, "model"), P("data"), P(), P()], None,
        lambda: [_rand((64, 16), 7500), _rand((16, 16), 7501, scale=0.3), _rand((16, 64), 7502),
                 _rand((8, 16), 7503), np.array([0, 7], np.uint32), np.int32(6)])
    add("paged_attention", "paged KV cache: scatter the new token into its page, gather pages by the page table, attention, heads over model",
        _plain(_paged_attn), M24, DM, [P("data", "model"), P("data", "model"), P("data", "model"),
                                       P(None, None, "model"), P(None, None, "model"), P("data"), P("data")], None,
        _paged_args)
    add("knn_topk_db", "kNN retrieval: cosine scores against a 256-row database over model, top_k 5, value gather, 2 x 4",
        _plain(_knn), M24, DM, [P("data"), P("model", None), P("model", None)], None,
        lambda: [_rand((8, 16), 7700), _rand((256, 16), 7701), _rand((256, 8), 7702)])
    add("swav_sinkhorn", "SwAV: Sinkhorn-Knopp (3 iterations in fori_loop) over the batch over 8, swapped prediction loss grad",
        _plain(_swav), (8,), ("data",), [P(), P("data"), P("data")], None,
        lambda: [_rand((16, 24), 7800), _rand((32, 16), 7801), _rand((32, 16), 7802)])
    add("dino_center_ema", "DINO: teacher centering (batch mean EMA), sharpened softmax, student grad, teacher EMA, 4 x 2",
        _plain(_dino), M42, DM, [P(None, "model"), P(None, "model"), P("model"), P("data"), P("data")], None,
        lambda: [_rand((16, 32), 7900, scale=0.25), _rand((16, 32), 7901, scale=0.25), _rand((32,), 7902, scale=0.1),
                 _rand((16, 16), 7903), _rand((16, 16), 7904)])
    add("rnnt_loss_grad", "RNN-T loss: joint [B,T,U+1,V], alpha lattice by nested scans, grad of the output layer, 2 x 4",
        _plain(_rnnt), M24, DM, [P(None, "model"), P("data"), P("data"), P("data")], None,
        lambda: [_rand((16, 12), 8000, scale=0.5), _rand((8, 6, 16), 8001), _rand((8, 5, 16), 8002),
                 _ids((8, 4), 11, 8003) + 1])
    add("uneven_attn_100_44", "causal MHA over 100 tokens with the sequence over ('x','y') = 16 (7 per shard, short tail), grads",
        _uneven_attn_44, (4, 4), ("x", "y"), [P(None, "x"), P(None, "x"), P(None, "x"), P("x", None), P()], None,
        lambda: [_rand((32, 32), 8100 + i, scale=32 ** -0.5) for i in range(4)] + [_rand((2, 112, 32), 8104)])
    add("uneven_embed_1000_44", "embedding with vocab 1000 over ('x','y') = 16 (made inside): lookup, scatter-add grad, SGD",
        _uneven_embed_44, (4, 4), ("x", "y"), [P(), P("x"), P(), P("x")], None,
        lambda: [_rand((1024, 16), 8110), _ids((8, 6), 1024, 8111), _rand((16, 4), 8112, scale=0.25), _rand((8, 4), 8113)])
    add("whisper_uneven_time", "conv1d k3 + stride-2 conv1d over 100 frames over 8 (made inside), avg pool 2, grads",
        _whisper_uneven, (8,), ("x",), [P(), P(), P()], None,
        lambda: [_rand((3, 8, 16), 8120, scale=0.2), _rand((3, 16, 16), 8121, scale=0.15), _rand((2, 104, 8), 8122)])
    add("ragged_dot_experts", "megablox-style top-1 MoE: argsort by expert, bincount, ragged_dot with experts over expert, grads",
        _plain(_ragged_moe), M24, ("data", "expert"), [P(), P("expert"), P("expert"), P("data")], None,
        lambda: [_rand((16, 4), 8130), _rand((4, 16, 32), 8131, scale=0.25), _rand((4, 32, 16), 8132, scale=0.18),
                 _rand((32, 16), 8133)])
    add("microbatch_reshape_scan", "batch over data=8 reshaped to [4 micro, 8, D] and scanned (sharding on the scanned dim), grad accum",
        _plain(_micro_reshape), (8,), ("data",), [P(), P(), P("data"), P("data")], None,
        lambda: [_rand((16, 32), 8140, scale=0.25), _rand((32, 8), 8141, scale=0.18), _rand((32, 16), 8142),
                 _rand((32, 8), 8143)])
    add("int8_kv_decode", "int8 KV cache with per-token scales, heads over model: quantise, DUS at traced pos, bf16 dequant attention",
        _plain(_int8_kv_decode), M24, DM, [P("data", "model"), P("data", "model"), P("data", "model"),
                                            P("data", None, "model"), P("data", None, "model"),
                                            P("data", None, "model"), P("data", None, "model"), P()], None,
        _int8_args, "bf16")
    add("mixture_of_depths", "mixture-of-depths: top_k 8 of 32 tokens (seq over model), gather, MLP, scatter-add back, grads, 2 x 4",
        _mod, M24, DM, [P(), P(None, "model"), P("model", None), P("data", "model", None)], None,
        lambda: [_rand((16, 1), 8150), _rand((16, 32), 8151, scale=0.25), _rand((32, 16), 8152, scale=0.18),
                 _rand((4, 32, 16), 8153)])
    add("tp2d_weight_stationary", "2-D weight-stationary TP: weights P(x,y) / P(y,x), activations P(None,y) / P(None,x), grad, 4 x 4",
        _tp2d, (4, 4), ("x", "y"), [P("x", "y"), P("y", "x"), P("x", "y"), P()], None,
        lambda: [_rand((32, 32), 8160 + i, scale=0.3) for i in range(3)] + [_rand((8, 32), 8163)])
    add("topk_topp_vocab1000_28", "sampling head: vocab 1000 over (data, model) = 16 (made inside), argsort top-k 40, top-p, gumbel",
        _topk_vocab1000, (2, 8), DM, [P("data"), P(), P()], None,
        lambda: [_rand((4, 16), 8170), _rand((16, 1024), 8171), np.array([0, 3], np.uint32)])
    add("mesh4d_pp_dp_fsdp_tp", "(pp, dp, fsdp, tp) = 2x2x2x2: scan over layers stacked over pp, batch over (dp, fsdp), TP, loss + SGD",
        _mesh4d, (2, 2, 2, 2), ("pp", "dp", "fsdp", "tp"),
        [P("pp", "fsdp", "tp"), P("pp", "tp", "fsdp"), P("pp", "fsdp", "tp"), P("pp", "tp", "fsdp"),
         P(("dp", "fsdp")), P(("dp", "fsdp"))], None, _mesh4d_args)
    add("nonadjacent_merged_222", "P(('data','tensor'), 'fsdp') -> P(('tensor','data'), 'fsdp') -> cumsum, P(None, ('fsdp','data')), 2x2x2",
        _nonadjacent, M222, DFT, [P(("data", "tensor"), "fsdp"), P("fsdp", None)], None,
        lambda: [_rand((16, 16), 8310), _rand((16, 16), 8311, scale=0.25)])
    add("batch1_decode", "batch-1 decode with batch over data=2 (empty shard), heads over model=4, cache DUS, logits",
        _batch1_decode, M24, DM, [P(None, "model"), P(None, "model"), P(None, "model"), P(None, "model"),
                                  P("model", None), P(None, None, "model"), P(None, None, "model"), P(), P()], None,
        lambda: [_rand((64, 32), 8320), _rand((32, 32), 8321, scale=0.18), _rand((32, 32), 8322, scale=0.18),
                 _rand((32, 32), 8323, scale=0.18), _rand((32, 32), 8324, scale=0.18), _rand((1, 16, 4, 8), 8325),
                 _rand((1, 16, 4, 8), 8326), np.array([5], np.int32), np.int32(7)])
    add("outputs_alias_dup", "outputs: an input as is (resharded), one value twice with two out_shardings, a constant, int / bool scalars",
        _plain(_outputs_alias), M24, ("x", "y"), [P("x", "y"), P("y", None)],
        (P("y", "x"), P("x", None), P(None, "y"), P("y", None), P(), P()),
        lambda: [_rand((8, 16), 8330), _rand((16, 16), 8331, scale=0.25)])
    add("stochastic_depth_scan", "stochastic depth: scan over 4 layers, each lax.cond-skipped by a bernoulli(key) flag, grads, 2 x 4",
        _stoch_depth, M24, DM, [P(None, None, "model"), P(None, "model", None), P("data"), P()], None,
        lambda: [_rand((4, 16, 32), 8340, scale=0.25), _rand((4, 32, 16), 8341, scale=0.18), _rand((8, 8, 16), 8342),
                 np.array([0, 11], np.uint32)])
    add("perceiver_cp_cross_attn", "Perceiver: 8 latents cross-attend to 64 tokens with the sequence over model, latent self-attn, grads",
        _cp_cross_attn, M24, DM, [P()] * 8 + [P(), P("data", "model", None)], None,
        lambda: [_rand((32, 32), 8360 + i, scale=32 ** -0.5) for i in range(8)] + [_rand((8, 32), 8370),
                                                                                   _rand((4, 64, 32), 8371)])
    add("conformer_conv_module", "Conformer conv module: GLU, depthwise conv1d k=7 with time over model, batch norm, swish, grads",
        _plain(_conformer_conv), M24, DM, [P(), P(), P(), P(), P(), P("data", "model", None)], None,
        lambda: [_rand((16, 32), 8380, scale=0.25), _rand((7, 1, 16), 8381, scale=0.3), 1.0 + _rand((16,), 8382, scale=0.1),
                 _rand((16,), 8383, scale=0.1), _rand((16, 16), 8384, scale=0.25), _rand((4, 32, 16), 8385)])
    add("dpa_seqlens_gqa", "dot_product_attention: causal, query / kv seq lengths, GQA 8 q / 4 kv heads, q heads over model=4, k / v left to propagation, grads",
        _plain(_dpa_lengths), M24, DM, [P("data", None, "model"), P("data"), P("data"),
                                        P("data"), P("data"), P("model", None)], None,
        lambda: [_rand((4, 16, 8, 8), 8420), _rand((4, 16, 4, 8), 8421), _rand((4, 16, 4, 8), 8422),
                 np.array([16, 9, 12, 5], np.int32), np.array([16, 11, 12, 7], np.int32), _rand((64, 16), 8423, scale=0.125)])
    add("embed_pad_ids_fill_drop", "padded ids (-1): take mode=fill, scatter-add mode=drop gradient, table rows over model, 2 x 4",
        _plain(_embed_pad_ids), M24, DM, [P("model", None), P("data"), P(), P("data")], None, _embed_pad_args)
    add("ring_buffer_cache", "sliding-window decode: ring-buffer cache of 12 slots over model, 5 fori steps writing at (p0+i) % 12",
        _ring_cache, M24, DM, [P("data", "model"), P("data", "model"), P("data"), P(), P(), P(), P()], None,
        lambda: [_rand((4, 12, 16), 8430), _rand((4, 12, 16), 8431), _rand((4, 5, 16), 8432),
                 _rand((16, 16), 8433, scale=0.25), _rand((16, 16), 8434, scale=0.25), _rand((16, 16), 8435, scale=0.25),
                 np.int32(9)])
    add("beam_cache_reorder", "beam search cache reorder: take(cache, parents, axis=0) with that dim over data, DUS at traced pos",
        _plain(_beam_reorder), M24, DM, [P("data", None, "model"), P("data"), P("data", "model"), P()], None, _beam_args)
    add("albert_shared_fori", "ALBERT: one shared layer applied 3 times in fori_loop, loss + grads, batch over data, TP over model",
        _albert, M24, DM, [P(None, "model"), P(None, "model"), P(None, "model"), P("model", None), P(None, "model"),
                           P("model", None), P("data")], None,
        lambda: [_rand((32, 32), 8440 + i, scale=32 ** -0.5) for i in range(4)] +
                [_rand((32, 64), 8444, scale=0.18), _rand((64, 32), 8445, scale=0.125), _rand((4, 8, 32), 8446)])
    add("cp_naive_attention", "context parallel left to the partitioner: q / k / v sequence over model, plain causal attention, grads",
        _cp_naive, M24, DM, [P(None, "model"), P(None, "model"), P(None, "model"), P("model", None), P("data", "model")],
        None, lambda: [_rand((32, 32), 8450 + i, scale=32 ** -0.5) for i in range(4)] + [_rand((4, 16, 32), 8454)])
    return ps
