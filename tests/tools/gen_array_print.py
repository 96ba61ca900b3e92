#!/usr/bin/env python3
"""Generates src/xshard/core/array_print_test_cases.inc: how real numpy and JAX print arrays.

Each case is an array (dtype, dims, raw little-endian bytes or "iota") with the str() and the
JAX repr() the reference prints for it, plus numpy.format_float_positional / _scientific and
float-scalar str() cases for the Dragon4 port. array_print_test.cc and float_format_test.cc
compare xshard's output with these byte for byte.

Run with the reference environment (JAX 0.10.2, numpy 2.x, ml_dtypes):
    /opt/jaxref/bin/python tests/tools/gen_array_print.py
"""
import os
import struct
import warnings

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

warnings.simplefilter("ignore", RuntimeWarning)  # casts that overflow to inf are intended

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "src", "xshard", "core", "array_print_test_cases.inc")

# numpy / ml_dtypes dtype -> xshard DType name.
DTYPES = {
    "bool": "pred", "int4": "s4", "int8": "s8", "int16": "s16", "int32": "s32", "int64": "s64",
    "uint4": "u4", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float8_e4m3fn": "f8e4m3fn", "float8_e4m3b11fnuz": "f8e4m3b11fnuz",
    "float8_e5m2": "f8e5m2", "float8_e8m0fnu": "f8e8m0fnu", "float16": "f16",
    "bfloat16": "bf16", "float32": "f32", "float64": "f64", "complex64": "c64",
    "complex128": "c128", "int2": "s2", "uint2": "u2", "float8_e4m3fnuz": "f8e4m3fnuz",
    "float8_e5m2fnuz": "f8e5m2fnuz", "float8_e4m3": "f8e4m3", "float8_e3m4": "f8e3m4",
    "float4_e2m1fn": "f4e2m1fn",
}


def raw(a):
    """xshard's storage bytes: numpy's, except int4 / int2 as a sign-extended int8 (ml_dtypes keeps
    the low bits only)."""
    if a.dtype in (ml_dtypes.int4, ml_dtypes.int2):
        return a.astype(np.int8).tobytes()
    return a.tobytes()


def cstr(s):
    assert ")xs\"" not in s
    return 'R"xs(' + s + ')xs"'


