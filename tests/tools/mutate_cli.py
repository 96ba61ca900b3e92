#!/usr/bin/env python3
"""Mutation campaign through the command line: mutated corpus modules must end in exit 0 or 1.

Takes HLO modules (the repository's tests/data folders and, when present, the shared OpenXLA
corpus), mutates each (byte flips, token swaps, number changes, truncation, deleted or duplicated
lines, huge dims), and runs `xshard fmt | propagate | partition | run` on every mutant with a
timeout. A finding is any of: an exit code other than 0 or 1, a signal, "internal error" in the
output, exit 1 without a one-line `xshard ...: error:` message, output over --max-output bytes,
or a command still running past its timeout. Findings are written to --out (the mutant, the
command and its output) and listed at the end; the exit code is 1 when there are any.
Development tool, not a test (a campaign takes minutes); the fixes it leads to get CLI tests.

Usage: tests/tools/mutate_cli.py XSHARD_BINARY [--cases 2000] [--seed 1] [--jobs 1]
           [--timeout 10] [--out /tmp/xshard_mutants] [--corpus DIR ...]
"""
import argparse
import concurrent.futures
import os
import random
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
DEFAULT_CORPUS = [os.path.join(SRC, "tests", "data"), "/work/shared/corpus/xla"]
COMMANDS = ["fmt", "propagate", "partition", "run"]
NUMBER = re.compile(rb"-?\d+")
TOKEN = re.compile(rb"[A-Za-z_][\w.\-]*|\d+|[{}\[\](),=:]")
DIMS = re.compile(rb"\b(?:f32|f16|bf16|s32|s64|u8|u32|pred|f64|s8)\[([\d,]*)\]")
INTERESTING = [b"0", b"-1", b"1", b"2", b"3", b"7", b"65536", b"2147483647", b"2147483648",
               b"4294967296", b"9223372036854775807", b"9223372036854775808",
               b"99999999999999999999", b"-9223372036854775808"]


def modules(dirs):
    found = []
    for d in dirs:
        for root, _, files in os.walk(d):
            for f in files:
                if f.endswith(".hlo"):
                    path = os.path.join(root, f)
                    if os.path.getsize(path) <= 64 << 10:
                        found.append(path)
    return sorted(found)


def byte_flip(rng, b):
    b = bytearray(b)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(b))
        b[i] = rng.choice([b[i] ^ (1 << rng.randrange(8)), rng.randrange(256),
                           ord(rng.choice("{}[](),=:%-0123456789 \n"))])
    return bytes(b)


def token_swap(rng, b):
    toks = list(TOKEN.finditer(b))
    if len(toks) < 2:
        return b
    x, y = sorted(rng.sample(toks, 2), key=lambda m: m.start())
    return b[:x.start()] + y.group() + b[x.end():y.start()] + x.group() + b[y.end():]


def number_change(rng, b):
    nums = list(NUMBER.finditer(b))
    if not nums:
        return b
    for _ in range(rng.randint(1, 3)):
        m = rng.choice(nums)
        v = int(m.group())
        new = rng.choice(INTERESTING + [str(v + 1).encode(), str(v - 1).encode(),
                                        str(v * 1000).encode()])
        b = b[:m.start()] + new + b[m.end():]
        nums = list(NUMBER.finditer(b))
    return b


def truncate(rng, b):
    return b[:rng.randrange(len(b))]


def delete_line(rng, b):
    lines = b.split(b"\n")
    del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def duplicate_line(rng, b):
    lines = b.split(b"\n")
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return b"\n".join(lines)


def huge_dims(rng, b):
    shapes = list(DIMS.finditer(b))
    if not shapes:
        return b
    m = rng.choice(shapes)
    dims = m.group(1).split(b",") if m.group(1) else []
    big = rng.choice([b"100000", b"1000000000", b"4294967296", b"9223372036854775807"])
    if dims:
        dims[rng.randrange(len(dims))] = big
    else:
        dims = [big]
    return b[:m.start(1)] + b",".join(dims) + b[m.end(1):]


