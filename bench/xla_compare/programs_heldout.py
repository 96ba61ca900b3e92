"""Held-out programs for bench/xla_compare (names ho_, `--only ho_` runs them): model-sized JAX programs
written apart from the ones the partitioner is tuned on (Llama blocks, FSDP+TP AdamW, ring attention,
pipelines, MoE, sequence parallelism, uneven shapes, reshard chains, KV caches, shape ops, sorts)."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from programs import Program, _axis_size, _ids, _plain, _rand, _smap, _wsc

M222, A3 = (2, 2, 2), ("data", "fsdp", "tp")
M24, M42, A2 = (2, 4), (4, 2), ("data", "model")


# ---- Llama block: RMSNorm, RoPE, grouped-query attention, SwiGLU ---------------------------------
LB, LS, LD, LH, LKV, LF = 4, 32, 64, 8, 2, 128
HD = LD // LH


def _rms(x, g):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * g


def _rope(x):
    # x [b, s, h, d]: rotate the two halves of d by position-dependent angles.
    s, d = x.shape[1], x.shape[-1]
    freqs = 1.0 / (10000.0 ** (jnp.arange(d // 2, dtype=jnp.float32) / (d // 2)))
    ang = jnp.arange(s, dtype=jnp.float32)[:, None] * freqs[None, :]
    cos, sin = jnp.cos(ang)[None, :, None, :], jnp.sin(ang)[None, :, None, :]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def _causal(s):
    n = s.shape[-1]
    return jnp.where(jnp.tril(jnp.ones((n, n), bool)), s, -1e30)


def _llama(x, g1, wq, wk, wv, wo, g2, wg, wu, wd):
    b, s, _ = x.shape
    h = _rms(x, g1)
    q = _rope((h @ wq).reshape(b, s, LH, HD))
    k = _rope((h @ wk).reshape(b, s, LKV, HD))
    v = (h @ wv).reshape(b, s, LKV, HD)
    k, v = jnp.repeat(k, LH // LKV, axis=2), jnp.repeat(v, LH // LKV, axis=2)
    sc = _causal(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(HD)))
    a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, axis=-1), v).reshape(b, s, LD)
    x = x + a @ wo
    h = _rms(x, g2)
    return x + (jax.nn.silu(h @ wg) * (h @ wu)) @ wd


def _llama_grouped(x, g1, wq, wk, wv, wo, g2, wg, wu, wd):
    # The same block with GQA as a grouped einsum (q reshaped to [b, s, kv, group, d]), no repeat.
    b, s, _ = x.shape
    h = _rms(x, g1)
    q = _rope((h @ wq).reshape(b, s, LH, HD)).reshape(b, s, LKV, LH // LKV, HD)
    k = _rope((h @ wk).reshape(b, s, LKV, HD))
    v = (h @ wv).reshape(b, s, LKV, HD)
    sc = _causal(jnp.einsum("bqkgd,bskd->bkgqs", q, k) / np.float32(np.sqrt(HD)))
    a = jnp.einsum("bkgqs,bskd->bqkgd", jax.nn.softmax(sc, axis=-1), v).reshape(b, s, LD)
    x = x + a @ wo
    h = _rms(x, g2)
    return x + (jax.nn.silu(h @ wg) * (h @ wu)) @ wd


def _llama_args(seed):
    sc = LD ** -0.5
    return [_rand((LB, LS, LD), seed), np.ones((LD,), np.float32),
            _rand((LD, LD), seed + 1, scale=sc), _rand((LD, LKV * HD), seed + 2, scale=sc),
            _rand((LD, LKV * HD), seed + 3, scale=sc), _rand((LD, LD), seed + 4, scale=sc),
            np.ones((LD,), np.float32), _rand((LD, LF), seed + 5, scale=sc),
            _rand((LD, LF), seed + 6, scale=sc), _rand((LF, LD), seed + 7, scale=LF ** -0.5)]


def _llama_grad(block):
    def f(x, *ws):
        return jax.grad(lambda ws: jnp.mean(block(x, *ws) ** 2))(ws)
    return f


# FSDP x TP on 2x2x2: batch over (data, fsdp), weights' model dim over tp and the other over fsdp.
_LLAMA_222 = [P(("data", "fsdp")), P(), P("fsdp", "tp"), P("fsdp", "tp"), P("fsdp", "tp"), P("tp", "fsdp"),
              P(), P("fsdp", "tp"), P("fsdp", "tp"), P("tp", "fsdp")]
# Megatron TP on data x model: kv heads (2) fewer than model shards (4) stay replicated.
_LLAMA_24 = [P("data"), P(), P(None, "model"), P(), P(), P("model", None), P(), P(None, "model"),
             P(None, "model"), P("model", None)]
_LLAMA_42 = [P("data"), P(), P(None, "model"), P(None, "model"), P(None, "model"), P("model", None), P(),
             P(None, "model"), P(None, "model"), P("model", None)]


# ---- scan over stacked Llama layers and its gradient ---------------------------------------------
SL = 3


def _scan_llama_grad(x, g, wqkv, wo, w1, w2):
    def loss(ws):
        def layer(h, w):
            g, wqkv, wo, w1, w2 = w
            b, s, d = h.shape
            n = _rms(h, g)
            q, k, v = jnp.split(n @ wqkv, 3, axis=-1)
            q, k = _rope(q.reshape(b, s, LH, HD)), _rope(k.reshape(b, s, LH, HD))
            sc = _causal(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(HD)))
            a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, -1), v.reshape(b, s, LH, HD)).reshape(b, s, d)
            h = h + a @ wo
            return h + jax.nn.gelu(_rms(h, g) @ w1) @ w2, None

        h, _ = jax.lax.scan(layer, x, ws)
        return jnp.mean(h * h)

    return jax.grad(loss)((g, wqkv, wo, w1, w2))


def _scan_llama_args():
    sc = LD ** -0.5
    return [_rand((LB, LS, LD), 400), np.ones((SL, LD), np.float32), _rand((SL, LD, 3 * LD), 401, scale=sc),
            _rand((SL, LD, LD), 402, scale=sc), _rand((SL, LD, LF), 403, scale=sc),
            _rand((SL, LF, LD), 404, scale=LF ** -0.5)]


# ---- FSDP + TP AdamW step with global-norm clipping ----------------------------------------------
AD, AF, AB, AC = 64, 256, 32, 64


def _adamw_step(w1, b1, w2, g, m1, mb, m2, mg, v1, vb, v2, vg, step, x, labels):
    params, m, v = (w1, b1, w2, g), (m1, mb, m2, mg), (v1, vb, v2, vg)

    def loss(p):
        w1, b1, w2, g = p
        logits = jax.nn.gelu(_rms(x, g) @ w1 + b1) @ w2
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=1))

    lval, grads = jax.value_and_grad(loss)(params)
    gnorm = jnp.sqrt(sum(jnp.sum(gr * gr) for gr in grads))
    grads = [gr * jnp.minimum(1.0, 1.0 / (gnorm + 1e-6)) for gr in grads]
    t = step[0] + 1.0
    lr = 1e-3 * jnp.minimum(1.0, t / 10.0)
    b1c, b2c = 1.0 - 0.9 ** t, 1.0 - 0.999 ** t
    new_m = [0.9 * mi + 0.1 * gr for mi, gr in zip(m, grads)]
    new_v = [0.999 * vi + 0.001 * gr * gr for vi, gr in zip(v, grads)]
    new_p = [p - lr * ((mi / b1c) / (jnp.sqrt(vi / b2c) + 1e-8) + 0.01 * p)
             for p, mi, vi in zip(params, new_m, new_v)]
    return (*new_p, *new_m, *new_v, lval)


def _adamw_args():
    ps = [_rand((AD, AF), 410, scale=AD ** -0.5), np.zeros((AF,), np.float32),
          _rand((AF, AC), 411, scale=AF ** -0.5), np.ones((AD,), np.float32)]
    ms = [_rand(p.shape, 412 + i, scale=1e-3) for i, p in enumerate(ps)]
    vs = [np.abs(_rand(p.shape, 416 + i, scale=1e-4)) for i, p in enumerate(ps)]
    return ps + ms + vs + [np.array([4.0], np.float32), _rand((AB, AD), 420), _ids((AB,), AC, 421)]


_ADAMW_PSPECS = [P("fsdp", "tp"), P("tp"), P("tp", "fsdp"), P()]
_ADAMW_IN = _ADAMW_PSPECS * 3 + [P(), P("fsdp"), P("fsdp")]
_ADAMW_OUT = tuple(_ADAMW_PSPECS * 3) + (P(),)


# ---- ring attention (shard_map + ppermute, causal, online softmax) ---------------------------------
RB, RS, RH, RD = 2, 128, 4, 16


def _ring_attention(mesh):
    def body(q, k, v):
        n = _axis_size("sp")
        me = jax.lax.axis_index("sp")
        sl = q.shape[1]
        qpos = me * sl + jnp.arange(sl)
        m = jnp.full(q.shape[:1] + (RH, sl), -1e30, jnp.float32)
        l = jnp.zeros_like(m)
        acc = jnp.zeros_like(q)
        perm = [(i, (i + 1) % n) for i in range(n)]
        for i in range(n):
            src = (me - i) % n
            kpos = src * sl + jnp.arange(sl)
            s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(RD))
            s = jnp.where(kpos[None, :] <= qpos[:, None], s, -1e30)
            m_new = jnp.maximum(m, s.max(-1))
            p = jnp.exp(s - m_new[..., None])
            corr = jnp.exp(m - m_new)
            l = l * corr + p.sum(-1)
            acc = acc * jnp.transpose(corr, (0, 2, 1))[..., None] + jnp.einsum("bhqk,bkhd->bqhd", p, v)
            m = m_new
            if i + 1 < n:
                k, v = jax.lax.ppermute(k, "sp", perm), jax.lax.ppermute(v, "sp", perm)
        return acc / jnp.transpose(l, (0, 2, 1))[..., None]

    spec = P("data", "sp")
    return _smap(mesh, body, (spec, spec, spec), spec)


def _ring_attention_grad(mesh):
    attn = _ring_attention(mesh)
    return lambda q, k, v: jax.grad(lambda qkv: jnp.sum(attn(*qkv) ** 2))((q, k, v))


def _qkv_args(seed, b=RB, s=RS, h=RH, d=RD):
    return [_rand((b, s, h, d), seed + i, scale=0.5) for i in range(3)]


# ---- Ulysses sequence parallelism: all_to_all sequence <-> heads around local attention -----------
def _ulysses(mesh):
    def body(q, k, v):
        a2a = lambda t: jax.lax.all_to_all(t, "sp", 2, 1, tiled=True)    # seq-sharded -> head-sharded
        back = lambda t: jax.lax.all_to_all(t, "sp", 1, 2, tiled=True)
        q, k, v = a2a(q), a2a(k), a2a(v)
        s = _causal(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(q.shape[-1])))
        return back(jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v))

    spec = P(None, "sp")
    return _smap(mesh, body, (spec, spec, spec), spec, check_vma=False)


# ---- pipelines -------------------------------------------------------------------------------------
PM, PB, PD = 4, 16, 64


def _pipeline(mesh):
    # GPipe forward in shard_map: stage s holds layer s, microbatches flow stage to stage by ppermute.
    def body(w, xs):
        n = _axis_size("stage")
        me = jax.lax.axis_index("stage")
        w = w[0]
        state = jnp.zeros(xs.shape[1:], xs.dtype)
        outs = jnp.zeros_like(xs)
        for t in range(PM + n - 1):
            inp = jnp.where(me == 0, xs[min(t, PM - 1)], state)
            out = jnp.tanh(inp @ w) + inp
            if t >= n - 1:
                outs = outs.at[t - (n - 1)].set(jnp.where(me == n - 1, out, outs[t - (n - 1)]))
            state = jax.lax.ppermute(out, "stage", [(i, (i + 1) % n) for i in range(n)])
        return jax.lax.psum(jnp.where(me == n - 1, outs, 0.0), "stage")

    return _smap(mesh, body, (P("stage"), P(None, "data")), P(None, "data"))


def _pipeline_grad(mesh):
    fwd = _pipeline(mesh)
    return lambda w, xs, ys: jax.grad(lambda w: jnp.mean((fwd(w, xs) - ys) ** 2))(w)


def _rolled_pipeline(w, xs):
    # The pipeline without shard_map: a state per stage, stages vmapped, the state rolled along the
    # stage axis every step (the circular-pipeline pattern of praxis / MaxText).
    n = w.shape[0]
    state = jnp.zeros((n,) + xs.shape[1:], xs.dtype)
    outs = []
    for t in range(xs.shape[0] + n - 1):
        state = state.at[0].set(xs[min(t, xs.shape[0] - 1)])
        state = jax.vmap(lambda h, wi: jnp.tanh(h @ wi) + h)(state, w)
        if t >= n - 1:
            outs.append(state[n - 1])
        state = jnp.roll(state, 1, axis=0)
    return jnp.stack(outs)


def _pipe_args(seed, n):
    return [_rand((n, PD, PD), seed, scale=PD ** -0.5), _rand((PM, PB, PD), seed + 1)]


# ---- MoE with top-k routing and expert capacity --------------------------------------------------
ET, ED, EE, EF, EK, EC = 64, 32, 8, 64, 2, 24


def _moe_capacity(x, wr, w1, w2):
    probs = jax.nn.softmax(x @ wr, axis=-1)
    gates, idx = jax.lax.top_k(probs, EK)                                   # [t, k]
    gates = gates / gates.sum(-1, keepdims=True)
    mask = jax.nn.one_hot(idx, EE)                                          # [t, k, e]
    flat = jnp.transpose(mask, (1, 0, 2)).reshape(EK * ET, EE)              # choice-major order
    pos = (jnp.cumsum(flat, axis=0) - 1.0) * flat                           # slot in the expert
    keep = flat * (pos < EC)
    slots = jax.nn.one_hot(pos.astype(jnp.int32), EC) * keep[..., None]     # [k t, e, c]
    slots = slots.reshape(EK, ET, EE, EC)
    dispatch = slots.sum(0)
    combine = jnp.einsum("ktec,tk->tec", slots, gates)
    h = jnp.einsum("tec,td->ecd", dispatch, x)
    h = jnp.einsum("ecf,efd->ecd", jax.nn.silu(jnp.einsum("ecd,edf->ecf", h, w1)), w2)
    y = jnp.einsum("tec,ecd->td", combine, h)
    aux = EE * jnp.sum(mask.sum(1).mean(0) * probs.mean(0))               # load-balancing loss
    return y, aux


def _moe_grad(x, wr, w1, w2):
    def loss(ws):
        y, aux = _moe_capacity(x, *ws)
        return jnp.mean((y + x) ** 2) + 0.01 * aux
    return jax.grad(loss)((wr, w1, w2))


def _moe_args(seed):
    return [_rand((ET, ED), seed), _rand((ED, EE), seed + 1, scale=0.5), _rand((EE, ED, EF), seed + 2, scale=0.2),
            _rand((EE, EF, ED), seed + 3, scale=0.15)]


# ---- Megatron sequence parallelism (layer norm on sequence shards, TP in between) -----------------
SB, SS, SD, SH = 4, 64, 64, 8


def _seq_parallel_block(mesh, x, g, wqkv, wo, w1, w2):
    seq, full = P("data", "model", None), P("data", None, None)
    b, s, d = x.shape
    h = _wsc(mesh, _rms(x, g), seq)
    h = _wsc(mesh, h, full)                                                 # all-gather the sequence
    q, k, v = (t.reshape(b, s, SH, d // SH) for t in jnp.split(h @ wqkv, 3, axis=-1))
    sc = _causal(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(d // SH)))
    a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, -1), v).reshape(b, s, d)
    x = x + _wsc(mesh, a @ wo, seq)                                         # reduce-scatter back
    h = _wsc(mesh, _wsc(mesh, _rms(x, g), seq), full)
    return x + _wsc(mesh, jax.nn.gelu(h @ w1) @ w2, seq)


def _seq_parallel_grad(mesh):
    def f(x, g, wqkv, wo, w1, w2):
        return jax.grad(lambda ws: jnp.mean(_seq_parallel_block(mesh, x, *ws) ** 2))((g, wqkv, wo, w1, w2))
    return f


def _sp_args():
    sc = SD ** -0.5
    return [_rand((SB, SS, SD), 430), np.ones((SD,), np.float32), _rand((SD, 3 * SD), 431, scale=sc),
            _rand((SD, SD), 432, scale=sc), _rand((SD, 4 * SD), 433, scale=sc),
            _rand((4 * SD, SD), 434, scale=(4 * SD) ** -0.5)]


_SP_SPECS = [P("data", "model"), P(), P(None, "model"), P("model", None), P(None, "model"), P("model", None)]


# ---- uneven rows: 13 tokens on 8 devices, a 100-word vocabulary on 8 ------------------------------
def _uneven_rows(mesh, a, w1, w2):
    x = _wsc(mesh, a[:13], P("x", None))
    h = _wsc(mesh, jax.nn.gelu(_rms(x, 1.0) @ w1), P("x", None))
    y = _wsc(mesh, x + h @ w2, P("x", None))
    return y.sum(0), jnp.mean(y * y, axis=1)


def _uneven_vocab(mesh, h, w, labels):
    logits = _wsc(mesh, h @ w[:, :100], P(None, "x"))
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1)), jnp.argmax(logits, -1)


# ---- reshards, KV caches, shape ops ---------------------------------------------------------------
def _reshard_chain(mesh, x, w):
    a = _wsc(mesh, jnp.tanh(x), P("x", "y"))
    b = _wsc(mesh, a * 2.0 + 1.0, P("y", "x"))
    c = _wsc(mesh, jnp.sin(b) @ w, P(("x", "y", "z"), None))
    d = _wsc(mesh, c * c, P(None, ("z", "y", "x")))
    e = _wsc(mesh, d.reshape(d.shape[0], 4, d.shape[1] // 4), P("z", "x", "y"))
    f = _wsc(mesh, jnp.transpose(e, (2, 0, 1)) + 1.0, P(("y", "z"), None, "x"))
    return f.sum(-1)


def _kv_decode(x, kc, vc, pos, wq, wk, wv, wo):
    # One GQA decode step: project the new token, write k / v at a runtime position, attend to the
    # cache up to that position.
    b = x.shape[0]
    kvh, hd = kc.shape[2], kc.shape[3]
    h = wq.shape[1] // hd
    q = (x @ wq).reshape(b, kvh, h // kvh, hd)
    k, v = (x @ wk).reshape(b, 1, kvh, hd), (x @ wv).reshape(b, 1, kvh, hd)
    p = pos[0]
    kc = jax.lax.dynamic_update_slice(kc, k, (0, p, 0, 0))
    vc = jax.lax.dynamic_update_slice(vc, v, (0, p, 0, 0))
    s = jnp.einsum("bkgd,bskd->bkgs", q, kc) / np.float32(np.sqrt(hd))
    s = jnp.where(jnp.arange(kc.shape[1]) <= p, s, -1e30)
    a = jnp.einsum("bkgs,bskd->bkgd", jax.nn.softmax(s, -1), vc).reshape(b, h * hd)
    return a @ wo, kc, vc


def _kv_args(seed, b=4, s=64, kvh=4, hd=16, h=8, d=64):
    sc = d ** -0.5
    return [_rand((b, d), seed), _rand((b, s, kvh, hd), seed + 1), _rand((b, s, kvh, hd), seed + 2),
            np.array([37], np.int32), _rand((d, h * hd), seed + 3, scale=sc),
            _rand((d, kvh * hd), seed + 4, scale=sc), _rand((d, kvh * hd), seed + 5, scale=sc),
            _rand((h * hd, d), seed + 6, scale=(h * hd) ** -0.5)]


def _concat_pad_rev_select(mesh, x, y):
    a = jnp.concatenate([x, jnp.flip(y, 0) * 0.5], axis=0)                   # [128, 128]
    b = jnp.pad(a, ((4, 4), (0, 8)), constant_values=-1.0)                # [136, 136]
    c = jnp.where(b > 0, b, jnp.flip(b, 1))
    d = jax.lax.rev(c, (0,))[:128, 4:132]
    return _wsc(mesh, jnp.tanh(d) + a, P("x", "y"))


def _top_p_filter(logits):
    # Nucleus filtering: sort the vocabulary, keep the smallest prefix with mass >= 0.9.
    order = jnp.argsort(-logits, axis=-1)
    sorted_logits = jnp.take_along_axis(logits, order, axis=-1)
    cum = jnp.cumsum(jax.nn.softmax(sorted_logits, -1), axis=-1)
    drop_sorted = (cum - jax.nn.softmax(sorted_logits, -1)) > 0.9
    drop = jnp.zeros_like(drop_sorted).at[jnp.arange(logits.shape[0])[:, None], order].set(drop_sorted)
    return jnp.where(drop, -1e9, logits), order


def _flip_bidir(x, wf, wb):
    # A bidirectional layer: causal running mean forward and over the flipped sequence.
    n = jnp.arange(1, x.shape[1] + 1, dtype=jnp.float32)[None, :, None]
    fwd = jnp.cumsum(x, axis=1) / n
    bwd = jnp.flip(jnp.cumsum(jnp.flip(x, 1), axis=1) / n, 1)
    return jnp.tanh(fwd @ wf + bwd @ wb) + jnp.flip(x, (1, 2))


def _causal_conv(x, w, wg):
    # A Mamba / Hyena style short causal depthwise convolution along the sequence, then gating.
    c = x.shape[-1]
    y = jax.lax.conv_general_dilated(x, w, (1,), [(w.shape[0] - 1, 0)], dimension_numbers=("NWC", "WIO", "NWC"),
                                     feature_group_count=c)
    return jax.nn.silu(y) * (x @ wg)


def _tied_embed_grad(table, ids, labels):
    def loss(t):
        h = jnp.take(t, ids, axis=0)                                        # [b, s, d]
        h = _rms(h, 1.0)
        logits = jnp.einsum("bsd,vd->bsv", h, t)
        logp = jax.nn.log_softmax(logits, -1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))
    return jax.value_and_grad(loss)(table)


def _sorted_moe(x, wr, w):
    # Top-1 MoE by sorting tokens by expert (MegaBlocks / dropless style): argsort of the expert ids
    # along the sharded token dim, segment-wise expert matmul via one-hot, unsort.
    probs = jax.nn.softmax(x @ wr, axis=-1)
    e = jnp.argmax(probs, -1)
    order = jnp.argsort(e, stable=True)
    xs, es = x[order], e[order]
    onehot = jax.nn.one_hot(es, w.shape[0])                                 # [t, e]
    y = jnp.einsum("te,td,edf->tf", onehot, xs, w) * jnp.max(probs, -1)[order][:, None]
    return jnp.zeros_like(y).at[order].set(y)


def _chunked_prefill(kc, vc, k, v, q, pos):
    # Write a chunk of 8 new tokens into the cache at a runtime offset (it may straddle shards),
    # then causal attention of the chunk over the cache.
    p = pos[0]
    kc = jax.lax.dynamic_update_slice(kc, k, (0, p, 0, 0))
    vc = jax.lax.dynamic_update_slice(vc, v, (0, p, 0, 0))
    s = jnp.einsum("bqhd,bshd->bhqs", q, kc) / np.float32(np.sqrt(q.shape[-1]))
    qpos = p + jnp.arange(q.shape[1])
    s = jnp.where(jnp.arange(kc.shape[1])[None, :] <= qpos[:, None], s, -1e30)
    return jnp.einsum("bhqs,bshd->bqhd", jax.nn.softmax(s, -1), vc), kc, vc


def _uneven_attention(mesh, x, wqkv):
    # 13 tokens with the sequence over 8 (made inside), causal single-head attention.
    h = _wsc(mesh, x[:, :13], P(None, "x"))
    q, k, v = jnp.split(h @ wqkv, 3, axis=-1)
    s = _causal(jnp.einsum("bqd,bkd->bqk", q, k) / np.float32(np.sqrt(q.shape[-1])))
    return _wsc(mesh, jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, -1), v), P(None, "x"))


def _uneven_concat(mesh, a, b):
    # Pieces of 13 and 19 rows, each sharded over 8, concatenated, padded to 40 and reversed.
    x = _wsc(mesh, jnp.tanh(a[:13]), P("x"))
    y = _wsc(mesh, b[:19] * 2.0, P("x"))
    z = _wsc(mesh, jnp.concatenate([x, y], axis=0), P("x"))
    return _wsc(mesh, jnp.flip(jnp.pad(z, ((3, 5), (0, 0))), 0) + 1.0, P("x"))


def _remat_scan_grad(ws, x):
    # Scan over layers with per-layer remat (jax.checkpoint, nothing saveable), weight gradient.
    @jax.checkpoint
    def layer(h, w):
        return h + jax.nn.gelu(_rms(h, 1.0) @ w[0]) @ w[1], None

    return jax.grad(lambda ws: jnp.mean(jax.lax.scan(layer, x, ws)[0] ** 2))(ws)


def _ring_attention_fori(mesh):
    # Non-causal ring attention with the ring steps in lax.fori_loop (ppermute inside the loop).
    def body(q, k, v):
        n = _axis_size("sp")
        perm = [(i, (i + 1) % n) for i in range(n)]

        def step(_, c):
            k, v, m, l, acc = c
            s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(q.shape[-1]))
            m_new = jnp.maximum(m, s.max(-1))
            p = jnp.exp(s - m_new[..., None])
            corr = jnp.exp(m - m_new)
            acc = acc * jnp.transpose(corr, (0, 2, 1))[..., None] + jnp.einsum("bhqk,bkhd->bqhd", p, v)
            l = l * corr + p.sum(-1)
            return jax.lax.ppermute(k, "sp", perm), jax.lax.ppermute(v, "sp", perm), m_new, l, acc

        m0 = jnp.full((q.shape[0], q.shape[2], q.shape[1]), -1e30, jnp.float32)
        _, _, _, l, acc = jax.lax.fori_loop(0, n, step, (k, v, m0, jnp.zeros_like(m0), jnp.zeros_like(q)))
        return acc / jnp.transpose(l, (0, 2, 1))[..., None]

    spec = P(None, "sp")
    return _smap(mesh, body, (spec, spec, spec), spec, check_vma=False)


def _moe_a2a_grad(mesh):
    # Expert parallelism in shard_map (top-1 routing, fixed capacity per destination), gradient
    # through the all_to_alls w.r.t. the router and the experts.
    ne, cap = 4, 8

    def layer(x, wr, w):
        # x: [t, d] local tokens; w: [1, d, d] this shard's expert.
        logits = x @ wr
        e = jnp.argmax(logits, -1)
        gate = jnp.max(jax.nn.softmax(logits, -1), -1)
        onehot = jax.nn.one_hot(e, ne)
        pos = (jnp.cumsum(onehot, 0) - 1.0) * onehot
        slots = jax.nn.one_hot(pos.astype(jnp.int32), cap) * (onehot * (pos < cap))[..., None]   # [t, e, c]
        buf = jnp.einsum("tec,td->ecd", slots, x)
        buf = jax.lax.all_to_all(buf, "expert", 0, 0, tiled=True)              # to the expert's shard
        out = jnp.tanh(jnp.einsum("ecd,df->ecf", buf, w[0]))
        out = jax.lax.all_to_all(out, "expert", 0, 0, tiled=True)              # back
        return jnp.einsum("tec,ecd->td", slots, out) * gate[:, None]

    f = _smap(mesh, layer, (P(("data", "expert")), P(), P("expert")), P(("data", "expert")), check_vma=False)
    return lambda x, wr, w: jax.grad(lambda ws: jnp.mean((f(x, *ws) + x) ** 2))((wr, w))


def _uneven_cache_write(mesh, cache, new, pos):
    # A 52-slot cache over 8 devices (7 per shard, the last holds 3), 4 tokens written at a runtime
    # position, then a masked mean over the filled slots.
    c = _wsc(mesh, cache[:, :52], P(None, "x"))
    c = _wsc(mesh, jax.lax.dynamic_update_slice(c, new, (0, pos[0], 0)), P(None, "x"))
    filled = (jnp.arange(52) < pos[0] + new.shape[1])[None, :, None]
    return jnp.sum(jnp.where(filled, c, 0.0), 1) / (pos[0] + new.shape[1]), c * 2.0


def _uneven_argsort(mesh, x):
    # argsort along a 100-wide dim over 8 (made inside), ranks by a second argsort, reversed.
    v = _wsc(mesh, x[:, :100], P(None, "x"))
    order = jnp.argsort(v, axis=-1)
    ranks = jnp.argsort(order, axis=-1)
    return jnp.flip(ranks, -1), jnp.take_along_axis(v, order, axis=-1)


def _decode_loop(cache, x0, wq, wkv, pos0):
    # A greedy-decode loop: lax.scan over 4 steps, each writes its k / v at pos0 + i into the cache
    # (sequence over 8) and attends to the prefix.
    def step(c, i):
        cache, x = c
        p = pos0[0] + i
        q = x @ wq
        kv = (x @ wkv)[:, None, :]
        cache = jax.lax.dynamic_update_slice(cache, kv, (0, p, 0))
        s = jnp.einsum("bd,bsd->bs", q, cache) / np.float32(np.sqrt(q.shape[-1]))
        s = jnp.where(jnp.arange(cache.shape[1]) <= p, s, -1e30)
        x = jnp.tanh(jnp.einsum("bs,bsd->bd", jax.nn.softmax(s, -1), cache)) + x
        return (cache, x), x.sum(-1)

    (cache, x), ys = jax.lax.scan(step, (cache, x0), jnp.arange(4))
    return cache, x, ys


def _conv_hw_grad(x, w1, w2):
    # Two 3x3 convs with the image's height and width both sharded (spatial partitioning of a vision
    # model), the input and weight gradients of an L2 loss.
    conv = lambda a, w: jax.lax.conv_general_dilated(a, w, (1, 1), "SAME",
                                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def loss(x, w1, w2):
        return jnp.mean(conv(jax.nn.relu(conv(x, w1)), w2) ** 2)

    return jax.grad(loss, argnums=(0, 1, 2))(x, w1, w2)


def _packed_attention(x, seg, wqkv, wo):
    # Packed sequences: attention masked to the same segment and causally, batch over data, sequence
    # over fsdp, heads over tp.
    b, s, d = x.shape
    q, k, v = (t.reshape(b, s, 4, d // 4) for t in jnp.split(x @ wqkv, 3, axis=-1))
    sc = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(d // 4))
    same = (seg[:, :, None] == seg[:, None, :]) & jnp.tril(jnp.ones((s, s), bool))[None]
    sc = jnp.where(same[:, None], sc, -1e30)
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, -1), v).reshape(b, s, d) @ wo


def heldout_programs():
    m8, ax = (8,), ("x",)
    ho = []

    def add(name, *a, **kw):
        ho.append(Program("ho_" + name, *a, **kw))

    add("llama_fwd_222", "Llama block (RMSNorm, RoPE, GQA 8q/2kv, SwiGLU), FSDP x TP on 2x2x2",
        _plain(_llama), M222, A3, _LLAMA_222, P(("data", "fsdp")), lambda: _llama_args(440))
    add("llama_grad_222", "its weight gradient, grads sharded like the weights, 2x2x2",
        _plain(_llama_grad(_llama)), M222, A3, _LLAMA_222, tuple(_LLAMA_222[1:]), lambda: _llama_args(450))
    add("llama_fwd_24", "Llama block, grouped-einsum GQA, batch over data=2, Megatron TP over model=4",
        _plain(_llama_grouped), M24, A2, _LLAMA_24, P("data"), lambda: _llama_args(460))
    add("llama_grad_42", "Llama block gradient, batch over data=4, TP over model=2 (kv heads split too)",
        _plain(_llama_grad(_llama)), M42, A2, _LLAMA_42, tuple(_LLAMA_42[1:]), lambda: _llama_args(470))
    add("llama_grad_grouped_24", "grouped-einsum GQA block gradient on 2x4, grads left open",
        _plain(_llama_grad(_llama_grouped)), M24, A2, _LLAMA_24, None, lambda: _llama_args(480))
    add("scan_llama_grad", "lax.scan over 3 stacked Llama layers (fused qkv, RoPE) and its gradient, 2x2x2",
        _plain(_scan_llama_grad), M222, A3,
        [P(("data", "fsdp")), P(), P(None, "fsdp", "tp"), P(None, "tp", "fsdp"), P(None, "fsdp", "tp"),
         P(None, "tp", "fsdp")], None, _scan_llama_args)
    add("adamw_fsdp_tp", "MLP classifier, AdamW + global-norm clipping + warmup, FSDP=4 x TP=2",
        _plain(_adamw_step), M42, ("fsdp", "tp"), _ADAMW_IN, _ADAMW_OUT, _adamw_args)
    add("ring_attention", "causal ring attention: shard_map, K/V ppermuted round 4 seq shards, data=2",
        _ring_attention, M24, ("data", "sp"), [P("data", "sp")] * 3, None, lambda: _qkv_args(490))
    add("ring_attention_grad", "gradient of the causal ring attention w.r.t. q, k, v",
        _ring_attention_grad, M24, ("data", "sp"), [P("data", "sp")] * 3, None, lambda: _qkv_args(495))
    add("ulysses_attention", "Ulysses sequence parallelism: all_to_all seq <-> heads, causal attention, sp=8",
        _ulysses, m8, ("sp",), [P(None, "sp")] * 3, None, lambda: _qkv_args(500, 2, 64, 8, 16))
    add("pipeline_smap", "GPipe forward: 4 stages by shard_map + ppermute, 4 microbatches, data=2",
        _pipeline, M42, ("stage", "data"), [P("stage"), P(None, "data")], None, lambda: _pipe_args(510, 4))
    add("pipeline_smap_grad", "gradient of the GPipe pipeline's MSE loss w.r.t. the stage weights",
        _pipeline_grad, M42, ("stage", "data"), [P("stage"), P(None, "data"), P(None, "data")], P("stage"),
        lambda: _pipe_args(520, 4) + [_rand((PM, PB, PD), 522)])
    add("pipeline_rolled", "pipeline as vmap over stages + jnp.roll of the state, stages over stage=8",
        _plain(_rolled_pipeline), m8, ("stage",), [P("stage"), P()], None, lambda: _pipe_args(530, 8))
    add("moe_capacity", "top-2 MoE with capacity 24 (cumsum slots), tokens over data=2, experts over expert=4",
        _plain(_moe_capacity), M24, ("data", "expert"), [P("data"), P(), P("expert"), P("expert")], None,
        lambda: _moe_args(540))
    add("moe_capacity_grad", "its gradient with a load-balancing loss, 4x2 (tokens 4, experts 2)",
        _plain(_moe_grad), M42, ("data", "expert"), [P("data"), P(), P("expert"), P("expert")],
        (P(), P("expert"), P("expert")), lambda: _moe_args(545))
    add("seq_parallel_grad", "Megatron-SP block (norms on seq shards, TP between) gradient, data=2 x model=4",
        lambda mesh: _seq_parallel_grad(mesh), M24, A2, _SP_SPECS, tuple(_SP_SPECS[1:]), _sp_args)
    add("uneven_13_rows", "13 tokens over 8 devices (made inside): RMSNorm, GELU MLP, residual, reductions",
        lambda mesh: lambda a, w1, w2: _uneven_rows(mesh, a, w1, w2), m8, ax, [P("x"), P(), P()], None,
        lambda: [_rand((16, 64), 550), _rand((64, 128), 551, scale=0.125), _rand((128, 64), 552, scale=0.09)])
    add("uneven_vocab_100", "cross-entropy and argmax over a 100-word vocabulary sharded over 8",
        lambda mesh: lambda h, w, l: _uneven_vocab(mesh, h, w, l), m8, ax, [P(), P(None, "x"), P()], None,
        lambda: [_rand((16, 32), 555), _rand((32, 104), 556, scale=0.2), _ids((16,), 100, 557)])
    add("reshard_chain", "six reshards between incompatible shardings (swaps, merges, a reshape, transpose), 2x2x2",
        lambda mesh: lambda x, w: _reshard_chain(mesh, x, w), (2, 2, 2), ("x", "y", "z"),
        [P("z", None), P()], None, lambda: [_rand((64, 128), 560), _rand((128, 64), 561, scale=0.1)])
    add("kv_cache_heads", "GQA decode step: DUS into a KV cache with kv heads over model=4, batch over data=2",
        _plain(_kv_decode), M24, A2,
        [P("data"), P("data", None, "model"), P("data", None, "model"), P(), P(None, "model"), P(None, "model"),
         P(None, "model"), P("model", None)], (P("data"), P("data", None, "model"), P("data", None, "model")),
        lambda: _kv_args(570))
    add("kv_cache_seq", "the decode step with the cache's sequence dim sharded over 8 (write lands on one shard)",
        _plain(_kv_decode), m8, ax, [P(), P(None, "x"), P(None, "x"), P(), P(), P(), P(), P()],
        (P(), P(None, "x"), P(None, "x")), lambda: _kv_args(580))
    add("concat_pad_rev_select", "concatenate + pad + reverse + select + slice on both sharded dims, 2x4",
        lambda mesh: lambda x, y: _concat_pad_rev_select(mesh, x, y), (2, 4), ("x", "y"),
        [P("x", "y"), P("x", "y")], None, lambda: [_rand((64, 128), 590), _rand((64, 128), 591)])
    add("top_p_argsort", "top-p filtering: argsort of a 256 vocab sharded over 8, cumsum, scatter back",
        _plain(_top_p_filter), m8, ax, [P(None, "x")], (P(None, "x"), P(None, "x")),
        lambda: [_rand((8, 256), 600, scale=3.0)])
    add("flip_bidir", "bidirectional running means (cumsum of the flipped seq), flip of seq and features, 2x4",
        _plain(_flip_bidir), (2, 4), ("x", "y"), [P("x", "y"), P(), P()], P("x", "y"),
        lambda: [_rand((4, 64, 32), 610), _rand((32, 32), 611, scale=0.2), _rand((32, 32), 612, scale=0.2)])
    add("causal_conv_seq", "short causal depthwise conv (k=4) along a sequence over 8, SiLU gating",
        _plain(_causal_conv), m8, ax, [P(None, "x"), P(), P()], P(None, "x"),
        lambda: [_rand((2, 128, 64), 620), _rand((4, 1, 64), 621, scale=0.5), _rand((64, 64), 622, scale=0.125)])
    add("tied_embed_grad", "tied embedding / unembedding, vocab 512 over model=2, batch over data=4, loss + grad",
        _plain(_tied_embed_grad), M42, A2, [P("model"), P("data"), P("data")], (P(), P("model")),
        lambda: [_rand((512, 64), 630, scale=0.5), _ids((8, 16), 512, 631), _ids((8, 16), 512, 632)])
    add("topk_vocab", "lax.top_k (k=8) over a 512 vocab sharded over 4, batch over 2",
        _plain(lambda x: jax.lax.top_k(x, 8)), (2, 4), ("x", "y"), [P("x", "y")], None,
        lambda: [_rand((16, 512), 640)])
    add("llama_bf16_222", "the Llama block in bf16 (weights and activations), FSDP x TP on 2x2x2",
        _plain(_llama), M222, A3, _LLAMA_222, P(("data", "fsdp")),
        lambda: [a.astype(jnp.bfloat16) for a in _llama_args(650)], "bf16")
    add("sorted_moe", "top-1 MoE by argsort of expert ids along the token dim over 8, expert matmul, unsort",
        _plain(_sorted_moe), m8, ax, [P("x"), P(), P()], P("x"),
        lambda: [_rand((64, 32), 660), _rand((32, 4), 661), _rand((4, 32, 32), 662, scale=0.2)])
    add("chunked_prefill_222", "8-token chunk written at offset 28 into a cache of 64 (batch, seq, heads over 2x2x2)",
        _plain(_chunked_prefill), M222, A3,
        [P("data", "fsdp", "tp")] * 2 + [P("data", None, "tp")] * 3 + [P()],
        (P("data", None, "tp"), P("data", "fsdp", "tp"), P("data", "fsdp", "tp")),
        lambda: _qkv_args(670, 4, 64, 4, 16)[:2] + _qkv_args(673, 4, 8, 4, 16) + [np.array([28], np.int32)])
    add("uneven_13_attention", "causal attention over 13 tokens with the sequence over 8 (made inside)",
        lambda mesh: lambda x, w: _uneven_attention(mesh, x, w), m8, ax, [P(None, "x"), P()], None,
        lambda: [_rand((2, 16, 32), 680), _rand((32, 96), 681, scale=0.2)])
    add("uneven_concat_pad_flip", "concatenate 13 + 19 rows over 8, pad to 40, flip (uneven shards throughout)",
        lambda mesh: lambda a, b: _uneven_concat(mesh, a, b), m8, ax, [P("x"), P("x")], None,
        lambda: [_rand((16, 64), 690), _rand((24, 64), 691)])
    add("remat_scan_grad", "scan over 4 checkpointed residual MLP layers, weight gradient, data=2 x model=4",
        _plain(_remat_scan_grad), M24, A2, [P(None, None, None, "model"), P("data")], P(None, None, None, "model"),
        lambda: [np.stack([np.stack([_rand((64, 64), 700 + 2 * i, scale=0.125),
                                     _rand((64, 64), 701 + 2 * i, scale=0.125)]) for i in range(4)]),
                 _rand((16, 64), 710)])
    add("ring_attention_fori", "ring attention with the ring in lax.fori_loop (ppermute in the loop body), sp=8",
        _ring_attention_fori, m8, ("sp",), [P(None, "sp")] * 3, None, lambda: _qkv_args(720, 2, 64, 4, 16))
    add("moe_a2a_grad", "expert parallel top-1 MoE in shard_map (all_to_all there and back), its gradient, 2x4",
        _moe_a2a_grad, M24, ("data", "expert"), [P(("data", "expert")), P(), P("expert")], (P(), P("expert")),
        lambda: [_rand((128, 32), 730), _rand((32, 4), 731), _rand((4, 32, 32), 732, scale=0.2)])
    add("uneven_cache_write", "DUS of 4 tokens at position 45 into a 52-slot cache over 8 (uneven), masked mean",
        lambda mesh: lambda c, n, p: _uneven_cache_write(mesh, c, n, p), m8, ax, [P(None, "x"), P(), P()], None,
        lambda: [_rand((2, 56, 32), 740), _rand((2, 4, 32), 741), np.array([45], np.int32)])
    add("uneven_argsort", "argsort and ranks along a 100-wide dim over 8 (uneven), sorted values, flip",
        lambda mesh: lambda x: _uneven_argsort(mesh, x), m8, ax, [P(None, "x")], None,
        lambda: [_rand((8, 104), 750)])
    add("decode_loop", "lax.scan over 4 decode steps, each a DUS at pos0 + i into a cache with the sequence over 8",
        _plain(_decode_loop), m8, ax, [P(None, "x"), P(), P(), P(), P()], None,
        lambda: [_rand((4, 64, 32), 760, scale=0.5), _rand((4, 32), 761), _rand((32, 32), 762, scale=0.2),
                 _rand((32, 32), 763, scale=0.2), np.array([21], np.int32)])
    add("llama_bf16_grad_24", "bf16 Llama block gradient, batch over data=2, TP over model=4",
        _plain(_llama_grad(_llama)), M24, A2, _LLAMA_24, tuple(_LLAMA_24[1:]),
        lambda: [a.astype(jnp.bfloat16) for a in _llama_args(770)], "bf16")
    add("conv_hw_grad", "two 3x3 convs, image height over 2 and width over 4, input and weight gradients",
        _plain(_conv_hw_grad), M24, ("h", "w"), [P(None, "h", "w"), P(), P()], None,
        lambda: [_rand((2, 16, 32, 8), 780), _rand((3, 3, 8, 16), 781, scale=0.2),
                 _rand((3, 3, 16, 8), 782, scale=0.1)])
    add("packed_attention", "packed-sequence attention (segment ids, causal), batch / seq / heads over 2x2x2",
        _plain(_packed_attention), M222, A3, [P("data", "fsdp"), P("data", "fsdp"), P(None, "tp"), P("tp", None)],
        P("data", "fsdp"),
        lambda: [_rand((4, 32, 64), 790), np.sort(_ids((4, 32), 3, 791), axis=1), _rand((64, 192), 792, scale=0.125),
                 _rand((64, 64), 793, scale=0.125)])
    return ho
