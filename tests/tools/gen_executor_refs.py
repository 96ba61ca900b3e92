#!/usr/bin/env python3
"""Writes the executor's reference modules and outputs into tests/data/hlo/.

Run with the reference JAX (not needed in CI; its outputs are committed):
  XLA_FLAGS=--xla_force_host_platform_device_count=8 /opt/jaxref/bin/python tests/tools/gen_executor_refs.py
(or bench/jax_compare/.venv/bin/python, JAX 0.10.2). Arguments, when given, are name prefixes:
only the cases whose names start with one of them are written (e.g. `lapack_` for LapackCases).

For each case NAME it writes NAME.hlo (HLO text as JAX 0.10.2 lowers it, or a seed notebook's text
verbatim) and NAME.out<i>.npy (JAX's CPU result for output leaf i). Inputs are not stored: both
this script and runtime/executable_refs_test.cc build them with Input() below, so every value is
exactly representable and the same on both sides.
"""
import os
import sys

import numpy as np

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_platform_name", "cpu")
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "hlo")
ONLY = []  # name prefixes from the command line: write only those cases
NARROW_INTS = ("int2", "int4", "uint2", "uint4")  # ml_dtypes' names


def Wanted(name):
    return not ONLY or any(name.startswith(p) for p in ONLY)


def Input(param_index, shape, dtype):
    """Element k of parameter i: floats ((37k + 11i) % 101 - 50) / 64, ints (7k + 3i) % 11 - 5,
    pred (k + i) % 2. Keep in sync with MakeInput in executable_refs_test.cc."""
    n = int(np.prod(shape)) if shape else 1
    k = np.arange(n, dtype=np.int64)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        v = ((k + param_index) % 2).astype(np.bool_)
    elif np.issubdtype(dt, np.integer) or dt.name in NARROW_INTS:
        v = ((7 * k + 3 * param_index) % 11 - 5).astype(dt)
    else:
        v = (((37 * k + 11 * param_index) % 101 - 50) / 64.0).astype(dt)
    return v.reshape(shape)


def Save(name, hlo_text, outputs):
    if not Wanted(name):
        return
    with open(os.path.join(OUT, name + ".hlo"), "w") as f:
        f.write(hlo_text.rstrip() + "\n")
    for i, o in enumerate(outputs):
        np.save(os.path.join(OUT, f"{name}.out{i}.npy"), np.asarray(o))
    print(name, [np.asarray(o).shape for o in outputs])


def Case(name, fn, *avals):
    if not Wanted(name):
        return
    args = [Input(i, a.shape, a.dtype) for i, a in enumerate(avals)]
    lowered = jax.jit(fn).lower(*args)
    out = jax.jit(fn)(*args)
    leaves = jax.tree_util.tree_leaves(out)
    Save(name, lowered.as_text(dialect="hlo"), leaves)


def S(shape, dtype=np.float32):
    return jax.ShapeDtypeStruct(shape, dtype)


def SeedCase(name, text, args, outputs):
    Save(name, text, outputs)


def Cnn(x, k1, b1, k2, b2, w1, c1, w2, c2):
    """Seed 002's CNN (flax: Conv 32 3x3 SAME, relu, avg_pool 2x2, Conv 64, relu, avg_pool,
    reshape (7, -1), Dense 256, relu, Dense 10, log_softmax) on one unbatched 28x28x1 image."""
    def conv(h, k, b):
        y = lax.conv_general_dilated(h[None], k, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))[0]
        return y + b

    def pool(h):
        return lax.reduce_window(h, 0.0, lax.add, (2, 2, 1), (2, 2, 1), "VALID") / 4.0

    h = pool(jax.nn.relu(conv(x, k1, b1)))
    h = pool(jax.nn.relu(conv(h, k2, b2)))
    h = h.reshape((h.shape[0], -1))
    h = jax.nn.relu(h @ w1 + c1)
    h = h @ w2 + c2
    return jax.nn.log_softmax(h)


