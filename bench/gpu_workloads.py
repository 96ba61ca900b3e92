"""Issue 22's GPU targets as Workloads (bench/jax_compare/workloads.py's type), for gpu_compare.py.

All run on one device: a bf16 GEMM at 8192^3, a fused elementwise op over 1 GiB of f32, a bf16
decoder block b4 s2048 d4096 (32 heads, MLP 4d), and seed 000's tiny f16[4,16] @ f16[16,4] (a
measure of the whole call's overhead).
"""
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax.sharding import PartitionSpec as P

from workloads import Workload, _layernorm, _rand


def _gemm_bf16():
    n = 8192
    return Workload("gpu_gemm_bf16_8192", "bf16 GEMM 8192^3", lambda x, y: x @ y, (1,), ("d",), [P(), P()], P(),
                    lambda: [_rand((n, n), 40, "bf16"), _rand((n, n), 41, "bf16")], 2.0 * n ** 3, "bf16")


def _eltwise_1gib():
    n = 1 << 28  # 1 GiB of f32 in, 1 GiB out
    return Workload("gpu_eltwise_1gib", "fused x*0.5+1 on f32[2^28] (1 GiB in, 1 GiB out)",
                    lambda x: x * 0.5 + 1.0, (1,), ("d",), [P()], P(),
                    lambda: [np.random.default_rng(42).standard_normal(n, dtype=np.float32)], 0.0)


def _decoder_bf16():
    b, s, d, h = 4, 2048, 4096, 32

    def block(x, wq, wk, wv, wo, w1, w2):
        f32 = jnp.float32
        hn = _layernorm(x.astype(f32)).astype(x.dtype)
        q = (hn @ wq).reshape(b, s, h, d // h)
        k = (hn @ wk).reshape(b, s, h, d // h)
        v = (hn @ wv).reshape(b, s, h, d // h)
        sc = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(f32) / np.float32(np.sqrt(d // h))
        a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, axis=-1).astype(x.dtype), v).reshape(b, s, d)
        x = x + a @ wo
        return x + jax.nn.gelu(_layernorm(x.astype(f32)).astype(x.dtype) @ w1) @ w2

    def args():
        sc = 1 / np.sqrt(d)
        bf = ml_dtypes.bfloat16
        return [_rand((b, s, d), 50, "bf16")] + \
               [(_rand((d, d), 51 + i) * sc).astype(bf) for i in range(4)] + \
               [(_rand((d, 4 * d), 55) * sc).astype(bf), (_rand((4 * d, d), 56) * sc / 2).astype(bf)]
    flops = 2 * b * s * (4 * d * d + 2 * d * 4 * d) + 2 * 2 * b * s * s * d
    return Workload("gpu_decoder_bf16", "bf16 decoder block b4 s2048 d4096 h32", block, (1,), ("d",),
                    [P()] * 7, P(), args, float(flops), "bf16")


def _seed000_tiny():
    def args():
        x = (np.arange(64) / 8).astype(np.float16).reshape(4, 16)
        y = (np.arange(64) / 8).astype(np.float16).reshape(16, 4)
        return [x, y]
    return Workload("gpu_seed000_tiny", "seed 000 f16[4,16] @ f16[16,4] (whole call)", lambda x, y: x @ y, (1,),
                    ("d",), [P(), P()], P(), args, 2.0 * 4 * 16 * 4, "f16")


def all_workloads():
    return [_gemm_bf16(), _eltwise_1gib(), _decoder_bf16(), _seed000_tiny()]
