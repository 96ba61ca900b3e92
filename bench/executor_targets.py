#!/usr/bin/env python3
"""Issue 9's executor targets measured in one run, each next to its reference, in alternating rounds.

Prints, per round and then as medians over the rounds (ratios of the medians):
  - one-device elementwise chain tanh(x)*sigmoid(y)+x*0.5 on f32[4096,4096] (64 MiB arrays) through
    `xshard bench run`, as % of memcpy bandwidth (elementwise_bench BM_Memcpy/64 MiB, bytes read +
    written: the chain moves 3 x 64 MiB, memcpy 2 x 64 MiB)                             target >= 80 %
  - f32 GEMM 2048^3 through `xshard bench run` (one device) as % of the best OpenBLAS call
    (gemm_bench: one sgemm on the library's threads, or two column halves on one thread each)
                                                                                       target >= 90 %
  - bf16 GEMM 2048x2048 @ 2048x1024 -> bf16 through `xshard bench run` as % of the best oneDNN call
    (gemm_bench: bf16 -> bf16 and bf16 -> f32 matmul)                                  target >= 85 %
  - seed 001's matmul f32[4096,4096] @ f32[4096,4096] on 8 devices (mesh 4x2) and seed 004's bf16
    2048x2048 @ 2048x1024 on its 2x2 mesh, through `xshard bench run`, as % of the best
    single-process GEMM of the same global problem (OpenBLAS / oneDNN as above)       target >= 85 %
  - the stall regression test (xs_runtime_test's SubgroupChainTest / SubgroupStallTest) run N times
    in a row (gtest --gtest_repeat)                                              target: every run passes
  - an XSHARD_TRACE of the windowed-einsum loop (--windowed-einsum-threshold 0
    --async-collectives): the all-gather of y, streamed round the ring as collective-permute-start
    / -done pairs, checked to be in flight while the loop's dot runs on the same device.

Timings on a shared machine are noisy: the rounds alternate xshard and its reference so both see the
same load; `uptime` is printed before and after.

  bench/executor_targets.py [--build build] [--rounds 3] [--stall-runs 100] [--quick]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIB = 1 << 20

CHAIN = """HloModule chain
ENTRY main {
  x = f32[4096,4096] parameter(0)
  y = f32[4096,4096] parameter(1)
  t = f32[4096,4096] tanh(x)
  s = f32[4096,4096] logistic(y)
  m = f32[4096,4096] multiply(t, s)
  h = f32[] constant(0.5)
  hb = f32[4096,4096] broadcast(h), dimensions={}
  xh = f32[4096,4096] multiply(x, hb)
  ROOT r = f32[4096,4096] add(m, xh)
}
"""

GEMM_F32 = """HloModule gemm_f32
ENTRY main {
  x = f32[2048,2048] parameter(0)
  y = f32[2048,2048] parameter(1)
  ROOT d = f32[2048,2048] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

GEMM_BF16 = """HloModule gemm_bf16
ENTRY main {
  x = bf16[2048,2048] parameter(0)
  y = bf16[2048,1024] parameter(1)
  ROOT d = bf16[2048,1024] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

# Seed 001's matmul on 8 devices, mesh (a=4, b=2): x P('a', 'b'), y P('b', None), out P('a', None).
SEED001 = """HloModule seed001_matmul_8, num_partitions=8
ENTRY main {
  x = f32[4096,4096] parameter(0), sharding={devices=[4,2]<=[8]}
  y = f32[4096,4096] parameter(1), sharding={devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}
  ROOT d = f32[4096,4096] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
}
"""

# Seed 004: bf16 2048x2048 @ 2048x1024 on mesh (x=2, y=2): x P('x', 'y'), w P('x', None), out P('x', None).
SEED004 = """HloModule seed004_matmul, num_partitions=4
ENTRY main {
  x = bf16[2048,2048] parameter(0), sharding={devices=[2,2]<=[4]}
  w = bf16[2048,1024] parameter(1), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  ROOT d = bf16[2048,1024] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
}
"""

# The windowed-einsum all-gather case (tests/data/windowed/ag_rows.hlo) at a size where a dot
# step takes long enough to see the transfer beside it.
WINDOWED = """HloModule we, num_partitions=4
ENTRY main {
  x = f32[1024,512] parameter(0), sharding={devices=[4,1]<=[4]}
  y = f32[512,1024] parameter(1), sharding={devices=[1,4]<=[4]}
  ROOT d = f32[1024,1024] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,1]<=[4]}
}
"""


def run(cmd, env=None, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(map(str, cmd))}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def uptime():
    return run(["uptime"]).stdout.strip()


def xshard_ms(xshard, hlo, devices, warmup, iters):
    cmd = [str(xshard), "bench", "run", str(hlo), "--random-args", "1", "--warmup", str(warmup),
           "--iters", str(iters)]
    if devices > 1:
        cmd += ["--devices", str(devices)]
    out = run(cmd).stdout
    m = re.search(r"median_ms=([0-9.]+)", out)
    if not m:
        sys.exit(f"no median_ms in the output of {' '.join(cmd)}:\n{out}")
    return float(m.group(1))


def gbench(binary, pattern, min_time, env=None):
    """Runs a Google Benchmark binary's benchmarks matching `pattern`; name -> counters."""
    out = run([str(binary), f"--benchmark_filter={pattern}", "--benchmark_format=json",
               f"--benchmark_min_time={min_time}"], env=env).stdout
    return {b["name"]: b for b in json.loads(out)["benchmarks"]}


