"""xshard.numerics: how far an array is from a reference (seed 004's numerics check), the report of
`xshard numerics GOT.npy WANT.npy` for numpy arrays."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from . import _xshard
from ._sharding import native_byte_order

try:  # bf16 arrays (ml_dtypes) widen exactly to f32 before the comparison
    from ml_dtypes import bfloat16 as _bfloat16
except ImportError:  # pragma: no cover - depends on the environment
    _bfloat16 = None

NumericsReport = _xshard.NumericsReport
BlockNumerics = _xshard.BlockNumerics


def _widen_bf16(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32) if _bfloat16 is not None and a.dtype == _bfloat16 else a


def numerics(got, want, *, atol: float = 1e-8, rtol: float = 1e-5,
             threshold: Optional[float] = None, blocks: Optional[Sequence[int]] = None,
             equal_nan: bool = False) -> NumericsReport:
    """Compares GOT with WANT (same dims; the same dtype, or two floating dtypes compared in f64).

    The report has numpy.allclose's verdict (`|got - want| <= atol + rtol * |want|`; also
    `bool(report)`), the max / mean / median absolute and the max relative difference, the elements
    counted as errors (not close, or `|got - want| > threshold` when given), the rows and columns of
    the last two dims that hold them, the worst element with both values and, with `blocks`
    (e.g. (2, 2): seed 004's quadrants), statistics per block of a grid over the trailing dims.
    `print(report)` prints the table `xshard numerics` prints. Raises ValueError for different
    shapes, an integer against a float, a bad tolerance or block grid.
    """
    g = native_byte_order(_widen_bf16(np.ascontiguousarray(got)), "got")
    w = native_byte_order(_widen_bf16(np.ascontiguousarray(want)), "want")
    return _xshard._compare_numerics(g, w, float(atol), float(rtol), bool(equal_nan),
                                     None if threshold is None else float(threshold),
                                     [int(b) for b in (blocks or ())])
