"""Sharding drawings from Python: JAX's drawing byte for byte (visualize.h quotes it), the CLI's
`xshard visualize` output for the same sharding, and colors only when asked or on a terminal."""
import io
import subprocess

import numpy as np
import pytest

import xshard
from xshard import NamedSharding, P

# jax.debug.visualize_array_sharding of P(None, 'a') on (4, 16) over mesh a=4, b=2 with
# max_width=40, scale=0.4 (JAX's output).
JAX_DRAWING = """\
┌────────┬────────┬────────┬────────┐
│        │        │        │        │
│CPU 0,1 │CPU 2,3 │CPU 4,5 │CPU 6,7 │
│        │        │        │        │
└────────┴────────┴────────┴────────┘
"""


@pytest.fixture
def mesh():
    return xshard.make_mesh((4, 2), ("a", "b"))


def test_jax_drawing(mesh):
    sharding = NamedSharding(mesh, P(None, "a"))
    assert xshard.draw_sharding((4, 16), sharding, max_width=40, scale=0.4) == JAX_DRAWING
    out = io.StringIO()
    xshard.visualize_array_sharding(xshard.device_put(np.ones((4, 16)), sharding), max_width=40,
                                    scale=0.4, file=out)
    assert out.getvalue() == JAX_DRAWING + "\n"  # print() adds the newline JAX's print adds


@pytest.mark.parametrize("args", [
    ("--mesh", "a=4,b=2", "--spec", "P('b', 'a')", "--shape", "4,16"),
    ("--mesh", "a=4,b=2", "--spec", "P(None, 'a')", "--shape", "16,4", "--max-width", "40"),
    ("--sharding", "{devices=[2,1,2]<=[4]}", "--shape", "4,8,16", "--scale", "0.3"),
    ("--sharding", "{devices=[3,1]<=[3]}", "--shape", "7,5", "--color"),
])
def test_same_as_cli(xshard_binary, args):
    cli = subprocess.run([xshard_binary, "visualize", *args], capture_output=True, text=True,
                         check=True).stdout
    flags = dict(zip(args[::2], args[1::2]))
    shape = [int(d) for d in flags["--shape"].split(",")]
    if "--mesh" in flags:
        sharding = NamedSharding(xshard.Mesh.parse(flags["--mesh"]), P.parse(flags["--spec"]))
    else:
        sharding = flags["--sharding"]
    drawing = xshard.draw_sharding(shape, sharding, max_width=int(flags.get("--max-width", 80)),
                                   scale=float(flags.get("--scale", 1.0)),
                                   use_color="--color" in args)
    assert drawing == cli


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_colors_on_a_terminal_only(mesh):
    sharding = NamedSharding(mesh, P("a"))
    plain, tty = io.StringIO(), _Tty()
    xshard.visualize_sharding((8,), sharding, file=plain)
    xshard.visualize_sharding((8,), sharding, file=tty)
    assert "\x1b[" not in plain.getvalue()
    assert ";48;2;" in tty.getvalue()  # 24-bit background colors, as rich draws JAX's boxes


def test_errors(mesh):
    with pytest.raises(ValueError):
        xshard.visualize_array_sharding(np.ones(3))
    with pytest.raises(ValueError):
        xshard.draw_sharding((4,), "{manual}", devices=2)
