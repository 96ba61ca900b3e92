#!/usr/bin/env python3
"""Generates tests/data/shardy: shard_map programs lowered by JAX with its default (Shardy)
settings, their inputs (by formula, saved as NAME.argI.npy) and JAX's outputs (NAME.outI.npy).

Run: XLA_FLAGS=--xla_force_host_platform_device_count=8 /tmp/jaxvenv/bin/python \
       tests/tools/gen_shardy_shard_map.py tests/data/shardy  [--gspmd DIR]
--gspmd also writes the same programs lowered with jax_use_shardy_partitioner=False (kept in
tests/data/shardy/gspmd: `--gspmd tests/data/shardy/gspmd`).

Under JAX 0.4.38 (jax[cpu]==0.4.38 in another venv), `--old-shardy tests/data/shardy/jax0438`
writes only the HLO of the programs that release can express (no axis_names, check_vma or
context mesh), lowered with its Shardy partitioner turned on: its older export form keeps the
shard_map's attributes on the call of the body. The inputs and outputs are the ones above.
"""
import contextlib
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

try:
    from jax import shard_map
except ImportError:  # older JAX
    from jax.experimental.shard_map import shard_map


def arr(shape, k=0):
    n = int(np.prod(shape))
    return ((np.arange(n, dtype=np.float32) * 0.25 + k) % 7.0 - 3.0).reshape(shape).astype(np.float32)


def cases():
    devs = np.array(jax.devices()[:8])
    m1 = Mesh(devs, ("x",))
    m2 = Mesh(devs.reshape(2, 4), ("x", "y"))
    out = []

    # psum over one axis.
    def psum_f(a):
        return shard_map(lambda v: jax.lax.psum(v * 2.0, "x"), mesh=m1, in_specs=P("x", None),
                         out_specs=P(None, None))(a)
    out.append(("psum", psum_f, m1, [arr((16, 4))], [P("x", None)], [P()]))

    # all_gather (tiled) along axis 0.
    def ag_f(a):
        return shard_map(lambda v: jax.lax.all_gather(v + 1.0, "x", tiled=True), mesh=m1,
                         in_specs=P("x"), out_specs=P(), check_vma=False)(a)
    out.append(("all_gather", ag_f, m1, [arr((16, 3), 1)], [P("x")], [P()]))

    # ppermute ring.
    def ring_f(a):
        perm = [(i, (i + 1) % 8) for i in range(8)]
        return shard_map(lambda v: jax.lax.ppermute(v, "x", perm) * 3.0, mesh=m1, in_specs=P("x"),
                         out_specs=P("x"))(a)
    out.append(("ppermute_ring", ring_f, m1, [arr((8, 5), 2)], [P("x")], [P("x")]))

    # 2-D mesh, manual over x only, y stays automatic.
    def partial_f(a, b):
        def body(u, v):
            return jax.lax.psum(u * v, "x")
        return shard_map(body, mesh=m2, in_specs=(P("x", None), P("x", None)), out_specs=P(None, None),
                         axis_names={"x"})(a, b)
    out.append(("partial_manual", partial_f, m2, [arr((8, 8), 3), arr((8, 8), 4)],
                [P("x", "y"), P("x", None)], [P(None, "y")]))

    # 2-D mesh fully manual, specs with None dims and two axes in one dim.
    def nd_f(a, b):
        def body(u, v):
            return u @ v, jax.lax.psum(jnp.sum(u), ("x", "y"))
        return shard_map(body, mesh=m2, in_specs=(P(("x", "y"), None), P(None, None)),
                         out_specs=(P(("x", "y"), None), P()))(a, b)
    out.append(("none_dims", nd_f, m2, [arr((16, 6), 5), arr((6, 4), 6)], [P(("x", "y")), P()],
                [P(("x", "y")), P()]))

    # shard_map inside a jit with other ops and sharded inputs.
    def in_jit_f(a, w):
        h = jnp.tanh(a) + 1.0
        def body(hh, ww):
            return jax.lax.psum(hh @ ww, "y")
        z = shard_map(body, mesh=m2, in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None))(h, w)
        return z * 2.0 + 1.0
    out.append(("in_jit", in_jit_f, m2, [arr((8, 16), 7), arr((16, 4), 8)], [P("x", "y"), P("y", None)],
                [P("x", None)]))

    # axis_index (partition-id arithmetic) inside the body.
    def axis_index_f(a):
        return shard_map(lambda v: v + jax.lax.axis_index("x").astype(jnp.float32), mesh=m1, in_specs=P("x"),
                         out_specs=P("x"))(a)
    out.append(("axis_index", axis_index_f, m1, [arr((16, 2), 9)], [P("x")], [P("x")]))

    # A scan (while loop) with a psum in the body.
    def scan_f(a):
        def body(v):
            def step(c, _):
                return c * 0.5 + jax.lax.psum(c, "x"), None
            return jax.lax.scan(step, v, None, length=3)[0]
        return shard_map(body, mesh=m1, in_specs=P("x"), out_specs=P("x"))(a)
    out.append(("scan", scan_f, m1, [arr((8, 3), 10)], [P("x")], [P("x")]))

    # Two shard_maps in a row.
    def two_f(a):
        b = shard_map(lambda v: jax.lax.psum(v, "x"), mesh=m1, in_specs=P("x"), out_specs=P())(a)
        return shard_map(lambda v: v * 2.0, mesh=m1, in_specs=P(), out_specs=P())(b) + 1.0
    out.append(("two_maps", two_f, m1, [arr((16, 2), 11)], [P("x")], [P()]))

    # psum_scatter and all_to_all.
    def rs_f(a):
        return shard_map(lambda v: jax.lax.psum_scatter(v, "x", tiled=True), mesh=m1, in_specs=P(None),
                         out_specs=P("x"))(a)
    out.append(("psum_scatter", rs_f, m1, [arr((16, 2), 12)], [P()], [P("x")]))

    def a2a_f(a):
        return shard_map(lambda v: jax.lax.all_to_all(v, "x", 1, 0, tiled=True), mesh=m1, in_specs=P("x", None),
                         out_specs=P(None, "x"))(a)
    out.append(("all_to_all", a2a_f, m1, [arr((16, 8), 13)], [P("x")], [P(None, "x")]))

    # Partial manual with a sharding constraint on the automatic axis inside the body (context mesh).
    def wsc_f(a):
        def body(u):
            return jax.lax.with_sharding_constraint(u * 2.0, P(None, "y")) + 1.0
        return shard_map(body, in_specs=P("x"), out_specs=P("x"), axis_names={"x"})(a)
    out.append(("wsc_inside", wsc_f, m2, [arr((8, 8), 14)], [P("x", "y")], [P("x", "y")], True))

    # A mesh whose devices are not in order (sdy mesh with device_ids): a ring over them.
    m_perm = Mesh(devs[[0, 2, 4, 6, 1, 3, 5, 7]].reshape(2, 4), ("x", "y"))
    def perm_f(a):
        def body(v):
            return jax.lax.ppermute(v, "y", [(i, (i + 1) % 4) for i in range(4)]) + jax.lax.axis_index("x") * 10.0
        return shard_map(body, mesh=m_perm, in_specs=P("x", "y"), out_specs=P("x", "y"))(a)
    out.append(("device_order", perm_f, m_perm, [arr((4, 8), 16)], [P("x", "y")], [P("x", "y")]))

    # Nested shard_map (x outside, y inside): the inner body is manual over both axes.
    def nested_f(a):
        def outer(v):
            return shard_map(lambda u: jax.lax.psum(u, "y"), in_specs=P(None, "y"), out_specs=P(),
                             axis_names={"y"})(v)
        return shard_map(outer, in_specs=P("x"), out_specs=P("x"), axis_names={"x"})(a)
    out.append(("nested", nested_f, m2, [arr((8, 8), 15)], [P("x", "y")], [P("x")], True))

    # Nested the other way (y outside, x inside), collectives at both levels and values crossing
    # the inner boundary in both directions.
    def nested2_f(a):
        def outer(v):
            w = jax.lax.psum(v, "y") * 0.5
            z = shard_map(lambda u: jax.lax.psum(u * 2.0, "x") + 1.0, in_specs=P("x", None),
                          out_specs=P("x", None), axis_names={"x"}, check_vma=False)(w)
            return z + v
        return shard_map(outer, in_specs=P(None, "y"), out_specs=P(None, "y"), axis_names={"y"},
                         check_vma=False)(a)
    out.append(("nested_both", nested2_f, m2, [arr((8, 8), 17)], [P(None, "y")], [P(None, "y")], True))
    return out


