"""The sharding model from Python: expected values are XLA's / JAX's (from their docs and the
seed notebooks) or computed by hand with numpy slicing."""
import numpy as np
import pytest

import xshard
from xshard import HloSharding, Mesh, NamedSharding, P


@pytest.fixture
def mesh():
    return xshard.make_mesh((4, 2), ("a", "b"))


def test_mesh(mesh):
    assert mesh.axis_names == ("a", "b")
    assert mesh.shape == {"a": 4, "b": 2}
    assert mesh.size == 8
    assert mesh.device_ids.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert repr(mesh) == "Mesh('a': 4, 'b': 2)"
    assert mesh == Mesh(np.arange(8).reshape(4, 2), ("a", "b"))
    assert mesh == Mesh.parse("a=4,b=2")
    custom = Mesh([[0, 2, 4, 6], [1, 3, 5, 7]], ("x", "y"))
    assert repr(custom) == "Mesh('x': 2, 'y': 4, device_ids=[0,2,4,6,1,3,5,7])"


def test_mesh_errors():
    with pytest.raises(ValueError, match="axis names"):
        Mesh(np.arange(8).reshape(4, 2), ("a",))
    with pytest.raises(ValueError):
        Mesh([0, 0], ("a",))  # not a permutation
    with pytest.raises(ValueError):
        Mesh(np.arange(4).reshape(2, 2), ("a", "a"))


def test_partition_spec():
    assert repr(P("b", "a")) == "P('b', 'a')"
    assert repr(P(("x", "y"), None)) == "P(('x', 'y'), None)"
    assert repr(P()) == "P()"
    assert repr(P("x")) == "P('x',)"
    spec = P(("x", "y"), None)
    assert len(spec) == 2 and spec[0] == ("x", "y") and spec[1] is None
    assert P.parse("P(('x','y'), None)") == spec
    with pytest.raises(ValueError, match="PartitionSpec entry"):
        P(3)


def test_named_to_hlo_sharding(mesh):
    # The examples of JAX's NamedSharding -> XLA HloSharding (named_sharding.h, seed 002).
    s = NamedSharding(mesh, P("b", "a")).to_hlo_sharding(2)
    assert s.to_string("v1") == "{devices=[2,4]0,2,4,6,1,3,5,7}"
    assert s.to_string("iota") == "{devices=[2,4]<=[4,2]T(1,0)}"
    r = NamedSharding(mesh, P(None, "a")).to_hlo_sharding(2)
    assert r.to_string("v1") == "{devices=[1,4,2]0,1,2,3,4,5,6,7 last_tile_dim_replicate}"
    assert NamedSharding(mesh, P()).to_hlo_sharding(2) == HloSharding.replicate()
    assert repr(NamedSharding(mesh, P("a"))) == "NamedSharding(mesh=Mesh('a': 4, 'b': 2), spec=P('a',))"
    back = NamedSharding.from_hlo_sharding(mesh, s)
    assert back.spec == P("b", "a")


def test_named_sharding_errors(mesh):
    with pytest.raises(ValueError, match="'c'"):
        NamedSharding(mesh, P("c"))
    with pytest.raises(ValueError):
        NamedSharding(mesh, P("a", "a"))
    with pytest.raises(ValueError):
        NamedSharding(mesh, P("a", "b")).to_hlo_sharding(1)


def test_hlo_sharding_parse_print_both_forms():
    s = HloSharding.parse("{devices=[2,4]<=[4,2]T(1,0)}")
    assert str(s) == "{devices=[2,4]<=[4,2]T(1,0)}"
    assert s.to_string("v1") == "{devices=[2,4]0,2,4,6,1,3,5,7}"
    v1 = HloSharding.parse("{devices=[2,4]0,2,4,6,1,3,5,7}")
    assert v1 == s  # equality ignores the text form
    assert v1.to_string("iota") == "{devices=[2,4]<=[4,2]T(1,0)}"
    assert s.tile_counts == [2, 4] and s.is_tiled and not s.is_replicated
    assert HloSharding.parse("{replicated}").is_replicated
    assert str(HloSharding.maximal(3)) == "{maximal device=3}"
    with pytest.raises(ValueError, match="no iota form"):
        HloSharding.parse("{devices=[2]1,0}").to_string("iota")
    with pytest.raises(ValueError):
        HloSharding.parse("{devices=[2,4]<=[8}")
    with pytest.raises(ValueError, match="form="):
        s.to_string("xyz")


def test_devices_indices_map():
    # XLA's ceil split: dims [5, 7] under {devices=[4,2]<=[8]} (geometry.h's example).
    m = xshard.devices_indices_map("{devices=[4,2]<=[8]}", (5, 7))
    assert m[5] == (slice(4, 5), slice(4, 7))
    assert m[7] == (slice(5, 5), slice(4, 7))
    assert m[0] == (slice(0, 2), slice(0, 4))


@pytest.mark.parametrize("spec", [P("b", "a"), P(None, "a"), P("a"), P(), P(("a", "b"))])
def test_device_put_matches_numpy_slices(mesh, spec):
    x = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    sharding = NamedSharding(mesh, spec)
    placed = xshard.device_put(x, sharding)
    assert len(placed.shards) == 8
    # Hand computation of each device's block from the mesh coordinates.
    sizes = {"a": 4, "b": 2}
    coords = {d: (d // 2, d % 2) for d in range(8)}
    for d, shard in enumerate(placed.shards):
        index = []
        for dim, entry in enumerate(list(spec) + [None] * (2 - len(spec))):
            axes = () if entry is None else (entry,) if isinstance(entry, str) else entry
            count, pos = 1, 0
            for ax in axes:
                pos = pos * sizes[ax] + coords[d][0 if ax == "a" else 1]
                count *= sizes[ax]
            n = x.shape[dim] // count
            index.append(slice(pos * n, (pos + 1) * n))
        np.testing.assert_array_equal(shard, x[tuple(index)])
    np.testing.assert_array_equal(np.asarray(placed), x)
    np.testing.assert_array_equal(xshard.gather(placed.shards, sharding, x.shape), x)


def test_device_put_uneven_and_dtypes():
    x = np.arange(5, dtype=np.int16)
    placed = xshard.device_put(x, "{devices=[4]<=[4]}")
    assert [s.tolist() for s in placed.shards] == [[0, 1], [2, 3], [4], []]
    assert placed.shards[0].dtype == np.int16
    b = np.array([[True, False], [False, True]])
    np.testing.assert_array_equal(np.asarray(xshard.device_put(b, "{devices=[2,1]<=[2]}")), b)


def test_gather_errors(mesh):
    sharding = NamedSharding(mesh, P(None, "a"))  # replicated over b: devices 0,1 hold one piece
    x = np.ones((2, 8), np.float32)
    shards = xshard.device_put(x, sharding).shards
    shards[1] = shards[1] + 1
    with pytest.raises(ValueError, match="device"):
        xshard.gather(shards, sharding, x.shape)
    with pytest.raises(ValueError):
        xshard.gather(shards[:3], sharding, x.shape)


def test_jax_style_errors_name_the_problem():
    with pytest.raises(ValueError, match="dtype"):
        xshard.device_put(np.array(["a"]), "{replicated}", devices=2)
    with pytest.raises(TypeError):
        xshard.device_put(np.ones(2), 3)
