#!/usr/bin/env python3
"""Writes a .npy file of any size without the memory for it (for reliability_io.test).

Usage: sparse_npy.py PATH DESCR DIM[,DIM...]
The header is numpy's (version 1.0, padded to 64 bytes); the data is a hole of the announced size
(zeros, no disk blocks), so a 30 GB file costs nothing to make.
"""
import struct
import sys


def main():
    path, descr, dims = sys.argv[1], sys.argv[2], [int(d) for d in sys.argv[3].split(",") if d]
    shape = "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    count = 1
    for d in dims:
        count *= d
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.truncate(10 + len(header) + count * int(descr[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
