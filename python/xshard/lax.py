"""Named-axis collectives for functions run by xshard.shard_map, as jax.lax spells them:
psum(x, 'y'), all_gather(x, ('x', 'y'), axis=0, tiled=True), ... Called outside shard_map they
raise RuntimeError. Arguments and results are numpy arrays."""
from __future__ import annotations

from typing import Sequence, Tuple, Union

import numpy as np

from . import _xshard

AxisName = Union[str, Tuple[str, ...]]


def _axes(axis_name: AxisName):
    return axis_name if isinstance(axis_name, str) else list(axis_name)


def axis_index(axis_name: AxisName) -> int:
    """This device's index along the axes (row-major over the axes as given)."""
    return _xshard._axis_index(_axes(axis_name))


def axis_size(axis_name: AxisName) -> int:
    """The product of the sizes of the axes."""
    return _xshard._axis_size(_axes(axis_name))


def psum(x, axis_name: AxisName) -> np.ndarray:
    return _xshard._psum(x, _axes(axis_name))


def pmax(x, axis_name: AxisName) -> np.ndarray:
    return _xshard._pmax(x, _axes(axis_name))


def pmin(x, axis_name: AxisName) -> np.ndarray:
    return _xshard._pmin(x, _axes(axis_name))


def pmean(x, axis_name: AxisName) -> np.ndarray:
    """psum / axis size (integer inputs give float32, as JAX's true division)."""
    return _xshard._pmean(x, _axes(axis_name))


def all_gather(x, axis_name: AxisName, *, axis: int = 0, tiled: bool = False) -> np.ndarray:
    """The group's x stacked along a new dim `axis`, or concatenated along `axis` when tiled."""
    return _xshard._all_gather(x, _axes(axis_name), axis, tiled)


def psum_scatter(x, axis_name: AxisName, *, scatter_dimension: int = 0,
                 tiled: bool = False) -> np.ndarray:
    """The psum, of which member i keeps piece i along scatter_dimension."""
    return _xshard._psum_scatter(x, _axes(axis_name), scatter_dimension, tiled)


def ppermute(x, axis_name: AxisName, perm: Sequence[Tuple[int, int]]) -> np.ndarray:
    """Sends x from source index to destination index for each (source, destination) pair;
    members no pair sends to get zeros."""
    return _xshard._ppermute(x, _axes(axis_name), [tuple(p) for p in perm])


def all_to_all(x, axis_name: AxisName, split_axis: int, concat_axis: int, *,
               tiled: bool = False) -> np.ndarray:
    """Splits x along split_axis into one piece per member, sends piece j to member j and joins
    what arrives along concat_axis."""
    return _xshard._all_to_all(x, _axes(axis_name), split_axis, concat_axis, tiled)
