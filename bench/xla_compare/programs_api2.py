"""Programs for bench/xla_compare of JAX sharding features beyond programs_api.py: explicit
sharding mode (meshes with AxisType.Explicit, jax.sharding.reshard, out_sharding= on matmul and
einsum, jax.typeof(x).sharding, Explicit mixed with Auto axes, auto_axes, shard_map in explicit
mode, grads), shard_alike, with_sharding_constraint on dicts, memory kinds (device_put to
pinned_host inside jit, jax.checkpoint offload policies, a pinned_host argument: JAX's CPU lowering
drops these transfers, so only out_shardings with memory_kind="pinned_host" reaches xshard, as an
annotate_device_placement custom-call; the TPU / GPU lowerings carry them all), Pallas kernels in
interpret mode inside a sharded jit and inside shard_map, pshuffle and pswapaxes in shard_map, and
jit options: in_shardings given as bare PartitionSpecs under jax.set_mesh, out_shardings None for
some outputs, keep_unused.
"""
import dataclasses
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from programs import Program, _plain, _rand, _smap, _wsc

AT = jax.sharding.AxisType


@dataclasses.dataclass
class Program2(Program):
    axis_types: Optional[tuple] = None  # Mesh axis_types (None: JAX's default, Auto)
    jit_kwargs: Optional[dict] = None   # more jax.jit keyword arguments (keep_unused, ...)
    spec_in_shardings: bool = False     # in_shardings as bare PartitionSpecs (needs context_mesh)
    raw_out_shardings: Optional[object] = None  # out_shardings passed as is (None entries kept)
    in_memory_kinds: Optional[tuple] = None     # memory_kind of each input's NamedSharding

    def mesh(self):
        order = self.device_order if self.device_order is not None else range(self.devices)
        devs = np.array([jax.devices()[i] for i in order]).reshape(self.mesh_shape)
        if self.axis_types is None:
            return Mesh(devs, self.axis_names)
        return Mesh(devs, self.axis_names, axis_types=self.axis_types)

    def jitted(self):
        mesh = self.mesh()
        kinds = self.in_memory_kinds or (None,) * len(self.in_specs)
        in_sh = tuple(NamedSharding(mesh, s, memory_kind=k) for s, k in zip(self.in_specs, kinds))
        kwargs = dict(self.jit_kwargs or {})
        kwargs["in_shardings"] = tuple(self.in_specs) if self.spec_in_shardings else in_sh
        if self.donate_argnums:
            kwargs["donate_argnums"] = self.donate_argnums
        if self.raw_out_shardings is not None:
            kwargs["out_shardings"] = self.raw_out_shardings(mesh)
        elif self.out_specs is not None:
            kwargs["out_shardings"] = jax.tree.map(lambda s: NamedSharding(mesh, s), self.out_specs,
                                                   is_leaf=lambda s: isinstance(s, P))
        return jax.jit(self.make_fn(mesh), **kwargs), in_sh


EXP2 = (AT.Explicit, AT.Explicit)


# ---- explicit sharding mode -----------------------------------------------------------------------
def _explicit_mlp(mesh):
    # Explicit axes: the hidden activations' sharding chosen by out_sharding=, the output by reshard.
    def f(x, w1, w2):
        h = jax.nn.relu(jnp.matmul(x, w1, out_sharding=P("x", "y")))
        o = jnp.matmul(h, w2, out_sharding=P("x", None))          # contraction over y: a psum
        return jax.sharding.reshard(o, P(None, "x")), h.sum(0)
    return f


def _explicit_einsum(mesh):
    def f(q, k):
        s = jnp.einsum("bqd,bkd->bqk", q, k, out_sharding=P("x", None, "y"))
        p = jax.nn.softmax(s, axis=-1)
        return jnp.einsum("bqk,bkd->bqd", p, k, out_sharding=P("x", None, None))
    return f


