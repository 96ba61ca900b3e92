"""The package itself: public names, the type stubs shipped next to the extension, and the
docstring example."""
import doctest
import os

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