def main():
    outdir = sys.argv[1]
    if outdir == "--old-shardy":
        return old_shardy(sys.argv[2])
    gspmd_dir = sys.argv[sys.argv.index("--gspmd") + 1] if "--gspmd" in sys.argv else None
    os.makedirs(outdir, exist_ok=True)
    for name, f, mesh, args, in_specs, out_specs, *context in cases():
        with (jax.set_mesh(mesh) if context else contextlib.nullcontext()):
            lower_and_run(outdir, gspmd_dir, name, f, mesh, args, in_specs, out_specs)


def old_shardy(outdir):
    jax.config.update("jax_use_shardy_partitioner", True)
    os.makedirs(outdir, exist_ok=True)
    for name, f, mesh, args, in_specs, out_specs, *context in cases():
        if context:
            continue
        ins = tuple(NamedSharding(mesh, s) for s in in_specs)
        outs = tuple(NamedSharding(mesh, s) for s in out_specs)
        try:
            text = jax.jit(f, in_shardings=ins, out_shardings=outs[0] if len(outs) == 1 else outs) \
                .lower(*args).as_text(dialect="hlo")
        except TypeError as e:  # a keyword this release does not know
            print(name, "skipped:", str(e).splitlines()[0])
            continue
        with open(os.path.join(outdir, name + ".hlo"), "w") as fh:
            fh.write(text)
        print(name)


def lower_and_run(outdir, gspmd_dir, name, f, mesh, args, in_specs, out_specs):
    ins = tuple(NamedSharding(mesh, s) for s in in_specs)
    outs = tuple(NamedSharding(mesh, s) for s in out_specs)
    outs = outs[0] if len(outs) == 1 else outs
    jf = jax.jit(f, in_shardings=ins, out_shardings=outs)
    text = jf.lower(*args).as_text(dialect="hlo")
    with open(os.path.join(outdir, name + ".hlo"), "w") as fh:
        fh.write(text)
    if gspmd_dir:
        os.makedirs(gspmd_dir, exist_ok=True)
        jax.config.update("jax_use_shardy_partitioner", False)
        jg = jax.jit(f, in_shardings=ins, out_shardings=outs)
        with open(os.path.join(gspmd_dir, name + ".hlo"), "w") as fh:
            fh.write(jg.lower(*args).as_text(dialect="hlo"))
        jax.config.update("jax_use_shardy_partitioner", True)
    res = jf(*args)
    res = res if isinstance(res, (tuple, list)) else (res,)
    for i, a in enumerate(args):
        np.save(os.path.join(outdir, f"{name}.arg{i}.npy"), a)
    for i, r in enumerate(res):
        np.save(os.path.join(outdir, f"{name}.out{i}.npy"), np.asarray(r))
    print(name, [tuple(a.shape) for a in args], "->", [tuple(np.shape(r)) for r in res])


if __name__ == "__main__":
    main()
