"""Probe programs for bench/xla_compare (names p8c_, `--only p8c_` runs them): the sharding API
surface and the partitioner's hard cases, as users of jit / shard_map / explicit sharding write them.

Explicit sharding mode (AxisType.Explicit meshes, through programs_api2.Program2): reshape with
out_sharding= merging a sharded with an unsharded dim and merging two sharded dims, a dim over
(a, b) split into two dims on 2x2x2, bmm operands whose batch dims are sharded on different axes
(reshard + out_sharding= on einsum / dot_general), zeros / ones / random.normal made with
out_sharding= and scattered into (.at[].set / .add with out_sharding=), .at[ids].get(out_sharding=),
shard_map with in_specs inferred from the types and jax.smap, a shard_map manual over one axis of an
explicit mesh, a 2x2x2 mesh of Explicit, Auto, Explicit axes, scans / while_loops whose bodies
reshard the carry, an auto_axes region in a scan, vmap of a per-example cond, grads, explicit_axes
inside an Auto jit, a (1, 8) explicit mesh. with_sharding_constraint: int32 / bool chains through
all-to-all reshards, UNCONSTRAINED with named / None dims on 3-D values, scalars and 1-vectors,
P(('x','y')) <-> P(('y','x')), a constraint in a while_loop's cond function, constraints on int /
bool scalars in a scan, nested vmap with two spmd_axis_names, vmap over dim 1. out_shardings on a
dict-of-dict pytree, replicated reductions, donated buffers whose out_shardings move them to other
axes on 2x2x2. shard_map: check_vma with P() arguments and invariant outputs, nested manual a then
b with an automatic c constrained inside, a shard_map in grad(scan) and in vmap, grad inside a
shard_map, a shard_map as a lax.cond branch, axis_index / axis_size over axis tuples on 2x2x2x2,
all_gather tiled over (x, y) and (y, x), psum_scatter over (y, x), collectives on int8 / uint8 /
int16 / bool values, partial ppermutes (zeros where nothing arrives), five outputs with five
out_specs, untiled all_gather of a scalar, all_to_all with split == concat axis, a shard_map over
another mesh than the jit's inputs'. Meshes: (2, 1, 4) with the size-1 axis in tuples, 16 devices
(2, 4, 2) with every axis used in another order, a mesh axis on different dims of one op's
operands, a 2x2x2 of permuted devices with a partially manual shard_map, inputs / constraints /
out_shardings on two and three meshes over the same devices. Partitioner: dot_general with batch
dims sharded differently, contraction over (x, y) against x only, contraction vs free dim on one
axis, batch vs contraction on one axis; uneven reshape merges ([6, 8] over 4), 4-D transposes with
two sharded dims, integer reductions / argmin / cumsum, a sharded vector broadcast into a 3-D
value on another dim, concatenates of 5 + 11 + 16 rows, slices that leave shards empty, negative /
interior / edge / reflect pads, causal / sliding-window / block-diagonal iota masks with q and k on
different axes, a fori_loop with a cond whose branches constrain differently, a scanned KV cache,
remat policies (save_only_these_names, nothing_saveable, dots_saveable), custom_vjp with a
shard_map backward, optimization_barrier, sizes 1000 / 100 / 13 / 7 / [13, 7, 6], batched
dynamic_slice / DUS (gathers and scatters with batching dims), strided conv / SAME avg pool on 30
rows over 4, associative_scan / cummax / cumlogsumexp, lax.map(batch_size=), variadic reduces
and sorts.

Left out (JAX 0.10.2 or XLA's CPU backend fails, not xshard): lax.pbroadcast (no CPU lowering:
"MLIR translation rule for primitive 'pbroadcast' not found for platform cpu"); matmul
out_sharding=P(x, None, unreduced={y}) resharded to P(x, y) / P(x, None) (the Shardy lowering works
and xshard agreed, but JAX's GSPMD lowering asserts "Expected last op to be
sdy.sharding_constraint"); reshard to P(None, None, reduced={x}) before a grad (both lowerings fail
in JAX: "device_indices_map doesn't work with unreduced"); a lax.cond whose branch results are
themselves constrained to different specs (XLA's CPU compile fails its verifier, "Inconsistent
conditional sharding among instructions", in both lowerings; xshard runs it and matches numpy, so
p8c_while_switch_carry constrains values inside the branches instead); in explicit mode a vmap'd
cond whose operands are sharded on a feature dim (JAX: "select `which` must be scalar or have the
same sharding as cases"). Note that JAX lowers NamedShardings on several meshes over the same
devices to ONE mesh (the two / three mesh programs reach xshard with a single sdy.mesh).
"""
import dataclasses
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from programs import Program, _axis_size, _ids, _plain, _rand, _smap, _wsc
from programs_api2 import Program2

AT = jax.sharding.AxisType
EX, AU = AT.Explicit, AT.Auto
U = P.UNCONSTRAINED
M8 = (8,)
M24, M42, XY = (2, 4), (4, 2), ("x", "y")
M222, ABC = (2, 2, 2), ("a", "b", "c")
M242 = (2, 4, 2)
M2222, ABCD = (2, 2, 2, 2), ("a", "b", "c", "d")
rs = jax.sharding.reshard


def _mesh_of(shape, names):
    """A mesh over the first prod(shape) devices in order (the same devices as a program's mesh of
    that size: one jit may use several such meshes)."""
    n = int(np.prod(shape))
    return Mesh(np.array(jax.devices()[:n]).reshape(shape), names)


@dataclasses.dataclass
class ProgramMM(Program):
    """A program whose inputs / outputs use other meshes over the same devices than its own."""
    arg_meshes: tuple = ()                    # per input: (shape, names), or None for the program's mesh
    raw_out: Optional[Callable] = None        # mesh -> out_shardings (NamedShardings on any meshes)

    def jitted(self):
        mesh = self.mesh()
        metas = self.arg_meshes or (None,) * len(self.in_specs)
        in_sh = tuple(NamedSharding(mesh if m is None else _mesh_of(*m), s) for m, s in zip(metas, self.in_specs))
        kwargs = {"in_shardings": in_sh}
        if self.raw_out is not None:
            kwargs["out_shardings"] = self.raw_out(mesh)
        return jax.jit(self.make_fn(mesh), **kwargs), in_sh


# ==== explicit sharding mode ========================================================================
def _ex_reshape(mesh):
    # reshape with out_sharding=: merge a sharded dim with an unsharded one, split it again, and a
    # merge of two sharded dims into one dim over both axes.
    def f(x):
        a = jnp.reshape(x, (8 * 6, 16), out_sharding=P("x", "y"))           # [8,6,16] P(x,None,y)
        b = jnp.reshape(a * 2.0, (8, 6, 4, 4), out_sharding=P("x", None, "y", None))
        c = jnp.reshape(x.transpose(0, 2, 1), (8 * 16, 6), out_sharding=P(("x", "y"), None))
        return jnp.tanh(b), c.sum(1), rs(a, P(None, ("y", "x")))
    return f


def _ex_dot_batch_conflict(mesh):
    # Explicit: operands whose batch dims are sharded differently, brought together by reshard
    # and by out_sharding= on dot_general.
    def f(a, b):
        c = jnp.einsum("bij,bjk->bik", a, rs(b, P("x", None, "y")), out_sharding=P("x", None, "y"))
        d = jax.lax.dot_general(rs(a, P("y", None, None)), rs(b, P("y", None, None)),
                                (((2,), (1,)), ((0,), (0,))), out_sharding=P("y", None, None))
        return c, jnp.tanh(d)
    return f


def _ex_creation(mesh):
    # Arrays made inside jit with out_sharding=: zeros / full / iota-like, random normal, and a
    # scatter into the sharded zeros.
    def f(x, key_data):
        key = jax.random.wrap_key_data(key_data)
        z = jnp.zeros((16, 8), out_sharding=P("y", "x"))
        n = jax.random.normal(key, (16, 8), out_sharding=P("x", "y"))
        o = jnp.ones((16, 8), out_sharding=P("y", "x")) * jnp.arange(8, dtype=jnp.float32)
        z = z.at[2:10].set(rs(x[:8] * 3.0, P("y", "x")), out_sharding=P("y", "x"))
        return z + o, n.sum(), rs(z, P("x", "y")) * n
    return f


def _ex_gather(mesh):
    # Indexing in explicit mode: a row gather of a table sharded on its feature dim with ids sharded
    # on x, take_along_axis on a row-sharded array, and a dynamic_slice at a traced offset.
    def f(table, ids, x, i):
        e = table.at[ids].get(out_sharding=P("x", "y"))           # [16, 8] ids P(x) table P(None,y)
        t = jnp.take_along_axis(x, ids[:, None] % 8, axis=1)
        s = jax.lax.dynamic_slice_in_dim(x, i, 4, axis=1)
        return jnp.tanh(e), t * 2.0, s + 1.0
    return f


