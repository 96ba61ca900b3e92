#!/usr/bin/env python3
"""Writes the small .npy files in tests/data/npy/ with real numpy (and ml_dtypes), so that
src/xshard/core/npy_test.cc checks xshard's reader against files numpy itself wrote.

Run with the reference environment (numpy 2.x + ml_dtypes):
    /opt/jaxref/bin/python tests/tools/gen_npy.py
Every file holds values the test rebuilds by hand; the comment next to each says which.
"""
import io
import os

import ml_dtypes
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "npy")


def save(name, array, version=None):
    path = os.path.join(OUT, name)
    if version is None:
        np.save(path, array)
    else:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, array, version=version)


def main():
    os.makedirs(OUT, exist_ok=True)
    # iota(6).reshape(2, 3) in every plain dtype: values 0..5.
    for name, dt in [("bool", np.bool_), ("i1", np.int8), ("i2", np.int16), ("i4", np.int32),
                     ("i8", np.int64), ("u1", np.uint8), ("u2", np.uint16), ("u4", np.uint32),
                     ("u8", np.uint64), ("f2", np.float16), ("f4", np.float32),
                     ("f8", np.float64), ("c8", np.complex64), ("c16", np.complex128)]:
        save(f"iota_{name}.npy", np.arange(6).reshape(2, 3).astype(dt))
    # Signed / fractional values: [[-1.5, 0.25, 3], [-0.0, 65504, 1e-3]] as f4; as bf16 (ml_dtypes
    # saves it with descr '<V2'); as f8e4m3fn (descr '<V1'); int4 [[-8, -1, 0], [1, 2, 7]].
    vals = np.array([[-1.5, 0.25, 3.0], [-0.0, 65504.0, 1e-3]])
    save("vals_f4.npy", vals.astype(np.float32))
    save("vals_bf16.npy", vals.astype(ml_dtypes.bfloat16))
    save("vals_f8e4m3fn.npy", np.array([[-1.5, 0.25, 3.0], [-0.0, 448.0, 0.015625]],
                                        ml_dtypes.float8_e4m3fn))
    save("vals_int4.npy", np.array([[-8, -1, 0], [1, 2, 7]], ml_dtypes.int4))
    # f8e5m2 [-1.5, 0.25, 57344] (ml_dtypes 0.6 saves it with descr '<f1'); int2 [-2, -1, 1]
    # ('<V1', the low two bits: [2, 3, 1]).
    save("vals_f8e5m2.npy", np.array([-1.5, 0.25, 57344.0], ml_dtypes.float8_e5m2))
    save("vals_int2.npy", np.array([-2, -1, 1], ml_dtypes.int2))
    # Big-endian: iota(6).reshape(2, 3) as >f4 and >i8; complex [1+2j, -3.5-0.5j] as >c16.
    save("big_f4.npy", np.arange(6).reshape(2, 3).astype(">f4"))
    save("big_i8.npy", np.arange(6).reshape(2, 3).astype(">i8"))
    save("big_c16.npy", np.array([1 + 2j, -3.5 - 0.5j], ">c16"))
    # Fortran order: iota(12).reshape(3, 4) and iota(24).reshape(2, 3, 4), stored column-major.
    save("fortran_f4.npy", np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4)))
    save("fortran_i4_3d.npy", np.asfortranarray(np.arange(24, dtype=np.int32).reshape(2, 3, 4)))
    # Scalar 2.5 (f8), empty (0, 3) f4, 1-D iota(5) i4.
    save("scalar_f8.npy", np.array(2.5))
    save("empty_f4.npy", np.zeros((0, 3), np.float32))
    save("iota5_i4.npy", np.arange(5, dtype=np.int32))
    # Format versions 2.0 and 3.0: iota(6).reshape(2, 3) as f4.
    save("v2_f4.npy", np.arange(6, dtype=np.float32).reshape(2, 3), version=(2, 0))
    save("v3_f4.npy", np.arange(6, dtype=np.float32).reshape(2, 3), version=(3, 0))
    # Unsupported: object array and a structured dtype (errors).
    save("object.npy", np.array([1, "a"], dtype=object))
    save("structured.npy", np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]))


if __name__ == "__main__":
    main()
