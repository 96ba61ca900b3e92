"""Compiled programs: xshard.compile (HLO text -> a program partitioned for N devices that runs on
numpy arrays), its report and timing, and xshard.from_jax (the same from a JAX function)."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import _xshard
from ._sharding import ShardedArray, ShardingLike, _from_jax_sharding, check_dtype, native_byte_order

try:  # numpy has no bfloat16: bf16 results come back as its bits, viewed as ml_dtypes' type
    from ml_dtypes import bfloat16 as _bfloat16
except ImportError:  # pragma: no cover - depends on the environment
    _bfloat16 = None


@dataclass
class Collective:
    """One collective of the partitioned program: one the partitioner inserted, or (written=True)
    one the program itself makes, such as a shard_map psum in a manual region."""
    kind: str       # "all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute"
    name: str       # its name in the SPMD program
    shape: str      # per-device result shape, e.g. "f16[4,4]"
    bytes: int      # bytes each device receives (ring model)
    groups: str     # replica groups as explicit lists ("{{0,2,4,6},{1,3,5,7}}"), pairs for permutes
    dimension: int  # gathered / scattered dim, -1 for none
    cause: str      # the global instruction being partitioned
    reason: str     # why
    written: bool = False  # the program's own collective, copied (not inserted)


@dataclass
class Report:
    """What partitioning did: str(report) is `xshard partition --report`'s text."""
    text: str
    collectives: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    memory: dict = field(default_factory=dict)  # before/after_peak_bytes, after_parameter_bytes

    @property
    def total_bytes(self) -> int:
        """Bytes every device receives over all collectives."""
        return sum(c.bytes for c in self.collectives)

    def __str__(self) -> str:
        return self.text


def _percentile(sorted_ms: list, q: float) -> float:
    """numpy.percentile's default (linear between closest ranks), as `xshard bench run`."""
    rank = q / 100.0 * (len(sorted_ms) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(sorted_ms) - 1)
    return sorted_ms[lo] + (rank - lo) * (sorted_ms[hi] - sorted_ms[lo])


@dataclass
class Timing:
    """The latency report of `xshard bench run` (milliseconds per execution on arguments already
    placed on the devices): str(timing) prints it."""
    samples_ms: list
    warmup: int

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples_ms)

    @property
    def median(self) -> float:
        return _percentile(sorted(self.samples_ms), 50)

    @property
    def stdev(self) -> float:
        return statistics.stdev(self.samples_ms) if len(self.samples_ms) > 1 else 0.0

    @property
    def min(self) -> float:
        return min(self.samples_ms)

    @property
    def max(self) -> float:
        return max(self.samples_ms)

    @property
    def p95(self) -> float:
        return _percentile(sorted(self.samples_ms), 95)

    @property
    def p99(self) -> float:
        return _percentile(sorted(self.samples_ms), 99)

    def __str__(self) -> str:
        rows = [("Mean:", self.mean), ("Median:", self.median), ("Stdev:", self.stdev),
                ("Min:", self.min), ("Max:", self.max), ("P95:", self.p95), ("P99:", self.p99)]
        head = f"{self.warmup} warmup, {len(self.samples_ms)} timed iterations\n\nResults:\n"
        return head + "".join(f"  {label:<8}{v:10.3f} ms\n" for label, v in rows)


# The numpy dtype of each xshard element type a program's parameter may have.
_NUMPY_DTYPES = {"pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32,
                 "s64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32,
                 "u64": np.uint64, "f16": np.float16, "f32": np.float32, "f64": np.float64,
                 "c64": np.complex64, "c128": np.complex128}
if _bfloat16 is not None:
    _NUMPY_DTYPES["bf16"] = _bfloat16

# The element types a Python scalar may become, as JAX's weak types: an int any number, a float
# any floating or complex type, a complex a complex one, a bool only pred.
_PYTHON_SCALAR_TYPES = {
    bool: ("pred",),
    int: ("s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64",
          "c64", "c128"),
    float: ("f16", "bf16", "f32", "f64", "c64", "c128"),
    complex: ("c64", "c128"),
}