MUTATORS = [byte_flip, token_swap, number_change, truncate, delete_line, duplicate_line, huge_dims]


def argv_for(binary, command, path, timeout):
    if command == "run":
        return [binary, "run", path, "--random-args", "1", "--timeout", str(timeout),
                "--max-while-iterations", "1000"]
    return [binary, command, path]


def check(binary, command, path, timeout, max_output):
    """Runs one command on one mutant; returns a problem string or None."""
    env = dict(os.environ, XSHARD_HOST_MEMORY=os.environ.get("XSHARD_HOST_MEMORY", "1G"))
    limit = timeout + 5
    try:
        p = subprocess.run(argv_for(binary, command, path, timeout), capture_output=True,
                           timeout=limit, env=env)
    except subprocess.TimeoutExpired:
        return f"still running after {limit} s", b""
    out = p.stdout + p.stderr
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode < 0:
        return f"signal {-p.returncode}", out
    if p.returncode not in (0, 1):
        return f"exit {p.returncode}", out
    if b"internal error" in out:
        return "internal error", out
    if len(out) > max_output:
        return f"{len(out)} bytes of output", out
    if p.returncode == 1:
        # Only '\n' ends a line: an echoed control byte (str.splitlines splits at \x1e) does not.
        lines = [l for l in err.split("\n") if l.strip()]
        if len(lines) != 1 or not lines[0].startswith("xshard") or "error:" not in lines[0]:
            return f"exit 1 without one error line ({len(lines)} lines)", out
    return None, out


def one_case(args, index, source):
    rng = random.Random(args.seed * 1000003 + index)
    with open(source, "rb") as f:
        text = f.read()
    if not text:
        return []
    mutators = rng.sample(MUTATORS, rng.randint(1, 2))
    for m in mutators:
        if text:
            text = m(rng, text)
    path = os.path.join(args.out, "work", f"case{index}.hlo")
    with open(path, "wb") as f:
        f.write(text)
    found = []
    max_output = max(args.max_output, 40 * len(text))
    for command in COMMANDS:
        problem, out = check(args.binary, command, path, args.timeout, max_output)
        if problem:
            keep = os.path.join(args.out, f"finding{index}_{command}.hlo")
            with open(keep, "wb") as f:
                f.write(text)
            with open(keep + ".txt", "wb") as f:
                f.write(f"{problem}\nfrom {source} by {[m.__name__ for m in mutators]}\n"
                        f"{' '.join(argv_for(args.binary, command, keep, args.timeout))}\n"
                        .encode() + out[:20000])
            found.append((index, command, problem, keep))
    os.remove(path)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=10)
    ap.add_argument("--max-output", type=int, default=4 << 20)
    ap.add_argument("--out", default="/tmp/xshard_mutants")
    ap.add_argument("--corpus", nargs="*", default=DEFAULT_CORPUS)
    args = ap.parse_args()
    os.makedirs(os.path.join(args.out, "work"), exist_ok=True)
    sources = modules([d for d in args.corpus if os.path.isdir(d)])
    if not sources:
        print("no .hlo modules found in", args.corpus)
        return 2
    pick = random.Random(args.seed)
    plan = [(i, pick.choice(sources)) for i in range(args.cases)]
    findings, done = [], 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for result in pool.map(lambda c: one_case(args, *c), plan):
            findings += result
            done += 1
            if done % 200 == 0:
                print(f"{done}/{args.cases} cases, {len(findings)} findings", flush=True)
    runs = args.cases * len(COMMANDS)
    print(f"{args.cases} mutants from {len(sources)} modules, {runs} command runs, "
          f"{len(findings)} findings")
    kinds = {}
    for index, command, problem, keep in findings:
        kinds.setdefault((command, re.sub(r"\d+", "N", problem)), []).append(keep)
    for (command, problem), keeps in sorted(kinds.items()):
        print(f"  {command}: {problem}: {len(keeps)} (e.g. {keeps[0]})")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
