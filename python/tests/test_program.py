"""xshard.compile from Python: outputs against numpy, the partitioned program and its report, the
timing report, zero-copy results, and errors as ValueError with xshard's message."""
import os

import numpy as np
import pytest

import xshard
from xshard import NamedSharding, P

from conftest import source_dir

# A global program with annotations in the text: s = x + y and its column sums (a reduce over
# the sharded dim, so the partitioner must insert an all-reduce of the partial sums).
SUM_HLO = """
HloModule sums, num_partitions=4

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[8,6] parameter(0), sharding={devices=[4,1]<=[4]}
  y = f32[8,6] parameter(1), sharding={devices=[4,1]<=[4]}
  s = f32[8,6] add(x, y)
  zero = f32[] constant(0)
  r = f32[6] reduce(s, zero), dimensions={0}, to_apply=add
  ROOT t = (f32[8,6], f32[6]) tuple(s, r), sharding={{devices=[4,1]<=[4]}, {replicated}}
}
"""

MATMUL_HLO = """
HloModule jit_matmul
ENTRY main {
  a = f32[8,16] parameter(0)
  b = f32[16,4] parameter(1)
  ROOT d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


@pytest.fixture(scope="module")
def sums():
    return xshard.compile(SUM_HLO)


def _inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((8, 6)).astype(np.float32),
            rng.standard_normal((8, 6)).astype(np.float32))


def test_outputs_match_numpy(sums):
    x, y = _inputs()
    s, r = sums(x, y)
    np.testing.assert_array_equal(s, x + y)
    np.testing.assert_allclose(r, (x + y).sum(axis=0), rtol=1e-6, atol=1e-6)
    assert sums.num_devices == 4  # the module's num_partitions
    assert sums.in_shapes == ["f32[8,6]", "f32[8,6]"]
    assert sums.out_shapes == ["f32[8,6]", "f32[6]"]


def test_report_and_text(sums):
    report = sums.report()
    kinds = [c.kind for c in report.collectives]
    assert kinds == ["all-reduce"]
    c = report.collectives[0]
    assert c.shape == "f32[6]"
    assert c.groups == "{{0,1,2,3}}"
    # Ring all-reduce over 4 devices: each receives 2 * 3/4 of the 24-byte vector.
    assert c.bytes == 36 and report.total_bytes == 36
    assert "all-reduce" in str(report)
    assert report.memory["after_peak_bytes"] < report.memory["before_peak_bytes"]
    spmd = sums.as_text(spmd=True)
    assert "all-reduce(" in spmd and "f32[2,6]" in spmd
    assert "sharding={devices=[4,1]<=[4]}" in sums.as_text()
    assert not c.written  # inserted by the partitioner


# A shard_map-style region whose only collective is the program's own psum (the module the CLI's
# partition_report.test uses): the report lists it, marked written (not inserted), and the result
# is the column sums.
def test_report_lists_the_programs_own_collectives():
    with open(os.path.join(source_dir(), "tests", "data", "spmd", "manual_psum.hlo")) as f:
        program = xshard.compile(f.read())
    report = program.report()
    assert [(c.kind, c.written) for c in report.collectives] == [("all-reduce", True)]
    assert report.collectives[0].bytes == 24  # ring all-reduce of f32[4] over 4: 2 * 3/4 * 16 B
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    np.testing.assert_allclose(program(x), x.sum(axis=0))


def test_in_and_out_shardings_override(sums):
    mesh = xshard.make_mesh((2, 2), ("x", "y"))
    mm = xshard.compile(MATMUL_HLO, in_shardings=[NamedSharding(mesh, P("x", "y")),
                                                  NamedSharding(mesh, P("y"))],
                        out_shardings=[NamedSharding(mesh, P("x"))])
    assert mm.num_devices == 4
    assert str(mm.in_shardings[0]) == "{devices=[2,2]<=[4]}"
    assert mm.out_shardings[0].to_string("v1") == "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"
    a = np.arange(128, dtype=np.float32).reshape(8, 16) / 7
    b = np.arange(64, dtype=np.float32).reshape(16, 4) / 5
    np.testing.assert_allclose(mm(a, b), a @ b, rtol=1e-5)
    assert any(c.kind == "all-reduce" for c in mm.report().collectives)  # split contraction


def test_results_are_zero_copy_and_reusable(sums):
    x, y = _inputs()
    s, _ = sums(x, y)
    assert not s.flags.owndata and s.base is not None  # the runtime's buffer, not a copy
    assert s.ctypes.data % 64 == 0
    s2, r2 = sums(s, s)  # aligned outputs go back in without a copy
    np.testing.assert_array_equal(s2, 2 * (x + y))
    # Unaligned and non-contiguous arguments work too (copied).
    buf = np.zeros(8 * 6 + 1, np.float32)
    unaligned = buf[1:].reshape(8, 6)
    unaligned[:] = x
    np.testing.assert_array_equal(sums(unaligned, y.T.copy().T)[0], x + y)


def test_time(sums):
    x, y = _inputs()
    t = sums.time(x, y, warmup=1, iters=5)
    assert len(t.samples_ms) == 5
    assert t.min <= t.median <= t.max and t.min > 0
    text = str(t)
    assert "5 timed iterations" in text and "Median:" in text and "P99:" in text
    with pytest.raises(ValueError):
        sums.time(x, y, iters=0)


def test_errors_raise_value_error_with_message(sums):
    with pytest.raises(ValueError, match="<text>:2:21: error: expected .]."):
        xshard.compile("HloModule m\nENTRY e { x = f32[4 parameter(0) }")
    x, y = _inputs()
    with pytest.raises(ValueError, match="argument"):
        sums(x)
    with pytest.raises(ValueError, match=r"\[8,6\]"):
        sums(x[:4], y)
    with pytest.raises(ValueError, match="dtype"):
        sums(np.array(["a"] * 48).reshape(8, 6), y)
    with pytest.raises(ValueError, match="in_shardings has 1"):
        xshard.compile(MATMUL_HLO, in_shardings=["{replicated}"])


def test_single_output_and_replicated_program():
    double = xshard.compile("""
