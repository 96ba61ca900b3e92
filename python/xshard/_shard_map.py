"""xshard.shard_map: a Python function run once per mesh device on its local shards, like
jax.shard_map, with the named-axis collectives of xshard.lax running on xshard's runtime."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import _xshard
from ._sharding import native_byte_order
from ._xshard import Mesh, PartitionSpec


def shard_map(f: Callable, mesh: Mesh, in_specs: Sequence[PartitionSpec],
              out_specs: Any) -> Callable:
    """Returns g(*global_arrays): each argument is split by its in_spec (dims must divide evenly,
    as JAX requires), f(*local_shards) runs on every device of `mesh` at once (numpy arrays in and
    out; xshard.lax.psum(x, 'y') and the other collectives talk to the other devices), and each
    result is assembled by its out_spec (axes a spec leaves out: replicated, so every device must
    return the same value). out_specs: one spec (f returns one array) or a tuple of specs."""
    single = isinstance(out_specs, PartitionSpec)
    outs = [out_specs] if single else list(out_specs)
    if isinstance(in_specs, PartitionSpec):
        in_specs = [in_specs]
    mapped = _xshard._shard_map(mesh, list(in_specs), outs)

    def call(*args: Any):
        results = mapped(f, [native_byte_order(np.ascontiguousarray(np.asarray(a)), f"argument {i}")
                             for i, a in enumerate(args)])
        return results[0] if single else tuple(results)

    call.__wrapped__ = f
    call.__doc__ = f.__doc__
    return call