def _explicit_typeof(mesh):
    # A function that reads its input's sharding (jax.typeof) and keeps its outputs alike.
    def f(x, y):
        spec = jax.typeof(x).sharding.spec
        z = jax.sharding.reshard(y, spec) * 2.0 + x
        t = jax.sharding.reshard(z.T, P(spec[1], spec[0]))
        return z, t, jnp.sum(z, axis=1)
    return f


def _explicit_mixed(mesh):
    # data axis Explicit, model axis Auto: a constraint on the Auto axis, out_sharding on the other.
    def f(x, w):
        h = jnp.tanh(x @ w)
        h = jax.lax.with_sharding_constraint(h, P(None, "model"))
        g = jnp.matmul(h, w.T, out_sharding=P("data", None))
        return g, jnp.mean(h, axis=0)
    return f


def _explicit_smap(mesh):
    # shard_map over an explicit mesh inside jit: a psum of partial products over y.
    def body(a, b):
        return jax.lax.psum(a @ b, "y")

    def f(a, b):
        c = _smap(mesh, body, (P("x", "y"), P("y", None)), P("x", None))(a, b)
        return jax.sharding.reshard(jnp.tanh(c), P(None, "x"))
    return f


def _explicit_grad(w1, w2, x, y):
    def loss(p):
        h = jax.nn.gelu(x @ p[0])
        return jnp.mean((jnp.matmul(h, p[1], out_sharding=P("x", None)) - y) ** 2)
    l, g = jax.value_and_grad(loss)((w1, w2))
    return l, w1 - 0.1 * g[0], w2 - 0.1 * g[1]


def _explicit_auto_axes(mesh):
    # auto_axes inside explicit mode: a region where the partitioner picks the shardings, its
    # result's sharding given by out_sharding=.
    @jax.sharding.auto_axes(out_sharding=P("x", None))
    def mixer(h, w):
        return jnp.tanh(h @ w) * 2.0

    def f(x, w):
        h = jnp.matmul(x, w, out_sharding=P("x", "y"))
        return mixer(h, w) + jax.sharding.reshard(x, P("x", None))
    return f


def _explicit_reduce(mesh):
    # Reductions and broadcasts over explicitly sharded dims.
    def f(x):
        row = jnp.sum(x, axis=0)            # over x: replicated over x in explicit mode
        col = jnp.max(x, axis=1)
        return x - row[None, :], col, jnp.mean(x)
    return f


def _explicit_scan(mesh):
    # A scan carrying an explicitly sharded state.
    def f(h0, xs, w):
        def step(h, xt):
            h = jnp.tanh(h @ w + xt)
            return h, h.sum(-1)
        return jax.lax.scan(step, h0, xs)
    return f


# ---- shard_alike, constraints on pytrees, memory kinds ----------------------------------------------
def _shard_alike(mesh):
    from jax.experimental.shard_alike import shard_alike

    def f(x, y):
        a = _wsc(mesh, jnp.sin(x), P("x", "y"))
        b = jnp.cos(y) * 2.0
        a, b = shard_alike(a, b)
        return a + b, b.T @ a
    return f


def _wsc_dict(mesh):
    def f(p):
        p = jax.lax.with_sharding_constraint(
            p, {"w": NamedSharding(mesh, P(None, "y")), "b": NamedSharding(mesh, P("y")),
                "emb": NamedSharding(mesh, P("x", None))})
        h = jnp.tanh(p["emb"] @ p["w"] + p["b"])
        return {"h": h, "norm": jnp.sqrt(jnp.sum(p["w"] ** 2))}
    return lambda w, b, emb: f({"w": w, "b": b, "emb": emb})


def _host_put(mesh):
    # device_put inside jit to pinned host memory and back (MoveToHost / MoveToDevice).
    def f(x, w):
        h = jnp.tanh(x @ w)
        hh = jax.device_put(h, NamedSharding(mesh, P("x", None), memory_kind="pinned_host"))
        back = jax.device_put(hh, NamedSharding(mesh, P("x", None), memory_kind="device"))
        return back * 2.0 + 1.0
    return f


