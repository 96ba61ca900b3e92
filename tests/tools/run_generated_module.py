#!/usr/bin/env python3
"""Writes a generated module too large to commit and runs an xshard command on it (for tests/cli).

Usage: run_generated_module.py XSHARD KIND N [--limit-as MIB] ARGS...
KIND is one of
  nested_calls  an entry calling c<N-2>, which calls c<N-3>, ..., down to c0: N computations
                nested N deep (the verifier allows 256);
  chain         one computation of N negates, each of the one before (an N-deep instruction graph);
  big_text      a valid module padded with comment lines to N MiB of text;
  sparse        a file of N MiB that takes no disk space (a hole: NUL bytes when read).
The word MODULE in ARGS is replaced by the generated file's path. --limit-as runs xshard with its
address space limited to MIB MiB (as `ulimit -v`). Prints `exit CODE`, then xshard's stderr and
the first 20 lines of its stdout (prefixed `out: `), so a test can check all three.
"""
import os
import resource
import subprocess
import sys
import tempfile


def nested_calls(n):
    parts = ["HloModule nested_calls\n\nc0 {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] negate(p)\n}\n"]
    for i in range(1, n - 1):
        parts.append(f"\nc{i} {{\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] call(p), to_apply=c{i - 1}\n}}\n")
    parts.append(f"\nENTRY e {{\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] call(p), to_apply=c{n - 2}\n}}\n")
    return "".join(parts)


def chain(n):
    parts = ["HloModule chain\n\nENTRY e {\n  v0 = f32[4] parameter(0)\n"]
    for i in range(1, n):
        parts.append(f"  v{i} = f32[4] negate(v{i - 1})\n")
    parts.append(f"  ROOT r = f32[4] negate(v{n - 1})\n}}\n")
    return "".join(parts)


def big_text(mib, f):
    f.write("HloModule big_text\n\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] negate(p)\n}\n")
    line = "// " + "x" * 1020 + "\n"
    for _ in range(mib * 1024):
        f.write(line)


def main():
    xshard, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    args = sys.argv[4:]
    limit = None
    if args[:1] == ["--limit-as"]:
        limit = int(args[1]) << 20
        args = args[2:]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{kind}_{n}.hlo")
        with open(path, "w") as f:
            if kind == "big_text":
                big_text(n, f)
            elif kind == "sparse":
                f.truncate(n << 20)
            else:
                f.write({"nested_calls": nested_calls, "chain": chain}[kind](n))
        argv = [xshard] + [path if a == "MODULE" else a for a in args]

        def limit_memory():
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=240, preexec_fn=limit_memory)
        except subprocess.TimeoutExpired:
            print("did not finish within 240 s")
            return 1
    print(f"exit {p.returncode}")
    sys.stdout.write(p.stderr.replace(tmp, "TMP"))
    for line in p.stdout.splitlines()[:20]:
        print("out: " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
