"""The sharding model from Python: meshes, specs and shardings (the native classes), device_put and
gather between numpy arrays and per-device shards, and the sharding drawings."""
from __future__ import annotations

import sys
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _xshard
from ._xshard import HloSharding, Mesh, NamedSharding, PartitionSpec

P = PartitionSpec
DEFAULT_DEVICES = 8

ShardingLike = Union[NamedSharding, HloSharding, str]


def check_dtype(arr: np.ndarray, what: str = "array") -> np.ndarray:
    """`arr` when xshard has an element type for its dtype, else ValueError."""
    if arr.dtype.kind not in "biufc" or arr.dtype.itemsize > 16:
        raise ValueError(f"{what} of dtype {arr.dtype} has no xshard element type; use bool, "
                         "(u)int8..64, float16/32/64 or complex64/128")
    if not arr.dtype.isnative:
        raise ValueError(f"{what} has the big-endian byte order '{arr.dtype.str}' (as read from a "
                         "file written on another machine, or made with dtype('>...')); xshard "
                         "takes native byte order: convert with "
                         "arr.astype(arr.dtype.newbyteorder('='))")
    return arr


def native_byte_order(arr: np.ndarray, what: str = "array") -> np.ndarray:
    """`arr` when its byte order is the machine's, else check_dtype's ValueError naming it."""
    return arr if arr.dtype.isnative else check_dtype(arr, what)


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str]) -> Mesh:
    """A mesh over devices 0..N-1 in row-major order, like jax.make_mesh((4, 2), ('a', 'b'))."""
    n = int(np.prod(axis_shapes)) if len(axis_shapes) else 1
    return Mesh(np.arange(n).reshape(tuple(axis_shapes)), tuple(axis_names))


def _from_jax_sharding(sharding: Any) -> Optional[NamedSharding]:
    """A jax.sharding.NamedSharding as xshard's (device ids kept), or None for other objects."""
    if not type(sharding).__module__.startswith("jax"):
        return None
    mesh, spec = getattr(sharding, "mesh", None), getattr(sharding, "spec", None)
    if mesh is None or spec is None:
        raise ValueError(f"{type(sharding).__name__} is not supported: pass a "
                         "jax.sharding.NamedSharding or an xshard sharding")
    ids = np.vectorize(lambda d: d.id, otypes=[np.int64])(np.asarray(mesh.devices))
    entries = [tuple(e) if isinstance(e, (tuple, list)) else e for e in spec]
    return NamedSharding(Mesh(ids, tuple(mesh.axis_names)), P(*entries))


def to_hlo_sharding(sharding: ShardingLike, rank: int) -> HloSharding:
    """The HloSharding of `sharding` for an array of `rank` dims (NamedSharding, HloSharding, XLA's
    sharding text, or a jax NamedSharding)."""
    jax_sharding = _from_jax_sharding(sharding)
    if jax_sharding is not None:
        sharding = jax_sharding
    if isinstance(sharding, NamedSharding):
        return sharding.to_hlo_sharding(rank)
    if isinstance(sharding, HloSharding):
        return sharding.to_tiled()
    if isinstance(sharding, str):
        return HloSharding.parse(sharding).to_tiled()
    raise TypeError(f"expected a NamedSharding, HloSharding or sharding text, got "
                    f"{type(sharding).__name__}")


def device_count(sharding: ShardingLike, devices: Optional[int] = None) -> int:
    """The devices a sharding spans: the mesh's, `devices` when given, else implied by the ids."""
    jax_sharding = _from_jax_sharding(sharding)
    if jax_sharding is not None:
        sharding = jax_sharding
    if isinstance(sharding, NamedSharding):
        if devices is not None and devices != sharding.num_devices:
            raise ValueError(f"devices={devices} does not match the mesh's "
                             f"{sharding.num_devices} devices")
        return sharding.num_devices
    if devices is not None:
        return devices
    hlo = HloSharding.parse(sharding) if isinstance(sharding, str) else sharding
    return _xshard._implied_devices(hlo.to_tiled(), DEFAULT_DEVICES)


