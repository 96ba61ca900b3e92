#!/usr/bin/env python3
"""Runs a CLI test script against the xshard binary.

A script (tests/cli/*.test) is a list of cases. Each case starts with `$ xshard ARGS...` (shell
quoting; `xshard` is replaced by the binary under test, `$SRC` by the source dir, `$CORPUS` by the
corpus dir, `$TMP` by a fresh temp dir, `$XSHARD` by the binary's path, for checker scripts that
run it). The lines that follow, up to the next `$` line, say what must happen:
  plain line     the exact stdout, line by line (trailing spaces ignored)
  `~ text`       stdout contains `text` (use instead of exact lines)
  `! text`       stderr contains `text`
  `? N`          exit code N (default 0)
  `# ...`        comment
A case with `~` lines and no plain lines does not check stdout exactly; a case with neither
expects empty stdout.
"""
import os
import shlex
import subprocess
import sys
import tempfile


def parse(path):
    cases, cur = [], None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("$ "):
                cur = {"cmd": line[2:], "out": [], "contains": [], "err": [], "code": 0,
                       "exact": False}
                cases.append(cur)
            elif cur is None or line.startswith("# "):
                continue
            elif line.startswith("~ "):
                cur["contains"].append(line[2:])
            elif line.startswith("! "):
                cur["err"].append(line[2:])
            elif line.startswith("? "):
                cur["code"] = int(line[2:])
            else:
                cur["out"].append(line.rstrip())
                cur["exact"] = True
    for c in cases:
        while c["out"] and c["out"][-1] == "":
            c["out"].pop()
        c["exact"] = bool(c["out"]) or not c["contains"]
    return cases


def main():
    binary, script = sys.argv[1], sys.argv[2]
    src = os.environ.get("XSHARD_SOURCE_DIR", "")
    corpus = os.environ.get("XSHARD_CORPUS_DIR", "")
    failures = 0
    cases = parse(script)
    if not cases:
        print(f"{script}: no cases")
        return 1
    for c in cases:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = c["cmd"].replace("$XSHARD", binary).replace("$SRC", src).replace("$CORPUS", corpus).replace("$TMP", tmp)
            argv = shlex.split(cmd)
            if argv[0] == "xshard":
                argv[0] = binary
            try:
                p = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp)
            except subprocess.TimeoutExpired:
                print(f"FAIL (timeout): {c['cmd']}")
                failures += 1
                continue
        out_lines = [l.rstrip() for l in p.stdout.split("\n")]
        while out_lines and out_lines[-1] == "":
            out_lines.pop()
        problems = []
        if p.returncode != c["code"]:
            problems.append(f"exit code {p.returncode}, expected {c['code']}")
        if c["exact"] and out_lines != c["out"]:
            problems.append("stdout differs:\n--- expected\n" + "\n".join(c["out"]) +
                            "\n--- got\n" + "\n".join(out_lines))
        for s in c["contains"]:
            if s not in p.stdout:
                problems.append(f"stdout lacks: {s!r}")
        for s in c["err"]:
            if s not in p.stderr:
                problems.append(f"stderr lacks: {s!r}\n--- stderr\n{p.stderr}")
        if problems:
            failures += 1
            print(f"FAIL: {c['cmd']}")
            for pr in problems:
                print("  " + pr.replace("\n", "\n  "))
        else:
            print(f"ok: {c['cmd']}")
    print(f"{len(cases) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
