"""xshard.cmm: collective matmuls on a 2-D mesh ('row', 'col') -- seed 003's GSPMD, Wang et al.
(bidirectional ppermute ring overlapped with the partial matmuls) and systolic algorithms, each
output-, input- or weight-stationary, and seed 004's all-gather variants -- run on xshard's
devices with numpy operands.

    >>> import numpy as np, xshard
    >>> a = np.ones((16, 32), np.float32); b = np.full((32, 64), 0.5, np.float32)
    >>> r = xshard.cmm.matmul(a, b, algo="wang", variant="os", mesh=(2, 4))
    >>> float(r.out[0, 0]), r.out.shape
    (16.0, (16, 64))
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple

import numpy as np

from . import _xshard

ALGORITHMS = ("gspmd", "wang", "systolic", "ag_dot", "slice_psum")
VARIANTS = ("os", "is", "ws")


@dataclass
class Cost:
    """What device 0 did in one call (every device does the same amount)."""
    flops: int        # 2*m*n*k of its matmuls
    bytes_in: int     # bytes received by blocking collectives
    bytes_async: int  # bytes received by asynchronous ones (overlapped with matmuls)
    collectives: int  # collective calls
    dots: int         # matmul kernel calls


@dataclass
class CmmResult:
    """The global f32 result and the timing of the calls (shard_map over inputs placed once)."""
    out: np.ndarray
    ms: list = field(default_factory=list)  # wall time of each timed call
    cpu_ms: float = 0.0                      # process CPU time over all timed calls
    cost: Optional[Cost] = None

    @property
    def median_ms(self) -> float:
        return statistics.median(self.ms)


def dims_from_bshd(bshd: Sequence[int], variant: str) -> Tuple[int, int, int]:
    """Seed 003's (m, k, n) for X [B*S, H*D] and W [H*D, 4*H*D]: 'os' is X @ W, 'is' is
    Y @ W^T, 'ws' is X^T @ Y."""
    b, s, h, d = (int(v) for v in bshd)
    return _xshard._cmm_dims_from_bshd(b, s, h, d, variant)


def _mnk(a: np.ndarray, b: np.ndarray, algo: str, variant: str) -> Tuple[int, int, int]:
    """(m, k, n) from the operands in the variant's stored layouts (see matmul)."""
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"cmm operands must be 2-D, got a{list(a.shape)} and b{list(b.shape)}")
    if algo in ("ag_dot", "slice_psum") or variant == "os":
        (m, k), (k2, n) = a.shape, b.shape
    elif variant == "is":
        (m, k), (n, k2) = a.shape, b.shape
    elif variant == "ws":
        (k, m), (k2, n) = a.shape, b.shape
    else:
        raise ValueError(f"unknown variant '{variant}': use one of {', '.join(VARIANTS)}")
    if k != k2:
        raise ValueError(f"cmm {algo} {variant}: the contracted dims differ: a{list(a.shape)}, "
                         f"b{list(b.shape)} (os: a [M,K] b [K,N]; is: a [M,K] b [N,K]; "
                         "ws: a [K,M] b [K,N])")
    return m, k, n


def matmul(a, b, *, algo: str = "gspmd", variant: str = "os", mesh: Sequence[int] = (2, 4),
           dtype: str = "f32", chunks: int = 8, block: int = 8, warmup: int = 0, iters: int = 1,
           trace: Optional[str] = None) -> CmmResult:
    """C = A B with a collective matmul on a rows x cols mesh, every operand P('row', 'col').

    Stored layouts by variant (seed 003): 'os' a [M,K], b [K,N] (Y = X @ W); 'is' a [M,K],
    b [N,K] (dX = dY @ W^T); 'ws' a [K,M], b [K,N] (dW = X^T @ dY). 'ag_dot' / 'slice_psum'
    (seed 004) take a [M,K], b [K,N] and ignore the variant. dtype 'bf16' rounds the f32 operands
    to bf16 and accumulates in f32; the result is always f32 [M, N]. Runs `warmup` untimed and
    `iters` timed calls; `trace` writes a Chrome trace (Perfetto) of the last one. Raises
    ValueError naming the dim, its size and the divisor when the algorithm cannot split it.
    """
    a = np.ascontiguousarray(a, dtype=np.float32)
    b = np.ascontiguousarray(b, dtype=np.float32)
    rows, cols = (int(v) for v in mesh)
    m, k, n = _mnk(a, b, algo, variant)
    out, ms, cpu_ms, cost = _xshard._cmm_run(algo, variant, rows, cols, a, b, m, k, n, dtype,
                                             int(chunks), int(block), int(warmup), int(iters),
                                             trace or "")
    return CmmResult(out=out, ms=list(ms), cpu_ms=cpu_ms, cost=Cost(*cost))
