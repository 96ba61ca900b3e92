"""The package itself: public names, the type stubs shipped next to the extension, and the
docstring example."""
import doctest
import os

import numpy as np
import pytest

import xshard


def test_public_api():
    for name in xshard.__all__:
        assert hasattr(xshard, name), name
    assert xshard.P is xshard.PartitionSpec


def test_stubs_are_shipped():
    stub = os.path.join(os.path.dirname(xshard._xshard.__file__), "_xshard.pyi")
    assert os.path.exists(stub), stub
    text = open(stub, encoding="utf-8").read()
    for cls in ("class Mesh", "class PartitionSpec", "class NamedSharding", "class HloSharding",
                "def _compile"):
        assert cls in text, cls
    assert os.path.exists(os.path.join(os.path.dirname(xshard.__file__), "py.typed"))


def test_docstring_example():
    failed, attempted = doctest.testmod(xshard, verbose=False)
    assert attempted > 0 and failed == 0


def test_lowered_hlo_text_writes_out_large_constants():
    # Older JAX releases print large constants as {...} in lowered.as_text(dialect="hlo"), which
    # xshard refuses to run; the package then asks compiler_ir("hlo") for the whole text.
    from xshard._jax import lowered_hlo_text

    class Computation:
        def __init__(self):
            self.asked = None

        def as_hlo_text(self, print_large_constants=False):
            self.asked = print_large_constants
            return "c = f32[64] constant({1, 2})" if print_large_constants else "c = f32[64] constant({...})"

    class Lowered:
        def __init__(self, text):
            self.text, self.ir = text, Computation()

        def as_text(self, dialect=None):
            assert dialect == "hlo"
            return self.text

        def compiler_ir(self, dialect):
            assert dialect == "hlo"
            return self.ir

    whole = Lowered("c = f32[2] constant({1, 2})")
    assert lowered_hlo_text(whole) == "c = f32[2] constant({1, 2})"
    assert whole.ir.asked is None  # a text with every constant is taken as it is
    elided = Lowered("c = f32[64] constant({...})")
    assert lowered_hlo_text(elided) == "c = f32[64] constant({1, 2})"
    assert elided.ir.asked is True
    # Running an elided constant is an error naming it, not a run on zeros.
    with pytest.raises(Exception, match=r"constant 'c' \(f32\[2\]\) of 'e' was printed without its values"):
        prog = xshard.compile("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                              "  c = f32[2] constant({...})\n  ROOT a = f32[2] add(p, c)\n}\n")
        prog(np.ones(2, np.float32))