def blas_env():
    """The OpenBLAS core type the xshard CLI runs with (it re-executes itself with SkylakeX on
    AVX-512 CPUs OpenBLAS 0.3.21 misdetects), so the reference calls get the same kernels."""
    env = dict(os.environ)
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        flags = ""
    if "OPENBLAS_CORETYPE" not in env and all(f in flags for f in ("avx512f", "avx512bw", "avx512dq", "avx512vl")):
        env["OPENBLAS_CORETYPE"] = "SkylakeX"
    return env


def best_gflops(results, names):
    vals = [results[n]["GFLOP/s"] for n in names if n in results]
    if not vals:
        sys.exit(f"none of {names} ran")
    return max(vals)


def trace_overlap(xshard, hlo, tmp):
    """Runs the windowed-einsum loop with async collectives under XSHARD_TRACE; returns
    (devices whose dot ran inside an in-flight collective, total such dots, an example)."""
    trace = tmp / "windowed_trace.json"
    env = dict(os.environ, XSHARD_TRACE=str(trace))
    run([str(xshard), "run", str(hlo), "--random-args", "7", "--windowed-einsum-threshold", "0",
         "--async-collectives"], env=env)
    events = json.loads(trace.read_text())["traceEvents"]
    flights = [e for e in events if e.get("ph") == "X" and e.get("pid") == 1]
    dots = [e for e in events if e.get("ph") == "X" and e.get("pid") == 0 and e["name"].startswith("dot ")]
    devices, count, example = set(), 0, None
    for d in dots:
        for f in flights:
            if f["tid"] == d["tid"] and f["ts"] <= d["ts"] and d["ts"] + d["dur"] <= f["ts"] + f["dur"]:
                devices.add(d["tid"])
                count += 1
                if example is None:
                    example = (f"device {d['tid']}: '{f['name']}' {f['ts']:.0f}..{f['ts'] + f['dur']:.0f} us "
                               f"holds '{d['name']}' {d['ts']:.0f}..{d['ts'] + d['dur']:.0f} us")
                break
    return devices, count, len(dots), len(flights), example


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"), help="build directory (default: build/)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    ap.add_argument("--stall-runs", type=int, default=100, help="runs of the stall test (default 100)")
    ap.add_argument("--quick", action="store_true", help="1 round, fewer iterations, 10 stall runs")
    a = ap.parse_args()
    build = Path(a.build)
    xshard = build / "xshard"
    gemm_bench = build / "bench" / "gemm_bench"
    eltwise_bench = build / "bench" / "elementwise_bench"
    runtime_test = build / "src" / "xshard" / "runtime" / "xs_runtime_test"
    missing = [str(p) for p in (xshard, gemm_bench, eltwise_bench, runtime_test) if not p.exists()]
    if missing:
        sys.exit("build these first (cmake --build build --target xshard gemm_bench elementwise_bench "
                 f"xs_runtime_test): missing {', '.join(missing)}")
    rounds = 1 if a.quick else a.rounds
    stall_runs = 10 if a.quick else a.stall_runs
    min_time = 0.2 if a.quick else 0.5
    it = (lambda n: max(2, n // 3)) if a.quick else (lambda n: n)

    tmp = Path(tempfile.mkdtemp(prefix="xshard_targets_"))
    files = {}
    for name, text in [("chain", CHAIN), ("gemm_f32", GEMM_F32), ("gemm_bf16", GEMM_BF16),
                       ("seed001", SEED001), ("seed004", SEED004), ("windowed", WINDOWED)]:
        files[name] = tmp / f"{name}.hlo"
        files[name].write_text(text)
    env = blas_env()
    print(f"load before: {uptime()}")
    print(f"OPENBLAS_CORETYPE for the reference calls: {env.get('OPENBLAS_CORETYPE', '(library default)')}")

    s = {k: [] for k in ("memcpy", "chain", "blas2048", "f32", "dnn_bf16", "bf16", "ref4096", "seed001",
                         "seed004")}
    for r in range(rounds):
        m = gbench(eltwise_bench, "BM_Memcpy/67108864(/real_time)?$", min_time)
        s["memcpy"].append(next(iter(m.values()))["bytes_per_second"] / 1e9)  # wall-time rate
        t = xshard_ms(xshard, files["chain"], 1, 2, it(10))
        s["chain"].append(3 * 64 * MIB / (t / 1e3) / 1e9)

        g = gbench(gemm_bench, "BM_OpenBlasSgemm.*/2048/2048/2048/", min_time, env)
        s["blas2048"].append(best_gflops(g, ["BM_OpenBlasSgemm/2048/2048/2048/real_time",
                                             "BM_OpenBlasSgemmColumnHalves/2048/2048/2048/real_time"]))
        t = xshard_ms(xshard, files["gemm_f32"], 1, 2, it(10))
        s["f32"].append(2.0 * 2048 ** 3 / (t / 1e3) / 1e9)

        g = gbench(gemm_bench, "BM_OneDnnMatmul/bf16_to_.*/2048/1024/2048/", min_time, env)
        s["dnn_bf16"].append(best_gflops(g, ["BM_OneDnnMatmul/bf16_to_bf16/2048/1024/2048/real_time",
                                             "BM_OneDnnMatmul/bf16_to_f32/2048/1024/2048/real_time"]))
        t = xshard_ms(xshard, files["gemm_bf16"], 1, 2, it(10))
        s["bf16"].append(2.0 * 2048 * 2048 * 1024 / (t / 1e3) / 1e9)
        t = xshard_ms(xshard, files["seed004"], 4, 2, it(10))
        s["seed004"].append(2.0 * 2048 * 2048 * 1024 / (t / 1e3) / 1e9)

        g = gbench(gemm_bench, "(BM_OpenBlasSgemm.*|BM_OneDnnMatmul/f32)/4096/4096/4096/", min_time, env)
        s["ref4096"].append(best_gflops(g, ["BM_OpenBlasSgemm/4096/4096/4096/real_time",
                                            "BM_OpenBlasSgemmColumnHalves/4096/4096/4096/real_time",
                                            "BM_OneDnnMatmul/f32/4096/4096/4096/real_time"]))
        t = xshard_ms(xshard, files["seed001"], 8, 1, it(4))
        s["seed001"].append(2.0 * 4096 ** 3 / (t / 1e3) / 1e9)
        print(f"round {r}: memcpy {s['memcpy'][-1]:.1f} GB/s, chain {s['chain'][-1]:.1f} GB/s | "
              f"OpenBLAS 2048^3 {s['blas2048'][-1]:.0f}, xshard f32 {s['f32'][-1]:.0f} GFLOP/s | "
              f"oneDNN bf16 {s['dnn_bf16'][-1]:.0f}, xshard bf16 {s['bf16'][-1]:.0f}, seed004 x4 "
              f"{s['seed004'][-1]:.0f} | best f32 4096^3 {s['ref4096'][-1]:.0f}, seed001 x8 "
              f"{s['seed001'][-1]:.0f} GFLOP/s", flush=True)

    med = {k: statistics.median(v) for k, v in s.items()}
    rows = [
        ("1-device chain, 64 MiB arrays (GB/s)", med["chain"], "memcpy 64 MiB", med["memcpy"], 80),
        ("f32 GEMM 2048^3, 1 device (GFLOP/s)", med["f32"], "best OpenBLAS call", med["blas2048"], 90),
        ("bf16 GEMM 2048x2048x1024, 1 device", med["bf16"], "best oneDNN call", med["dnn_bf16"], 85),
        ("seed 001 f32 4096 matmul, 8 devices", med["seed001"], "best 1-process f32 4096^3", med["ref4096"], 85),
        ("seed 004 bf16 matmul, 2x2 mesh", med["seed004"], "best oneDNN call", med["dnn_bf16"], 85),
    ]
    results = []
    print(f"\nmedians over {rounds} round(s):")
    print(f"| target | xshard | reference | ref. value | xshard / ref. | goal | met |")
    print("| --- | --: | --- | --: | --: | --: | --- |")
    for name, x, ref_name, ref, goal in rows:
        pct = 100.0 * x / ref
        ok = pct >= goal
        results.append(ok)
        print(f"| {name} | {x:.1f} | {ref_name} | {ref:.1f} | {pct:.0f} % | >= {goal} % | {'yes' if ok else 'NO'} |")

    p = run([str(runtime_test), "--gtest_filter=*SubgroupChainTest*:SubgroupStallTest.*",
             f"--gtest_repeat={stall_runs}", "--gtest_brief=1"], check=False)
    passes = len(re.findall(r"\[  PASSED  \]", p.stdout))
    failed = p.returncode != 0 or passes != stall_runs
    results.append(not failed)
    print(f"| stall regression test, {stall_runs} runs in a row | {passes} passed | | | | all | "
          f"{'NO' if failed else 'yes'} |")

    devices, count, ndots, nflights, example = trace_overlap(xshard, files["windowed"], tmp)
    ok = len(devices) > 0
    results.append(ok)
    print(f"| windowed-einsum trace: dot inside an in-flight all-gather step | {count} of {ndots} dots, "
          f"{len(devices)} devices | {nflights} transfers | | | >= 1 | {'yes' if ok else 'NO'} |")
    if example:
        print(f"  e.g. {example}")
    print(f"\nload after: {uptime()}")
    print(f"targets met: {sum(results)} of {len(results)}")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
