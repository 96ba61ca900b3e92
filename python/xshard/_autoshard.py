"""xshard.autoshard: chooses the shardings of a JAX function (or HLO text) for a mesh and returns
them as PartitionSpecs that jax.jit accepts as in_shardings / out_shardings.

    >>> plan = xshard.autoshard(step, mesh, w1, w2, x)        # doctest: +SKIP
    >>> in_specs, out_specs = plan
    >>> jax.jit(step, in_shardings=jax.tree.map(lambda s: NamedSharding(mesh, s), in_specs))
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Union

from . import _xshard
from ._jax import lowered_hlo_text


@dataclasses.dataclass
class AutoshardPlan:
    """The chosen plan: `in_specs` mirrors the arguments (a tuple with one entry per argument, each
    a pytree like the argument), `out_specs` mirrors the outputs; both hold
    jax.sharding.PartitionSpec when JAX is installed, else xshard.P. Unpacks as
    (in_specs, out_specs)."""
    in_specs: Any
    out_specs: Any
    predicted_seconds: float
    peak_bytes: int
    memory_per_device: int
    hardware: str
    report: str
    hlo: str

    def __iter__(self):
        return iter((self.in_specs, self.out_specs))


def _mesh_text(mesh: Any) -> str:
    if isinstance(mesh, str):
        return mesh
    if isinstance(mesh, dict):
        return ",".join(f"{k}={v}" for k, v in mesh.items())
    shape = getattr(mesh, "shape", None)  # jax.sharding.Mesh: an ordered name -> size mapping
    if shape is not None and hasattr(shape, "items"):
        return ",".join(f"{k}={v}" for k, v in shape.items())
    names, sizes = getattr(mesh, "axis_names", None), getattr(mesh, "axis_sizes", None)
    if names is not None and sizes is not None:
        return ",".join(f"{k}={v}" for k, v in zip(names, sizes))
    raise TypeError(f"xshard.autoshard: mesh must be a jax.sharding.Mesh, an xshard.Mesh, a dict "
                    f"{{'x': 4}} or text 'x=4,y=2', got {type(mesh).__name__}")


def _spec_class():
    try:
        from jax.sharding import PartitionSpec
        return PartitionSpec
    except ImportError:
        from ._sharding import P
        return P


def _spec(t: dict):
    if t["axes"] is None:
        raise ValueError(f"xshard.autoshard: the plan for {t['name']} ({t['shape']}) is {t['spec']}, "
                         f"which no PartitionSpec on this mesh expresses")
    P = _spec_class()
    dims = [None if not a else (a[0] if len(a) == 1 else tuple(a)) for a in t["axes"]]
    while dims and dims[-1] is None:
        dims.pop()
    return P(*dims)


def autoshard(fn_or_hlo: Union[Callable, str], mesh: Any, *example_args: Any,
              memory_per_device: Optional[int] = None, hardware: Optional[str] = None,
              time_limit: float = 60.0, keep_annotations: bool = False) -> AutoshardPlan:
    """Chooses a sharding for every argument, output and intermediate of `fn_or_hlo` on `mesh` so
    that the predicted step time is lowest while each device's live values fit
    `memory_per_device` bytes (default: this machine's available memory / devices).

    fn_or_hlo: a function JAX can jit (lowered with `example_args`: arrays or
    jax.ShapeDtypeStruct, only shapes and dtypes matter), or HLO text.
    hardware: a profile file (hardware/*.profile or one `xshard bench calibrate` wrote) to plan
    for; default this machine's. Returns an AutoshardPlan; `(in_specs, out_specs) = plan`."""
    if callable(fn_or_hlo):
        try:
            import jax
        except ImportError as e:
            raise ImportError("xshard.autoshard of a function needs JAX (pip install jax); without it, "
                              "give HLO text") from e
        lowered = jax.jit(fn_or_hlo).lower(*example_args)
        text = lowered_hlo_text(lowered)
        in_tree = jax.tree_util.tree_structure(example_args)
        out_tree = jax.tree_util.tree_structure(lowered.out_info)
    elif isinstance(fn_or_hlo, str):
        text, in_tree, out_tree = fn_or_hlo, None, None
    else:
        raise TypeError(f"xshard.autoshard: expected a function or HLO text, got {type(fn_or_hlo).__name__}")
    mem = -1 if memory_per_device is None else int(memory_per_device)
    if memory_per_device is not None and mem <= 0:
        raise ValueError(f"xshard.autoshard: memory_per_device must be a positive byte count, got {memory_per_device}")
    r = _xshard._autoshard(text, _mesh_text(mesh), mem, hardware or "", float(time_limit), keep_annotations)
    ins = [_spec(t) for t in r["parameters"]]
    outs = [_spec(t) for t in r["outputs"]]
    if in_tree is not None:
        import jax
        if in_tree.num_leaves != len(ins):
            raise ValueError(f"xshard.autoshard: the lowered module has {len(ins)} parameters but the "
                             f"arguments have {in_tree.num_leaves} leaves")
        in_specs = jax.tree_util.tree_unflatten(in_tree, ins)
        out_specs = jax.tree_util.tree_unflatten(out_tree, outs) if out_tree.num_leaves == len(outs) else tuple(outs)
    else:
        in_specs, out_specs = tuple(ins), (outs[0] if len(outs) == 1 else tuple(outs))
    return AutoshardPlan(in_specs, out_specs, r["predicted_seconds"], r["peak_bytes"], r["memory_per_device"],
                         r["hardware"], r["report"], r["hlo"])