def _ex_smap_infer(mesh):
    # shard_map with in_specs inferred from the explicit argument types, and jax.smap over one
    # axis at a time (nested), on an explicit mesh.
    def body(a, b):
        return jax.lax.psum(a @ b, "y")

    def inner(v):
        return v - jax.lax.pmax(v.max(0, keepdims=True), "x")

    def f(a, b):
        c = jax.shard_map(body, out_specs=P("x", None))(a, b)
        d = jax.smap(inner, in_axes=0, out_axes=0, axis_name="x")(c)
        return d, rs(d * 2.0, P(None, "x"))
    return f


def _ex_mixed3(mesh):
    # 2x2x2 mesh with a Explicit, b Auto, c Explicit: matmuls whose out_sharding names the explicit
    # axes, constraints on the auto axis, a reshard between the explicit axes.
    def f(x, w1, w2):
        h = jnp.matmul(x, w1, out_sharding=P("a", "c"))
        h = jax.lax.with_sharding_constraint(jnp.tanh(h), P(None, None))
        h2 = jax.lax.with_sharding_constraint(h * 2.0, P("b", None))
        o = jnp.matmul(h2, w2, out_sharding=P("a", None))
        return rs(o, P("c", "a")), jnp.sum(h, axis=0)
    return f


def _ex_scan_reshard(mesh):
    # A scan in explicit mode whose body reshards its carry to the other axis and back, and whose
    # per-step outputs are resharded to P(y).
    def f(h0, xs, w):
        def step(h, xt):
            g = rs(h, P(None, "x"))
            g = jnp.tanh(jnp.matmul(g, w, out_sharding=P(None, "x")) + rs(xt, P(None, "x")))
            return rs(g, P("x", None)), rs(g.sum(0), P("y"))
        return jax.lax.scan(step, h0, xs)
    return f


def _ex_vmap_cond(mesh):
    # Explicit mode: vmap over an x-sharded batch of a function with a per-example cond (a select)
    # and a lax.cond on a global predicate whose branches reshard differently.
    def per(xi, w):
        return jax.lax.cond(xi.sum() > 0, lambda v: jnp.tanh(v @ w), lambda v: (v @ w) * 0.5, xi)

    def f(x, w):
        h = jax.vmap(per, in_axes=(0, None))(x, w)
        g = jax.lax.cond(h.sum() > 0, lambda v: rs(v * 2.0, P("x", None)), lambda v: rs(v - 1.0, P("x", None)), h)
        return h, g
    return f


def _ex_grad_unreduced(mesh):
    # Explicit mode grads: a data-parallel loss whose weight gradient is a sum over the x-sharded
    # batch; weights over y, SGD update keeps them P(None, y).
    def loss(w, b, x, y):
        h = jnp.tanh(x @ w + b)
        return jnp.mean((h.sum(-1) - y) ** 2)

    def f(w, b, x, y):
        l, (gw, gb) = jax.value_and_grad(loss, argnums=(0, 1))(w, b, x, y)
        return l, w - 0.1 * gw, b - 0.1 * gb
    return f


def _explicit_axes_region(mesh):
    # explicit_axes inside an Auto-mode jit: a region typed with in_sharding where an einsum's
    # out_sharding picks the result's sharding.
    @jax.sharding.explicit_axes(in_sharding=(P("x", None), P(None, "y")))
    def region(a, b):
        return jnp.matmul(a, b, out_sharding=P("x", "y")) * 2.0

    def f(a, b):
        return jnp.tanh(region(a + 1.0, b)) @ b.T
    return f


def _ex_scatter_add(mesh):
    # Explicit mode embedding gradient: .at[ids].add with out_sharding=, ids over x, table dim
    # over y, and a segment_sum into a row-sharded buffer.
    def f(table, ids, g):
        gt = jnp.zeros(table.shape, table.dtype, out_sharding=P(None, "y")).at[ids].add(
            rs(g, P("x", "y")), out_sharding=P(None, "y"))
        seg = jnp.zeros((8, 16), g.dtype).at[ids % 8].add(rs(g, P("x", None)), out_sharding=P())
        return table - 0.1 * gt, seg
    return f


def _ex_split_reshape(mesh):
    # 2x2x2 explicit: a dim over (a, b) split into two dims over a and b, transposed, merged back
    # over (b, a) (a reshard), and a dim over c split with c on the major part.
    def f(x):
        y = jnp.reshape(x, (4, 16, 8), out_sharding=P("a", "b", "c"))
        t = jnp.transpose(y, (1, 0, 2))                                  # P(b, a, c)
        m = jnp.reshape(t, (64, 8), out_sharding=P(("b", "a"), "c"))
        z = jnp.reshape(x, (64, 2, 4), out_sharding=P(("a", "b"), "c", None))
        return jnp.tanh(m), z * 2.0, rs(m, P(("a", "b"), "c")) - x
    return f


def _ex_smap_partial(mesh):
    # Explicit mesh, shard_map manual over x only: inside, y stays explicit in the types and a
    # matmul with out_sharding= names y.
    def body(a, w):
        h = jnp.matmul(a, w, out_sharding=P(None, "y"))
        return jax.lax.psum(jnp.tanh(h).sum(0, keepdims=True), "x"), h
    sm = _smap(mesh, body, (P("x", None), P()), (P(), P("x", None)), axis_names={"x"})

    def f(a, w):
        s, h = sm(a, w)
        return s, rs(h, P("y", "x"))
    return f


def _ex_while_auto(mesh):
    # Explicit while_loop whose body reshards the carry away and back, and an auto_axes region
    # inside a scan body.
    @jax.sharding.auto_axes(out_sharding=P("x", None))
    def mix(h, w):
        return jnp.tanh(h @ w)

    def f(x, w):
        def body(c):
            h, i = c
            g = rs(h, P(None, ("x", "y"))) * 0.9 + 0.1
            return rs(g, P("x", "y")), i + 1
        h, _ = jax.lax.while_loop(lambda c: c[1] < 3, body, (x, 0))
        hs, _ = jax.lax.scan(lambda c, _: (mix(c, w), None), rs(h, P("x", None)), None, length=3)
        return h, hs
    return f


def _ex_1x8(mesh):
    # Explicit (1, 8) mesh: out_sharding= over the size-1 axis and over the 8-axis, reshard
    # between them, einsum with the contraction over the size-1 axis.
    def f(x, w):
        h = jnp.matmul(x, w, out_sharding=P("d", "m"))
        g = rs(h, P("m", "d"))
        o = jnp.einsum("ij,jk->ik", g, rs(w, P("d", None)), out_sharding=P("m", None))
        return h.sum(0), o
    return f


# ==== with_sharding_constraint ====================================================================
def _wsc_int_bool_chain(mesh):
    # int32 / bool arrays through an all-to-all chain: dim 0 -> dim 1 -> dims (0, 1) -> (y, x) on
    # dim 0 -> replicated, with integer reductions along the way.
    def f(ids, x):
        a = _wsc(mesh, ids * 3 + 1, P("x", None))
        b = _wsc(mesh, a ^ 5, P(None, "x"))
        c = _wsc(mesh, b + (x > 0).astype(jnp.int32), P("x", "y"))
        m = _wsc(mesh, (c % 3) == 0, P(("y", "x"), None))
        d = _wsc(mesh, jnp.where(m, c, -c), P())
        return d, jnp.sum(c, axis=0), jnp.max(b, axis=1), jnp.any(m, axis=1), jnp.sum(m, dtype=jnp.int32)
    return f


def _wsc_unconstrained_3d(mesh):
    # UNCONSTRAINED mixed with named and None dims on 3-D activations, a partially replicated
    # constraint (one axis of two), constraints on a scalar and on a 1-element vector.
    def f(x, w):
        h = _wsc(mesh, jnp.einsum("bsd,df->bsf", x, w), P(U, "x", U))
        h = _wsc(mesh, jax.nn.gelu(h), P(None, U, "y"))
        g = _wsc(mesh, h * 2.0, P("y", None, None))
        tot = _wsc(mesh, jnp.sum(g), P())
        one = _wsc(mesh, jnp.max(h).reshape(1), P(U))
        return g / tot, one, _wsc(mesh, h.mean(1), P(U, U))
    return f


def _wsc_tuple_order(mesh):
    # P(('y','x')) vs P(('x','y')) on the same dim (a device permutation of the shards), then
    # P(('x','y')) on dim 1, then back to P(('y','x'), None): all-to-all / permute patterns.
    def f(x):
        a = _wsc(mesh, x + 1.0, P(("x", "y"), None))
        b = _wsc(mesh, a * 2.0, P(("y", "x"), None))
        c = _wsc(mesh, jnp.sin(b), P(None, ("x", "y")))
        d = _wsc(mesh, c - a, P(None, ("y", "x")))
        e = _wsc(mesh, d.T, P(("y", "x"), None))
        return b, d, e
    return f


