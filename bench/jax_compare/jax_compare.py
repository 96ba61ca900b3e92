#!/usr/bin/env python3
"""JAX vs xshard on issue 9's workloads, the same HLO fed to both, on this machine.

For each workload (workloads.py): build it in JAX with shardings on 8 virtual CPU devices, lower
it with jax.jit(f, in_shardings=..., out_shardings=...).lower(...).as_text(dialect='hlo'), save the
HLO and the inputs (.npy), check that `xshard run` of that HLO on those inputs gives JAX's outputs
(numpy allclose), then time both in alternating rounds (JAX, xshard, JAX, xshard, ...): JAX as the
compiled call on already-sharded arrays with block_until_ready, xshard as `xshard bench run`
(inputs placed once, only the per-device execution timed). Prints per workload the medians over all
timed calls, the ratio xshard/JAX, GFLOP/s and % of this machine's peak FLOP rate, and the CPU
time per call of each process (all threads), which depends less on what else the machine runs.

JAX comes from PyPI into bench/jax_compare/.venv, created by --setup or on the first run.

  bench/jax_compare/jax_compare.py --setup            # create the venv (jax[cpu]==0.10.2) and exit
  bench/jax_compare/jax_compare.py --xshard build/xshard [--only NAME] [--rounds R] [--quick]
                                   [--json out.json] [--suite seeds|ops|all]
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
# $XSHARD_JAX_VENV: another venv (another JAX release, say) instead of .venv; it must already exist.
VENV = Path(os.environ["XSHARD_JAX_VENV"]) if os.environ.get("XSHARD_JAX_VENV") else HERE / ".venv"
JAX_REQUIREMENT = "jax[cpu]==0.10.2"
DEVICES = 8
# allclose tolerances: rtol, and atol as a fraction of max |JAX output| (summation order differs).
TOLERANCE = {"f32": (1e-3, 1e-4), "bf16": (1.6e-2, 1e-2)}


def setup_venv():
    print(f"creating {VENV} with {JAX_REQUIREMENT} from PyPI", flush=True)
    subprocess.check_call([sys.executable, "-m", "venv", str(VENV)])
    pip = str(VENV / "bin" / "pip")
    subprocess.check_call([pip, "install", "--quiet", "--upgrade", "pip"])
    subprocess.check_call([pip, "install", "--quiet", JAX_REQUIREMENT, "numpy"])


def hlo_text(lowered):
    """lowered.as_text(dialect="hlo") with every constant written out (older JAX releases, 0.4.38
    among them, print large constants there as {...}, which xshard refuses to run)."""
    text = lowered.as_text(dialect="hlo")
    if "{...}" in text:
        text = lowered.compiler_ir("hlo").as_hlo_text(print_large_constants=True)
    return text


def find_xshard(path=None):
    """(absolute path of the xshard binary, short checkout hash); (None, None) after printing why
    when the binary is missing. Default: build/xshard of this checkout."""
    repo = HERE.parent.parent
    xshard = path or str(repo / "build" / "xshard")
    if not Path(xshard).exists():
        print(f"xshard binary {xshard} not found; build it or pass --xshard PATH", file=sys.stderr)
        return None, None
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return str(Path(xshard).resolve()), commit


def venv_exists():
    return (VENV / "bin" / "python").exists()


def venv_has_jax():
    """Whether the venv exists and its python imports jax (a checkout's .venv may not have it)."""
    if not venv_exists():
        return False
    return subprocess.run([str(VENV / "bin" / "python"), "-c", "import jax, ml_dtypes"],
                          capture_output=True).returncode == 0


def reexec_in_venv(argv, script=__file__):
    """Runs `script` (default: this one) with the venv's python unless it already is (creating the
    venv first). bench/xla_compare shares this venv."""
    if Path(sys.prefix).resolve() == VENV.resolve():
        return
    if not venv_exists():
        if os.environ.get("XSHARD_JAX_VENV"):
            sys.exit(f"XSHARD_JAX_VENV={VENV} has no bin/python: create that venv with the JAX to compare "
                     "against (python3 -m venv DIR && DIR/bin/pip install 'jax[cpu]==X' ml_dtypes)")
        setup_venv()
    python = str(VENV / "bin" / "python")
    os.execv(python, [python, str(Path(script).resolve()), *argv])


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--setup", action="store_true", help="create the venv with JAX and exit")
    p.add_argument("--xshard", default=None, help="xshard binary (default: build/xshard of this checkout)")
    p.add_argument("--only", action="append", default=[],
                   help="run only workloads whose name contains this (repeatable)")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--suite", choices=["seeds", "ops", "all"], default="seeds",
                   help="seeds: the seed notebooks' table (default); ops: single-device programs of "
                        "the ops real JAX programs use (op_workloads.py); all: both")
    p.add_argument("--rounds", type=int, default=5, help="alternating JAX / xshard rounds (default 5)")
    p.add_argument("--round-seconds", type=float, default=1.0,
                   help="target timed seconds per side per round (default 1.0; at least 2 calls)")
    p.add_argument("--quick", action="store_true", help="smoke test: 2 rounds of ~0.1 s")
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--out", default=str(HERE / "out"), help="work directory for HLO / .npy (default out/)")
    p.add_argument("--keep", action="store_true", help="keep the .npy inputs and outputs in --out")
    a = p.parse_args(argv)
    if a.quick:
        a.rounds, a.round_seconds = 2, 0.1
    if a.rounds < 1 or a.round_seconds <= 0:
        p.error("--rounds must be >= 1 and --round-seconds > 0")
    return a


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def machine_peak():
    """Nominal peak f32 FLOP/s: cores x GHz (/proc/cpuinfo 'cpu MHz') x FLOP/cycle per core
    (2 FMA units x 16 lanes x 2 with AVX-512, x 8 lanes with AVX2 + FMA)."""
    cores = len(os.sched_getaffinity(0))
    mhz, flags = 0.0, ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("cpu MHz") and not mhz:
                mhz = float(line.split(":")[1])
            if line.startswith("flags") and not flags:
                flags = line
    per_cycle = 64 if " avx512f" in flags else 32 if " fma" in flags else 8
    return {"cores": cores, "mhz": mhz, "flop_per_cycle": per_cycle,
            "f32_gflops": cores * mhz / 1e3 * per_cycle,
            "avx512_bf16": " avx512_bf16" in flags, "amx_bf16": " amx_bf16" in flags}


