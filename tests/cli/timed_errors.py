#!/usr/bin/env python3
"""Runs a command and says which of its error lines came within a time limit (for
reliability_stuck.test, where mpirun's own teardown after the processes' errors is not the
measure).

Usage: timed_errors.py LIMIT_SECONDS CMD ARGS...
Prints, for each stderr line holding "error:", "error within LIMIT s: <line>" or "error after
T s: <line>" (the time counted from the start of CMD), then "no error line" when there was none,
and last "exit N", CMD's exit code.
"""
import subprocess
import sys
import time


def main():
    limit = float(sys.argv[1])
    start = time.monotonic()
    p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = False
    for line in p.stderr:
        if "error:" not in line:
            continue
        found = True
        took = time.monotonic() - start
        when = f"within {limit:g} s" if took <= limit else f"after {took:.2f} s"
        print(f"error {when}: {line.rstrip()}")
    p.wait(timeout=120)
    if not found:
        print("no error line")
    print(f"exit {p.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