def devices_indices_map(sharding: ShardingLike, shape: Sequence[int],
                        devices: Optional[int] = None) -> dict:
    """{device id: tuple of slices} of the part each device holds, like JAX's
    Sharding.devices_indices_map (XLA's ceil split: trailing shards may be short or empty)."""
    hlo = to_hlo_sharding(sharding, len(shape))
    rows, _, _ = _xshard._geometry(hlo, list(shape), device_count(sharding, devices))
    return {d: tuple(slice(s, e) for s, e in zip(start, limit))
            for d, _, start, limit, _ in rows}


class ShardedArray:
    """A global array split over devices: what device_put returns. `shards[d]` is device d's
    piece (a numpy array); np.asarray(x) gathers the global array."""

    def __init__(self, shards: list, sharding: ShardingLike, shape: tuple, dtype: np.dtype,
                 num_devices: int):
        self.shards = shards
        self.sharding = sharding
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.num_devices = num_devices
        self.hlo_sharding = to_hlo_sharding(sharding, len(self.shape))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __array__(self, dtype=None, copy=None):
        out = gather(self.shards, self.hlo_sharding, self.shape)
        return out if dtype is None else out.astype(dtype)

    def __repr__(self) -> str:
        return f"ShardedArray(shape={self.shape}, dtype={self.dtype}, sharding={self.sharding!r})"


def device_put(x: Any, sharding: ShardingLike, devices: Optional[int] = None) -> ShardedArray:
    """Splits `x` into one piece per device, like jax.device_put (replicas get equal copies;
    uneven dims follow XLA's ceil split, so trailing pieces may be short or empty)."""
    arr = check_dtype(np.ascontiguousarray(np.asarray(x)))
    hlo = to_hlo_sharding(sharding, arr.ndim)
    n = device_count(sharding, devices)
    shards = _xshard._device_put(arr, hlo, n)
    return ShardedArray(shards, sharding, arr.shape, arr.dtype, n)


def gather(shards: Sequence[Any], sharding: ShardingLike, shape: Sequence[int]) -> np.ndarray:
    """The global array from one piece per device (the inverse of device_put); ValueError when
    replicas disagree or a piece has the wrong shape."""
    hlo = to_hlo_sharding(sharding, len(shape))
    return _xshard._gather([np.ascontiguousarray(s) for s in shards], hlo, list(shape))


def draw_sharding(shape: Sequence[int], sharding: ShardingLike, *, devices: Optional[int] = None,
                  max_width: int = 80, min_width: int = 9, scale: float = 1.0,
                  use_color: bool = False, device_kind: str = "CPU") -> str:
    """The drawing `xshard visualize` prints for an array of `shape` under `sharding`."""
    hlo = to_hlo_sharding(sharding, len(shape))
    return _xshard._visualize(list(shape), hlo, device_count(sharding, devices), max_width,
                              min_width, scale, use_color, device_kind)


def _use_color(file) -> bool:
    isatty = getattr(file, "isatty", None)
    return bool(isatty and isatty())


def visualize_sharding(shape: Sequence[int], sharding: ShardingLike, *,
                       devices: Optional[int] = None, max_width: int = 80, min_width: int = 9,
                       scale: float = 1.0, use_color: Optional[bool] = None,
                       device_kind: str = "CPU", file=None) -> None:
    """Prints which device holds which part of an array of `shape`, like
    jax.debug.visualize_sharding (colors when `file`, default stdout, is a terminal)."""
    file = sys.stdout if file is None else file
    color = _use_color(file) if use_color is None else use_color
    print(draw_sharding(shape, sharding, devices=devices, max_width=max_width,
                        min_width=min_width, scale=scale, use_color=color,
                        device_kind=device_kind), file=file)


def visualize_array_sharding(arr: Any, *, max_width: int = 80, min_width: int = 9,
                             scale: float = 1.0, use_color: Optional[bool] = None,
                             device_kind: str = "CPU", file=None) -> None:
    """jax.debug.visualize_array_sharding for a ShardedArray (or a jax.Array)."""
    sharding = getattr(arr, "sharding", None)
    if sharding is None:
        raise ValueError("visualize_array_sharding takes an array placed with xshard.device_put "
                         "(or a jax.Array); for a shape use visualize_sharding(shape, sharding)")
    devices = getattr(arr, "num_devices", None)
    visualize_sharding(arr.shape, sharding, devices=devices, max_width=max_width,
                       min_width=min_width, scale=scale, use_color=use_color,
                       device_kind=device_kind, file=file)
