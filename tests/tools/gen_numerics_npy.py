#!/usr/bin/env python3
"""Writes the small .npy files in tests/data/numerics/ that tests/cli/numerics.test compares with
`xshard numerics`, with real numpy (and ml_dtypes for bf16), and prints numpy's own statistics for
each pair so that the expected output in the .test file can be checked against numpy.

Run with an environment that has numpy 2.x + ml_dtypes:
    /tmp/jaxvenv/bin/python tests/tools/gen_numerics_npy.py
"""
import os

import ml_dtypes
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "numerics")


def save(name, array):
    np.save(os.path.join(OUT, name), array)


def report(name, got, want, rtol=1e-5, atol=1e-8, threshold=None, equal_nan=False):
    g, w = got.astype(np.float64), want.astype(np.float64)
    d = np.abs(g - w)
    ok = ~(np.isnan(g) | np.isnan(w))
    bad = d > threshold if threshold is not None else ~np.isclose(g, w, rtol, atol, equal_nan)
    bad = bad & ok if threshold is not None else bad
    print(f"{name}: allclose={np.allclose(g, w, rtol, atol, equal_nan)} "
          f"not_close={int((~np.isclose(g, w, rtol, atol, equal_nan)).sum())} "
          f"max={d[ok].max()} mean={d[ok].mean()} median={np.median(d[ok])} errors={int(bad.sum())}")


def main():
    os.makedirs(OUT, exist_ok=True)
    # got - want = [[0, 0.5, 0], [0.5, 0, 0.25]]
    got = np.array([[1, 2.5, 3], [4.5, 5, 6]], np.float32)
    want = np.array([[1, 2, 3], [4, 5, 6.25]], np.float32)
    save("got_2x3.npy", got)
    save("want_2x3.npy", want)
    report("2x3", got, want)
    report("2x3 atol=rtol=0.1", got, want, rtol=0.1, atol=0.1)
    report("2x3 atol=0.5", got, want, rtol=0, atol=0.5)
    # Errors: the transpose's shape, an int32 array of the same shape.
    save("want_3x2.npy", want.T.copy())
    save("want_2x3_i4.npy", want.astype(np.int32))
    # bf16 arange(16) / 16 against f32 zeros: diffs i / 16, all exact in bf16.
    got4 = (np.arange(16).reshape(4, 4) / 16).astype(ml_dtypes.bfloat16)
    want4 = np.zeros((4, 4), np.float32)
    save("got_4x4_bf16.npy", got4)
    save("want_4x4_f32.npy", want4)
    report("4x4", got4, want4, threshold=0.5)
    for r in range(2):
        for c in range(2):
            q = np.abs(got4.astype(np.float64))[2 * r:2 * r + 2, 2 * c:2 * c + 2]
            print(f"  quadrant {r},{c}: mean={q.mean()} max={q.max()} >0.5: {int((q > 0.5).sum())}")
    # NaN at the same place in both.
    nan = np.array([np.nan, 1, 2], np.float32)
    save("nan.npy", nan)
    report("nan", nan, nan)
    report("nan equal_nan", nan, nan, equal_nan=True)
    with open(os.path.join(OUT, "not_npy.npy"), "w") as f:
        f.write("this is not an npy file\n")


if __name__ == "__main__":
    main()