def _wsc_while_cond_fn(mesh):
    # while_loop whose cond function constrains and reduces a sharded carry and whose body
    # constrains the carry to a different spec than the init's.
    def f(x, w):
        def cond(c):
            h, i = c
            hh = _wsc(mesh, h, P(None, "y"))
            return (jnp.sum(hh * hh) < 1e4) & (i < 4)

        def body(c):
            h, i = c
            h = _wsc(mesh, h @ w * 1.5 + 0.1, P("y", "x"))
            return h, i + 1
        h, n = jax.lax.while_loop(cond, body, (_wsc(mesh, x, P("x", None)), 0))
        return h, n
    return f


def _wsc_vmap_nested(mesh):
    # vmap(spmd_axis_name='x') of vmap(spmd_axis_name='y') of a function with a constraint on its
    # last dim: the constraint gets both batch axes prepended.
    def inner(v, w):
        h = jax.lax.with_sharding_constraint(jnp.tanh(v @ w), P(None))
        return h * jax.nn.sigmoid(h.sum())

    def f(x, w):
        g = jax.vmap(jax.vmap(inner, in_axes=(0, None), spmd_axis_name="y"), in_axes=(0, None), spmd_axis_name="x")
        return g(x, w)
    return f


# ==== out_shardings / donation ===================================================================
def _out_pytree(x, w, ids):
    h = jnp.tanh(x @ w)
    return {"h": h, "stats": {"sum": h.sum(), "rowmax": h.max(1), "colmean": h.mean(0)},
            "ids": ids * 2, "flag": (h > 0).any(1)}


def _donate_3axes(w, m, g, step):
    # Adam-like update with donated params and moments whose out_shardings move them to other
    # axes than the inputs'.
    m2 = 0.9 * m + 0.1 * g
    w2 = w - 0.01 * m2 / (jnp.sqrt(jnp.abs(m2)) + 1e-3)
    return w2, m2, step + 1


# ==== shard_map ===================================================================================
def _smap_vma_mixed(mesh):
    # check_vma=True: a replicated P() argument combined with a varying one, outputs P() by psum,
    # P() of an invariant value computed from the replicated argument alone, and a pcast'd value.
    def body(x, w, s):
        h = jnp.tanh(x @ w)                                   # varying over x
        tot = jax.lax.psum(h.sum(0), "x")                     # invariant
        ww = w * s                                            # invariant (replicated inputs only)
        idx = jax.lax.pcast(s, "x", to="varying") * jax.lax.axis_index("x").astype(s.dtype)
        return h - tot / 64.0, tot, ww, idx.reshape(1)
    return _smap(mesh, body, (P("x"), P(), P()), (P("x"), P(), P(), P("x")))


def _smap_nested_222(mesh):
    # 2x2x2: outer shard_map manual over a, inner over b, c automatic with a constraint on c in
    # the innermost body; psum over b inside, all_gather over a outside.
    def inner(u, w):
        h = jax.lax.with_sharding_constraint(jnp.tanh(u @ w), P(None, "c"))
        return jax.lax.psum(h, "b")

    def outer(v, w):
        r = _smap(None, inner, (P(None, "b"), P("b", None)), P(), axis_names={"b"})(v, w)
        return jax.lax.all_gather(r.sum(0, keepdims=True), "a", axis=0, tiled=True), r
    return _smap(mesh, outer, (P("a"), P()), (P(), P("a")), axis_names={"a"}, check_vma=False)


def _smap_in_grad_scan(mesh):
    # grad of a scan whose body calls a shard_map (ppermute + psum) over y, x automatic.
    def blk(h, w):
        n = jax.lax.axis_size("y")
        hw = h @ w
        sh = jax.lax.ppermute(hw, "y", [(i, (i + 1) % n) for i in range(n)])
        return jax.lax.psum(jnp.tanh(hw + 0.5 * sh), "y")
    sm = _smap(mesh, blk, (P(None, "y"), P("y", None)), P(), axis_names={"y"}, check_vma=False)

    def loss(ws, x):
        def step(h, w):
            return sm(h, w) * 0.5 + h, None
        h, _ = jax.lax.scan(step, x, ws)
        return jnp.mean(h ** 2)
    return lambda ws, x: jax.value_and_grad(loss)(ws, x)


def _smap_axis_queries(mesh):
    # axis_size / axis_index of several axes (single, tuples in both orders) on 2x2x2x2.
    def body(x):
        ia = jax.lax.axis_index("a")
        icb = jax.lax.axis_index(("c", "b"))
        ibd = jax.lax.axis_index(("b", "d"))
        n = _axis_size(("a", "b", "c", "d"))
        v = x * (ia * 100 + icb * 10 + ibd).astype(x.dtype) + jnp.asarray(n, x.dtype)
        return v, jnp.stack([ia, icb, ibd]).reshape(1, 3)
    return _smap(mesh, body, P(("a", "b"), ("c", "d")), (P(("a", "b"), ("c", "d")), P(("d", "c", "b", "a"))),
                 check_vma=False)


def _smap_gather_two_axes(mesh):
    # all_gather(tiled) over ('x','y') and ('y','x') on dims 0 / 1, psum_scatter over ('y','x').
    def body(a):
        g1 = jax.lax.all_gather(a, ("x", "y"), axis=0, tiled=True)
        g2 = jax.lax.all_gather(a, ("y", "x"), axis=1, tiled=True)
        s = jax.lax.psum_scatter(jnp.tanh(g1 @ g1.T) * a[0, 0], ("y", "x"), scatter_dimension=0, tiled=True)
        return g1 * 2.0, g2, s
    return _smap(mesh, body, P(("x", "y")), (P(), P(), P(("y", "x"))), check_vma=False)


def _smap_int_bool_collectives(mesh):
    # psum of int32 and of a bool as int8, pmax of uint8, pmin of int16, all_gather of bool,
    # ppermute of int32 over two axes.
    def body(ids, m):
        s = jax.lax.psum(ids, ("x", "y"))
        c = jax.lax.psum(m.astype(jnp.int8), "y")
        mx = jax.lax.pmax(ids.astype(jnp.uint8), "x")
        mn = jax.lax.pmin((ids - 500).astype(jnp.int16), ("y", "x"))
        g = jax.lax.all_gather(m, "x", axis=1, tiled=True)
        p = jax.lax.ppermute(ids, ("x", "y"), [(i, (i + 3) % 8) for i in range(8)])
        return s, c, mx, mn, g, p
    return _smap(mesh, body, (P("x", "y"), P("x", "y")),
                 (P(), P("x"), P(None, "y"), P(), P(None, "y"), P("x", "y")), check_vma=False)


def _smap_partial_perm(mesh):
    # ppermute with partial permutations: shifts that drop the ends (zeros there), a single pair,
    # and over the tuple (x, y) with only even devices sending.
    def body(a):
        n = jax.lax.axis_size("y")
        down = jax.lax.ppermute(a, "y", [(i, i + 1) for i in range(n - 1)])
        one = jax.lax.ppermute(a * 2.0, "y", [(3, 0)])
        ev = jax.lax.ppermute(a + 1.0, ("x", "y"), [(i, (i + 5) % 8) for i in range(0, 8, 2)])
        return down, one, ev
    return _smap(mesh, body, P("x", "y"), (P("x", "y"), P("x", "y"), P("x", "y")))


def _smap_multi_out(mesh):
    # One shard_map returning values with different out_specs: P('x'), P(None,'y'),
    # P(('y','x')), P() (psum'd) and a P('y','x') transposed block.
    def body(a, b):
        c = a @ b                                               # [4, 2] block of the product
        s = jax.lax.psum(c, "y")                                # sums over the y blocks of k
        return s, c.T, (c * 2.0).reshape(-1), jax.lax.psum(s.sum(), "x"), c.T + 1.0
    return _smap(mesh, body, (P("x", "y"), P("y", None)),
                 (P("x"), P(None, ("x", "y")), P(("y", "x")), P(), P(None, ("x", "y"))), check_vma=False)


def _smap_in_vmap(mesh):
    # vmap over a leading batch of a shard_map (all_gather over y) and jax.grad of a shard_map
    # with a psum inside, manual over both axes.
    def body(a):
        return jnp.tanh(jax.lax.all_gather(a, "y", axis=1, tiled=True)).sum(1, keepdims=True)
    sm = _smap(mesh, body, P("x", "y"), P("x", None), check_vma=False)

    def lossb(w, x):
        return jax.lax.psum(jnp.sum(jnp.tanh(x @ w) ** 2), ("x", "y"))
    sg = _smap(mesh, jax.grad(lossb), (P(None, "y"), P("x", None)), P(None, "y"), check_vma=False)

    def f(xs, w, x):
        return jax.vmap(sm)(xs), sg(w, x)
    return f


