"""xshard.cmm from Python: every algorithm and variant against numpy's product, bf16 with f32
accumulation, the numerics report on the result, and the divisibility errors."""
import numpy as np
import pytest

import xshard
from xshard import cmm

# Small shapes every algorithm divides on 2x4 (Wang splits k in 2*cols halves, systolic uses
# chunks x block = 2 x 2 pieces of each device's block).
M, K, N = 16, 32, 64


def operands(variant, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    w = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    if variant == "os":
        return x, w, x @ w
    if variant == "is":
        return x, np.ascontiguousarray(w.T), x @ w        # b stored [N,K]
    return np.ascontiguousarray(x.T), w, x @ w           # ws: a stored [K,M]


@pytest.mark.parametrize("algo", ["gspmd", "wang", "systolic"])
@pytest.mark.parametrize("variant", ["os", "is", "ws"])
def test_every_algorithm_and_variant_matches_numpy(algo, variant):
    a, b, want = operands(variant)
    r = cmm.matmul(a, b, algo=algo, variant=variant, mesh=(2, 4), chunks=2, block=2)
    assert r.out.shape == (M, N) and r.out.dtype == np.float32
    np.testing.assert_allclose(r.out, want, rtol=1e-5, atol=1e-5)
    assert len(r.ms) == 1 and r.cost.flops > 0


@pytest.mark.parametrize("algo", ["ag_dot", "slice_psum"])
def test_seed004_variants_on_2x2(algo):
    a, b, want = operands("os", seed=1)
    r = cmm.matmul(a, b, algo=algo, mesh=(2, 2), iters=3)
    np.testing.assert_allclose(r.out, want, rtol=1e-5, atol=1e-5)
    assert len(r.ms) == 3 and r.median_ms > 0


def test_bf16_accumulates_in_f32():
    a, b, _ = operands("os", seed=2)
    r = cmm.matmul(a, b, algo="wang", variant="os", mesh=(2, 4), dtype="bf16")
    # The reference: the operands rounded to bf16 (keep the top 16 bits, round to nearest even),
    # multiplied in f64.
    def to_bf16(x):
        bits = x.view(np.uint32).astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return rounded.astype(np.uint32).view(np.float32)
    want = to_bf16(a).astype(np.float64) @ to_bf16(b).astype(np.float64)
    report = xshard.numerics(r.out, want.astype(np.float32), atol=1e-4, rtol=1e-4)
    assert report, str(report)


def test_dims_from_bshd():
    # Seed 003: X [B*S, H*D] = [1024, 3072], W [3072, 12288].
    assert cmm.dims_from_bshd((4, 256, 48, 64), "os") == (1024, 3072, 12288)
    assert cmm.dims_from_bshd((4, 256, 48, 64), "is") == (1024, 12288, 3072)
    assert cmm.dims_from_bshd((4, 256, 48, 64), "ws") == (3072, 1024, 12288)


def test_mistakes_raise_value_error():
    a = np.ones((16, 30), np.float32)
    b = np.ones((30, 64), np.float32)
    with pytest.raises(ValueError, match="k=30"):
        cmm.matmul(a, b, algo="wang", mesh=(2, 4))
    with pytest.raises(ValueError, match="contracted dims differ"):
        cmm.matmul(np.ones((16, 32), np.float32), np.ones((16, 64), np.float32))
    with pytest.raises(ValueError, match="algorithm|gspmd"):
        cmm.matmul(np.ones((16, 32), np.float32), np.ones((32, 64), np.float32), algo="ring")
    with pytest.raises(ValueError, match="dtype 'f16'"):
        cmm.matmul(np.ones((16, 32), np.float32), np.ones((32, 64), np.float32), dtype="f16")
