"""xshard.from_jax: lowers a JAX function to HLO text with JAX (an optional dependency) and
compiles it with xshard, so that one program runs on both and their outputs, collectives and
timings can be compared."""
from __future__ import annotations

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


def lower_to_hlo(fn: Callable, *example_args: Any) -> str:
    """The HLO text of jax.jit(fn) for arguments like `example_args` (unsharded: xshard applies
    the shardings), as jax.jit(fn).lower(...).as_text(dialect='hlo') prints it (large constants
    written out)."""
    try:
        import jax
    except ImportError as e:
        raise ImportError("xshard.from_jax needs JAX (pip install jax); without it, compile HLO "
                          "text with xshard.compile") from e
    return lowered_hlo_text(jax.jit(fn).lower(*example_args))


def from_jax(fn: Callable, *example_args: Any, in_shardings: Optional[Sequence[Any]] = None,
             out_shardings: Optional[Any] = None, devices: Optional[int] = None,
             propagate_to_output: Optional[bool] = None) -> Compiled:
    """Lowers `fn` with JAX for `example_args` (numpy or JAX arrays; only their shapes and dtypes
    matter) and compiles it with xshard: in_shardings / out_shardings as jax.jit takes them (one
    per argument / output, or one for all; xshard or jax NamedShardings, HloShardings, None).
    Outputs propagate their sharding unless out_shardings names one (JAX's default)."""
    text = lower_to_hlo(fn, *example_args)
    if in_shardings is not None and not isinstance(in_shardings, (list, tuple)):
        in_shardings = [in_shardings] * len(example_args)
    if out_shardings is not None and not isinstance(out_shardings, (list, tuple)):
        out_shardings = [out_shardings]
    if propagate_to_output is None:
        propagate_to_output = out_shardings is None
    compiled = _compile(text, devices, in_shardings=in_shardings, out_shardings=out_shardings,
                        propagate_to_output=propagate_to_output)
    compiled.source = f"jax:{getattr(fn, '__name__', 'fn')}"
    return compiled