# ==== meshes ======================================================================================
def _mesh_214(mesh):
    # (2, 1, 4) mesh a, s, b: the size-1 axis inside tuples, a matmul whose contraction is over
    # (s, b), and a reshard to P((b, s, a)).
    def f(x, w):
        h = _wsc(mesh, jnp.tanh(x @ w), P(("s", "a"), "b"))
        o = _wsc(mesh, h.T * 2.0, P(("b", "s", "a"), None))
        return o, _wsc(mesh, h.sum(0), P("s"))
    return f


def _mesh_242(mesh):
    # 16 devices (2, 4, 2): x sharded over all three axes in another order than the mesh's,
    # w over them in a third order, results resharded over (b, c, a).
    def f(x, w):
        h = jnp.tanh(x @ w)
        g = _wsc(mesh, h, P(("b", "c", "a"), None))
        return g, _wsc(mesh, h.T @ x, P("c", ("b", "a"))), h.sum(1)
    return f


def _mesh_axis_twice(mesh):
    # One mesh axis on different dims of the operands of one op: a + b.T with a P(x, y) and b
    # P(x, y) (after the transpose: P(y, x)), a dot whose lhs has x on its free dim and rhs on its
    # contraction... and a concatenate of P(x) with P(None, x) pieces.
    def f(a, b):
        s = a + b.T
        d = jnp.einsum("ij,jk->ik", a, b)
        c = jnp.concatenate([a, _wsc(mesh, b * 2.0, P(None, "x"))], axis=0)
        return s, d, c
    return f


def _perm_mesh_mixed(mesh):
    # 2x2x2 of devices (6, 1, 4, 7, 0, 3, 5, 2): shard_map manual over (c, a) with b automatic,
    # psum over (a, c), ppermute over c, then an automatic reshard.
    def body(x, w):
        h = jnp.tanh(x @ w)
        s = jax.lax.psum(h.sum(0, keepdims=True), ("a", "c"))
        p = jax.lax.ppermute(h, "c", [(0, 1), (1, 0)])
        return h + p - s
    sm = _smap(mesh, body, (P(("c", "a")), P()), P(("c", "a")), axis_names={"a", "c"}, check_vma=False)

    def f(x, w):
        y = sm(x, w)
        return _wsc(mesh, y, P("b", ("a", "c"))), y.T @ y
    return f


# ==== partitioner hard cases =====================================================================
def _dot_batch_mismatch(a, b):
    # batch dim sharded on x in the lhs and on y in the rhs
    return jnp.einsum("bij,bjk->bik", a, b)


def _dot_contract_two_axes(a, b):
    # lhs contraction over (x, y), rhs contraction over x only; rhs free dim over y.
    return jnp.tanh(a @ b)


def _dot_contract_vs_free(a, b, c):
    # lhs sharded on its contraction dim over x, rhs on its free dim over x; and a third matmul
    # whose lhs free dim and rhs contraction dim are both over y.
    return a @ b, (a @ b) @ c


def _reshape_uneven(mesh):
    # [6, 8] rows over x=4 (uneven, made inside) merged to [48], split to [8, 6] and [4, 12];
    # a [12, 4] P(y, x) flattened.
    def f(a, b):
        x = _wsc(mesh, a[:6] * 2.0, P("x", None))
        flat = x.reshape(48)
        return (_wsc(mesh, flat.reshape(8, 6), P("x", None)), flat.reshape(4, 12) + 1.0,
                _wsc(mesh, b[:12], P("y", "x")).reshape(48))
    return f


def _transpose_4d(mesh):
    # 4-D array with two sharded dims: transposes that move both, one, and neither sharded dim.
    def f(x):
        t1 = jnp.transpose(x, (2, 3, 0, 1))
        t2 = _wsc(mesh, jnp.transpose(x, (1, 0, 3, 2)), P("x", None, "y", None))
        t3 = _wsc(mesh, jnp.transpose(x, (3, 2, 1, 0)) * 2.0, P(None, "y", "x", None))
        return t1 + 1.0, t2, t3
    return f


def _int_reductions(ids, u8):
    return (jnp.sum(ids, axis=0), jnp.sum(ids), jnp.max(u8.astype(jnp.uint32), axis=1),
            jnp.min(ids.astype(jnp.int8), axis=0), jnp.argmin(ids, axis=0).astype(jnp.int32),
            jnp.prod(u8 % 3 + 1, axis=1, dtype=jnp.int32), jnp.cumsum(ids, axis=1))


def _broadcast_vec(x, v, u):
    # v [16] over y broadcast onto dim 2 of x [16, 8, 16] (dim 0 over x); u [8] over x onto dim 1.
    return x * v[None, None, :] + u[None, :, None], jnp.tanh(v[:, None, None] + x)


def _concat_unequal(mesh):
    # pieces of 5, 11 and 16 rows concatenated along the x-sharded dim, and a 3-row piece.
    def f(a, b):
        c = jnp.concatenate([a[:5] * 2.0, b[3:14], a[16:]], axis=0)      # 32 rows
        d = jnp.concatenate([a[:3], b], axis=0)                          # 35 rows
        return _wsc(mesh, c, P("x", None)), _wsc(mesh, d, P("x", None)).sum(0), c.sum(1)
    return f


def _slice_empty(x):
    # slices that leave most shards empty: the first 3 rows, the last 3, one row, every 5th.
    return x[:3] * 2.0, x[13:] + 1.0, x[5:6], x[::5], x[15:16].sum()


def _pad_variants(x):
    # pad on the sharded dim: negative low, interior, and edge / reflect modes.
    a = jax.lax.pad(x, 0.0, [(-2, 3, 1), (0, 0, 0)])
    b = jnp.pad(x, ((3, 1), (0, 0)), mode="edge")
    c = jnp.pad(x, ((2, 2), (1, 0)), mode="reflect")
    return a, b, c