def _python_scalar(a: Any, i: int, element_type: Optional[str]) -> Optional[np.ndarray]:
    """A Python bool / int / float / complex as a 0-d array of the parameter's element type (JAX
    takes them as weakly typed values), or None when it is not one or cannot be one."""
    kind = type(a)
    if kind not in _PYTHON_SCALAR_TYPES or element_type not in _PYTHON_SCALAR_TYPES[kind]:
        return None
    dtype = _NUMPY_DTYPES.get(element_type)
    if dtype is None:
        return None
    try:
        return np.asarray(a, dtype=dtype)
    except OverflowError as e:
        raise ValueError(f"argument {i}: the Python {kind.__name__} {a!r} does not fit the "
                         f"parameter's element type {element_type}") from e


def _arg(a: Any, i: int, element_type: Optional[str] = None) -> np.ndarray:
    if type(a) is np.ndarray:
        return native_byte_order(a, f"argument {i}")
    if isinstance(a, ShardedArray):
        return np.asarray(a)
    scalar = _python_scalar(a, i, element_type)
    if scalar is not None:
        return scalar
    return native_byte_order(np.asarray(a), f"argument {i}")


def _bf16_bits(arrays: list) -> list:
    """The indices of the bfloat16 arrays in `arrays`, which it replaces with their bits (uint16
    views: numpy, and so the binding, has no bfloat16)."""
    if _bfloat16 is None:
        return []
    indices = []
    for i, a in enumerate(arrays):
        if a.dtype == _bfloat16:
            arrays[i] = a.view(np.uint16)
            indices.append(i)
    return indices


class Compiled:
    """A program partitioned for `num_devices` devices: call it with numpy arrays (the global
    arrays) to run it on xshard's virtual CPU devices."""

    def __init__(self, program: Any, source: str = "hlo"):
        self._program = program
        self._run = program.run
        self.source = source
        self._bf16_outputs = [i for i, s in enumerate(program.output_shapes())
                              if s.startswith("bf16")]
        # Each parameter's element type ("f32"; None for a tuple), for Python scalar arguments.
        self._in_types = [None if s.startswith("(") else s.split("[", 1)[0]
                          for s in program.argument_shapes()]

    @property
    def num_devices(self) -> int:
        return self._program.num_devices

    @property
    def in_shardings(self) -> list:
        """The HloSharding of every argument after propagation."""
        return self._program.argument_shardings

    @property
    def out_shardings(self) -> list:
        return self._program.output_shardings

    @property
    def in_shapes(self) -> list:
        return self._program.argument_shapes()

    @property
    def out_shapes(self) -> list:
        return self._program.output_shapes()

    def __call__(self, *args: Any):
        """Runs on the global arrays; returns the output, or a tuple when there are several.
        Arguments that are 64-byte aligned C-contiguous numpy arrays are read in place (every
        output of a previous call is); outputs take over the runtime's buffers (no copy)."""
        try:
            outs = self._run(self._arrays(args))
        except TypeError:
            arrays = self._arrays(args)  # bf16 arrays go as their bits, with their indices
            bf16 = _bf16_bits(arrays)
            if not bf16:
                for i, a in enumerate(arrays):  # name the argument nanobind could not convert
                    check_dtype(a, f"argument {i}")
                raise
            outs = self._run(arrays, bf16)
        for i in self._bf16_outputs:
            if _bfloat16 is not None and isinstance(outs[i], np.ndarray):
                outs[i] = outs[i].view(_bfloat16)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _arrays(self, args: Sequence[Any]) -> list:
        types = self._in_types
        return [_arg(a, i, types[i] if i < len(types) else None) for i, a in enumerate(args)]

    def as_text(self, spmd: bool = False) -> str:
        """The global program after sharding propagation, or (spmd=True) the partitioned program
        every device runs."""
        return self._program.as_text(spmd)

    def report(self) -> Report:
        """The collectives of the partitioned program (kind, shape, bytes, groups, cause; the
        program's own marked written), warnings and the per-device memory estimate before and
        after."""
        return Report(self._program.report_text(),
                      [Collective(**c) for c in self._program.collectives()],
                      list(self._program.warnings()), dict(self._program.memory()))

    def time(self, *args: Any, warmup: int = 3, iters: Optional[int] = None,
             whole_call: bool = False) -> Timing:
        """Times the per-device execution like `xshard bench run`: arguments are sharded once,
        `warmup` untimed runs, then `iters` timed ones (default adaptive: >= 10 runs and >= 1 s).
        whole_call=True times what a call does instead (shard the global arrays, run, assemble
        the outputs), in C++: a call from Python costs that plus the binding."""
        if warmup < 0 or (iters is not None and iters < 1):
            raise ValueError(f"warmup={warmup}, iters={iters}: need warmup >= 0 and iters >= 1")
        arrays = self._arrays(args)
        bf16 = _bf16_bits(arrays)
        samples = self._program.time(arrays, warmup, -1 if iters is None else iters, whole_call,
                                     bf16)
        return Timing(samples, warmup)

    def __repr__(self) -> str:
        return (f"Compiled({self.source}, devices={self.num_devices}, "
                f"in={self.in_shapes}, out={self.out_shapes})")


