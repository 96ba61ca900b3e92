"""The suite of bench/xla_compare: small realistic JAX programs of the kinds issue 11 names
(imported after XLA_FLAGS is set). Each Program builds its function for a mesh; in_specs /
out_specs are PartitionSpecs (out_specs None: left out, as the seeds leave them).
"""
import dataclasses
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P


@dataclasses.dataclass
class Program:
    name: str
    what: str                     # one line for the table
    make_fn: Callable             # mesh -> function of the inputs
    mesh_shape: tuple
    axis_names: tuple
    in_specs: list
    out_specs: Optional[object]   # a PartitionSpec, a tuple of them, or None (left out)
    make_args: Callable           # () -> list of numpy arrays
    dtype: str = "f32"            # f32, bf16 or f16: picks the tolerance
    quick: bool = False           # in the ctest's fast subset
    context_mesh: bool = False    # lower under jax.set_mesh(mesh) (shard_map / constraints without a mesh)
    device_order: Optional[tuple] = None  # the mesh's devices as indices into jax.devices() (None: 0..N-1)
    donate_argnums: tuple = ()    # jit's donate_argnums (input_output_alias in the HLO)

    @property
    def devices(self):
        return int(np.prod(self.mesh_shape))

    def mesh(self):
        order = self.device_order if self.device_order is not None else range(self.devices)
        return Mesh(np.array([jax.devices()[i] for i in order]).reshape(self.mesh_shape), self.axis_names)

    def jitted(self):
        """(jax.jit(f, in_shardings, out_shardings), in_shardings) over this program's mesh."""
        mesh = self.mesh()
        in_sh = tuple(NamedSharding(mesh, s) for s in self.in_specs)
        kwargs = {"in_shardings": in_sh}
        if self.donate_argnums:
            kwargs["donate_argnums"] = self.donate_argnums
        if self.out_specs is not None:
            kwargs["out_shardings"] = jax.tree.map(lambda s: NamedSharding(mesh, s), self.out_specs,
                                                   is_leaf=lambda s: isinstance(s, P))
        return jax.jit(self.make_fn(mesh), **kwargs), in_sh


def _rand(shape, seed, dtype="f32", scale=1.0):
    a = (np.random.default_rng(seed).standard_normal(shape, dtype=np.float32) * np.float32(scale))
    return a.astype(ml_dtypes.bfloat16) if dtype == "bf16" else a.astype(np.float32)


def _ids(shape, vocab, seed):
    return np.random.default_rng(seed).integers(0, vocab, shape).astype(np.int32)


def _plain(f):
    return lambda mesh: f


def _wsc(mesh, x, spec):
    return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))


def _smap(mesh, body, in_specs, out_specs, **kw):
    """jax.shard_map over `mesh` (None: the context mesh, as a nested shard_map needs)."""
    if mesh is not None:
        kw["mesh"] = mesh
    if hasattr(jax, "shard_map"):
        return jax.shard_map(body, in_specs=in_specs, out_specs=out_specs, **kw)
    # A release without jax.shard_map (0.5.3 and older; XSHARD_JAX_VENV): jax.experimental's,
    # which needs the mesh, names the check check_rep and takes the automatic axes instead of the
    # manual ones.
    from jax.experimental.shard_map import shard_map
    if "mesh" not in kw:
        raise NotImplementedError("a shard_map without a mesh needs a JAX with jax.shard_map (0.6.2 has it)")
    kw["check_rep"] = kw.pop("check_vma", False)  # its replication rules miss ops the bodies use
    if "axis_names" in kw:
        kw["auto"] = frozenset(kw["mesh"].axis_names) - frozenset(kw.pop("axis_names"))
    return shard_map(body, in_specs=in_specs, out_specs=out_specs, **kw)


def _axis_size(name):
    """jax.lax.axis_size where the release has it (0.6.2 does), else the psum of 1 over the axis."""
    return jax.lax.axis_size(name) if hasattr(jax.lax, "axis_size") else jax.lax.psum(1, name)


# ---- MLP training step, data x tensor parallel -------------------------------------------------
MD, MH, MB = 64, 256, 32


# The SGD step of jax_compare's MLP workload (bench/jax_compare/workloads.py), at small shapes.
from workloads import _mlp_step  # noqa: E402  (bench/jax_compare is on sys.path: xla_compare.py)