def _host_input(mesh):
    # An argument kept in pinned host memory (in_shardings memory_kind) moved to the device in jit.
    def f(x, y):
        xd = jax.device_put(x, NamedSharding(mesh, P("x", None), memory_kind="device"))
        return jnp.tanh(xd) * y + 1.0, xd.sum(1)
    return f


def _remat_offload(mesh):
    # jax.checkpoint with save_and_offload_only_these_names: the named hidden is offloaded to host.
    from jax.ad_checkpoint import checkpoint_name
    policy = jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[], names_which_can_be_offloaded=["hidden"],
        offload_src="device", offload_dst="pinned_host")

    def f(w1, w2, x):
        def layer(w1, w2, x):
            h = checkpoint_name(jnp.tanh(x @ w1), "hidden")
            return jnp.sum((h @ w2) ** 2)
        layer = jax.checkpoint(layer, policy=policy)
        return jax.grad(layer, argnums=(0, 1))(w1, w2, x)
    return f


def _out_memory_kind(mesh):
    # An output placed in pinned host memory by out_shardings (the result lives on the host).
    return lambda x: (jnp.sin(x) * 3.0, jnp.cos(x).sum(0))


# ---- Pallas in interpret mode -------------------------------------------------------------------
def _pallas_add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0 + jnp.tanh(y_ref[...])


def _pallas_fn(x, y):
    from jax.experimental import pallas as pl
    return pl.pallas_call(_pallas_add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          interpret=True)(x, y)


def _pallas_smap(mesh):
    def body(x, y):
        return jax.lax.psum(_pallas_fn(x, y).sum(0, keepdims=True), "x")
    return _smap(mesh, body, (P("x", "y"), P("x", "y")), P(None, "y"), check_vma=False)


def _pallas_grid_kernel(x_ref, w_ref, o_ref):
    o_ref[...] = jnp.dot(x_ref[...], w_ref[...])


def _pallas_jit(mesh):
    # A blocked matmul kernel with a grid, in interpret mode, inside a sharded jit (not shard_map).
    from jax.experimental import pallas as pl

    def f(x, w):
        h = jnp.tanh(x)
        o = pl.pallas_call(_pallas_grid_kernel, out_shape=jax.ShapeDtypeStruct((16, 16), jnp.float32),
                           grid=(2,), in_specs=[pl.BlockSpec((8, 16), lambda i: (i, 0)),
                                                pl.BlockSpec((16, 16), lambda i: (0, 0))],
                           out_specs=pl.BlockSpec((8, 16), lambda i: (i, 0)), interpret=True)(h, w)
        return o + 1.0
    return f


# ---- collectives in shard_map -------------------------------------------------------------------
def _pshuffle(mesh):
    def body(x):
        return jax.lax.pshuffle(x, "x", perm=[3, 0, 1, 2, 7, 4, 5, 6]) * 2.0
    return _smap(mesh, body, P("x"), P("x"))


def _pswapaxes(mesh):
    def body(x):
        return jax.lax.pswapaxes(x, "y", axis=1)
    return _smap(mesh, body, P("x", "y"), P(("x", "y"), None), check_vma=False)


def _axis_index_sum(mesh):
    # axis_index over a tuple of axes and a psum over both, with a per-device scale.
    def body(x):
        i = jax.lax.axis_index(("x", "y"))
        return jax.lax.psum(x * (i + 1).astype(x.dtype), ("x", "y")), jnp.reshape(i, (1,))
    return _smap(mesh, body, P(("x", "y")), (P(), P(("x", "y"))), check_vma=False)


# ---- jit options ----------------------------------------------------------------------------------
def _mixed_out(x, w, b):
    h = jnp.tanh(x @ w + b)
    return h, h.sum(0), h.T


def _unused_args(x, unused, w):
    return jnp.tanh(x @ w), x.sum(1)