def _iota_masks(q, k, v):
    # Attention with causal, sliding-window and block-diagonal masks built from iotas, the
    # sequence sharded over x for q and over y for k / v.
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / 4.0
    i = jnp.arange(q.shape[1])[:, None]
    j = jnp.arange(k.shape[1])[None, :]
    outs = []
    for m in (i >= j, (i - j < 4) & (i >= j), (i // 8) == (j // 8)):
        p = jax.nn.softmax(jnp.where(m, s, -1e9), axis=-1)
        outs.append(jnp.einsum("bhqk,bkhd->bqhd", p, v))
    return tuple(outs)


def _while_switch(mesh):
    # fori_loop whose carry enters P(x, None) and leaves the body P(None, y), with a lax.cond
    # inside whose two branches constrain values to two other specs (constraining the branch results
    # themselves makes XLA's CPU compile fail its verifier: 'Inconsistent conditional sharding').
    def f(x, w, sel):
        def body(i, h):
            h = jax.lax.cond((sel + i) % 2 == 0,
                             lambda u: jnp.tanh(_wsc(mesh, u @ w, P("y", "x"))),
                             lambda u: _wsc(mesh, u * 0.5, P(None, ("x", "y"))) + 1.0, h)
            return _wsc(mesh, h, P(None, "y"))
        return jax.lax.fori_loop(0, 5, body, _wsc(mesh, x, P("x", None)))
    return f


def _scan_kv_cache(mesh):
    # Decode loop by scan: a KV cache [B, S, H, D] over (x on batch, y on heads) carried and
    # written at the step index by dynamic_update_slice, attention over the filled prefix.
    def f(cache_k, cache_v, xs, wq, wk, wv):
        def step(c, inp):
            ck, cv = c
            x, t = inp                                            # x [B, Dm]
            q = (x @ wq).reshape(x.shape[0], 4, 8)
            k = (x @ wk).reshape(x.shape[0], 1, 4, 8)
            v = (x @ wv).reshape(x.shape[0], 1, 4, 8)
            ck = jax.lax.dynamic_update_slice_in_dim(ck, k, t, axis=1)
            cv = jax.lax.dynamic_update_slice_in_dim(cv, v, t, axis=1)
            ck = _wsc(mesh, ck, P("x", None, "y", None))
            cv = _wsc(mesh, cv, P("x", None, "y", None))
            s = jnp.einsum("bhd,bshd->bhs", q, ck) / np.float32(np.sqrt(8))
            s = jnp.where(jnp.arange(ck.shape[1])[None, None, :] <= t, s, -1e9)
            o = jnp.einsum("bhs,bshd->bhd", jax.nn.softmax(s, -1), cv)
            return (ck, cv), o.reshape(x.shape[0], -1)
        (ck, cv), ys = jax.lax.scan(step, (cache_k, cache_v), (xs, jnp.arange(xs.shape[0])))
        return ys, ck
    return f


def _remat_mixed_policy(mesh):
    # grads through checkpointed layers with save_only_these_names (checkpoint_name on a
    # constrained activation), nothing_saveable in a scan and offload-free dots_saveable.
    from jax.ad_checkpoint import checkpoint_name

    def layer(w, h):
        a = checkpoint_name(_wsc(mesh, jnp.tanh(h @ w), P("x", "y")), "act")
        b = checkpoint_name(_wsc(mesh, a @ w.T, P("x", None)), "proj")
        return jax.nn.gelu(b) + h

    l1 = jax.checkpoint(layer, policy=jax.checkpoint_policies.save_only_these_names("act"))
    l2 = jax.checkpoint(layer, policy=jax.checkpoint_policies.nothing_saveable)
    l3 = jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable)

    def loss(ws, x):
        h = l1(ws[0], x)
        h, _ = jax.lax.scan(lambda c, w: (l2(w, c), None), h, ws[1:3])
        return jnp.mean(l3(ws[3], h) ** 2)
    return lambda ws, x: jax.value_and_grad(loss)(ws, x)


def _custom_vjp_smap_bwd(mesh):
    # custom_vjp whose forward is plain jnp and whose backward is a shard_map with a psum over x
    # (the weight gradient of a batch-sharded matmul) and residuals constrained to P(None, y).
    @jax.custom_vjp
    def dense(x, w):
        return jnp.tanh(x @ w)

    def fwd(x, w):
        y = jnp.tanh(x @ w)
        return y, (x, w, _wsc(mesh, y, P(None, "y")))

    def bwd_body(x, w, y, g):
        dz = g * (1.0 - y * y)
        return dz @ w.T, jax.lax.psum(x.T @ dz, "x")

    def bwd(res, g):
        x, w, y = res
        return _smap(mesh, bwd_body, (P("x"), P(), P("x"), P("x")), (P("x"), P()), check_vma=False)(x, w, y, g)

    dense.defvjp(fwd, bwd)

    def loss(w, x):
        return jnp.mean(dense(dense(x, w), w.T) ** 2)
    return lambda w, x: jax.value_and_grad(loss)(w, x)


def _opt_barrier(mesh):
    # optimization_barrier over a tuple of differently sharded arrays, resharded after it.
    def f(a, b):
        x, y, s = jax.lax.optimization_barrier((jnp.tanh(a), _wsc(mesh, b * 2.0, P(None, "x")), a.sum()))
        return _wsc(mesh, x, P("y", "x")) + y.T, s, _wsc(mesh, y, P("x", None))
    return f


def _nondivisible(mesh):
    # sizes that do not divide the mesh: a 1000-vector over 8 (cumsum, sort, top_k), a [100, 13]
    # x [13, 7] matmul over (x, y), 7 columns over y.
    def f(v, a, w):
        u = _wsc(mesh, v[:1000], P(("x", "y")))
        c = jnp.cumsum(u)
        s = jnp.sort(u)
        t = jax.lax.top_k(u, 5)[0]
        m = _wsc(mesh, a[:100, :13], P("x", "y"))
        h = _wsc(mesh, jnp.tanh(m @ w[:13, :7]), P("y", "x"))
        return c, s, t, h, h.sum(0)
    return f


def _dot_batch_vs_contract(a, b):
    # lhs batch dim over x, rhs contraction dim over x (and lhs contraction over y).
    return jnp.einsum("bij,bjk->bik", a, b) * 2.0


def _uneven_3d(mesh):
    # [13, 7, 6] (made inside) over x=4, y=2: reductions over each dim, a transpose to P(y, x),
    # a contraction over the uneven 7.
    def f(a, w):
        x = _wsc(mesh, a[:13, :7, :6], P("x", "y", None))
        t = _wsc(mesh, jnp.transpose(x, (1, 0, 2)), P("y", "x", None))
        c = jnp.einsum("ijk,jl->ilk", x, w[:7])
        return x.sum(0), x.max(1), x.mean(2), t * 2.0, c
    return f


def _smap_in_cond(mesh):
    # lax.cond whose true branch is a shard_map (psum over y, ppermute over x) and whose false
    # branch is plain jnp, on a predicate computed from sharded data.
    def body(a):
        s = jax.lax.psum(a, "y")
        return jax.lax.ppermute(s, "x", [(0, 1), (1, 0)])
    sm = _smap(mesh, body, P("x", "y"), P("x", None), check_vma=False)

    def f(a):
        return jax.lax.cond(a.sum() > 0, sm, lambda v: v.reshape(v.shape[0], 4, -1).sum(1), a)
    return f


def _wsc_scalars_loop(mesh):
    # Constraints on int / bool scalars and 0-d floats inside a scan body, with a row-sharded
    # carry; the scalar flags select between two updates.
    def f(x, thr):
        def step(c, t):
            h, cnt = c
            m = _wsc(mesh, jnp.max(h), P())
            flag = _wsc(mesh, m > thr, P())
            cnt = _wsc(mesh, cnt + flag.astype(jnp.int32), P())
            h = _wsc(mesh, jnp.where(flag, h * 0.5, h + t), P("x", None))
            return (h, cnt), (m, flag)
        (h, cnt), (ms, fl) = jax.lax.scan(step, (x, jnp.int32(0)), jnp.arange(6, dtype=jnp.float32) * 0.3)
        return h, cnt, ms, fl
    return f


def _assoc_scan(x):
    # cummax / cumlogsumexp / associative_scan of a linear recurrence along the sharded dim.
    a = jnp.full_like(x, 0.9)
    _, h = jax.lax.associative_scan(lambda l, r: (l[0] * r[0], r[0] * l[1] + r[1]), (a, x), axis=0)
    return jax.lax.cummax(x, axis=0), jax.lax.cumlogsumexp(x, axis=0), h


def _vmap_axis1(mesh):
    # vmap over dim 1 (in_axes=1, out_axes=1) of a sharded array with spmd_axis_name=y, a
    # constraint inside on the per-example rows.
    def per(col, w):
        h = jax.lax.with_sharding_constraint(jnp.tanh(col @ w), P("x"))
        return h - h.mean()

    def f(x, w):
        return jax.vmap(per, in_axes=(1, None), out_axes=1, spmd_axis_name="y")(x, w)
    return f


# ==== several meshes over the same devices in one jit ===========================================
def _two_meshes(mesh):
    # inputs on (2, 4) x,y and on (8,) z; a constraint on the (8,) mesh, outputs left open.
    m8 = _mesh_of((8,), ("z",))

    def f(a, b):
        h = a @ b
        g = jax.lax.with_sharding_constraint(jnp.tanh(h), NamedSharding(m8, P(None, "z")))
        return g, h.sum(0), _wsc(mesh, g * 2.0, P("y", "x"))
    return f


def _three_meshes(mesh):
    # inputs on (2, 4) x,y and (4, 2) a,b; constraints on (2, 2, 2) p,q,r; out_shardings on (8,).
    m222 = _mesh_of((2, 2, 2), ("p", "q", "r"))

    def f(a, b):
        h = jnp.tanh(a @ b)
        g = jax.lax.with_sharding_constraint(h, NamedSharding(m222, P(("r", "p"), "q")))
        return g + 1.0, (g.T @ a).sum(1)
    return f


def _smap_other_mesh(mesh):
    # a shard_map over an (8,) mesh inside a jit whose inputs are on the (2, 4) mesh.
    m8 = _mesh_of((8,), ("z",))

    def body(u):
        return jax.lax.psum(u.sum(0, keepdims=True), "z"), u * jax.lax.axis_index("z").astype(u.dtype)
    sm = _smap(m8, body, P("z"), (P(), P("z")), check_vma=False)

    def f(a):
        s, v = sm(jnp.tanh(a))
        return s, v.T
    return f


def _smap_odd_collectives(mesh):
    # Less common collective shapes: all_gather of a 0-d value (untiled) over (y, x), untiled
    # psum_scatter over (x, y), all_to_all with split_axis == concat_axis, all_gather with
    # to='invarying', ppermute over a tuple where every device sends to itself.
    def body(a):
        s = jax.lax.all_gather(a.sum(), ("y", "x"))                                      # [8]
        r = jax.lax.psum_scatter(jnp.tile(a[:1], (8, 1)), ("x", "y"), scatter_dimension=0)   # [cols]
        t = jax.lax.all_to_all(a, "y", 1, 1, tiled=True)
        g = jax.lax.all_gather(a, "x", axis=0, tiled=True, to="invarying")
        p = jax.lax.ppermute(a * 3.0, ("x", "y"), [(i, i) for i in range(8)])
        return s, r.reshape(1, -1), t, g, p
    return _smap(mesh, body, P("x", "y"),
                 (P(), P(("x", "y")), P("x", "y"), P(None, "y"), P("x", "y")), check_vma=False)


def _batched_dyn_slices(x, idx, upd):
    # vmap of dynamic_slice / dynamic_update_slice at per-row traced offsets along the y-sharded
    # dim (gather / scatter with operand batching dims), and take_along_axis along that dim.
    sl = jax.vmap(lambda row, i: jax.lax.dynamic_slice(row, (i,), (4,)))(x, idx)
    up = jax.vmap(lambda row, u, i: jax.lax.dynamic_update_slice(row, u, (i,)))(x, upd, idx)
    ta = jnp.take_along_axis(x, (idx[:, None] + jnp.arange(3)[None, :]) % x.shape[1], axis=1)
    return sl * 2.0, up, ta


def _windows_uneven(x, w):
    # On 30 rows over y=4 (uneven): a stride-2 conv (SAME) and a SAME avg pool with stride 2,
    # and a reverse cumsum over the rows.
    c = jax.lax.conv_general_dilated(x, w, (2, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    p = jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME") / 9.0
    rc = jnp.cumsum(x[..., ::-1, :, :], axis=1)
    return c, p, rc


def _lax_map_batched(xs, w):
    # lax.map with batch_size over an x-sharded leading dim (a reshape into [n / bs, bs] scanned
    # over the outer dim), and a scan with unroll=2 over the same dim.
    m = jax.lax.map(lambda v: jnp.tanh(v @ w), xs, batch_size=4)
    _, ys = jax.lax.scan(lambda c, v: (c + v.sum(), c * v), jnp.zeros((), xs.dtype), xs, unroll=2)
    return m, ys


def _variadic(a, b, c, k1, k2):
    # three-operand einsum, argmax / argmin over a flattened 2-D array sharded on both dims
    # (variadic reduce), sort with num_keys=2 along a dim over (x, y).
    e = jnp.einsum("ij,jk,kl->il", a, b, c)
    am = jnp.argmax(a.reshape(-1)).astype(jnp.int32)
    an = jnp.argmin(a, axis=None).astype(jnp.int32)
    s1, s2, v = jax.lax.sort((k1, k2, a[:, 0]), dimension=0, num_keys=2)
    return e, am, an, s1, s2, v


def probe8c_programs():
    ps = []

    def add(name, *a, **kw):
        cls = Program2 if "axis_types" in kw else ProgramMM if "arg_meshes" in kw or "raw_out" in kw else Program
        ps.append(cls("p8c_" + name, *a, **kw))

    r = _rand
    EX2 = (EX, EX)
    # ---- explicit sharding mode
    add("explicit_reshape", "explicit: reshape out_sharding= merging sharded x unsharded dims, split again, (x,y) merge, 2 x 4",
        _ex_reshape, M24, XY, [P("x", None, "y")], None, lambda: [r((8, 6, 16), 10000)],
        context_mesh=True, axis_types=EX2)
    add("explicit_dot_batch_conflict", "explicit: bmm with batch dims over x vs y, reshard + out_sharding=, dot_general batch over y",
        _ex_dot_batch_conflict, M24, XY, [P("x", None, "y"), P("y", "x", None)], None,
        lambda: [r((8, 8, 16), 10020), r((8, 16, 8), 10021, scale=0.25)], context_mesh=True, axis_types=EX2)
    add("explicit_creation", "explicit: zeros / ones / random.normal with out_sharding=, DUS into them, reshard, 2 x 4",
        _ex_creation, M24, XY, [P("x", None), P()], None,
        lambda: [r((16, 8), 10030), np.array([0, 42], np.uint32)], context_mesh=True, axis_types=EX2)
    add("explicit_gather", "explicit: table[ids] (table P(None,y), ids P(x)), take_along_axis, dynamic_slice at traced i",
        _ex_gather, M24, XY, [P(None, "y"), P("x"), P("x", None), P()], None,
        lambda: [r((32, 8), 10040), _ids((16,), 32, 10041), r((16, 8), 10042), np.int32(3)],
        context_mesh=True, axis_types=EX2)
    add("explicit_smap_infer", "explicit: shard_map with inferred in_specs (psum over y), jax.smap over x (pmax), reshard",
        _ex_smap_infer, M24, XY, [P("x", "y"), P("y", None)], None,
        lambda: [r((16, 32), 10050), r((32, 8), 10051, scale=0.2)], context_mesh=True, axis_types=EX2)
    add("explicit_mixed_3axes", "2x2x2 with a Explicit, b Auto, c Explicit: out_sharding=, constraint over (a,b), reshard P(c,a)",
        _ex_mixed3, M222, ABC, [P("a", None), P(None, "c"), P("c", None)], None,
        lambda: [r((16, 16), 10060), r((16, 16), 10061, scale=0.25), r((16, 8), 10062, scale=0.25)],
        context_mesh=True, axis_types=(EX, AU, EX))
    add("explicit_scan_reshard", "explicit: scan whose body reshards the carry P(x,None) -> P(None,x) -> back, ys resharded to P(y)",
        _ex_scan_reshard, M24, XY, [P("x", None), P(None, "x", None), P()], None,
        lambda: [r((8, 16), 10070), r((3, 8, 16), 10071), r((16, 16), 10072, scale=0.25)],
        context_mesh=True, axis_types=EX2)
    add("explicit_vmap_cond", "explicit: vmap of per-example cond over x-sharded batch, global cond whose branches reshard",
        _ex_vmap_cond, M24, XY, [P("x", None), P()], None,
        lambda: [r((8, 16), 10080), r((16, 16), 10081, scale=0.25)], context_mesh=True, axis_types=EX2)
    add("explicit_grad_dp", "explicit: value_and_grad of a DP loss (batch over x, w over y), SGD step",
        _ex_grad_unreduced, M24, XY, [P(None, "y"), P("y"), P("x", None), P("x")], None,
        lambda: [r((16, 32), 10090, scale=0.25), r((32,), 10091), r((16, 16), 10092), r((16,), 10093)],
        context_mesh=True, axis_types=EX2)
    add("explicit_axes_region", "explicit_axes region (in_sharding=, matmul out_sharding=) inside an Auto-mode jit",
        _explicit_axes_region, M24, XY, [P("x", None), P(None, "y")], None,
        lambda: [r((16, 16), 10100), r((16, 16), 10101, scale=0.25)], context_mesh=True)
    add("explicit_scatter_add", "explicit: zeros(out_sharding).at[ids].add(out_sharding=) ids over x, table dim over y; .at[ids % 8].add -> P()",
        _ex_scatter_add, M24, XY, [P(None, "y"), P("x"), P("x", None)], None,
        lambda: [r((32, 16), 10110), _ids((16,), 32, 10111), r((16, 16), 10112)], context_mesh=True, axis_types=EX2)
    add("explicit_split_reshape_222", "explicit 2x2x2: dim over (a,b) split to dims a / b, transpose, merge over (b,a), split under c",
        _ex_split_reshape, M222, ABC, [P(("a", "b"), "c")], None, lambda: [r((64, 8), 10120)],
        context_mesh=True, axis_types=(EX, EX, EX))
    add("explicit_smap_partial", "explicit: shard_map manual over x only, matmul out_sharding=P(None,y) inside, psum, reshard",
        _ex_smap_partial, M24, XY, [P("x", None), P(None, "y")], None,
        lambda: [r((16, 16), 10130), r((16, 16), 10131, scale=0.25)], context_mesh=True, axis_types=EX2)
    add("explicit_while_auto_scan", "explicit: while_loop resharding carry P(x,y)->P(None,(x,y))->back, auto_axes region in scan",
        _ex_while_auto, M24, XY, [P("x", "y"), P()], None,
        lambda: [r((16, 16), 10140), r((16, 16), 10141, scale=0.25)], context_mesh=True, axis_types=EX2)
    add("explicit_1x8", "explicit (1,8) d,m: matmul out_sharding P(d,m), reshard P(m,d), einsum contraction over size-1 d",
        _ex_1x8, (1, 8), ("d", "m"), [P("d", None), P(None, "m")], None,
        lambda: [r((16, 16), 10150), r((16, 16), 10151, scale=0.25)], context_mesh=True, axis_types=EX2)
    # ---- with_sharding_constraint
    add("wsc_int_bool_chain", "int32 / bool constraint chain P(x,None)->P(None,x)->P(x,y)->P((y,x))->P(), int reductions",
        _wsc_int_bool_chain, M24, XY, [P(), P("y", None)], None,
        lambda: [_ids((16, 16), 1000, 10200), r((16, 16), 10201)])
    add("wsc_unconstrained_3d", "P(U,x,U) -> P(None,U,y) -> P(y,None,None) on 3-D, scalar / 1-vector constraints, 4 x 2",
        _wsc_unconstrained_3d, M42, XY, [P("x"), P(None, "y")], None,
        lambda: [r((8, 16, 16), 10210), r((16, 32), 10211, scale=0.25)])
    add("wsc_tuple_order", "constraints P((x,y)) -> P((y,x)) -> P(None,(x,y)) -> P(None,(y,x)) -> transpose, 2 x 4",
        _wsc_tuple_order, M24, XY, [P()], None, lambda: [r((16, 16), 10220)])
    add("wsc_while_cond_fn", "while_loop with a constraint + reduction in its cond fn, body constrains carry P(y,x) vs init P(x)",
        _wsc_while_cond_fn, M24, XY, [P(), P(None, "y")], None,
        lambda: [r((16, 16), 10230, scale=0.3), r((16, 16), 10231, scale=0.25)])
    add("wsc_vmap_nested_spmd", "vmap(spmd x) of vmap(spmd y) of a fn constraining its output P(None), 2 x 4",
        _wsc_vmap_nested, M24, XY, [P(), P()], None,
        lambda: [r((4, 8, 16), 10240), r((16, 16), 10241, scale=0.25)], context_mesh=True)
    # ---- out_shardings / donation
    add("out_pytree_mixed", "dict-of-dict outputs with out_shardings P(y,x), P(), P(x), P(y), ints P(None,x), bool P(y)",
        _plain(_out_pytree), M24, XY, [P("x", None), P(None, "y"), P("x")],
        {"h": P("y", "x"), "stats": {"sum": P(), "rowmax": P("x"), "colmean": P("y")}, "ids": P(None, "x"),
         "flag": P("y")},
        lambda: [r((16, 16), 10250), r((16, 16), 10251, scale=0.25), _ids((16, 8), 50, 10252)])
    add("donate_3axes_moved", "donated params / moments P((a,b),c) with out_shardings P(c,(a,b)), P((c,a)), 2x2x2",
        _plain(_donate_3axes), M222, ABC, [P(("a", "b"), "c"), P(("a", "b"), "c"), P("c", "a"), P()],
        (P("c", ("a", "b")), P(("c", "a")), P()),
        lambda: [r((16, 16), 10260), r((16, 16), 10261), r((16, 16), 10262), np.int32(3)], donate_argnums=(0, 1))
    add("out_reduce_replicated", "out_shardings replicate reductions of a P(x,y) matmul and gather the matmul itself",
        _plain(lambda x, w: (x @ w, jnp.sum(x @ w, axis=1), jnp.max(jnp.abs(x), axis=0))), M24, XY,
        [P("x", "y"), P("y", None)], (P(), P(), P()),
        lambda: [r((16, 32), 10270), r((32, 16), 10271, scale=0.2)])
    # ---- shard_map
    add("smap_vma_mixed", "check_vma shard_map: P() args, invariant outputs P() (psum'd and replicated-only), pcast, 8",
        _smap_vma_mixed, M8, ("x",), [P("x"), P(), P()], None,
        lambda: [r((64, 16), 10300), r((16, 16), 10301, scale=0.25), np.float32(1.5)])
    add("smap_nested_222", "2x2x2: shard_map over a, nested over b (psum), constraint on automatic c inside, all_gather over a",
        _smap_nested_222, M222, ABC, [P("a", "b"), P()], None,
        lambda: [r((8, 16), 10310), r((16, 16), 10311, scale=0.25)], context_mesh=True)
    add("smap_in_grad_scan", "grad of scan of a shard_map manual over y (ppermute + psum), x automatic, 2 x 4",
        _smap_in_grad_scan, M24, XY, [P(None, "y", None), P("x", None)], None,
        lambda: [r((3, 16, 16), 10320, scale=0.2), r((8, 16), 10321)], context_mesh=True)
    add("smap_axis_queries_2222", "2x2x2x2 shard_map: axis_index of a, (c,b), (b,d), axis_size of all four, out P((d,c,b,a))",
        _smap_axis_queries, M2222, ABCD, [P(("a", "b"), ("c", "d"))], None, lambda: [r((8, 8), 10330)])
    add("smap_gather_two_axes", "shard_map all_gather tiled over (x,y) dim 0 and (y,x) dim 1, psum_scatter over (y,x), 2 x 4",
        _smap_gather_two_axes, M24, XY, [P(("x", "y"))], None, lambda: [r((16, 4), 10340)])
    add("smap_int_bool_collectives", "shard_map psum int32 / int8(bool), pmax uint8, pmin int16, all_gather bool, ppermute int32 over (x,y)",
        _smap_int_bool_collectives, M24, XY, [P("x", "y"), P("x", "y")], None,
        lambda: [_ids((8, 16), 1000, 10350), np.random.default_rng(10351).random((8, 16)) > 0.5])
    add("smap_partial_perm", "ppermute partial perms: shift dropping the end (zeros), one pair, even senders over (x,y)",
        _smap_partial_perm, M24, XY, [P("x", "y")], None, lambda: [r((8, 16), 10360)])
    add("smap_multi_out_specs", "shard_map with 5 outputs: P(x), P(None,(x,y)), P((y,x)), P(), transposed block",
        _smap_multi_out, M24, XY, [P("x", "y"), P("y", None)], None,
        lambda: [r((8, 16), 10380), r((16, 2), 10381)])
    add("smap_in_vmap_grad", "vmap of a shard_map (all_gather over y), grad inside a shard_map (psum over both), 2 x 4",
        _smap_in_vmap, M24, XY, [P(None, "x", "y"), P(None, "y"), P("x", None)], None,
        lambda: [r((3, 8, 16), 10390), r((16, 16), 10391, scale=0.25), r((8, 16), 10392)])
    # ---- meshes
    add("mesh_2x1x4_tuples", "(2,1,4) a,s,b: size-1 axis inside tuples P((s,a),b), reshard to P((b,s,a)), P(s)",
        _mesh_214, (2, 1, 4), ("a", "s", "b"), [P(("a", "s")), P(None, ("s", "b"))], None,
        lambda: [r((16, 16), 10400), r((16, 16), 10401, scale=0.25)])
    add("mesh_242_all_axes", "16 devices (2,4,2): x P((c,a),b), w P(b,(a,c)), results P((b,c,a)), P(c,(b,a))",
        _mesh_242, M242, ABC, [P(("c", "a"), "b"), P("b", ("a", "c"))], None,
        lambda: [r((16, 16), 10410), r((16, 16), 10411, scale=0.25)])
    add("mesh_axis_twice", "x on different dims of one op's operands: a + b.T, a @ b with a P(x,y), b P(x,y), concat P(x) / P(None,x)",
        _mesh_axis_twice, M24, XY, [P("x", "y"), P("x", "y")], None,
        lambda: [r((16, 16), 10420), r((16, 16), 10421)])
    add("perm_mesh_smap_ca", "2x2x2 of devices (6,1,4,7,0,3,5,2): shard_map manual (c,a) psum / ppermute, b auto, reshard",
        _perm_mesh_mixed, M222, ABC, [P(("c", "a"), "b"), P()], None,
        lambda: [r((16, 8), 10430), r((8, 8), 10431, scale=0.3)], device_order=(6, 1, 4, 7, 0, 3, 5, 2),
        context_mesh=True)
    # ---- partitioner hard cases
    add("dot_batch_mismatch", "bmm with the batch dim over x in lhs and over y in rhs, 2 x 4",
        _plain(_dot_batch_mismatch), M24, XY, [P("x", None, None), P("y", None, None)], None,
        lambda: [r((8, 8, 16), 10500), r((8, 16, 8), 10501)])
    add("dot_contract_two_axes", "matmul: lhs contraction over (x,y), rhs contraction over x and free dim over y",
        _plain(_dot_contract_two_axes), M24, XY, [P(None, ("x", "y")), P("x", "y")], None,
        lambda: [r((16, 32), 10510), r((32, 16), 10511, scale=0.2)])
    add("dot_contract_vs_free", "matmul: lhs contraction over x, rhs free dim over x; chained with y on lhs free / rhs contraction",
        _plain(_dot_contract_vs_free), M24, XY, [P("y", "x"), P(None, "x"), P("y", None)], None,
        lambda: [r((16, 32), 10520), r((32, 16), 10521, scale=0.2), r((16, 8), 10522, scale=0.25)])
    add("reshape_uneven_merge", "[6,8] rows over x=4 (uneven) -> [48] -> [8,6] / [4,12]; [12,4] P(y,x) flattened, 4 x 2",
        _reshape_uneven, M42, XY, [P(), P()], None, lambda: [r((8, 8), 10530), r((16, 4), 10531)])
    add("transpose_4d_two_sharded", "[4,8,4,8] P(x,None,y,None): transposes (2,3,0,1), (1,0,3,2)->spec, (3,2,1,0)->spec",
        _transpose_4d, M24, XY, [P("x", None, "y", None)], None, lambda: [r((4, 8, 4, 8), 10540)])
    add("int_reductions_sharded", "int32 sum / min(int8) / argmin / cumsum and uint32 max / int prod over sharded dims",
        _plain(_int_reductions), M24, XY, [P("x", "y"), P("y", "x")], None,
        lambda: [_ids((16, 16), 100000, 10550), np.random.default_rng(10551).integers(0, 256, (16, 16)).astype(np.uint8)])
    add("broadcast_vec_3d", "v[16] over y broadcast onto dim 2 of x[16,8,16] over x; u[8] over x onto dim 1",
        _plain(_broadcast_vec), M24, XY, [P("x", None, None), P("y"), P("x")], None,
        lambda: [r((16, 8, 16), 10560), r((16,), 10561), r((8,), 10562)])
    add("concat_unequal", "concatenate 5 + 11 + 16 rows and 3 + 32 rows along the sharded dim, 8",
        _concat_unequal, M8, ("x",), [P("x"), P("x")], None, lambda: [r((32, 8), 10570), r((32, 8), 10571)])
    add("slice_empty_shards", "x[:3], x[13:], x[5:6], x[::5], x[15:16] of rows over 8 (most shards empty)",
        _plain(_slice_empty), M8, ("x",), [P("x")], None, lambda: [r((16, 4), 10580)])
    add("pad_neg_interior_modes", "lax.pad negative low + interior on the sharded dim, edge and reflect modes",
        _plain(_pad_variants), M8, ("x",), [P("x")], None, lambda: [r((16, 4), 10590)])
    add("iota_masks_attn", "attention with causal / sliding window / block-diag iota masks, q seq over x, k/v seq over y",
        _plain(_iota_masks), M24, XY, [P(None, "x"), P(None, "y"), P(None, "y")], None,
        lambda: [r((2, 16, 4, 8), 10600), r((2, 16, 4, 8), 10601), r((2, 16, 4, 8), 10602)])
    add("while_switch_carry", "fori_loop carry P(x,None) in, P(None,y) from body; lax.cond with branches P(y,x) / P(None,(x,y))",
        _while_switch, M24, XY, [P("x", None), P(None, "y"), P()], None,
        lambda: [r((16, 16), 10610), r((16, 16), 10611, scale=0.25), np.int32(1)])
    add("scan_kv_cache", "decode scan carrying a KV cache [B,S,H,D] P(x,None,y,None), DUS at step t, masked attention",
        _scan_kv_cache, M24, XY,
        [P("x", None, "y", None), P("x", None, "y", None), P(None, "x"), P(None, "y"), P(None, "y"), P(None, "y")],
        None, lambda: [np.zeros((4, 8, 4, 8), np.float32), np.zeros((4, 8, 4, 8), np.float32), r((6, 4, 16), 10620),
                       r((16, 32), 10621, scale=0.25), r((16, 32), 10622, scale=0.25), r((16, 32), 10623, scale=0.25)])
    add("remat_mixed_policies", "grads: checkpoint save_only_these_names(act) / nothing_saveable in scan / dots_saveable, constrained acts",
        _remat_mixed_policy, M24, XY, [P(None, "y"), P("x", None)], None,
        lambda: [r((4, 16, 16), 10630, scale=0.25), r((16, 16), 10631)])
    add("custom_vjp_smap_bwd", "custom_vjp dense: jnp forward, shard_map backward (psum over x), residual constrained P(None,y)",
        _custom_vjp_smap_bwd, M24, XY, [P(), P("x", None)], None,
        lambda: [r((16, 16), 10640, scale=0.25), r((16, 16), 10641)])
    add("opt_barrier_reshard", "optimization_barrier of (P(x) tanh, P(None,x), scalar) then reshards P(y,x), P(x,None)",
        _opt_barrier, M24, XY, [P("x", None), P("y", None)], None, lambda: [r((16, 16), 10650), r((16, 16), 10651)])
    add("nondivisible_sizes", "1000-vector over 8 (cumsum / sort / top_k), [100,13] @ [13,7] over x,y, 2 x 4",
        _nondivisible, M24, XY, [P(), P(), P()], None,
        lambda: [r((1024,), 10660), r((104, 16), 10661), r((16, 8), 10662)])
    add("dot_batch_vs_contract", "bmm: lhs batch over x and contraction over y, rhs contraction over x, 2 x 4",
        _plain(_dot_batch_vs_contract), M24, XY, [P("x", None, "y"), P(None, "x", None)], None,
        lambda: [r((4, 8, 16), 10670), r((4, 16, 8), 10671)])
    add("uneven_13x7x6", "[13,7,6] over x=4, y=2 (made inside): sum / max / mean per dim, transpose P(y,x), contract the 7",
        _uneven_3d, M42, XY, [P(), P()], None, lambda: [r((16, 8, 8), 10680), r((8, 8), 10681)])
    add("smap_in_cond", "lax.cond: true branch a shard_map (psum y, ppermute x), false branch jnp, on a sharded predicate",
        _smap_in_cond, M24, XY, [P("x", "y")], None, lambda: [np.abs(r((8, 16), 10690))])
    add("wsc_scalars_in_scan", "scan body constraining int / bool / f32 scalars to P() and the carry to P(x), flag selects",
        _wsc_scalars_loop, M24, XY, [P("x", "y"), P()], None, lambda: [r((16, 16), 10700), np.float32(1.5)])
    add("assoc_scan_sharded", "cummax, cumlogsumexp and associative_scan linear recurrence along the x-sharded dim, 8",
        _plain(_assoc_scan), M8, ("x",), [P("x")], None, lambda: [r((32, 4), 10710)])
    add("vmap_axis1_spmd", "vmap(in_axes=1, out_axes=1, spmd_axis_name=y) with a P(x) constraint inside, 2 x 4",
        _vmap_axis1, M24, XY, [P("x", "y"), P()], None,
        lambda: [r((16, 8), 10720), r((16, 16), 10721, scale=0.25)], context_mesh=True)
    # ---- several meshes over the same devices
    add("two_meshes_wsc", "inputs on (2,4) x,y and (8,) z, constraint on the (8,) mesh, reshard P(y,x) on the first",
        _two_meshes, M24, XY, [P("x", "y"), P("z")], None,
        lambda: [r((16, 16), 10800), r((16, 16), 10801, scale=0.25)], arg_meshes=(None, ((8,), ("z",))))
    add("three_meshes_out", "inputs on (2,4) x,y and (4,2) a,b, constraint on (2,2,2) p,q,r, out_shardings on (8,) z",
        _three_meshes, M24, XY, [P("x", None), P("b", "a")], None,
        lambda: [r((16, 16), 10810), r((16, 16), 10811, scale=0.25)], arg_meshes=(None, ((4, 2), ("a", "b"))),
        raw_out=lambda mesh: (NamedSharding(_mesh_of((8,), ("z",)), P(None, "z")),
                              NamedSharding(_mesh_of((4, 2), ("a", "b")), P(("b", "a")))))
    add("smap_other_mesh", "shard_map over an (8,) z mesh inside a jit with inputs on (2,4) x,y: psum, axis_index",
        _smap_other_mesh, M24, XY, [P("x", "y")], None, lambda: [r((16, 16), 10820)], raw_out=None, arg_meshes=(None,))
    add("smap_odd_collectives", "shard_map: untiled all_gather of a scalar over (y,x), untiled psum_scatter over (x,y), a2a split==concat, to=invarying, self ppermute",
        _smap_odd_collectives, M24, XY, [P("x", "y")], None, lambda: [r((8, 16), 10900)])
    add("batched_dyn_slices", "vmap dynamic_slice / DUS at per-row offsets along the y-sharded dim, take_along_axis there, 2 x 4",
        _plain(_batched_dyn_slices), M24, XY, [P("x", "y"), P("x"), P("x", None)], None,
        lambda: [r((8, 32), 10920), _ids((8,), 28, 10921), r((8, 4), 10922)])
    add("windows_uneven_rows", "30 rows over y=4: stride-2 SAME conv, SAME avg pool stride 2, reverse cumsum, batch over x",
        lambda mesh: (lambda x, w: _windows_uneven(_wsc(mesh, x[:, :30], P("x", "y")), w)), M24, XY,
        [P("x", "y"), P()], None, lambda: [r((2, 32, 8, 3), 10930), r((3, 3, 3, 4), 10931, scale=0.3)])
    add("lax_map_batch_size", "lax.map(batch_size=4) over an x-sharded leading dim, scan(unroll=2) over it, 2 x 4",
        _plain(_lax_map_batched), M24, XY, [P("x", None, "y"), P()], None,
        lambda: [r((16, 4, 8), 10940), r((8, 8), 10941, scale=0.3)])
    add("variadic_reduce_sort", "3-operand einsum, argmax / argmin of a P(x,y) array flattened, sort num_keys=2 along (x,y)",
        _plain(_variadic), M24, XY, [P("x", "y"), P("y", None), P(None, "x"), P(("x", "y")), P(("x", "y"))], None,
        lambda: [r((16, 16), 10950), r((16, 16), 10951, scale=0.25), r((16, 8), 10952, scale=0.25),
                 _ids((16,), 4, 10953), _ids((16,), 100, 10954)])
    return ps