def _mlp_args():
    return [_rand((MD, MH), 1, scale=MD ** -0.5), np.zeros((MH,), np.float32),
            _rand((MH, MD), 2, scale=MH ** -0.5), _rand((MB, MD), 3), _rand((MB, MD), 4)]


# ---- transformer block forward and gradient -----------------------------------------------------
TB, TS, TD, TH = 4, 16, 32, 4


def _layernorm(x):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5)


def _block(x, wq, wk, wv, wo, w1, w2):
    h = _layernorm(x)
    q = (h @ wq).reshape(TB, TS, TH, TD // TH)
    k = (h @ wk).reshape(TB, TS, TH, TD // TH)
    v = (h @ wv).reshape(TB, TS, TH, TD // TH)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(TD // TH))
    a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v).reshape(TB, TS, TD)
    x = x + a @ wo
    return x + jax.nn.gelu(_layernorm(x) @ w1) @ w2


def _block_args():
    sc = TD ** -0.5
    return [_rand((TB, TS, TD), 10)] + [_rand((TD, TD), 11 + i, scale=sc) for i in range(4)] + \
           [_rand((TD, 4 * TD), 15, scale=sc), _rand((4 * TD, TD), 16, scale=sc / 2)]


_BLOCK_SPECS = [P("data"), P(None, "model"), P(None, "model"), P(None, "model"), P("model", None),
                P(None, "model"), P("model", None)]


def _block_grad(*args):
    return jax.grad(lambda ws, x: jnp.sum(_block(x, *ws) ** 2), argnums=0)(args[1:], args[0])


# ---- a small CNN ---------------------------------------------------------------------------------
def _conv(x, w):
    return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _cnn(x, w1, w2, wd):
    h = jax.nn.relu(_conv(x, w1))
    h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = jax.nn.relu(_conv(h, w2))
    return h.mean(axis=(1, 2)) @ wd


def _cnn_step(x, w1, w2, wd, y):
    def loss(ws):
        return jnp.mean((_cnn(x, *ws) - y) ** 2)
    l, g = jax.value_and_grad(loss)((w1, w2, wd))
    return tuple(w - 0.1 * gw for w, gw in zip((w1, w2, wd), g)) + (l,)


def _cnn_args():
    return [_rand((8, 8, 8, 3), 20), _rand((3, 3, 3, 8), 21, scale=0.3), _rand((3, 3, 8, 8), 22, scale=0.2),
            _rand((8, 4), 23, scale=0.3), _rand((8, 4), 24)]


# ---- embedding lookup and its gradient -----------------------------------------------------------
EV, ED = 64, 16


def _embed_grad(table, ids, w):
    return jax.grad(lambda t: jnp.sum(jnp.take(t, ids, axis=0) * w))(table)


def _embed_step(table, ids, w):
    g = jax.grad(lambda t: jnp.sum(jnp.tanh(jnp.take(t, ids, axis=0)) * w))(table)
    return table - 0.1 * g


# ---- uneven shapes (JAX's inputs must divide evenly: the uneven value is made inside) ----------
def _uneven(mesh, a, w):
    x = _wsc(mesh, a[:10, :7], P("a", "b"))
    return jnp.tanh(x) @ w, x.sum(0), _wsc(mesh, x * 2.0, P("b", "a"))


# ---- gathers, scatters and windows on sharded dims -----------------------------------------------
def _xent(logits, labels):
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def _scatter_add(ids, vals):
    return jnp.zeros((EV, ED), jnp.float32).at[ids].add(vals)


def _conv_nhwc(x, w):
    return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


# ---- loops ----------------------------------------------------------------------------------------
def _scan_rnn(h0, xs, w):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h.sum(-1)
    h, ys = jax.lax.scan(step, h0, xs)
    return h, ys


def _fori(x, w):
    return jax.lax.fori_loop(0, 4, lambda i, h: jnp.tanh(h @ w) + 0.1 * i, x)


# ---- seed 000: x f16[4,16] rows of 1..4, y = x.T, mesh a=4 x b=2, z's sharding left out -----------
def _seed000_args():
    x = np.repeat(np.arange(1, 5, dtype=np.float16)[:, None], 16, axis=1)
    return [x, np.ascontiguousarray(x.T)]


def _seed000(case, xs, ys, quick=False):
    return Program(f"seed000_{case}", f"seed 000 {case}: x {xs} y {ys}", _plain(jnp.matmul), (4, 2), ("a", "b"),
                   [xs, ys], None, _seed000_args, "f16", quick)


def all_programs():
    m42, an42 = (4, 2), ("data", "model")
    m24, an_xy = (2, 4), ("x", "y")
    m8, an_x = (8,), ("x",)
    progs = [
        Program("mlp_step_dp_tp", "MLP SGD step d64 h256 b32, data 4 x model 2", _plain(_mlp_step), m42, an42,
                [P(None, "model"), P("model"), P("model", None), P("data"), P("data")],
                (P(None, "model"), P("model"), P("model", None), P()), _mlp_args, quick=True),
        Program("mlp_step_open_out", "MLP SGD step, out_shardings left out", _plain(_mlp_step), m42, an42,
                [P(None, "model"), P("model"), P("model", None), P("data"), P("data")], None, _mlp_args),
        Program("transformer_fwd", "transformer block fwd b4 s16 d32 h4, data 4 x model 2", _plain(_block),
                m42, an42, _BLOCK_SPECS, P("data"), _block_args),
        Program("transformer_grad", "transformer block weight gradients", _plain(_block_grad), m42, an42,
                _BLOCK_SPECS, None, _block_args),
        Program("cnn_fwd", "CNN 2 conv + maxpool + dense, batch 8 over x", _plain(_cnn), m8, an_x,
                [P("x"), P(), P(), P()], None, lambda: _cnn_args()[:4]),
        Program("cnn_step", "CNN SGD step, batch over x, conv channels over y", _plain(_cnn_step), m24, an_xy,
                [P("x"), P(None, None, None, "y"), P(None, None, "y", None), P(), P("x")], None, _cnn_args),
        Program("embed_vocab", "embedding lookup, table f32[64,16] sharded on vocab", 
                _plain(lambda t, i: jnp.take(t, i, axis=0)), m8, an_x, [P("x", None), P()], None,
                lambda: [_rand((EV, ED), 30), _ids((8, 4), EV, 31)], quick=True),
        Program("embed_ids", "embedding lookup, ids sharded on batch, table on dim", 
                _plain(lambda t, i: jnp.take(t, i, axis=0)), m24, an_xy, [P(None, "y"), P("x")], None,
                lambda: [_rand((EV, ED), 32), _ids((8, 4), EV, 33)]),
        Program("embed_grad", "embedding gradient (scatter-add), table sharded on vocab", _plain(_embed_grad),
                m8, an_x, [P("x", None), P(), P()], None,
                lambda: [_rand((EV, ED), 34), _ids((8, 4), EV, 35), _rand((8, 4, ED), 36)]),
        Program("embed_step", "embedding SGD step (gather + scatter-add), table sharded on vocab",
                _plain(_embed_step), m8, an_x, [P("x", None), P(), P()], P("x", None),
                lambda: [_rand((EV, ED), 37), _ids((8, 4), EV, 38), _rand((8, 4, ED), 39)]),
        Program("xent_vocab", "softmax cross-entropy, logits sharded on vocab, labels on batch",
                _plain(jax.value_and_grad(_xent)), m24, an_xy, [P("x", "y"), P("x")], None,
                lambda: [_rand((16, 64), 80), _ids((16,), 64, 81)]),
        Program("take_along_axis", "take_along_axis (gather with batch dims), rows sharded",
                _plain(lambda x, i: jnp.take_along_axis(x, i, axis=1) * 2.0), m8, an_x, [P("x", None), P("x", None)],
                None, lambda: [_rand((16, 32), 82), _ids((16, 5), 32, 83)]),
        Program("scatter_ids_sharded", "scatter-add with sharded indices into a replicated table",
                _plain(_scatter_add), m8, an_x, [P("x"), P("x", None)], None,
                lambda: [_ids((32,), EV, 84), _rand((32, ED), 85)]),
        Program("one_hot_matmul", "one_hot(ids) @ table, ids on batch, table on dim",
                _plain(lambda i, t: jax.nn.one_hot(i, EV) @ t), m24, an_xy, [P("x"), P(None, "y")], None,
                lambda: [_ids((16,), EV, 86), _rand((EV, ED), 87)]),
        Program("top_k", "lax.top_k(k=4) along an unsharded dim, rows sharded",
                _plain(lambda x: jax.lax.top_k(x, 4)), m8, an_x, [P("x", None)], None, lambda: [_rand((16, 32), 88)]),
        Program("cumsum_sharded", "cumsum along the sharded dim", _plain(lambda x: jnp.cumsum(x, axis=0)), m8, an_x,
                [P("x", None)], None, lambda: [_rand((32, 4), 89)]),
        Program("conv_spatial", "3x3 conv + 2x2 max pool, image height sharded over x",
                _plain(lambda x, w: jax.lax.reduce_window(_conv_nhwc(x, w), -jnp.inf, jax.lax.max, (1, 2, 2, 1),
                                                          (1, 2, 2, 1), "VALID")),
                m8, an_x, [P(None, "x"), P()], None, lambda: [_rand((2, 32, 8, 3), 90), _rand((3, 3, 3, 4), 91)]),
        Program("while_dus", "fori_loop writing rows into a buffer sharded on them",
                _plain(lambda x: jax.lax.fori_loop(0, 8, lambda i, b: b.at[2 * i].set(x[i] * 2.0 + i), jnp.zeros((16, 4)))),
                m8, an_x, [P("x", None)], P("x", None), lambda: [_rand((8, 4), 92)]),
        Program("batched_matmul", "einsum bij,bjk->bik, batch over x, j over y",
                _plain(lambda a, b: jnp.einsum("bij,bjk->bik", a, b)), m24, an_xy, [P("x", None, "y"), P("x", "y", None)],
                None, lambda: [_rand((4, 8, 16), 93), _rand((4, 16, 8), 94)]),
        Program("iota_mask", "where(row index < 5, x, 0) and slices x[3:13], x[::2] of a sharded dim",
                _plain(lambda x: (jnp.where(jnp.arange(16)[:, None] < 5, x, 0.0), x[3:13] + 1.0, x[::2] * 3.0)),
                m8, an_x, [P("x", None)], None, lambda: [_rand((16, 4), 95)]),
        Program("stack_split", "stack on a new dim and split along the sharded one",
                _plain(lambda a, b: (jnp.stack([a, b], axis=1), *jnp.split(a, [4], axis=0))), m8, an_x,
                [P("x"), P("x")], None, lambda: [_rand((16, 4), 96), _rand((16, 4), 97)]),
        Program("mesh_2x2", "gelu(x @ w1) @ w2 on 4 devices (mesh 2 x 2)",
                _plain(lambda x, w1, w2: jax.nn.gelu(x @ w1) @ w2), (2, 2), an_xy,
                [P("x", None), P(None, "y"), P("y", None)], None,
                lambda: [_rand((16, 32), 98), _rand((32, 64), 99, scale=0.2), _rand((64, 32), 100, scale=0.1)]),
        Program("scan_rnn", "lax.scan RNN, 6 steps, batch over x", _plain(_scan_rnn), m8, an_x,
                [P("x"), P(None, "x"), P()], None,
                lambda: [_rand((16, 8), 40), _rand((6, 16, 8), 41), _rand((8, 8), 42, scale=0.3)]),
        Program("fori_loop", "fori_loop tanh(h @ w), h over x, w over y", _plain(_fori), m24, an_xy,
                [P("x", None), P(None, "y")], None, lambda: [_rand((8, 16), 43), _rand((16, 16), 44, scale=0.25)]),
        Program("reduce_sum_max", "sum and max over a sharded dim", 
                _plain(lambda x: (x.sum(0), x.max(1), x.sum())), m24, an_xy, [P("x", "y")], None,
                lambda: [_rand((16, 32), 50)], quick=True),
        Program("mean_var", "mean / variance over sharded dims (moments)",
                _plain(lambda x: (x.mean(0), x.var(0), x.mean(), jnp.std(x, axis=1))), m24, an_xy,
                [P("x", "y")], None, lambda: [_rand((16, 32), 51)]),
        Program("argmax", "argmax over a sharded dim", _plain(lambda x: jnp.argmax(x, axis=1)), m8, an_x,
                [P(None, "x")], None, lambda: [_rand((4, 64), 52)]),
        Program("sort_other_dim", "sort along an unsharded dim, other dim sharded",
                _plain(lambda x: jnp.sort(x, axis=1)), m8, an_x, [P("x", None)], None, lambda: [_rand((16, 32), 53)]),
        Program("sort_sharded_dim", "sort along the sharded dim", _plain(lambda x: jnp.sort(x, axis=0)),
                m8, an_x, [P("x", None)], None, lambda: [_rand((32, 4), 54)]),
        Program("uneven", "uneven f32[10,7] in P('a','b') on 4 x 2: tanh, matmul, sum, reshard",
                lambda mesh: lambda a, w: _uneven(mesh, a, w), m42, ("a", "b"), [P("a", "b"), P()],
                None, lambda: [_rand((12, 8), 55), _rand((7, 5), 56)]),
        Program("reshard_yx_xy", "resharding chain P('y','x') -> P('x','y') -> P('y', None)",
                lambda mesh: lambda a: _wsc(mesh, _wsc(mesh, a * 2.0, P("x", "y")) + 1.0, P("y", None)),
                m24, an_xy, [P("y", "x")], P("y", None), lambda: [_rand((16, 16), 60)], quick=True),
        Program("transpose_sharded", "transpose of sharded dims, result kept P('x','y')",
                lambda mesh: lambda a: _wsc(mesh, a.T + 1.0, P("x", "y")), m24, an_xy, [P("x", "y")],
                P("x", "y"), lambda: [_rand((16, 8), 61)]),
        Program("reshape_sharded", "reshape [16,24] P('x','y') -> [16,4,6] -> [64,6]",
                lambda mesh: lambda a: (a.reshape(16, 4, 6) * 2.0, a.reshape(64, 6).sum(1)), m24, an_xy,
                [P("x", "y")], None, lambda: [_rand((16, 24), 62)]),
        Program("concat_sharded", "concatenate along the sharded dim", _plain(lambda a, b: jnp.concatenate([a, b], 0) * 2.0),
                m8, an_x, [P("x"), P("x")], P("x"), lambda: [_rand((16, 4), 63), _rand((8, 4), 64)]),
        Program("pad_sharded", "pad the sharded dim (2 low, 6 high)",
                _plain(lambda a: jnp.pad(a, ((2, 6), (0, 0))) + 1.0), m8, an_x, [P("x")], P("x"),
                lambda: [_rand((16, 4), 65)]),
        Program("dynamic_slice", "dynamic-slice and dynamic-update-slice on the sharded dim",
                _plain(lambda a, i: (jax.lax.dynamic_slice_in_dim(a, i, 8, 0),
                                     jax.lax.dynamic_update_slice_in_dim(a, jnp.ones((4, 4)), i + 3, 0))),
                m8, an_x, [P("x"), P()], None, lambda: [_rand((32, 4), 66), np.int32(5)]),
        Program("reverse_roll", "reverse and roll along the sharded dim",
                _plain(lambda a: (jnp.flip(a, 0) + 1.0, jnp.roll(a, 3, axis=0))), m8, an_x, [P("x")], None,
                lambda: [_rand((16, 4), 67)]),
        Program("smap_psum", "shard_map psum over x of a matmul (y automatic)",
                lambda mesh: _smap(mesh, lambda a, b: jax.lax.psum(a @ b, "x"), (P(None, "x"), P("x", None)),
                                   P(), axis_names={"x"}),
                m24, an_xy, [P(None, "x"), P("x", None)], None, lambda: [_rand((8, 16), 70), _rand((16, 8), 71)],
                quick=True),
        Program("smap_all_gather", "shard_map all_gather (tiled) over y",
                lambda mesh: _smap(mesh, lambda a: jax.lax.all_gather(a * 2.0, "y", axis=1, tiled=True),
                                   P("x", "y"), P("x", None), check_vma=False),
                m24, an_xy, [P("x", "y")], None, lambda: [_rand((8, 16), 72)]),
        Program("smap_ppermute", "shard_map ppermute ring over x",
                lambda mesh: _smap(mesh, lambda a: jax.lax.ppermute(a, "x", [(i, (i + 1) % 8) for i in range(8)]),
                                   P("x"), P("x")),
                m8, an_x, [P("x")], None, lambda: [_rand((16, 4), 73)]),
        Program("smap_all_to_all", "shard_map all_to_all over y (split 1, concat 0)",
                lambda mesh: _smap(mesh, lambda a: jax.lax.all_to_all(a, "y", 1, 0, tiled=True),
                                   P("x", "y"), P(("x", "y"), None), check_vma=False),
                m24, an_xy, [P("x", "y")], None, lambda: [_rand((8, 32), 74)]),
        Program("smap_psum_scatter", "shard_map psum_scatter over x inside a jit with other ops",
                lambda mesh: lambda a: 2.0 * _smap(mesh, lambda v: jax.lax.psum_scatter(jnp.tanh(v), "x", tiled=True),
                                                  P(None, "y"), P("x", "y"))(a + 1.0),
                m24, an_xy, [P(None, "y")], None, lambda: [_rand((8, 16), 75)]),
        Program("smap_wsc_inside", "partially manual shard_map (x) with a constraint on y inside",
                lambda mesh: _smap(mesh, lambda u: jax.lax.with_sharding_constraint(u * 2.0, P(None, "y")) + 1.0,
                                   P("x"), P("x"), axis_names={"x"}),
                m24, an_xy, [P("x", "y")], P("x", "y"), lambda: [_rand((8, 8), 78)], quick=True, context_mesh=True),
        Program("smap_nested", "nested shard_map: x outside, psum over y inside",
                lambda mesh: _smap(mesh, lambda v: _smap(None, lambda u: jax.lax.psum(u, "y"), P(None, "y"), P(),
                                                         axis_names={"y"})(v),
                                   P("x"), P("x"), axis_names={"x"}),
                m24, an_xy, [P("x", "y")], P("x"), lambda: [_rand((8, 8), 79)], quick=True, context_mesh=True),
        Program("bf16_matmul", "bf16 matmul [64,128] x [128,64], 4 x 2",
                _plain(lambda a, b: jnp.tanh(a @ b)), m42, ("a", "b"), [P("a", "b"), P("b", None)], None,
                lambda: [_rand((64, 128), 76, "bf16"), _rand((128, 64), 77, "bf16", scale=0.1)], "bf16"),
        _seed000("outer", P("b", "a"), P("b", None), quick=True),
        _seed000("full", P("b", "a"), P("b", "a")),
        _seed000("inner", P(None, "a"), P("a", None)),
        _seed000("mismatch", P(None, "a"), P("b", None)),
    ]
    from programs_more import more_programs  # noqa: E402  (it imports this module's helpers)
    from programs_bytes import bytes_programs  # noqa: E402
    from programs_heldout import heldout_programs  # noqa: E402  (held out: names ho_, --only ho_)
    from programs_recent import recent_programs  # noqa: E402
    from programs_api import api_programs  # noqa: E402
    from programs_api2 import api2_programs  # noqa: E402
    from programs_numerics import numerics_programs  # noqa: E402
    from programs_models import models_programs  # noqa: E402
    from programs_probe5 import probe5_programs  # noqa: E402  (probes: names p5_, --only p5_)
    from programs_probe6a import probe6a_programs  # noqa: E402  (probes: names p6a_, --only p6a_)
    from programs_probe6b import probe6b_programs  # noqa: E402  (probes: names p6b_, --only p6b_)
    from programs_probe7a import probe7a_programs  # noqa: E402  (probes: names p7a_, --only p7a_)
    from programs_probe7b import probe7b_programs  # noqa: E402  (probes: names p7b_, --only p7b_)
    from programs_probe8a import probe8a_programs  # noqa: E402  (probes: names p8a_, --only p8a_)
    from programs_probe8b import probe8b_programs  # noqa: E402  (probes: names p8b_, --only p8b_)
    from programs_probe8c import probe8c_programs  # noqa: E402  (probes: names p8c_, --only p8c_)
    return (progs + more_programs() + bytes_programs() + recent_programs() + api_programs() + api2_programs()
            + numerics_programs() + models_programs() + heldout_programs() + probe5_programs()
            + probe6a_programs() + probe6b_programs() + probe7a_programs() + probe7b_programs()
            + probe8a_programs() + probe8b_programs() + probe8c_programs())
