"""PyTorch/XLA SPMD programs for torch_xla_compare.py.

Each program is a function of a Ctx and returns the list of tensors whose values are compared.
The same function runs twice: eagerly on the CPU (ctx.xla False: every sharding call is a no-op;
torch's own results, a sanity check of torch_xla's) and lazily on the XLA device with SPMD
(ctx.xla True), where the HLO of the returned tensors is what xshard gets. Inputs are drawn on the
CPU from one seeded generator (and modules are built after torch.manual_seed), so both runs see the
same values; a program must draw them in the same order in both runs.

Imported only inside the torch_xla venv.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Ctx:
    def __init__(self, xla):
        self.xla = xla
        torch.manual_seed(0)
        self.gen = torch.Generator().manual_seed(1234)
        if xla:
            import torch_xla
            import torch_xla.distributed.spmd as xs
            self.xs = xs
            self.dev = torch_xla.device()
        else:
            self.xs = None
            self.dev = torch.device("cpu")

    # ---- inputs
    def randn(self, *shape, dtype=torch.float32, scale=1.0):
        return (torch.randn(*shape, generator=self.gen) * scale).to(dtype).to(self.dev)

    def randint(self, high, *shape, dtype=torch.int64):
        return torch.randint(0, high, shape, generator=self.gen).to(dtype).to(self.dev)

    def module(self, m, seed=7, dtype=None):
        """A module built on the CPU (call with a lambda, after a fixed seed), moved to the device."""
        torch.manual_seed(seed)
        m = m()
        if dtype is not None:
            m = m.to(dtype)
        return m.to(self.dev)

    # ---- sharding (no-ops on the CPU)
    def mesh(self, shape, names, order=None):
        if not self.xla:
            return None
        ids = np.arange(int(np.prod(shape))) if order is None else np.array(order)
        return self.xs.Mesh(ids, tuple(shape), tuple(names))

    def shard(self, t, mesh, spec):
        if self.xla:
            self.xs.mark_sharding(t, mesh, tuple(spec))
        return t

    def clear(self, t):
        if self.xla:
            self.xs.clear_sharding(t)
        return t


class Program:
    def __init__(self, name, what, fn, dtype="f32", eager_check=True, atol=None):
        self.name, self.what, self.fn, self.dtype, self.eager_check = name, what, fn, dtype, eager_check
        self.atol = atol  # an absolute atol instead of a fraction of max |output|


PROGRAMS = []


def program(what, dtype="f32", eager_check=True, atol=None):
    def deco(fn):
        PROGRAMS.append(Program(fn.__name__, what, fn, dtype, eager_check, atol))
        return fn
    return deco


def mlp(d_in, d_hidden, d_out, act=nn.GELU):
    return nn.Sequential(nn.Linear(d_in, d_hidden), act(), nn.Linear(d_hidden, d_out))


# ------------------------------------------------------------------------------------------------
# Tensor-parallel linear layers


@program("column-parallel nn.Linear (weight rows over 8), replicated input")
def linear_col(c):
    mesh = c.mesh((8,), ("model",))
    lin = c.module(lambda: nn.Linear(64, 128))
    c.shard(lin.weight, mesh, ("model", None))
    c.shard(lin.bias, mesh, ("model",))
    x = c.randn(16, 64)
    return [lin(x)]


@program("row-parallel nn.Linear (weight cols over 8), input features sharded -> all-reduce")
def linear_row(c):
    mesh = c.mesh((8,), ("model",))
    lin = c.module(lambda: nn.Linear(128, 32))
    c.shard(lin.weight, mesh, (None, "model"))
    x = c.randn(16, 128)
    c.shard(x, mesh, (None, "model"))
    return [lin(x)]


@program("Megatron MLP: fc1 column-parallel, GELU, fc2 row-parallel (1-D mesh of 8)")
def mlp_tp(c):
    mesh = c.mesh((8,), ("model",))
    m = c.module(lambda: mlp(32, 128, 32))
    c.shard(m[0].weight, mesh, ("model", None))
    c.shard(m[0].bias, mesh, ("model",))
    c.shard(m[2].weight, mesh, (None, "model"))
    x = c.randn(8, 32)
    return [m(x)]


@program("MLP on a (data 4, model 2) mesh: batch over data, Megatron tensor parallel over model")
def mlp_tp_2d(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    m = c.module(lambda: mlp(32, 64, 16))
    c.shard(m[0].weight, mesh, ("model", None))
    c.shard(m[2].weight, mesh, (None, "model"))
    x = c.randn(16, 32)
    c.shard(x, mesh, ("data", None))
    y = m(x)
    c.shard(y, mesh, ("data", None))
    return [y]


@program("bf16 Megatron MLP on (data 4, model 2)", dtype="bf16")
def mlp_bf16(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    m = c.module(lambda: mlp(32, 64, 32, act=nn.SiLU), dtype=torch.bfloat16)
    c.shard(m[0].weight, mesh, ("model", None))
    c.shard(m[2].weight, mesh, (None, "model"))
    x = c.randn(16, 32, dtype=torch.bfloat16)
    c.shard(x, mesh, ("data", None))
    return [m(x)]


# ------------------------------------------------------------------------------------------------
# Training steps


def train_step(c, model, x, target, opt, loss_fn=F.mse_loss):
    opt.zero_grad()
    loss = loss_fn(model(x), target)
    loss.backward()
    opt.step()
    return loss


@program("MLP train step, data parallel over 8: fwd + bwd + SGD(momentum) in one graph")
def train_dp_sgd(c):
    mesh = c.mesh((8,), ("data",))
    m = c.module(lambda: mlp(16, 32, 8, act=nn.ReLU))
    x, t = c.randn(32, 16), c.randn(32, 8)
    c.shard(x, mesh, ("data", None))
    c.shard(t, mesh, ("data", None))
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    loss = train_step(c, m, x, t, opt)
    mom = [opt.state[p]["momentum_buffer"] for p in m.parameters()]
    return [loss, *m.parameters(), *mom]


@program("MLP train step on (data 4, model 2): tensor-parallel weights, AdamW(weight decay)")
def train_2d_adamw(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    m = c.module(lambda: mlp(16, 32, 16))
    c.shard(m[0].weight, mesh, ("model", None))
    c.shard(m[0].bias, mesh, ("model",))
    c.shard(m[2].weight, mesh, (None, "model"))
    x, t = c.randn(16, 16), c.randn(16, 16)
    c.shard(x, mesh, ("data", None))
    c.shard(t, mesh, ("data", None))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)
    loss = train_step(c, m, x, t, opt)
    st = [opt.state[p][k] for p in m.parameters() for k in ("exp_avg", "exp_avg_sq")]
    return [loss, *m.parameters(), *st]


@program("FSDP-style: every parameter sharded on dim 0 over fsdp=8, batch over fsdp, AdamW step")
def fsdp_adamw(c):
    mesh = c.mesh((8,), ("fsdp",))
    m = c.module(lambda: nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 16)))
    for p in m.parameters():
        c.shard(p, mesh, ("fsdp",) + (None,) * (p.dim() - 1))
    x, t = c.randn(16, 32), c.randn(16, 16)
    c.shard(x, mesh, ("fsdp", None))
    c.shard(t, mesh, ("fsdp", None))
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
    loss = train_step(c, m, x, t, opt)
    return [loss, *m.parameters()]


@program("FSDPv2 wrapper (SpmdFullyShardedDataParallel, mesh (fsdp 8)): loss and gradients")
def fsdpv2_grads(c):
    m = c.module(lambda: nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 8)))
    x, t = c.randn(16, 16), c.randn(16, 8)
    if c.xla:
        from torch_xla.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel
        mesh = c.mesh((8,), ("fsdp",))
        c.xs.set_global_mesh(mesh)
        m = SpmdFullyShardedDataParallel(m, mesh=mesh)
        c.shard(x, mesh, ("fsdp", None))
    loss = F.mse_loss(m(x), t)
    loss.backward()
    return [loss, *(p.grad for p in m.parameters())]


@program("train step, conv net with batch sharded over 8: Conv2d, ReLU, MaxPool2d, Linear, CE, SGD")
def conv_train_dp(c):
    mesh = c.mesh((8,), ("data",))
    m = c.module(lambda: nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                       nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                                       nn.Linear(8 * 4 * 4, 10)))
    x = c.randn(16, 3, 8, 8)
    y = c.randint(10, 16)
    c.shard(x, mesh, ("data", None, None, None))
    c.shard(y, mesh, ("data",))
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    loss = train_step(c, m, x, y, opt, loss_fn=F.cross_entropy)
    return [loss, *m.parameters()]


@program("conv net forward, (data 4, model 2): batch over data, conv output channels over model")
def conv_tp(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    m = c.module(lambda: nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8).eval(),
                                       nn.ReLU(), nn.AvgPool2d(2)))
    c.shard(m[0].weight, mesh, ("model", None, None, None))
    x = c.randn(8, 4, 8, 8)
    c.shard(x, mesh, ("data", None, None, None))
    return [m(x)]


# ------------------------------------------------------------------------------------------------
# Attention, norms, embeddings, losses


@program("nn.MultiheadAttention (4 heads, batch_first), batch over data=4, in_proj over model=2")
def mha(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    a = c.module(lambda: nn.MultiheadAttention(32, 4, batch_first=True))
    c.shard(a.in_proj_weight, mesh, ("model", None))
    c.shard(a.out_proj.weight, mesh, (None, "model"))
    x = c.randn(8, 6, 32)
    c.shard(x, mesh, ("data", None, None))
    out, w = a(x, x, x, need_weights=True)
    return [out, w]


@program("hand-written causal SDPA, heads over model=2, batch over data=4, with grads of q/k/v weights")
def sdpa_heads(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    B, S, H, D = 4, 8, 4, 8
    wq, wk, wv, wo = (c.randn(H * D, H * D, scale=0.2).requires_grad_() for _ in range(4))
    for w in (wq, wk, wv):
        c.shard(w, mesh, (None, "model"))
    c.shard(wo, mesh, ("model", None))
    x = c.randn(B, S, H * D)
    c.shard(x, mesh, ("data", None, None))

    def heads(t):
        t = t.view(B, S, H, D).transpose(1, 2)
        c.shard(t, mesh, ("data", "model", None, None))
        return t
    q, k, v = heads(x @ wq), heads(x @ wk), heads(x @ wv)
    s = q @ k.transpose(-1, -2) / math.sqrt(D)
    mask = torch.triu(torch.ones(S, S, dtype=torch.bool, device=x.device), 1)
    s = s.masked_fill(mask, float("-inf"))
    o = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, S, H * D) @ wo
    loss = o.square().mean()
    loss.backward()
    return [o, wq.grad, wk.grad, wv.grad, wo.grad]


@program("F.scaled_dot_product_attention (causal), batch x heads sharded on (data 4, model 2)")
def sdpa_fn(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    q, k, v = (c.randn(4, 4, 8, 16) for _ in range(3))
    for t in (q, k, v):
        c.shard(t, mesh, ("data", "model", None, None))
    return [F.scaled_dot_product_attention(q, k, v, is_causal=True)]


@program("nn.LayerNorm over a hidden dim sharded over 8 (reductions over the sharded dim)")
def layernorm_sharded(c):
    mesh = c.mesh((8,), ("model",))
    ln = c.module(lambda: nn.LayerNorm(64))
    with torch.no_grad():
        ln.weight.add_(0.5)
        ln.bias.add_(0.25)
    x = c.randn(4, 6, 64)
    c.shard(x, mesh, (None, None, "model"))
    return [ln(x)]


@program("RMSNorm (hand-written, rsqrt) + residual on (data 4, model 2): batch and hidden sharded")
def rmsnorm(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    w = c.randn(32)
    x = c.randn(8, 5, 32)
    c.shard(x, mesh, ("data", None, "model"))
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * (1 + w)
    return [y + x]


@program("nn.Embedding with the vocabulary sharded over 8, token ids batch-replicated")
def embedding_vocab(c):
    mesh = c.mesh((8,), ("model",))
    e = c.module(lambda: nn.Embedding(96, 16))
    c.shard(e.weight, mesh, ("model", None))
    ids = c.randint(96, 4, 10)
    return [e(ids)]


@program("embedding + sum-of-squares loss backward: scatter-add gradient into a vocab-sharded table")
def embedding_grad(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    e = c.module(lambda: nn.Embedding(64, 8))
    c.shard(e.weight, mesh, ("model", None))
    ids = c.randint(64, 8, 6)
    c.shard(ids, mesh, ("data", None))
    loss = e(ids).square().sum()
    loss.backward()
    return [loss, e.weight.grad]


@program("F.cross_entropy over a vocabulary sharded over model=2, batch over data=4, with dlogits")
def cross_entropy_vocab(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    logits = c.randn(16, 40).requires_grad_()
    c.shard(logits, mesh, ("data", "model"))
    y = c.randint(40, 16)
    loss = F.cross_entropy(logits, y, label_smoothing=0.1)
    loss.backward()
    return [loss, logits.grad]


# ------------------------------------------------------------------------------------------------
# Recurrent cells


@program("nn.GRUCell unrolled 3 steps, batch over 8")
def gru_cell(c):
    mesh = c.mesh((8,), ("data",))
    g = c.module(lambda: nn.GRUCell(12, 16))
    xs_ = c.randn(3, 16, 12)
    h = c.randn(16, 16)
    c.shard(xs_, mesh, (None, "data", None))
    c.shard(h, mesh, ("data", None))
    for i in range(3):
        h = g(xs_[i], h)
    return [h]


@program("nn.LSTMCell unrolled 3 steps, gates' weight rows over model=2, batch over data=4, grads")
def lstm_cell(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    cell = c.module(lambda: nn.LSTMCell(8, 16))
    c.shard(cell.weight_ih, mesh, ("model", None))
    c.shard(cell.weight_hh, mesh, ("model", None))
    xs_ = c.randn(3, 8, 8)
    c.shard(xs_, mesh, (None, "data", None))
    h, s = c.randn(8, 16), c.randn(8, 16)
    for i in range(3):
        h, s = cell(xs_[i], (h, s))
    loss = h.sum()
    loss.backward()
    return [h, s, cell.weight_ih.grad, cell.weight_hh.grad]


# ------------------------------------------------------------------------------------------------
# Sharding API corners


@program("mark_sharding on intermediates: a chain of reshards (rows, cols, both) between matmuls")
def intermediates(c):
    mesh = c.mesh((4, 2), ("a", "b"))
    x, w1, w2 = c.randn(16, 16), c.randn(16, 16), c.randn(16, 16)
    c.shard(x, mesh, ("a", None))
    h = torch.tanh(x @ w1)
    c.shard(h, mesh, (None, ("a", "b")))
    h = h * 2 + 1
    c.shard(h, mesh, ("b", "a"))
    y = h @ w2
    c.shard(y, mesh, (("a", "b"), None))
    return [y, h.sum(0)]


@program("3-D mesh (2x2x2): batched matmul with batch, rows and cols on three axes, einsum")
def mesh_3d(c):
    mesh = c.mesh((2, 2, 2), ("x", "y", "z"))
    a, b = c.randn(4, 8, 16), c.randn(4, 16, 8)
    c.shard(a, mesh, ("x", "y", "z"))
    c.shard(b, mesh, ("x", "z", None))
    y = torch.einsum("bij,bjk->bik", a, b)
    c.shard(y, mesh, ("x", None, "y"))
    return [y, torch.einsum("bij->bj", a)]


@program("uneven dims over 8: f32[13,7] @ f32[7,11] rows sharded, softmax, sums over 13")
def uneven(c):
    mesh = c.mesh((8,), ("d",))
    x, w = c.randn(13, 7), c.randn(7, 11)
    c.shard(x, mesh, ("d", None))
    c.shard(w, mesh, (None, "d"))
    y = torch.softmax(x @ w, -1)
    return [y, y.sum(0), x.max(0).values]


@program("partial replication: (data 4, model 2) specs with None and one-axis shardings")
def partial_replication(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    x, y, z = c.randn(8, 12), c.randn(12, 6), c.randn(8, 6)
    c.shard(x, mesh, ("data", None))
    c.shard(y, mesh, (None, None))
    c.shard(z, mesh, (None, "model"))
    return [x @ y + z, (x @ y * z).sum(1)]


@program("xs.clear_sharding on sharded inputs (one re-marked differently), then a matmul chain")
def clear_sharding(c):
    # (clear_sharding on an intermediate leaves a "Sharding" custom-call without a sharding in
    # torch_xla 2.9's HLO, which XLA itself rejects: not a case for xshard.)
    mesh = c.mesh((8,), ("d",))
    x, w = c.randn(16, 8), c.randn(8, 8)
    c.shard(x, mesh, ("d", None))
    c.shard(w, mesh, (None, "d"))
    c.clear(w)
    c.clear(x)
    c.shard(x, mesh, (None, "d"))
    h = x @ w
    return [torch.relu(h) @ w.t()]


@program("Mesh with a custom device order (4x2 over [7,5,3,1,6,4,2,0]), MLP with tensor parallel")
def device_order(c):
    mesh = c.mesh((4, 2), ("data", "model"), order=[7, 5, 3, 1, 6, 4, 2, 0])
    m = c.module(lambda: mlp(16, 32, 8))
    c.shard(m[0].weight, mesh, ("model", None))
    c.shard(m[2].weight, mesh, (None, "model"))
    x = c.randn(8, 16)
    c.shard(x, mesh, ("data", None))
    return [m(x)]


@program("1-D mesh with reversed device order [7..0]: row-sharded x, cumsum, argmax, topk")
def reversed_mesh(c):
    mesh = c.mesh((8,), ("d",), order=list(range(7, -1, -1)))
    x = c.randn(16, 24)
    c.shard(x, mesh, ("d", None))
    cs = torch.cumsum(x, 1)
    vals, idx = torch.topk(x, 3, dim=1)
    return [cs, x.argmax(1), vals, idx]


@program("mark_sharding_with_gradients on an activation, MLP grads (data 4, model 2)")
def shard_with_grads(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    m = c.module(lambda: mlp(8, 16, 4))
    x = c.randn(8, 8)
    c.shard(x, mesh, ("data", None))
    h = m[1](m[0](x))
    if c.xla:
        h = c.xs.mark_sharding_with_gradients(h, mesh, ("data", "model"))
    y = m[2](h)
    y.square().mean().backward()
    return [y, m[0].weight.grad, m[2].weight.grad]


@program("manual region: enable_manual_sharding, a local op, disable_manual_sharding (shard_map-like)")
def manual_region(c):
    mesh = c.mesh((8,), ("d",))
    x = c.randn(16, 8)
    c.shard(x, mesh, ("d", None))
    y = torch.sin(x) * 2
    if c.xla:
        m = c.xs.enable_manual_sharding(y, ("d", None), mesh=mesh).global_tensor
        m = m * m + 1
        y = c.xs.disable_manual_sharding(m, ("d", None), (16, 8), mesh=mesh).global_tensor
    else:
        y = y * y + 1
    return [y + 1]


@program("a transformer block (pre-LN, MHA via SDPA, MLP) and its loss gradient on (data 2, model 4)")
def transformer_block(c):
    mesh = c.mesh((2, 4), ("data", "model"))
    D, H = 32, 4

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
            self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

        def forward(self, x):
            B, S, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(B, S, 3, H, D // H).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(B, S, D))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
    b = c.module(Block)
    c.shard(b.qkv.weight, mesh, ("model", None))
    c.shard(b.proj.weight, mesh, (None, "model"))
    c.shard(b.fc1.weight, mesh, ("model", None))
    c.shard(b.fc2.weight, mesh, (None, "model"))
    x = c.randn(4, 8, D)
    c.shard(x, mesh, ("data", None, None))
    y = b(x)
    y.square().mean().backward()
    return [y, b.qkv.weight.grad, b.fc2.weight.grad, b.ln1.weight.grad]


@program("in-place updates and views: index_add_, slice assignment and masked_fill on sharded rows")
def inplace_views(c):
    mesh = c.mesh((8,), ("d",))
    x = c.randn(16, 8)
    c.shard(x, mesh, ("d", None))
    idx = c.randint(16, 5)
    src = c.randn(5, 8)
    y = x.clone()
    y.index_add_(0, idx, src)
    y[2:9, 1:3] = 0.5
    y = y.masked_fill(y > 1.5, -1.0)
    return [y, y[::2].sum(1)]


@program("dropout in train mode (torch_xla's RNG seed lifted as a parameter)", eager_check=False)
def dropout(c):
    mesh = c.mesh((8,), ("d",))
    x = c.randn(16, 32)
    c.shard(x, mesh, ("d", None))
    return [F.dropout(x, 0.5, training=True)]


# ------------------------------------------------------------------------------------------------
# More model code and ops (second batch)


@program("FSDP x TP (fsdp 4, model 2): 2-D sharded weights, grad clipping (clip_grad_norm_), SGD")
def fsdp_tp_clip(c):
    mesh = c.mesh((4, 2), ("fsdp", "model"))
    m = c.module(lambda: mlp(16, 32, 16, act=nn.SiLU))
    c.shard(m[0].weight, mesh, ("model", "fsdp"))
    c.shard(m[2].weight, mesh, ("fsdp", "model"))
    c.shard(m[0].bias, mesh, ("model",))
    x, t = c.randn(16, 16), c.randn(16, 16)
    c.shard(x, mesh, ("fsdp", None))
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    opt.zero_grad()
    loss = F.mse_loss(m(x), t)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
    opt.step()
    return [loss, norm, *m.parameters()]


@program("two gradient-accumulation micro-steps in one graph, batch over (data 2, model 4) both axes")
def grad_accum(c):
    mesh = c.mesh((2, 4), ("data", "model"))
    m = c.module(lambda: mlp(8, 16, 4, act=nn.ReLU))
    xs_ = [c.randn(16, 8) for _ in range(2)]
    ts = [c.randn(16, 4) for _ in range(2)]
    for x in xs_ + ts:
        c.shard(x, mesh, (("data", "model"), None))
    for x, t in zip(xs_, ts):
        (F.mse_loss(m(x), t) / 2).backward()
    return [p.grad for p in m.parameters()]


@program("BatchNorm2d in train mode (batch statistics over a batch sharded over 8) + running stats")
def batchnorm_train(c):
    mesh = c.mesh((8,), ("data",))
    bn = c.module(lambda: nn.BatchNorm2d(4))
    x = c.randn(16, 4, 5, 5)
    c.shard(x, mesh, ("data", None, None, None))
    y = bn(x)
    return [y, bn.running_mean, bn.running_var]


@program("conv2d with the image height sharded over 8 (spatial partitioning: halos) and its grads")
def conv_spatial(c):
    mesh = c.mesh((8,), ("h",))
    conv = c.module(lambda: nn.Conv2d(2, 4, 3, padding=1))
    x = c.randn(2, 2, 32, 8)
    c.shard(x, mesh, (None, None, "h", None))
    y = F.relu(conv(x))
    c.shard(y, mesh, (None, None, "h", None))
    y.square().sum().backward()
    return [y, conv.weight.grad]


@program("depthwise conv1d (groups) + ConvTranspose1d, batch over data=4, channels over model=2")
def conv1d_groups(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    dw = c.module(lambda: nn.Conv1d(8, 8, 3, padding=2, dilation=2, groups=8))
    up = c.module(lambda: nn.ConvTranspose1d(8, 4, 4, stride=2, padding=1), seed=8)
    x = c.randn(8, 8, 12)
    c.shard(x, mesh, ("data", "model", None))
    return [up(F.gelu(dw(x)))]


@program("fused qkv projection chunked along a model-sharded dim, torch.cat along a sharded dim")
def chunk_cat(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    x, w = c.randn(8, 16), c.randn(16, 48)
    c.shard(x, mesh, ("data", None))
    c.shard(w, mesh, (None, "model"))
    q, k, v = (x @ w).chunk(3, dim=-1)
    y = torch.cat([q * k, v, q], dim=-1)
    return [y, torch.cat([x, x.flip(0)], 0).sum(1)]


@program("gather / scatter / index_select / sort on a model-sharded dim (4x2 mesh)")
def gather_scatter(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    x = c.randn(8, 16)
    c.shard(x, mesh, ("data", "model"))
    idx = c.randint(16, 8, 5)
    rows = c.randint(8, 6)
    g = torch.gather(x, 1, idx)
    s = torch.zeros(8, 16, device=x.device).scatter_add(1, idx, g)
    srt, order = torch.sort(x, dim=1, descending=True)
    return [g, s, x.index_select(0, rows), srt, order]


@program("KV-cache update at a tensor position (index_copy_ / dynamic-update-slice), heads sharded")
def kv_cache(c):
    mesh = c.mesh((2, 4), ("data", "model"))
    cache = c.randn(2, 4, 16, 8)  # batch, heads, seq, dim
    c.shard(cache, mesh, ("data", "model", None, None))
    new = c.randn(2, 4, 1, 8)
    c.shard(new, mesh, ("data", "model", None, None))
    pos = torch.tensor([5], device=c.dev)
    cache = cache.index_copy(2, pos, new)
    q = c.randn(2, 4, 1, 8)
    att = torch.softmax(q @ cache.transpose(-1, -2), -1) @ cache
    return [cache, att]


@program("autocast(bf16) linear + f32 loss on (data 4, model 2): mixed precision casts", dtype="bf16",
         eager_check=False)  # CPU autocast picks other ops for bf16 than XLA's
def autocast_bf16(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    m = c.module(lambda: mlp(16, 32, 8))
    c.shard(m[0].weight, mesh, ("model", None))
    c.shard(m[2].weight, mesh, (None, "model"))
    x = c.randn(8, 16)
    c.shard(x, mesh, ("data", None))
    with torch.autocast("xla" if c.xla else "cpu", dtype=torch.bfloat16):
        y = m(x)
    loss = y.float().square().mean()
    loss.backward()
    return [loss, m[0].weight.grad.float()]


@program("NLL loss with ignore_index and one_hot labels, logits over model=8 (1-D)")
def nll_ignore(c):
    mesh = c.mesh((8,), ("model",))
    logits = c.randn(12, 24)
    c.shard(logits, mesh, (None, "model"))
    y = c.randint(24, 12)
    y = torch.where(torch.arange(12, device=y.device) % 4 == 0, torch.full_like(y, -100), y)
    lp = F.log_softmax(logits, -1)
    oh = F.one_hot(y.clamp(min=0), 24).float()
    return [F.nll_loss(lp, y, ignore_index=-100), (lp * oh).sum(-1)]


@program("nn.TransformerEncoderLayer (train mode, dropout 0), batch over 8, gradient of the input")
def encoder_layer(c):
    mesh = c.mesh((8,), ("data",))
    layer = c.module(lambda: nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True))
    x = c.randn(8, 5, 16).requires_grad_()
    c.shard(x, mesh, ("data", None, None))
    y = layer(x)
    (y * torch.linspace(-1, 1, 16, device=y.device)).square().sum().backward()
    return [y, x.grad]


@program("meshes with size-1 axes: (1, 8) and (8, 1) on one graph, specs on the size-1 axes")
def size1_axes(c):
    m18 = c.mesh((1, 8), ("a", "b"))
    m81 = c.mesh((8, 1), ("a", "b"))
    x, w = c.randn(8, 16), c.randn(16, 16)
    c.shard(x, m18, ("a", "b"))
    c.shard(w, m81, ("a", "b"))
    y = x @ w
    c.shard(y, m18, ("b", "a"))
    return [y]


@program("while_loop (torch_xla lowers it to an HLO while) carrying a row-sharded tensor")
def fori_loop(c):
    mesh = c.mesh((8,), ("d",))
    x, w = c.randn(16, 8), c.randn(8, 8, scale=0.3)
    c.shard(x, mesh, ("d", None))
    if c.xla:
        import torch_xla.experimental.fori_loop  # noqa: F401  (registers the XLA while_loop)
        from torch._higher_order_ops.while_loop import while_loop

        def body(i, a):
            return i - 1, torch.tanh(a @ w)
        _, y = while_loop(lambda i, a: i > 0, body, (torch.tensor(3, dtype=torch.int32, device=c.dev), x))
    else:
        y = x
        for _ in range(3):
            y = torch.tanh(y @ w)
    return [y]


@program("torch_xla.experimental.scan over 3 stacked layers (HLO while), batch sharded over 8")
def scan_layers(c):
    mesh = c.mesh((8,), ("d",))
    ws = c.randn(3, 8, 8, scale=0.3)
    x = c.randn(16, 8)
    c.shard(x, mesh, ("d", None))
    if c.xla:
        from torch_xla.experimental.scan import scan

        def step(carry, w):
            h = torch.tanh(carry @ w)
            return h, h.sum(0)
        y, ys = scan(step, x, ws)
    else:
        y, outs = x, []
        for i in range(3):
            y = torch.tanh(y @ ws[i])
            outs.append(y.sum(0))
        ys = torch.stack(outs)
    return [y, ys]


@program("gradient checkpointing (torch_xla.utils.checkpoint: optimization barriers), TP MLP grads")
def checkpointed(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    m = c.module(lambda: mlp(16, 32, 16))
    c.shard(m[0].weight, mesh, ("model", None))
    c.shard(m[2].weight, mesh, (None, "model"))
    x = c.randn(8, 16).requires_grad_()
    c.shard(x, mesh, ("data", None))
    if c.xla:
        from torch_xla.utils.checkpoint import checkpoint
        y = checkpoint(m, x, use_reentrant=True)
    else:
        y = m(x)
    y.square().sum().backward()
    return [y, x.grad, m[0].weight.grad]


@program("apply_xla_patch_to_nn_linear (XLAPatchedLinear: einsum forward and backward), TP grads")
def patched_linear(c):
    mesh = c.mesh((2, 4), ("data", "model"))
    m = c.module(lambda: mlp(16, 32, 8, act=nn.ReLU))
    if c.xla:
        from torch_xla.distributed.spmd.xla_sharding import apply_xla_patch_to_nn_linear
        m = apply_xla_patch_to_nn_linear(m)
    c.shard(m[0].weight, mesh, ("model", None))
    c.shard(m[2].weight, mesh, (None, "model"))
    x = c.randn(4, 6, 16)
    c.shard(x, mesh, ("data", None, None))
    y = m(x)
    y.square().mean().backward()
    return [y, m[0].weight.grad, m[2].weight.grad]


@program("cumsum and cumprod along a dim sharded over 8 (prefix scans across shards)")
def cumsum_sharded(c):
    mesh = c.mesh((8,), ("d",))
    x = c.randn(4, 32, scale=0.3)
    c.shard(x, mesh, (None, "d"))
    return [torch.cumsum(x, 1), torch.cumprod(1 + x * 0.1, 1)]


@program("logsumexp, topk and argmax over a vocabulary sharded over model=4 (2x4 mesh), bf16 logits",
         dtype="bf16")
def vocab_topk_bf16(c):
    mesh = c.mesh((2, 4), ("data", "model"))
    x = c.randn(6, 64, dtype=torch.bfloat16)
    c.shard(x, mesh, ("data", "model"))
    vals, idx = torch.topk(x.float(), 4, dim=-1)
    return [torch.logsumexp(x.float(), -1), vals, idx, x.argmax(-1)]


@program("roll, F.pad and flip along a row-sharded dim; nearest F.interpolate of a sharded image")
def roll_pad(c):
    mesh = c.mesh((8,), ("d",))
    x = c.randn(16, 6)
    c.shard(x, mesh, ("d", None))
    img = c.randn(2, 3, 8, 8)
    c.shard(img, mesh, (None, None, "d", None))
    return [torch.roll(x, 3, 0), F.pad(x, (1, 2, 3, 1), value=-1.0), x.flip(0) * 2,
            F.interpolate(img, scale_factor=2, mode="nearest")]


@program("4-D activations sharded over merged axes (('data','model') on batch), view/permute chains")
def merged_axes_4d(c):
    mesh = c.mesh((2, 2, 2), ("a", "b", "c"))
    x = c.randn(8, 4, 6, 4)
    c.shard(x, mesh, (("a", "b"), None, None, "c"))
    y = x.permute(0, 2, 1, 3).reshape(8, 6, 16)
    c.shard(y, mesh, ("a", None, ("b", "c")))
    z = y.reshape(4, 2, 6, 16).sum(1)
    return [y * 2, z]


@program("GPT-style 2-layer LM train step on (fsdp 2, model 4): vocab-sharded tied embedding, "
         "Megatron blocks, CE loss, clip_grad_norm_, AdamW")
def gpt_train(c):
    mesh = c.mesh((2, 4), ("fsdp", "model"))
    V, D, H, S, B = 64, 32, 4, 8, 4

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.qkv, self.proj = nn.Linear(D, 3 * D, bias=False), nn.Linear(D, D, bias=False)
            self.up, self.down = nn.Linear(D, 4 * D, bias=False), nn.Linear(4 * D, D, bias=False)

        def forward(self, x):
            q, k, v = self.qkv(self.ln1(x)).view(B, S, 3, H, D // H).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(B, S, D))
            return x + self.down(F.gelu(self.up(self.ln2(x))))

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, D)
            self.pos = nn.Parameter(torch.randn(S, D) * 0.02)
            self.blocks = nn.ModuleList([Block(), Block()])
            self.ln = nn.LayerNorm(D)

        def forward(self, ids):
            x = self.emb(ids) + self.pos
            for b in self.blocks:
                x = b(x)
            return self.ln(x) @ self.emb.weight.t()
    m = c.module(LM)
    c.shard(m.emb.weight, mesh, ("model", "fsdp"))
    for b in m.blocks:
        c.shard(b.qkv.weight, mesh, ("model", "fsdp"))
        c.shard(b.up.weight, mesh, ("model", "fsdp"))
        c.shard(b.proj.weight, mesh, ("fsdp", "model"))
        c.shard(b.down.weight, mesh, ("fsdp", "model"))
    ids = c.randint(V, B, S)
    c.shard(ids, mesh, ("fsdp", None))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    opt.zero_grad()
    logits = m(ids)
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    opt.step()
    return [loss, norm, m.emb.weight, m.blocks[0].qkv.weight, m.blocks[1].down.weight, m.pos]


@program("Llama-style RoPE with complex numbers (view_as_complex), heads over model=2, batch over data=4")
def rope_complex(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    B, S, H, D = 4, 6, 4, 8
    q = c.randn(B, S, H, D)
    c.shard(q, mesh, ("data", None, "model", None))
    freqs = 1.0 / (10000 ** (torch.arange(0, D, 2).float() / D))
    ang = torch.outer(torch.arange(S).float(), freqs)
    cis = torch.polar(torch.ones_like(ang), ang).to(c.dev)
    qc = torch.view_as_complex(q.reshape(B, S, H, D // 2, 2))
    out = torch.view_as_real(qc * cis.view(1, S, 1, D // 2)).flatten(3)
    return [out]


@program("bilinear upsampling (align_corners False and True) of an image with batch and height sharded")
def upsample_bilinear(c):
    mesh = c.mesh((4, 2), ("data", "h"))
    x = c.randn(4, 2, 8, 6)
    c.shard(x, mesh, ("data", None, "h", None))
    return [F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
            F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True)]


@program("max_pool2d with indices and avg_pool2d, and their gradients, on an image sharded by height")
def pool_spatial_grad(c):
    mesh = c.mesh((8,), ("h",))
    x = c.randn(2, 3, 32, 8).requires_grad_()
    c.shard(x, mesh, (None, None, "h", None))
    mp, idx = F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
    ap = F.avg_pool2d(x, 2, count_include_pad=False)
    (mp.square().sum() + (ap * 3).sum()).backward()
    return [mp, idx, ap, x.grad]


@program("var / std / norms over sharded dims on a 2x2x2 mesh (two-pass moments, unbiased)")
def moments(c):
    mesh = c.mesh((2, 2, 2), ("a", "b", "c"))
    x = c.randn(8, 12, 4) + 3
    c.shard(x, mesh, ("a", ("b", "c"), None))
    v, mu = torch.var_mean(x, dim=(0, 1))
    return [v, mu, x.std(1), torch.linalg.vector_norm(x, 2, dim=-1), x.norm(p="fro")]


@program("bf16 model with AdamW (bf16 parameters and states) on (data 4, model 2)", dtype="bf16",
         eager_check=False)
def adamw_bf16(c):
    mesh = c.mesh((4, 2), ("data", "model"))
    m = c.module(lambda: mlp(16, 32, 16), dtype=torch.bfloat16)
    c.shard(m[0].weight, mesh, ("model", None))
    c.shard(m[2].weight, mesh, (None, "model"))
    x, t = c.randn(8, 16, dtype=torch.bfloat16), c.randn(8, 16, dtype=torch.bfloat16)
    c.shard(x, mesh, ("data", None))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    loss = train_step(c, m, x, t, opt)
    return [loss.float(), *(p.float() for p in m.parameters())]


@program("non-iota device order on a 2x2x2 mesh: reshapes, transposes, reductions, gather, attention")
def device_order_mix(c):
    mesh = c.mesh((2, 2, 2), ("a", "b", "c"), order=[3, 6, 0, 5, 7, 1, 4, 2])
    x = c.randn(8, 6, 16)
    c.shard(x, mesh, ("a", None, ("b", "c")))
    w = c.randn(16, 16)
    c.shard(w, mesh, ("c", "b"))
    h = torch.tanh(x @ w)
    c.shard(h, mesh, (("a", "b"), None, "c"))
    q = h.view(8, 6, 4, 4).transpose(1, 2)
    att = torch.softmax(q @ q.transpose(-1, -2), -1) @ q
    idx = c.randint(6, 8, 3)
    g = torch.gather(h.sum(-1), 1, idx)
    return [att, g, h.amax((0, 1)), h.reshape(48, 16).t() @ h.reshape(48, 16)]


SPECIALS = [float("-inf"), -1e30, -88.5, -3.5, -2.5, -1.5, -1.0, -0.5, -0.0, 0.0, 1e-30, 0.5, 1.5, 2.5, 3.5,
            7.0, 20.0, 88.8, 1e30, float("inf"), float("nan"), 1e-7, -1e-7, 0.999, -0.999, 100.25, 3e9, -3e9,
            2.0 ** 31, -(2.0 ** 31) - 256, 12345.5, 0.1]


@program("elementwise math on special values (inf, nan, -0, tiny, ties, huge), rows over 8", atol=1e-6)
# (lgamma, digamma and logaddexp run on the CPU in torch_xla 2.9: left out.)
def math_edge(c):
    mesh = c.mesh((8,), ("d",))
    base = torch.tensor(SPECIALS, dtype=torch.float32)
    x = torch.stack([base.roll(i) for i in range(8)]).to(c.dev)  # f32[8,32]
    c.shard(x, mesh, ("d", None))
    y = (x * 0.37).flip(1)
    c.shard(y, mesh, ("d", None))
    # (NaN into maximum / minimum / clamp, and denormals: the cpu_semantics program.)
    xn, yn = torch.nan_to_num(x, nan=0.25), torch.nan_to_num(y, nan=0.25)
    return [torch.round(x), torch.floor(x), torch.trunc(x), torch.sign(x), xn.clamp(-2, 2),
            torch.maximum(xn, yn), torch.minimum(xn, yn), torch.nan_to_num(x), torch.sigmoid(x), torch.tanh(x),
            torch.exp(x), torch.log1p(x), torch.expm1(x), torch.sqrt(x), torch.rsqrt(x), torch.atan2(x, y),
            torch.fmod(x, y), torch.remainder(x, y), torch.pow(x, y), torch.erf(x),
            torch.erfinv(torch.tanh(x)), F.softplus(x),
            x.to(torch.int32), x.to(torch.int64), x.to(torch.bfloat16).float(), x.to(torch.float16).float()]


@program("XLA CPU's own float semantics: NaN into maximum / minimum / clamp, denormal inputs", atol=0)
def cpu_semantics(c):
    # torch_xla 2.9's XLA CPU returns the other operand for maximum / minimum with a NaN and the
    # bound for clamp of NaN, and flushes denormals to zero (sign(1e-40) = 0, rsqrt(1e-40) = inf).
    mesh = c.mesh((8,), ("d",))
    v = torch.tensor([float("nan"), 1e-40, -1e-40, 2.5, -3.0, float("inf"), 1e-38, 0.0])
    x = torch.stack([v.roll(i) for i in range(8)]).to(c.dev)
    c.shard(x, mesh, ("d", None))
    y = x.flip(1) * 0.5
    return [torch.maximum(x, y), torch.minimum(x, y), x.clamp(-1, 1), torch.sign(x), torch.rsqrt(x.abs()),
            x * 1e10]


@program("integer ops on negatives and extremes: floor division, remainder, bit ops, shifts, abs, wrap")
def int_edge(c):
    # (a >> tensor is left out: torch_xla lowers it to divide(a, power(2, s)), which XLA's algebraic
    # simplifier turns into multiply(a, power(2, -s)), 0 for integers: XLA itself returns zeros.)
    mesh = c.mesh((8,), ("d",))
    v = torch.tensor([-2 ** 31, -2 ** 31 + 1, -100, -7, -3, -1, 0, 1, 3, 7, 100, 2 ** 31 - 1, 5, -5, 31, -31],
                     dtype=torch.int32)
    a = torch.stack([v.roll(i) for i in range(8)]).to(c.dev)  # s32[8,16]
    b = torch.stack([torch.tensor([3, -3, 7, -7, 2, -2, 1, -1, 5, 4, -4, 9, 13, -13, 6, 8]).to(torch.int32)
                     .roll(i) for i in range(8)]).to(c.dev)
    c.shard(a, mesh, ("d", None))
    sh = (b.abs() % 33).to(torch.int32)
    return [torch.div(a, b, rounding_mode="floor"), torch.div(a, b, rounding_mode="trunc"), torch.remainder(a, b),
            torch.fmod(a, b), a & b, a | b, a ^ b, ~a, a << (sh % 32), a.abs(), a * b, a + b,
            a.to(torch.int64) * 3_000_000_000, a.to(torch.float32), (a > b).sum(1), a.sum(1), a.max(1).values,
            a.to(torch.int8), a.to(torch.uint8)]


def all_programs():
    return list(PROGRAMS)
