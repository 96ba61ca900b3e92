#!/usr/bin/env python3
"""Generates tests/data/narrow_types/<type>.txt: reference conversions and arithmetic for the
narrow element types the CPU kernels compute on by widening (kernels/narrow_types_test.cc).

For each float type (the float8 types and f4e2m1fn):
  * decode: every code to f32 (ml_dtypes), and each finite value back to its code;
  * f32 / f16 / bf16 / f64 / s32 -> the type over specials, exact ties, one ulp either side of
    ties, subnormals, overflow edges and random values (ml_dtypes; s32 through f32, as XLA
    converts it);
  * the type -> f16 / bf16 / s32 for every code;
  * add / subtract / multiply / divide (a sample of pairs; every pair for f4e2m1fn) and sqrt:
    the f32 result rounded to f16 and then to the type (f8e8m0fnu: once, from f32), as XLA's CPU
    backend computes them (its float normalization widens them to f16).
For s2 / s4 / u2 / u4: f32 / f64 / s32 -> the type, the type -> f32, and every pair of every
binary op and every value of every unary op (JAX's results).

Where XLA and ml_dtypes differ, the tables hold XLA's value: f32 NaN -> f4e2m1fn is 0x8 (-0;
ml_dtypes gives -NaN +0), an fnuz NaN decodes to +NaN (ml_dtypes: -NaN), f64 rounds once
(ml_dtypes goes through f32), and a NaN converted to f8e5m2 from f16 or bf16 (and an f8e5m2
arithmetic NaN, rounded through f16) is 0x7f whatever its sign. Every table row that JAX can
compute is checked against JAX's CPU result before it is written (the script fails on a
difference), except e8m0fnu's smallest value 2^-127 and f32-subnormal results, which XLA's CPU
runtime flushes to zero (xshard does not flush, as for f32), and f4e2m1fn +-6 -> integers, which
XLA 0.10.2 saturates as if infinite.

Run with JAX 0.10.2 and ml_dtypes 0.6 (bench/jax_compare/.venv):
  bench/jax_compare/.venv/bin/python tests/tools/gen_narrow_type_tables.py
"""
import os
import warnings

import ml_dtypes as m
import numpy as np

warnings.simplefilter("ignore", RuntimeWarning)  # overflow to inf / nan is what is probed

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_platform_name", "cpu")
jax.config.update("jax_enable_x64", True)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "data", "narrow_types")

FLOATS = {"f8e4m3fn": m.float8_e4m3fn, "f8e4m3fnuz": m.float8_e4m3fnuz,
          "f8e4m3b11fnuz": m.float8_e4m3b11fnuz, "f8e4m3": m.float8_e4m3, "f8e5m2": m.float8_e5m2,
          "f8e5m2fnuz": m.float8_e5m2fnuz, "f8e3m4": m.float8_e3m4, "f8e8m0fnu": m.float8_e8m0fnu,
          "f4e2m1fn": m.float4_e2m1fn}
INTS = {"s2": (m.int2, -2, 2), "s4": (m.int4, -8, 8), "u2": (m.uint2, 0, 4), "u4": (m.uint4, 0, 16)}


def codes(name, t):
    return np.arange(16 if name == "f4e2m1fn" else 256, dtype=np.uint8).view(t)


def bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def jit(fn, *args):
    return np.asarray(jax.jit(fn)(*args))


def to_type(name, t, x32):
    """XLA's f32 -> t convert: ml_dtypes, except NaN -> f4e2m1fn is 0x8."""
    out = bits(np.asarray(x32, np.float32).astype(t)).copy()
    if name == "f4e2m1fn":
        out[np.isnan(x32)] = 0x8
    return out


def decode(name, t, c):
    f = bits(c.astype(np.float32)).copy()
    if "fnuz" in name:
        f[np.isnan(c.astype(np.float32))] = 0x7FC00000  # XLA's (and xshard's) single NaN is +NaN
    return f


def from_f16(name, t, h):
    """XLA's f16 / bf16 -> t convert: as from f32, except that every NaN -> f8e5m2 is 0x7f."""
    h32 = np.asarray(h).astype(np.float32)
    out = to_type(name, t, h32)
    if name == "f8e5m2":
        out[np.isnan(h32)] = 0x7F
    return out