def _shardings(shardings: Optional[Sequence[Optional[ShardingLike]]], what: str) -> tuple:
    """Each entry as a NamedSharding or HloSharding (None kept; the native side takes each
    parameter's rank from the program), and the device count the named ones imply."""
    if shardings is None:
        return [], None
    if not isinstance(shardings, (list, tuple)):
        raise ValueError(f"{what} must be a list or tuple (one sharding or None per "
                         f"{'parameter' if what == 'in_shardings' else 'output'})")
    out, devices = [], None
    for s in shardings:
        if s is None or isinstance(s, (_xshard.HloSharding, _xshard.NamedSharding)):
            out.append(s)
        elif isinstance(s, str):
            out.append(_xshard.HloSharding.parse(s))
        else:
            named = _from_jax_sharding(s)
            if named is None:
                raise TypeError(f"{what}: expected NamedSharding, HloSharding, sharding text or "
                                f"None, got {type(s).__name__}")
            out.append(named)
        if isinstance(out[-1], _xshard.NamedSharding):
            devices = out[-1].num_devices
    return out, devices


# The most devices a program may be partitioned for (as `xshard run --devices`): the C++ limit.
_MAX_DEVICES = _xshard.MAX_DEVICES


def compile(hlo_text: str, devices: Optional[int] = None, *,
            in_shardings: Optional[Sequence[Optional[ShardingLike]]] = None,
            out_shardings: Optional[Sequence[Optional[ShardingLike]]] = None,
            propagate_to_parameters: Optional[bool] = None,
            propagate_to_output: Optional[bool] = None,
            async_collectives: bool = False,
            platform: Optional[str] = None) -> Compiled:
    """Compiles a global HLO module (XLA's text) for `devices` devices: sharding propagation, the
    SPMD partitioner and cleanup, as `xshard run` does. `in_shardings` / `out_shardings` (one per
    parameter / output, None to leave one as the text has it) override the text's annotations.
    devices defaults to the shardings' mesh, else the module's num_partitions, else the devices
    its annotations name. `platform` ("cpu" or "cuda"; None: $XSHARD_PLATFORM, else "cpu") is
    where the devices live, as the CLI's --platform; "cuda" without a usable GPU raises at once
    with what CUDA said. Errors raise ValueError with xshard's message."""
    if devices is not None and (isinstance(devices, bool) or not isinstance(devices, (int, np.integer))
                                or not 1 <= devices <= _MAX_DEVICES):
        raise ValueError(f"devices={devices!r} is not a device count: give a whole number from 1 to "
                         f"{_MAX_DEVICES}, or None for the shardings' mesh / the module's "
                         "num_partitions")
    in_h, in_dev = _shardings(in_shardings, "in_shardings")
    out_h, out_dev = _shardings(out_shardings, "out_shardings")
    if devices is None:
        devices = in_dev or out_dev or 0
    program = _xshard._compile(hlo_text, devices, in_h, out_h, propagate_to_parameters,
                               propagate_to_output, async_collectives, platform or "")
    return Compiled(program)