def print_cases():
    rng = np.random.default_rng(0)
    f16, bf16 = np.float16, ml_dtypes.bfloat16
    cases = []  # (name, numpy array, iota?)

    def add(name, a, iota=False):
        cases.append((name, np.asarray(a), iota))

    def iota(name, dtype, dims):
        cases.append((name, np.arange(int(np.prod(dims))).reshape(dims).astype(dtype), True))

    nan, inf = np.nan, np.inf
    # Scalars.
    for v in [4.0, -0.0, nan, inf, -inf, 1e20, 1e-5, 0.1, 123456789.0, 1e6, 999999.0, 1e-4]:
        add(f"f32 scalar {v}", np.float32(v))
    for v in [0.1, 1e16, 1e15, 123456789.0, 1e-300, -2.5]:
        add(f"f64 scalar {v}", np.float64(v))
    for v in [0.1, 65504.0, 999.0, 1000.0, 6e-8, -0.0]:
        add(f"f16 scalar {v}", f16(v))
    for v in [0.1, 1e10, -3.0, nan, -inf]:
        add(f"bf16 scalar {v}", np.array(v, bf16))
    add("s32 scalar", np.int32(-7))
    add("u64 scalar", np.uint64(2**64 - 1))
    add("s64 scalar", np.int64(-2**63))
    add("pred scalar true", np.bool_(True))
    add("pred scalar false", np.bool_(False))
    add("s4 scalar", np.array(-3, ml_dtypes.int4))
    for v in [1 + 2j, 2j, complex(-0.0, -2), 1.5 - 0.5j, complex(0.0, -0.0), 1e20 + 1j, 1e-5j,
              complex(nan, inf), complex(0, nan)]:
        add(f"c64 scalar {v}", np.complex64(v))
    add("c128 scalar", np.complex128(0.1 + 1e-7j))
    # Empty arrays.
    add("f32 (0,)", np.zeros((0,), np.float32))
    add("f32 (0,3)", np.zeros((0, 3), np.float32))
    add("f32 (2,0,3)", np.zeros((2, 0, 3), np.float32))
    add("s32 (0,)", np.zeros((0,), np.int32))
    add("pred (3,0)", np.zeros((3, 0), np.bool_))
    # 1-D floats.
    add("f32 ints", np.array([1, 2, 3], np.float32))
    add("f32 one", np.array([0.1028], np.float32))
    add("f32 mixed signs", np.array([1.5, -2.25, 3.125], np.float32))
    add("f32 tenths", np.array([0.1, 0.2, 0.3], np.float32))
    add("f64 tenths", np.array([0.1, 0.2, 0.3]))
    add("f32 small+one -> exp", np.array([1e-5, 1.0], np.float32))
    add("f32 big ratio -> exp", np.array([1e9, 1], np.float32))
    add("f32 1e-4 stays positional", np.array([0.0001, 0.0002], np.float32))
    add("f32 1e6 -> exp", np.array([1e6, 1], np.float32))
    add("f32 999999 positional", np.array([999999, 1000], np.float32))
    add("f64 1e8 -> exp", np.array([1e8, 1]))
    add("f64 99999999 positional", np.array([99999999.0, 100000.0]))
    add("f32 nonfinite", np.array([1, 2, nan, inf, -inf], np.float32))
    add("f32 nans", np.array([nan, nan], np.float32))
    add("f32 nan inf", np.array([nan, inf], np.float32))
    add("f32 nan -inf", np.array([nan, -inf], np.float32))
    add("f32 zeros", np.array([0.0, -0.0], np.float32))
    add("f32 neg zero", np.array([-0.0], np.float32))
    add("f32 zero and tiny", np.array([1e-5, 0], np.float32))
    add("f64 tiny exp3", np.array([1e-300, 1]))
    add("f64 third", np.array([1 / 3, 2 / 3, 1.0]))
    add("f32 precision cut", np.array([0.123456789, 1.000000119], np.float32))
    add("f64 precision cut", np.array([0.123456789012, 1.5, 2.000000001]))
    add("f32 normal", rng.standard_normal(10).astype(np.float32))
    add("f64 normal", rng.standard_normal(7))
    add("f32 mixed magnitudes", np.array([100.5, 2.25, 0.001953125], np.float32))
    add("f32 exp mixed", np.array([1.5e-7, 2.0, 3e5], np.float32))
    add("f64 exp neg", np.array([-1.5e-7, 2.0, -3e12]))
    # f16.
    add("f16 seed matrix", (np.repeat(np.arange(1, 5)[:, None], 16, axis=1).astype(f16)
                            @ np.repeat(np.arange(1, 5)[:, None], 16, axis=1).astype(f16).T))
    add("f16 1000 -> exp", np.array([1, 2.5, 1000], f16))
    add("f16 999 positional", np.array([999, 1], f16))
    add("f16 tenths", np.array([0.1, 0.2, 0.3], f16))
    add("f16 extremes", np.array([65504, -65504, 6e-8], f16))
    add("f16 ratio rounding", np.array([1000.5 / 1.0009765625, 1.0009765625], f16))
    add("f16 normal", rng.standard_normal(6).astype(f16))
    # ml_dtypes types print with repr() of each element.
    add("bf16 vec", np.array([1, 2.5, 3], bf16))
    add("bf16 2d", np.array([[1, 2.5, 3], [4, 5, 1e10]], bf16))
    add("bf16 specials", np.array([nan, -inf, -0.0, 1e-20], bf16))
    add("f8e4m3fn", np.array([1, 2.5, -3, 0.015625, 448], ml_dtypes.float8_e4m3fn))
    add("f8e5m2", np.array([1, 2.5, -3, 57344, inf], ml_dtypes.float8_e5m2))
    add("f8e4m3b11fnuz", np.array([1, 2.5, -3, 30, nan], ml_dtypes.float8_e4m3b11fnuz))
    add("f8e8m0fnu", np.array([1, 2, 0.5, 2.0**-127, nan], ml_dtypes.float8_e8m0fnu))
    add("s4", np.array([-8, -1, 0, 7], ml_dtypes.int4))
    add("u4", np.array([0, 1, 15], ml_dtypes.uint4))
    add("f8e4m3fnuz", np.array([1, 2.5, -3, 240, nan], ml_dtypes.float8_e4m3fnuz))
    add("f8e5m2fnuz", np.array([1, -0.0, 57344, 2.0**-17], ml_dtypes.float8_e5m2fnuz))
    add("f8e4m3", np.array([1, 2.5, -240, inf], ml_dtypes.float8_e4m3))
    add("f8e3m4", np.array([[1, 2.5], [-15.5, 0.0625]], ml_dtypes.float8_e3m4))
    add("f4e2m1fn", np.array([1, 2.5, -3, 0.0625, 6], ml_dtypes.float4_e2m1fn))
    add("s2", np.array([-2, -1, 0, 1], ml_dtypes.int2))
    add("u2", np.array([[0, 1], [2, 3]], ml_dtypes.uint2))
    # Integers.
    add("s8", np.array([-128, 0, 127], np.int8))
    add("u8", np.array([0, 7, 255], np.uint8))
    add("s16", np.array([[-300, 5], [12, 13]], np.int16))
    add("s32 2d", np.array([[8, 9], [12, 13]], np.int32))
    add("s64 big", np.array([2**62, -2**63, 5], np.int64))
    add("u64 big", np.array([2**64 - 1, 0], np.uint64))
    add("u32", np.array([4000000000, 1], np.uint32))
    add("s32 negative", np.array([-1, -22, 333], np.int32))
    # Bool.
    add("pred vec", np.array([True, False]))
    add("pred all false", np.array([False, False]))
    add("pred 2d", np.array([[True, False, True], [False, False, True]]))
    # Complex.
    add("c64 vec", np.array([1 + 2j, 2], np.complex64))
    add("c64 nonfinite", np.array([1.5 - 0.5j, complex(nan, 1), complex(3, -inf)], np.complex64))
    add("c64 exp", np.array([1e-5 + 1j, 2 - 3j], np.complex64))
    add("c128 normal", (rng.standard_normal(4) + 1j * rng.standard_normal(4)))
    add("c64 2d", np.array([[1 + 1j, -2.5j], [0, 3.25 + 0j]], np.complex64))
    # Higher rank.
    iota("f32 iota 3x4", np.float32, (3, 4))
    add("f32 halves 3x4", (np.arange(12).reshape(3, 4) * 0.5).astype(np.float32))
    add("f32 normal 3x4", rng.standard_normal((3, 4)).astype(np.float32))
    iota("f32 iota 2x3x4", np.float32, (2, 3, 4))
    iota("s32 iota 2x3x4", np.int32, (2, 3, 4))
    iota("s32 iota 2x2x2x2", np.int32, (2, 2, 2, 2))
    iota("pred iota 2x3", np.bool_, (2, 3))
    add("f32 neg 2x2x2", -np.arange(8).reshape(2, 2, 2).astype(np.float32) / 4)
    # Line wrapping.
    iota("f32 iota 30", np.float32, (30,))
    iota("f32 iota 12", np.float32, (12,))
    iota("f32 iota 13", np.float32, (13,))
    iota("f32 iota 14", np.float32, (14,))
    iota("s32 iota 40", np.int32, (40,))
    iota("s64 iota 100", np.int64, (100,))
    add("f64 normal 5x12", rng.standard_normal((5, 12)))
    add("f32 normal 2x3x9", rng.standard_normal((2, 3, 9)).astype(np.float32))
    add("c64 wrap", (rng.standard_normal(12) + 1j * rng.standard_normal(12)).astype(np.complex64))
    add("pred wrap", rng.standard_normal(30) > 0)
    add("bf16 wrap", rng.standard_normal(20).astype(bf16))
    # Summarization (more than 1000 elements).
    iota("f32 iota 20x100", np.float32, (20, 100))
    iota("s32 iota 1001", np.int32, (1001,))
    iota("s32 iota 10x10x11", np.int32, (10, 10, 11))
    iota("f32 iota 3x400", np.float32, (3, 400))
    iota("f64 iota 1001", np.float64, (1001,))
    iota("pred iota 1001", np.bool_, (1001,))
    iota("f16 iota 2x600", np.float16, (2, 600))
    add("f32 normal 1100", rng.standard_normal(1100).astype(np.float32))
    add("f32 summarized nonfinite", np.concatenate(
        [[nan, 1.5], np.zeros(1000), [-inf, 2.0]]).astype(np.float32))
    return cases


