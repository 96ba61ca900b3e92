"""Probe programs for bench/xla_compare (names p8a_, `--only p8a_` runs them): whole models and
training / inference loops as ML engineers write them in pure JAX (layers, optimisers and samplers by
hand).

Vision: a ViT step (stride-4 patch conv, cls token, pos-emb, pre-LN block with a fused qkv over
model, AdamW with bias correction, a weight-decay mask, warmup and global-norm clipping) on 2 x 4;
ConvNeXt (2x2 stem, depthwise 7x7 by feature_group_count with channels over model, channels-last LN,
inverted MLP, layer scale, stochastic depth from a key, momentum SGD); a diffusion U-Net step
(sinusoidal timestep embedding, GroupNorm + SiLU resblocks, stride-2 conv down, nearest
jax.image.resize up, skip concat) with the batch over data and the height over model; DDIM and DDPM
ancestral samplers in fori_loop; Swin window attention (relative-position-bias gather, roll-shifted
windows with the mask) with H and W over a 4 x 4 mesh; MLP-Mixer with the token dim constrained over
model and with 49 tokens over 8 (uneven); MAE (argsort masking, visible-patch gather, unshuffle,
norm-pix loss); an EfficientNet MBConv with squeeze-excite and BatchNorm running stats; PointNet
(T-net, max-pool over a sharded points dim); a ResNet block with BatchNorm over batch x height on 16
devices; a ViT with 65 tokens sequence-parallel over 8 (uneven); DDP with SyncBatchNorm in
shard_map.
Sequence models: RetNet retention in parallel / recurrent (scan) / chunkwise forms; causal linear
attention by cumsum along a sharded sequence; S4D (complex Vandermonde kernel, rfft / irfft
convolution, channels sharded); Transformer-XL segment recurrence with stop_gradient memories;
an LSTM seq2seq with Bahdanau attention; a Dreamer RSSM (GRU + stochastic latent, KL balancing,
free nats); GPT-2 on data x fsdp x tensor (scanned layers, tied embedding, AdamW + cosine schedule);
Llama greedy generation (prefill, while_loop with an EOS stop, GQA + RoPE, KV cache DUS on
(data, kv heads)); QLoRA (int8 base dequantised to bf16, adapters, AdamW); int4 weights packed two
per uint8 with group scales / zeros; distillation with a temperature KL over a sharded vocab; a
Longformer sliding window by prev / cur / next chunks with a global token; ELECTRA (generator MLM,
categorical sample, discriminator).
RL: double DQN with a target network and Polyak update; SAC (tanh-squashed actor, twin critics,
entropy temperature); IMPALA V-trace by a reverse scan.
Generative: RealNVP (checkerboard / channel couplings, squeeze, log-det) with batch x height
sharded; rectified flow training + Euler sampler; denoising score matching + annealed Langevin in
nested fori_loops; NeRF over 100 rays constrained over 8 (uneven) with volume-rendering cumprod;
VQ-VAE with a code-sharded codebook, argmin, straight-through and EMA updates.
Graphs / sets: GraphSAGE (segment_max + mean, 256 unique edges over data, features over model),
GIN over 100 nodes on 8 (uneven), a Set Transformer (ISAB + PMA) over a sharded set dim, an
AlphaZero-style policy / value net with an illegal-move mask.
Recommenders / contrastive: word2vec with negatives by randint over a row-sharded 1000-word table,
a two-tower model with logQ correction on 4 x 4, DCN-v2, MoCo with a queue enqueued by DUS at a
traced pointer, SigLIP with image batch over x and text batch over y, and SigLIP's chunked ring
loss in shard_map (ppermute, check_vma).

Left out: nothing failed in JAX itself. Token-bias gradients that are exactly 0 in exact arithmetic
(a token-mixing bias followed only by LayerNorm) were avoided: they compare as noise.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from programs import Program, _ids, _rand, _smap, _wsc
from programs_probe6b import _ln, _mha, _xent_ids

M8 = (8,)
M24, M42, DM = (2, 4), (4, 2), ("data", "model")
M222, DFT = (2, 2, 2), ("data", "fsdp", "tensor")
M44 = (4, 4)
REP = P()


# ==== shared pieces ===============================================================================
def _layout(entries):
    """entries: (shape, spec, kind) -> (specs, make(seed)). kind w: fan-in scaled weight, b: a small
    bias, g: a gain near 1, e: an O(1) embedding, s: 0.1-scaled."""
    specs = [e[1] for e in entries]

    def make(seed):
        out = []
        for i, (shape, _, kind) in enumerate(entries):
            if kind == "w":
                out.append(_rand(shape, seed + i, scale=float(np.prod(shape[:-1])) ** -0.5))
            elif kind == "b":
                out.append(_rand(shape, seed + i, scale=0.02))
            elif kind == "g":
                out.append(1.0 + _rand(shape, seed + i, scale=0.1))
            elif kind == "e":
                out.append(_rand(shape, seed + i))
            else:
                out.append(_rand(shape, seed + i, scale=0.1))
        return out
    return specs, make


def _adam_state(entries, seed):
    """Adam moments some steps in: m small, v positive."""
    m = [_rand(e[0], seed + i, scale=0.01) for i, e in enumerate(entries)]
    v = [1e-3 * (1.0 + np.abs(_rand(e[0], seed + 500 + i))) for i, e in enumerate(entries)]
    return m, v


def _lnab(x, g, b, eps=1e-5):
    return _ln(x, eps) * g + b


def _attn(q, k, v, bias=None):
    # q [B, Sq, H, Dh], k / v [B, Sk, H, Dh]; bias broadcast against [B, H, Sq, Sk].
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(q.shape[-1]))
    if bias is not None:
        s = s + bias
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v)


def _conv(x, w, stride=1, pad="SAME", groups=1):
    return jax.lax.conv_general_dilated(x, w, (stride, stride), pad, feature_group_count=groups,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _gclip(grads, max_norm):
    gn = jnp.sqrt(sum(jnp.sum(g * g) for g in grads))
    s = jnp.minimum(1.0, max_norm / (gn + 1e-6))
    return tuple(g * s for g in grads), gn


def _adamw(params, grads, m, v, step, lr, wd, mask, b1=0.9, b2=0.999, eps=1e-8):
    t = step.astype(jnp.float32) + 1.0
    c1, c2 = 1.0 - b1 ** t, 1.0 - b2 ** t
    ps, ms, vs = [], [], []
    for p, g, mi, vi, dec in zip(params, grads, m, v, mask):
        mi = b1 * mi + (1 - b1) * g
        vi = b2 * vi + (1 - b2) * g * g
        u = (mi / c1) / (jnp.sqrt(vi / c2) + eps)
        if dec:
            u = u + wd * p
        ps.append(p - lr * u)
        ms.append(mi)
        vs.append(vi)
    return tuple(ps), tuple(ms), tuple(vs)


def _sgd(params, grads, lr):
    return tuple(p - lr * g for p, g in zip(params, grads))


def _temb(t, dim):
    half = dim // 2
    f = jnp.exp(-math.log(10000.0) * jnp.arange(half, dtype=jnp.float32) / half)
    a = t.astype(jnp.float32)[:, None] * f[None]
    return jnp.concatenate([jnp.sin(a), jnp.cos(a)], -1)


def _gn(x, groups, eps=1e-5):
    b, h, w, c = x.shape
    xg = x.reshape(b, h, w, groups, c // groups)
    m = xg.mean((1, 2, 4), keepdims=True)
    v = ((xg - m) ** 2).mean((1, 2, 4), keepdims=True)
    return ((xg - m) * jax.lax.rsqrt(v + eps)).reshape(b, h, w, c)


def _bn(x, g, b, rm, rv, axes=(0, 1, 2), mom=0.9, eps=1e-5):
    m = x.mean(axes)
    v = ((x - m) ** 2).mean(axes)
    n = np.prod([x.shape[a] for a in axes])
    y = (x - m) * jax.lax.rsqrt(v + eps) * g + b
    return y, mom * rm + (1 - mom) * m, mom * rv + (1 - mom) * v * (n / (n - 1))


# ==== ViT training step: AdamW, decay mask, bias correction, warmup, global-norm clipping ==========
VD, VH = 32, 4
_VIT = [((4, 4, 3, VD), P(None, None, None, "model"), "w"), ((VD,), P("model"), "b"),
        ((1, 1, VD), REP, "s"), ((1, 17, VD), REP, "s"),
        ((VD,), REP, "g"), ((VD,), REP, "b"),
        ((VD, 3 * VD), P(None, "model"), "w"), ((3 * VD,), P("model"), "b"),
        ((VD, VD), P("model", None), "w"), ((VD,), REP, "b"),
        ((VD,), REP, "g"), ((VD,), REP, "b"),
        ((VD, 2 * VD), P(None, "model"), "w"), ((2 * VD,), P("model"), "b"),
        ((2 * VD, VD), P("model", None), "w"), ((VD,), REP, "b"),
        ((VD,), REP, "g"), ((VD,), REP, "b"), ((VD, 10), REP, "w"), ((10,), REP, "b")]
_VIT_DECAY = tuple(len(e[0]) >= 2 and i not in (2, 3) for i, e in enumerate(_VIT))


def _vit_logits(p, img):
    (pw, pb, cls, pos, g1, b1, wqkv, bqkv, wo, bo, g2, b2, w1, bb1, w2, bb2, gf, bf, wh, bh) = p
    x = _conv(img, pw, stride=4, pad="VALID") + pb                   # [B, 4, 4, D]: patch embedding
    b = x.shape[0]
    x = x.reshape(b, 16, VD)
    x = jnp.concatenate([jnp.broadcast_to(cls, (b, 1, VD)), x], 1) + pos   # 17 tokens
    h = _lnab(x, g1, b1)
    qkv = (h @ wqkv + bqkv).reshape(b, 17, 3, VH, VD // VH)
    x = x + _attn(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]).reshape(b, 17, VD) @ wo + bo
    h = _lnab(x, g2, b2)
    x = x + jax.nn.gelu(h @ w1 + bb1) @ w2 + bb2
    return _lnab(x[:, 0], gf, bf) @ wh + bh


def _vit_adamw(*a):
    n = len(_VIT)
    p, m, v, step, img, lab = a[:n], a[n:2 * n], a[2 * n:3 * n], a[3 * n], a[3 * n + 1], a[3 * n + 2]
    loss, g = jax.value_and_grad(lambda p: _xent_ids(_vit_logits(p, img), lab))(p)
    g, gn = _gclip(g, 0.5)
    lr = 1e-3 * jnp.minimum(1.0, (step.astype(jnp.float32) + 1.0) / 10.0)
    p, m, v = _adamw(p, g, m, v, step, lr, 0.05, _VIT_DECAY)
    return loss, gn, p, m, v


def _vit_specs_args():
    specs, make = _layout(_VIT)
    m, v = _adam_state(_VIT, 8020)
    return (specs * 3 + [REP, P("data"), P("data")],
            lambda: make(8000) + m + v + [np.int32(4), _rand((8, 16, 16, 3), 8090), _ids((8,), 10, 8091)])


# ==== ConvNeXt: depthwise 7x7, channels-last LN, inverted MLP, layer scale, stochastic depth ======
CC = 16


def _cnx_entries():
    blk = [((7, 7, 1, CC), P(None, None, None, "model"), "w"), ((CC,), P("model"), "b"),
           ((CC,), REP, "g"), ((CC,), REP, "b"),
           ((CC, 4 * CC), P(None, "model"), "w"), ((4 * CC,), P("model"), "b"),
           ((4 * CC, CC), P("model", None), "w"), ((CC,), REP, "b"), ((CC,), REP, "s")]
    return ([((2, 2, 3, CC), P(None, None, None, "model"), "w"), ((CC,), P("model"), "b")] + blk + blk
            + [((CC,), REP, "g"), ((CC,), REP, "b"), ((CC, 10), REP, "w"), ((10,), REP, "b")])


def _cnx_block(x, bp, keep):
    dw, dwb, g, b, w1, b1, w2, b2, ls = bp
    y = _conv(x, dw, groups=CC) + dwb
    y = _lnab(y, g, b)
    y = jax.nn.gelu(y @ w1 + b1) @ w2 + b2
    return x + keep * (ls * y)


def _convnext(mesh):
    n = len(_cnx_entries())

    def f(*a):
        p, buf, img, lab, key = a[:n], a[n:2 * n], a[2 * n], a[2 * n + 1], a[2 * n + 2]
        k1, k2 = jax.random.split(key)
        keeps = [jax.random.bernoulli(k, 0.75, (img.shape[0], 1, 1, 1)).astype(jnp.float32) / 0.75 for k in (k1, k2)]

        def loss(p):
            x = _conv(img, p[0], stride=2, pad="VALID") + p[1]         # [B, 8, 8, C]
            x = _wsc(mesh, x, P("data", None, None, "model"))
            x = _cnx_block(x, p[2:11], keeps[0])
            x = _cnx_block(x, p[11:20], keeps[1])
            hfeat = _lnab(x.mean((1, 2)), p[20], p[21])
            return _xent_ids(hfeat @ p[22] + p[23], lab)
        l, g = jax.value_and_grad(loss)(p)
        buf = tuple(0.9 * bi + gi for bi, gi in zip(buf, g))
        return l, _sgd(p, buf, 0.05), buf
    return f


def _cnx_specs_args():
    e = _cnx_entries()
    specs, make = _layout(e)
    return (specs * 2 + [P("data"), P("data"), REP],
            lambda: make(8100) + [_rand(s[0], 8130 + i, scale=0.01) for i, s in enumerate(e)]
            + [_rand((8, 16, 16, 3), 8160), _ids((8,), 10, 8161), np.array([0, 8162], np.uint32)])


# ==== diffusion U-Net training step (GroupNorm, SiLU, timestep embedding, strided down, resize up) =
def _res_entries(c):
    return [((3, 3, c, c), REP, "w"), ((c,), REP, "b"), ((64, c), REP, "w"), ((c,), REP, "b"),
            ((3, 3, c, c), REP, "w"), ((c,), REP, "b")]


_UNET = ([((32, 64), REP, "w"), ((64,), REP, "b"), ((64, 64), REP, "w"), ((64,), REP, "b"),
          ((3, 3, 4, 16), REP, "w"), ((16,), REP, "b")] + _res_entries(16)
         + [((3, 3, 16, 32), REP, "w"), ((32,), REP, "b")] + _res_entries(32) + _res_entries(32)
         + [((3, 3, 48, 16), REP, "w"), ((16,), REP, "b")] + _res_entries(16)
         + [((3, 3, 16, 4), REP, "s"), ((4,), REP, "b")])


def _resblock(x, rp, te):
    c1, b1, tp, tb, c2, b2 = rp
    h = _conv(jax.nn.silu(_gn(x, 4)), c1) + b1
    h = h + (te @ tp + tb)[:, None, None, :]
    h = _conv(jax.nn.silu(_gn(h, 4)), c2) + b2
    return x + h


def _unet(p, x, t):
    te = jax.nn.silu(_temb(t, 32) @ p[0] + p[1]) @ p[2] + p[3]
    te = jax.nn.silu(te)
    h = _conv(x, p[4]) + p[5]
    h1 = _resblock(h, p[6:12], te)                                       # [B, 16, 16, 16]
    h = _conv(h1, p[12], stride=2, pad=((1, 1), (1, 1))) + p[13]           # [B, 8, 8, 32]
    h = _resblock(h, p[14:20], te)
    h = _resblock(h, p[20:26], te)
    b, hh, ww, c = h.shape
    h = jax.image.resize(h, (b, 2 * hh, 2 * ww, c), "nearest")
    h = jnp.concatenate([h, h1], -1)                                     # skip connection
    h = _conv(h, p[26]) + p[27]
    h = _resblock(h, p[28:34], te)
    return _conv(jax.nn.silu(_gn(h, 4)), p[34]) + p[35]


def _unet_step(mesh):
    n = len(_UNET)

    def f(*a):
        p, x0, noise, t, ac = a[:n], a[n], a[n + 1], a[n + 2], a[n + 3]
        at = ac[t][:, None, None, None]
        xt = jnp.sqrt(at) * x0 + jnp.sqrt(1 - at) * noise

        def loss(p):
            return jnp.mean((_unet(p, _wsc(mesh, xt, P("data", "model")), t) - noise) ** 2)
        l, g = jax.value_and_grad(loss)(p)
        return l, _sgd(p, g, 0.02)
    return f


def _alphas(n, b0=1e-4, b1=0.02):
    return np.cumprod(1.0 - np.linspace(b0, b1, n)).astype(np.float32)


def _unet_specs_args():
    specs, make = _layout(_UNET)
    return (specs + [P("data", "model"), P("data", "model"), P("data"), REP],
            lambda: make(8200) + [_rand((4, 16, 16, 4), 8250), _rand((4, 16, 16, 4), 8251),
                                  np.array([3, 50, 77, 99], np.int32), _alphas(100)])


# ==== samplers: DDIM (deterministic) and DDPM ancestral with keys, in fori_loop ==================
def _eps_net(x, t, w1, wt, b1, w2, b2):
    h = jax.nn.silu(x @ w1 + _temb(t, 32) @ wt + b1)
    return h @ w2 + b2


def _ddim(mesh):
    def f(w1, wt, b1, w2, b2, x, ac):
        ts = jnp.asarray(np.linspace(99, 0, 11).astype(np.int32))

        def body(i, x):
            t, tp = ts[i], ts[i + 1]
            a, ap = ac[t], ac[tp]
            eps = _eps_net(x, jnp.full((x.shape[0],), t), w1, wt, b1, w2, b2)
            x0 = (x - jnp.sqrt(1 - a) * eps) / jnp.sqrt(a)
            x = jnp.sqrt(ap) * x0 + jnp.sqrt(1 - ap) * eps
            return _wsc(mesh, x, P("data", None))
        return jax.lax.fori_loop(0, 10, body, x)
    return f


def _ddpm_ancestral(w1, wt, b1, w2, b2, x, key):
    betas = np.linspace(1e-3, 0.05, 20).astype(np.float32)
    alphas = 1 - betas
    ac = np.cumprod(alphas).astype(np.float32)
    betas, alphas, ac = map(jnp.asarray, (betas, alphas, ac))

    def body(i, x):
        t = 19 - i
        eps = _eps_net(x, jnp.full((x.shape[0],), t), w1, wt, b1, w2, b2)
        mean = (x - betas[t] / jnp.sqrt(1 - ac[t]) * eps) / jnp.sqrt(alphas[t])
        z = jax.random.normal(jax.random.fold_in(key, i), x.shape)
        return mean + jnp.where(t > 0, jnp.sqrt(betas[t]), 0.0) * z
    return jax.lax.fori_loop(0, 20, body, x)


def _eps_args(seed, d, hdim):
    return [_rand((d, hdim), seed, scale=d ** -0.5), _rand((32, hdim), seed + 1, scale=0.1),
            _rand((hdim,), seed + 2, scale=0.02), _rand((hdim, d), seed + 3, scale=0.3 * hdim ** -0.5),
            _rand((d,), seed + 4, scale=0.02)]


# ==== Swin: window attention, relative position bias, shifted windows by roll, spatial sharding ====
SW, SWIN_D, SWIN_H = 4, 32, 4


def _swin_consts():
    c = np.stack(np.meshgrid(np.arange(SW), np.arange(SW), indexing="ij")).reshape(2, -1)
    rel = (c[:, :, None] - c[:, None, :]).transpose(1, 2, 0) + (SW - 1)
    idx = (rel[..., 0] * (2 * SW - 1) + rel[..., 1]).astype(np.int32)          # [16, 16]
    img = np.zeros((16, 16), np.float32)
    cnt = 0
    for hs in (slice(0, -SW), slice(-SW, -SW // 2), slice(-SW // 2, None)):
        for ws in (slice(0, -SW), slice(-SW, -SW // 2), slice(-SW // 2, None)):
            img[hs, ws] = cnt
            cnt += 1
    mw = img.reshape(4, SW, 4, SW).transpose(0, 2, 1, 3).reshape(16, SW * SW)
    mask = np.where(mw[:, None, :] != mw[:, :, None], -100.0, 0.0).astype(np.float32)   # [nW, 16, 16]
    return idx, mask


def _swin_block(x, bp, shift):
    g1, b1, wqkv, bqkv, table, wo, bo, g2, b2, w1, bb1, w2, bb2 = bp
    idx, mask = _swin_consts()
    b, hh, ww, c = x.shape
    h = _lnab(x, g1, b1)
    if shift:
        h = jnp.roll(h, (-SW // 2, -SW // 2), axis=(1, 2))
    win = h.reshape(b, hh // SW, SW, ww // SW, SW, c).transpose(0, 1, 3, 2, 4, 5).reshape(-1, SW * SW, c)
    qkv = (win @ wqkv + bqkv).reshape(win.shape[0], SW * SW, 3, SWIN_H, c // SWIN_H)
    bias = jnp.transpose(table[idx], (2, 0, 1))[None]                         # [1, H, 16, 16]
    if shift:
        nw = (hh // SW) * (ww // SW)
        bias = (bias[None] + jnp.asarray(mask)[None, :, None]).reshape(1, nw, SWIN_H, 16, 16)
        bias = jnp.broadcast_to(bias, (b, nw, SWIN_H, 16, 16)).reshape(b * nw, SWIN_H, 16, 16)
    o = _attn(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], bias).reshape(-1, SW * SW, c) @ wo + bo
    o = o.reshape(b, hh // SW, ww // SW, SW, SW, c).transpose(0, 1, 3, 2, 4, 5).reshape(b, hh, ww, c)
    if shift:
        o = jnp.roll(o, (SW // 2, SW // 2), axis=(1, 2))
    x = x + o
    return x + jax.nn.gelu(_lnab(x, g2, b2) @ w1 + bb1) @ w2 + bb2


def _swin_entries():
    d = SWIN_D
    blk = [((d,), REP, "g"), ((d,), REP, "b"), ((d, 3 * d), REP, "w"), ((3 * d,), REP, "b"),
           (((2 * SW - 1) ** 2, SWIN_H), REP, "s"), ((d, d), REP, "w"), ((d,), REP, "b"),
           ((d,), REP, "g"), ((d,), REP, "b"), ((d, 2 * d), REP, "w"), ((2 * d,), REP, "b"),
           ((2 * d, d), REP, "w"), ((d,), REP, "b")]
    return blk + blk


def _swin(mesh):
    def f(*a):
        p, x, y = a[:26], a[26], a[27]

        def loss(p):
            h = _swin_block(x, p[:13], False)
            h = _wsc(mesh, h, P(None, "x", "y"))
            h = _swin_block(h, p[13:], True)
            return jnp.mean((h - y) ** 2)
        return jax.value_and_grad(loss)(p)
    return f


# ==== MLP-Mixer: token mixing by transposes with the token dim sharded ============================
def _mixer_layer(x, lp, mesh, tok_spec, ch_spec):
    tw1, tb1, tw2, tb2, cw1, cb1, cw2, cb2 = lp
    h = _wsc(mesh, _ln(x), tok_spec)
    h = jnp.swapaxes(h, 1, 2)                                                # [B, C, T]
    x = x + jnp.swapaxes(jax.nn.gelu(h @ tw1 + tb1) @ tw2 + tb2, 1, 2)
    x = _wsc(mesh, x, ch_spec)
    return x + jax.nn.gelu(_ln(x) @ cw1 + cb1) @ cw2 + cb2


def _mixer_entries(t, c, tok_w1, ch_w1, ch_w2):
    lay = [((t, 2 * t), tok_w1, "w"), ((2 * t,), REP, "b"), ((2 * t, t), REP, "w"), ((t,), REP, "b"),
           ((c, 2 * c), ch_w1, "w"), ((2 * c,), REP if ch_w1 == REP else P("model"), "b"),
           ((2 * c, c), ch_w2, "w"), ((c,), REP, "b")]
    return lay + lay + [((c, 10), REP, "w")]


def _mixer(mesh):
    def f(*a):
        p, x, lab = a[:17], a[17], a[18]

        def loss(p):
            h = _mixer_layer(x, p[0:8], mesh, P("data", "model", None), P("data", None, None))
            h = _mixer_layer(h, p[8:16], mesh, P("data", "model", None), P("data", None, None))
            return _xent_ids(h.mean(1) @ p[16], lab)   # no LN: the token biases' grads are not 0
        l, g = jax.value_and_grad(loss)(p)
        return l, _sgd(p, g, 0.1)
    return f


def _mixer49(mesh):
    # 28 x 28 images -> 7 x 7 = 49 patches of 4 x 4, tokens constrained over 8 (uneven: 7 per device, one 0).
    def f(*a):
        p, img, we, lab = a[:17], a[17], a[18], a[19]

        def loss(p, we):
            b = img.shape[0]
            x = img.reshape(b, 7, 4, 7, 4).transpose(0, 1, 3, 2, 4).reshape(b, 49, 16) @ we
            x = _wsc(mesh, x, P(None, "x", None))
            h = _mixer_layer(x, p[0:8], mesh, P(None, "x", None), P(None, "x", None))
            h = _mixer_layer(h, p[8:16], mesh, P(None, "x", None), P(None, "x", None))
            return _xent_ids(h.mean(1) @ p[16], lab)   # no LN: the token biases' grads are not 0
        return jax.value_and_grad(loss, argnums=(0, 1))(p, we)
    return f


# ==== MAE: random masking by argsort of noise, visible-patch gather, unshuffle, masked MSE ========
_MAE = [((48, 32), P(None, "model"), "w"), ((32,), P("model"), "b"), ((1, 16, 32), REP, "s"),
        ((32, 32), P(None, "model"), "w"), ((32, 32), P(None, "model"), "w"), ((32, 32), P(None, "model"), "w"),
        ((32, 32), P("model", None), "w"), ((32, 64), P(None, "model"), "w"), ((64, 32), P("model", None), "w"),
        ((32, 24), REP, "w"), ((1, 1, 24), REP, "s"), ((1, 16, 24), REP, "s"),
        ((24, 48), P(None, "model"), "w"), ((48, 24), P("model", None), "w"), ((24, 48), REP, "w"), ((48,), REP, "b")]


def _mae(*a):
    p, patches, key = a[:16], a[16], a[17]
    b, n, _ = patches.shape
    keep_n = n // 4
    noise = jax.random.uniform(key, (b, n))
    ids_shuffle = jnp.argsort(noise, 1)
    ids_restore = jnp.argsort(ids_shuffle, 1)
    keep = ids_shuffle[:, :keep_n]
    mask = jnp.take_along_axis(jnp.ones((b, n)).at[:, :keep_n].set(0.0), ids_restore, 1)

    def loss(p):
        we, be, pe, wq, wk, wv, wo, w1, w2, wd, mtok, pd, dw1, dw2, wp, bp = p
        x = patches @ we + be + pe
        xv = jnp.take_along_axis(x, keep[..., None], 1)
        xv = xv + _mha(_ln(xv), _ln(xv), wq, wk, wv, wo, 4)
        xv = xv + jax.nn.gelu(_ln(xv) @ w1) @ w2
        y = _ln(xv) @ wd
        y = jnp.concatenate([y, jnp.broadcast_to(mtok, (b, n - keep_n, 24))], 1)
        y = jnp.take_along_axis(y, ids_restore[..., None], 1) + pd
        y = y + jax.nn.gelu(_ln(y) @ dw1) @ dw2
        pred = y @ wp + bp
        mu = patches.mean(-1, keepdims=True)
        tgt = (patches - mu) * jax.lax.rsqrt(((patches - mu) ** 2).mean(-1, keepdims=True) + 1e-6)
        return jnp.sum(((pred - tgt) ** 2).mean(-1) * mask) / jnp.sum(mask)
    l, g = jax.value_and_grad(loss)(p)
    return l, _sgd(p, g, 0.05)


# ==== EfficientNet MBConv with squeeze-excitation and BatchNorm (batch statistics, running stats) ==
def _mbconv(*a):
    (we, g1, b1, wd, g2, b2, ws1, bs1, ws2, bs2, wp, g3, b3), stats, x, y = a[:13], a[13:19], a[19], a[20]

    def loss(p):
        we, g1, b1, wd, g2, b2, ws1, bs1, ws2, bs2, wp, g3, b3 = p
        h, m1, v1 = _bn(x @ we, g1, b1, stats[0], stats[1])
        h = jax.nn.swish(h)
        h, m2, v2 = _bn(_conv(h, wd, groups=64), g2, b2, stats[2], stats[3])
        h = jax.nn.swish(h)
        s = jax.nn.sigmoid(jax.nn.swish(h.mean((1, 2)) @ ws1 + bs1) @ ws2 + bs2)
        h = h * s[:, None, None, :]
        h, m3, v3 = _bn(h @ wp, g3, b3, stats[4], stats[5])
        return jnp.mean((x + h - y) ** 2), (m1, v1, m2, v2, m3, v3)
    (l, new_stats), g = jax.value_and_grad(loss, has_aux=True)(a[:13])
    return l, _sgd(a[:13], g, 0.1), new_stats


_MBC = [((16, 64), REP, "w"), ((64,), REP, "g"), ((64,), REP, "b"), ((3, 3, 1, 64), REP, "w"),
        ((64,), REP, "g"), ((64,), REP, "b"), ((64, 4), REP, "w"), ((4,), REP, "b"), ((4, 64), REP, "w"),
        ((64,), REP, "b"), ((64, 16), REP, "w"), ((16,), REP, "g"), ((16,), REP, "b")]


def _mbc_args():
    _, make = _layout(_MBC)
    stats = []
    for i, c in enumerate((64, 64, 16)):
        stats += [_rand((c,), 8330 + 2 * i, scale=0.1), 1.0 + np.abs(_rand((c,), 8331 + 2 * i, scale=0.1))]
    return make(8300) + stats + [_rand((16, 8, 8, 16), 8340), _rand((16, 8, 8, 16), 8341)]


# ==== PointNet: T-net, shared MLPs, max-pool over the sharded points dim ===========================
def _pointnet(mesh):
    def f(*a):
        p, pts, lab = a[:12], a[12], a[13]

        def loss(p):
            t1, t2, t3, tb, m1, m2, c1, c2, b1, b2, cb1, cb2 = p
            h = jax.nn.relu(jax.nn.relu(pts @ t1) @ t2).max(1)                 # [B, 32]
            tr = (h @ t3 + tb).reshape(-1, 3, 3) + jnp.eye(3)
            x = jnp.einsum("bnc,bcd->bnd", pts, tr)
            x = _wsc(mesh, x, P("data", "model", None))
            x = jax.nn.relu(jax.nn.relu(x @ m1 + b1) @ m2 + b2)
            g = x.max(1)                                                        # global feature
            logits = jax.nn.relu(g @ c1 + cb1) @ c2 + cb2
            reg = jnp.mean(jnp.sum((jnp.einsum("bij,bkj->bik", tr, tr) - jnp.eye(3)) ** 2, (1, 2)))
            return _xent_ids(logits, lab) + 1e-3 * reg
        l, g = jax.value_and_grad(loss)(p)
        return l, _sgd(p, g, 0.05)
    return f


_PN = [((3, 16), REP, "w"), ((16, 32), REP, "w"), ((32, 9), REP, "s"), ((9,), REP, "b"),
       ((3, 32), REP, "w"), ((32, 64), REP, "w"), ((64, 32), REP, "w"), ((32, 5), REP, "w"),
       ((32,), REP, "b"), ((64,), REP, "b"), ((32,), REP, "b"), ((5,), REP, "b")]


# ==== ResNet basic block, BatchNorm over batch (data=4) x height (4), running stats, 16 devices ====
def _resnet_bn(*a):
    p, (rm1, rv1, rm2, rv2), x, lab = a[:8], a[8:12], a[12], a[13]

    def loss(p):
        c1, g1, b1, c2, g2, b2, wh, bh = p
        h, m1, v1 = _bn(_conv(x, c1), g1, b1, rm1, rv1)
        h = jax.nn.relu(h)
        h, m2, v2 = _bn(_conv(h, c2), g2, b2, rm2, rv2)
        h = jax.nn.relu(h + x)
        return _xent_ids(h.mean((1, 2)) @ wh + bh, lab), (m1, v1, m2, v2)
    (l, st), g = jax.value_and_grad(loss, has_aux=True)(p)
    return l, _sgd(p, g, 0.1), st


_RN = [((3, 3, 8, 8), REP, "w"), ((8,), REP, "g"), ((8,), REP, "b"), ((3, 3, 8, 8), REP, "w"),
       ((8,), REP, "g"), ((8,), REP, "b"), ((8, 10), REP, "w"), ((10,), REP, "b")]


# ==== RetNet retention: parallel, recurrent (scan) and chunkwise forms; grads of the parallel one ==
RH = 4


def _retnet(mesh):
    def f(wq, wk, wv, wg, wo, x, y):
        b, s, d = x.shape
        dh = d // RH
        gam = (1.0 - 2.0 ** (-5.0 - np.arange(RH))).astype(np.float32)
        n = np.arange(s)
        dist = n[:, None] - n[None, :]
        decay = np.where(dist >= 0, gam[:, None, None] ** np.maximum(dist, 0), 0.0).astype(np.float32)

        def qkv(wq, wk, wv):
            return ((x @ wq).reshape(b, s, RH, dh), (x @ wk).reshape(b, s, RH, dh) * np.float32(dh ** -0.5),
                    (x @ wv).reshape(b, s, RH, dh))

        def parallel(q, k, v):
            return jnp.einsum("bhqk,bkhd->bqhd", jnp.einsum("bqhd,bkhd->bhqk", q, k) * decay, v)

        def loss(ps):
            wq, wk, wv, wg, wo = ps
            o = parallel(*qkv(wq, wk, wv))
            m = o.mean(-1, keepdims=True)
            o = (o - m) * jax.lax.rsqrt(((o - m) ** 2).mean(-1, keepdims=True) + 1e-5)   # per-head GroupNorm
            out = (jax.nn.swish(x @ wg) * o.reshape(b, s, d)) @ wo
            return jnp.mean((out - y) ** 2)
        l, g = jax.value_and_grad(loss)((wq, wk, wv, wg, wo))
        q, k, v = qkv(wq, wk, wv)
        o_par = parallel(q, k, v)

        def rstep(st, t):
            qt, kt, vt = t
            st = gam[None, :, None, None] * st + kt[..., :, None] * vt[..., None, :]
            return st, jnp.einsum("bhd,bhde->bhe", qt, st)
        tm = lambda a: jnp.swapaxes(a, 0, 1)
        _, o_rec = jax.lax.scan(rstep, jnp.zeros((b, RH, dh, dh)), (tm(q), tm(k), tm(v)))
        c = 8
        pw_in = (gam[None, :] ** (np.arange(c)[:, None] + 1)).astype(np.float32)            # [C, H]
        pw_k = (gam[None, :] ** (c - 1 - np.arange(c)[:, None])).astype(np.float32)
        ch = lambda a: jnp.swapaxes(a.reshape(b, s // c, c, RH, dh), 0, 1)

        def cstep(st, t):
            qc, kc, vc = t
            o_in = jnp.einsum("bhqk,bkhd->bqhd", jnp.einsum("bqhd,bkhd->bhqk", qc, kc) * decay[:, :c, :c], vc)
            o_x = jnp.einsum("bqhd,bhde->bqhe", qc * pw_in[None, :, :, None], st)
            st = (gam ** c)[None, :, None, None] * st + jnp.einsum("bkhd,bkhe->bhde", kc * pw_k[None, :, :, None], vc)
            return st, o_in + o_x
        _, o_ch = jax.lax.scan(cstep, jnp.zeros((b, RH, dh, dh)), (ch(q), ch(k), ch(v)))
        return l, g, o_par, tm(o_rec), jnp.swapaxes(o_ch, 0, 1).reshape(b, s, RH, dh)
    return f


# ==== causal linear attention by cumsum along the sharded sequence, grads =========================
def _linattn(mesh):
    def f(wq, wk, wv, wo, x, y):
        def loss(ps):
            wq, wk, wv, wo = ps
            b, s, d = x.shape
            xs = _wsc(mesh, x, P("data", "model", None))
            q = jax.nn.elu((xs @ wq).reshape(b, s, 4, -1)) + 1
            k = jax.nn.elu((xs @ wk).reshape(b, s, 4, -1)) + 1
            v = (xs @ wv).reshape(b, s, 4, -1)
            kv = jnp.cumsum(k[..., :, None] * v[..., None, :], axis=1)
            z = jnp.cumsum(k, axis=1)
            o = jnp.einsum("bshd,bshde->bshe", q, kv) / jnp.einsum("bshd,bshd->bsh", q, z)[..., None]
            return jnp.mean((o.reshape(b, s, d) @ wo - y) ** 2)
        return jax.value_and_grad(loss)((wq, wk, wv, wo))
    return f


# ==== S4D: diagonal SSM kernel by Vandermonde, FFT convolution over time, channels sharded ========
def _s4d(log_dt, a_re_log, a_im, c_re, c_im, dskip, wout, u, y):
    def loss(ps):
        log_dt, a_re_log, a_im, c_re, c_im, dskip, wout = ps
        L = u.shape[1]
        dt = jnp.exp(log_dt)[:, None]
        A = -jnp.exp(a_re_log) + 1j * a_im
        dta = dt * A
        C = (c_re + 1j * c_im) * (jnp.exp(dta) - 1.0) / A
        K = 2.0 * jnp.real(jnp.einsum("hn,hnl->hl", C, jnp.exp(dta[..., None] * jnp.arange(L))))   # [H, L]
        uf = jnp.fft.rfft(u, n=2 * L, axis=1)
        kf = jnp.fft.rfft(K, n=2 * L, axis=1)
        yc = jnp.fft.irfft(uf * kf.T[None], n=2 * L, axis=1)[:, :L] + u * dskip
        return jnp.mean((jax.nn.gelu(yc) @ wout - y) ** 2)
    return jax.value_and_grad(loss)((log_dt, a_re_log, a_im, c_re, c_im, dskip, wout))


def _s4d_args():
    rng = np.random.default_rng(8700)
    h, n = 16, 8
    return [np.log(rng.uniform(0.01, 0.1, h)).astype(np.float32), np.full((h, n), np.log(0.5), np.float32),
            np.tile(np.pi * np.arange(n, dtype=np.float32), (h, 1)), _rand((h, n), 8701, scale=0.7),
            _rand((h, n), 8702, scale=0.7), _rand((h,), 8703), _rand((h, h), 8704, scale=0.25),
            _rand((4, 64, h), 8705), _rand((4, 64, h), 8706)]


# ==== Transformer-XL: segment recurrence with stop_gradient memories (2 layers), relative bias ====
def _txl(mesh):
    H, dh, seg = 4, 8, 8

    def layer(x, mem, lp):
        wq, wk, wv, wo, rel, w1, w2 = lp
        b = x.shape[0]
        ctx = jnp.concatenate([jax.lax.stop_gradient(mem), x], 1)
        hx, hc = _ln(x), _ln(ctx)
        q = (hx @ wq).reshape(b, seg, H, dh)
        k = (hc @ wk).reshape(b, 2 * seg, H, dh)
        v = (hc @ wv).reshape(b, 2 * seg, H, dh)
        dist = (seg + np.arange(seg))[:, None] - np.arange(2 * seg)[None, :]
        bias = jnp.transpose(rel[np.clip(dist, 0, 2 * seg - 1)], (2, 0, 1))[None]
        bias = jnp.where(dist >= 0, bias, -1e9)
        x = x + _attn(q, k, v, bias).reshape(b, seg, H * dh) @ wo
        return x + jax.nn.gelu(_ln(x) @ w1) @ w2

    def f(*a):
        p, x, y = a[:14], a[14], a[15]
        b, t, d = x.shape
        segs = jnp.swapaxes(x.reshape(b, t // seg, seg, d), 0, 1)
        ysegs = jnp.swapaxes(y.reshape(b, t // seg, seg, d), 0, 1)

        def loss(p):
            def step(mems, xy):
                xs, ys = xy
                h1 = layer(xs, mems[0], p[:7])
                h1 = _wsc(mesh, h1, P("data", None, None))
                h2 = layer(h1, mems[1], p[7:])
                return (xs, h1), jnp.mean((h2 - ys) ** 2)
            z = jnp.zeros((b, seg, d))
            _, ls = jax.lax.scan(step, (z, z), (segs, ysegs))
            return ls.mean()
        return jax.value_and_grad(loss)(p)
    return f


_TXL = ([((32, 32), P(None, "model"), "w")] * 3 + [((32, 32), P("model", None), "w"), ((16, 4), REP, "s"),
         ((32, 64), P(None, "model"), "w"), ((64, 32), P("model", None), "w")]) * 2


# ==== seq2seq: LSTM encoder, LSTM decoder with Bahdanau (additive) attention, teacher forcing =====
def _lstm(x, h, c, w, b):
    z = jnp.concatenate([x, h], -1) @ w + b
    i, f, g, o = jnp.split(z, 4, -1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    return jnp.tanh(c) * jax.nn.sigmoid(o), c


def _s2s(*a):
    p, src, tgt_in, tgt_out = a[:11], a[11], a[12], a[13]

    def loss(p):
        emb_s, emb_t, we, be, wd, bd, wa_h, wa_s, va, wc, wout = p
        b = src.shape[0]
        hdim = we.shape[1] // 4
        z = jnp.zeros((b, hdim))

        def enc(carry, x):
            h, c = _lstm(x, *carry, we, be)
            return (h, c), h
        (h, c), hs = jax.lax.scan(enc, (z, z), jnp.swapaxes(emb_s[src], 0, 1))
        hs = jnp.swapaxes(hs, 0, 1)
        keys = hs @ wa_h

        def dec(carry, y):
            h, c, ctx = carry
            h, c = _lstm(jnp.concatenate([y, ctx], -1), h, c, wd, bd)
            e = jnp.tanh(keys + (h @ wa_s)[:, None]) @ va
            al = jax.nn.softmax(e[..., 0], -1)
            ctx = jnp.einsum("bs,bsh->bh", al, hs)
            return (h, c, ctx), jnp.tanh(jnp.concatenate([h, ctx], -1) @ wc) @ wout
        _, logits = jax.lax.scan(dec, (h, c, z), jnp.swapaxes(emb_t[tgt_in], 0, 1))
        return _xent_ids(jnp.swapaxes(logits, 0, 1), tgt_out)
    l, g = jax.value_and_grad(loss)(p)
    return l, _sgd(p, g, 0.5)


_S2S = [((64, 16), REP, "e"), ((64, 16), REP, "e"), ((48, 128), P(None, "model"), "w"), ((128,), P("model"), "b"),
        ((80, 128), P(None, "model"), "w"), ((128,), P("model"), "b"), ((32, 32), REP, "w"), ((32, 32), REP, "w"),
        ((32, 1), REP, "w"), ((64, 32), REP, "w"), ((32, 64), P(None, "model"), "w")]


# ==== Dreamer RSSM: GRU + stochastic latent in scan, posterior / prior KL with balancing + free nats =
def _rssm(*a):
    p, obs, act, eps = a[:9], a[9], a[10], a[11]

    def loss(p):
        wenc, wx, wh, bx, wprior, wpost, wdec, bprior, bpost = p
        b, t, _ = obs.shape
        emb = jax.nn.relu(obs @ wenc)
        sp = lambda x: jax.nn.softplus(x) + 0.1

        def step(carry, inp):
            h, z = carry
            a_t, e_t, n_t = inp
            xin = jnp.concatenate([z, a_t], -1)
            g = xin @ wx + bx
            r_, u_, c_ = jnp.split(g, 3, -1)
            hr, hu, hc = jnp.split(h @ wh, 3, -1)
            r, u = jax.nn.sigmoid(r_ + hr), jax.nn.sigmoid(u_ + hu)
            h = (1 - u) * h + u * jnp.tanh(c_ + r * hc)
            pm, ps = jnp.split(h @ wprior + bprior, 2, -1)
            qm, qs = jnp.split(jnp.concatenate([h, e_t], -1) @ wpost + bpost, 2, -1)
            ps, qs = sp(ps), sp(qs)
            z = qm + qs * n_t

            def kl(m1, s1, m2, s2):
                return jnp.sum(jnp.log(s2 / s1) + (s1 ** 2 + (m1 - m2) ** 2) / (2 * s2 ** 2) - 0.5, -1)
            sg = jax.lax.stop_gradient
            klb = 0.8 * kl(sg(qm), sg(qs), pm, ps) + 0.2 * kl(qm, qs, sg(pm), sg(ps))
            rec = jnp.concatenate([h, z], -1) @ wdec
            return (h, z), (rec, jnp.maximum(klb, 1.0))
        tm = lambda v: jnp.swapaxes(v, 0, 1)
        _, (rec, kls) = jax.lax.scan(step, (jnp.zeros((b, 32)), jnp.zeros((b, 16))), (tm(act), tm(emb), tm(eps)))
        return jnp.mean((tm(rec) - obs) ** 2) + jnp.mean(kls), jnp.mean(kls)
    (l, kl), g = jax.value_and_grad(loss, has_aux=True)(p)
    return l, kl, _sgd(p, g, 0.05)


_RSSM = [((24, 32), REP, "w"), ((20, 96), REP, "w"), ((32, 96), REP, "w"), ((96,), REP, "b"), ((32, 32), REP, "w"),
         ((64, 32), REP, "w"), ((48, 24), REP, "w"), ((32,), REP, "b"), ((32,), REP, "b")]


# ==== GPT-2 on data x fsdp x tensor: scanned layers, tied embedding, AdamW + cosine schedule ======
def _gpt2_entries():
    L, d, f = 2, 32, 128
    return [((128, d), P("tensor", "fsdp"), "e"), ((16, d), REP, "s"),
            ((L, d), REP, "g"), ((L, d), REP, "b"), ((L, d, 3 * d), P(None, "fsdp", "tensor"), "w"),
            ((L, 3 * d), P(None, "tensor"), "b"), ((L, d, d), P(None, "tensor", "fsdp"), "w"), ((L, d), REP, "b"),
            ((L, d), REP, "g"), ((L, d), REP, "b"), ((L, d, f), P(None, "fsdp", "tensor"), "w"),
            ((L, f), P(None, "tensor"), "b"), ((L, f, d), P(None, "tensor", "fsdp"), "w"), ((L, d), REP, "b"),
            ((d,), REP, "g"), ((d,), REP, "b")]


def _gpt2(mesh):
    ent = _gpt2_entries()
    n = len(ent)
    decay = tuple(i == 0 or len(e[0]) == 3 for i, e in enumerate(ent))
    act = P(("data", "fsdp"), None, None)

    def fwd(p, ids):
        wte, wpe = p[0], p[1]
        b, s = ids.shape
        x = _wsc(mesh, wte[ids] * 0.5 + wpe[None], act)
        causal = jnp.where(jnp.tril(jnp.ones((s, s), bool)), 0.0, -1e9)

        def layer(x, lp):
            g1, b1, wqkv, bqkv, wo, bo, g2, b2, wfc, bfc, wpr, bpr = lp
            q, k, v = jnp.split(_lnab(x, g1, b1) @ wqkv + bqkv, 3, -1)
            hd = lambda t: t.reshape(b, s, 4, -1)
            x = x + _attn(hd(q), hd(k), hd(v), causal).reshape(b, s, -1) @ wo + bo
            x = x + jax.nn.gelu(_lnab(x, g2, b2) @ wfc + bfc) @ wpr + bpr
            return _wsc(mesh, x, act), None
        x, _ = jax.lax.scan(layer, x, tuple(p[2:14]))
        return _lnab(x, p[14], p[15]) @ wte.T

    def f(*a):
        p, m, v, step, ids, lab = a[:n], a[n:2 * n], a[2 * n:3 * n], a[3 * n], a[3 * n + 1], a[3 * n + 2]
        loss, g = jax.value_and_grad(lambda p: _xent_ids(fwd(p, ids), lab))(p)
        g, gn = _gclip(g, 1.0)
        t = step.astype(jnp.float32)
        lr = 6e-4 * jnp.where(t < 10, (t + 1) / 10, 0.5 * (1 + jnp.cos(np.pi * (t - 10) / 90)))
        p, m, v = _adamw(p, g, m, v, step, lr, 0.1, decay, b2=0.95)
        return loss, gn, lr, p, m, v
    return f


def _gpt2_specs_args():
    ent = _gpt2_entries()
    specs, make = _layout(ent)
    m, v = _adam_state(ent, 8760)
    bs = P(("data", "fsdp"))
    return specs * 3 + [REP, bs, bs], lambda: make(8740) + m + v + [np.int32(37), _ids((8, 16), 128, 8790),
                                                                   _ids((8, 16), 128, 8791)]


# ==== Llama greedy generation: GQA + RoPE, prefill, while_loop with KV cache DUS and an EOS stop ====
LQ, LKV, LDH, LP, LN_ = 8, 4, 8, 8, 16


def _rope(x, pos):
    half = x.shape[-1] // 2
    fr = 1.0 / (10000.0 ** (np.arange(half, dtype=np.float32) / half))
    ang = pos.astype(jnp.float32)[:, None] * fr[None]
    c, s = jnp.cos(ang)[None, :, None], jnp.sin(ang)[None, :, None]
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], -1)


def _llama_gen(mesh):
    def f(emb, wq, wk, wv, wo, wg, wu, wd, g1, g2, gf, head, bias, prompt):
        b = prompt.shape[0]
        total = LP + LN_
        cspec = P("data", None, "model", None)

        def layer(x, pos, start, kc, vc):
            s = x.shape[1]
            h = x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * g1
            q = _rope((h @ wq).reshape(b, s, LQ, LDH), pos)
            k = _rope((h @ wk).reshape(b, s, LKV, LDH), pos)
            v = (h @ wv).reshape(b, s, LKV, LDH)
            kc = _wsc(mesh, jax.lax.dynamic_update_slice(kc, k, (0, start, 0, 0)), cspec)
            vc = _wsc(mesh, jax.lax.dynamic_update_slice(vc, v, (0, start, 0, 0)), cspec)
            mask = jnp.where(jnp.arange(total)[None, :] <= pos[:, None], 0.0, -1e9)[None, None]
            o = _attn(q, jnp.repeat(kc, LQ // LKV, 2), jnp.repeat(vc, LQ // LKV, 2), mask)
            x = x + o.reshape(b, s, -1) @ wo
            h = x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * g2
            return x + (jax.nn.silu(h @ wg) * (h @ wu)) @ wd, kc, vc

        def next_tok(x):
            h = x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * gf
            return jnp.argmax(h @ head + bias, -1).astype(jnp.int32)
        z = jnp.zeros((b, total, LKV, LDH))
        x, kc, vc = layer(emb[prompt], jnp.arange(LP), 0, z, z)
        tok = next_tok(x[:, -1])
        eos = 2

        def cond(st):
            i, _, done, _, _, _ = st
            return (i < LN_) & ~jnp.all(done)

        def body(st):
            i, tok, done, kc, vc, out = st
            tok = jnp.where(done, eos, tok)
            out = jax.lax.dynamic_update_slice(out, tok[:, None], (0, i))
            done = done | (tok == eos)
            x, kc, vc = layer(emb[tok][:, None], (LP + i)[None], LP + i, kc, vc)
            return i + 1, next_tok(x[:, 0]), done, kc, vc, out
        st = (jnp.int32(0), tok, jnp.zeros((b,), bool), kc, vc, jnp.full((b, LN_), -1, jnp.int32))
        i, _, done, kc, _, out = jax.lax.while_loop(cond, body, st)
        return out, i, done, kc
    return f


_LLG = [((128, 64), P(None, "model"), "e"), ((64, 64), P(None, "model"), "w"), ((64, 32), P(None, "model"), "w"),
        ((64, 32), P(None, "model"), "w"), ((64, 64), P("model", None), "w"), ((64, 128), P(None, "model"), "w"),
        ((64, 128), P(None, "model"), "w"), ((128, 64), P("model", None), "w"), ((64,), REP, "g"),
        ((64,), REP, "g"), ((64,), REP, "g")]


def _llg_args():
    _, make = _layout(_LLG)
    bias = np.zeros((128,), np.float32)
    bias[2] = 2.5
    return make(8800) + [_rand((64, 128), 8820, scale=0.4), bias, _ids((4, LP), 128, 8821)]


# ==== QLoRA: frozen int8 base (per-channel scales) dequantised to bf16, LoRA adapters + AdamW ======
def _qlora(q1, s1, q2, s2, a1, b1, a2, b2, m1, m2, m3, m4, v1, v2, v3, v4, step, x, y):
    bf = jnp.bfloat16

    def lin(x, q, s, a, b):
        w = q.astype(bf) * s.astype(bf)
        return x @ w + ((x @ a.astype(bf)) @ b.astype(bf)) * bf(2.0)

    def loss(ad):
        a1, b1, a2, b2 = ad
        h = jax.nn.silu(lin(x, q1, s1, a1, b1))
        return jnp.mean((lin(h, q2, s2, a2, b2).astype(jnp.float32) - y) ** 2)
    ad = (a1, b1, a2, b2)
    l, g = jax.value_and_grad(loss)(ad)
    p, m, v = _adamw(ad, g, (m1, m2, m3, m4), (v1, v2, v3, v4), step, 1e-3, 0.0, (False,) * 4)
    return l, p, m, v


def _qlora_args():
    rng = np.random.default_rng(8830)
    q1 = rng.integers(-127, 128, (64, 128)).astype(np.int8)
    q2 = rng.integers(-127, 128, (128, 64)).astype(np.int8)
    ad = [_rand((64, 8), 8831, scale=0.125), _rand((8, 128), 8832, scale=0.01),
          _rand((128, 8), 8833, scale=0.09), _rand((8, 64), 8834, scale=0.01)]
    m = [_rand(a.shape, 8835 + i, scale=0.001) for i, a in enumerate(ad)]
    v = [1e-6 * (1 + np.abs(_rand(a.shape, 8840 + i))) for i, a in enumerate(ad)]
    return ([q1, np.full((128,), 1.0 / (127 * 8), np.float32) * (1 + _rand((128,), 8845, scale=0.1)),
             q2, np.full((64,), 1.0 / (127 * 11), np.float32) * (1 + _rand((64,), 8846, scale=0.1))]
            + ad + m + v + [np.int32(3), _rand((8, 16, 64), 8847, "bf16"), _rand((8, 16, 64), 8848)])


# ==== group-wise int4 weights packed two per uint8, unpacked by shifts, dequantised in the matmul ==
def _unpack_int4(packed, scale, zero, gsize=32):
    kp, n = packed.shape
    lo, hi = packed & np.uint8(15), packed >> np.uint8(4)
    q = jnp.stack([lo, hi], 1).reshape(2 * kp, n).astype(jnp.float32)
    g = q.shape[0] // gsize
    return ((q.reshape(g, gsize, n) - zero[:, None]) * scale[:, None]).reshape(2 * kp, n)


def _int4_mlp(p1, s1, z1, p2, s2, z2, x):
    h = jax.nn.silu(x @ _unpack_int4(p1, s1, z1))
    return h @ _unpack_int4(p2, s2, z2)


def _int4_args():
    rng = np.random.default_rng(8850)
    u8 = lambda s: rng.integers(0, 256, s).astype(np.uint8)
    return [u8((128, 128)), np.abs(_rand((8, 128), 8851, scale=0.01)) + 0.005, 7.5 + _rand((8, 128), 8852, scale=0.3),
            u8((64, 256)), np.abs(_rand((4, 256), 8853, scale=0.01)) + 0.005, 7.5 + _rand((4, 256), 8854, scale=0.3),
            _rand((4, 256), 8855)]


# ==== knowledge distillation: frozen teacher, temperature KL + hard CE over a vocab on model ======
def _distill(ws1, ws2, wt1, wt2, x, lab):
    tT = 2.0
    tl = jax.lax.stop_gradient(jax.nn.gelu(x @ wt1) @ wt2)

    def loss(ps):
        sl = jax.nn.gelu(x @ ps[0]) @ ps[1]
        pt = jax.nn.softmax(tl / tT, -1)
        kl = jnp.sum(pt * (jax.nn.log_softmax(tl / tT, -1) - jax.nn.log_softmax(sl / tT, -1)), -1).mean()
        return 0.5 * kl * tT ** 2 + 0.5 * _xent_ids(sl, lab)
    l, g = jax.value_and_grad(loss)((ws1, ws2))
    return l, _sgd((ws1, ws2), g, 0.5)


# ==== Longformer: sliding-window attention by chunks (prev / cur / next) + a global token, seq sharded
def _longformer(mesh):
    H, c = 4, 8

    def f(wq, wk, wv, wo, x, y):
        def loss(ps):
            wq, wk, wv, wo = ps
            b, s, d = x.shape
            xs = _wsc(mesh, x, P("data", "model", None))
            q, k, v = [(xs @ w).reshape(b, s, H, -1) for w in (wq, wk, wv)]
            nc = s // c
            kc, vc = [jnp.pad(t.reshape(b, nc, c, H, -1), ((0, 0), (1, 1), (0, 0), (0, 0), (0, 0))) for t in (k, v)]
            win = lambda t: jnp.concatenate([t[:, :-2], t[:, 1:-1], t[:, 2:]], 2)         # [B, nc, 3c, H, dh]
            kw = jnp.concatenate([win(kc), jnp.broadcast_to(k[:, None, :1], (b, nc, 1, H, k.shape[-1]))], 2)
            vw = jnp.concatenate([win(vc), jnp.broadcast_to(v[:, None, :1], (b, nc, 1, H, v.shape[-1]))], 2)
            qi = (np.arange(nc)[:, None] * c + np.arange(c)[None])[:, :, None]                # [nc, c, 1]
            kj = np.concatenate([(np.arange(nc)[:, None] - 1) * c + np.arange(3 * c)[None],
                                 np.zeros((nc, 1), np.int64)], 1)[:, None, :]              # [nc, 1, 3c + 1]
            ok = (np.abs(qi - kj) <= c) & (kj >= 0) & (kj < s)
            ok[:, :, -1] = True
            ok[0, :, c] = False        # token 0 is already the global key
            sc = jnp.einsum("bnqhd,bnkhd->bnhqk", q.reshape(b, nc, c, H, -1), kw) / np.float32(np.sqrt(d // H))
            sc = jnp.where(ok[None, :, None], sc, -1e9)
            o = jnp.einsum("bnhqk,bnkhd->bnqhd", jax.nn.softmax(sc, -1), vw).reshape(b, s, d)
            return jnp.mean((o @ wo - y) ** 2)
        return jax.value_and_grad(loss)((wq, wk, wv, wo))
    return f


# ==== ELECTRA: generator MLM, categorical sampling by key, discriminator replaced-token detection ==
def _electra(emb, g1, g2, d1, d2, dh, ids, m, key):
    def loss(ps):
        emb, g1, g2, d1, d2, dh = ps
        mids = jnp.where(m > 0, 1, ids)
        glog = jax.nn.gelu(emb[mids] @ g1) @ g2 @ emb.T
        mlm = _xent_ids(glog, ids, m)
        samp = jax.random.categorical(key, jax.lax.stop_gradient(glog)).astype(jnp.int32)
        cor = jnp.where(m > 0, samp, ids)
        rep = (cor != ids).astype(jnp.float32)
        dl = (jax.nn.gelu(emb[cor] @ d1) @ d2 @ dh)[..., 0]
        disc = jnp.mean(jax.nn.softplus(dl) - rep * dl)
        return mlm + 50.0 * disc, (mlm, disc)
    (l, aux), g = jax.value_and_grad(loss, has_aux=True)((emb, g1, g2, d1, d2, dh))
    return l, aux, g


# ==== RL: double DQN with a target network, SAC, IMPALA V-trace ===================================
def _ddqn(w1, b1, w2, b2, t1, tb1, t2, tb2, obs, act, rew, done, nobs):
    q = lambda p, x: jax.nn.relu(x @ p[0] + p[1]) @ p[2] + p[3]
    online, target = (w1, b1, w2, b2), (t1, tb1, t2, tb2)
    a_star = jnp.argmax(q(online, nobs), -1)
    qt = jnp.take_along_axis(q(target, nobs), a_star[:, None], 1)[:, 0]
    y = jax.lax.stop_gradient(rew + 0.99 * (1.0 - done) * qt)

    def loss(p):
        d = jnp.take_along_axis(q(p, obs), act[:, None], 1)[:, 0] - y
        ad = jnp.abs(d)
        return jnp.mean(jnp.where(ad <= 1.0, 0.5 * d * d, ad - 0.5))
    l, g = jax.value_and_grad(loss)(online)
    new = _sgd(online, g, 0.05)
    return l, new, tuple(0.99 * t + 0.01 * n for t, n in zip(target, new))


def _sac(*a):
    ap, q1p, q2p, t1p, t2p = a[0:4], a[4:8], a[8:12], a[12:16], a[16:20]
    log_alpha, obs, act, rew, done, nobs, eps, neps = a[20:]
    alpha = jnp.exp(log_alpha)

    def actor(p, o, e):
        out = jax.nn.relu(o @ p[0] + p[1]) @ p[2] + p[3]
        mu, ls = jnp.split(out, 2, -1)
        ls = -5.0 + 3.5 * (jnp.tanh(ls) + 1.0)
        a = jnp.tanh(mu + jnp.exp(ls) * e)
        logp = jnp.sum(-0.5 * e * e - ls - 0.5 * np.log(2 * np.pi), -1) - jnp.sum(jnp.log(1 - a * a + 1e-6), -1)
        return a, logp

    def qf(p, o, a_):
        return (jax.nn.relu(jnp.concatenate([o, a_], -1) @ p[0] + p[1]) @ p[2] + p[3])[..., 0]
    sg = jax.lax.stop_gradient
    na, nlogp = actor(ap, nobs, neps)
    tq = jnp.minimum(qf(t1p, nobs, na), qf(t2p, nobs, na)) - alpha * nlogp
    y = sg(rew + 0.99 * (1 - done) * tq)

    def closs(qs):
        return jnp.mean((qf(qs[0], obs, act) - y) ** 2 + (qf(qs[1], obs, act) - y) ** 2)

    def aloss(p):
        a_, logp = actor(p, obs, eps)
        return jnp.mean(sg(alpha) * logp - jnp.minimum(qf(q1p, obs, a_), qf(q2p, obs, a_))), logp
    lc, gq = jax.value_and_grad(closs)((q1p, q2p))
    (la, logp), ga = jax.value_and_grad(aloss, has_aux=True)(ap)
    lal, gal = jax.value_and_grad(lambda la_: jnp.mean(-la_ * sg(logp - 4.0)))(log_alpha)
    q1n, q2n = _sgd(q1p, gq[0], 0.01), _sgd(q2p, gq[1], 0.01)
    pol = lambda t, n: tuple(0.995 * ti + 0.005 * ni for ti, ni in zip(t, n))
    return (lc, la, lal, _sgd(ap, ga, 0.01), q1n, q2n, pol(t1p, q1n), pol(t2p, q2n), log_alpha - 0.01 * gal)


def _sac_specs_args():
    col, row = P(None, "model"), P("model", None)
    net = [col, P("model"), row, REP]
    specs = net * 5 + [REP] + [P("data")] * 7

    def args():
        out, seed = [], 9000
        for i, (din, dout) in enumerate([(12, 8)] + [(16, 1)] * 4):
            s = 9000 + 10 * (i if i < 3 else i - 2)        # the targets start as copies of the critics
            out += [_rand((din, 64), s, scale=din ** -0.5), _rand((64,), s + 1, scale=0.02),
                    _rand((64, dout), s + 2, scale=0.125), _rand((dout,), s + 3, scale=0.02)]
            if i >= 3:
                out[-4] = out[-4] + _rand((din, 64), s + 5, scale=0.01)
        seed = 9060
        return out + [np.float32(-1.0), _rand((16, 12), seed), np.tanh(_rand((16, 4), seed + 1)),
                      _rand((16,), seed + 2), (np.arange(16) % 5 == 0).astype(np.float32), _rand((16, 12), seed + 3),
                      _rand((16, 4), seed + 4), _rand((16, 4), seed + 5)]
    return specs, args


def _vtrace(w1, w2, wv, obs, beh_logits, actions, rewards, discounts, boot_obs):
    sg = jax.lax.stop_gradient

    def loss(p):
        w1, w2, wv = p
        h = jnp.tanh(obs @ w1)
        lp = jax.nn.log_softmax(h @ w2, -1)
        values = (h @ wv)[..., 0]
        boot = (jnp.tanh(boot_obs @ w1) @ wv)[..., 0]
        tlp = jnp.take_along_axis(lp, actions[..., None], -1)[..., 0]
        blp = jnp.take_along_axis(jax.nn.log_softmax(beh_logits, -1), actions[..., None], -1)[..., 0]
        rho = jnp.exp(sg(tlp) - blp)
        rho_c, cs = jnp.minimum(1.0, rho), jnp.minimum(1.0, rho)
        v = sg(values)
        v_next = jnp.concatenate([v[1:], sg(boot)[None]], 0)
        deltas = rho_c * (rewards + discounts * v_next - v)

        def back(acc, x):
            d, dc, c = x
            acc = d + dc * c * acc
            return acc, acc
        _, vs_minus_v = jax.lax.scan(back, jnp.zeros_like(boot), (deltas, discounts, cs), reverse=True)
        vs = vs_minus_v + v
        vs_next = jnp.concatenate([vs[1:], sg(boot)[None]], 0)
        adv = rho_c * (rewards + discounts * vs_next - v)
        pg = -jnp.mean(tlp * adv)
        bl = 0.5 * jnp.mean((vs - values) ** 2)
        ent = -jnp.mean(jnp.sum(jnp.exp(lp) * lp, -1))
        return pg + 0.5 * bl - 0.01 * ent
    l, g = jax.value_and_grad(loss)((w1, w2, wv))
    return l, g


# ==== flows and generative training steps ========================================================
def _checker(h, w, parity):
    m = ((np.arange(h)[:, None] + np.arange(w)[None, :] + parity) % 2).astype(np.float32)
    return m[None, :, :, None]


def _realnvp(mesh):
    def couple(x, mask, p):
        w1, b1, w2, b2 = p
        h = jax.nn.relu(_conv(x * mask, w1) + b1)
        st = _conv(h, w2) + b2
        c = x.shape[-1]
        s, t = jnp.tanh(st[..., :c]), st[..., c:]
        y = x * mask + (1 - mask) * (x * jnp.exp(s) + t)
        return y, jnp.sum((1 - mask) * s, (1, 2, 3))

    def f(*a):
        p, x = a[:12], a[12]

        def loss(p):
            b, hh, ww, c = x.shape
            y, ld1 = couple(x, _checker(hh, ww, 0), p[0:4])
            y, ld2 = couple(y, _checker(hh, ww, 1), p[4:8])
            y = y.reshape(b, hh // 2, 2, ww // 2, 2, c).transpose(0, 1, 3, 2, 4, 5).reshape(b, hh // 2, ww // 2, 4 * c)
            y = _wsc(mesh, y, P("data", "model"))
            w1, b1, w2, b2 = p[8:12]
            ya, yb = y[..., :2 * c], y[..., 2 * c:]
            st = _conv(jax.nn.relu(_conv(ya, w1) + b1), w2) + b2
            s, t = jnp.tanh(st[..., :2 * c]), st[..., 2 * c:]
            z = jnp.concatenate([ya, yb * jnp.exp(s) + t], -1)
            logdet = ld1 + ld2 + jnp.sum(s, (1, 2, 3))
            dim = hh * ww * c
            nll = 0.5 * jnp.sum(z * z, (1, 2, 3)) + 0.5 * dim * np.log(2 * np.pi) - logdet
            return jnp.mean(nll) / (dim * np.log(2.0))
        l, g = jax.value_and_grad(loss)(p)
        return l, _sgd(p, g, 0.05)
    return f


_RNVP = [((3, 3, 2, 16), REP, "w"), ((16,), REP, "b"), ((3, 3, 16, 4), REP, "s"), ((4,), REP, "b")] * 2 + \
        [((3, 3, 4, 16), REP, "w"), ((16,), REP, "b"), ((3, 3, 16, 8), REP, "s"), ((8,), REP, "b")]


def _rflow(w1, wt, b1, w2, b2, x1, key, z):
    k1, k2 = jax.random.split(key)
    x0 = jax.random.normal(k1, x1.shape)
    t = jax.random.uniform(k2, (x1.shape[0],))
    net = lambda p, x, tt: _eps_net(x, tt * 100.0, *p)

    def loss(p):
        xt = (1 - t[:, None]) * x0 + t[:, None] * x1
        return jnp.mean((net(p, xt, t) - (x1 - x0)) ** 2)
    p = (w1, wt, b1, w2, b2)
    l, g = jax.value_and_grad(loss)(p)
    p = _sgd(p, g, 0.05)
    xs = jax.lax.fori_loop(0, 8, lambda i, x: x + net(p, x, jnp.full((x.shape[0],), i / 8.0)) / 8.0, z)
    return l, p, xs


def _dsm(w1, wt, b1, w2, b2, x, key, z0):
    sig_np = np.geomspace(1.0, 0.05, 10).astype(np.float32)
    sigmas = jnp.asarray(sig_np)
    k1, k2, k3 = jax.random.split(key, 3)
    idx = jax.random.randint(k1, (x.shape[0],), 0, 10)
    sig = sigmas[idx][:, None]
    n = jax.random.normal(k2, x.shape)
    score = lambda p, xx, i, s: _eps_net(xx, i, *p) / s

    def loss(p):
        return 0.5 * jnp.mean(jnp.sum((sig * score(p, x + sig * n, idx, sig) + n) ** 2, -1))
    p = (w1, wt, b1, w2, b2)
    l, g = jax.value_and_grad(loss)(p)
    p = _sgd(p, g, 0.02)

    def outer(j, xx):
        lvl = 3 * j
        s = sigmas[lvl]
        a_ = 0.1 * s * s

        def inner(k, xx):
            nz = jax.random.normal(jax.random.fold_in(k3, j * 3 + k), xx.shape)
            return xx + 0.5 * a_ * score(p, xx, jnp.full((xx.shape[0],), lvl), s) + jnp.sqrt(a_) * nz
        return jax.lax.fori_loop(0, 3, inner, xx)
    return l, p, jax.lax.fori_loop(0, 4, outer, z0)


# ==== NeRF: positional encoding, stratified samples by key, volume rendering cumprod, 100 rays on 8 =
def _nerf(mesh):
    def f(w1, b1, w2, b2, w3, b3, rays_o, rays_d, rgb, key):
        o = _wsc(mesh, rays_o, P("x", None))
        d = _wsc(mesh, rays_d, P("x", None))
        tgt = _wsc(mesh, rgb, P("x", None))
        r, n = rays_o.shape[0], 16
        edges = jnp.linspace(2.0, 6.0, n + 1)
        u = _wsc(mesh, jax.random.uniform(key, (r, n)), P("x", None))
        t = edges[:-1] + u * (edges[1:] - edges[:-1])
        pts = o[:, None] + t[..., None] * d[:, None]
        xb = pts[..., None] * (2.0 ** jnp.arange(4))
        enc = jnp.concatenate([pts, jnp.sin(xb).reshape(r, n, 12), jnp.cos(xb).reshape(r, n, 12)], -1)

        def loss(p):
            w1, b1, w2, b2, w3, b3 = p
            h = jax.nn.relu(jax.nn.relu(enc @ w1 + b1) @ w2 + b2)
            out = h @ w3 + b3
            sigma = jax.nn.softplus(out[..., 0] - 1.0)
            c = jax.nn.sigmoid(out[..., 1:])
            delta = jnp.concatenate([t[:, 1:] - t[:, :-1], jnp.full((r, 1), 1e10)], -1)
            alpha = 1 - jnp.exp(-sigma * delta)
            trans = jnp.cumprod(jnp.concatenate([jnp.ones((r, 1)), 1 - alpha + 1e-10], -1), -1)[:, :-1]
            w = alpha * trans
            col = jnp.sum(w[..., None] * c, 1)
            return jnp.mean((col - tgt) ** 2), (jnp.sum(w * t, 1), jnp.sum(w, 1))
        (l, aux), g = jax.value_and_grad(loss, has_aux=True)((w1, b1, w2, b2, w3, b3))
        return l, aux, g
    return f


# ==== graphs: GraphSAGE (segment max + mean) with edges over data; GIN over 100 nodes on 8 =========
def _sage(mesh):
    def f(ws1, wm1, wa1, ws2, wm2, wa2, wc, x, src, dst, gid, lab):
        nn_, e = x.shape[0], src.shape[0]
        cnt = jax.ops.segment_sum(jnp.ones((e,)), dst, nn_)
        gcnt = jax.ops.segment_sum(jnp.ones((nn_,)), gid, 4)

        def layer(h, ws, wm, wa):
            msg = h[src]
            mx = jax.ops.segment_max(msg, dst, nn_)
            mx = jnp.where(jnp.isfinite(mx), mx, 0.0)
            mean = jax.ops.segment_sum(msg, dst, nn_) / jnp.maximum(cnt, 1.0)[:, None]
            h = jax.nn.relu(h @ ws + mx @ wm + mean @ wa)
            return h * jax.lax.rsqrt(jnp.sum(h * h, -1, keepdims=True) + 1e-6)

        def loss(p):
            h = layer(x, *p[0:3])
            h = _wsc(mesh, h, P(None, "model"))
            h = layer(h, *p[3:6])
            g = jax.ops.segment_sum(h, gid, 4) / gcnt[:, None]
            return _xent_ids(g @ p[6] * 4.0, lab)
        l, g = jax.value_and_grad(loss)((ws1, wm1, wa1, ws2, wm2, wa2, wc))
        return l, g
    return f


def _edges(n, e, seed):
    rng = np.random.default_rng(seed)
    flat = rng.choice(n * n, e, replace=False)
    return (flat // n).astype(np.int32), (flat % n).astype(np.int32)


def _sage_args():
    src, dst = _edges(64, 256, 9200)
    return ([_rand((32, 32), 9201 + i, scale=32 ** -0.5) for i in range(6)] + [_rand((32, 3), 9207, scale=0.18),
            _rand((64, 32), 9208), src, dst, np.repeat(np.arange(4), 16).astype(np.int32), np.array([0, 2, 1, 2], np.int32)])


def _gin(mesh):
    def f(w1a, w1b, w2a, w2b, eps, wc, x, src, dst, gid, lab):
        nn_ = x.shape[0]
        x = _wsc(mesh, x, P("x", None))
        gcnt = jax.ops.segment_sum(jnp.ones((nn_,)), gid, 5)

        def layer(h, wa, wb, e):
            agg = jax.ops.segment_sum(h[src], dst, nn_)
            h = jax.nn.relu(((1.0 + e) * h + agg) @ wa) @ wb
            return _wsc(mesh, h, P("x", None))

        def loss(p):
            h = layer(x, p[0], p[1], p[4][0])
            h = layer(h, p[2], p[3], p[4][1])
            g = jax.ops.segment_sum(h, gid, 5) / gcnt[:, None]
            return _xent_ids(g @ p[5], lab)
        return jax.value_and_grad(loss)((w1a, w1b, w2a, w2b, eps, wc))
    return f


def _gin_args():
    src, dst = _edges(100, 400, 9220)
    return ([_rand((16, 32), 9221, scale=0.1), _rand((32, 16), 9222, scale=0.18), _rand((16, 32), 9223, scale=0.1),
             _rand((32, 16), 9224, scale=0.18), _rand((2,), 9225, scale=0.1),
             _rand((16, 3), 9226, scale=0.25), _rand((100, 16), 9227), src, dst,
             np.repeat(np.arange(5), 20).astype(np.int32), np.array([0, 1, 2, 1, 0], np.int32)])


# ==== Set Transformer: ISAB (inducing points) + PMA over a set dim sharded on model =============
def _set_tf(mesh):
    def mab(q, k, p):
        wq, wk, wv, wo, w1, w2 = p
        h = _ln(q + _mha(q, k, wq, wk, wv, wo, 4))
        return _ln(h + jax.nn.relu(h @ w1) @ w2)

    def f(*a):
        p, x, y = a[:22], a[22], a[23]

        def loss(p):
            b = x.shape[0]
            xe = _wsc(mesh, x @ p[0], P("data", "model", None))
            ind = jnp.broadcast_to(p[1][None], (b,) + p[1].shape)
            hh = mab(ind, xe, p[2:8])
            z = _wsc(mesh, mab(xe, hh, p[8:14]), P("data", "model", None))
            s = jnp.broadcast_to(p[20][None], (b,) + p[20].shape)
            out = mab(s, z, p[14:20])[:, 0] @ p[21]
            return jnp.mean((out[:, 0] - y) ** 2)
        return jax.value_and_grad(loss)(p)
    return f


_SETTF = ([((16, 32), REP, "w"), ((8, 32), REP, "e")]
          + [((32, 32), REP, "w")] * 4 + [((32, 64), REP, "w"), ((64, 32), REP, "w")]
          + [((32, 32), REP, "w")] * 4 + [((32, 64), REP, "w"), ((64, 32), REP, "w")]
          + [((32, 32), REP, "w")] * 4 + [((32, 64), REP, "w"), ((64, 32), REP, "w")]
          + [((1, 32), REP, "e"), ((32, 1), REP, "w")])


# ==== AlphaZero-style policy / value net: channel-sharded conv tower, illegal-move mask ==========
def _alphazero(*a):
    p, board, legal, pi, z = a[:10], a[10], a[11], a[12], a[13]

    def loss(p):
        c0, r1a, r1b, r2a, r2b, pc, wp, vc, wv1, wv2 = p
        h = jax.nn.relu(_conv(board, c0))
        h = jax.nn.relu(h + _conv(jax.nn.relu(_conv(h, r1a)), r1b))
        h = jax.nn.relu(h + _conv(jax.nn.relu(_conv(h, r2a)), r2b))
        b = board.shape[0]
        logits = jax.nn.relu(_conv(h, pc)).reshape(b, -1) @ wp
        logits = jnp.where(legal > 0, logits, -1e9)
        v = jnp.tanh(jax.nn.relu(jax.nn.relu(_conv(h, vc)).reshape(b, -1) @ wv1) @ wv2)[:, 0]
        pol = -jnp.mean(jnp.sum(pi * jax.nn.log_softmax(logits, -1), -1))
        l2 = sum(jnp.sum(w * w) for w in p)
        return jnp.mean((z - v) ** 2) + pol + 1e-4 * l2
    l, g = jax.value_and_grad(loss)(p)
    return l, _sgd(p, g, 0.02)


_AZ = ([((3, 3, 4, 32), P(None, None, None, "model"), "w")] + [((3, 3, 32, 32), P(None, None, None, "model"), "s")] * 4
       + [((1, 1, 32, 2), REP, "w"), ((128, 65), REP, "w"), ((1, 1, 32, 1), REP, "w"), ((64, 32), REP, "w"),
          ((32, 1), REP, "w")])


def _az_args():
    _, make = _layout(_AZ)
    rng = np.random.default_rng(9300)
    legal = (rng.random((16, 65)) < 0.4).astype(np.float32)
    legal[:, 64] = 1.0
    pi = rng.random((16, 65)).astype(np.float32) * legal
    pi /= pi.sum(-1, keepdims=True)
    return make(9301) + [_rand((16, 8, 8, 4), 9320), legal, pi.astype(np.float32),
                         np.tanh(_rand((16,), 9321)).astype(np.float32)]


# ==== ViT with 65 tokens (64 patches + cls) sequence-parallel over 8 (uneven) =====================
def _vit65(mesh):
    def f(*a):
        p, img, lab = a[:14], a[14], a[15]

        def loss(p):
            pw, cls, pos, wq, wk, wv, wo, w1, w2, g1, g2, gf, wh, bh = p
            b = img.shape[0]
            x = _conv(img, pw, stride=4, pad="VALID").reshape(b, 64, -1)
            x = jnp.concatenate([jnp.broadcast_to(cls, (b, 1, x.shape[-1])), x], 1) + pos
            sp = P(None, "x", None)
            x = _wsc(mesh, x, sp)
            x = _wsc(mesh, x + _mha(_ln(x) * g1, _ln(x) * g1, wq, wk, wv, wo, 4), sp)
            x = _wsc(mesh, x + jax.nn.gelu(_ln(x) * g2 @ w1) @ w2, sp)
            return _xent_ids((_ln(x[:, 0]) * gf) @ wh + bh, lab)
        return jax.value_and_grad(loss)(p)
    return f


_VIT65 = [((4, 4, 3, 32), REP, "w"), ((1, 1, 32), REP, "s"), ((1, 65, 32), REP, "s")] + [((32, 32), REP, "w")] * 4 + \
         [((32, 64), REP, "w"), ((64, 32), REP, "w"), ((32,), REP, "g"), ((32,), REP, "g"), ((32,), REP, "g"),
          ((32, 10), REP, "w"), ((10,), REP, "b")]


# ==== DDP in shard_map: SyncBatchNorm by pmean of the statistics, pmean'd grads, SGD ==============
def _syncbn_ddp(mesh):
    def body(c1, g, b, c2, wh, x, lab):
        def loss(p):
            c1, g, b, c2, wh = p
            h = _conv(x, c1)
            m = jax.lax.pmean(h.mean((0, 1, 2)), "x")
            v = jax.lax.pmean(((h - m) ** 2).mean((0, 1, 2)), "x")
            h = jax.nn.relu((h - m) * jax.lax.rsqrt(v + 1e-5) * g + b)
            h = jax.nn.relu(_conv(h, c2))
            return _xent_ids(h.mean((1, 2)) @ wh, lab)
        p = (c1, g, b, c2, wh)
        l, gr = jax.value_and_grad(loss)(p)
        gr = jax.lax.pmean(gr, "x")
        return jax.lax.pmean(l, "x"), _sgd(p, gr, 0.1)
    return _smap(mesh, body, (REP,) * 5 + (P("x"), P("x")), (REP, (REP,) * 5), check_vma=False)


# ==== embeddings / recommenders ===================================================================
def _w2v(win, wout, center, ctx, key):
    neg = jax.random.randint(key, (center.shape[0], 5), 0, win.shape[0])

    def loss(p):
        win, wout = p
        u, v, n = win[center], wout[ctx], wout[neg]
        pos = jax.nn.log_sigmoid(jnp.sum(u * v, -1))
        ng = jnp.sum(jax.nn.log_sigmoid(-jnp.einsum("bd,bkd->bk", u, n)), -1)
        return -jnp.mean(pos + ng)
    l, g = jax.value_and_grad(loss)((win, wout))
    return l, _sgd((win, wout), g, 1.0)


def _two_tower(utab, itab, uw1, uw2, iw1, iw2, logq, hist, items):
    def nrm(v):
        return v * jax.lax.rsqrt(jnp.sum(v * v, -1, keepdims=True) + 1e-6)

    def loss(p):
        utab, itab, uw1, uw2, iw1, iw2 = p
        m = (hist > 0).astype(jnp.float32)
        ue = jnp.sum(utab[hist] * m[..., None], 1) / jnp.maximum(jnp.sum(m, 1), 1.0)[:, None]
        u = nrm(jax.nn.relu(ue @ uw1) @ uw2)
        i = nrm(jax.nn.relu(itab[items] @ iw1) @ iw2)
        logits = u @ i.T / 0.1 - logq[items][None, :]
        return _xent_ids(logits, jnp.arange(items.shape[0]))
    p = (utab, itab, uw1, uw2, iw1, iw2)
    l, g = jax.value_and_grad(loss)(p)
    return l, _sgd(p, g, 0.5)


def _dcn(tabs, w0, b0, w1, b1, d1, d2, wo, dense, sparse, y):
    def loss(p):
        tabs, w0, b0, w1, b1, d1, d2, wo = p
        b = dense.shape[0]
        emb = tabs[jnp.arange(4)[None, :], sparse]                       # [B, 4, 8]
        x0 = jnp.concatenate([dense, emb.reshape(b, -1)], -1)
        x1 = x0 * (x0 @ w0 + b0) + x0
        x2 = x0 * (x1 @ w1 + b1) + x1
        deep = jax.nn.relu(jax.nn.relu(x0 @ d1) @ d2)
        logit = (jnp.concatenate([x2, deep], -1) @ wo)[:, 0]
        return jnp.mean(jax.nn.softplus(logit) - y * logit)
    p = (tabs, w0, b0, w1, b1, d1, d2, wo)
    l, g = jax.value_and_grad(loss)(p)
    return l, _sgd(p, g, 0.1)


# ==== contrastive: MoCo with a momentum encoder and a queue, SigLIP (2-D sharded logits / ring) ====
def _moco(q1, q2, k1, k2, queue, ptr, x1, x2):
    def enc(p, x):
        h = jax.nn.relu(x @ p[0]) @ p[1]
        return h * jax.lax.rsqrt(jnp.sum(h * h, -1, keepdims=True) + 1e-6)
    kk = jax.lax.stop_gradient(enc((k1, k2), x2))

    def loss(p):
        q = enc(p, x1)
        logits = jnp.concatenate([jnp.sum(q * kk, -1, keepdims=True), q @ queue.T], -1) / 0.2
        return _xent_ids(logits, jnp.zeros((q.shape[0],), jnp.int32))
    l, g = jax.value_and_grad(loss)((q1, q2))
    nq = _sgd((q1, q2), g, 0.1)
    nk = tuple(0.99 * k + 0.01 * q for k, q in zip((k1, k2), nq))
    queue = jax.lax.dynamic_update_slice(queue, kk, (ptr, 0))
    return l, nq, nk, queue, (ptr + x1.shape[0]) % queue.shape[0]


def _nrm(v):
    return v * jax.lax.rsqrt(jnp.sum(v * v, -1, keepdims=True) + 1e-6)


def _siglip(wi, wt, tp, bias, img, txt):
    def loss(p):
        wi, wt, tp, bias = p
        zi, zt = _nrm(img @ wi), _nrm(txt @ wt)
        logits = zi @ zt.T * jnp.exp(tp) + bias
        lab = 2.0 * jnp.eye(img.shape[0]) - 1.0
        return -jnp.sum(jax.nn.log_sigmoid(lab * logits)) / img.shape[0]
    return jax.value_and_grad(loss)((wi, wt, tp, bias))


def _siglip_ring(mesh):
    n = mesh.shape["x"]

    def body(wi, wt, tp, bias, img, txt):
        def loss(p):
            wi, wt, tp, bias = p
            zi, zt = _nrm(img @ wi), _nrm(txt @ wt)
            tot = 0.0
            for k in range(n):
                logits = zi @ zt.T * jnp.exp(tp) + bias
                lab = 2.0 * jnp.eye(zi.shape[0]) - 1.0 if k == 0 else -jnp.ones_like(logits)
                tot = tot - jnp.sum(jax.nn.log_sigmoid(lab * logits))
                if k < n - 1:
                    zt = jax.lax.ppermute(zt, "x", [(i, (i + 1) % n) for i in range(n)])
            return jax.lax.psum(tot, "x") / (img.shape[0] * n)
        return jax.value_and_grad(loss)((wi, wt, tp, bias))
    return _smap(mesh, body, (REP,) * 4 + (P("x"), P("x")), (REP, (REP,) * 4))


# ==== VQ-VAE: nearest code by argmin over a code-sharded codebook, straight-through, EMA update ===
def _vqvae(e1, e2, d1, d2, codebook, ema_cnt, ema_sum, x):
    sg = jax.lax.stop_gradient

    def loss(p):
        e1, e2, d1, d2 = p
        z = jax.nn.relu(x @ e1) @ e2
        dist = jnp.sum(z * z, -1, keepdims=True) - 2 * z @ codebook.T + jnp.sum(codebook ** 2, -1)[None]
        idx = jnp.argmin(dist, -1)
        zq = codebook[idx]
        xr = jax.nn.relu((z + sg(zq - z)) @ d1) @ d2
        return jnp.mean((xr - x) ** 2) + 0.25 * jnp.mean((z - sg(zq)) ** 2), (z, idx)
    p = (e1, e2, d1, d2)
    (l, (z, idx)), g = jax.value_and_grad(loss, has_aux=True)(p)
    k = codebook.shape[0]
    oh = jax.nn.one_hot(idx, k)
    cnt = 0.99 * ema_cnt + 0.01 * oh.sum(0)
    sm = 0.99 * ema_sum + 0.01 * oh.T @ z
    tot = cnt.sum()
    cnt_s = (cnt + 1e-5) / (tot + k * 1e-5) * tot
    return l, _sgd(p, g, 0.05), cnt, sm, sm / cnt_s[:, None], idx


# ==== the list ====================================================================================
def probe8a_programs():
    ps = []

    def add(name, *a, **kw):
        ps.append(Program("p8a_" + name, *a, **kw))

    r = _rand
    # ---- vision
    vs, va = _vit_specs_args()
    add("vit_adamw_clip_24", "ViT step: stride-4 patch conv, cls + pos, pre-LN block (fused qkv over model), AdamW + decay mask + warmup + clipping, 2 x 4",
        _plain_fn(_vit_adamw), M24, DM, vs, None, va)
    cs, ca = _cnx_specs_args()
    add("convnext_sd_momentum_42", "ConvNeXt: 2x2 stem, 2 blocks (depthwise 7x7 groups=C, LN, 4x MLP, layer scale, stochastic depth by key), momentum SGD, 4 x 2",
        _convnext, M42, DM, cs, None, ca)
    us, ua = _unet_specs_args()
    add("unet_ddpm_spatial_24", "diffusion U-Net step: sinusoidal t-emb, GroupNorm + SiLU resblocks, stride-2 down, nearest resize up, skip concat; batch over data, height over model",
        _unet_step, M24, DM, us, None, ua)
    add("ddim_sampler_fori_24", "DDIM sampler: 10 steps in fori_loop, eps-MLP with time embedding (hidden over model), alphas gathered at traced t",
        _ddim, M24, DM, [P(None, "model"), P(None, "model"), P("model"), P("model", None), REP, P("data"), REP], None,
        lambda: _eps_args(8260, 64, 128) + [r((16, 64), 8266), _alphas(100)])
    add("ddpm_ancestral_key_8", "DDPM ancestral sampler: 20 steps in fori_loop, noise by normal(fold_in(key, i)), batch over 8",
        _plain_fn(_ddpm_ancestral), M8, ("x",), [REP] * 5 + [P("x"), REP], None,
        lambda: _eps_args(8270, 16, 64) + [r((32, 16), 8276), np.array([0, 8277], np.uint32)])
    sws, swm = _layout(_swin_entries())
    add("swin_shifted_44", "Swin: two window-attention blocks (rel-pos bias table gather, roll-shifted windows with mask), H over x, W over y of 4 x 4, grads",
        _swin, M44, ("x", "y"), sws + [P(None, "x", "y"), P(None, "x", "y")], None,
        lambda: swm(8400) + [r((2, 16, 16, SWIN_D), 8430), r((2, 16, 16, SWIN_D), 8431)])
    mxs, mxm = _layout(_mixer_entries(16, 32, P("model", None), P(None, "model"), P("model", None)))
    add("mixer_token_sharded_24", "MLP-Mixer: token-mixing MLP on swapaxes with tokens constrained over model, channel MLP TP, 2 layers, SGD, 2 x 4",
        _mixer, M24, DM, mxs + [P("data"), P("data")], None,
        lambda: mxm(8450) + [r((8, 16, 32), 8470), _ids((8,), 10, 8471)])
    m49s, m49m = _layout(_mixer_entries(49, 32, REP, REP, REP))
    add("mixer_49_tokens_8", "MLP-Mixer on 28x28 images: 49 patch tokens constrained over 8 (uneven), token / channel MLPs, grads",
        _mixer49, M8, ("x",), m49s + [P("x"), REP, P("x")], None,
        lambda: m49m(8480) + [r((8, 28, 28), 8500), r((16, 32), 8501, scale=0.25), _ids((8,), 10, 8502)],
        quick=True)
    ms, mm = _layout(_MAE)
    add("mae_argsort_mask_24", "MAE: noise argsort masking (keep 25%), take_along_axis visible gather, mask tokens + unshuffle, norm-pix masked MSE, SGD, 2 x 4",
        _plain_fn(_mae), M24, DM, ms + [P("data"), REP], None,
        lambda: mm(8510) + [r((8, 16, 48), 8530), np.array([0, 8531], np.uint32)])
    add("mbconv_se_bn_8", "EfficientNet MBConv: expand, BN (batch stats) + swish, depthwise 3x3, squeeze-excite, project, residual; running stats, batch over 8",
        _plain_fn(_mbconv), M8, ("x",), [REP] * 19 + [P("x"), P("x")], None, _mbc_args)
    pns, pnm = _layout(_PN)
    add("pointnet_tnet_24", "PointNet: T-net 3x3 transform, shared MLPs, max-pool over points sharded on model, orthogonality reg, SGD, 2 x 4",
        _pointnet, M24, DM, pns + [P("data", "model"), P("data")], None,
        lambda: pnm(8550) + [r((4, 128, 3), 8570), _ids((4,), 5, 8571)])
    rns, rnm = _layout(_RN)
    add("resnet_bn_batch_height_44", "ResNet basic block with BatchNorm over batch (x=4) and height (y=4), running stats, SGD, 16 devices",
        _plain_fn(_resnet_bn), M44, ("x", "y"), rns + [REP] * 4 + [P("x", "y"), P("x")], None,
        lambda: rnm(8580) + [r((8,), 8590, scale=0.1), 1 + np.abs(r((8,), 8591, scale=0.1)),
                             r((8,), 8592, scale=0.1), 1 + np.abs(r((8,), 8593, scale=0.1)),
                             r((8, 16, 16, 8), 8594), _ids((8,), 10, 8595)])
    # ---- sequence models
    col, row = P(None, "model"), P("model", None)
    add("retnet_three_forms_24", "RetNet retention (4 heads, per-head decays): parallel form + grads, recurrent scan and chunkwise scan forms, heads over model",
        _retnet, M24, DM, [col, col, col, col, row, P("data"), P("data")], None,
        lambda: [r((32, 32), 8600 + i, scale=32 ** -0.5) for i in range(5)] + [r((4, 32, 32), 8605), r((4, 32, 32), 8606)])
    add("linear_attn_cumsum_seq_24", "causal linear attention (elu+1) by cumsum of k v^T along the sequence constrained over model, grads",
        _linattn, M24, DM, [REP] * 4 + [P("data"), P("data")], None,
        lambda: [r((32, 32), 8610 + i, scale=32 ** -0.5) for i in range(4)] + [r((4, 64, 32), 8614), r((4, 64, 32), 8615)])
    add("s4d_fft_conv_24", "S4D: complex diagonal SSM kernel by Vandermonde, rfft / irfft convolution over time, channels over model, grads",
        _plain_fn(_s4d), M24, DM, [P("model"), P("model"), P("model"), P("model"), P("model"), P("model"), row,
                                   P("data", None, "model"), P("data")], None, _s4d_args)
    txs, txm = _layout(_TXL)
    add("transformer_xl_mem_24", "Transformer-XL: scan over 4 segments, 2 layers with stop_gradient memories, relative bias, grads, 2 x 4",
        _txl, M24, DM, txs + [P("data"), P("data")], None, lambda: txm(8620) + [r((4, 32, 32), 8640), r((4, 32, 32), 8641)])
    s2s, s2m = _layout(_S2S)
    add("seq2seq_bahdanau_42", "seq2seq: LSTM encoder scan, LSTM decoder scan with additive attention, teacher forcing, gates over model, 4 x 2",
        _plain_fn(_s2s), M42, DM, s2s + [P("data"), P("data"), P("data")], None,
        lambda: s2m(8650) + [_ids((8, 12), 64, 8665), _ids((8, 10), 64, 8666), _ids((8, 10), 64, 8667)])
    rss, rsm = _layout(_RSSM)
    add("rssm_dreamer_8", "Dreamer RSSM: GRU + stochastic latent in scan, KL balancing, free nats, recon, batch over 8",
        _plain_fn(_rssm), M8, ("x",), rss + [P("x"), P("x"), P("x")], None,
        lambda: rsm(8670) + [r((16, 8, 24), 8680), r((16, 8, 4), 8681), r((16, 8, 16), 8682)])
    gs, ga = _gpt2_specs_args()
    add("gpt2_adamw_cosine_222", "GPT-2: tied embedding, scanned layers (split qkv), activations on (data, fsdp), params fsdp x tensor, AdamW + cosine + clip, 2x2x2",
        _gpt2, M222, DFT, gs, None, ga)
    llg = [s for _, s, _ in _LLG]
    add("llama_gqa_generate_24", "Llama greedy generation: prefill, while_loop (EOS stop) with GQA + RoPE + KV cache DUS on (data, kv heads), 2 x 4",
        _llama_gen, M24, DM, llg + [col, REP, P("data")], None, _llg_args)
    add("qlora_int8_bf16_24", "QLoRA: int8 base weights x per-channel scales dequantised to bf16, LoRA adapters (col / row), AdamW on adapters, 2 x 4",
        _plain_fn(_qlora), M24, DM, [col, P("model"), row, REP] + [REP, col, row, REP] * 3 + [REP, P("data"), P("data")],
        None, _qlora_args, dtype="bf16")
    add("int4_packed_group_mlp_8", "int4 weights packed 2 / uint8 (shift + mask unpack), group-32 scales and zeros; layer 1 K-sharded, layer 2 N-sharded, 8",
        _plain_fn(_int4_mlp), M8, ("x",), [P("x", None)] * 3 + [P(None, "x")] * 3 + [REP], None, _int4_args)
    add("distill_kl_vocab_24", "distillation: frozen teacher (stop_gradient), T=2 KL + hard CE over a vocab 256 on model, student SGD, 2 x 4",
        _plain_fn(_distill), M24, DM, [col, col, col, col, P("data"), P("data")], None,
        lambda: [r((32, 64), 8860, scale=0.18), r((64, 256), 8861, scale=0.125), r((32, 128), 8862, scale=0.18),
                 r((128, 256), 8863, scale=0.09), r((8, 16, 32), 8864), _ids((8, 16), 256, 8865)])
    add("longformer_window_24", "Longformer: sliding window by prev / cur / next chunks (pad + concat) and a global token, seq over model, grads",
        _longformer, M24, DM, [REP] * 4 + [P("data"), P("data")], None,
        lambda: [r((32, 32), 8870 + i, scale=32 ** -0.5) for i in range(4)] + [r((2, 64, 32), 8874), r((2, 64, 32), 8875)])
    add("electra_rtd_24", "ELECTRA: generator MLM (tied vocab on model), categorical sample by key, discriminator BCE, grads, 2 x 4",
        _plain_fn(_electra), M24, DM, [row, col, row, col, row, REP, P("data"), P("data"), REP], None,
        lambda: [r((128, 32), 8880), r((32, 64), 8881, scale=0.18), r((64, 32), 8882, scale=0.125),
                 r((32, 64), 8883, scale=0.18), r((64, 32), 8884, scale=0.125), r((32, 1), 8885, scale=0.18),
                 _ids((8, 16), 128, 8886), (np.random.default_rng(8887).random((8, 16)) < 0.25).astype(np.float32),
                 np.array([0, 8888], np.uint32)])
    # ---- RL
    add("double_dqn_8", "double DQN: online argmax on next obs, target-net gather, Huber loss, terminal mask, SGD + Polyak target, batch over 8",
        _plain_fn(_ddqn), M8, ("x",), [REP] * 8 + [P("x")] * 5, None,
        lambda: [r((16, 64), 9100, scale=0.25), r((64,), 9101, scale=0.02), r((64, 6), 9102, scale=0.125),
                 r((6,), 9103, scale=0.02), r((16, 64), 9104, scale=0.25), r((64,), 9105, scale=0.02),
                 r((64, 6), 9106, scale=0.125), r((6,), 9107, scale=0.02), r((32, 16), 9108), _ids((32,), 6, 9109),
                 r((32,), 9110), (np.arange(32) % 7 == 0).astype(np.float32), r((32, 16), 9111)])
    ss, sa = _sac_specs_args()
    add("sac_step_24", "SAC: tanh-squashed Gaussian actor (reparam eps), twin critics + target critics, entropy temperature, Polyak, hidden over model",
        _plain_fn(_sac), M24, DM, ss, None, sa)
    add("vtrace_impala_8", "IMPALA V-trace: clipped importance ratios, reverse scan over time, PG + baseline + entropy, grads, batch over 8",
        _plain_fn(_vtrace), M8, ("x",), [REP] * 3 + [P(None, "x")] * 5 + [P("x")], None,
        lambda: [r((8, 32), 9130, scale=0.35), r((32, 6), 9131, scale=0.18), r((32, 1), 9132, scale=0.18),
                 r((16, 16, 8), 9133), r((16, 16, 6), 9134, scale=0.5), _ids((16, 16), 6, 9135), r((16, 16), 9136),
                 0.99 * (np.random.default_rng(9137).random((16, 16)) > 0.05).astype(np.float32), r((16, 8), 9138)])
    # ---- generative
    rvs, rvm = _layout(_RNVP)
    add("realnvp_spatial_24", "RealNVP: checkerboard affine couplings (conv nets), 2x2 squeeze, channel coupling, log-det, bits/dim; batch x height sharded",
        _realnvp, M24, DM, rvs + [P("data", "model")], None, lambda: rvm(9140) + [r((8, 8, 8, 2), 9155)])
    add("rectified_flow_24", "rectified flow: x0 / t from a key, velocity MSE, SGD, then an 8-step Euler sampler in fori_loop; hidden over model",
        _plain_fn(_rflow), M24, DM, [col, col, P("model"), row, REP, P("data"), REP, P("data")], None,
        lambda: _eps_args(9160, 32, 128) + [r((16, 32), 9166), np.array([0, 9167], np.uint32), r((16, 32), 9168)])
    add("dsm_langevin_8", "denoising score matching over 10 noise levels (randint levels), then annealed Langevin in nested fori_loops with fold_in keys, 8",
        _plain_fn(_dsm), M8, ("x",), [REP] * 5 + [P("x"), REP, P("x")], None,
        lambda: _eps_args(9170, 16, 64) + [r((32, 16), 9176), np.array([0, 9177], np.uint32), r((32, 16), 9178)])
    add("nerf_100_rays_8", "NeRF: 100 rays constrained over 8 (uneven), stratified t by key, positional encoding MLP, volume rendering cumprod, grads",
        _nerf, M8, ("x",), [REP] * 10, None,
        lambda: [r((27, 64), 9180, scale=0.2), r((64,), 9181, scale=0.02), r((64, 64), 9182, scale=0.125),
                 r((64,), 9183, scale=0.02), r((64, 4), 9184, scale=0.125), r((4,), 9185, scale=0.02),
                 r((100, 3), 9186, scale=0.3), r((100, 3), 9187) / 1.7, np.abs(r((100, 3), 9188, scale=0.3)),
                 np.array([0, 9189], np.uint32)])
    # ---- graphs and sets
    add("graphsage_max_mean_24", "GraphSAGE: segment_max + segment mean aggregation over 256 unique edges on data, features over model, graph pooling, grads",
        _sage, M24, DM, [REP] * 7 + [P(None, "model"), P("data"), P("data"), REP, REP], None, _sage_args)
    add("gin_100_nodes_8", "GIN: 100 nodes constrained over 8 (uneven), 400 edges over 8, segment_sum aggregation, learnable eps, graph readout, grads",
        _gin, M8, ("x",), [REP] * 7 + [P("x"), P("x"), REP, REP], None, _gin_args)
    sts, stm = _layout(_SETTF)
    add("set_transformer_24", "Set Transformer: ISAB (8 inducing points) + PMA over a 128-element set sharded on model, grads",
        _set_tf, M24, DM, sts + [P("data", "model"), P("data")], None, lambda: stm(9240) + [r((4, 128, 16), 9265), r((4,), 9266)])
    azs, _ = _layout(_AZ)
    add("alphazero_masked_24", "AlphaZero-style net: conv tower with channels over model, policy over 65 moves with an illegal-move mask, value tanh, L2",
        _plain_fn(_alphazero), M24, DM, azs + [P("data")] * 4, None, _az_args)
    v65s, v65m = _layout(_VIT65)
    add("vit_65_tokens_sp_8", "ViT on 32x32: 64 patches + cls = 65 tokens constrained over 8 (uneven) between sublayers, grads",
        _vit65, M8, ("x",), v65s + [REP, REP], None, lambda: v65m(9270) + [r((4, 32, 32, 3), 9290), _ids((4,), 10, 9291)])
    add("syncbn_ddp_smap_8", "DDP in shard_map: conv + SyncBatchNorm (pmean of mean / var), pmean'd grads, SGD, 8",
        _syncbn_ddp, M8, ("x",), [REP] * 5 + [P("x"), P("x")], None,
        lambda: [r((3, 3, 3, 8), 9300, scale=0.2), 1 + r((8,), 9301, scale=0.1), r((8,), 9302, scale=0.1),
                 r((3, 3, 8, 8), 9303, scale=0.12), r((8, 10), 9304, scale=0.35), r((16, 8, 8, 3), 9305), _ids((16,), 10, 9306)])
    # ---- recommenders / embeddings / contrastive
    add("word2vec_negsample_8", "word2vec skip-gram: vocab 1000 tables row-sharded over 8, 5 negatives by randint(key), SGD on the tables",
        _plain_fn(_w2v), M8, ("x",), [P("x", None), P("x", None), P("x"), P("x"), REP], None,
        lambda: [r((1000, 32), 9310, scale=0.3), r((1000, 32), 9311, scale=0.3), _ids((64,), 1000, 9312),
                 _ids((64,), 1000, 9313), np.array([0, 9314], np.uint32)])
    add("two_tower_logq_44", "two-tower retrieval: padded history mean-pool, in-batch softmax with logQ correction, tables rows over y, batch over x, 4 x 4",
        _plain_fn(_two_tower), M44, ("x", "y"), [P("y", None), P("y", None), REP, REP, REP, REP, REP, P("x"), P("x")], None,
        lambda: [r((1000, 16), 9320), r((1000, 16), 9321), r((16, 32), 9322, scale=0.25), r((32, 16), 9323, scale=0.18),
                 r((16, 32), 9324, scale=0.25), r((32, 16), 9325, scale=0.18),
                 np.log(np.random.default_rng(9326).dirichlet(np.ones(1000))).astype(np.float32) * 0.1,
                 _ids((32, 8), 1000, 9327), _ids((32,), 1000, 9328)])
    add("dcn_v2_42", "DCN-v2: 4 categorical tables (dim over model), two cross layers x0 * (W x + b) + x, parallel deep MLP, BCE, 4 x 2",
        _plain_fn(_dcn), M42, DM, [P(None, None, "model"), col, P("model"), col, P("model"), col, REP, REP,
                                   P("data"), P("data"), P("data")], None,
        lambda: [r((4, 100, 8), 9330), r((40, 40), 9331, scale=0.1), r((40,), 9332, scale=0.02), r((40, 40), 9333, scale=0.1),
                 r((40,), 9334, scale=0.02), r((40, 64), 9335, scale=0.16), r((64, 32), 9336, scale=0.125),
                 r((72, 1), 9337, scale=0.1), r((32, 8), 9338), _ids((32, 4), 100, 9339),
                 (np.random.default_rng(9340).random(32) < 0.3).astype(np.float32)])
    add("moco_queue_8", "MoCo: momentum key encoder, InfoNCE against a 64-entry queue row-sharded over 8, enqueue by DUS at a traced ptr",
        _plain_fn(_moco), M8, ("x",), [REP] * 4 + [P("x", None), REP, P("x"), P("x")], None,
        lambda: [r((32, 64), 9350, scale=0.18), r((64, 16), 9351, scale=0.125), r((32, 64), 9352, scale=0.18),
                 r((64, 16), 9353, scale=0.125), r((64, 16), 9354) * 0.25, np.int32(16), r((16, 32), 9355), r((16, 32), 9356)])
    add("siglip_44", "SigLIP sigmoid loss: image batch over x, text batch over y (2-D sharded logits), learnable temperature / bias, grads, 4 x 4",
        _plain_fn(_siglip), M44, ("x", "y"), [REP] * 4 + [P("x"), P("y")], None,
        lambda: [r((64, 32), 9360, scale=0.125), r((48, 32), 9361, scale=0.14), np.float32(np.log(10.0)), np.float32(-10.0),
                 r((32, 64), 9362), r((32, 48), 9363)])
    add("siglip_ring_smap_8", "SigLIP chunked loss in shard_map: text embeddings passed around a ppermute ring (unrolled), psum, grads (check_vma)",
        _siglip_ring, M8, ("x",), [REP] * 4 + [P("x"), P("x")], None,
        lambda: [r((64, 32), 9370, scale=0.125), r((48, 32), 9371, scale=0.14), np.float32(np.log(10.0)), np.float32(-10.0),
                 r((32, 64), 9372), r((32, 48), 9373)])
    add("vqvae_ema_24", "VQ-VAE: argmin over a 64-code codebook sharded on model, codebook gather, straight-through, commitment, EMA codebook update",
        _plain_fn(_vqvae), M24, DM, [REP] * 4 + [P("model", None), P("model"), P("model", None), P("data")], None,
        lambda: [r((32, 64), 9380, scale=0.18), r((64, 16), 9381, scale=0.125), r((16, 64), 9382, scale=0.25),
                 r((64, 32), 9383, scale=0.125), r((64, 16), 9384, scale=0.5), 1 + np.abs(r((64,), 9385, scale=0.2)),
                 r((64, 16), 9386, scale=0.5), r((32, 32), 9387)])
    return ps


def _plain_fn(f):
    return lambda mesh: f