HloModule d
ENTRY e {
  x = s32[5] parameter(0), sharding={devices=[2]<=[2]}
  ROOT y = s32[5] add(x, x)
}""")
    out = double(np.arange(5, dtype=np.int32))  # uneven: 5 elements over 2 devices
    assert out.dtype == np.int32
    assert out.tolist() == [0, 2, 4, 6, 8]


MLP_HLO = """
HloModule mlp
ENTRY main {
  x = f32[8,16] parameter(0)
  w1 = f32[16,32] parameter(1)
  w2 = f32[32,8] parameter(2)
  h = f32[8,32] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[8,32] tanh(h)
  ROOT y = f32[8,8] dot(t, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


@pytest.mark.parametrize("order", [[7, 5, 3, 1, 6, 4, 2, 0], [3, 6, 0, 5, 7, 1, 4, 2]])
def test_a_mesh_over_permuted_devices_plans_as_the_iota_mesh(order):
    # Mesh(device_ids) in any order: x over data, w1 columns and w2 rows over model (Megatron's
    # MLP). The shardings become explicit device lists; the plan is the iota mesh's, one all-reduce
    # of the second dot's partial sums over each row of the mesh, and the outputs are numpy's.
    def build(ids):
        mesh = xshard.Mesh(np.array(ids).reshape(4, 2), ("data", "model"))
        return xshard.compile(MLP_HLO, in_shardings=[NamedSharding(mesh, P("data", None)),
                                                     NamedSharding(mesh, P(None, "model")),
                                                     NamedSharding(mesh, P("model", None))])
    permuted, iota = build(order), build(list(range(8)))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w1 = rng.standard_normal((16, 32)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((32, 8)).astype(np.float32) * 0.3
    want = np.tanh(x @ w1) @ w2
    np.testing.assert_allclose(permuted(x, w1, w2), want, rtol=1e-5, atol=1e-5)
    got = permuted.report().collectives
    assert [c.kind for c in got] == [c.kind for c in iota.report().collectives] == ["all-reduce"]
    assert got[0].bytes == iota.report().collectives[0].bytes
    # The groups are the mesh's rows (model 0's device first), ordered by their smallest device.
    rows = sorted((order[2 * r:2 * r + 2] for r in range(4)), key=min)
    assert got[0].groups == "{" + ",".join("{%d,%d}" % (a, b) for a, b in rows) + "}"