def float_format_cases():
    rng = np.random.default_rng(1)
    values = {
        np.float16: [0.1, 0.3, 1.0, 65504, 6e-8, 6.1e-5, 1000, 3.140625, 2.0**-14, 2.0**-13, 0.0,
                     -2.5],
        np.float32: [0.1, 1 / 3, 1e-5, 1e20, 123456789, 16777216, 2.0**-126, 2.0**-149, 2.0**-125,
                     1.5e-39, 3.4028235e38, 0.5, 9.5, 0.0, -0.0, 999999.94, 1.0000001],
        np.float64: [0.1, 1 / 3, 1e-300, 5e-324, 2.0**-1022, 2.0**-1021, 1.7976931348623157e308,
                     123456789012345678, 0.3, 2.5, 1e16, 9.999999999999999e22, 0.0, -1e-7],
    }
    for t, n in [(np.float16, 12), (np.float32, 20), (np.float64, 20)]:
        exps = rng.integers(-12, 12, n)
        values[t] += list((rng.standard_normal(n) * 10.0 ** exps).astype(t))
    option_sets = [
        dict(),
        dict(trim="."),
        dict(trim="0"),
        dict(trim="-"),
        dict(precision=8, trim="."),
        dict(precision=3, unique=False),
        dict(precision=8, min_digits=8, trim="k"),
        dict(precision=2, trim="k", sign=True),
        dict(precision=8, trim=".", pad_left=4, pad_right=9),
        dict(precision=5, fractional=False, trim="k"),
    ]
    sci_option_sets = [
        dict(),
        dict(trim="-"),
        dict(precision=8, trim="."),
        dict(precision=4, min_digits=4, trim="k", pad_left=2, exp_digits=3),
        dict(precision=3, unique=False),
        dict(precision=0, trim="k", sign=True),
    ]
    cases = []
    widths = {np.float16: 16, np.float32: 32, np.float64: 64}
    for t, vs in values.items():
        for v in vs:
            x = t(v)
            for opts in option_sets:
                if not opts.get("fractional", True) and opts.get("precision") == 0:
                    continue
                cases.append((widths[t], float(x), False, opts,
                              np.format_float_positional(x, **opts)))
            for opts in sci_option_sets:
                cases.append((widths[t], float(x), True, opts,
                              np.format_float_scientific(x, **opts)))
    scalar_cases = []
    for t, vs in values.items():
        for v in vs + [1e-4, 9.99e-5, 1e3, 999.5, 1e6, 1e16, np.nan, np.inf, -np.inf]:
            x = t(v)
            scalar_cases.append((widths[t], float(x), str(x)))
    return cases, scalar_cases