def round_op(name, t, r32):
    """An op's f32 result rounded as XLA rounds it: through f16 (f8e8m0fnu: from f32)."""
    r32 = np.asarray(r32, np.float32)
    if name == "f8e8m0fnu":
        return to_type(name, t, r32)
    return from_f16(name, t, r32.astype(np.float16))


def f32_probes(name, t, rng):
    c = codes(name, t)
    vals = c.astype(np.float64)
    finite = np.unique(vals[np.isfinite(vals)])
    mids = (finite[:-1] + finite[1:]) / 2
    if len(mids) > 100:
        mids = rng.choice(mids, 100, replace=False)
    mids32 = mids.astype(np.float32)
    mids32 = mids32[mids32.astype(np.float64) == mids]
    pos = finite[finite > 0]
    out = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, finite.max(), -finite.max(),
           finite.max() * 1.0625, finite.max() * 2, 1e-30, -1e-30, 1e30, 1e-45, 2.0**-127, 2.0**-126,
           1.25 * 2.0**-127, 1.25 * 2.0**-126, 1.5, 2.5, 3.5, 7.0, 100.0]
    out += [pos.min(), pos.min() / 2, pos.min() * 0.75, pos.min() * 1.25, pos.min() * 1.5,
            -pos.min() / 2]
    out += list(finite)  # every finite value back to its code
    out += list(mids32) + list(np.nextafter(mids32, np.float32(np.inf)))
    out += list(np.nextafter(mids32, np.float32(-np.inf)))
    lo, hi = np.log2(pos.min()) - 2, np.log2(finite.max()) + 1
    out += list(2.0 ** rng.uniform(lo, hi, 100) * rng.choice([-1, 1], 100))
    out += list(rng.integers(0, 2**32, 60, dtype=np.uint64).astype(np.uint32).view(np.float32))
    return np.array(out, np.float32)


def check(what, got, want, skip=None):
    got, want = np.asarray(got), np.asarray(want)
    bad = got != want
    if skip is not None:
        bad &= ~skip
    if bad.any():
        i = np.nonzero(bad)[0][:5]
        raise SystemExit(f"{what}: JAX differs at {i}: {got[i]} vs table {want[i]}")


