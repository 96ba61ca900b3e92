"""Probe programs for bench/xla_compare (names p7b_, `--only p7b_` runs them): parallelism patterns
and sharding APIs as users write them.

shard_map collectives: psum_scatter tiled on dim 1 / untiled on dim 2, all_gather tiled / stacked on
non-leading axes, all_to_all tiled / untiled / over merged axes, Ulysses sequence parallelism with
GQA (8 q / 4 kv heads) on data x sp and its gradient, expert-parallel top-2 MoE by argsort with a
capacity (token dropping) and all_to_all dispatch / combine over an expert axis apart from the data
axis (alone, and with the expert FFN tensor parallel over a third axis), bidirectional
collective matmuls (all-gather-matmul and matmul-reduce-scatter, two ppermute rings), pmax / pmin /
pmean / psum over ('data', 'model') at once, axis_index over merged axes (RoPE positions and a
sequence-parallel cumsum), DP manual with TP automatic (axis_names={'data'}), Megatron sequence
parallelism (all_gather / psum_scatter on the sequence) with check_vma grads, SUMMA on 4 x 4
(broadcast by masked psum in fori_loop), a row-split vocab-parallel embedding and its gradient,
global-norm clipping with a two-axis psum and donated Adam state, broadcasts from a root / from the
argmax holder, a hand-written ring all-reduce, halo exchange for a spatially parallel conv1d,
gradient accumulation in fori_loop with pmean, all-gather-KV context parallelism, collectives over
subsets of a 2x2x2x2 mesh, a distributed vocab top-k. Pipelines: circular (interleaved, 2 repeats of
4 stages) with ppermute in fori_loop and grads, a praxis-style vmap-over-stages pipeline shifted by
concatenate on stage x data, GPipe with 6 microbatches over 4 stages collected by scan. ZeRO /
FSDP: scanned layers with per-layer with_sharding_constraint gathers and reduce-scattered grads,
ZeRO-1 (Adam state only), ZeRO-2 in shard_map (psum_scatter'd grads), hybrid sharded DP (replica x
shard), FSDP x TP SwiGLU in scan, FSDP x TP on an 8 x 1 mesh. Tensor parallelism: GQA with 2 kv heads
over model=4. MoE by argsort / bincount slots with experts over 'expert' on 2x2x2 (auto). Sharding
API: P.UNCONSTRAINED in a scan body, tuple-of-axes reshards on a 4-axis 16-device mesh,
out_shardings moving axes between dims, jax.device_put inside jit, a mesh over devices
(0,2,4,6,1,3,5,7), a 1 x 8 mesh with shard_map over the size-1 axis, 100 / 13 rows over 16, a hidden
size of 100 over tp=4 on ('dp','tp') 4 x 4. Reshards: Ulysses by constraints, head reshapes and a
flatten of two sharded dims, a transpose kept at its input's spec, concatenate / stack of
differently sharded arrays, slices at uneven offsets / strided, gathers with indices sharded on the
other mesh axis, all-to-all reshards on 16 devices. Inference: a speculative-decoding verify step
(per-row cache DUS by vmap, acceptance by probability ratios), continuous batching with per-slot
positions and eviction, temperature / top-k / min-p sampling on vocab-sharded logits, a prefill
inserted into a cache slot at a traced index.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

from programs import Program, _axis_size, _ids, _plain, _rand, _smap, _wsc
from programs_probe6b import _ln, _rms

M8 = (8,)
M24, M42, DM = (2, 4), (4, 2), ("data", "model")
M222 = (2, 2, 2)
M44 = (4, 4)
M2222, ABCD = (2, 2, 2, 2), ("a", "b", "c", "d")


def _causal_attn(q, k, v, q_off=0, k_off=0):
    # q [B, Sq, H, Dh], k / v [B, Sk, H, Dh]; q_off / k_off: the global positions of their first rows.
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(q.shape[-1]))
    qi = q_off + jnp.arange(q.shape[1])[:, None]
    ki = k_off + jnp.arange(k.shape[1])[None, :]
    s = jnp.where(qi >= ki, s, -1e9)
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v)


# ==== shard_map collectives =======================================================================
def _rs_ag_variants(mesh):
    # x @ w with the contraction over model: reduce-scatter variants, then all_gather variants.
    def body(x, w):
        part = x @ w                                                                    # [4, 16]
        a = jax.lax.psum_scatter(part, "model", scatter_dimension=1, tiled=True)        # [4, 4]
        b = jax.lax.psum_scatter(part.reshape(4, 4, 4), "model", scatter_dimension=2, tiled=False)  # [4, 4]
        c = jax.lax.all_gather(a, "model", axis=1, tiled=True)                          # [4, 16]
        d = jax.lax.all_gather(b, "data", axis=0, tiled=False)                          # [2, 4, 4]
        e = jax.lax.all_gather(x, "model", axis=1, tiled=False)                         # [4, 4, 8]
        return a, b, jnp.tanh(c), d, e

    return _smap(mesh, body, (P("data", "model"), P("model", None)),
                 (P("data", "model"), P("data", "model"), P("data", None), P(None, None, "model"), P("data")),
                 check_vma=False)


def _ulysses_gqa(mesh):
    # Ulysses: all_to_all sequence <-> heads for q (8 heads) and k / v (4 kv heads); each device then
    # holds q heads 2j, 2j+1 and kv head j, which jnp.repeat pairs up as GQA does.
    def attn(q, k, v):
        a2a = lambda t: jax.lax.all_to_all(t, "sp", 2, 1, tiled=True)
        q, k, v = a2a(q), a2a(k), a2a(v)
        g = q.shape[2] // k.shape[2]
        o = _causal_attn(q, jnp.repeat(k, g, axis=2), jnp.repeat(v, g, axis=2))
        return jax.lax.all_to_all(o, "sp", 1, 2, tiled=True)

    spec = P("data", "sp", None, None)
    sm = _smap(mesh, attn, (spec, spec, spec), spec)

    def loss(ws, x):
        wq, wk, wv, wo = ws
        b, s, _ = x.shape
        h = _ln(x)
        q = (h @ wq).reshape(b, s, 8, 8)
        k = (h @ wk).reshape(b, s, 4, 8)
        v = (h @ wv).reshape(b, s, 4, 8)
        y = x + sm(q, k, v).reshape(b, s, -1) @ wo
        return jnp.mean(y ** 2)

    return lambda wq, wk, wv, wo, x: jax.value_and_grad(loss)((wq, wk, wv, wo), x)


def _moe_ep(mesh):
    # Expert parallel top-2 MoE: tokens over (data, expert), one expert per device of 'expert'.
    E, C, K = 4, 4, 2

    def body(x, wr, w1, w2):
        t, d = x.shape
        logits = x @ wr
        probs = jax.nn.softmax(logits, -1)
        order = jnp.argsort(-logits, axis=-1)[:, :K]                  # top-k by argsort
        gate = jnp.take_along_axis(probs, order, -1)
        gate = gate / gate.sum(-1, keepdims=True)
        choice = order.T.reshape(-1)                                  # first choices first
        gflat = gate.T.reshape(-1)
        mask = jax.nn.one_hot(choice, E, dtype=x.dtype)               # [K*t, E]
        pos = jnp.cumsum(mask, 0) * mask - 1.0
        keep = mask * (pos < C)                                       # capacity: later ones dropped
        disp = keep[:, :, None] * jax.nn.one_hot(pos.astype(jnp.int32), C, dtype=x.dtype)   # [K*t, E, C]
        xe = jnp.einsum("sec,sd->ecd", disp, jnp.tile(x, (K, 1)))
        xe = jax.lax.all_to_all(xe, "expert", 0, 1, tiled=True)       # [1, C*ep, d]
        h = jax.nn.gelu(jnp.einsum("ecd,edf->ecf", xe, w1))
        ye = jnp.einsum("ecf,efd->ecd", h, w2)
        ye = jax.lax.all_to_all(ye, "expert", 1, 0, tiled=True)       # [E, C, d]
        y = jnp.einsum("sec,ecd->sd", disp * gflat[:, None, None], ye).reshape(K, t, d).sum(0)
        frac = jax.lax.pmean(jnp.mean(mask[:t], 0), ("data", "expert"))
        mp = jax.lax.pmean(jnp.mean(probs, 0), ("data", "expert"))
        return y, E * jnp.sum(frac * mp)

    tok = P(("data", "expert"))
    sm = _smap(mesh, body, (tok, P(), P("expert"), P("expert")), (tok, P()))

    def loss(ws, x):
        y, aux = sm(x, *ws)
        return jnp.mean(y ** 2) + 0.01 * aux

    return lambda wr, w1, w2, x: jax.value_and_grad(loss)((wr, w1, w2), x)


def _coll_bidir(mesh):
    # gelu(x @ w1) @ w2 with both matmuls as bidirectional collective matmuls: x's row blocks split in
    # halves that travel the ring both ways; the second matmul's partial sums reduce-scattered in
    # two column halves going opposite ways.
    def body(xb, w1b, w2b):
        n = _axis_size("x")
        me = jax.lax.axis_index("x")
        rows = xb.shape[0]
        half = rows // 2
        fwd = [(j, (j - 1) % n) for j in range(n)]
        bwd = [(j, (j + 1) % n) for j in range(n)]

        def ag(k, carry):
            acc, xf, xr = carry
            acc = jax.lax.dynamic_update_slice_in_dim(acc, xf @ w1b, ((me + k) % n) * rows, 0)
            acc = jax.lax.dynamic_update_slice_in_dim(acc, xr @ w1b, ((me - k) % n) * rows + half, 0)
            return acc, jax.lax.ppermute(xf, "x", fwd), jax.lax.ppermute(xr, "x", bwd)

        acc = jnp.zeros((n * rows, w1b.shape[1]), xb.dtype)
        h, _, _ = jax.lax.fori_loop(0, n, ag, (acc, xb[:half], xb[half:]))
        chunks = (jax.nn.gelu(h) @ w2b).reshape(n, rows, -1)
        cols = chunks.shape[2] // 2
        ca, cb = chunks[:, :, :cols], chunks[:, :, cols:]

        def rs(t, carry):
            aa, ab = carry
            aa = jax.lax.ppermute(aa, "x", bwd) + ca[(me - t - 1) % n]
            ab = jax.lax.ppermute(ab, "x", fwd) + cb[(me + t + 1) % n]
            return aa, ab

        aa, ab = jax.lax.fori_loop(1, n, rs, (ca[(me - 1) % n], cb[(me + 1) % n]))
        return jnp.concatenate([aa, ab], axis=1)

    return _smap(mesh, body, (P("x", None), P(None, "x"), P("x", None)), P("x", None), check_vma=False)


def _stats_2axes(mesh):
    def body(x):
        m = jax.lax.pmax(jnp.max(x, -1, keepdims=True), "model")
        e = jnp.exp(x - m)
        p = e / jax.lax.psum(jnp.sum(e, -1, keepdims=True), "model")        # softmax over model
        mn = jax.lax.pmin(jnp.min(x, 0, keepdims=True), "data")
        mx = jax.lax.pmax(jnp.max(x, 0, keepdims=True), "data")
        mu = jax.lax.pmean(jnp.mean(x), ("data", "model"))
        sd = jnp.sqrt(jax.lax.pmean(jnp.mean((x - mu) ** 2), ("data", "model")))
        tot = jax.lax.psum(jnp.sum(x), ("data", "model"))
        return p, (x - mn) / (mx - mn), (x - mu) / sd, tot

    s = P("data", "model")
    return _smap(mesh, body, s, (s, s, s, P()))


def _seq_axis_index(mesh):
    # Sequence over (data, model): global positions from axis_index, RoPE, a sequence-parallel cumsum.
    def body(x):
        b, s, d = x.shape
        i1 = jax.lax.axis_index("data") * _axis_size("model") + jax.lax.axis_index("model")
        i2 = jax.lax.axis_index(("data", "model"))
        pos = i2 * s + jnp.arange(s)
        half = d // 2
        inv = 1.0 / (10000.0 ** (jnp.arange(half, dtype=jnp.float32) / half))
        ang = pos[:, None].astype(jnp.float32) * inv[None, :]
        x1, x2 = x[..., :half], x[..., half:]
        rot = jnp.concatenate([x1 * jnp.cos(ang) - x2 * jnp.sin(ang), x1 * jnp.sin(ang) + x2 * jnp.cos(ang)], -1)
        cs = jnp.cumsum(x, axis=1)
        tots = jax.lax.all_gather(cs[:, -1], ("data", "model"))          # [n, b, d]
        before = jnp.sum(jnp.where((jnp.arange(tots.shape[0]) < i2)[:, None, None], tots, 0.0), 0)
        return rot, cs + before[:, None, :], (i1 - i2) + jnp.zeros((1,), jnp.int32), pos

    spec = P(None, ("data", "model"))
    return _smap(mesh, body, spec, (spec, spec, P(("data", "model")), P(("data", "model"))), check_vma=False)


def _dp_manual_tp_auto(mesh):
    # Data parallel by hand (manual over data), the weights' model sharding left to the partitioner.
    def body(w1, w2, x, y):
        def loss(ws):
            return jnp.mean((jax.nn.gelu(x @ ws[0]) @ ws[1] - y) ** 2)

        l, g = jax.value_and_grad(loss)((w1, w2))
        l, g = jax.lax.pmean((l, g), "data")
        return w1 - 0.1 * g[0], w2 - 0.1 * g[1], l

    return _smap(mesh, body, (P(), P(), P("data"), P("data")), (P(), P(), P()), axis_names={"data"},
                 check_vma=False)


def _megatron_sp(mesh):
    # Megatron sequence parallelism: LN on the sequence shard, all_gather the sequence, column then
    # row parallel matmuls, reduce-scatter back onto the sequence; two layers, check_vma grads.
    def layer(x, g, w1, w2):
        h = jax.lax.all_gather(_ln(x) * g, "model", axis=1, tiled=True)
        o = jax.nn.gelu(h @ w1) @ w2
        return x + jax.lax.psum_scatter(o, "model", scatter_dimension=1, tiled=True)

    spec = P("data", "model", None)
    sm = _smap(mesh, layer, (spec, P(), P(None, "model"), P("model", None)), spec)

    def loss(ws, x):
        g, a1, a2, b1, b2 = ws
        return jnp.mean(sm(sm(x, g, a1, a2), g, b1, b2) ** 2)

    return lambda g, a1, a2, b1, b2, x: jax.value_and_grad(loss)((g, a1, a2, b1, b2), x)


def _summa(mesh):
    # SUMMA: at step k, A's block column k is broadcast along the grid rows and B's block row k along
    # the grid columns (masked psums), and every device accumulates their product.
    def body(a, b):
        n = _axis_size("y")
        xi, yi = jax.lax.axis_index("x"), jax.lax.axis_index("y")

        def step(k, c):
            ak = jax.lax.psum(jnp.where(yi == k, a, 0.0), "y")
            bk = jax.lax.psum(jnp.where(xi == k, b, 0.0), "x")
            return c + ak @ bk

        return jax.lax.fori_loop(0, n, step, jnp.zeros((a.shape[0], b.shape[1]), a.dtype))

    s = P("x", "y")
    mm = _smap(mesh, body, (s, s), s, check_vma=False)
    return lambda a, b, w: (mm(jnp.tanh(mm(a, b)), w), mm(a, w))


def _vp_embed(mesh):
    # Row-split (vocab-parallel) embedding: each device looks up the ids in its range, psum.
    def emb(table, ids):
        n_local = table.shape[0]
        local = ids - jax.lax.axis_index("model") * n_local
        ok = (local >= 0) & (local < n_local)
        e = jnp.take(table, jnp.where(ok, local, 0), axis=0) * ok[..., None]
        return jax.lax.psum(e, "model")

    sm = _smap(mesh, emb, (P("model", None), P("data")), P("data"))

    def loss(table, w, ids, y):
        return jnp.mean((jnp.tanh(sm(table, ids)) @ w - y) ** 2)

    def f(table, w, ids, y):
        l, (gt, gw) = jax.value_and_grad(loss, argnums=(0, 1))(table, w, ids, y)
        return l, table - 0.5 * gt, w - 0.1 * gw

    return f


def _clip_adam(mesh):
    # Gradients from the partitioner, then a shard_map update: global norm by a psum over both axes,
    # clipping, Adam with bias correction on each device's shard.
    def upd(w1, w2, g1, g2, m1, m2, v1, v2, step):
        norm = jnp.sqrt(jax.lax.psum(jnp.sum(g1 * g1) + jnp.sum(g2 * g2), ("data", "model")))
        scale = jnp.minimum(1.0, 0.5 / (norm + 1e-6))
        out = []
        for w, g, m, v in ((w1, g1, m1, v1), (w2, g2, m2, v2)):
            g = g * scale
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            mh, vh = m / (1 - 0.9 ** step), v / (1 - 0.999 ** step)
            out.append((w - 1e-2 * mh / (jnp.sqrt(vh) + 1e-8), m, v))
        (a, ma, va), (b, mb, vb) = out
        return a, b, ma, mb, va, vb, norm

    s = P("data", "model")
    sm = _smap(mesh, upd, (s,) * 8 + (P(),), (s,) * 6 + (P(),))

    def f(w1, w2, m1, m2, v1, v2, x, y, step):
        g1, g2 = jax.grad(lambda ws: jnp.mean((jnp.tanh(x @ ws[0]) @ ws[1] - y) ** 2))((w1, w2))
        return sm(w1, w2, g1, g2, m1, m2, v1, v2, step)

    return f


def _bcast_root(mesh):
    # Broadcast device 0's block (masked psum), the last device's (all_gather + index), and the block
    # of the device holding the global max (pmax, pmin of the owner's index).
    def body(x):
        n = _axis_size("x")
        me = jax.lax.axis_index("x")
        root = jax.lax.psum(jnp.where(me == 0, x, 0.0), "x")
        last = jax.lax.all_gather(x, "x")[n - 1]
        m = jnp.max(x)
        owner = jax.lax.pmin(jnp.where(m == jax.lax.pmax(m, "x"), me, n), "x")
        best = jax.lax.psum(jnp.where(me == owner, x, 0.0), "x")
        return root, x - root + last, best, owner

    return _smap(mesh, body, P("x"), (P(), P("x"), P(), P()), check_vma=False)


def _ring_allreduce(mesh):
    # Ring all-reduce by hand: a reduce-scatter round the ring, then an all-gather round it.
    def body(g):
        n = _axis_size("x")
        me = jax.lax.axis_index("x")
        chunks = g.reshape(n, -1)
        right = [(j, (j + 1) % n) for j in range(n)]
        red = jax.lax.fori_loop(1, n, lambda t, acc: jax.lax.ppermute(acc, "x", right) + chunks[(me - t - 1) % n],
                                chunks[(me - 1) % n])

        def ag(t, carry):
            out, cur = carry
            cur = jax.lax.ppermute(cur, "x", right)
            return out.at[(me - t) % n].set(cur), cur

        out, _ = jax.lax.fori_loop(1, n, ag, (jnp.zeros_like(chunks).at[me].set(red), red))
        return out.reshape(g.shape) / n, jax.lax.pmean(g, "x")

    return _smap(mesh, body, P("x"), (P("x"), P("x")), check_vma=False)


def _halo_conv(mesh):
    # Spatially parallel conv1d (k=5): 2-row halos from both neighbours by ppermute (zeros at the
    # ends, as SAME padding), VALID conv; two layers and their gradient.
    def conv(x, w):
        n = _axis_size("sp")
        left = jax.lax.ppermute(x[:, -2:], "sp", [(j, j + 1) for j in range(n - 1)])
        right = jax.lax.ppermute(x[:, :2], "sp", [(j + 1, j) for j in range(n - 1)])
        xp = jnp.concatenate([left, x, right], axis=1)
        return jax.lax.conv_general_dilated(xp, w, (1,), "VALID", dimension_numbers=("NWC", "WIO", "NWC"))

    spec = P("data", "sp", None)
    sm = _smap(mesh, conv, (spec, P()), spec)

    def loss(ws, x, t):
        return jnp.mean((sm(jax.nn.gelu(sm(x, ws[0])), ws[1]) - t) ** 2)

    return lambda w1, w2, x, t: jax.value_and_grad(loss)((w1, w2), x, t)


def _accum(mesh):
    # Gradient accumulation over 4 microbatches in fori_loop inside shard_map, then pmean.
    def body(w1, w2, x, y):
        mb = 4
        xs, ys = x.reshape(mb, -1, x.shape[-1]), y.reshape(mb, -1, y.shape[-1])

        def loss(ws, xm, ym):
            return jnp.mean((jnp.tanh(xm @ ws[0]) @ ws[1] - ym) ** 2)

        def step(i, carry):
            g1, g2, l = carry
            li, (d1, d2) = jax.value_and_grad(loss)((w1, w2), xs[i], ys[i])
            return g1 + d1, g2 + d2, l + li

        g1, g2, l = jax.lax.fori_loop(0, mb, step, (jnp.zeros_like(w1), jnp.zeros_like(w2), jnp.float32(0)))
        g1, g2, l = jax.lax.pmean((g1 / mb, g2 / mb, l / mb), "data")
        return w1 - 0.1 * g1, w2 - 0.1 * g2, l

    return _smap(mesh, body, (P(), P(), P("data"), P("data")), (P(), P(), P()), check_vma=False)


def _cp_allgather(mesh):
    # Context parallelism by all-gathered K / V (as Llama 3 trains long contexts): local queries at
    # their global offset against the whole sequence's keys, causal; grads.
    def attn(q, k, v):
        kf = jax.lax.all_gather(k, "cp", axis=1, tiled=True)
        vf = jax.lax.all_gather(v, "cp", axis=1, tiled=True)
        return _causal_attn(q, kf, vf, q_off=jax.lax.axis_index("cp") * q.shape[1])

    spec = P("data", "cp", None, None)
    sm = _smap(mesh, attn, (spec, spec, spec), spec)

    def loss(ws, x):
        wq, wk, wv, wo = ws
        b, s, d = x.shape
        h = _ln(x)
        q, k, v = ((h @ w).reshape(b, s, 4, d // 4) for w in (wq, wk, wv))
        return jnp.mean((x + sm(q, k, v).reshape(b, s, d) @ wo) ** 2)

    return lambda wq, wk, wv, wo, x: jax.value_and_grad(loss)((wq, wk, wv, wo), x)


def _mesh4_subsets(mesh):
    def body(x):
        s1 = jax.lax.psum(x, ("a", "c"))
        g = jax.lax.all_gather(x, "d", axis=1, tiled=True)                               # [4, 8]
        r = jax.lax.psum_scatter(g, "b", scatter_dimension=1, tiled=True)                 # [4, 4]
        p = jax.lax.ppermute(x, ("a", "b"), [(i, (i + 1) % 4) for i in range(4)])
        m = jax.lax.pmax(x, ("b", "c", "d"))
        return s1, r, p, m

    s = P(("a", "b"), ("c", "d"))
    return _smap(mesh, body, s, (P("b", "d"), s, s, P("a", None)), check_vma=False)


def _vocab_topk(mesh):
    # Distributed top-k over a vocab sharded on model: local top_k, all_gather of the candidates,
    # top_k again; log-probabilities by a pmax / psum log-normaliser.
    def body(h, w):
        logits = h @ w
        v, i = jax.lax.top_k(logits, 8)
        i = i + jax.lax.axis_index("model") * w.shape[1]
        av = jax.lax.all_gather(v, "model", axis=1, tiled=True)
        ai = jax.lax.all_gather(i, "model", axis=1, tiled=True)
        gv, gi = jax.lax.top_k(av, 8)
        m = jax.lax.pmax(jnp.max(logits, -1, keepdims=True), "model")
        lse = jnp.log(jax.lax.psum(jnp.sum(jnp.exp(logits - m), -1, keepdims=True), "model")) + m
        return gv - lse, jnp.take_along_axis(ai, gi, 1)

    return _smap(mesh, body, (P("data"), P(None, "model")), (P("data"), P("data")), check_vma=False)


def _a2a_variants(mesh):
    def body(x):                                                      # [4, 4, 8]
        t = jax.lax.all_to_all(x, "model", 2, 1, tiled=True)          # [4, 16, 2]
        u = jax.lax.all_to_all(x, "model", 1, 1, tiled=False)         # [4, 4, 8]: dim 1 exchanged
        m = jax.lax.all_to_all(x, ("data", "model"), 2, 0, tiled=True)   # [32, 4, 1]
        return t, u * 2.0, m

    return _smap(mesh, body, P("data", "model"),
                 (P("data", None, "model"), P("data", "model"), P(None, None, ("data", "model"))), check_vma=False)


# ==== pipelines ===================================================================================
def _circular_pipeline(mesh):
    # Circular (interleaved) pipeline: 8 layers as 2 repeats of 4 stages, 4 microbatches; stage 0
    # takes a new microbatch for the first 4 steps, then the ring's output from stage 3.
    S, R, M = 4, 2, 4

    def body(w, xs):                                   # w [R, 1, D, D]; xs [M, mb, D]
        w = w[:, 0]
        me = jax.lax.axis_index("stage")
        ring = [(j, (j + 1) % S) for j in range(S)]

        def step(t, carry):
            state, outs = carry
            inp = jnp.where((me == 0) & (t < M), xs[jnp.minimum(t, M - 1)], state)
            k = t - me
            y = jnp.tanh(inp @ w[jnp.clip(k // M, 0, R - 1)]) + inp
            done = (me == S - 1) & (k >= M * (R - 1)) & (k < M * R)
            outs = jnp.where(done, outs.at[k % M].set(y), outs)
            return jax.lax.ppermute(y, "stage", ring), outs

        _, outs = jax.lax.fori_loop(0, M * R + S - 1, step, (jnp.zeros_like(xs[0]), jnp.zeros_like(xs)))
        return jax.lax.psum(outs, "stage")

    sm = _smap(mesh, body, (P(None, "stage"), P(None, "data")), P(None, "data"), check_vma=False)

    def loss(w, xs, ys):
        return jnp.mean((sm(w, xs) - ys) ** 2)

    return lambda w, xs, ys: jax.value_and_grad(loss)(w, xs, ys)


def _auto_pipeline(mesh):
    # praxis-style pipeline left to the partitioner: vmap over stacked stages, the state shifted one
    # stage by concatenate each step and constrained to P(stage, data); grads.
    S, M = 4, 4

    def run(ws, xs):
        w, b = ws

        def step(state, t):
            inp = jnp.where(t < M, xs[jnp.minimum(t, M - 1)], 0.0)
            state = jnp.concatenate([inp[None], state[:-1]], 0)
            state = _wsc(mesh, state, P("stage", "data"))
            state = jax.vmap(lambda wi, bi, si: jax.nn.gelu(si @ wi + bi))(w, b, state)
            return state, state[-1]

        _, ys = jax.lax.scan(step, jnp.zeros((S,) + xs.shape[1:], xs.dtype), jnp.arange(M + S - 1))
        return ys[S - 1:]

    def loss(ws, xs, tg):
        return jnp.mean((run(ws, xs) - tg) ** 2)

    return lambda w, b, xs, tg: jax.value_and_grad(loss)((w, b), xs, tg)


def _gpipe6(mesh):
    # GPipe with 6 microbatches over 4 stages: scan over 9 steps, the last stage's outputs collected
    # by the scan's ys, a non-cyclic ppermute between stages; grads.
    S, M = 4, 6

    def body(w, b, xs):
        w, b = w[0], b[0]
        me = jax.lax.axis_index("pp")

        def step(state, t):
            inp = jnp.where(me == 0, xs[jnp.clip(t, 0, M - 1)], state)
            y = jax.nn.gelu(inp @ w + b)
            return jax.lax.ppermute(y, "pp", [(j, j + 1) for j in range(S - 1)]), y

        _, ys = jax.lax.scan(step, jnp.zeros_like(xs[0]), jnp.arange(M + S - 1))
        return jax.lax.psum(jnp.where(me == S - 1, ys[S - 1:], 0.0), "pp")

    sm = _smap(mesh, body, (P("pp"), P("pp"), P()), P(), check_vma=False)

    def loss(ws, xs, tg):
        return jnp.mean((sm(ws[0], ws[1], xs) - tg) ** 2)

    return lambda w, b, xs, tg: jax.value_and_grad(loss)((w, b), xs, tg)


# ==== ZeRO / FSDP =================================================================================
def _fsdp_scan(mesh):
    # FSDP over 8: stacked layer weights sharded on their input dim, gathered per layer by a
    # constraint in the (remat) scan body, gradients reduce-scattered back by a constraint.
    def f(w1, w2, x, y):
        def loss(ws):
            @jax.checkpoint
            def layer(h, wl):
                a, b = _wsc(mesh, wl[0], P()), _wsc(mesh, wl[1], P())
                h = _wsc(mesh, h, P("fsdp"))
                return h + jax.nn.gelu(_ln(h) @ a) @ b, None

            h, _ = jax.lax.scan(layer, x, ws)
            return jnp.mean((h - y) ** 2)

        l, (g1, g2) = jax.value_and_grad(loss)((w1, w2))
        g1, g2 = _wsc(mesh, g1, P(None, "fsdp")), _wsc(mesh, g2, P(None, "fsdp"))
        return l, w1 - 0.1 * g1, w2 - 0.1 * g2

    return f


def _adam_shard(w, g, m, v, lr=1e-2):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    return w - lr * m / (jnp.sqrt(v) + 1e-8), m, v


def _mlp_loss(ws, x, y):
    return jnp.mean((jnp.tanh(x @ ws[0]) @ ws[1] - y) ** 2)


def _zero1(mesh):
    # ZeRO-1: replicated params and grads (data parallel), Adam state sharded over data; each device
    # updates its shard, the new params all-gathered by a constraint.
    def f(w1, w2, m1, m2, v1, v2, x, y):
        l, g = jax.value_and_grad(_mlp_loss)((w1, w2), x, y)
        out = [l]
        for w, gi, m, v in ((w1, g[0], m1, v1), (w2, g[1], m2, v2)):
            ws, m, v = _adam_shard(_wsc(mesh, w, P("data")), _wsc(mesh, gi, P("data")), m, v)
            out += [_wsc(mesh, ws, P()), m, v]
        return tuple(out)

    return f


def _hsdp(mesh):
    # Hybrid sharded data parallel: params and Adam state sharded over 'shard', replicated over
    # 'replica'; the batch over both.
    def f(w1, w2, m1, m2, v1, v2, x, y):
        l, g = jax.value_and_grad(_mlp_loss)((w1, w2), x, y)
        a, m1, v1 = _adam_shard(w1, g[0], m1, v1)
        b, m2, v2 = _adam_shard(w2, g[1], m2, v2)
        return l, a, b, m1, m2, v1, v2

    return f


def _fsdp_tp_swiglu(mesh):
    # FSDP x TP: stacked SwiGLU weights P(None, fsdp, tp) / P(None, tp, fsdp), gathered over fsdp per
    # layer in the scan body (the TP split kept), activations over fsdp; grads and SGD.
    def f(g, wg, wu, wd, x, y):
        def loss(ws):
            def layer(h, wl):
                gl, a, b, c = wl
                a, b = _wsc(mesh, a, P(None, "tp")), _wsc(mesh, b, P(None, "tp"))
                c = _wsc(mesh, c, P("tp", None))
                u = _rms(h, gl)
                u = jax.nn.silu(u @ a) * (u @ b)
                u = _wsc(mesh, u, P("fsdp", None, "tp"))
                return _wsc(mesh, h + u @ c, P("fsdp")), None

            h, _ = jax.lax.scan(layer, x, ws)
            return jnp.mean((h - y) ** 2)

        l, gs = jax.value_and_grad(loss)((g, wg, wu, wd))
        return (l,) + tuple(w - 0.1 * d for w, d in zip((g, wg, wu, wd), gs))

    return f


def _zero2(mesh):
    # ZeRO-2 in shard_map: replicated params, local grads on the local batch, grads psum_scatter'd,
    # Adam on this device's rows, the new rows all_gather'd.
    def body(w1, w2, m1, m2, v1, v2, x, y):
        n = _axis_size("data")
        me = jax.lax.axis_index("data")
        l, g = jax.value_and_grad(_mlp_loss)((w1, w2), x, y)
        out = [jax.lax.pmean(l, "data")]
        for w, gi, m, v in ((w1, g[0], m1, v1), (w2, g[1], m2, v2)):
            gs = jax.lax.psum_scatter(gi, "data", scatter_dimension=0, tiled=True) / n
            rows = gs.shape[0]
            ws = jax.lax.dynamic_slice_in_dim(w, me * rows, rows, 0)
            ws, m, v = _adam_shard(ws, gs, m, v)
            out += [jax.lax.all_gather(ws, "data", axis=0, tiled=True), m, v]
        return tuple(out)

    d = P("data")
    return _smap(mesh, body, (P(), P(), d, d, d, d, d, d), (P(), P(), d, d, P(), d, d), check_vma=False)


def _mesh8x1(mesh):
    # FSDP x TP written for a 2-D mesh, run on 8 x 1 (tp of size 1).
    def f(wg, wu, wd, x, y):
        def loss(ws):
            a, b, c = ws
            h = _wsc(mesh, x, P("fsdp", None, None))
            u = jax.nn.silu(h @ a) * (h @ b)
            u = _wsc(mesh, u, P("fsdp", None, "tp"))
            return jnp.mean((h + u @ c - y) ** 2)

        l, gs = jax.value_and_grad(loss)((wg, wu, wd))
        return (l,) + tuple(_wsc(mesh, w - 0.1 * d, s) for w, d, s in
                            zip((wg, wu, wd), gs, (P("fsdp", "tp"), P("fsdp", "tp"), P("tp", "fsdp"))))

    return f


# ==== tensor parallelism / MoE ====================================================================
def _gqa_kv2(x, wq, wk, wv, wo):
    # 8 q heads, 2 kv heads of 8 dims with wk / wv's 16 columns over model=4 (a kv head split in two).
    b, s, d = x.shape

    def loss(ws):
        wq, wk, wv, wo = ws
        h = _ln(x)
        q = (h @ wq).reshape(b, s, 2, 4, 8)
        k = (h @ wk).reshape(b, s, 2, 8)
        v = (h @ wv).reshape(b, s, 2, 8)
        sc = jnp.einsum("bqkgd,bskd->bkgqs", q, k) / np.float32(np.sqrt(8))
        sc = jnp.where(jnp.tril(jnp.ones((s, s), bool)), sc, -1e9)
        o = jnp.einsum("bkgqs,bskd->bqkgd", jax.nn.softmax(sc, -1), v).reshape(b, s, -1)
        return jnp.mean((x + o @ wo) ** 2)

    return jax.value_and_grad(loss)((wq, wk, wv, wo))


def _moe_sort(mesh):
    # Top-2 MoE by sorting: (expert, priority) order by a stable argsort, slots from bincount starts,
    # capacity 8 (drops), a scatter into [G, E, C, D] buffers constrained to experts over 'expert',
    # expert FFN with F over model, gather back and weighted scatter-add; aux loss; grads.
    E, K, C = 4, 2, 8

    def route(xg, lg):
        s, d = xg.shape
        order = jnp.argsort(-lg, -1)[:, :K]
        gates = jax.nn.softmax(jnp.take_along_axis(lg, order, -1), -1)
        e_flat = order.T.reshape(-1)
        tok = jnp.tile(jnp.arange(s), K)
        srt = jnp.argsort(e_flat, stable=True)
        e_s = e_flat[srt]
        counts = jnp.bincount(e_flat, length=E)
        pos = jnp.arange(K * s) - (jnp.cumsum(counts) - counts)[e_s]
        keep = pos < C
        slot = jnp.where(keep, pos, C)
        buf = jnp.zeros((E, C, d), xg.dtype).at[e_s, slot].set(xg[tok[srt]], mode="drop")
        return buf, (e_s, slot, keep, tok[srt], gates.T.reshape(-1)[srt])

    def combine(ye, r, s):
        e_s, slot, keep, tok, g = r
        vals = ye.at[e_s, slot].get(mode="fill", fill_value=0.0) * (g * keep)[:, None]
        return jnp.zeros((s, ye.shape[-1]), ye.dtype).at[tok].add(vals)

    def loss(ws, x):
        wr, w1, w2 = ws
        bsz, s, d = x.shape
        lg = x @ wr
        buf, r = jax.vmap(route)(x, lg)
        buf = _wsc(mesh, buf, P("data", "expert", None, None))
        h = jax.nn.gelu(jnp.einsum("gecd,edf->gecf", buf, w1))
        ye = _wsc(mesh, jnp.einsum("gecf,efd->gecd", h, w2), P("data", "expert", None, None))
        y = jax.vmap(lambda a, b: combine(a, b, s))(ye, r)
        probs = jax.nn.softmax(lg, -1)
        frac = jnp.mean(jax.nn.one_hot(jnp.argmax(lg, -1), E), (0, 1))
        aux = E * jnp.sum(frac * jnp.mean(probs, (0, 1)))
        return jnp.mean((x + y) ** 2) + 0.01 * aux

    return lambda wr, w1, w2, x: jax.value_and_grad(loss)((wr, w1, w2), x)


def _switch_partial(mesh):
    # Switch (top-1) MoE in a shard_map over (data, expert, model): all_to_all over expert, the
    # expert FFN tensor parallel over model (F split, psum); load-balancing and router z losses.
    # (Manual over (data, expert) only, with model automatic, XLA's GSPMD partitioner aborts on the
    # all_to_all: "Check failed: sharding.IsManualSubgroup()".)
    E, C = 4, 4

    def body(x, wr, w1, w2):
        logits = x @ wr
        probs = jax.nn.softmax(logits, -1)
        e = jnp.argmax(probs, -1)
        gate = jnp.max(probs, -1)
        mask = jax.nn.one_hot(e, E, dtype=x.dtype)
        pos = jnp.cumsum(mask, 0) * mask - 1.0
        disp = (mask * (pos < C))[:, :, None] * jax.nn.one_hot(pos.astype(jnp.int32), C, dtype=x.dtype)
        xe = jax.lax.all_to_all(jnp.einsum("tec,td->ecd", disp, x), "expert", 0, 1, tiled=True)
        ye = jnp.einsum("ecf,efd->ecd", jax.nn.gelu(jnp.einsum("ecd,edf->ecf", xe, w1)), w2)
        ye = jax.lax.all_to_all(jax.lax.psum(ye, "model"), "expert", 1, 0, tiled=True)
        y = jnp.einsum("tec,ecd->td", disp * gate[:, None, None], ye)
        ax = ("data", "expert")
        lb = E * jnp.sum(jax.lax.pmean(jnp.mean(mask, 0), ax) * jax.lax.pmean(jnp.mean(probs, 0), ax))
        z = jax.lax.pmean(jnp.mean(jax.nn.logsumexp(logits, -1) ** 2), ax)
        return y, lb, z

    tok = P(("data", "expert"))
    sm = _smap(mesh, body, (tok, P(), P("expert", None, "model"), P("expert", "model", None)), (tok, P(), P()),
               check_vma=False)

    def loss(ws, x):
        y, lb, z = sm(x, *ws)
        return jnp.mean((x + y) ** 2) + 0.01 * lb + 0.001 * z

    return lambda wr, w1, w2, x: jax.value_and_grad(loss)((wr, w1, w2), x)


# ==== sharding API surface ========================================================================
def _unconstrained_scan(mesh):
    U = P.UNCONSTRAINED

    def f(x, w):
        def loss(w):
            def layer(h, wl):
                h = _wsc(mesh, h, P("data", U, None))
                u = _wsc(mesh, jnp.tanh(h @ wl), P(U, None, "model"))
                return h + u, jnp.sum(u, axis=(0, 1))

            h, s = jax.lax.scan(layer, x, w)
            return jnp.mean(h ** 2), s

        (l, s), g = jax.value_and_grad(loss, has_aux=True)(w)
        return l, s, _wsc(mesh, g, P(None, U, "model"))

    return f


def _tuple_reshard_2222(mesh):
    def f(x, w):
        y = _wsc(mesh, x @ w, P(("a", "c"), ("b", "d")))
        z = _wsc(mesh, jnp.tanh(y), P(("d", "c", "b", "a"), None))
        t = _wsc(mesh, z.T * 2.0, P(("b", "a"), "d"))
        return y, z, t

    return f


def _device_put_jit(mesh):
    def f(a, b):
        a1 = jax.device_put(a, NamedSharding(mesh, P(None, "x")))
        a2 = jax.device_put(a1 * 2.0, NamedSharding(mesh, P(("x", "y"))))
        b1 = jax.device_put(b, NamedSharding(mesh, P()))
        return a1 @ b1, a2, jax.device_put(a1 + a2, NamedSharding(mesh, P("y", "x")))

    return f


def _order_evens_odds(mesh):
    def ring(h):
        n = _axis_size("model")
        nxt = jax.lax.ppermute(h, "model", [(i, (i + 1) % n) for i in range(n)])
        return h + 0.5 * nxt, jax.lax.psum(jnp.sum(h, 0, keepdims=True), "data")

    sm = _smap(mesh, ring, P("data", "model"), (P("data", "model"), P(None, "model")), check_vma=False)

    def f(x, w):
        y = jnp.tanh(x @ w)
        r, s = sm(_wsc(mesh, y, P("data", "model")))
        return r, s, _wsc(mesh, r, P("model", "data"))

    return f


def _mesh1x8_smap(mesh):
    def body(x):
        rs = jax.lax.psum_scatter(x, ("data", "model"), scatter_dimension=1, tiled=True)
        ag = jax.lax.all_gather(x, "data", axis=0, tiled=True)
        pm = jax.lax.pmean(x, "data")
        pp = jax.lax.ppermute(x, "model", [(i, (i + 3) % 8) for i in range(8)])
        return rs, ag + pm + pp

    s = P(("data", "model"))
    return _smap(mesh, body, s, (P(None, ("data", "model")), s), check_vma=False)


def _flat16_uneven(mesh):
    def f(a, b, w):
        a = _wsc(mesh, a[:100], P("x"))              # 7 rows per shard, the last shard 5
        b = _wsc(mesh, b[:13], P("x"))               # 13 rows over 16: three empty shards
        h = jax.nn.softmax(a @ w, axis=0)
        return h, h.sum(0), jnp.cumsum(b, axis=0), b @ b.T, jnp.max(a, axis=0)

    return f


def _dp_tp_uneven(mesh):
    # Hidden 100 over tp=4 and a batch of 13 over dp=4 (made inside), MLP loss and grads.
    def f(w1, w2, x, y):
        def loss(ws):
            a = _wsc(mesh, ws[0][:, :100], P(None, "tp"))
            b = _wsc(mesh, ws[1][:100], P("tp", None))
            xx = _wsc(mesh, x[:13], P("dp"))
            return jnp.mean((jax.nn.gelu(xx @ a) @ b - y[:13]) ** 2)

        return jax.value_and_grad(loss)((w1, w2))

    return f


# ==== reshards ===================================================================================
def _ulysses_wsc(mesh):
    # Ulysses left to the partitioner: q / k / v constrained sequence-sharded, then head-sharded for
    # attention, the output back to sequence-sharded; grads.
    def loss(ws, x):
        wq, wk, wv, wo = ws
        b, s, d = x.shape
        h = _ln(_wsc(mesh, x, P("data", "sp", None)))
        heads = []
        for w in (wq, wk, wv):
            t = _wsc(mesh, (h @ w).reshape(b, s, 4, d // 4), P("data", "sp", None, None))
            heads.append(_wsc(mesh, t, P("data", None, "sp", None)))
        o = _wsc(mesh, _causal_attn(*heads), P("data", None, "sp", None))
        o = _wsc(mesh, o, P("data", "sp", None, None)).reshape(b, s, d)
        return jnp.mean((x + o @ wo) ** 2)

    return lambda wq, wk, wv, wo, x: jax.value_and_grad(loss)((wq, wk, wv, wo), x)


def _heads_reshape(mesh):
    def f(x, w):
        y = x @ w                                                        # [B, S, H*D], H*D over model
        h = _wsc(mesh, y.reshape(4, 16, 8, 8), P("data", None, "model", None))
        t = jnp.tanh(h.transpose(0, 2, 1, 3))                            # [B, H, S, D]
        back = t.transpose(0, 2, 1, 3).reshape(4, 16, 64)
        flat = _wsc(mesh, x, P("data", "model", None)).reshape(64, 64)   # flatten (B, S) both sharded
        flat = _wsc(mesh, flat, P(("data", "model"), None))
        split = (flat * 2.0).reshape(4, 16, 64)
        return t, back, flat, split, y.reshape(4, 16, 2, 32).sum(2)

    return f


def _transpose_same(x, y):
    return x.T, x @ x.T, jnp.swapaxes(y, 0, 2), x.T @ x


def _concat_stack(a, b, c, w):
    return jnp.concatenate([a, b, c], axis=0) @ w, jnp.concatenate([a, b], axis=1), jnp.stack([a, b], axis=1)


def _slices(x, w):
    return x[3:61] @ w, x[5:] + x[:-5], jnp.roll(x, 3, axis=0) - jnp.flip(x, 0), jnp.pad(x, ((2, 5), (0, 0))), \
        x[1::3], x[7:8] * x[56:57]


def _gather_other_axis(table, ids, idx2, w):
    def loss(t):
        e = jnp.take(t, ids, axis=0)                  # [16, 8, 32]
        g = jnp.take_along_axis(t, idx2, axis=1)      # [64, 4]
        return jnp.sum(jnp.tanh(e) * w) + jnp.sum(g ** 2)

    return jax.value_and_grad(loss)(table)


def _a2a_reshards16(mesh):
    def f(a, b):
        a1 = _wsc(mesh, a, P(None, "x"))                     # dim 0 -> dim 1
        b1 = _wsc(mesh, b * 2.0, P(None, None, "x"))         # sequence -> features
        b2 = _wsc(mesh, jnp.tanh(b1), P("x"))                # 4 over 16: twelve empty shards
        return jnp.tanh(a1), b1, b2, _wsc(mesh, a1.T @ a1, P("x", None))

    return f


# ==== inference ==================================================================================
SH, SDH = 4, 8


def _spec_verify(emb, wq, wk, wv, wo, unemb, ck, cv, pos, toks, qdraft, u):
    # toks [B, K+1]: the last accepted token then K drafts; qdraft: the draft model's probabilities.
    b, t = toks.shape
    S = ck.shape[1]
    x = jnp.take(emb, toks, axis=0)
    h = _ln(x)
    q, k, v = ((h @ w).reshape(b, t, SH, SDH) for w in (wq, wk, wv))
    write = jax.vmap(lambda c, n, p: jax.lax.dynamic_update_slice(c, n, (p, 0, 0)))
    ck, cv = write(ck, k, pos), write(cv, v, pos)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, ck) / np.float32(np.sqrt(SDH))
    qpos = pos[:, None] + jnp.arange(t)[None]
    s = jnp.where((jnp.arange(S)[None, None, :] <= qpos[:, :, None])[:, None], s, -1e9)
    a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), cv).reshape(b, t, -1)
    logits = _ln(x + a @ wo) @ unemb
    p = jax.nn.softmax(logits, -1)
    pt = jnp.take_along_axis(p[:, :-1], toks[:, 1:, None], -1)[..., 0]
    acc = u < jnp.minimum(1.0, pt / qdraft)
    n_acc = jnp.sum(jnp.cumprod(acc.astype(jnp.int32), axis=1), axis=1)
    nxt = jnp.argmax(jnp.take_along_axis(logits, n_acc[:, None, None], 1)[:, 0], -1)
    return ck, cv, pos + n_acc + 1, nxt, n_acc, pt


def _spec_args():
    B, S, D, V, K = 4, 32, 32, 128, 4
    rng = np.random.default_rng(7420)
    return [_rand((V, D), 7421), _rand((D, D), 7422, scale=0.18), _rand((D, D), 7423, scale=0.18),
            _rand((D, D), 7424, scale=0.18), _rand((D, D), 7425, scale=0.18), _rand((D, V), 7426, scale=0.1),
            _rand((B, S, SH, SDH), 7427), _rand((B, S, SH, SDH), 7428),
            np.array([3, 10, 17, 24], np.int32), _ids((B, K + 1), V, 7429),
            rng.uniform(0.004, 0.012, (B, K)).astype(np.float32), rng.uniform(0.0, 1.0, (B, K)).astype(np.float32)]


def _cont_batch(wq, wk, wv, wo, ck, cv, pos, active, x):
    # Continuous batching: one new token per slot at the slot's own position (vmap DUS), inactive
    # slots left alone, attention up to each slot's length, finished slots evicted.
    b = x.shape[0]
    S = ck.shape[1]
    h = _ln(x)
    q, k, v = ((h @ w).reshape(b, SH, SDH) for w in (wq, wk, wv))
    write = jax.vmap(lambda c, n, p: jax.lax.dynamic_update_slice(c, n[None], (p, 0, 0)))
    live = active[:, None, None, None]
    ck = jnp.where(live, write(ck, k, pos), ck)
    cv = jnp.where(live, write(cv, v, pos), cv)
    s = jnp.einsum("bhd,bkhd->bhk", q, ck) / np.float32(np.sqrt(SDH))
    s = jnp.where(jnp.arange(S)[None, None, :] <= pos[:, None, None], s, -1e9)
    o = jnp.einsum("bhk,bkhd->bhd", jax.nn.softmax(s, -1), cv).reshape(b, -1) @ wo
    newpos = pos + active.astype(pos.dtype)
    done = newpos >= S - 1
    ck = jnp.where(done[:, None, None, None], 0.0, ck)
    cv = jnp.where(done[:, None, None, None], 0.0, cv)
    return o, ck, cv, jnp.where(done, 0, newpos)


def _cont_args():
    B, S, D = 8, 24, 32
    return [_rand((D, D), 7440 + i, scale=0.18) for i in range(4)] + \
           [_rand((B, S, SH, SDH), 7444), _rand((B, S, SH, SDH), 7445),
            np.array([0, 5, 22, 9, 13, 22, 1, 17], np.int32),
            np.array([True, True, True, False, True, False, True, True]), _rand((B, D), 7446)]


def _sample(h, unemb, key):
    logits = (h @ unemb) / 0.7
    vals, idx = jax.lax.top_k(logits, 8)
    masked = jnp.where(logits >= vals[:, -1:], logits, -jnp.inf)
    p = jax.nn.softmax(masked, -1)
    masked = jnp.where(p >= 0.1 * p.max(-1, keepdims=True), masked, -jnp.inf)      # min-p
    tok = jax.random.categorical(key, masked, axis=-1)
    lp = jnp.take_along_axis(jax.nn.log_softmax(logits, -1), tok[:, None], -1)[:, 0]
    return tok, vals, idx, p, lp


def _prefill_insert(emb, wq, wk, wv, wo, unemb, ck, cv, pos, toks, slot):
    # A new request's prompt prefilled and written into cache slot `slot` (traced) at position 0.
    _, t = toks.shape
    x = jnp.take(emb, toks, axis=0)
    h = _ln(x)
    q, k, v = ((h @ w).reshape(1, t, SH, SDH) for w in (wq, wk, wv))
    ck = jax.lax.dynamic_update_slice(ck, k, (slot, 0, 0, 0))
    cv = jax.lax.dynamic_update_slice(cv, v, (slot, 0, 0, 0))
    a = _causal_attn(q, k, v).reshape(1, t, -1)
    logits = _ln(x + a @ wo)[:, -1] @ unemb
    return ck, cv, pos.at[slot].set(t), jnp.argmax(logits, -1), logits


def probe7b_programs():
    ps = []

    def add(name, *a, **kw):
        ps.append(Program("p7b_" + name, *a, **kw))

    r = _rand
    # ---- shard_map collectives
    add("rs_ag_variants", "shard_map: psum_scatter tiled dim 1 / untiled dim 2, all_gather tiled axis 1 / stacked axis 0 / axis 1, 2 x 4",
        _rs_ag_variants, M24, DM, [P("data", "model"), P("model", None)], None,
        lambda: [r((8, 32), 7000), r((32, 16), 7001, scale=0.2)])
    add("ulysses_gqa_grad", "Ulysses (all_to_all seq <-> heads) with GQA 8 q / 4 kv heads, causal, data=2 x sp=4, grads",
        _ulysses_gqa, M24, ("data", "sp"), [P(), P(), P(), P(), P("data", "sp")], None,
        lambda: [r((64, 64), 7010, scale=0.125), r((64, 32), 7011, scale=0.125), r((64, 32), 7012, scale=0.125),
                 r((64, 64), 7013, scale=0.125), r((4, 32, 64), 7014)])
    add("moe_ep_argsort_capacity", "EP MoE in shard_map: argsort top-2, capacity 4 (drops), all_to_all over expert (tokens over data x expert), aux loss, grads",
        _moe_ep, M24, ("data", "expert"), [P(), P("expert"), P("expert"), P(("data", "expert"))], None,
        lambda: [r((16, 4), 7020), r((4, 16, 32), 7021, scale=0.25), r((4, 32, 16), 7022, scale=0.18),
                 r((64, 16), 7023)])
    add("coll_matmul_bidir", "bidirectional all-gather-matmul and matmul-reduce-scatter (two ppermute rings in fori_loop), 8",
        _coll_bidir, M8, ("x",), [P("x", None), P(None, "x"), P("x", None)], None,
        lambda: [r((64, 32), 7030), r((32, 64), 7031, scale=0.18), r((64, 32), 7032, scale=0.125)])
    add("pmax_pmin_pmean_2axes", "shard_map softmax by pmax / psum over model, pmin / pmax over data, pmean / psum over (data, model)",
        _stats_2axes, M24, DM, [P("data", "model")], None, lambda: [r((16, 32), 7040)])
    add("axis_index_rope_cumsum", "sequence over (data, model): axis_index of merged axes, RoPE at global positions, SP cumsum by all_gather",
        _seq_axis_index, M24, DM, [P(None, ("data", "model"))], None, lambda: [r((2, 64, 16), 7050)])
    add("dp_manual_tp_auto", "shard_map manual over data only (TP over model automatic): local grads, pmean, SGD, 2 x 4",
        _dp_manual_tp_auto, M24, DM, [P(None, "model"), P("model", None), P("data"), P("data")], None,
        lambda: [r((32, 64), 7060, scale=0.18), r((64, 16), 7061, scale=0.125), r((16, 32), 7062), r((16, 16), 7063)])
    add("megatron_sp_smap_grad", "Megatron SP in shard_map: LN on seq shard, all_gather seq, column / row matmul, psum_scatter seq; 2 layers, grads",
        _megatron_sp, M24, DM, [P(), P(None, "model"), P("model", None), P(None, "model"), P("model", None),
                                P("data", "model", None)], None,
        lambda: [1.0 + r((32,), 7070, scale=0.1), r((32, 64), 7071, scale=0.18), r((64, 32), 7072, scale=0.125),
                 r((32, 64), 7073, scale=0.18), r((64, 32), 7074, scale=0.125), r((4, 16, 32), 7075)])
    add("summa_44", "SUMMA on 4 x 4: masked-psum broadcasts of A's block column / B's block row in fori_loop, two chained products",
        _summa, M44, ("x", "y"), [P("x", "y"), P("x", "y"), P("x", "y")], None,
        lambda: [r((32, 32), 7080, scale=0.2), r((32, 32), 7081, scale=0.2), r((32, 32), 7082, scale=0.2)])
    add("vocab_parallel_embed_grad", "row-split vocab-parallel embedding in shard_map (range mask + psum), MLP head, grads of table and head",
        _vp_embed, M24, DM, [P("model", None), P(), P("data"), P("data")], None,
        lambda: [r((256, 32), 7090), r((32, 8), 7091, scale=0.18), _ids((8, 16), 256, 7092), r((8, 16, 8), 7093)])
    add("clip_adam_psum_2axes", "grads by the partitioner, shard_map Adam with global-norm clipping by psum over (data, model), donated state",
        _clip_adam, M24, DM, [P("data", "model")] * 6 + [P("data"), P("data"), P()], None,
        lambda: [r((32, 64), 7100, scale=0.18), r((64, 16), 7101, scale=0.125), np.zeros((32, 64), np.float32),
                 np.zeros((64, 16), np.float32), 0.01 + np.abs(r((32, 64), 7102, scale=0.01)),
                 0.01 + np.abs(r((64, 16), 7103, scale=0.01)), r((16, 32), 7104), r((16, 16), 7105), np.float32(3.0)],
        donate_argnums=(0, 1, 2, 3, 4, 5), quick=True)
    add("broadcast_from_root", "shard_map broadcasts: device 0's block by masked psum, the last by all_gather, the argmax holder's by pmax / pmin",
        _bcast_root, M8, ("x",), [P("x")], None, lambda: [r((64, 16), 7110)])
    add("ring_allreduce_manual", "ring all-reduce by hand: reduce-scatter then all-gather by ppermute in fori_loops, vs pmean, 8",
        _ring_allreduce, M8, ("x",), [P("x")], None, lambda: [r((8, 128), 7120)])
    add("halo_conv_smap_grad", "spatially parallel conv1d k=5: halo exchange by non-cyclic ppermutes, 2 layers, grads, data=2 x sp=4",
        _halo_conv, M24, ("data", "sp"), [P(), P(), P("data", "sp"), P("data", "sp")], None,
        lambda: [r((5, 8, 16), 7130, scale=0.2), r((5, 16, 8), 7131, scale=0.15), r((4, 64, 8), 7132),
                 r((4, 64, 8), 7133)])
    add("grad_accum_smap_fori", "gradient accumulation over 4 microbatches in fori_loop inside shard_map, pmean, SGD, 8",
        _accum, M8, ("data",), [P(), P(), P("data"), P("data")], None,
        lambda: [r((16, 32), 7140, scale=0.25), r((32, 8), 7141, scale=0.18), r((64, 16), 7142), r((64, 8), 7143)])
    add("cp_allgather_kv", "context parallel by all-gathered K / V (queries at axis_index offsets, causal), data=2 x cp=4, grads",
        _cp_allgather, M24, ("data", "cp"), [P(), P(), P(), P(), P("data", "cp")], None,
        lambda: [r((32, 32), 7150 + i, scale=32 ** -0.5) for i in range(4)] + [r((4, 32, 32), 7154)])
    add("mesh2222_smap_subsets", "2x2x2x2 shard_map: psum over (a, c), all_gather over d, psum_scatter over b, ppermute over (a, b), pmax over (b, c, d)",
        _mesh4_subsets, M2222, ABCD, [P(("a", "b"), ("c", "d"))], None, lambda: [r((16, 16), 7160)])
    add("vocab_topk_smap", "distributed top-k: local top_k on the vocab shard, all_gather candidates, top_k again, pmax / psum log-normaliser",
        _vocab_topk, M24, DM, [P("data"), P(None, "model")], None, lambda: [r((8, 32), 7170), r((32, 512), 7171)])
    add("a2a_variants", "shard_map all_to_all: tiled split 2 / concat 1, untiled on dim 1, tiled over merged (data, model), 2 x 4",
        _a2a_variants, M24, DM, [P("data", "model")], None, lambda: [r((8, 16, 8), 7180)])
    # ---- pipelines
    add("pipeline_circular_grad", "circular pipeline: 8 layers as 2 repeats x 4 stages, 4 microbatches, ppermute ring in fori_loop, stage=4 x data=2, grads",
        _circular_pipeline, M42, ("stage", "data"), [P(None, "stage"), P(None, "data"), P(None, "data")], None,
        lambda: [r((2, 4, 16, 16), 7200, scale=0.2), r((4, 8, 16), 7201), r((4, 8, 16), 7202)])
    add("pipeline_vmap_shift_grad", "praxis-style pipeline: vmap over 4 stacked stages, concatenate shift, state P(stage, data), scan, grads",
        _auto_pipeline, M42, ("stage", "data"), [P("stage"), P("stage"), P(None, "data"), P(None, "data")], None,
        lambda: [r((4, 16, 16), 7210, scale=0.25), r((4, 16), 7211, scale=0.1), r((4, 8, 16), 7212),
                 r((4, 8, 16), 7213)])
    add("gpipe_6mb_scan_grad", "GPipe: 6 microbatches over 4 stages, scan of 9 steps collecting ys, non-cyclic ppermute, grads, pp=4",
        _gpipe6, (4,), ("pp",), [P("pp"), P("pp"), P(), P()], None,
        lambda: [r((4, 16, 16), 7220, scale=0.25), r((4, 16), 7221, scale=0.1), r((6, 4, 16), 7222),
                 r((6, 4, 16), 7223)])
    # ---- ZeRO / FSDP
    add("fsdp_scan_wsc_gather", "FSDP over 8: stacked weights P(None, fsdp), per-layer gather by constraint in a remat scan, RS'd grads",
        _fsdp_scan, M8, ("fsdp",), [P(None, "fsdp"), P(None, "fsdp"), P("fsdp"), P("fsdp")], None,
        lambda: [r((3, 32, 64), 7300, scale=0.18), r((3, 64, 32), 7301, scale=0.125), r((16, 32), 7302),
                 r((16, 32), 7303)])
    add("zero1_adam", "ZeRO-1: replicated params / grads, Adam state over data=8, sharded update, params all-gathered, donated",
        _zero1, M8, ("data",), [P(), P(), P("data"), P("data"), P("data"), P("data"), P("data"), P("data")],
        (P(), P(), P(), P("data"), P("data"), P("data"), P("data")),
        lambda: [r((32, 64), 7310, scale=0.18), r((64, 16), 7311, scale=0.125), np.zeros((32, 64), np.float32),
                 np.zeros((64, 16), np.float32), 0.01 + np.abs(r((32, 64), 7312, scale=0.01)),
                 0.01 + np.abs(r((64, 16), 7313, scale=0.01)), r((16, 32), 7314), r((16, 16), 7315)],
        donate_argnums=(0, 1, 2, 3, 4, 5))
    add("hsdp_replica_shard", "hybrid sharded DP (replica=2 x shard=4): params and Adam state over shard, batch over both, donated",
        _hsdp, M24, ("replica", "shard"), [P("shard")] * 6 + [P(("replica", "shard"))] * 2, None,
        lambda: [r((32, 64), 7320, scale=0.18), r((64, 16), 7321, scale=0.125), np.zeros((32, 64), np.float32),
                 np.zeros((64, 16), np.float32), 0.01 + np.abs(r((32, 64), 7322, scale=0.01)),
                 0.01 + np.abs(r((64, 16), 7323, scale=0.01)), r((16, 32), 7324), r((16, 16), 7325)],
        donate_argnums=(0, 1, 2, 3, 4, 5))
    add("fsdp_tp_swiglu_scan", "FSDP x TP (2 x 4): scan over 2 SwiGLU layers stacked P(None, fsdp, tp), gathered over fsdp in the body, grads",
        _fsdp_tp_swiglu, M24, ("fsdp", "tp"),
        [P(None, "fsdp"), P(None, "fsdp", "tp"), P(None, "fsdp", "tp"), P(None, "tp", "fsdp"), P("fsdp"), P("fsdp")],
        None, lambda: [1.0 + r((2, 32), 7330, scale=0.1), r((2, 32, 64), 7331, scale=0.18), r((2, 32, 64), 7332, scale=0.18),
                       r((2, 64, 32), 7333, scale=0.125), r((8, 16, 32), 7334), r((8, 16, 32), 7335)])
    add("zero2_smap", "ZeRO-2 in shard_map: local grads, psum_scatter'd over data, Adam on the device's rows, all_gather'd params, 8",
        _zero2, M8, ("data",), [P(), P(), P("data"), P("data"), P("data"), P("data"), P("data"), P("data")], None,
        lambda: [r((32, 64), 7340, scale=0.18), r((64, 16), 7341, scale=0.125), np.zeros((32, 64), np.float32),
                 np.zeros((64, 16), np.float32), 0.01 + np.abs(r((32, 64), 7342, scale=0.01)),
                 0.01 + np.abs(r((64, 16), 7343, scale=0.01)), r((16, 32), 7344), r((16, 16), 7345)])
    add("mesh_8x1_fsdp_tp", "FSDP x TP SwiGLU step written for 2-D, on 8 x 1 (tp of size 1): constraints on tp, grads, SGD",
        _mesh8x1, (8, 1), ("fsdp", "tp"), [P("fsdp", "tp"), P("fsdp", "tp"), P("tp", "fsdp"), P("fsdp"), P("fsdp")], None,
        lambda: [r((32, 64), 7350, scale=0.18), r((32, 64), 7351, scale=0.18), r((64, 32), 7352, scale=0.125),
                 r((8, 8, 32), 7353), r((8, 8, 32), 7354)])
    # ---- tensor parallelism / MoE
    add("gqa_kv2_over_model4", "GQA 8 q / 2 kv heads, wk / wv's 16 columns over model=4 (a kv head split), causal, grads, 2 x 4",
        _plain(_gqa_kv2), M24, DM, [P("data"), P(None, "model"), P(None, "model"), P(None, "model"), P("model", None)],
        None, lambda: [r((4, 16, 64), 7400), r((64, 64), 7401, scale=0.125), r((64, 16), 7402, scale=0.125),
                       r((64, 16), 7403, scale=0.125), r((64, 64), 7404, scale=0.125)])
    add("moe_sort_capacity_222", "top-2 MoE by stable argsort + bincount slots, capacity 8 drops, [G,E,C,D] over (data, expert), F over model, grads",
        _moe_sort, M222, ("data", "expert", "model"), [P(), P("expert", None, "model"), P("expert", "model", None), P("data")],
        None, lambda: [r((16, 4), 7410), r((4, 16, 32), 7411, scale=0.25), r((4, 32, 16), 7412, scale=0.18),
                       r((4, 16, 16), 7413)])
    add("switch_ep_tp_smap_222", "Switch top-1 in shard_map: all_to_all over expert, expert FFN TP over model (psum), lb + z losses, grads, 2x2x2",
        _switch_partial, M222, ("data", "expert", "model"),
        [P(), P("expert", None, "model"), P("expert", "model", None), P(("data", "expert"))], None,
        lambda: [r((16, 4), 7415), r((4, 16, 32), 7416, scale=0.25), r((4, 32, 16), 7417, scale=0.18),
                 r((32, 16), 7418)])
    # ---- sharding API surface
    add("unconstrained_scan_grad", "P.UNCONSTRAINED constraints in a scan body (carry and activation) and on the grad, 2 x 4",
        _unconstrained_scan, M24, DM, [P("data"), P(None, None, "model")], None,
        lambda: [r((8, 16, 32), 7500), r((3, 32, 32), 7501, scale=0.18)])
    add("tuple_reshard_2222", "2x2x2x2: P((a,b),(c,d)) matmul -> P((a,c),(b,d)) -> P((d,c,b,a)) -> transpose P((b,a), d)",
        _tuple_reshard_2222, M2222, ABCD, [P(("a", "b"), ("c", "d")), P(("c", "d"), None)], None,
        lambda: [r((16, 32), 7510), r((32, 32), 7511, scale=0.18)])
    add("out_shardings_axis_move", "[B,S,D] in P(x, None, y), outputs P(None, y, x), P(y, x), P(y, x, None) (axes moved between dims)",
        _plain(lambda h, w: (jax.nn.gelu(h @ w), jax.nn.gelu(h @ w).sum(-1), h * 2.0)), M24, ("x", "y"),
        [P("x", None, "y"), P("y", None)], (P(None, "y", "x"), P("y", "x"), P("y", "x", None)),
        lambda: [r((4, 16, 32), 7520), r((32, 32), 7521, scale=0.18)])
    add("device_put_in_jit", "jax.device_put(x, NamedSharding) inside jit: P(None, x), P((x, y)), P(), P(y, x), 2 x 4",
        _device_put_jit, M24, ("x", "y"), [P("x", "y"), P("y")], None,
        lambda: [r((16, 16), 7530), r((16, 8), 7531)])
    add("device_order_evens_odds", "2 x 4 over devices (0,2,4,6,1,3,5,7): matmul, shard_map ring over model + psum over data, reshard",
        _order_evens_odds, M24, DM, [P("data", "model"), P("model", None)], None,
        lambda: [r((16, 32), 7540), r((32, 32), 7541, scale=0.18)], device_order=(0, 2, 4, 6, 1, 3, 5, 7))
    add("mesh_1x8_smap", "1 x 8: shard_map psum_scatter over (data, model), all_gather / pmean over the size-1 data, ppermute +3",
        _mesh1x8_smap, (1, 8), DM, [P(("data", "model"))], None, lambda: [r((32, 16), 7550)])
    add("flat16_uneven_100_13", "16 flat: 100 rows (7 per shard) and 13 rows (empty shards) over 16: softmax over rows, cumsum, b @ b.T, max",
        _flat16_uneven, (16,), ("x",), [P("x"), P("x"), P()], None,
        lambda: [r((112, 32), 7560), r((16, 40), 7561), r((32, 40), 7562, scale=0.18)])
    add("dp_tp_44_uneven_hidden", "('dp','tp') 4 x 4: hidden 100 over tp, batch 13 over dp (made inside), MLP loss, grads",
        _dp_tp_uneven, M44, ("dp", "tp"), [P(None, "tp"), P("tp", None), P("dp"), P("dp")], None,
        lambda: [r((32, 112), 7570, scale=0.18), r((112, 16), 7571, scale=0.1), r((16, 32), 7572), r((16, 16), 7573)])
    # ---- reshards
    add("ulysses_by_constraints", "Ulysses left to the partitioner: q / k / v seq-sharded -> head-sharded for attention -> seq-sharded, grads",
        _ulysses_wsc, M24, ("data", "sp"), [P(), P(), P(), P(), P("data", "sp")], None,
        lambda: [r((32, 32), 7600 + i, scale=32 ** -0.5) for i in range(4)] + [r((4, 32, 32), 7604)])
    add("heads_reshape_flatten", "[B,S,H*D] over model <-> [B,S,H,D] heads over model, [B,H,S,D] transposes, flatten of (data, model) dims",
        _heads_reshape, M24, DM, [P("data", None, "model"), P(None, "model")],
        (P("data", "model"), P("data", None, "model"), P(("data", "model")), P("data", "model"), P("data", None, "model")),
        lambda: [r((4, 16, 64), 7610), r((64, 64), 7611, scale=0.125)])
    add("transpose_keep_spec", "x.T, x @ x.T, swapaxes with out_shardings equal to the inputs' specs on 2 x 4 (real transposes)",
        _plain(_transpose_same), M24, ("x", "y"), [P("x", "y"), P("x", None, "y")],
        (P("x", "y"), P("y", "x"), P("x", None, "y"), P("x", "y")),
        lambda: [r((16, 32), 7620), r((8, 4, 16), 7621)])
    add("concat_stack_mixed", "concatenate of P(x, None), P(None, y), P(y, None) arrays on dims 0 / 1, stack, a matmul, 2 x 4",
        _plain(_concat_stack), M24, ("x", "y"), [P("x", None), P(None, "y"), P("y", None), P()],
        (P("x"), P(None, "y"), P("y", None, "x")),
        lambda: [r((16, 32), 7630), r((16, 32), 7631), r((8, 32), 7632), r((32, 16), 7633, scale=0.18)])
    add("slices_uneven_offsets", "dim over 8: x[3:61] @ w, x[5:] + x[:-5], roll 3 - flip, pad (2, 5), x[1::3], x[7:8] * x[56:57]",
        _plain(_slices), M8, ("x",), [P("x"), P()], None, lambda: [r((64, 16), 7640), r((16, 8), 7641, scale=0.25)])
    add("gather_idx_other_axis", "take(table P(x, None), ids P(None, y)), take_along_axis with idx P(y, None), table grad, 2 x 4",
        _plain(_gather_other_axis), M24, ("x", "y"), [P("x", None), P(None, "y"), P("y", None), P()], None,
        lambda: [r((64, 32), 7650), _ids((16, 8), 64, 7651), _ids((64, 4), 32, 7652), r((32,), 7653)], quick=True)
    add("a2a_reshards_16", "16 flat: P(x) -> P(None, x), [4,32,16] seq -> features -> P(x) (4 over 16), a1.T @ a1",
        _a2a_reshards16, (16,), ("x",), [P("x"), P(None, "x")], None, lambda: [r((32, 64), 7660), r((4, 32, 16), 7661)])
    # ---- inference
    add("spec_decode_verify", "speculative decoding verify: 5 tokens, per-row cache DUS (vmap), heads / vocab over model, ratio acceptance, 2 x 4",
        _plain(_spec_verify), M24, DM,
        [P("model", None), P(None, "model"), P(None, "model"), P(None, "model"), P("model", None), P(None, "model"),
         P("data", None, "model"), P("data", None, "model"), P("data"), P("data"), P("data"), P("data")], None, _spec_args)
    add("continuous_batching", "continuous batching: per-slot positions, vmap DUS for active slots, masked attention, eviction, 2 x 4",
        _plain(_cont_batch), M24, DM,
        [P(None, "model"), P(None, "model"), P(None, "model"), P("model", None), P("data", None, "model"),
         P("data", None, "model"), P("data"), P("data"), P("data")], None, _cont_args)
    add("sample_temp_topk_minp", "sampling: temperature, top_k 8 and min-p on logits with vocab 512 over model, categorical(key), 2 x 4",
        _plain(_sample), M24, DM, [P("data"), P(None, "model"), P()], None,
        lambda: [r((8, 32), 7700), r((32, 512), 7701), np.array([0, 77], np.uint32)])
    add("prefill_insert_slot", "prefill an 8-token prompt and DUS its K / V into cache slot `slot` (traced), heads over model, slots over data",
        _plain(_prefill_insert), M24, DM,
        [P("model", None), P(None, "model"), P(None, "model"), P(None, "model"), P("model", None), P(None, "model"),
         P("data", None, "model"), P("data", None, "model"), P("data"), P(), P()], None,
        lambda: [r((128, 32), 7710), r((32, 32), 7711, scale=0.18), r((32, 32), 7712, scale=0.18),
                 r((32, 32), 7713, scale=0.18), r((32, 32), 7714, scale=0.18), r((32, 128), 7715, scale=0.1),
                 r((8, 24, SH, SDH), 7716), r((8, 24, SH, SDH), 7717), np.array([4, 9, 0, 13, 2, 7, 20, 5], np.int32),
                 _ids((1, 8), 128, 7718), np.int32(5)])
    return ps
