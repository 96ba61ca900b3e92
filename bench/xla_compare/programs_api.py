"""Programs for bench/xla_compare of how users drive JAX's sharding API and collectives: partially
manual and nested shard_maps (a psum, a ppermute ring in a loop, a reduce-scatter over a 3-axis
mesh), check_vma=False and pcast, collectives on non-leading axes (all_gather tiled and stacked,
psum_scatter), ppermute to both ring neighbours, integer and boolean reductions, constraints with
UNCONSTRAINED dims, chains of reshards, constraints on tuples and inside vmap(spmd_axis_name),
donated arguments, out_shardings against propagation, scalar, zero-size, uint8 and bool arrays,
a 3-axis mesh with a size-1 axis, 2x3 and 16-device meshes, uneven shardings on two dims, meshes
whose device order is permuted or reversed, nested jits (call ops) with named_call / named_scope,
and cond / while / scan carries of different shardings. (ragged_all_to_all is left out: XLA's CPU
backend does not run it.)
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from programs import Program, _ids, _plain, _rand, _smap, _wsc

U = P.UNCONSTRAINED


# ---- shard_map ------------------------------------------------------------------------------------
def _partial_manual_mlp(mesh):
    # Megatron MLP manual over "model", "data" left to the partitioner (with a constraint inside).
    def body(x, w1, w2):
        h = jax.nn.relu(x @ w1)
        h = jax.lax.with_sharding_constraint(h, P("data", None))
        return jax.lax.psum(h @ w2, "model")
    return _smap(mesh, body, (P(), P(None, "model"), P("model", None)), P(), axis_names={"model"})


def _nested_ring(mesh):
    # Outer shard_map over "data", inner over "model": ppermute ring over model, psum over data.
    def inner(u):
        n = jax.lax.axis_size("model")
        nxt = jax.lax.ppermute(u, "model", [(i, (i + 1) % n) for i in range(n)])
        return u + 0.5 * nxt

    def outer(v):
        r = _smap(None, inner, P(None, "model"), P(None, "model"), axis_names={"model"})(v)
        return r, jax.lax.psum(r.sum(0, keepdims=True), "data")
    return _smap(mesh, outer, P("data"), (P("data"), P()), axis_names={"data"})


def _int_bool_reduce(mesh):
    # Counts and flags across devices: psum of int32, pmax / pmin of ints, "any" of a bool.
    def body(ids, x):
        pos = jax.lax.psum(jnp.sum(x > 0, dtype=jnp.int32), "x")
        hi = jax.lax.pmax(jnp.max(ids), "x")
        lo = jax.lax.pmin(jnp.min(ids, axis=0), "x")
        anyneg = jax.lax.pmax((x < -2.0).any().astype(jnp.int32), "x").astype(jnp.bool_)
        hist = jax.lax.psum(jnp.zeros((8,), jnp.int32).at[ids.ravel() % 8].add(1), "x")
        return pos, hi, lo, anyneg, hist
    return _smap(mesh, body, (P("x"), P("x")), (P(), P(), P(), P(), P()))


def _gather_inner_axes(mesh):
    # all_gather on a non-leading axis, tiled and stacked, over one axis of a 2-axis mesh.
    def body(a):
        t = jax.lax.all_gather(a, "y", axis=1, tiled=True)           # [2, 8, 4]
        s = jax.lax.all_gather(a.sum(1), "y", axis=1, tiled=False)   # [2, 4, 4]
        return t * 2.0, s
    return _smap(mesh, body, P("x", "y"), (P("x"), P("x")), check_vma=False)


def _scatter_inner_dim(mesh):
    # Reduce-scatter of gradients along dim 1 (tiled) and dim 2 (untiled).
    def body(g):
        a = jax.lax.psum_scatter(g, "x", scatter_dimension=1, tiled=True)        # [4, 2, 8]
        b = jax.lax.psum_scatter(g[:, :8, :2], "x", scatter_dimension=2)          # [4, 8]
        return a, b
    return _smap(mesh, body, P(None, None, "y"), (P(None, "x", "y"), P(None, "y")), check_vma=False)


def _ring_both_ways(mesh):
    # 1-D halo exchange: each shard sends its edge rows to both neighbours (periodic).
    def body(u):
        n = jax.lax.axis_size("x")
        left = jax.lax.ppermute(u[-1:], "x", [(i, (i + 1) % n) for i in range(n)])
        right = jax.lax.ppermute(u[:1], "x", [(i, (i - 1) % n) for i in range(n)])
        p = jnp.concatenate([left, u, right], 0)
        return 0.25 * p[:-2] + 0.5 * p[1:-1] + 0.25 * p[2:]
    return _smap(mesh, body, P("x"), P("x"))


def _partial3(mesh):
    # 2 x 2 x 2 mesh, shard_map manual over a and c, b automatic: reduce-scatter over a, a swap
    # over c, a max over both. (An all_gather here makes XLA's GSPMD partitioner abort.)
    def body(x, w):
        h = x @ w                                                        # partial sums over a
        h = jnp.tanh(jax.lax.psum_scatter(h, "a", scatter_dimension=1, tiled=True))
        s = jax.lax.ppermute(h, "c", [(0, 1), (1, 0)])
        return h + 0.5 * s, jax.lax.pmax(jnp.max(h, axis=0, keepdims=True), ("a", "c"))
    return _smap(mesh, body, (P("c", "a"), P("a", None)), (P("c", "a"), P(None, "a")), axis_names={"a", "c"},
                 check_vma=False)


def _ring_loop(mesh):
    # Ring-attention-style loop in a shard_map manual over x (y automatic): a fori_loop passing
    # key blocks around the ring with ppermute and accumulating scores.
    def body(q, k):
        n = jax.lax.axis_size("x")
        perm = [(i, (i + 1) % n) for i in range(n)]

        def step(i, c):
            acc, kb = c
            acc = acc + jnp.tanh(q @ kb.T).sum(-1, keepdims=True)
            return acc, jax.lax.ppermute(kb, "x", perm)
        acc, _ = jax.lax.fori_loop(0, n, step, (jnp.zeros((q.shape[0], 1), q.dtype), k))
        return q * acc
    return _smap(mesh, body, (P("x"), P("x")), P("x"), axis_names={"x"}, check_vma=False)


def _pcast_varying(mesh):
    # check_vma=True: a replicated weight cast to varying before a ring shift over x.
    def body(x, w):
        wv = jax.lax.pcast(w, "x", to="varying")
        n = jax.lax.axis_size("x")
        shifted = jax.lax.ppermute(wv * (jax.lax.axis_index("x") + 1).astype(w.dtype), "x",
                                   [(i, (i + 1) % n) for i in range(n)])
        return x @ shifted, jax.lax.psum(shifted, "x")
    return _smap(mesh, body, (P("x"), P()), (P("x"), P()))


def _vmap_wsc(mesh):
    # vmap over a batch sharded on x (spmd_axis_name) of a per-example function that constrains
    # its hidden features to y.
    def per_example(xi, w):
        h = jax.lax.with_sharding_constraint(jnp.tanh(xi @ w), P("y"))
        return h * jax.nn.softmax(h)
    return lambda x, w: jax.vmap(per_example, in_axes=(0, None), spmd_axis_name="x")(x, w)


# ---- with_sharding_constraint ------------------------------------------------------------------------
def _unconstrained(mesh):
    def f(x, w):
        h = _wsc(mesh, x @ w, P("data", U))
        h = jax.nn.gelu(h)
        return _wsc(mesh, h.sum(-1), P(U)), _wsc(mesh, h.T, P(U, "data"))
    return f


def _reshard_chain(mesh):
    def f(x):
        a = _wsc(mesh, x * 2.0, P("x", None))
        b = _wsc(mesh, jnp.sin(a), P(None, ("x", "y")))
        c = _wsc(mesh, b + a.mean(0), P("y", "x"))
        d = _wsc(mesh, c.T @ c, P(("y", "x"), None))
        return _wsc(mesh, d / 16.0, P())
    return f


def _tuple_wsc(mesh):
    def f(x, y):
        a, b = jnp.tanh(x), y @ y.T
        a, b = jax.lax.with_sharding_constraint(
            (a, b), (jax.sharding.NamedSharding(mesh, P(None, "y")), jax.sharding.NamedSharding(mesh, P("x", "y"))))
        return a.sum(0) + b.sum(1), b
    return f


# ---- jit arguments and outputs ----------------------------------------------------------------------
def _sgd_donated(w, b, x, y):
    def loss(p):
        return jnp.mean((jnp.tanh(x @ p[0] + p[1]) - y) ** 2)
    l, g = jax.value_and_grad(loss)((w, b))
    return w - 0.1 * g[0], b - 0.1 * g[1], l


def _scalars(x, ids):
    logits = x @ x.T
    return (jnp.sum(logits), jnp.max(x), jnp.argmax(x.ravel()).astype(jnp.int32),
            jnp.mean(ids == 3), jnp.int32(7) + ids.sum())


def _zero_size(mesh):
    def f(x, e):
        z = x[:, :0]                                 # f32[16, 0]
        empty_rows = _wsc(mesh, x[:0] * 2.0, P(None, "x"))
        return jnp.concatenate([x, z], 1) + 1.0, empty_rows, e.sum(0), e * 3.0, z.sum()
    return f


def _u8_bool(img, mask, lut):
    # uint8 image, bool mask: masked per-row histograms of a quantized image.
    q = (img // 32).astype(jnp.int32)
    x = jnp.where(mask, lut[q], 0).astype(jnp.uint8)
    counts = jnp.sum(mask, axis=1, dtype=jnp.int32)
    return x, counts, jnp.logical_xor(mask, img > 128), (img.astype(jnp.int32) * 3).astype(jnp.uint8)


# ---- meshes ---------------------------------------------------------------------------------------
def _mesh3(mesh):
    def f(x, w1, w2):
        h = _wsc(mesh, jax.nn.relu(x @ w1), P(("data", "seq"), "model"))
        return h @ w2, jnp.mean(h, axis=(0, 1))
    return f


def _mesh2x3_uneven(mesh):
    # Rows 10 over a (3), cols 7 over b (2) ... on a 2 x 3 mesh: uneven on both dims at once.
    def f(a, w):
        x = _wsc(mesh, a[:10, :7], P("b", "a"))
        y = jnp.tanh(x) @ w
        return _wsc(mesh, y, P("a", "b")), x.max(0), _wsc(mesh, x.T * 2.0, P("b", "a"))
    return f


def _perm_mesh_smap(mesh):
    def body(a, b):
        s = jax.lax.psum(a @ b, "y")
        n = jax.lax.axis_size("x")
        r = jax.lax.ppermute(s, "x", [(i, (i + 1) % n) for i in range(n)])
        g = jax.lax.all_gather(r, "y", axis=1, tiled=True)
        return g, (jax.lax.axis_index("x") * 10 + jax.lax.axis_index("y")).reshape(1)
    return _smap(mesh, body, (P("x", "y"), P("y", None)), (P("x", None), P(("x", "y"))), check_vma=False)


def _perm_mesh_auto(mesh):
    def f(x, w):
        h = jnp.tanh(x @ w)
        return _wsc(mesh, h, P("y", "x")), h.sum(0)
    return f


# ---- transformations and control flow -------------------------------------------------------------
@jax.jit
def _dense_jit(x, w):
    return jax.nn.gelu(x @ w)


@jax.named_call
def _norm_named(x):
    with jax.named_scope("rms"):
        return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6)


def _nested_jits(x, w1, w2):
    h = _norm_named(_dense_jit(x, w1))
    return _dense_jit(h, w2), _dense_jit(h * 0.5, w2)


def _cond_while_scan(mesh):
    def f(a, b, xs, flag):
        # cond with operands of different shardings
        a, b = jax.lax.cond(flag[0] > 0, lambda u, v: (u * 2.0, v + 1.0), lambda u, v: (u - 1.0, v * 0.5), a, b)

        # while with two carries sharded differently (rows on x, columns on y) and a counter
        def cond(c):
            return c[2] < 3

        def body(c):
            u, v, i = c
            u = _wsc(mesh, jnp.tanh(u @ v), P("x", None))
            v = _wsc(mesh, v * 0.9 + u.mean(), P(None, "y"))
            return u, v, i + 1
        a, b, _ = jax.lax.while_loop(cond, body, (a, b, 0))

        # scan whose carry is resharded in the body, scanned inputs sharded on their batch
        def step(h, x):
            h = _wsc(mesh, jnp.tanh(h + x @ b), P(None, "y"))
            return h, h.sum(1)
        h, ys = jax.lax.scan(step, a, xs)
        return h, ys, b
    return f


def api_programs():
    m24, an_xy = (2, 4), ("x", "y")
    m42, an_dm = (4, 2), ("data", "model")
    m8, an_x = (8,), ("x",)
    return [
        Program("api_smap_partial_mlp", "partially manual shard_map (model) MLP, psum, constraint on data inside",
                _partial_manual_mlp, m42, an_dm, [P("data"), P(None, "model"), P("model", None)], None,
                lambda: [_rand((16, 16), 700), _rand((16, 32), 701, scale=0.25), _rand((32, 16), 702, scale=0.2)],
                context_mesh=True),
        Program("api_smap_nested_ring", "nested shard_map: data outside, ppermute ring over model inside, psum",
                _nested_ring, m42, an_dm, [P("data", "model")], None, lambda: [_rand((8, 8), 704)],
                context_mesh=True, quick=True),
        Program("api_psum_int_bool", "psum of int32 counts, pmax / pmin of ints, any() of bools, int histogram",
                _int_bool_reduce, m8, an_x, [P("x"), P("x")], None,
                lambda: [_ids((16, 4), 50, 705), _rand((16, 4), 706)]),
        Program("api_all_gather_axis1", "all_gather over y on axis 1 tiled and stacked (tiled=False)",
                _gather_inner_axes, m24, an_xy, [P("x", "y")], None, lambda: [_rand((4, 8, 4), 707)]),
        Program("api_psum_scatter_dim", "psum_scatter with scatter_dimension 1 (tiled) and 2 (untiled)",
                _scatter_inner_dim, m24, an_xy, [P(None, None, "y")], None, lambda: [_rand((4, 16, 32), 708)]),
        Program("api_ppermute_halo", "ppermute to both ring neighbours (halo exchange), 3-point stencil",
                _ring_both_ways, m8, an_x, [P("x")], None, lambda: [_rand((32, 4), 710)]),
        Program("api_smap_partial3", "2x2x2 mesh, shard_map manual over a and c (b automatic): psum_scatter, ppermute, pmax",
                _partial3, (2, 2, 2), ("a", "b", "c"), [P("c", "a"), P("a", "b")], None,
                lambda: [_rand((8, 16), 760), _rand((16, 8), 761, scale=0.25)], context_mesh=True, quick=True),
        Program("api_smap_ring_loop", "fori_loop with ppermute ring inside a shard_map manual over x (y automatic)",
                _ring_loop, m24, an_xy, [P("x", "y"), P("x", "y")], None,
                lambda: [_rand((8, 8), 763), _rand((8, 8), 764)], context_mesh=True, quick=True),
        Program("api_smap_pcast", "check_vma shard_map: pcast to varying, ring shift, psum to replicated",
                _pcast_varying, m8, an_x, [P("x"), P()], None,
                lambda: [_rand((16, 8), 765), _rand((8, 8), 766)]),
        Program("api_vmap_wsc_inside", "vmap(spmd_axis_name=x) of a function constraining its features to y",
                _vmap_wsc, m24, an_xy, [P("x"), P()], None,
                lambda: [_rand((8, 16), 769), _rand((16, 16), 770)], context_mesh=True),
        Program("api_wsc_unconstrained", "with_sharding_constraint with P.UNCONSTRAINED dims",
                _unconstrained, m42, an_dm, [P("data"), P(None, "model")], None,
                lambda: [_rand((16, 16), 713), _rand((16, 32), 714, scale=0.25)], quick=True),
        Program("api_wsc_reshard_chain", "four constraints resharding mid-program, replicated at the end",
                _reshard_chain, m24, an_xy, [P("y", "x")], None, lambda: [_rand((16, 16), 715)]),
        Program("api_wsc_tuple", "with_sharding_constraint on a tuple of arrays",
                _tuple_wsc, m24, an_xy, [P("x"), P("x", "y")], None,
                lambda: [_rand((8, 16), 716), _rand((16, 16), 717)]),
        Program("api_donate_sgd", "SGD step with donate_argnums=(0, 1) (input_output_alias)",
                _plain(_sgd_donated), m24, an_xy, [P(None, "y"), P("y"), P("x"), P("x", "y")],
                (P(None, "y"), P("y"), P()),
                lambda: [_rand((16, 32), 718, scale=0.25), _rand((32,), 719), _rand((16, 16), 720),
                         _rand((16, 32), 721)], donate_argnums=(0, 1)),
        Program("api_out_shardings_flip", "out_shardings against propagation: transposed and replicated outputs",
                _plain(lambda x, w: (jnp.tanh(x @ w), x @ w, (x @ w).sum(0))), m24, an_xy,
                [P("x", None), P(None, "y")], (P("y", "x"), P(), P("x")),
                lambda: [_rand((16, 16), 722), _rand((16, 16), 723)]),
        Program("api_scalar_outputs", "scalar outputs: sum, max, argmax, mean of bools, int sum",
                _plain(_scalars), m24, an_xy, [P("x", "y"), P("y", "x")], None,
                lambda: [_rand((8, 16), 724), _ids((8, 8), 5, 725)]),
        Program("api_zero_size", "zero-size arrays: empty slices, concat of an empty, sharded f32[0,8] input",
                _zero_size, m8, an_x, [P("x"), P(None, "x")], None,
                lambda: [_rand((16, 8), 726), np.zeros((0, 8), np.float32)]),
        Program("api_u8_bool", "uint8 image and bool mask sharded: lut lookup, counts, xor",
                _plain(_u8_bool), m24, an_xy, [P("x", "y"), P("x", "y"), P()], None,
                lambda: [np.random.default_rng(727).integers(0, 256, (8, 16)).astype(np.uint8),
                         np.random.default_rng(728).random((8, 16)) > 0.4,
                         np.random.default_rng(729).integers(0, 256, (8,)).astype(np.uint8)]),
        Program("api_mesh3_size1", "3-axis mesh data 2 x seq 1 x model 4 with the size-1 axis in specs",
                _mesh3, (2, 1, 4), ("data", "seq", "model"),
                [P(("data", "seq")), P(None, "model"), P("model", "seq")], (P("seq", None), P()),
                lambda: [_rand((8, 16), 730), _rand((16, 32), 731, scale=0.25), _rand((32, 8), 732, scale=0.2)]),
        Program("api_mesh2x3_uneven", "2 x 3 mesh (6 devices), f32[10,7] uneven on both dims",
                _mesh2x3_uneven, (2, 3), ("a", "b"), [P("a", "b"), P()], None,
                lambda: [_rand((12, 12), 733), _rand((7, 5), 734)]),
        Program("api_mesh16", "16 devices, mesh 2 x 2 x 4: MLP with data, fsdp and tensor axes",
                _plain(lambda x, w1, w2: (jax.nn.relu(x @ w1) @ w2, w1.sum())), (2, 2, 4), ("d", "f", "t"),
                [P(("d", "f")), P("f", "t"), P("t", "f")], None,
                lambda: [_rand((16, 16), 735), _rand((16, 32), 736, scale=0.25), _rand((32, 16), 737, scale=0.2)]),
        Program("api_mesh_perm_smap", "mesh of devices 0,2,4,6,1,3,5,7: psum, ppermute, all_gather, axis_index",
                _perm_mesh_smap, m24, an_xy, [P("x", "y"), P("y", None)], None,
                lambda: [_rand((8, 16), 738), _rand((16, 8), 739)], device_order=(0, 2, 4, 6, 1, 3, 5, 7)),
        Program("api_mesh_reversed", "mesh of devices 7..0: matmul and a reshard to P('y','x')",
                _perm_mesh_auto, m24, an_xy, [P("x", None), P(None, "y")], None,
                lambda: [_rand((16, 16), 740), _rand((16, 16), 741)], device_order=tuple(range(7, -1, -1))),
        Program("api_nested_jit_calls", "nested jax.jit (call ops) and named_call / named_scope",
                _plain(_nested_jits), m42, an_dm, [P("data"), P(None, "model"), P("model", None)], None,
                lambda: [_rand((16, 16), 744), _rand((16, 32), 745, scale=0.25), _rand((32, 16), 746, scale=0.2)]),
        Program("api_cond_while_scan", "cond, while and scan with carries sharded differently",
                _cond_while_scan, m24, an_xy, [P("x"), P(None, "y"), P(None, "x"), P()], None,
                lambda: [_rand((8, 8), 750), _rand((8, 8), 751, scale=0.3), _rand((4, 8, 8), 752),
                         np.array([1], np.int32)]),
    ]
