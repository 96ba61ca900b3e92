"""xshard from Python: the sharding model (Mesh, PartitionSpec / P, NamedSharding, HloSharding),
device_put and the sharding drawings, shard_map with xshard.lax's collectives, the collective
matmul library (xshard.cmm), the numerics report (xshard.numerics), and programs compiled from
HLO text (xshard.compile) or from a JAX function (xshard.from_jax) that run on N virtual CPU
devices with numpy arrays.

    >>> import numpy as np, xshard
    >>> mesh = xshard.make_mesh((4, 2), ('a', 'b'))
    >>> xshard.NamedSharding(mesh, xshard.P('b', 'a')).to_hlo_sharding(2)
    HloSharding('{devices=[2,4]<=[4,2]T(1,0)}')
"""
from ._xshard import HloSharding, Mesh, NamedSharding, PartitionSpec
from ._sharding import (P, ShardedArray, device_put, devices_indices_map, draw_sharding, gather,
                        make_mesh, to_hlo_sharding, visualize_array_sharding,
                        visualize_sharding)
from ._program import Collective, Compiled, Report, Timing, compile
from ._jax import from_jax, jax_available, lower_to_hlo
from ._shard_map import shard_map
from ._numerics import BlockNumerics, NumericsReport, numerics
from ._autoshard import AutoshardPlan, autoshard
from . import cmm, lax

__version__ = "0.1.0"

__all__ = [
    "AutoshardPlan", "autoshard", "BlockNumerics", "Collective", "cmm", "Compiled", "HloSharding",
    "Mesh", "NamedSharding",
    "NumericsReport", "P", "PartitionSpec", "Report", "ShardedArray", "Timing", "compile",
    "device_put", "devices_indices_map", "draw_sharding", "from_jax", "gather", "jax_available",
    "lax", "lower_to_hlo", "make_mesh", "numerics", "shard_map", "to_hlo_sharding",
    "visualize_array_sharding", "visualize_sharding",
]