def hexbits(d):
    return "0x%016x" % struct.unpack("<Q", struct.pack("<d", d))[0]


def main():
    lines = ["// Generated by tests/tools/gen_array_print.py from numpy %s, JAX %s and ml_dtypes %s;"
             % (np.__version__, jax.__version__, ml_dtypes.__version__),
             "// do not edit. Included by array_print_test.cc and float_format_test.cc.", "",
             "#ifdef XS_PRINT_CASES"]
    for name, a, is_iota in print_cases():
        j = jnp.asarray(a)
        dtype = DTYPES[a.dtype.name]
        data = "iota" if is_iota else raw(a).hex()
        dims = ", ".join(str(d) for d in a.shape)
        lines.append("{%s, %s, {%s}, %s, %s, %s}," % (
            cstr(name), cstr(dtype), dims, cstr(data), cstr(str(j)), cstr(repr(j))))
    lines.append("#endif")
    ff, scalars = float_format_cases()
    lines.append("#ifdef XS_FLOAT_FORMAT_CASES")
    for width, value, sci, opts, expected in ff:
        o = dict(precision=-1, min_digits=-1, unique=True, fractional=True, trim="k", sign=False,
                 pad_left=-1, pad_right=-1, exp_digits=-1)
        o.update(opts)
        lines.append('{%d, %s, %s, %d, %d, %s, %s, \'%s\', %s, %d, %d, %d, "%s"},' % (
            width, hexbits(value), "true" if sci else "false", o["precision"], o["min_digits"],
            str(o["unique"]).lower(), str(o["fractional"]).lower(), o["trim"],
            str(o["sign"]).lower(), o["pad_left"], o["pad_right"], o["exp_digits"], expected))
    lines.append("#endif")
    lines.append("#ifdef XS_SCALAR_STR_CASES")
    for width, value, expected in scalars:
        lines.append('{%d, %s, "%s"},' % (width, hexbits(value), expected))
    lines.append("#endif")
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
