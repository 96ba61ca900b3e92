"""The workloads of issue 9's table, built in JAX with shardings (imported after XLA_FLAGS is set).

Each workload is a Workload: a function, its mesh, the PartitionSpecs of its inputs and outputs
(None: unspecified, as the seeds leave them), numpy inputs, and the useful FLOPs of one call.
"""
import dataclasses
import functools
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P


@dataclasses.dataclass
class Workload:
    name: str
    what: str                     # one line for the table
    fn: Callable
    mesh_shape: tuple
    axis_names: tuple
    in_specs: list
    out_specs: Optional[object]   # a PartitionSpec, a tuple of them, or None (unspecified)
    make_args: Callable           # () -> list of numpy arrays
    flops: float                  # useful FLOPs per call (0: not a FLOP-bound workload)
    dtype: str = "f32"            # f32 or bf16: picks the tolerance and the peak
    shard_map: bool = False       # fn is a per-device body for jax.shard_map

    @property
    def devices(self):
        return int(np.prod(self.mesh_shape))

    def mesh(self):
        devs = np.array(jax.devices()[:self.devices]).reshape(self.mesh_shape)
        return Mesh(devs, self.axis_names)

    def jitted(self):
        """jax.jit(f, in_shardings, out_shardings) over this workload's mesh."""
        if self.devices == 1:  # a plain jit on device 0: no sharding annotations in the HLO
            sh = jax.sharding.SingleDeviceSharding(jax.devices()[0])
            return jax.jit(self.fn), tuple(sh for _ in self.in_specs)
        mesh = self.mesh()
        fn = self.fn
        if self.shard_map and hasattr(jax, "shard_map"):
            fn = jax.shard_map(fn, mesh=mesh, in_specs=tuple(self.in_specs), out_specs=self.out_specs,
                               check_vma=False)
        elif self.shard_map:  # a release without jax.shard_map (0.5.3 and older; XSHARD_JAX_VENV)
            from jax.experimental.shard_map import shard_map
            fn = shard_map(fn, mesh=mesh, in_specs=tuple(self.in_specs), out_specs=self.out_specs,
                           check_rep=False)
        in_sh = tuple(NamedSharding(mesh, s) for s in self.in_specs)
        kwargs = {"in_shardings": in_sh}
        if self.out_specs is not None:
            kwargs["out_shardings"] = jax.tree.map(lambda s: NamedSharding(mesh, s), self.out_specs,
                                                   is_leaf=lambda s: isinstance(s, P))
        return jax.jit(fn, **kwargs), in_sh


def _rand(shape, seed, dtype=np.float32):
    a = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
    return a.astype(ml_dtypes.bfloat16) if dtype == "bf16" else a


def _matmul(x, y):
    return jnp.matmul(x, y)


# Seed 000 (pjit blog cases) at 2048x2048 @ 2048x2048 on mesh a=4, b=2; z's sharding unspecified.
def _seed000(case, x_spec, y_spec):
    n = 2048
    return Workload(f"seed000_{case}", f"seed 000 {case} axes, x {x_spec} y {y_spec}" if case != "full"
                    else f"seed 000 full sharding, x {x_spec} y {y_spec}",
                    _matmul, (4, 2), ("a", "b"), [x_spec, y_spec], None,
                    lambda: [_rand((n, n), 1), _rand((n, n), 2)], 2.0 * n ** 3)


# Seed 001: x * y on f32[4096,8192] tiled [2,4]; the matmul f32[4096,4096] tiled [2,2] on 4 devices.
def _seed001_mul():
    return Workload("seed001_mul", "seed 001 x*y f32[4096,8192] [2,4]", lambda x, y: x * y, (2, 4), ("a", "b"),
                    [P("a", "b"), P("a", "b")], P("a", "b"),
                    lambda: [_rand((4096, 8192), 3), _rand((4096, 8192), 4)], 0.0)


def _seed001_matmul():
    n = 4096
    return Workload("seed001_matmul", "seed 001 matmul f32[4096,4096]^2 [2,2] on 4", _matmul, (2, 2), ("a", "b"),
                    [P("a", "b"), P("a", "b")], P("a", "b"),
                    lambda: [_rand((n, n), 5), _rand((n, n), 6)], 2.0 * n ** 3)


# Seed 004: bf16 2048x2048 @ 2048x1024 on a 2x2 mesh, jit(matmul) and the all-gather shard_map.
def _seed004_args():
    return [_rand((2048, 2048), 7, "bf16"), _rand((2048, 1024), 8, "bf16")]


