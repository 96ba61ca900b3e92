"""xshard.from_jax: lowers a JAX function to HLO text with JAX (an optional dependency) and
compiles it with xshard, so that one program runs on both and their outputs, collectives and
timings can be compared."""
from __future__ import annotations

import re
from typing import Any, Callable, Optional, Sequence

from ._program import Compiled, compile as _compile


def jax_available() -> bool:
    """True when JAX can be imported."""
    try:
        import jax  # noqa: F401
    except ImportError:
        return False
    return True


def lowered_hlo_text(lowered: Any) -> str:
    """The HLO text of a jax.stages.Lowered as lowered.as_text(dialect='hlo') prints it, with every
    constant written out: older JAX releases (0.4.38 among them) print large constants there as
    {...}, which xshard cannot run; their compiler_ir('hlo') prints them whole."""
    text = lowered.as_text(dialect="hlo")
    if "{...}" in text:
        text = lowered.compiler_ir("hlo").as_hlo_text(print_large_constants=True)
    return text


def _import_jax():
    try:
        import jax
    except ImportError as e:
        raise ImportError("xshard.from_jax needs JAX (pip install jax); without it, compile HLO "
                          "text with xshard.compile") from e
    return jax


def lower_to_hlo(fn: Callable, *example_args: Any) -> str:
    """The HLO text of jax.jit(fn) for arguments like `example_args` (unsharded: xshard applies
    the shardings), as jax.jit(fn).lower(...).as_text(dialect='hlo') prints it (large constants
    written out)."""
    jax = _import_jax()
    return lowered_hlo_text(jax.jit(fn).lower(*example_args))


def _is_sharding_leaf(v: Any) -> bool:
    """A sharding (or None) where shardings are given as a pytree prefix: lists, tuples and dicts
    are the pytree's nodes."""
    return v is None or not isinstance(v, (list, tuple, dict))


class _Each:
    """One sharding for every leaf of a subtree (opaque to the pytree utilities)."""

    def __init__(self, sharding: Any, count: int):
        self.sharding, self.count = sharding, count


def _expand(jax: Any, shardings: Any, tree: Any, what: str) -> Optional[list]:
    """One sharding (or None) per leaf of `tree` (a PyTreeDef) from `shardings` as jax.jit takes
    them: None (all None), one sharding for every leaf, a pytree prefix of the tree, or (as
    before pytrees) a flat list with one entry per leaf."""
    tu = jax.tree_util
    if shardings is None:
        return None
    count = tree.num_leaves
    if _is_sharding_leaf(shardings):
        return [shardings] * count
    top = tree.node_data()[0] if tree.node_data() is not None else None
    prefix = tuple(shardings) if isinstance(shardings, list) and top is tuple else shardings
    if tree.num_nodes == 1 and isinstance(prefix, (list, tuple)) and len(prefix) == 1:
        prefix = prefix[0]  # [s] for a function that returns one array
    try:
        each = tu.tree_map(lambda s, sub: _Each(s, len(tu.tree_leaves(sub))), prefix,
                           tu.tree_unflatten(tree, [0] * count), is_leaf=_is_sharding_leaf)
        flat = []
        for e in tu.tree_leaves(each, is_leaf=lambda v: isinstance(v, _Each)):
            flat.extend([e.sharding] * e.count)
        if len(flat) == count:
            return flat
    except (ValueError, TypeError):
        pass
    flat = list(shardings) if isinstance(shardings, (list, tuple)) else None
    if flat is not None and len(flat) == count and all(map(_is_sharding_leaf, flat)):
        return flat
    raise ValueError(f"{what} does not fit the structure {tree} ({count} arrays): give one "
                     "sharding for all, one per array, or a pytree prefix of it (None entries: "
                     "xshard chooses)")


def _lower(jax: Any, fn: Callable, example_args: tuple, static_argnums: Any) -> tuple:
    """(jax.stages.Lowered, the indices of the flat arguments the HLO keeps). A function already
    jitted keeps its own options (JAX drops unused arguments from its HLO unless jitted with
    keep_unused=True); others are jitted keeping every argument."""
    if hasattr(fn, "lower") and hasattr(fn, "trace"):
        if static_argnums:
            raise ValueError("static_argnums is for a plain function: pass it to jax.jit for a "
                             "jitted one")
        lowered = fn.lower(*example_args)
        count = lowered.in_tree.num_leaves
        try:
            kept = sorted(lowered._lowering.compile_args["kept_var_idx"])
        except (AttributeError, KeyError, TypeError):  # another JAX release: all or an error
            kept = list(range(count))
        return lowered, kept
    lowered = jax.jit(fn, static_argnums=static_argnums or (), keep_unused=True).lower(
        *example_args)
    return lowered, list(range(lowered.in_tree.num_leaves))


