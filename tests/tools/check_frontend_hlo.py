#!/usr/bin/env python3
"""Checks that the HLO text the C++ front end lowers (Jit(...).Lower(...).AsText()) is read by
XLA and computes what xshard computes.

For each DIR/NAME.hlo (written by `example_frontend_seed002 DIR`): XLA parses it and compiles it
(num_partitions from the header, SPMD partitioning on). Every module then runs on seeded random
inputs in XLA on one device (a sharded module with its shardings stripped: the same global
computation) and through `xshard run --args ... --save` (a sharded module partitioned and run on
its num_partitions devices), and the outputs must agree to 1e-5 (relative); for sigmoid,
grad(sigmoid) and square also with jax.jit of the Python function on the same inputs. Prints one line per
module and exits 1 on any failure.

Usage, from the repository root:
  build/examples/example_frontend_seed002 /tmp/hlo
  bench/jax_compare/.venv/bin/python tests/tools/check_frontend_hlo.py build/xshard /tmp/hlo
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import numpy as np  # noqa: E402
import jax  # noqa: E402
from jax._src.lib import xla_client as xc, _jax  # noqa: E402

DTYPES = {"f32": np.float32, "s32": np.int32, "f16": np.float16}


def sigmoid(x):
    return 1 / (1 + jax.numpy.exp(-x))


# Modules whose function JAX itself can run: their xshard outputs must also match jax.jit's.
JAX_FUNCTIONS = {"sigmoid.hlo": sigmoid, "grad_sigmoid.hlo": jax.grad(sigmoid),
                 "square.hlo": lambda x: x * x}


def params(text):
    """(dtype, dims) of each entry parameter, in parameter order."""
    entry = text[text.index("ENTRY"):]
    found = {}
    for m in re.finditer(r"= (\w+)\[([\d,]*)\](?:\{[\d,]*\})? parameter\((\d+)\)", entry):
        dims = tuple(int(d) for d in m.group(2).split(",") if d)
        found[int(m.group(3))] = (m.group(1), dims)
    return [found[i] for i in sorted(found)]


def strip_shardings(text):
    """The module without sharding attributes and num_partitions: its one-device meaning."""
    out, i = [], 0
    while True:
        j = text.find(", sharding={", i)
        if j < 0:
            out.append(text[i:])
            break
        out.append(text[i:j])
        depth, k = 0, j + len(", sharding=")
        while True:
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
            if depth == 0:
                break
        i = k
    return re.sub(r", num_partitions=\d+", "", "".join(out))


def compile_module(text, n):
    module = xc.hlo.hlo_module_from_text(text)
    comp = xc.XlaComputation(module.as_serialized_hlo_module_proto())
    mlir = _jax.mlir.xla_computation_to_mlir_module(comp)
    opts = xc.CompileOptions()
    bo = opts.executable_build_options
    bo.num_partitions = n
    bo.num_replicas = 1
    bo.use_spmd_partitioning = n > 1
    bo.device_assignment = xc.DeviceAssignment.create(np.arange(n).reshape(1, n))
    return jax.devices()[0].client.compile_and_load(mlir, jax.devices()[:n], opts)


def main():
    xshard, directory = sys.argv[1], sys.argv[2]
    failed = False
    for path in sorted(glob.glob(os.path.join(directory, "*.hlo"))):
        name = os.path.basename(path)
        text = open(path).read()
        m = re.search(r"num_partitions=(\d+)", text.splitlines()[0])
        n = int(m.group(1)) if m else 1
        try:
            exe = compile_module(text, n)
        except Exception as e:  # noqa: BLE001
            print(f"{name}: XLA could not compile it: {str(e).splitlines()[0]}")
            failed = True
            continue
        if n > 1:
            exe = compile_module(strip_shardings(text), 1)
        rng = np.random.default_rng(0)
        args = [rng.integers(0, 10, dims).astype(np.int32) if t == "s32"
                else rng.uniform(-1, 1, dims).astype(DTYPES[t]) for t, dims in params(text)]
        bufs = [jax.device_put(a, jax.devices()[0]) for a in args]
        outs = exe.execute(bufs)
        want = [np.asarray(o) for o in outs]
        with tempfile.TemporaryDirectory() as tmp:
            files = []
            for i, a in enumerate(args):
                files.append(os.path.join(tmp, f"arg{i}.npy"))
                np.save(files[-1], a)
            cmd = [xshard, "run", path, "--save", os.path.join(tmp, "out")]
            if files:
                cmd += ["--args"] + files
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"{name}: xshard run failed: {p.stderr.strip()}")
                failed = True
                continue
            got = [np.load(os.path.join(tmp, "out", f"out{i}.npy")) for i in range(len(want))]
        count = sum(w.size for w in want)
        if name in JAX_FUNCTIONS:
            want.append(np.asarray(jax.jit(JAX_FUNCTIONS[name])(*args)))
            got.append(got[0])
        worst = max(float(np.max(np.abs(g - w) / (1 + np.abs(w)))) for g, w in zip(got, want))
        ok = worst <= 1e-5
        failed |= not ok
        how = (f"XLA partitions it for {n}; values: XLA on one device with the shardings stripped, "
               f"xshard on {n} devices" if n > 1 else "one device")
        also = ", jax.jit of the same function" if name in JAX_FUNCTIONS else ""
        print(f"{name}: XLA{also} and xshard run agree on {count} values "
              f"({how}; max rel diff {worst:.2e}){'' if ok else '  FAIL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