def float_table(name, t, rng):
    rows = []
    c = codes(name, t)
    code_bits = bits(c)
    dec = decode(name, t, c)
    check(f"{name} decode", bits(jit(lambda x: x.astype(jnp.float32), c)), dec)
    rows += [f"decode 0x{a:02x} 0x{b:08x}" for a, b in zip(code_bits, dec)]

    x = f32_probes(name, t, rng)
    enc = to_type(name, t, x)
    check(f"{name} from f32", bits(jit(lambda v: v.astype(t), x)), enc)
    rows += [f"f32 0x{a:08x} 0x{b:02x}" for a, b in zip(bits(x), enc)]

    # f64: ties of the type nudged by far less than an f32 ulp: XLA rounds once from the double
    # (ml_dtypes goes through f32, which lands on the tie), so the table rounds the nudged value's
    # f32 neighbour on its side of the tie (exact: the tie is an f32 and the nudge keeps the side).
    vals = c.astype(np.float64)
    finite = np.unique(vals[np.isfinite(vals)])
    mids = (finite[:-1] + finite[1:]) / 2
    mids = mids if len(mids) <= 60 else rng.choice(mids, 60, replace=False)
    x64 = np.concatenate([mids, mids + np.abs(mids) * 2.0**-40, mids - np.abs(mids) * 2.0**-40,
                          rng.standard_normal(40) * finite.max() / 4, [np.nan, np.inf, 1e300]])
    side = np.nextafter(x64.astype(np.float32), np.where(x64 > x64.astype(np.float32), np.float32(np.inf),
                                                         np.float32(-np.inf)))
    exact32 = x64.astype(np.float32).astype(np.float64) == x64
    enc64 = to_type(name, t, np.where(exact32 | ~np.isfinite(x64), x64.astype(np.float32), side))
    if name == "f8e8m0fnu":  # XLA: f64 values below 2^-127 are NaN (from f32 they clamp)
        enc64[(x64 > 0) & (x64 < 2.0**-127)] = 0xFF
    check(f"{name} from f64", bits(jit(lambda v: v.astype(t), x64)), enc64)
    rows += [f"f64 0x{a:016x} 0x{b:02x}" for a, b in zip(bits(x64), enc64)]

    for src, st in (("f16", np.float16), ("bf16", m.bfloat16)):
        xs = x.astype(st)
        e = from_f16(name, t, xs)
        check(f"{name} from {src}", bits(jit(lambda v: v.astype(t), xs)), e)
        rows += [f"{src} 0x{a:04x} 0x{b:02x}" for a, b in zip(bits(xs), e)]

    ints = np.array([0, 1, -1, 3, -7, 100, 448, 1000, 57344, 2**24 + 1, 0x5FFFFFFF, 2**31 - 1,
                     -2**31], np.int32)
    e = to_type(name, t, ints.astype(np.float32))
    check(f"{name} from s32", bits(jit(lambda v: v.astype(t), ints)), e)
    rows += [f"s32 {a} 0x{b:02x}" for a, b in zip(ints, e)]

    for dst, dt in (("f16", np.float16), ("bf16", m.bfloat16)):
        e = bits(c.astype(np.float32).astype(dt)).copy()
        if "fnuz" in name:
            e[np.isnan(c.astype(np.float32))] = 0x7E00 if dst == "f16" else 0x7FC0
        check(f"{name} to {dst}", bits(jit(lambda v: v.astype(dt), c)), e)
        rows += [f"to_{dst} 0x{a:02x} 0x{b:04x}" for a, b in zip(code_bits, e)]
    f = c.astype(np.float64)
    e = np.where(np.isnan(f), 0, np.clip(np.trunc(np.nan_to_num(f, posinf=2**31, neginf=-2**31)),
                                         -2**31, 2**31 - 1)).astype(np.int64)
    skip = (np.abs(f) == 6) if name == "f4e2m1fn" else None  # XLA 0.10.2 saturates +-6 as if inf
    check(f"{name} to s32", jit(lambda v: v.astype(jnp.int32), c), e, skip)
    rows += [f"to_s32 0x{a:02x} {b}" for a, b in zip(code_bits, e)]

    # Arithmetic: every pair of f4e2m1fn, a sample of the f8 pairs (with the special codes).
    n = len(c)
    if n == 16:
        ia, ib = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    else:
        special = [0, 1, 0x7F, 0x80, 0xFF, 0x38, 0x40, 0x7E, 0xFE, 0x7C]
        ia = np.concatenate([np.repeat(special, len(special)), rng.integers(0, n, 400)])
        ib = np.concatenate([np.tile(special, len(special)), rng.integers(0, n, 400)])
    a, b = c[ia], c[ib]
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    flushed = np.zeros(len(a), bool)
    if name == "f8e8m0fnu":  # XLA's runtime flushes f32 subnormals (2^-127 and tiny results)
        flushed = (bits(a) == 0) | (bits(b) == 0)
    for op, fn, ref in (("add", lambda p, q: p + q, np.add), ("sub", lambda p, q: p - q, np.subtract),
                        ("mul", lambda p, q: p * q, np.multiply), ("div", lambda p, q: p / q, np.divide)):
        r32 = ref(fa, fb)
        e = round_op(name, t, r32)
        skip = flushed | ((np.abs(r32) < 2.0**-126) & (r32 != 0)) if name == "f8e8m0fnu" else None
        check(f"{name} {op}", bits(jit(fn, a, b)), e, skip)
        keep = ~skip if skip is not None else np.ones(len(a), bool)
        if name == "f4e2m1fn":  # no NaN: XLA's 0x8 / 0x0 for a NaN result follows no one rule
            keep &= ~np.isnan(r32)
        rows += [f"{op} 0x{p:02x} 0x{q:02x} 0x{r:02x}" for p, q, r in zip(bits(a)[keep], bits(b)[keep], e[keep])]
    ca = c[1:] if name == "f8e8m0fnu" else c
    if name == "f4e2m1fn":
        ca = ca[ca.astype(np.float32) >= 0]
    e = round_op(name, t, np.sqrt(ca.astype(np.float32)))
    check(f"{name} sqrt", bits(jit(jnp.sqrt, ca)), e)
    rows += [f"sqrt 0x{p:02x} 0x{r:02x}" for p, r in zip(bits(ca), e)]
    return rows