class JaxCompiled(Compiled):
    """A program from xshard.from_jax: called like jax.jit(fn).lower(...).compile(), with the
    function's (pytrees of) arguments, static ones left out, and returning its pytree of
    outputs."""

    def __init__(self, program: Any, source: str, jax: Any, in_tree: Any, out_tree: Any,
                 kept: list):
        super().__init__(program, source)
        self._tree_util = jax.tree_util
        self._in_tree, self._out_tree, self._kept = in_tree, out_tree, kept
        tu = jax.tree_util
        args_tree = in_tree.children()[0]
        # Arguments and outputs that are plain arrays (the common case) skip the pytree work.
        self._plain_in = (len(kept) == in_tree.num_leaves and in_tree.children()[1].num_leaves == 0
                          and args_tree.num_leaves == args_tree.num_nodes - 1)
        self._plain_out = (out_tree == tu.tree_structure(0)
                           or (out_tree.num_leaves >= 2
                               and out_tree == tu.tree_structure((0,) * out_tree.num_leaves)))

    def __call__(self, *args: Any, **kwargs: Any):
        if self._plain_in and not kwargs and len(args) == self._in_tree.num_leaves:
            outs = super().__call__(*args)
        else:
            tu = self._tree_util
            with_paths, tree = tu.tree_flatten_with_path((args, kwargs))
            if tree != self._in_tree:
                want, got = self._in_tree.children()[0], tree.children()[0]
                raise ValueError(
                    f"{self.source} takes {want.num_nodes and len(want.children())} "
                    f"argument(s) structured as {want} (static arguments left out, as for "
                    f"jax.jit(...).lower(...).compile()) but was called with "
                    f"{len(args)}: {got}" + (f" and keyword arguments {sorted(kwargs)}"
                                             if kwargs else ""))
            leaves = [with_paths[i][1] for i in self._kept]
            try:
                outs = super().__call__(*leaves)
            except ValueError as e:
                raise ValueError(self._name_leaf(str(e), [with_paths[i][0] for i in self._kept])) \
                    from e
        if self._plain_out:
            return outs
        flat = list(outs) if self._out_tree.num_leaves != 1 else [outs]
        return self._out_tree.unflatten(flat)

    def _name_leaf(self, message: str, paths: list) -> str:
        """`message` with its leading "argument N" (N: the flat index) named by the leaf's path
        in the arguments, e.g. "argument args[0]['w']"."""
        m = re.match(r"argument (\d+)\b", message)
        if not m or int(m.group(1)) >= len(paths):
            return message
        path = "args" + self._tree_util.keystr(tuple(paths[int(m.group(1))][1:]))
        return f"argument {path}" + message[m.end():]


def from_jax(fn: Callable, *example_args: Any, in_shardings: Optional[Any] = None,
             out_shardings: Optional[Any] = None, devices: Optional[int] = None,
             propagate_to_output: Optional[bool] = None, static_argnums: Any = (),
             platform: Optional[str] = None) -> Compiled:
    """Lowers `fn` with JAX for `example_args` (numpy or JAX arrays, or pytrees of them; only
    their shapes and dtypes matter) and compiles it with xshard. in_shardings / out_shardings as
    jax.jit takes them: one sharding for all, one per (non-static) argument / output, or a pytree
    prefix of them (xshard or jax NamedShardings, HloShardings, None: xshard chooses).
    `static_argnums` as jax.jit's (a jitted `fn` keeps its own). The program is called like
    jax.jit(fn).lower(...).compile(): with the non-static arguments (pytrees as the examples),
    returning fn's pytree of outputs; Python scalars take the parameter's dtype, as JAX's weak
    types. Outputs propagate their sharding unless out_shardings names one (JAX's default);
    `devices` and `platform` as xshard.compile's."""
    jax = _import_jax()
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    lowered, kept = _lower(jax, fn, example_args, static_argnums)
    text = lowered_hlo_text(lowered)
    args_tree = lowered.in_tree.children()[0]
    if in_shardings is not None:
        in_shardings = _expand(jax, in_shardings, args_tree, "in_shardings")
        in_shardings = [in_shardings[i] for i in kept]
    out_shardings = _expand(jax, out_shardings, lowered.out_tree, "out_shardings")
    if propagate_to_output is None:
        propagate_to_output = True  # as jax.jit: a given sharding stays, the others propagate
    compiled = _compile(text, devices, in_shardings=in_shardings, out_shardings=out_shardings,
                        propagate_to_output=propagate_to_output, platform=platform)
    return JaxCompiled(compiled._program, f"jax:{getattr(fn, '__name__', 'fn')}", jax,
                       lowered.in_tree, lowered.out_tree, kept)
