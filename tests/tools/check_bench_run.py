#!/usr/bin/env python3
"""Runs `xshard bench run ...` and checks its report without exact times (they vary run to run).

Usage: check_bench_run.py XSHARD ARGS...  (runs XSHARD bench run ARGS...)
Checks: the header line, the "Results:" block in seed 004's layout (label padded to 8, value
%10.3f, " ms") with the rows Mean, Median, Stdev, Min, Max, P95, P99 in that order, every value
>= 0 and min > 0, min <= median <= max, min <= mean <= max, median <= p95 <= p99 <= max, and
`median_ms=<t>` as the last line agreeing with the Median row. Prints one summary line that the
.test file matches exactly; any failure prints what differs and exits 1.
"""
import re
import subprocess
import sys

ROWS = ["Mean", "Median", "Stdev", "Min", "Max", "P95", "P99"]


def main():
    binary, args = sys.argv[1], sys.argv[2:]
    p = subprocess.run([binary, "bench", "run", *args], capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        print(f"exit code {p.returncode}: {p.stderr.strip()}")
        return 1
    lines = p.stdout.rstrip("\n").split("\n")
    problems = []
    header = re.fullmatch(r".+: (.+), (\d+) warmup, (\d+) timed iterations", lines[0])
    if not header:
        problems.append(f"header line: {lines[0]!r}")
    # The CPU's features and the GEMM path per dtype, e.g. "cpu: AMD EPYC (avx2 ...) gemm: f32 ...".
    if len(lines) < 2 or not re.fullmatch(r"cpu: .+ \(.+\) gemm: f32 .+, bf16 .+, f16 .+", lines[1]):
        problems.append(f"cpu / gemm line: {lines[1:2]!r}")
    else:
        del lines[1]
    if lines[1:3] != ["", "Results:"]:
        problems.append(f"expected a blank line and 'Results:', got {lines[1:3]!r}")
    values = {}
    for name, line in zip(ROWS, lines[3:3 + len(ROWS)]):
        m = re.fullmatch(r"  (\S+:) *( *\d+\.\d{3}) ms", line)
        if not m or m.group(1) != name + ":" or len(line) != len("  ") + 8 + 10 + len(" ms"):
            problems.append(f"row {name}: {line!r}")
            continue
        values[name] = float(m.group(2))
    last = re.fullmatch(r"median_ms=(\d+\.\d+)", lines[-1])
    if not last:
        problems.append(f"last line: {lines[-1]!r}")
    if len(values) == len(ROWS) and last:
        v = values
        median = float(last.group(1))
        checks = [
            ("min > 0", v["Min"] > 0),
            ("stdev >= 0", v["Stdev"] >= 0),
            ("min <= median <= max", v["Min"] <= v["Median"] <= v["Max"]),
            ("min <= mean <= max", v["Min"] <= v["Mean"] <= v["Max"]),
            ("median <= p95 <= p99 <= max", v["Median"] <= v["P95"] <= v["P99"] <= v["Max"]),
            ("median_ms matches the Median row", abs(median - v["Median"]) <= 0.0005 + 1e-9),
        ]
        problems += [f"{name} fails: {v}" for name, ok in checks if not ok]
    if problems:
        print("\n".join(problems))
        print(p.stdout)
        return 1
    print(f"ok: {header.group(1)}, {header.group(2)} warmup, {header.group(3)} timed iterations; "
          "7 rows in order, min > 0, min <= median <= p95 <= p99 <= max")
    return 0


if __name__ == "__main__":
    sys.exit(main())