def api2_programs():
    m24, an_xy = (2, 4), ("x", "y")
    m42, an_dm = (4, 2), ("data", "model")
    m8, an_x = (8,), ("x",)
    return [
        Program2("api2_explicit_mlp", "explicit mesh: matmul out_sharding= P(x,y) then P(x,None), reshard",
                 _explicit_mlp, m24, an_xy, [P("x", None), P(None, "y"), P("y", None)], None,
                 lambda: [_rand((16, 16), 900), _rand((16, 32), 901, scale=0.25), _rand((32, 16), 902, scale=0.2)],
                 context_mesh=True, axis_types=EXP2, quick=True),
        Program2("api2_explicit_einsum", "explicit mesh: einsum out_sharding= for attention scores and values",
                 _explicit_einsum, m24, an_xy, [P("x", None, "y"), P("x", None, "y")], None,
                 lambda: [_rand((4, 8, 16), 903), _rand((4, 8, 16), 904)], context_mesh=True, axis_types=EXP2),
        Program2("api2_explicit_typeof", "explicit mesh: jax.typeof(x).sharding.spec drives reshards",
                 _explicit_typeof, m24, an_xy, [P("y", "x"), P("x", None)], None,
                 lambda: [_rand((16, 8), 905), _rand((16, 8), 906)], context_mesh=True, axis_types=EXP2),
        Program2("api2_explicit_mixed_auto", "mesh with data Explicit, model Auto: constraint + out_sharding=",
                 _explicit_mixed, m42, an_dm, [P("data", None), P()], None,
                 lambda: [_rand((16, 16), 907), _rand((16, 16), 908, scale=0.3)], context_mesh=True,
                 axis_types=(AT.Explicit, AT.Auto)),
        Program2("api2_explicit_smap", "shard_map psum over y inside jit on an explicit mesh, then reshard",
                 _explicit_smap, m24, an_xy, [P("x", "y"), P("y", None)], None,
                 lambda: [_rand((8, 16), 909), _rand((16, 8), 910)], context_mesh=True, axis_types=EXP2),
        Program2("api2_explicit_grad", "explicit mesh: value_and_grad of a 2-layer MLP, SGD update",
                 _plain(_explicit_grad), m24, an_xy,
                 [P(None, "y"), P("y", None), P("x", None), P("x", None)], None,
                 lambda: [_rand((16, 32), 911, scale=0.25), _rand((32, 8), 912, scale=0.2), _rand((16, 16), 913),
                          _rand((16, 8), 914)], context_mesh=True, axis_types=EXP2),
        Program2("api2_explicit_auto_axes", "explicit mesh: an auto_axes region (out_sharding=) between matmuls",
                 _explicit_auto_axes, m24, an_xy, [P("x", None), P(None, "y")], None,
                 lambda: [_rand((16, 16), 945), _rand((16, 16), 946, scale=0.3)], context_mesh=True,
                 axis_types=EXP2),
        Program2("api2_explicit_reduce", "explicit mesh: sum / max / mean over sharded dims, broadcast back",
                 _explicit_reduce, m24, an_xy, [P("x", "y")], None, lambda: [_rand((16, 16), 915)],
                 context_mesh=True, axis_types=EXP2),
        Program2("api2_explicit_scan", "explicit mesh: scan carrying a P(x, None) state, xs P(None, x)",
                 _explicit_scan, m24, an_xy, [P("x", None), P(None, "x", None), P()], None,
                 lambda: [_rand((8, 16), 916), _rand((3, 8, 16), 917), _rand((16, 16), 918, scale=0.3)],
                 context_mesh=True, axis_types=EXP2),
        Program2("api2_shard_alike", "jax.experimental.shard_alike of a constrained and an open array",
                 _shard_alike, m24, an_xy, [P(), P()], None,
                 lambda: [_rand((16, 16), 919), _rand((16, 16), 920)]),
        Program2("api2_wsc_dict", "with_sharding_constraint on a dict pytree, dict output",
                 _wsc_dict, m24, an_xy, [P(), P(), P()], None,
                 lambda: [_rand((16, 32), 921, scale=0.25), _rand((32,), 922), _rand((8, 16), 923)]),
        Program2("api2_host_device_put", "device_put inside jit to pinned_host and back to device",
                 _host_put, m24, an_xy, [P("x", None), P(None, "y")], None,
                 lambda: [_rand((16, 16), 924), _rand((16, 16), 925)]),
        Program2("api2_host_input", "argument in pinned_host memory (in_shardings) moved to device inside jit",
                 _host_input, m24, an_xy, [P("x", None), P("x", "y")], None,
                 lambda: [_rand((16, 16), 947), _rand((16, 16), 948)], in_memory_kinds=("pinned_host", None)),
        Program2("api2_remat_offload", "grad of jax.checkpoint with save_and_offload_only_these_names",
                 _remat_offload, m24, an_xy, [P(None, "y"), P("y", None), P("x", None)], None,
                 lambda: [_rand((16, 32), 926, scale=0.25), _rand((32, 16), 927, scale=0.2), _rand((16, 16), 928)]),
        Program2("api2_out_pinned_host", "out_shardings with memory_kind=pinned_host for one output",
                 _out_memory_kind, m8, an_x, [P("x")], None, lambda: [_rand((16, 8), 929)],
                 raw_out_shardings=lambda mesh: (NamedSharding(mesh, P("x"), memory_kind="pinned_host"),
                                                 NamedSharding(mesh, P()))),
        Program2("api2_pallas_smap", "Pallas kernel (interpret=True) inside shard_map, psum over x",
                 _pallas_smap, m24, an_xy, [P("x", "y"), P("x", "y")], None,
                 lambda: [_rand((8, 16), 930), _rand((8, 16), 931)]),
        Program2("api2_pallas_jit", "gridded Pallas matmul (interpret=True) in a jit with sharded inputs",
                 _pallas_jit, m24, an_xy, [P("x", None), P(None, "y")], None,
                 lambda: [_rand((16, 16), 932), _rand((16, 16), 933)]),
        Program2("api2_pshuffle", "shard_map pshuffle (a permutation of 8 shards)",
                 _pshuffle, m8, an_x, [P("x")], None, lambda: [_rand((16, 4), 934)]),
        Program2("api2_pswapaxes", "shard_map pswapaxes over y (all_to_all of axis 1)",
                 _pswapaxes, m24, an_xy, [P("x", "y")], None, lambda: [_rand((8, 16), 935)]),
        Program2("api2_axis_index_tuple", "shard_map axis_index((x, y)) and psum over both axes",
                 _axis_index_sum, m24, an_xy, [P(("x", "y"))], None, lambda: [_rand((16, 4), 936)]),
        Program2("api2_spec_in_shardings", "jit(in_shardings=PartitionSpecs, out_shardings=P) under set_mesh",
                 _plain(lambda x, w: jnp.tanh(x @ w).T), m42, an_dm, [P("data", None), P(None, "model")],
                 None, lambda: [_rand((16, 16), 937), _rand((16, 16), 938)], context_mesh=True,
                 spec_in_shardings=True, raw_out_shardings=lambda mesh: P("model", "data")),
        Program2("api2_out_shardings_some_none", "out_shardings with None for some outputs (left to propagation)",
                 _plain(_mixed_out), m24, an_xy, [P("x", None), P(None, "y"), P("y")], None,
                 lambda: [_rand((16, 16), 939), _rand((16, 16), 940), _rand((16,), 941)],
                 raw_out_shardings=lambda mesh: (NamedSharding(mesh, P("y", "x")), None, None)),
        Program2("api2_keep_unused", "jit(keep_unused=True) with an unused sharded argument",
                 _plain(_unused_args), m24, an_xy, [P("x", None), P("x", "y"), P(None, "y")], None,
                 lambda: [_rand((16, 16), 942), _rand((16, 16), 943), _rand((16, 16), 944)],
                 jit_kwargs={"keep_unused": True}),
    ]