def _seed004_jit():
    return Workload("seed004_jit", "seed 004 bf16 jit(matmul) 2x2", _matmul, (2, 2), ("x", "y"),
                    [P("x", "y"), P("x", None)], None, _seed004_args, 2.0 * 2048 * 2048 * 1024, "bf16")


def _seed004_shard_map_body(input_shard, w_shard):
    input_full = jax.lax.all_gather(input_shard, "y", axis=1, tiled=True)
    w_full = jax.lax.all_gather(w_shard, "x", axis=0, tiled=True)
    return input_full @ w_full


def _seed004_shmap():
    return Workload("seed004_shmap", "seed 004 bf16 shard_map matmul 2x2", _seed004_shard_map_body, (2, 2),
                    ("x", "y"), [P("x", "y"), P("x", None)], P("x", None), _seed004_args,
                    2.0 * 2048 * 2048 * 1024, "bf16", shard_map=True)


# A transformer block forward: b8 s256 d512, 8 heads, MLP 4d, pre-layernorm; mesh data=4 x model=2.
B, S, D, H = 8, 256, 512, 8


def _layernorm(x):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5)


def _block(x, wq, wk, wv, wo, w1, w2):
    h = _layernorm(x)
    q = (h @ wq).reshape(B, S, H, D // H)
    k = (h @ wk).reshape(B, S, H, D // H)
    v = (h @ wv).reshape(B, S, H, D // H)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(D // H).astype(np.float32)
    a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v).reshape(B, S, D)
    x = x + a @ wo
    return x + jax.nn.gelu(_layernorm(x) @ w1) @ w2


def _transformer():
    def args():
        sc = 1 / np.sqrt(D)
        return [_rand((B, S, D), 10)] + [_rand((D, D), 11 + i) * sc for i in range(4)] + \
               [_rand((D, 4 * D), 15) * sc, _rand((4 * D, D), 16) * sc / 2]
    flops = 2 * B * S * D * D * 4 + 2 * 2 * B * H * S * S * (D // H) + 2 * 2 * B * S * D * 4 * D
    return Workload("transformer_fwd", "transformer block fwd b8 s256 d512 h8, 4x2", _block, (4, 2),
                    ("data", "model"),
                    [P("data"), P(None, "model"), P(None, "model"), P(None, "model"), P("model", None),
                     P(None, "model"), P("model", None)], P("data"), args, float(flops))


# An MLP training step (SGD): d1024, h4096, batch 256; mesh data=4 x model=2.
MD, MH, MB = 1024, 4096, 256


def _mlp_loss(params, x, y):
    w1, b1, w2 = params
    return jnp.mean((jax.nn.gelu(x @ w1 + b1) @ w2 - y) ** 2)


def _mlp_step(w1, b1, w2, x, y):
    loss, g = jax.value_and_grad(_mlp_loss)((w1, b1, w2), x, y)
    return tuple(p - 0.01 * gp for p, gp in zip((w1, b1, w2), g)) + (loss,)


def _mlp():
    def args():
        return [_rand((MD, MH), 20) / np.sqrt(MD), np.zeros((MH,), np.float32),
                _rand((MH, MD), 21) / np.sqrt(MH), _rand((MB, MD), 22), _rand((MB, MD), 23)]
    return Workload("mlp_train_step", "MLP train step d1024 h4096 b256, 4x2", _mlp_step, (4, 2),
                    ("data", "model"),
                    [P(None, "model"), P("model"), P("model", None), P("data"), P("data")],
                    (P(None, "model"), P("model"), P("model", None), P()), args,
                    3 * 2 * 2.0 * MB * MD * MH)


# Seed 003: (B,S,H,D) = (4,256,48,64) on mesh row=2 x col=4: X f32[1024,3072], W f32[3072,12288].
S3_B, S3_S, S3_H, S3_D = 4, 256, 48, 64
S3_M, S3_K, S3_N = S3_B * S3_S, S3_H * S3_D, 4 * S3_H * S3_D
S3_FLOPS = 2.0 * S3_M * S3_K * S3_N


def _seed003_x():
    return (np.arange(S3_M * S3_K, dtype=np.float32).reshape(S3_M, S3_K) / (S3_M * S3_K)).astype(np.float32)


def _seed003_w():
    return (np.arange(S3_K * S3_N, dtype=np.float32).reshape(S3_K, S3_N) / (S3_K * S3_N)).astype(np.float32)


def _wang_os(Xij, Wij):
    Wj = jax.lax.all_gather(Wij, "row", tiled=True, axis=0)
    size = jax.lax.psum(1, "col")
    idx = jax.lax.axis_index("col")
    shift_up = functools.partial(jax.lax.ppermute, axis_name="col", perm=[(i, (i + 1) % size) for i in range(size)])
    shift_dn = functools.partial(jax.lax.ppermute, axis_name="col", perm=[(i, (i - 1) % size) for i in range(size)])
    blk = Wj.shape[0] // size // 2
    w_blocks = lambda i, hi: jax.lax.dynamic_slice_in_dim(Wj, (2 * i + hi) * blk, blk, 0)
    x_lo, x_hi = jnp.split(Xij, 2, axis=1)
    out = x_lo @ w_blocks(idx, 0)
    out += x_hi @ w_blocks(idx, 1)
    for i in range(1, size):
        x_lo = shift_up(x_lo)
        x_hi = shift_dn(x_hi)
        out += x_lo @ w_blocks((idx - i) % size, 0)
        out += x_hi @ w_blocks((idx + i) % size, 1)
    return out


def _gspmd_os(Xij, Wij):
    Xi = jax.lax.all_gather(Xij, "col", tiled=True, axis=1)
    Wj = jax.lax.all_gather(Wij, "row", tiled=True, axis=0)
    return Xi @ Wj


def _gspmd_is(Xij, Wji):
    Wj = jax.lax.all_gather(Wji, "row", tiled=True, axis=0)
    Yp = jnp.einsum("mn,kn->mk", Xij, Wj)
    return jax.lax.psum_scatter(Yp, "col", scatter_dimension=1, tiled=True)


def _gspmd_ws(Xji, Wij):
    Xi = jax.lax.all_gather(Xji, "col", tiled=True, axis=1)
    Yp = jnp.einsum("ib,io->bo", Xi, Wij)
    return jax.lax.psum_scatter(Yp, "row", scatter_dimension=0, tiled=True)


def _seed003(name, what, body, args):
    rc = P("row", "col")
    return Workload(name, what, body, (2, 4), ("row", "col"), [rc, rc], rc, args, S3_FLOPS, shard_map=True)


# One device: tanh(x) * sigmoid(y) + x * 0.5 on f32[4096,4096] (no shardings).
def _eltwise():
    return Workload("one_device_eltwise", "1 device tanh(x)*sigmoid(y)+x*0.5 f32[4096,4096]",
                    lambda x, y: jnp.tanh(x) * jax.nn.sigmoid(y) + x * 0.5, (1,), ("d",),
                    [P(), P()], P(), lambda: [_rand((4096, 4096), 30), _rand((4096, 4096), 31)], 0.0)


# One device: cumulative sums along the long axis of f32[256,4096] (what JAX lowers jnp.cumsum to:
# a reduce-window covering each prefix).
def _cumsum():
    return Workload("one_device_cumsum", "1 device jnp.cumsum(x, axis=1) f32[256,4096]",
                    lambda x: jnp.cumsum(x, axis=1), (1,), ("d",), [P()], P(),
                    lambda: [_rand((256, 4096), 32)], 0.0)


def all_workloads():
    return [
        _seed000("outer", P("b", "a"), P("b", None)),
        _seed000("full", P("b", "a"), P("b", "a")),
        _seed000("inner", P(None, "a"), P("a", None)),
        _seed001_mul(),
        _seed001_matmul(),
        _seed004_jit(),
        _seed004_shmap(),
        _transformer(),
        _mlp(),
        _seed003("seed003_wang_os", "seed 003 Wang OS (4,256,48,64) 2x4", _wang_os,
                 lambda: [_seed003_x(), _seed003_w()]),
        _seed003("seed003_gspmd_os", "seed 003 GSPMD OS 2x4", _gspmd_os, lambda: [_seed003_x(), _seed003_w()]),
        _seed003("seed003_gspmd_is", "seed 003 GSPMD IS 2x4", _gspmd_is,
                 lambda: [_seed003_x(), np.ascontiguousarray(_seed003_w().T)]),
        _seed003("seed003_gspmd_ws", "seed 003 GSPMD WS 2x4", _gspmd_ws,
                 lambda: [np.ascontiguousarray(_seed003_x().T), _seed003_w()]),
        _eltwise(),
        _cumsum(),
    ]
