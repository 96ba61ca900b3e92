"""Probe programs for bench/xla_compare (names p8b_, `--only p8b_` runs them): the breadth of lax /
jnp operations with sharded operands at awkward places (the split dim the one the op works on),
uneven sizes and unusual parameters.

Convolutions: NCHW / OIHW with the height sharded, stride 2 and asymmetric explicit padding, then a
SAME stride-2 conv; 1-D NWC grouped (4 groups) and depthwise (rhs_dilation 2) convs with the channel
dim itself over 8; the kernel gradient of a grouped NCHW conv (batch_group_count) with the height
sharded; a 3-D NCDHW conv with the depth over 8 (stride, rhs dilation); conv_transpose with
transpose_kernel=True over an uneven width (13 over 8) and a stride (3, 2) NCHW one; input and
kernel gradients of a strided atrous NHWC conv with the height over 8; input channels over x and
output channels over y (the contraction split), chained; a kernel whose spatial dim is sharded;
mixed layouts (NWC / OIW / NCW, CHWN / HWOI / HNWC).
Windows: reduce_window max / min / sum / int max with padding, stride 3, window and base dilation
over an uneven dim (30 over 8); SAME average pooling excluding the padding (reduce_window of ones)
on H x W over 2 x 4 with its gradient and a max pool's (select_and_scatter_add); a variadic
reduce_window (max with its index).
Pads / rolls: jnp.pad symmetric / linear_ramp / maximum / minimum / mean (stat_length) on an
uneven sharded dim; lax.pad with negative low / high and interior padding on both sharded dims;
jnp.roll by traced shifts on two uneven sharded dims, static shifts past the size, lax.rev and flip;
rot90 / moveaxis on 2x2x2.
Resizes: jax.image.resize nearest / cubic / lanczos3 / lanczos5 (antialiased down) with the height
over 8; scale_and_translate with traced scale / translation, width over 8; repeat with
total_repeat_length and per-row repeats, tile, jnp.resize on the sharded dim.
Einsums: repeated indices (bii->bi, bii->b, iij->ij, ii->) with both copies sharded, a 4-operand
einsum with optimize='optimal', multi_dot, a three-vector outer product, tensordot over two
contracting dims sharded on crossed mesh axes, outer / inner / vdot / broadcasting matmul.
Indexing: take clip / wrap and take_along_axis fill along the sharded dim, advanced indexing with
broadcasting index arrays (and a slice between them), nonzero(size, fill_value) / argwhere /
extract of a 2-D sharded mask, .at[].apply / get(fill) / mul / min, dynamic_slice /
dynamic_update_slice at traced offsets (clamped) on two sharded dims, dynamic_index_in_dim, a
scatter along a sharded middle dim.
Reductions: lax.reduce with a max-|.| computation, a variadic (sum, max) reduce and an xor reduce;
ptp / median / quantile 'higher' / 'lower' on uneven dims; argmin keepdims, nanargmin / nanargmax,
argmax of bools and ints; count_nonzero / all / any, uint8 sums that wrap, int32 prod; reverse
cummax / cumlogsumexp / cumprod on an uneven dim over y.
Sorting: lax.sort of 4 operands num_keys=3 unstable along dim 0 on 2 x 4, jnp.sort / argsort
descending; vmapped searchsorted (compare_all right, sort left) with the table's rows and
columns sharded; top_k with k equal to the (uneven) dim; sort_complex, 3-key lexsort; unique
rows (axis=0, size).
Dtypes: bitcasts that add / remove a dim (f32 <-> u16 pairs, u8 quads -> f32) with the pair / quad
dim itself sharded; int16 / uint16 / uint8 wrapping arithmetic, shifts past the width, saturating
converts, popcount / clz, narrow div / rem by zero and MIN / -1; bool arithmetic and reductions;
bf16 / f16 chains accumulating in f32; complex64 elementwise and reductions along sharded dims.
Random: new-style typed keys split / fold_in in vmap over a sharded batch, key_data /
wrap_key_data, bits of uint8 / uint16; the 'rbg' implementation split / fold_in / bits /
permutation / choice(replace=False) / categorical; threefry permutation(axis=1, independent) and
choice(p, replace=False) along a sharded axis.
pmap inside jit (lowered to shard_map over its own mesh axis): psum / pmean / all_gather /
ppermute / axis_index with in_axes=1 / out_axes=1, a pmean'd data-parallel grad step with
broadcast (in_axes=None) params, out_axes=None and a vmap (in_axes=1) of a pmap.
More: dynamic_update_slice of an update sharded like the operand at a traced offset; gathers /
scatters with the table, ids and updates all over one axis; sort / argsort / top_k along an uneven
dim followed by slices; bf16 conv / dot with preferred_element_type=f32 over split contractions;
scatter modes clip / drop / promise_in_bounds; tril / triu / triu_indices / diagonal offsets on an
uneven 2-D array; one_hot with 13 classes over 4; a stable sort of a uint8 key with bool payloads;
lax.rng_bit_generator PHILOX / DEFAULT with constrained (and uneven) outputs; a 2-D variadic
reduce_window with padding; a conv with batch_group_count=4 written directly with the batch sharded;
a sort over merged axes and searchsorted into a table over (y, x), both uneven.

Left out or changed because XLA fails: a lax.reduce whose computation XLA's partitioner does not
recognise (max-|.|, bitwise xor) along a sharded dim is UNIMPLEMENTED ("Unsupported reduction
computation"), so reduce_custom_maxabs_xor runs those along a dim gathered first. Note: in
avgpool_exclpad_grad_2d JAX's sharded run is wrong (XLA merges the halo exchanges of the sum pool
and the max pool of the same operand and the max pool then sees 0 instead of -inf at the image's
edge); the harness holds xshard to the unsharded run.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from programs import Program, _ids, _plain, _rand, _wsc

M8, X = (8,), ("x",)
M24, XY = (2, 4), ("x", "y")
M222, XYZ = (2, 2, 2), ("x", "y", "z")

_conv = jax.lax.conv_general_dilated


# ==== convolutions ================================================================================
def _conv_nchw(x, w1, w2):
    # NCHW / OIHW: stride (2, 1) with asymmetric explicit padding, then SAME stride (1, 2).
    h = _conv(x, w1, (2, 1), ((2, 0), (1, 3)), dimension_numbers=("NCHW", "OIHW", "NCHW"))
    h = jax.nn.relu(h)
    o = _conv(h, w2, (1, 2), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return h, o, o.mean(axis=2)


def _conv_groups_channels(x, wg, wd):
    # 1-D NWC: 4 groups and a depthwise (16 groups, rhs dilation 2) conv, channels over 8.
    g = _conv(x, wg, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=4)
    d = _conv(jnp.tanh(g), wd, (2,), ((3, 1),), rhs_dilation=(2,), dimension_numbers=("NWC", "WIO", "NWC"),
              feature_group_count=16)
    return g, d


def _grouped_grads(x, w, y):
    # Kernel and input gradients of a 2-group NCHW conv (the kernel's one has batch_group_count).
    def loss(w, x):
        o = _conv(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"), feature_group_count=2)
        return jnp.mean((jnp.tanh(o) - y) ** 2)
    return jax.grad(loss, argnums=(0, 1))(w, x)


def _conv3d_ncdhw(x, w):
    o = _conv(x, w, (2, 1, 1), "SAME", rhs_dilation=(2, 1, 1), dimension_numbers=("NCDHW", "OIDHW", "NCDHW"))
    return o, jnp.max(o, axis=2)


def _conv_transpose_uneven(mesh):
    def f(x, w, x2, w2):
        xu = _wsc(mesh, x[:, :13], P(None, "x", None))                   # width 13 over 8
        a = jax.lax.conv_transpose(xu, w, (2,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"),
                                   transpose_kernel=True)
        b = jax.lax.conv_transpose(x2, w2, (3, 2), "VALID", dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return a, b
    return f


def _conv_grads_strided(x, w, y):
    def loss(x, w):
        o = _conv(x, w, (2, 2), ((2, 2), (1, 2)), rhs_dilation=(2, 2), dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.sum((o - y) ** 2)
    return jax.grad(loss, argnums=(0, 1))(x, w)


def _conv_cin_cout(x, w1, w2):
    h = jax.nn.gelu(_conv(x, w1, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
    o = _conv(h, w2, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return h, o


def _conv_kernel_spatial(x, w):
    o = _conv(x, w, (1, 1), ((1, 2), (2, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return o, jnp.sum(o, axis=(1, 2))


def _conv_mixed_layouts(x, w, x2, w2):
    a = _conv(x, w, (1,), "SAME", dimension_numbers=("NWC", "OIW", "NCW"))
    b = _conv(x2, w2, (2, 1), "SAME", dimension_numbers=("CHWN", "HWOI", "HNWC"))
    return a, b


# ==== windows ======================================================================================
def _windows_uneven(mesh):
    def f(x, xi):
        v = _wsc(mesh, x[:, :30], P(None, "x", None))                    # 30 over 8
        vi = _wsc(mesh, xi[:, :30], P(None, "x", None))
        mx = jax.lax.reduce_window(v, -jnp.inf, jax.lax.max, (1, 4, 1), (1, 3, 1), ((0, 0), (1, 2), (0, 0)))
        mn = jax.lax.reduce_window(v, jnp.inf, jax.lax.min, (1, 3, 2), (1, 2, 1), "SAME",
                                   window_dilation=(1, 2, 1))
        sm = jax.lax.reduce_window(v, 0.0, jax.lax.add, (1, 3, 1), (1, 1, 1), ((0, 0), (2, 1), (0, 0)),
                                   base_dilation=(1, 3, 1))
        im = jax.lax.reduce_window(vi, jnp.iinfo(jnp.int32).min, jax.lax.max, (1, 5, 1), (1, 4, 1), "SAME")
        return mx, mn, sm, im
    return f


def _avgpool_excl(x):
    def pools(x):
        win, st = (1, 3, 3, 1), (1, 2, 2, 1)
        s = jax.lax.reduce_window(x, 0.0, jax.lax.add, win, st, "SAME")
        n = jax.lax.reduce_window(jnp.ones_like(x), 0.0, jax.lax.add, win, st, "SAME")
        m = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, win, st, "SAME")
        return s / n, m

    def loss(x):
        a, m = pools(x)
        return jnp.sum(a * a) + jnp.sum(jnp.sin(m))
    a, m = pools(x)
    return a, m, jax.grad(loss)(x)


def _variadic_window_argmax(x):
    idx = jax.lax.broadcasted_iota(jnp.int32, x.shape, 1)

    def comp(a, b):
        av, ai = a
        bv, bi = b
        take_a = (av > bv) | ((av == bv) & (ai < bi))
        return jnp.where(take_a, av, bv), jnp.where(take_a, ai, bi)

    v, i = jax.lax.reduce_window((x, idx), (-jnp.inf, jnp.int32(0)), comp, (1, 4), (1, 2), ((0, 0), (1, 1)))
    return v, i


# ==== pads, rolls, flips ===========================================================================
def _pad_modes(mesh):
    def f(x):
        v = _wsc(mesh, x[:, :13], P(None, "x"))                           # 13 over 8
        pw = ((0, 0), (3, 5))
        return (jnp.pad(v, pw, mode="symmetric"), jnp.pad(v, pw, mode="linear_ramp", end_values=(-2.0, 4.0)),
                jnp.pad(v, pw, mode="maximum", stat_length=3), jnp.pad(v, pw, mode="minimum"),
                jnp.pad(v, ((0, 0), (6, 2)), mode="mean", stat_length=(4, 2)),
                jnp.pad(v, ((0, 0), (2, 7)), mode="reflect", reflect_type="odd"))
    return f


def _lax_pad_neg(x):
    a = jax.lax.pad(x, 0.5, ((-3, 5, 0), (2, -4, 0)))
    b = jax.lax.pad(x, -1.0, ((1, 2, 1), (0, 0, 2)))
    c = jax.lax.pad(x, 0.0, ((0, -5, 0), (-7, 3, 0)))
    return a, b, c * 2.0


def _roll_flip(mesh):
    def f(x, s):
        v = _wsc(mesh, x[:13, :10], P("x", "y"))                          # 13 over 2, 10 over 4
        a = jnp.roll(v, (s[0], s[1]), axis=(0, 1))
        b = jnp.roll(v, -37, axis=1) + jnp.roll(v, 29, axis=0)
        c = jax.lax.rev(v, (0, 1)) - jnp.flip(v, 0)
        d = jnp.roll(v, s[2])                                              # flattened roll
        return a, b, c, d
    return f


def _rot_moveaxis(x):
    return jnp.rot90(x, 1, axes=(1, 2)), jnp.rot90(x, 3, axes=(0, 2)) * 2.0, jnp.moveaxis(x, 0, 2) + 1.0


# ==== resizes =====================================================================================
def _resize_methods(x):
    n, h, w, c = x.shape
    a = jax.image.resize(x, (n, 40, 24, c), "nearest")
    b = jax.image.resize(x, (n, 13, 20, c), "cubic")
    d = jax.image.resize(x, (n, 24, 24, c), "lanczos3")
    e = jax.image.resize(x, (n, 7, 9, c), "lanczos5", antialias=True)
    return a, b, d, e


def _scale_translate(x, sc, tr):
    n, h, w, c = x.shape
    a = jax.image.scale_and_translate(x, (n, 20, 28, c), (1, 2), sc, tr, "linear")
    b = jax.image.scale_and_translate(x, (n, 10, 12, c), (1, 2), sc * 0.5, -tr, "cubic", antialias=True)
    return a, b


def _repeat_tile(mesh):
    def f(x, reps):
        a = jnp.repeat(x, reps, axis=0, total_repeat_length=40)           # per-row repeats
        b = jnp.repeat(x, 3, axis=1)
        c = jnp.tile(x, (2, 3))
        d = jnp.resize(x[:, 0], (37,))
        e = _wsc(mesh, jnp.repeat(x[:7], 2, axis=0, total_repeat_length=13), P("x"))
        return a, b, c, d, e
    return f


# ==== einsums =====================================================================================
def _einsum_repeated(x3, x2, x3b):
    # x3 [4,16,16] both i copies sharded; x2 [16,16]; x3b [16,16,8].
    return (jnp.einsum("bii->bi", x3), jnp.einsum("bii->b", x3), jnp.einsum("iij->ij", x3b),
            jnp.einsum("ii->", x2), jnp.einsum("ij,ij->i", x2, x2.T))


def _einsum_paths(a, b, c, d, u, v, w):
    e = jnp.einsum("ab,bc,cd,de->ae", a, b, c, d, optimize="optimal")
    m = jnp.linalg.multi_dot([a, b, c, d])
    o = jnp.einsum("i,j,k->ijk", u, v, w)
    return e, m, o


def _tensordot_crossed(a, b, p, q):
    t = jnp.tensordot(a, b, axes=([1, 2], [1, 0]))                       # [8,16,8] x [8,16,12]
    s = p @ q                                                             # K over x on p, over y on q
    return t, s


def _outer_inner(u, v, x, y):
    return (jnp.outer(u, v), jnp.inner(x, y), jnp.vdot(x, y),
            jnp.matmul(x[None, :4], y[:, :, None].repeat(4, 2)[:, :16]))


# ==== indexing =====================================================================================
def _take_modes_axis1(x, ids, idx):
    a = jnp.take(x, ids, axis=1, mode="clip")
    b = jnp.take(x, ids, axis=1, mode="wrap")
    c = jnp.take_along_axis(x, idx, axis=1, mode="fill", fill_value=-7.0)
    d = jnp.take(x, ids, axis=1, mode="fill", fill_value=3.5)
    return a, b, c, d


def _adv_index(x, x3, i, j):
    a = x[i[:, None], j[None, :]]                                         # [6, 5]
    b = x3[i, :, j[:6]]                                                   # advanced dims apart: [6, 16]
    c = x3[..., j]                                                        # on the last dim
    d = x[i[::-1]][:, ::3]
    return a, b, c, d


def _nonzero_2d(x):
    m = x > 0.8
    r, c = jnp.nonzero(m, size=40, fill_value=(-1, -2))
    aw = jnp.argwhere(x < -1.2, size=12, fill_value=99)
    ex = jnp.extract(m, x, size=30, fill_value=-5.0)
    cnt = jnp.count_nonzero(m, axis=0)
    return r, c, aw, ex, cnt


def _at_ops(x, idx, idx2):
    a = x.at[:, idx].apply(jnp.sin)
    b = x.at[idx2].get(mode="fill", fill_value=-1.0)
    c = x.at[idx2, 3].mul(2.5, mode="drop")
    d = x.at[:, idx].min(-0.25)
    e = x.at[idx2].get(mode="clip")
    return a, b, c, d, e


def _dyn_slices(x, u, ij):
    a = jax.lax.dynamic_slice(x, (ij[0], ij[1]), (5, 12))                  # past the end: clamped
    b = jax.lax.dynamic_update_slice(x, u, (ij[2], ij[3]))
    c = jax.lax.dynamic_index_in_dim(x, ij[4], axis=1, keepdims=False)
    d = jax.lax.dynamic_slice_in_dim(x, ij[5], 9, axis=0)                  # negative: clamped to 0
    return a, b, c, d


def _scatter_middle(x, idx, u, ids_dup, v):
    a = x.at[:, idx, :].set(u)                                              # distinct ids
    b = x.at[:, ids_dup, :].add(v)                                          # duplicates
    return a, b


# ==== reductions ===================================================================================
def _reduce_custom(mesh):
    return lambda x, xi: _reduce_custom_body(mesh, x, xi)


def _reduce_custom_body(mesh, x, xi):
    # XLA's partitioner cannot split a reduction by a computation it does not know (max-|.|, xor):
    # those run along a dim made unsharded first.
    def maxabs(a, b):
        return jnp.where(jnp.abs(a) >= jnp.abs(b), a, b)
    m = jax.lax.reduce(_wsc(mesh, x, P("x", None)), np.float32(0.0), maxabs, (1,))
    s, mx = jax.lax.reduce((x, x), (np.float32(0.0), np.float32(-np.inf)),
                           lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])), (0,))
    xo = jax.lax.reduce(_wsc(mesh, xi, P("x", None)), np.int32(0), jax.lax.bitwise_xor, (1,))
    return m, s, mx, xo


def _ptp_median(mesh):
    def f(x):
        v = _wsc(mesh, x[:, :13], P(None, "x"))                             # 13 over 8
        w = _wsc(mesh, x[:7], P("x"))                                       # 7 over 8
        return (jnp.ptp(v, axis=1), jnp.median(v, axis=1), jnp.quantile(w, jnp.array([0.1, 0.5, 0.93]), axis=0,
                method="higher"), jnp.percentile(v, 37.0, axis=1, method="lower"), jnp.median(w))
    return f


def _argmin_nan(mesh):
    def f(x, xi):
        v = _wsc(mesh, x[:27], P("x"))                                      # 27 over 8
        vn = jnp.where(v > 1.3, jnp.nan, v)
        vi = _wsc(mesh, xi[:27], P("x"))
        return (jnp.argmin(v, axis=0, keepdims=True), jnp.nanargmin(vn, axis=0), jnp.nanargmax(vn, axis=0),
                jnp.argmax(v > 1.0, axis=0), jnp.argmax(vi, axis=0), jnp.argmin(vi, axis=0))
    return f


def _int_bool_reductions(x, xi, xu):
    m = x > 0.3
    return (jnp.count_nonzero(m, axis=(0, 1)), jnp.all(m, axis=0), jnp.any(m, axis=1), jnp.all(x > -3.0),
            jnp.sum(xu, axis=0, dtype=jnp.uint8), jnp.prod(xi, axis=0), jnp.max(xu, axis=1),
            jnp.min(xi.astype(jnp.uint32), axis=0), jnp.sum(m, axis=0))


def _cum_reverse(mesh):
    def f(x):
        v = _wsc(mesh, x[:, :13], P("x", "y"))                             # 13 over 4
        return (jax.lax.cummax(v, axis=1, reverse=True), jax.lax.cumlogsumexp(v, axis=1, reverse=True),
                jax.lax.cumprod(0.5 + jax.nn.sigmoid(v), axis=1, reverse=True), jax.lax.cummin(v, axis=0),
                jnp.cumsum((v > 0).astype(jnp.int32), axis=1))
    return f


# ==== sorting =====================================================================================
def _sort_3keys(k1, k2, x, y):
    a = jax.lax.sort((k1, k2, x, y), dimension=0, num_keys=3, is_stable=False)
    b = jnp.sort(x, axis=1, descending=True)
    c = jnp.argsort(k1, axis=1, stable=True, descending=True)
    return a + (b, c)


def _searchsorted_vmap(table, q):
    t = jnp.sort(table, axis=1)
    r = jax.vmap(lambda a, v: jnp.searchsorted(a, v, side="right", method="compare_all"))(t, q)
    l = jax.vmap(lambda a, v: jnp.searchsorted(a, v, side="left", method="sort"))(t, q)
    s = jnp.searchsorted(t[0], q, method="scan_unrolled")
    return r, l, s


def _topk_full(mesh):
    def f(x):
        v = _wsc(mesh, x[:, :13], P(None, "x"))                             # 13 over 8
        a, ai = jax.lax.top_k(v, 13)
        b, bi = jax.lax.top_k(v, 1)
        c, ci = jax.lax.top_k(x, 16)
        return a, ai, b, bi, c, ci
    return f


def _sort_complex_lexsort(re, im, k1, k2, k3):
    z = jax.lax.complex(jnp.round(re), im)
    s = jnp.sort_complex(z)
    o = jnp.lexsort((k3, k2, k1), axis=1)
    u, inv, cnt = jnp.unique(k1[:, :2], axis=0, size=12, fill_value=-1, return_inverse=True, return_counts=True)
    return jnp.real(s), jnp.imag(s), o, u, inv, cnt


# ==== integer / bit / dtype =======================================================================
def _bitcast_pairs(x, h, q):
    a = jax.lax.bitcast_convert_type(x, jnp.uint16)                       # [16,8] -> [16,8,2]
    b = jax.lax.bitcast_convert_type(h, jnp.uint32)                       # [16,8,2] -> [16,8] (pair dim split)
    c = jax.lax.bitcast_convert_type(q, jnp.float32)                      # [16,4] u8 -> [16]
    d = jax.lax.bitcast_convert_type(a ^ jnp.uint16(0x8001), jnp.float32)
    return a, b, jnp.where(jnp.isfinite(c), c, 0.0), d


def _narrow_ints(a16, u16, u8, sh, x):
    w = (a16 * jnp.int16(300) + jnp.int16(32000)) - a16 // jnp.int16(7)
    m = u16 * u16 + jnp.uint16(65000)
    s = (u8 << sh.astype(jnp.uint8)) | (u8 >> jnp.uint8(9)) | (u8 >> jnp.uint8(3))
    sat8 = jnp.clip(x * 200.0, 0, 255).astype(jnp.uint8)
    sat16 = jnp.clip(x * 40000.0, -32768, 32767).astype(jnp.int16)
    pc = jax.lax.population_count(u16) + jax.lax.clz(a16).astype(jnp.uint16)
    return (w, m, s, sat8, sat16, pc, jnp.max(u16, axis=0), jnp.argmax(u16, axis=1),
            jnp.cumsum(a16, axis=0, dtype=jnp.int16), jnp.sum(u8.astype(jnp.uint16), axis=1, dtype=jnp.uint16))


def _narrow_div_edges(a8, b8, a16, b16):
    mn8 = jnp.full_like(a8, -128)
    mn16 = jnp.full_like(a16, -32768)
    return (jax.lax.div(a8, b8), jax.lax.rem(a8, b8), jax.lax.div(mn8, jnp.full_like(a8, -1)),
            jax.lax.rem(mn8, jnp.full_like(a8, -1)), jax.lax.div(a16, b16), jax.lax.rem(a16, b16),
            jax.lax.div(mn16, jnp.full_like(a16, -1)), jax.lax.shift_right_arithmetic(a16, b16.astype(jnp.int16) & 31),
            jax.lax.shift_left(a8, (b8 & 15).astype(jnp.int8)), jax.lax.shift_right_logical(a8, jnp.int8(9)))


def _bool_arith(a, b):
    p, q = a > 0, b > 0.5
    return (p + q, p * q, p ^ q, p & ~q, jnp.sum(p, axis=0), jnp.cumsum(q, axis=1), jnp.argmax(q, axis=0),
            jnp.max(p, axis=1), jnp.min(q, axis=0), (p.astype(jnp.float32) - q).sum(0), jnp.logical_xor(p, q).all(1))


def _bf16_f16_chain(x, h):
    xb = x.astype(jnp.bfloat16)
    y = jnp.tanh(xb * jnp.bfloat16(1.5) + jnp.bfloat16(0.25)) * xb
    s = jnp.sum(y, axis=0, dtype=jnp.float32)
    mu = jnp.mean(y.astype(jnp.float32), axis=1)
    hf = h.astype(jnp.float16)
    z = jnp.exp(hf * jnp.float16(0.5)) - hf
    v = jnp.var(z.astype(jnp.float32), axis=0)
    lse = jax.nn.logsumexp(z, axis=1)
    return s, mu, v, lse.astype(jnp.float32), y.astype(jnp.float32)


def _complex_ops(a, b, c):
    z = jax.lax.complex(a, b) * 0.5
    w = jnp.conj(z) * jnp.exp(z) + jnp.sqrt(z)
    s = jnp.sum(w, axis=0)
    cs = jnp.cumsum(z, axis=1)
    p = jnp.prod(jnp.exp(1j * c.astype(jnp.complex64)), axis=1)
    return (jnp.real(w), jnp.imag(w), jnp.abs(w), jnp.angle(z), jnp.real(s), jnp.imag(s), jnp.real(cs),
            jnp.imag(cs), jnp.real(p), jnp.imag(p), jnp.log(jnp.abs(z) + 1.0))


# ==== random =======================================================================================
def _typed_keys(mesh):
    def f(seed, x):
        k = jax.random.key(seed[0])
        ks = jax.random.split(k, x.shape[0])
        ks = _wsc(mesh, ks, P("x"))
        noisy = jax.vmap(lambda kk, row: row + jax.random.normal(jax.random.fold_in(kk, 3), row.shape))(ks, x)
        d = jax.random.key_data(ks)
        k2 = jax.random.wrap_key_data(d[::-1])
        u8 = jax.vmap(lambda kk: jax.random.bits(kk, (8,), jnp.uint8))(k2)
        u16 = jax.random.bits(jax.random.fold_in(k, seed[1]), (16, 32), jnp.uint16)
        u16 = _wsc(mesh, u16, P(None, "x"))
        return noisy, d, u8, u16
    return f


def _rbg(mesh):
    def f(seed, x, logits):
        k = jax.random.key(seed[0], impl="rbg")
        k1, k2, k3, k4 = jax.random.split(k, 4)
        k5 = jax.random.fold_in(k1, seed[1])
        n = _wsc(mesh, jax.random.normal(k5, (16, 64)), P("x", "y"))
        b = jax.random.bits(k2, (16, 24), jnp.uint16)
        p = jax.random.permutation(k3, x, axis=0)
        c = jax.random.choice(k4, 64, (10,), replace=False)
        g = jax.random.categorical(k2, logits, axis=1)
        return n, b, p, c, g, jax.random.key_data(k5)
    return f


def _threefry_perm_choice(mesh):
    def f(seed, x, p):
        k1, k2, k3 = jax.random.split(jax.random.key(seed[0]), 3)
        a = jax.random.permutation(k1, x, axis=1, independent=True)
        b = jax.random.choice(k2, x, (5,), replace=False, p=p, axis=1)
        c = jax.random.randint(k3, (16, 40), 0, 250, dtype=jnp.uint8)
        return a, b, _wsc(mesh, c, P(None, "x"))
    return f


# ==== pmap in jit =================================================================================
def _pmap_collectives(x, y):
    def body(a, b):
        s = jax.lax.psum(a, "i")
        m = jax.lax.pmean(b * a[:1], "i")
        g = jax.lax.all_gather(a, "i", axis=0)
        n = jax.lax.psum(1, "i")
        r = jax.lax.ppermute(a, "i", [(j, (j + 3) % 8) for j in range(8)])
        return s + jax.lax.axis_index("i"), m, g.sum(1), r * 2.0, jnp.max(g) + n
    return jax.pmap(body, axis_name="i", in_axes=(1, 0), out_axes=(1, 0, 0, 1, 0), devices=jax.devices()[:8])(x, y)


def _pmap_dp_step(w1, w2, x, y):
    def step(w1, w2, x, y):
        def loss(ws):
            return jnp.mean((jnp.tanh(x @ ws[0]) @ ws[1] - y) ** 2)
        l, g = jax.value_and_grad(loss)((w1, w2))
        g = jax.lax.pmean(g, "d")
        return w1 - 0.1 * g[0], w2 - 0.1 * g[1], jax.lax.pmean(l, "d")
    xb = x.reshape(8, -1, x.shape[-1])
    yb = y.reshape(8, -1, y.shape[-1])
    a, b, l = jax.pmap(step, axis_name="d", in_axes=(None, None, 0, 0), devices=jax.devices()[:8])(w1, w2, xb, yb)
    return a[0], b[3], l


# ==== more: sharded updates / indices, uneven sorts, mixed precision ==============================
def _dus_sharded_update(x, u, w, off):
    a = jax.lax.dynamic_update_slice(x, u, (off[0], 0))                   # u [24,16] over x, offset traced
    b = jax.lax.dynamic_update_slice(x, w, (off[1], off[2]))               # w [8,8] over x on dim 1
    c = jax.lax.dynamic_slice(x, (off[0], 0), (64, 16))                    # the whole dim: offset clamped to 0
    return a, b, c * 2.0


def _gather_scatter_same_axis(table, idx, upd):
    g = table[idx]                                                          # table and ids both over x
    s = table.at[idx].add(upd)
    c = table.at[idx].min(upd * 0.5, mode="clip")                          # duplicates: min, not set
    return g, s, jnp.sum(c, axis=1)


def _sort_uneven_select(mesh):
    def f(x, y):
        v = _wsc(mesh, x[:, :13], P(None, "x"))                              # 13 over 8
        w = _wsc(mesh, y[:, :13], P(None, "x"))
        s = jnp.sort(v, axis=1)
        o = jnp.argsort(v, axis=1)
        tv = jnp.take_along_axis(w, o, axis=1)
        vals, idx = jax.lax.top_k(v, 3)
        cs = jnp.cumsum(jax.nn.softmax(s, axis=1), axis=1)
        return s[:, :3], s[:, -1], tv, vals, idx, cs
    return f


def _bf16_pref_f32(x, w, a, b):
    c = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                     preferred_element_type=jnp.float32)
    d = jax.lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32)
    return c, d, jnp.sum(a.astype(jnp.float32), axis=1)


def _scatter_modes(x, idx, v):
    a = x.at[idx].set(v, mode="clip")
    b = x.at[idx].add(v, mode="drop")
    c = x.at[jnp.clip(idx, 0, 63)].max(v, mode="promise_in_bounds")
    return a, b, c


def _tri_masks(mesh):
    def f(x):
        v = _wsc(mesh, x[:13, :10], P("x", "y"))                              # 13 x 10 over 2 x 4
        r, c = jnp.triu_indices(10, k=2)
        return jnp.tril(v, k=-3), jnp.triu(v, k=5), v[r % 13, c], jnp.diagonal(v, offset=-2)
    return f


def _one_hot_uneven(mesh):
    def f(ids, w):
        oh = _wsc(mesh, jax.nn.one_hot(ids, 13), P("x", "y"))                 # 13 classes over y
        return oh, oh @ w[:13], jnp.argmax(oh, axis=1)
    return f


def _sort_u8_bool(k, m, x):
    a = jax.lax.sort((k, m, x), dimension=1, num_keys=1, is_stable=True)
    b = jnp.argsort(k, axis=0, stable=True)
    return a + (b,)


def _rbg_algs(mesh):
    def f(k4, x):
        outs = []
        for alg in (jax.lax.RandomAlgorithm.RNG_PHILOX, jax.lax.RandomAlgorithm.RNG_DEFAULT):
            nk, b = jax.lax.rng_bit_generator(k4, (16, 32), dtype=jnp.uint32, algorithm=alg)
            _, c = jax.lax.rng_bit_generator(nk, (13, 8), dtype=jnp.uint8, algorithm=alg)
            outs += [nk, _wsc(mesh, b, P("x", "y")), _wsc(mesh, c, P("y", "x"))]
        u = jax.lax.bitcast_convert_type((outs[1] >> 9) | jnp.uint32(0x3F800000), jnp.float32) - 1.0
        return tuple(outs) + (x + u,)
    return f


def _pmap_out_none_vmap(x, y):
    a = jax.pmap(lambda v: jax.lax.psum(v * v, "i"), axis_name="i", out_axes=None, devices=jax.devices()[:8])(x)
    b = jax.vmap(lambda t: jax.pmap(lambda v: jax.lax.pmax(v, "j") - v, axis_name="j", devices=jax.devices()[:8])(t),
                 in_axes=1, out_axes=1)(y)
    return a, b


def _variadic_window_2d(x):
    idx = jax.lax.broadcasted_iota(jnp.int32, x.shape, 0) * x.shape[1] + jax.lax.broadcasted_iota(jnp.int32, x.shape, 1)

    def comp(a, b):
        take_a = (a[0] > b[0]) | ((a[0] == b[0]) & (a[1] < b[1]))
        return jnp.where(take_a, a[0], b[0]), jnp.where(take_a, a[1], b[1])

    return jax.lax.reduce_window((x, idx), (-jnp.inf, jnp.int32(-1)), comp, (3, 3), (2, 2), ((1, 1), (0, 2)))


def _conv_batch_groups(x, w):
    # batch_group_count=4 written directly: the batch (over x) split into 4 groups, one per output-feature group.
    o = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), batch_group_count=4)
    return o, jnp.sum(o, axis=(1, 2))


def _sort_merged_uneven(mesh):
    def f(x, y, t, q):
        v = _wsc(mesh, x[:27], P(("x", "y")))                                 # 27 over 8
        p = _wsc(mesh, y[:27], P(("x", "y")))
        sv, sp = jax.lax.sort((v, p), dimension=0, num_keys=1)
        tab = _wsc(mesh, jnp.sort(t[:50]), P(("y", "x")))                      # 50 over 8
        return sv, sp, jnp.searchsorted(tab, q, side="right"), jnp.searchsorted(tab, q, method="compare_all")
    return f


def _i(shape, lo, hi, seed, dtype=np.int32):
    return np.random.default_rng(seed).integers(lo, hi, shape).astype(dtype)


def probe8b_programs():
    ps = []

    def add(name, *a, **kw):
        ps.append(Program("p8b_" + name, *a, **kw))

    r = _rand
    # ---- convolutions
    add("conv_nchw_asym_stride", "NCHW / OIHW conv stride (2,1) pad ((2,0),(1,3)), then SAME stride (1,2); batch over x, H over y",
        _plain(_conv_nchw), M24, XY, [P("x", None, "y"), P(), P()], None,
        lambda: [r((4, 4, 32, 16), 9000), r((8, 4, 3, 3), 9001, scale=0.3), r((8, 8, 3, 3), 9002, scale=0.2)])
    add("conv1d_groups_channels_8", "1-D NWC convs, 4 groups and depthwise (16 groups, rhs_dilation 2, stride 2), channels over 8",
        _plain(_conv_groups_channels), M8, X, [P(None, None, "x"), P(None, None, "x"), P(None, None, "x")], None,
        lambda: [r((4, 64, 16), 9010), r((5, 4, 16), 9011, scale=0.4), r((3, 1, 16), 9012, scale=0.5)])
    add("conv_grouped_kernel_grad", "kernel / input grads of a 2-group NCHW conv (batch_group_count), batch over x, H over y",
        _plain(_grouped_grads), M24, XY, [P("x", None, "y"), P(), P("x", None, "y")], None,
        lambda: [r((4, 8, 16, 16), 9020), r((8, 4, 3, 3), 9021, scale=0.25), r((4, 8, 16, 16), 9022, scale=0.5)])
    add("conv3d_ncdhw_depth_8", "3-D NCDHW / OIDHW conv, depth over 8, stride (2,1,1), rhs_dilation (2,1,1), SAME, max over depth",
        _plain(_conv3d_ncdhw), M8, X, [P(None, None, "x"), P()], None,
        lambda: [r((2, 4, 16, 8, 8), 9030), r((6, 4, 3, 3, 3), 9031, scale=0.2)])
    add("conv_transpose_kernel_uneven", "conv_transpose transpose_kernel=True stride 2 SAME on width 13 over 8, NCHW stride (3,2) VALID with H over 8",
        _conv_transpose_uneven, M8, X, [P(None, "x", None), P(), P(None, None, "x"), P()], None,
        lambda: [r((4, 16, 8), 9040), r((4, 6, 8), 9041, scale=0.3), r((2, 3, 16, 8), 9042), r((5, 3, 4, 3), 9043, scale=0.3)])
    add("conv_grads_stride_atrous", "input and kernel grads of an NHWC conv stride 2, rhs_dilation 2, pad ((2,2),(1,2)), H over 8",
        _plain(_conv_grads_strided), M8, X, [P(None, "x"), P(), P(None, "x")], None,
        lambda: [r((2, 32, 16, 4), 9050), r((3, 3, 4, 8), 9051, scale=0.3), r((2, 16, 8, 8), 9052)])
    add("conv_cin_x_cout_y", "NHWC conv with C_in over x and C_out over y (contraction split), then a 1x1 conv contracting over y",
        _plain(_conv_cin_cout), M24, XY, [P(None, None, None, "x"), P(None, None, "x", "y"), P(None, None, "y", None)], None,
        lambda: [r((4, 8, 8, 32), 9060), r((3, 3, 32, 16), 9061, scale=0.1), r((1, 1, 16, 8), 9062, scale=0.25)])
    add("conv_kernel_spatial_sharded", "4x4 kernel with its H over x and W over y, image H over y, asymmetric padding, 2 x 4",
        _plain(_conv_kernel_spatial), M24, XY, [P(None, "y"), P("x", "y")], None,
        lambda: [r((4, 16, 16, 8), 9070), r((4, 4, 8, 8), 9071, scale=0.2)])
    add("conv_mixed_layouts", "convs with layouts (NWC, OIW, NCW) and (CHWN, HWOI, HNWC), spatial dims over 8",
        _plain(_conv_mixed_layouts), M8, X, [P(None, "x"), P(), P(None, "x"), P()], None,
        lambda: [r((4, 32, 8), 9080), r((6, 8, 3), 9081, scale=0.3), r((3, 16, 8, 4), 9082), r((3, 3, 5, 3), 9083, scale=0.3)])
    # ---- windows
    add("reduce_window_uneven_30", "reduce_window max (pad (1,2), stride 3), min (window_dilation 2), sum (base_dilation 3), int max; 30 over 8",
        _windows_uneven, M8, X, [P(None, "x"), P(None, "x")], None,
        lambda: [r((4, 32, 8), 9100), _ids((4, 32, 8), 1000, 9101)])
    add("avgpool_exclpad_grad_2d", "SAME 3x3 stride-2 avg pool excluding padding (reduce_window of ones) and max pool, their grad, H x W over 2 x 4",
        _plain(_avgpool_excl), M24, XY, [P(None, "x", "y")], None, lambda: [r((4, 16, 16, 4), 9110)])
    add("variadic_reduce_window_argmax", "variadic reduce_window (value, index) max-with-index pooling, window 4 stride 2, the dim over 8",
        _plain(_variadic_window_argmax), M8, X, [P(None, "x")], None, lambda: [r((8, 64), 9120)])
    # ---- pads / rolls
    add("pad_modes_stat_uneven", "jnp.pad symmetric / linear_ramp / maximum / minimum / mean(stat_length) / reflect odd, 13 over 8",
        _pad_modes, M8, X, [P(None, "x")], None, lambda: [r((4, 16), 9130)])
    add("lax_pad_negative_interior", "lax.pad negative low / high and interior padding on both sharded dims, 2 x 4",
        _plain(_lax_pad_neg), M24, XY, [P("x", "y")], None, lambda: [r((16, 32), 9140)])
    add("roll_traced_two_dims_uneven", "jnp.roll by traced shifts on two dims, static -37 / 29, rev, flip, flat roll; 13 x 10 over 2 x 4",
        _roll_flip, M24, XY, [P("x", "y"), P()], None,
        lambda: [r((16, 16), 9150), np.array([3, -5, 17], np.int32)])
    add("rot90_moveaxis_222", "rot90 k=1 axes (1,2), k=3 axes (0,2), moveaxis, all dims sharded on 2x2x2",
        _plain(_rot_moveaxis), M222, XYZ, [P("x", "y", "z")], None, lambda: [r((8, 8, 4), 9160)])
    # ---- resizes
    add("resize_nearest_cubic_lanczos", "jax.image.resize nearest 2.5x, cubic to 13, lanczos3 up, lanczos5 antialiased down; H over 8",
        _plain(_resize_methods), M8, X, [P(None, "x")], None, lambda: [r((2, 16, 16, 3), 9170)])
    add("scale_and_translate_w", "jax.image.scale_and_translate linear / cubic antialiased, traced scale / translation, W over 8",
        _plain(_scale_translate), M8, X, [P(None, None, "x"), P(), P()], None,
        lambda: [r((2, 16, 16, 3), 9180), np.array([1.3, 1.7], np.float32), np.array([-2.0, 1.5], np.float32)])
    add("repeat_total_tile_resize", "repeat per-row counts total_repeat_length=40, repeat 3 on dim 1, tile, jnp.resize, 7 -> 13 over 8",
        _repeat_tile, M8, X, [P("x"), P("x")], None, lambda: [r((16, 8), 9190), _i((16,), 0, 5, 9191)])
    # ---- einsums
    add("einsum_repeated_indices", "einsum bii->bi, bii->b, iij->ij, ii->, ij,ij->i with both i copies sharded, 2 x 4",
        _plain(_einsum_repeated), M24, XY, [P(None, "x", "y"), P("x", "y"), P("y", "x", None)], None,
        lambda: [r((4, 16, 16), 9200), r((16, 16), 9201), r((16, 16, 8), 9202)])
    add("einsum4_optimal_multidot", "einsum ab,bc,cd,de->ae optimize='optimal', multi_dot of the same, i,j,k->ijk, mixed shardings",
        _plain(_einsum_paths), M24, XY,
        [P("x", "y"), P("y", None), P(None, "y"), P("y", "x"), P("x"), P("y"), P()], None,
        lambda: [r((16, 32), 9210, scale=0.3), r((32, 8), 9211, scale=0.3), r((8, 64), 9212, scale=0.3),
                 r((64, 16), 9213, scale=0.3), r((16,), 9214), r((8,), 9215), r((12,), 9216)])
    add("tensordot_crossed_axes", "tensordot over two contracting dims sharded (x, y) vs (y, x), p @ q with K over x vs over y",
        _plain(_tensordot_crossed), M24, XY, [P(None, "x", "y"), P("y", "x", None), P(None, "x"), P("y", None)], None,
        lambda: [r((8, 16, 8), 9220), r((8, 16, 12), 9221), r((16, 32), 9222), r((32, 16), 9223)])
    add("outer_inner_vdot_bcast", "outer of vectors over x / y, inner / vdot of 2-D sharded arrays, broadcasting batched matmul",
        _plain(lambda u, v, x, y: (jnp.outer(u, v), jnp.inner(x, y), jnp.vdot(x[:8], y),
                                   jnp.matmul(x[None], jnp.stack([y.T, -y.T])))), M24, XY,
        [P("x"), P("y"), P("x", "y"), P("y", "x")], None,
        lambda: [r((16,), 9230), r((32,), 9231), r((16, 32), 9232), r((8, 32), 9233)])
    # ---- indexing
    add("take_modes_along_sharded", "take clip / wrap / fill and take_along_axis fill with out-of-range ids along the dim over 8",
        _plain(_take_modes_axis1), M8, X, [P(None, "x"), P(), P()], None,
        lambda: [r((8, 64), 9300), np.array([-70, -1, 0, 5, 63, 64, 100, 140, 31, 32, 7, -64], np.int32),
                 _i((8, 10), -20, 90, 9301)])
    add("adv_index_broadcast", "x[i[:,None], j[None,:]], x3[i, :, j] (advanced dims apart), x3[..., j], x[i[::-1]][:, ::3], 2 x 4",
        _plain(_adv_index), M24, XY, [P("x", "y"), P("x", None, "y"), P(), P()], None,
        lambda: [r((16, 32), 9310), r((16, 16, 32), 9311), _i((6,), 0, 16, 9312), _i((6,), 0, 32, 9313)])
    add("nonzero_fill_argwhere_extract", "nonzero(size=40, fill_value=(-1,-2)), argwhere(size, fill), extract(size), counts of a 2-D sharded mask",
        _plain(_nonzero_2d), M24, XY, [P("x", "y")], None, lambda: [r((16, 32), 9320)])
    add("at_apply_get_fill_mul_min", ".at[:, idx].apply(sin) / .min along the dim over 8, .at[].get(fill / clip), .at[i, 3].mul(drop)",
        _plain(_at_ops), M8, X, [P(None, "x"), P(), P()], None,
        lambda: [r((16, 64), 9330), np.random.default_rng(9331).permutation(64)[:10].astype(np.int32),
                 np.array([3, 20, -3, 15, 0, -17, 9], np.int32)])
    add("dyn_slice_traced_clamped_2d", "dynamic_slice / update_slice at traced offsets past the ends of two sharded dims, dynamic_index_in_dim",
        _plain(_dyn_slices), M24, XY, [P("x", "y"), P(), P()], None,
        lambda: [r((16, 32), 9340), r((9, 20), 9341), np.array([14, 25, 10, 3, 30, -4], np.int32)])
    add("scatter_sharded_middle_dim", "x.at[:, idx, :].set (distinct) and .add (duplicates) along a dim over y, batch over x",
        _plain(_scatter_middle), M24, XY, [P("x", "y", None), P(), P(), P(), P()], None,
        lambda: [r((4, 32, 16), 9350), np.random.default_rng(9351).permutation(32)[:8].astype(np.int32),
                 r((4, 8, 16), 9352), _i((12,), 0, 32, 9353), r((4, 12, 16), 9354)])
    # ---- reductions
    add("reduce_custom_maxabs_xor", "lax.reduce max-|.| and xor along a dim gathered first, variadic (sum, max) reduce over x, 2 x 4",
        _reduce_custom, M24, XY, [P("x", "y"), P("x", "y")], None,
        lambda: [r((16, 32), 9400), _i((16, 32), 0, 1 << 30, 9401)])
    add("ptp_median_quantile_uneven", "ptp / median / percentile lower on 13 over 8, quantile higher / median on 7 rows over 8",
        _ptp_median, M8, X, [P(None, "x")], None, lambda: [r((16, 16), 9410)])
    add("argmin_nanarg_uneven_27", "argmin keepdims, nanargmin / nanargmax with NaNs, argmax of bools / ints (ties); 27 rows over 8",
        _argmin_nan, M8, X, [P("x"), P("x")], None, lambda: [r((32, 8), 9420), _i((32, 8), 0, 6, 9421)])
    add("int_bool_reductions", "count_nonzero over both dims, all / any, uint8 sum wrap, int32 prod, uint8 max, uint32 min, 2 x 4",
        _plain(_int_bool_reductions), M24, XY, [P("x", "y"), P("x", "y"), P("x", "y")], None,
        lambda: [r((16, 32), 9430), _i((16, 32), -3, 4, 9431), _i((16, 32), 0, 256, 9432, np.uint8)])
    add("cum_reverse_uneven_y", "reverse cummax / cumlogsumexp / cumprod along 13 over y, cummin over x, int cumsum of bools",
        _cum_reverse, M24, XY, [P("x", "y")], None, lambda: [r((8, 16), 9440)])
    # ---- sorting
    add("sort_4ops_3keys_dim0", "lax.sort 4 operands num_keys=3 unstable along dim 0 over x, sort / stable argsort descending over y",
        _plain(_sort_3keys), M24, XY, [P("x", "y")] * 4, None,
        lambda: [_i((16, 8), 0, 3, 9500), _i((16, 8), 0, 3, 9501), r((16, 8), 9502), r((16, 8), 9503)])
    add("searchsorted_vmap_rows", "vmapped searchsorted compare_all right / sort left, table rows over x and cols over y, scan_unrolled",
        _plain(_searchsorted_vmap), M24, XY, [P("x", "y"), P(None, "y")], None,
        lambda: [r((8, 64), 9510), r((8, 32), 9511)])
    add("topk_k_equals_dim_uneven", "top_k with k = 13 of 13 over 8 (uneven), k = 1, k = 16 of 16 over 8",
        _topk_full, M8, X, [P(None, "x")], None, lambda: [r((8, 16), 9520)])
    add("sort_complex_lexsort3_unique_rows", "sort_complex (rounded real parts tie), 3-key lexsort along the dim over 8, unique rows (axis=0, size)",
        _plain(_sort_complex_lexsort), M8, X, [P(None, "x")] * 5, None,
        lambda: [r((8, 32), 9530, scale=2.0), r((8, 32), 9531), _i((8, 32), 0, 3, 9532), _i((8, 32), 0, 3, 9533),
                 _i((8, 32), 0, 100, 9534)])
    # ---- integer / bit / dtype
    add("bitcast_pairs_dim_sharded", "bitcast f32 -> u16 pairs, u16 pairs (pair dim over x) -> u32, u8 quads (quad dim over y) -> f32",
        _plain(_bitcast_pairs), M24, XY, [P("x", "y"), P("y", None, "x"), P(None, "y")], None,
        lambda: [r((16, 8), 9600), _i((16, 8, 2), 0, 65536, 9601, np.uint16), _i((16, 4), 0, 256, 9602, np.uint8)])
    add("int16_uint16_uint8_ops", "int16 / uint16 wrapping arithmetic, uint8 shifts past 8, saturating converts, popcount / clz, reductions",
        _plain(_narrow_ints), M24, XY, [P("x", "y")] * 5, None,
        lambda: [_i((16, 32), -32768, 32768, 9610, np.int16), _i((16, 32), 0, 65536, 9611, np.uint16),
                 _i((16, 32), 0, 256, 9612, np.uint8), _i((16, 32), 0, 11, 9613), r((16, 32), 9614)])
    add("int8_int16_div_shift_edges", "int8 / int16 div / rem by zero, MIN / -1, arithmetic / logical shifts past the width, 8",
        _plain(_narrow_div_edges), M8, X, [P("x")] * 4, None,
        lambda: [_i((64, 8), -128, 128, 9620, np.int8), _i((64, 8), -3, 4, 9621, np.int8),
                 _i((64, 8), -32768, 32768, 9622, np.int16), _i((64, 8), -2, 40, 9623, np.int16)])
    add("bool_arith_reductions", "bool +, *, ^, &~, sums, cumsum, argmax, max / min / all of bools over sharded dims",
        _plain(_bool_arith), M24, XY, [P("x", "y"), P("y", "x")], None,
        lambda: [r((16, 32), 9630), r((16, 32), 9631)])
    add("bf16_f16_chain_f32acc", "bf16 tanh chain summed with dtype=f32, f16 exp chain, var in f32, f16 logsumexp; x over (x,y), h over (y,x)",
        _plain(_bf16_f16_chain), M24, XY, [P("x", "y"), P("y", "x")], None,
        lambda: [r((16, 64), 9640), r((16, 64), 9641, scale=0.5)], dtype="bf16")
    add("complex64_elementwise_reduce", "complex64 conj / exp / sqrt / abs / angle / log, sum and cumsum along sharded dims, prod of phases",
        _plain(_complex_ops), M24, XY, [P("x", "y"), P("x", "y"), P(None, "y")], None,
        lambda: [r((16, 32), 9650), r((16, 32), 9651), r((16, 32), 9652, scale=0.2)])
    # ---- random
    add("typed_keys_vmap_fold_bits", "jax.random.key, split keys constrained over x, vmap(fold_in, normal), key_data / wrap_key_data, bits u8 / u16",
        _typed_keys, M8, X, [P(), P("x")], None, lambda: [np.array([42, 7], np.int32), r((16, 32), 9700)])
    add("rbg_split_perm_choice_cat", "impl='rbg' keys: split, fold_in, normal over 2 x 4, bits u16, permutation, choice(replace=False), categorical",
        _rbg, M24, XY, [P(), P("x"), P(None, "y")], None,
        lambda: [np.array([5, 9], np.int32), r((16, 8), 9710), r((16, 32), 9711)])
    add("threefry_perm_axis1_choice_p", "permutation(axis=1, independent=True) and choice(p, replace=False, axis=1) along the dim over 8, uint8 randint",
        _threefry_perm_choice, M8, X, [P(), P(None, "x"), P("x")], None,
        lambda: [np.array([3, 1], np.int32), r((8, 32), 9720),
                 (lambda a: (a / a.sum()).astype(np.float32))(np.abs(r((32,), 9721)) + 0.1)])
    # ---- pmap in jit
    add("pmap_in_axes1_collectives", "jit of pmap (in_axes=(1, 0), out_axes 1 / 0): psum, pmean, all_gather, ppermute +3, axis_index, 8",
        _plain(_pmap_collectives), M8, X, [P(None, "x"), P("x")], None,
        lambda: [r((4, 8, 16), 9800), r((8, 16), 9801)])
    add("pmap_dp_step_bcast_params", "jit of pmap data-parallel step: params in_axes=None, batch reshaped to 8 x, pmean'd grads, 8",
        _plain(_pmap_dp_step), M8, X, [P(), P(), P("x"), P("x")], None,
        lambda: [r((16, 32), 9810, scale=0.25), r((32, 8), 9811, scale=0.18), r((64, 16), 9812), r((64, 8), 9813)])
    # ---- more
    add("dus_sharded_update_traced", "dynamic_update_slice of an update sharded like the operand (24 rows over 8) at a traced offset, one over dim 1, full-size dynamic_slice",
        _plain(_dus_sharded_update), M8, X, [P("x"), P("x"), P(None, "x"), P()], None,
        lambda: [r((64, 16), 9900), r((24, 16), 9901), r((8, 8), 9902), np.array([50, 17, 11], np.int32)])
    add("gather_scatter_ids_same_axis", "table[ids], .at[ids].add, .at[ids].set(mode=clip) with table, ids and updates all over x",
        _plain(_gather_scatter_same_axis), M8, X, [P("x"), P("x"), P("x")], None,
        lambda: [r((64, 16), 9910), _i((32,), -4, 70, 9911), r((32, 16), 9912)])
    add("sort_uneven_13_select", "sort / argsort / top_k 3 along 13 over 8 then slices, take_along_axis, cumsum of softmax",
        _sort_uneven_select, M8, X, [P(None, "x"), P(None, "x")], None,
        lambda: [r((16, 16), 9920), r((16, 16), 9921)])
    add("bf16_conv_dot_pref_f32", "bf16 conv with C_in over x and bf16 dot with K over (x, y), preferred_element_type=f32, 2 x 4",
        _plain(_bf16_pref_f32), M24, XY, [P(None, None, None, "x"), P(None, None, "x", "y"), P(None, ("x", "y")), P(("x", "y"), None)],
        None, lambda: [r((4, 8, 8, 32), 9930, "bf16"), r((3, 3, 32, 16), 9931, "bf16", scale=0.1), r((16, 64), 9932, "bf16"),
                       r((64, 16), 9933, "bf16", scale=0.125)], dtype="bf16")
    add("scatter_set_clip_drop_promise", ".at[ids].set(mode=clip) / add(mode=drop) / max(promise_in_bounds) with out-of-range ids, rows over 8",
        _plain(_scatter_modes), M8, X, [P("x"), P(), P()], None,
        lambda: [r((64, 8), 9940), np.array([-5, 3, 64, 12, 31, 32, 40, 7], np.int32), r((8, 8), 9941)])
    add("tril_triu_offsets_uneven", "tril k=-3, triu k=5, a triu_indices gather, diagonal offset -2 of 13 x 10 over 2 x 4",
        _tri_masks, M24, XY, [P("x", "y")], None, lambda: [r((16, 16), 9950)])
    add("one_hot_13_classes_over_y", "one_hot with 13 classes over y (uneven), its matmul, argmax, ids over x",
        _one_hot_uneven, M24, XY, [P("x"), P()], None, lambda: [_ids((16,), 13, 9960), r((16, 8), 9961)])
    add("sort_u8_key_bool_payload", "lax.sort num_keys=1 stable of a uint8 key with bool / f32 payloads along the dim over y, argsort of u8 along x",
        _plain(_sort_u8_bool), M24, XY, [P("x", "y")] * 3, None,
        lambda: [_i((16, 32), 0, 8, 9970, np.uint8), _i((16, 32), 0, 2, 9971, np.bool_), r((16, 32), 9972)])
    add("rng_bit_generator_algs", "lax.rng_bit_generator PHILOX / DEFAULT, u32 [16,32] over 2 x 4, chained u8 [13,8] over (y, x) (uneven), bits -> uniform",
        _rbg_algs, M24, XY, [P(), P("x", "y")], None,
        lambda: [np.array([1, 2, 3, 4], np.uint32), r((16, 32), 9980)])
    add("pmap_out_axes_none_vmap", "jit of pmap with out_axes=None (psum), and vmap(in_axes=1) of a pmap with pmax, 8",
        _plain(_pmap_out_none_vmap), M8, X, [P("x"), P("x")], None, lambda: [r((8, 16), 9820), r((8, 3, 16), 9821)])
    add("variadic_window_2d_pad", "variadic reduce_window (max, flat index) 3x3 stride 2, padding ((1,1),(0,2)), both dims over 2 x 4",
        _plain(_variadic_window_2d), M24, XY, [P("x", "y")], None, lambda: [r((16, 32), 9125)])
    add("conv_batch_group_count_4", "conv with batch_group_count=4 written directly, the batch (grouped) over x, 2 x 4 mesh",
        _plain(_conv_batch_groups), M24, XY, [P("x"), P()], None,
        lambda: [r((8, 8, 8, 3), 9090), r((3, 3, 3, 8), 9091, scale=0.3)], quick=True)
    add("sort_search_merged_uneven", "lax.sort of 27 rows over (x, y) merged, searchsorted into a 50-entry table over (y, x), 2 x 4",
        _sort_merged_uneven, M24, XY, [P(("x", "y")), P(("x", "y")), P(("y", "x")), P("x")], None,
        lambda: [r((32, 4), 9530), r((32, 4), 9531), r((56,), 9532), r((16, 8), 9533)])
    return ps