def main():
    os.makedirs(OUT, exist_ok=True)
    # Seed notebook modules, verbatim.
    sigmoid = """HloModule jit_sigmoid.2

ENTRY main.8 {
  constant.2 = f32[] constant(1)
  broadcast.3 = f32[10]{0} broadcast(constant.2), dimensions={}
  Arg_0.1 = f32[10]{0} parameter(0)
  negate.4 = f32[10]{0} negate(Arg_0.1)
  exponential.5 = f32[10]{0} exponential(negate.4)
  add.6 = f32[10]{0} add(exponential.5, broadcast.3)
  ROOT divide.7 = f32[10]{0} divide(broadcast.3, add.6)
}
"""
    x = Input(0, (10,), np.float32)
    Save("seed_sigmoid", sigmoid, [jax.nn.sigmoid(x)])
    sigmoid_grad = """HloModule jit_sigmoid.3

ENTRY main.11 {
  constant.2 = f32[] constant(1)
  Arg_0.1 = f32[] parameter(0)
  negate.3 = f32[] negate(Arg_0.1)
  exponential.4 = f32[] exponential(negate.3)
  add.5 = f32[] add(exponential.4, constant.2)
  multiply.6 = f32[] multiply(add.5, add.5)
  divide.7 = f32[] divide(constant.2, multiply.6)
  negate.8 = f32[] negate(divide.7)
  multiply.9 = f32[] multiply(negate.8, exponential.4)
  ROOT negate.10 = f32[] negate(multiply.9)
}
"""
    x0 = Input(0, (), np.float32)
    Save("seed_sigmoid_grad", sigmoid_grad, [jax.grad(jax.nn.sigmoid)(x0)])
    irtohlo = """HloModule IrToHlo.11

ENTRY IrToHlo.11 {
  constant.2 = f32[] constant(0)
  reshape.3 = f32[1,1]{1,0} reshape(constant.2)
  broadcast.4 = f32[1,1]{1,0} broadcast(reshape.3), dimensions={0,1}
  constant.6 = f32[] constant(0)
  reshape.7 = f32[1,1]{1,0} reshape(constant.6)
  broadcast.8 = f32[1,1]{1,0} broadcast(reshape.7), dimensions={0,1}
  p1.5 = f32[1,1]{1,0} parameter(1)
  p0.1 = f32[1,1]{1,0} parameter(0)
  multiply.9 = f32[1,1]{1,0} multiply(p1.5, p0.1)
  ROOT tuple.10 = (f32[1,1]{1,0}) tuple(multiply.9)
}
"""
    a, b = Input(0, (1, 1), np.float32), Input(1, (1, 1), np.float32)
    Save("seed_irtohlo_multiply", irtohlo, [b * a])
    square = """HloModule pjit_square.75

ENTRY main.5 {
  Arg_0.1 = s32[8,4]{1,0} parameter(0), sharding={devices=[4,2]0,1,2,3,4,5,6,7}
  multiply.2 = s32[8,4]{1,0} multiply(Arg_0.1, Arg_0.1)
  tuple.3 = (s32[8,4]{1,0}) tuple(multiply.2)
  ROOT get-tuple-element.4 = s32[8,4]{1,0} get-tuple-element(tuple.3), index=0, sharding={devices=[4,2]0,1,2,3,4,5,6,7}
}
"""
    s = Input(0, (8, 4), np.int32)
    Save("seed_pjit_square", square, [s * s])
    pjit_dot = """HloModule pjit_dot.83

ENTRY main.7 {
  Arg_0.1 = f32[8,8]{1,0} parameter(0), sharding={devices=[8,1]0,1,2,3,4,5,6,7}
  Arg_1.2 = s32[8,1]{1,0} parameter(1), sharding={replicated}
  convert.3 = f32[8,1]{1,0} convert(Arg_1.2)
  dot.4 = f32[8,1]{1,0} dot(Arg_0.1, convert.3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  tuple.5 = (f32[8,1]{1,0}) tuple(dot.4)
  ROOT get-tuple-element.6 = f32[8,1]{1,0} get-tuple-element(tuple.5), index=0, sharding={devices=[8,1]0,1,2,3,4,5,6,7}
}
"""
    m, v = Input(0, (8, 8), np.float32), Input(1, (8, 1), np.int32)
    Save("seed_pjit_dot", pjit_dot, [m @ v.astype(np.float32)])

    # Modules lowered by JAX.
    Case("matmul_f16", lambda x, y: x @ y, S((4, 16), np.float16), S((16, 4), np.float16))
    Case("cnn_seed002", Cnn, S((28, 28, 1)), S((3, 3, 1, 32)), S((32,)), S((3, 3, 32, 64)), S((64,)),
         S((448, 256)), S((256,)), S((256, 10)), S((10,)))
    Case("gather_batching", jax.vmap(lambda o, i: o[i]), S((2, 5, 3)), S((2, 2), np.int32))
    Case("scatter_add_drop", lambda o, i, u: o.at[i].add(u, mode="drop"), S((5,)), S((4,), np.int32), S((4,)))
    Case("maxpool_grad", jax.grad(lambda x: jnp.sum(lax.reduce_window(
        x, -np.inf, lax.max, (2, 2), (2, 2), "VALID") * jnp.array([[1., 2.], [3., 4.]]))), S((4, 4)))
    Case("argsort_stable", lambda k, v: lax.sort((k, v), num_keys=1, is_stable=True), S((3, 7)), S((3, 7), np.int32))
    Case("argmax_rows", lambda x: jnp.argmax(x, axis=1), S((4, 9)))
    Case("fori_loop_sum", lambda x: lax.fori_loop(0, 10, lambda i, c: c * 0.5 + x[i % 4], 0.0), S((4,)))
    Case("switch3", lambda i, x: lax.switch(i, [lambda v: v + 1, lambda v: v * 2, lambda v: -v], x),
         S((), np.int32), S((3,)))
    Case("scan_cumprod_dus", lambda x: lax.scan(lambda c, v: (c * v, c * v), 1.0, x)[1], S((6,)))
    Case("int_floor_div_rem", lambda a, b: (a // b, a % b, a >> 2, a << 3), S((12,), np.int32), S((12,), np.int32))
    Case("cumsum_window", lambda x: jnp.cumsum(x, axis=1), S((3, 5)))
    Case("bf16_matmul_f32_acc", lambda x, y: jnp.dot(x, y, preferred_element_type=jnp.float32),
         S((8, 32), jnp.bfloat16), S((32, 4), jnp.bfloat16))
    Case("conv_feature_groups", lambda x, k: lax.conv_general_dilated(
        x, k, (2, 1), ((1, 1), (0, 2)), lhs_dilation=(1, 2), dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=2), S((1, 4, 4, 2)), S((3, 3, 1, 4)))
    Case("logsumexp_softmax", lambda x: (jax.nn.logsumexp(x, axis=-1), jax.nn.softmax(x)), S((2, 6)))
    Case("dynamic_slice_clamp", lambda x, i: lax.dynamic_slice(x, (i, i), (2, 3)), S((4, 5)), S((), np.int32))
    Case("pad_negative_interior", lambda x: lax.pad(x, 0.5, ((1, -1, 1), (-2, 2, 0))), S((3, 4)))
    Case("einsum_batch", lambda a, b: jnp.einsum("bij,bjk->bki", a, b), S((2, 3, 4)), S((2, 4, 5)))
    Case("clamp_select_compare", lambda x: jnp.where(x > 0.1, jnp.clip(x, -0.3, 0.4), x * x), S((20,)))
    Case("erf_tanh_logistic", lambda x: (lax.erf(x), jnp.tanh(x), jax.nn.sigmoid(x), jnp.log1p(x * x)), S((11,)))
    ExtraOpCases()
    LapackCases()
    NarrowTypeCases()
    return 0


def NarrowTypeCases():
    """float8 / float4 / int4 / int2 (prefix narrow_): XLA's CPU backend computes them widened
    (f8 ops through f16, int4 through int8), rounding each op's result back."""
    f8, e5m2 = jnp.float8_e4m3fn, jnp.float8_e5m2

    def scaled_matmul(x, w):  # bench/xla_compare's f8_matmul: per-tensor scales, f32 accumulation
        sx = jnp.max(jnp.abs(x)) / 448.0
        sw = jnp.max(jnp.abs(w)) / 448.0
        x8, w8 = (x / sx).astype(f8), (w / sw).astype(f8)
        return jnp.dot(x8, w8, preferred_element_type=jnp.float32) * (sx * sw)

    def int4_matmul(x, w):  # bench/xla_compare's int4_matmul
        w4 = jnp.clip(jnp.round(w * 4.0), -8, 7).astype(jnp.int4)
        xq = jnp.clip(jnp.round(x * 16.0), -127, 127).astype(jnp.int8)
        acc = lax.dot(xq, w4.astype(jnp.int8), preferred_element_type=jnp.int32)
        return acc.astype(jnp.float32) / 64.0

    def converts(x, i):
        outs = [x.astype(t).astype(jnp.float32) for t in (
            f8, e5m2, jnp.float8_e4m3fnuz, jnp.float8_e5m2fnuz, jnp.float8_e4m3b11fnuz,
            jnp.float8_e4m3, jnp.float8_e3m4, jnp.float8_e8m0fnu, jnp.float4_e2m1fn)]
        outs += [(x * 9.0).astype(t).astype(jnp.int32) for t in (jnp.int4, jnp.uint4, jnp.int2, jnp.uint2)]
        outs += [(i * 3).astype(t).astype(jnp.int32) for t in (jnp.int4, jnp.uint4, jnp.int2)]
        return outs + [(x * 300.0).astype(f8).astype(e5m2), (x * 300.0).astype(f8).astype(jnp.int32)]

    Case("narrow_f8_scaled_matmul", scaled_matmul, S((8, 32)), S((32, 4)))
    Case("narrow_int4_matmul", int4_matmul, S((8, 32)), S((32, 4)))
    Case("narrow_f8_elementwise", lambda x, y: (x * y + x, x.astype(e5m2) * y.astype(e5m2) - y.astype(e5m2),
                                                jnp.exp(x) / (y + f8(1))), S((24,), f8), S((24,), f8))
    # Max / min in any order, and adds of two elements (one rounding each, whatever the order).
    Case("narrow_f8_reduce", lambda x: (jnp.max(x, axis=1), jnp.min(x, axis=0),
                                        lax.reduce(x[:, :2], f8(0), lax.add, (1,)),
                                        jnp.sum(x.astype(jnp.float32), axis=1)), S((6, 5), f8))
    Case("narrow_converts", converts, S((40,)), S((40,), np.int32))


def ExtraOpCases():
    """topk, fft and jnp.linalg (LAPACK custom-calls on CPU): complex results are compared as real
    and imaginary parts."""
    from jax.scipy.linalg import solve_triangular
    Case("top_k_rows", lambda x: lax.top_k(x, 3), S((4, 9)))
    Case("fft_odd_length", lambda x: (jnp.real(jnp.fft.fft(x)), jnp.imag(jnp.fft.ifft(x))), S((3, 6)))
    Case("rfft2_irfft", lambda x: (jnp.abs(jnp.fft.rfft2(x)), jnp.fft.irfft(jnp.fft.rfft(x) * 2.0, n=8)), S((4, 8)))

    def spd(a):
        return a @ a.T + 4.0 * jnp.eye(a.shape[0], dtype=a.dtype)

    Case("cholesky_lapack", lambda a: jnp.linalg.cholesky(spd(a)), S((5, 5)))
    Case("solve_triangular_lapack", lambda a, b: (solve_triangular(spd(a), b, lower=True),
                                                  solve_triangular(spd(a), b, lower=False, trans=1)),
         S((4, 4)), S((4, 3)))
    Case("linalg_solve_det_inv", lambda a, b: (jnp.linalg.solve(spd(a), b), jnp.linalg.det(spd(a)),
                                               jnp.linalg.inv(spd(a))), S((4, 4)), S((4,)))


def LapackCases():
    """jnp.linalg / jax.scipy.linalg ops JAX lowers on CPU to the other LAPACK custom-calls (geqrf,
    orgqr, ormqr, geqp3, syevd / heevd, gesdd, gesvd, geev, gees, gehrd, sytrd, gtsv): compared by
    exec/executable_lapack_refs_test.cc (complex outputs as complex .npy). f64 cases lower under
    jax.enable_x64. Matrices are made well conditioned (a diagonal shift) where the op needs it."""
    import jax.scipy.linalg as jsl
    from jax.lax import linalg as lax_linalg

    def sym(a):
        return (a + jnp.swapaxes(a, -1, -2).conj()) / 2

    def cplx(a):
        # A complex matrix from Input's real values: a + i * (a with its rows reversed).
        return a + 1j * a[..., ::-1, :]

    def shift(a, by=3.0):
        return a + by * jnp.eye(a.shape[-1], dtype=a.dtype)

    def generic(a):
        # Input's matrices are often singular (their entries are near-arithmetic sequences mod 101):
        # the vectors of a zero singular value or eigenvalue are not unique and follow rounding,
        # which differs between BLAS builds. + 2 I (exact in binary) makes them well conditioned.
        return a + 2.0 * jnp.eye(*a.shape[-2:], dtype=a.dtype)

    def schur_invariants(a):
        # Complex Schur vectors are unique only up to a unit phase per column (Z D with T -> D^H T D),
        # and the phases LAPACK ends with follow rounding: they differ between OpenBLAS's kernels
        # (OPENBLAS_CORETYPE=Haswell vs SkylakeX). Compare what the phases leave alone: T's diagonal,
        # |T|, |Z| and Z T Z^H.
        t, z = jsl.schur(a)
        return jnp.diagonal(t), jnp.abs(t), jnp.abs(z), z @ t @ jnp.conj(z.T)

    f64 = np.float64
    Case("lapack_qr_batch", lambda a: jnp.linalg.qr(a), S((3, 5, 4)))
    Case("lapack_qr_wide", lambda a: jnp.linalg.qr(a), S((3, 5)))
    Case("lapack_qr_complete_c64", lambda a: jnp.linalg.qr(cplx(a), mode="complete"), S((5, 3), np.complex64))
    Case("lapack_qr_pivoting", lambda a: jsl.qr(a, pivoting=True), S((5, 4)))
    Case("lapack_qr_multiply", lambda a, c: jsl.qr_multiply(a, c), S((5, 3)), S((5,)))
    Case("lapack_eigh", lambda a: jnp.linalg.eigh(sym(a)), S((2, 5, 5)))
    Case("lapack_eigh_upper", lambda a: jnp.linalg.eigh(a, UPLO="U", symmetrize_input=False), S((4, 4)))
    Case("lapack_eigvalsh_c64", lambda a: jnp.linalg.eigvalsh(sym(cplx(a))), S((5, 5), np.complex64))
    Case("lapack_svd_full", lambda a: jnp.linalg.svd(generic(a)), S((2, 6, 4)))
    Case("lapack_svd_values", lambda a: jnp.linalg.svd(generic(a), compute_uv=False), S((3, 5, 5)))
    Case("lapack_svd_values_c64", lambda a: jnp.linalg.svd(cplx(a), compute_uv=False), S((4, 3), np.complex64))
    Case("lapack_svd_qr_algorithm", lambda a: lax_linalg.svd(generic(a), full_matrices=False,
                                                             algorithm=lax_linalg.SvdAlgorithm.QR), S((4, 6)))
    Case("lapack_eig", lambda a: jnp.linalg.eig(generic(a)), S((5, 5)))
    Case("lapack_eig_c64", lambda a: jnp.linalg.eig(generic(cplx(a))), S((4, 4), np.complex64))
    Case("lapack_schur", lambda a: jsl.schur(generic(a)), S((5, 5)))
    Case("lapack_schur_c64", lambda a: schur_invariants(generic(cplx(a))), S((4, 4), np.complex64))
    Case("lapack_hessenberg", lambda a: jsl.hessenberg(a, calc_q=True), S((5, 5)))
    Case("lapack_tridiagonal", lambda a: lax_linalg.tridiagonal(sym(a), lower=True), S((5, 5)))
    Case("lapack_tridiagonal_solve", lambda dl, d, du, b: lax_linalg.tridiagonal_solve(dl, d + 4.0, du, b),
         S((2, 6)), S((2, 6)), S((2, 6)), S((2, 6, 3)))
    Case("lapack_pinv_lstsq", lambda a, b: (jnp.linalg.pinv(a), *jnp.linalg.lstsq(a, b)), S((5, 3)), S((5, 2)))
    Case("lapack_det_slogdet_solve_inv", lambda a, b: (jnp.linalg.det(shift(a)), *jnp.linalg.slogdet(shift(a)),
                                                       jnp.linalg.solve(shift(a), b), jnp.linalg.inv(shift(a))),
         S((2, 4, 4)), S((2, 4, 1)))
    with jax.enable_x64(True):
        Case("lapack_qr_complete_f64", lambda a: jnp.linalg.qr(a, mode="complete"), S((6, 4), f64))
        Case("lapack_eigh_f64", lambda a: jnp.linalg.eigh(sym(a)), S((3, 4, 4), f64))
        Case("lapack_svd_economy_f64", lambda a: jnp.linalg.svd(generic(a), full_matrices=False), S((4, 6), f64))
        Case("lapack_eigvals_f64", lambda a: jnp.linalg.eigvals(generic(a)), S((2, 4, 4), f64))
        Case("lapack_schur_f64", lambda a: jsl.schur(generic(a)), S((4, 4), f64))
        Case("lapack_hessenberg_f64", lambda a: jsl.hessenberg(a, calc_q=True), S((2, 5, 5), f64))
        Case("lapack_tridiagonal_upper_f64", lambda a: lax_linalg.tridiagonal(sym(a), lower=False), S((4, 4), f64))
        Case("lapack_tridiagonal_solve_f64", lambda dl, d, du, b: lax_linalg.tridiagonal_solve(dl, d + 4.0, du, b),
             S((5,), f64), S((5,), f64), S((5,), f64), S((5, 2), f64))
        Case("lapack_pinv_lstsq_f64", lambda a, b: (jnp.linalg.pinv(a), *jnp.linalg.lstsq(a, b)),
             S((3, 5), f64), S((3,), f64))
        Case("lapack_det_slogdet_solve_inv_f64",
             lambda a, b: (jnp.linalg.det(shift(a)), *jnp.linalg.slogdet(shift(a)), jnp.linalg.solve(shift(a), b),
                           jnp.linalg.inv(shift(a))), S((4, 4), f64), S((4,), f64))


if __name__ == "__main__":
    ONLY.extend(sys.argv[1:])
    sys.exit(main())
