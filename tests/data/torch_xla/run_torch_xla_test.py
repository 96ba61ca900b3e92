#!/usr/bin/env python3
"""The torch_xla ctest: xshard runs PyTorch/XLA SPMD modules and must give torch_xla's outputs.

Each folder here is one program of bench/torch_xla_compare (programs.py names and describes it),
as torch_xla 2.9.0 produced it on 8 virtual CPU devices: `torch_xla.hlo` (the unpartitioned
SyncTensorsGraph module XLA compiled, dumped with --xla_dump_hlo_as_text), for some also
`irtohlo.hlo` (the same graph as torch_xla._XLAC._get_xla_tensors_hlo prints it), the HLO's
parameters `arg<i>.npy` (bf16 ones as '|V2' raw bits) and torch_xla's outputs `want<i>.npy` (bf16
ones widened to f32). manifest.json lists the programs, the dtype class of their outputs and how
many arguments and outputs they have. Expected values come from torch_xla, never from xshard.

For each module: `xshard run FILE --devices 8 --args arg*.npy --save DIR`, then every out<i>.npy
is compared with want<i>.npy like bench/torch_xla_compare (numpy.allclose with equal NaNs; f32
rtol 1e-3, atol 1e-4 x max finite |want|; bf16 rtol 1.6e-2, atol 1e-2 x max finite |want|; a
program's own absolute atol where the manifest gives one; integers exact), in plain Python (no
numpy here). Exit 1 on any error or mismatch.

  tests/data/torch_xla/run_torch_xla_test.py XSHARD [NAME...]
"""
import ast
import json
import math
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOLERANCE = {"f32": (1e-3, 1e-4), "bf16": (1.6e-2, 1e-2)}
_FORMATS = {"f4": "f", "f8": "d", "f2": "e", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B",
            "u2": "H", "u4": "I", "u8": "Q", "b1": "?"}


def load_npy(path):
    """(shape, flat list of Python numbers, descr code) of a C-order .npy; '|V2' is read as bfloat16."""
    data = Path(path).read_bytes()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    major = data[6]
    if major == 1:
        hlen, start = struct.unpack("<H", data[8:10])[0], 10
    else:
        hlen, start = struct.unpack("<I", data[8:12])[0], 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    if header.get("fortran_order"):
        raise ValueError(f"{path}: Fortran order")
    shape = tuple(header["shape"])
    n = math.prod(shape)
    body = data[start + hlen:]
    descr = header["descr"]
    order, code = ("<" if descr[0] in "<|=" else ">"), descr[1:]
    if code == "V2":  # bfloat16: the high half of an f32
        raw = struct.unpack(f"{order}{n}H", body[:2 * n])
        return shape, [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in raw], code
    if code not in _FORMATS:
        raise ValueError(f"{path}: unsupported dtype {descr}")
    size = struct.calcsize(_FORMATS[code])
    return shape, list(struct.unpack(f"{order}{n}{_FORMATS[code]}", body[:size * n])), code


def compare(got_path, want_path, dtype, atol_abs=None):
    got, want = load_npy(got_path), load_npy(want_path)
    if got[0] != want[0]:
        return f"shape {got[0]} != {want[0]}"
    exact = want[2][0] in "iub"
    rtol, atol_frac = (0.0, 0.0) if exact else TOLERANCE[dtype]
    atol = atol_frac * max((abs(w) for w in want[1] if math.isfinite(w)), default=0.0)
    if atol_abs is not None and not exact:
        atol = atol_abs
    bad = []
    for i, (g, w) in enumerate(zip(got[1], want[1])):
        if g == w or (g != g and w != w):  # equal (infinities too), or both NaN
            continue
        if exact or not abs(g - w) <= atol + rtol * abs(w):
            bad.append((i, g, w))
    if bad:
        i, g, w = bad[0]
        return f"{len(bad)} of {len(want[1])} elements differ, first {i}: got {g!r}, want {w!r} (rtol {rtol}, atol {atol:.3g})"
    return None


def main():
    xshard, only = sys.argv[1], sys.argv[2:]
    manifest = json.loads((HERE / "manifest.json").read_text())
    failures, checked = [], 0
    for name, p in manifest["programs"].items():
        if only and name not in only:
            continue
        d = HERE / name
        args = [str(d / f"arg{i}.npy") for i in range(p["args"])]
        for form in p["forms"]:
            with tempfile.TemporaryDirectory() as tmp:
                cmd = [xshard, "run", str(d / form), "--devices", "8", "--save", tmp]
                if args:
                    cmd += ["--args", *args]
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                if r.returncode != 0:
                    failures.append(f"{name}/{form}: xshard exit {r.returncode}: {r.stderr.strip()[-500:]}")
                    print(f"FAIL {name}/{form}", flush=True)
                    continue
                bad = []
                for i in range(p["outs"]):
                    got = Path(tmp) / f"out{i}.npy"
                    msg = (f"out{i}.npy missing" if not got.exists() else
                           compare(got, d / f"want{i}.npy", p["dtype"], p.get("atol")))
                    if msg:
                        bad.append(f"out{i}: {msg}")
                checked += 1
                if bad:
                    failures.append(f"{name}/{form}: " + "; ".join(bad))
                print(f"{'FAIL' if bad else 'ok  '} {name}/{form}", flush=True)
    for f in failures:
        print(f, file=sys.stderr)
    if not checked and not failures:
        print("no program ran", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