def numpy_sgemm_gflops(np):
    """Best of 5 numpy (OpenBLAS) f32 2048^3 matmuls in this process: a measured reference."""
    a = np.random.default_rng(0).standard_normal((2048, 2048), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((2048, 2048), dtype=np.float32)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * 2048 ** 3 / best / 1e9


def run_xshard_bench(xshard, hlo, devices, arg_files, warmup, iters, extra=()):
    cmd = [xshard, "bench", "run", str(hlo), "--devices", str(devices), "--warmup", str(warmup),
           "--iters", str(iters), "--samples", *extra, "--args", *map(str, arg_files)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}")
    samples = re.search(r"^samples_ms=(.*)$", p.stdout, re.M).group(1)
    cpu = float(re.search(r"^cpu_ms_per_call=(.*)$", p.stdout, re.M).group(1))
    return [float(t) for t in samples.split(",")], cpu


def main(argv):
    args = parse_args(argv)
    if args.setup:
        setup_venv()
        return 0
    reexec_in_venv(argv)
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               f" --xla_force_host_platform_device_count={DEVICES}").strip()
    import jax  # noqa: E402  (after XLA_FLAGS)
    # GSPMD lowering: shardings as sharding={...} attributes and shard_map as SPMDFullToShardShape /
    # SPMDShardToFullShape custom-calls, as XLA and the seeds print them (Shardy's
    # xla.sdy.GlobalToLocalShape form is not read by xshard).
    jax.config.update("jax_use_shardy_partitioner", False)
    import ml_dtypes
    import numpy as np
    sys.path.insert(0, str(HERE))
    import workloads

    import op_workloads
    suite = ((workloads.all_workloads() if args.suite in ("seeds", "all") else []) +
             (op_workloads.op_workloads() if args.suite in ("ops", "all") else []))
    todo = [w for w in suite if not args.only or any(o in w.name for o in args.only)]
    if args.list:
        for w in suite:
            print(f"{w.name:22s} {w.what}")
        return 0
    if not todo:
        print(f"no workload matches {args.only}", file=sys.stderr)
        return 1
    xshard, commit = find_xshard(args.xshard)
    if xshard is None:
        return 1
    peak = machine_peak()
    load_before = uptime()
    sgemm = numpy_sgemm_gflops(np)
    print(f"JAX {jax.__version__}, {jax.device_count()} CPU devices; xshard {xshard} (checkout {commit})")
    print(f"load before: {load_before}")
    print(f"peak f32: {peak['f32_gflops']:.1f} GFLOP/s = {peak['cores']} cores x {peak['mhz'] / 1e3:.2f} GHz "
          f"(/proc/cpuinfo) x {peak['flop_per_cycle']} FLOP/cycle; bf16 % uses 2x that (AVX512-BF16); "
          f"numpy sgemm 2048^3 best of 5 here: {sgemm:.1f} GFLOP/s", flush=True)

    out_root = Path(args.out)
    results = []
    for w in todo:
        print(f"\n== {w.name}: {w.what}", flush=True)
        r = {"name": w.name, "what": w.what, "devices": w.devices, "flops": w.flops, "dtype": w.dtype}
        results.append(r)
        wdir = out_root / w.name
        shutil.rmtree(wdir, ignore_errors=True)
        wdir.mkdir(parents=True)
        # numpy 2 promotes f32 * np.float64 scalars to f64: the workloads' inputs are f32 / bf16.
        host = [a.astype(np.float32) if a.dtype == np.float64 else a for a in w.make_args()]
        fn, in_sh = w.jitted()
        placed = [jax.device_put(a, s) for a, s in zip(host, in_sh)]
        lowered = fn.lower(*placed)
        hlo = wdir / "module.hlo"
        hlo.write_text(hlo_text(lowered))
        compiled = lowered.compile()
        arg_files = []
        for i, a in enumerate(host):
            arg_files.append(wdir / f"arg{i}.npy")
            np.save(arg_files[-1], a)
        del host
        want = [np.asarray(o) for o in jax.tree.leaves(jax.block_until_ready(compiled(*placed)))]
        # Outputs agree?
        save = wdir / "xshard_out"
        p = subprocess.run([xshard, "run", str(hlo), "--devices", str(w.devices), "--save", str(save),
                            "--args", *map(str, arg_files)], capture_output=True, text=True)
        if p.returncode != 0:
            r["error"] = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
            print(f"xshard run failed: {r['error']}")
            continue
        rtol, atol_frac = TOLERANCE[w.dtype]
        agree, worst = True, 0.0
        for i, ref in enumerate(want):
            got = np.load(save / f"out{i}.npy")
            if got.dtype.kind == "V" and got.dtype.itemsize == 2:
                got = got.view(ml_dtypes.bfloat16)
            ref32, got32 = ref.astype(np.float32), got.astype(np.float32)
            atol = atol_frac * max(float(np.max(np.abs(ref32))), 1e-30)
            ok = got32.shape == ref32.shape and np.allclose(got32, ref32, rtol=rtol, atol=atol)
            if got32.shape == ref32.shape:
                worst = max(worst, float(np.max(np.abs(got32 - ref32) / (atol + rtol * np.abs(ref32)))))
            agree = agree and ok
        r["agree"] = agree
        r["tolerance"] = f"rtol={rtol:g}, atol={atol_frac:g}*max|JAX|"
        r["worst_over_tolerance"] = worst
        print(f"outputs agree: {agree} ({len(want)} outputs, {r['tolerance']}, worst |diff| / tol = {worst:.3g})")
        # Timing: alternate rounds; each side times enough calls to fill --round-seconds.
        jax_ms, xs_ms = [], []
        jax_cpu = xs_cpu = 0.0  # CPU ms (all threads) over the timed calls
        jax_iters = xs_iters = 2
        try:
            for rnd in range(args.rounds):
                fresh = []
                for _ in range(1 if rnd == 0 else 0):  # warmup in round 0
                    jax.block_until_ready(compiled(*placed))
                cpu0 = time.process_time()
                for _ in range(jax_iters):
                    t = time.perf_counter()
                    jax.block_until_ready(compiled(*placed))
                    fresh.append((time.perf_counter() - t) * 1e3)
                jax_cpu += (time.process_time() - cpu0) * 1e3
                jax_ms += fresh
                xs, cpu = run_xshard_bench(xshard, hlo, w.devices, arg_files, 1, xs_iters)
                xs_ms += xs
                xs_cpu += cpu * len(xs)
                print(f"  round {rnd}: JAX {statistics.median(fresh):9.3f} ms x{len(fresh):<3d} "
                      f"xshard {statistics.median(xs):9.3f} ms x{len(xs)}", flush=True)
                target = args.round_seconds * 1e3
                jax_iters = max(2, min(200, int(target / statistics.median(jax_ms))))
                xs_iters = max(2, min(200, int(target / statistics.median(xs_ms))))
        except (RuntimeError, AttributeError) as e:
            r["error"] = f"xshard bench run: {e}"
            print(r["error"])
            continue
        finally:
            del compiled
        r["jax_ms"], r["xshard_ms"] = statistics.median(jax_ms), statistics.median(xs_ms)
        r["jax_calls"], r["xshard_calls"] = len(jax_ms), len(xs_ms)
        r["jax_p90_ms"] = float(np.percentile(jax_ms, 90))
        r["xshard_p90_ms"] = float(np.percentile(xs_ms, 90))
        r["ratio"] = r["xshard_ms"] / r["jax_ms"]
        r["jax_cpu_ms"], r["xshard_cpu_ms"] = jax_cpu / len(jax_ms), xs_cpu / len(xs_ms)
        r["cpu_ratio"] = r["xshard_cpu_ms"] / r["jax_cpu_ms"]
        if w.flops:
            pk = peak["f32_gflops"] * (2 if w.dtype == "bf16" else 1)
            for side in ("jax", "xshard"):
                g = w.flops / (r[f"{side}_ms"] / 1e3) / 1e9
                r[f"{side}_gflops"], r[f"{side}_peak_pct"] = g, 100 * g / pk
        print(f"JAX {r['jax_ms']:.3f} ms, xshard {r['xshard_ms']:.3f} ms, xshard/JAX {r['ratio']:.2f}; CPU ms per "
              f"call JAX {r['jax_cpu_ms']:.1f}, xshard {r['xshard_cpu_ms']:.1f}, ratio {r['cpu_ratio']:.2f}", flush=True)
        if not args.keep:
            for f in arg_files:
                f.unlink()
            shutil.rmtree(save, ignore_errors=True)
        del placed

    load_after = uptime()
    print(f"\nload after: {load_after}\n")
    print(format_table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"jax": jax.__version__, "xshard": xshard, "commit": commit, "argv": argv,
                       "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "load_before": load_before, "load_after": load_after, "peak": peak,
                       "numpy_sgemm_gflops": sgemm, "results": results}, f, indent=1)
    return 0 if all("error" not in r and r.get("agree") for r in results) else 2


def format_table(results):
    rows = ["| workload | dev | JAX ms | xshard ms | xshard/JAX | JAX GFLOP/s (% peak) | "
            "xshard GFLOP/s (% peak) | CPU ms/call JAX, xshard (ratio) | outputs agree |",
            "| --- | --: | --: | --: | --: | --: | --: | --: | --- |"]
    for r in results:
        if "error" in r:
            rows.append(f"| {r['what']} | {r['devices']} | | | | | | | error: {r['error']} |")
            continue
        def g(side):
            return f"{r[side + '_gflops']:.0f} ({r[side + '_peak_pct']:.0f} %)" if r["flops"] else "-"
        rows.append(f"| {r['what']} | {r['devices']} | {r['jax_ms']:.2f} | {r['xshard_ms']:.2f} | "
                    f"{r['ratio']:.2f} | {g('jax')} | {g('xshard')} | {r['jax_cpu_ms']:.0f}, {r['xshard_cpu_ms']:.0f} "
                    f"({r['cpu_ratio']:.2f}) | {'yes' if r['agree'] else 'NO'} |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