def int_table(name, t, lo, hi, rng):
    rows = []
    v = np.arange(lo, hi, dtype=np.int8).astype(t)
    x = np.concatenate([np.array([0, -0.0, 0.5, -0.5, 0.99, -0.99, 1, -1, 1.5, -1.5, 2, -2, 3.9, -3.9,
                                  7.5, -8.5, 15.5, 16, 100, -100, np.inf, -np.inf, np.nan, 1e30],
                                 np.float32), rng.standard_normal(40).astype(np.float32) * 8])
    sat = np.where(np.isnan(x), 0, np.clip(np.trunc(np.nan_to_num(x, posinf=1e9, neginf=-1e9)), lo,
                                           hi - 1)).astype(np.int64)
    check(f"{name} from f32", jit(lambda q: q.astype(t), x).astype(np.int64), sat)
    rows += [f"f32 0x{a:08x} {b}" for a, b in zip(bits(x), sat)]
    x64 = x.astype(np.float64) + 0.25
    sat = np.where(np.isnan(x64), 0, np.clip(np.trunc(np.nan_to_num(x64, posinf=1e9, neginf=-1e9)),
                                             lo, hi - 1)).astype(np.int64)
    check(f"{name} from f64", jit(lambda q: q.astype(t), x64).astype(np.int64), sat)
    rows += [f"f64 0x{a:016x} {b}" for a, b in zip(bits(x64), sat)]
    s = np.arange(-40, 40, dtype=np.int32)
    width = hi - lo
    wrap = ((s - lo) % width + lo).astype(np.int64)
    check(f"{name} from s32", jit(lambda q: q.astype(t), s).astype(np.int64), wrap)
    rows += [f"s32 {a} {b}" for a, b in zip(s, wrap)]
    e = v.astype(np.float32)
    check(f"{name} to f32", jit(lambda q: q.astype(jnp.float32), v), e)
    rows += [f"to_f32 {a} 0x{b:08x}" for a, b in zip(v.astype(np.int64), bits(e))]
    a, b = np.repeat(v, len(v)), np.tile(v, len(v))
    for op, fn in (("add", lax.add), ("sub", lax.sub), ("mul", lax.mul), ("div", lax.div),
                   ("rem", lax.rem), ("max", lax.max), ("min", lax.min), ("and", lax.bitwise_and),
                   ("or", lax.bitwise_or), ("xor", lax.bitwise_xor), ("shl", lax.shift_left),
                   ("shra", lax.shift_right_arithmetic), ("shrl", lax.shift_right_logical)):
        r = jit(fn, a, b).astype(np.int64)
        rows += [f"{op} {p} {q} {w}" for p, q, w in zip(a.astype(np.int64), b.astype(np.int64), r)]
    for op, fn in (("neg", lax.neg), ("not", lax.bitwise_not), ("popcnt", lax.population_count),
                   ("clz", lax.clz)):
        r = jit(fn, v).astype(np.int64)
        rows += [f"{op} {p} {w}" for p, w in zip(v.astype(np.int64), r)]
    return rows


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(11)
    header = [f"# Generated by tests/tools/gen_narrow_type_tables.py (ml_dtypes {m.__version__}, numpy "
              f"{np.__version__}, checked against JAX {jax.__version__} on CPU); do not edit.",
              "# <op> <operands...> <result>: float bits in hex, integers in decimal."]
    for name, t in FLOATS.items():
        rows = float_table(name, t, rng)
        with open(os.path.join(OUT, name + ".txt"), "w") as f:
            f.write("\n".join(header + rows) + "\n")
        print(name, len(rows))
    for name, (t, lo, hi) in INTS.items():
        rows = int_table(name, t, lo, hi, rng)
        with open(os.path.join(OUT, name + ".txt"), "w") as f:
            f.write("\n".join(header + rows) + "\n")
        print(name, len(rows))


if __name__ == "__main__":
    main()
