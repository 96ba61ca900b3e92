#!/usr/bin/env python3
"""All-gather and all-reduce (f32 sum) latency and bus bandwidth, three ways, interleaved
(A B C A B C ...) so that all three see the same machine load:
  in-process  xshard bench collectives --devices P (direct algorithm, P threads of one process)
  xshard-mpi  mpirun -np P xshard bench collectives --devices P (one device per process)
  mpi-raw     mpirun -np P mpi_raw_bench (MPI_Allgather / MPI_Allreduce called directly)
Prints the median over rounds of each run's median latency, and the bus bandwidth of that.
  bench/mpi_compare.py BUILD_DIR [--np 2] [--rounds 3] [--bytes 4096,1048576,8388608]
"""
import argparse
import os
import statistics
import subprocess

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def parse_xshard(text):
    rows = {}
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) > 5 and f[0] in ("all-gather", "all-reduce"):
            size = {"4.00KiB": 4096, "1.00MiB": 1 << 20, "8.00MiB": 8 << 20}.get(f[3], f[3])
            rows[(f[0], size)] = float(f[4])
    return rows


def parse_raw(text):
    rows = {}
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) == 6:
            op = "all-gather" if f[0] == "MPI_Allgather" else "all-reduce"
            rows[(op, int(f[2]))] = float(f[3])
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bytes", default="4096,1048576,8388608")
    a = ap.parse_args()
    sizes = [int(b) for b in a.bytes.split(",")]
    mpirun = ["mpirun", "--oversubscribe", "-np", str(a.np)]
    bench = [f"{a.build}/xshard", "bench", "collectives", "--devices", str(a.np), "--bytes",
             a.bytes, "--op", "all-gather,all-reduce"]
    runs = {
        "in-process": (bench + ["--algorithm", "direct"], parse_xshard),
        "xshard-mpi": (mpirun + bench, parse_xshard),
        "mpi-raw": (mpirun + [f"{a.build}/tests/mpi/mpi_raw_bench"] + [str(s) for s in sizes],
                    parse_raw),
    }
    got = {name: [] for name in runs}
    for _ in range(a.rounds):
        for name, (cmd, parse) in runs.items():
            out = subprocess.run(cmd, env=ENV, capture_output=True, text=True, check=True).stdout
            got[name].append(parse(out))
    n = a.np
    print(f"{'op':<11} {'bytes':>8} " + " ".join(f"{k + ' us':>14} {'busbw':>6}" for k in runs))
    for op in ("all-gather", "all-reduce"):
        for s in sizes:
            cells = []
            for name in runs:
                us = statistics.median(r[(op, s)] for r in got[name])
                size = s * n if op == "all-gather" else s
                factor = (n - 1) / n if op == "all-gather" else 2 * (n - 1) / n
                cells.append(f"{us:>14.1f} {size / (us * 1e-6) / 1e9 * factor:>6.2f}")
            print(f"{op:<11} {s:>8} " + " ".join(cells))


if __name__ == "__main__":
    main()
