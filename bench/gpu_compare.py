#!/usr/bin/env python3
"""JAX vs xshard on one GPU: bench/jax_compare's workloads plus issue 22's GPU targets.

For each workload, in one process: JAX runs it as one jitted call on the GPU (shard_map bodies on a
one-device mesh), on arrays already placed there; xshard runs the same program's HLO with
`xshard bench run --platform cuda`, once with --devices 1 (the unsharded lowering) and once on the
workload's mesh as virtual devices of the one GPU (the sharded lowering, made on virtual CPU
devices: the HLO text is the same). Outputs are checked against JAX's first (`xshard run --save`),
then both sides are timed in alternating rounds and the medians printed as one table.

  python3 bench/gpu_compare.py --xshard build/xshard [--only NAME] [--rounds R] [--quick] [--json F]
  python3 bench/gpu_compare.py --platform cpu --quick --only eltwise   # a dry run without a GPU

It uses the python3 it is started with (on the GPU machine: JAX with CUDA); it creates no venv.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# allclose tolerances: rtol, and atol as a fraction of max |JAX output|. f32 dots on a GPU use
# TF32 by default on both sides (XLA's DEFAULT precision), so f32 gets bf16-like room.
TOLERANCE = {"f32": (2e-2, 1e-2), "bf16": (3e-2, 2e-2), "f16": (1e-2, 1e-2)}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--xshard", default=str(REPO / "build" / "xshard"), help="xshard binary")
    p.add_argument("--platform", default="cuda", choices=["cuda", "cpu"],
                   help="cuda (default); cpu: a dry run of this script without a GPU")
    p.add_argument("--only", action="append", default=[], help="workloads whose name contains this")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--rounds", type=int, default=5, help="alternating JAX / xshard rounds (default 5)")
    p.add_argument("--round-seconds", type=float, default=0.5, help="timed seconds per side per round")
    p.add_argument("--quick", action="store_true", help="2 rounds of ~0.05 s")
    p.add_argument("--no-sharded", action="store_true", help="skip the virtual-device runs")
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--out", default=str(HERE / "gpu_compare_out"), help="work directory")
    a = p.parse_args(argv)
    if a.quick:
        a.rounds, a.round_seconds = 2, 0.05
    return a


def xshard_bench(xshard, platform, hlo, devices, arg_files, iters):
    cmd = [xshard, "bench", "run", str(hlo), "--platform", platform, "--devices", str(devices),
           "--warmup", "2", "--iters", str(iters), "--samples", "--args", *map(str, arg_files)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError((p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1])
    samples = re.search(r"^samples_ms=(.*)$", p.stdout, re.M).group(1)
    return [float(t) for t in samples.split(",")]


def xshard_outputs(xshard, platform, hlo, devices, arg_files, save, np, ml_dtypes):
    p = subprocess.run([xshard, "run", str(hlo), "--platform", platform, "--devices", str(devices),
                        "--save", str(save), "--args", *map(str, arg_files)], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError((p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1])
    outs = []
    for f in sorted(save.glob("out*.npy"), key=lambda f: int(f.stem[3:])):
        got = np.load(f)
        if got.dtype.kind == "V" and got.dtype.itemsize == 2:
            got = got.view(ml_dtypes.bfloat16)
        outs.append(got)
    return outs


def agree(want, got, dtype, np):
    rtol, atol_frac = TOLERANCE[dtype]
    if len(want) != len(got):
        return False, float("inf")
    ok, worst = True, 0.0
    for ref, g in zip(want, got):
        ref32, g32 = np.asarray(ref).astype(np.float32), np.asarray(g).astype(np.float32)
        if ref32.shape != g32.shape:
            return False, float("inf")
        atol = atol_frac * max(float(np.max(np.abs(ref32))) if ref32.size else 0.0, 1e-30)
        ok = ok and bool(np.allclose(g32, ref32, rtol=rtol, atol=atol, equal_nan=True))
        if ref32.size:
            worst = max(worst, float(np.nanmax(np.abs(g32 - ref32) / (atol + rtol * np.abs(ref32)))))
    return ok, worst


def time_jax(jax, call, iters):
    out = []
    for _ in range(iters):
        t = time.perf_counter()
        jax.block_until_ready(call())
        out.append((time.perf_counter() - t) * 1e3)
    return out


def main(argv):
    args = parse_args(argv)
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=8").strip()
    import jax
    import ml_dtypes
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    jax.config.update("jax_use_shardy_partitioner", False)
    sys.path.insert(0, str(HERE / "jax_compare"))
    sys.path.insert(0, str(HERE))
    import workloads
    import gpu_workloads

    cpus = jax.devices("cpu")
    # Sharded lowerings use the virtual CPU devices (the GPU machine has one GPU).
    workloads.Workload.mesh = lambda self: Mesh(np.array(cpus[:self.devices]).reshape(self.mesh_shape),
                                                self.axis_names)
    todo = workloads.all_workloads() + gpu_workloads.all_workloads()
    if args.list:
        for w in todo:
            print(f"{w.name:24s} {w.what}")
        return 0
    todo = [w for w in todo if not args.only or any(o in w.name for o in args.only)]
    if args.platform == "cuda":
        try:
            target = jax.devices("gpu")[0]
        except RuntimeError as e:
            print(f"JAX sees no GPU ({e}); use --platform cpu for a dry run", file=sys.stderr)
            return 1
    else:
        target = cpus[0]
    xshard = str(Path(args.xshard).resolve())
    if not Path(xshard).exists():
        print(f"xshard binary {xshard} not found; build it or pass --xshard", file=sys.stderr)
        return 1
    load_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"JAX {jax.__version__} on {target.device_kind}; xshard {xshard} --platform {args.platform}")
    print(f"load before: {load_before}", flush=True)
    results = []
    for w in todo:
        print(f"\n== {w.name}: {w.what}", flush=True)
        r = {"name": w.name, "what": w.what, "devices": w.devices, "flops": w.flops, "dtype": w.dtype}
        results.append(r)
        wdir = Path(args.out) / w.name
        shutil.rmtree(wdir, ignore_errors=True)
        wdir.mkdir(parents=True)
        host = [a.astype(np.float32) if a.dtype == np.float64 else a for a in w.make_args()]
        arg_files = []
        for i, a in enumerate(host):
            arg_files.append(wdir / f"arg{i}.npy")
            np.save(arg_files[-1], a)
        # One device: shard_map bodies on a mesh of ones (their collectives are identities).
        fn = w.fn
        if w.shard_map:
            one = Mesh(np.array([target]).reshape((1,) * len(w.mesh_shape)), w.axis_names)
            fn = jax.shard_map(fn, mesh=one, in_specs=tuple(w.in_specs), out_specs=w.out_specs,
                               check_vma=False)
        jitted = jax.jit(fn)
        placed = [jax.device_put(a, target) for a in host]
        lowered = jitted.lower(*placed)
        hlo1 = wdir / "one_device.hlo"
        hlo1.write_text(lowered.as_text(dialect="hlo"))
        compiled = lowered.compile()
        want = [np.asarray(o) for o in jax.tree.leaves(jax.block_until_ready(compiled(*placed)))]
        runs = [("1", hlo1, 1)]
        if w.devices > 1 and not args.no_sharded:
            sfn, in_sh = w.jitted()
            hlon = wdir / "sharded.hlo"
            hlon.write_text(sfn.lower(*[jax.device_put(a, s) for a, s in zip(host, in_sh)]).as_text(dialect="hlo"))
            runs.append(("n", hlon, w.devices))
        del host
        for key, hlo, devices in runs:
            try:
                got = xshard_outputs(xshard, args.platform, hlo, devices, arg_files, wdir / f"out_{key}", np, ml_dtypes)
                r[f"agree_{key}"], r[f"worst_{key}"] = agree(want, got, w.dtype, np)
            except RuntimeError as e:
                r[f"error_{key}"] = str(e)
            print(f"xshard --devices {devices}: " + (f"error: {r[f'error_{key}']}" if f"error_{key}" in r else
                  f"outputs agree: {r[f'agree_{key}']} (worst |diff| / tol {r[f'worst_{key}']:.3g})"), flush=True)
        jax_ms, xs_ms = [], {k: [] for k, _, _ in runs}
        iters = {"jax": 3, **{k: 3 for k, _, _ in runs}}
        time_jax(jax, lambda: compiled(*placed), 2)  # warm-up
        for rnd in range(args.rounds):
            jax_ms += time_jax(jax, lambda: compiled(*placed), iters["jax"])
            for key, hlo, devices in runs:
                if f"error_{key}" in r:
                    continue
                try:
                    xs_ms[key] += xshard_bench(xshard, args.platform, hlo, devices, arg_files, iters[key])
                except RuntimeError as e:
                    r[f"error_{key}"] = f"bench run: {e}"
            target_ms = args.round_seconds * 1e3
            iters["jax"] = max(3, min(2000, int(target_ms / statistics.median(jax_ms))))
            for key in xs_ms:
                if xs_ms[key]:
                    iters[key] = max(3, min(2000, int(target_ms / statistics.median(xs_ms[key]))))
        r["jax_ms"] = statistics.median(jax_ms)
        for key in xs_ms:
            if xs_ms[key]:
                r[f"xshard_{key}_ms"] = statistics.median(xs_ms[key])
                r[f"ratio_{key}"] = r[f"xshard_{key}_ms"] / r["jax_ms"]
        print("JAX {:.4f} ms; ".format(r["jax_ms"]) + "; ".join(
            f"xshard --devices {d}: {r[f'xshard_{k}_ms']:.4f} ms ({r[f'ratio_{k}']:.2f}x)"
            for k, _, d in runs if f"xshard_{k}_ms" in r), flush=True)
        del compiled, placed
        for f in arg_files:
            f.unlink()
    load_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"\nload after: {load_after}\n")
    print(format_table(results))
    if args.json:
        Path(args.json).write_text(json.dumps({"jax": jax.__version__, "platform": args.platform,
                                               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                               "load_before": load_before, "load_after": load_after,
                                               "results": results}, indent=1))
    bad = [r for r in results if any(k.startswith("error") for k in r) or
           not all(r.get(k, True) for k in ("agree_1", "agree_n"))]
    return 0 if not bad else 2


def format_table(results):
    rows = ["| workload | JAX ms | xshard 1 dev ms | ratio | TFLOP/s JAX, xshard | xshard N virtual ms | "
            "ratio | outputs agree (1, N) |", "| --- | --: | --: | --: | --: | --: | --: | --- |"]
    for r in results:
        def cell(key, fmt):
            return fmt.format(r[key]) if key in r else ("error" if "error_" + key.split("_")[1] in r else "-")
        tf = "-"
        if r["flops"] and "xshard_1_ms" in r:
            tf = f"{r['flops'] / r['jax_ms'] / 1e9:.1f}, {r['flops'] / r['xshard_1_ms'] / 1e9:.1f}"
        agrees = ", ".join("yes" if r.get(f"agree_{k}") else ("error: " + r[f"error_{k}"] if f"error_{k}" in r
                                                             else ("-" if f"agree_{k}" not in r else "NO"))
                           for k in ("1", "n"))
        rows.append(f"| {r['what']} | {r['jax_ms']:.4f} | {cell('xshard_1_ms', '{:.4f}')} | "
                    f"{cell('ratio_1', '{:.2f}')} | {tf} | N={r['devices']}: {cell('xshard_n_ms', '{:.4f}')} | "
                    f"{cell('ratio_n', '{:.2f}')} | {agrees} |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
