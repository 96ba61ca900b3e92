#!/usr/bin/env python3
"""Checks that `xshard partition FILE --report` tells the truth about the program it prints.

For each HLO file: the report's header total (collectives, bytes received per device) must equal
the sum of the collectives it lists, and the collectives of the printed program (counted with
bench/xla_compare/collectives.py, the report's ring model) must be exactly the listed ones: same
count, and every listed (kind, bytes) appears in the program. The report lists the module's own
collectives too (shard_map psum / all_gather / ..., marked "written in the program"), so they are
counted once, as listed; the line also says how many of the module's own the input has. Prints
one line per file and exits 1 on any mismatch.

  tests/tools/check_report_totals.py --xshard build/xshard --devices 8 FILE.hlo[:DEVICES]...
  tests/tools/check_report_totals.py --xshard build/xshard bench/xla_compare/out/*/*.hlo \\
      tests/data/spmd_partition/seed000_*.hlo
(The devices default to 8, FILE:N for one file; a module's num_partitions wins.)
Python 3 standard library only.
"""
import argparse
import collections
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "xla_compare"))
import collectives  # noqa: E402

HEADER = re.compile(r"SPMD partitioning: \d+ partitions, (\d+) collectives?, (.*?) received per device")
LISTED = re.compile(r"^  %[\w.\-]+: (all-gather|all-reduce|reduce-scatter|all-to-all|collective-permute) "
                    r"\S+, (\S+) received")
UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}


def format_bytes(b):
    """The report's FormatBytes: 12 -> "12B", 8069 -> "7.88KiB"."""
    if b < 1024:
        return f"{b}B"
    v, unit = b / 1024, 0
    while v >= 1024 and unit < 3:
        v, unit = v / 1024, unit + 1
    return f"{v:.2f}{('KiB', 'MiB', 'GiB', 'TiB')[unit]}"


def parse_bytes(text):
    m = re.match(r"([0-9.]+)\s*([KMG]?i?B)", text)
    return round(float(m.group(1)) * UNITS[m.group(2)]) if m else None


def check(xshard, path, devices):
    p = subprocess.run([xshard, "partition", str(path), "--devices", str(devices), "--report"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"xshard failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}"
    program, _, report = p.stdout.partition("\nSPMD partitioning:")
    report = "SPMD partitioning:" + report
    h = HEADER.search(report)
    if not h:
        return False, "no report header"
    listed, written = [], 0
    for line in report.split("\nmemory per device")[0].splitlines():
        m = LISTED.match(line)
        if m:
            listed.append((m.group(1), parse_bytes(m.group(2)), m.group(2)))
        elif line.startswith("    written in the program"):
            written += 1
    own = collectives.count(Path(path).read_text(), devices)["count"]
    got = collectives.count(program, devices)
    problems = []
    header_count, header_bytes = int(h.group(1)), parse_bytes(h.group(2))
    if header_count != len(listed):
        problems.append(f"header says {header_count} collectives, the report lists {len(listed)}")
    listed_bytes = sum(b for _, b, _ in listed)
    # The header rounds to its unit (e.g. 1.1KiB): compare within that rounding.
    if header_bytes is None or abs(header_bytes - listed_bytes) > max(1, header_bytes // 50):
        problems.append(f"header says {h.group(2)}, the listed collectives sum to {listed_bytes} B")
    if got["count"] != len(listed):
        problems.append(f"program has {got['count']} collectives, the report lists {len(listed)} "
                        f"({written} of them the module's own, of {own} in the input)")
    # Listed sizes are rounded as printed ("7.88KiB"): compare them in that form.
    in_program = collections.Counter((k, format_bytes(b)) for k, _, b in got["list"])
    missing = collections.Counter((k, text) for k, _, text in listed) - in_program
    if missing:
        problems.append(f"listed but not in the program: {dict(missing)}")
    summary = (f"{len(listed)} listed ({written} written in the program, {own} in the input) = "
               f"{got['count']} in the program, {listed_bytes} B")
    return not problems, "; ".join(problems) if problems else summary


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--xshard", default=str(REPO / "build" / "xshard"))
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    bad = 0
    for spec in args.files:
        f, _, n = spec.partition(":")
        ok, msg = check(args.xshard, f, int(n) if n else args.devices)
        tag = {True: "ok", False: "MISMATCH", None: "error"}[ok]
        bad += ok is not True
        print(f"{tag:8s} {f}: {msg}")
    print(f"{len(args.files) - bad} of {len(args.files)} files: report and program agree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
