#!/usr/bin/env python3
"""Runs `xshard run|bench run ... --trace FILE` and checks the Chrome trace it writes: valid JSON,
one step track per device, and the collectives with their bytes and groups / pairs. Prints one
summary line per collective kind (sorted), so a CLI test can pin them.

usage: check_trace.py XSHARD TRACE.json XSHARD-ARGS...
"""
import collections
import json
import subprocess
import sys


def main():
    xshard, trace, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    r = subprocess.run([xshard] + args + ["--trace", trace], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"xshard exited {r.returncode}: {r.stderr.strip()}")
        return 1
    with open(trace, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    steps = [e for e in events if e.get("ph") == "X" and e["pid"] == 0]
    flights = [e for e in events if e.get("ph") == "X" and e["pid"] == 1]
    devices = sorted({e["tid"] for e in steps})
    print(f"devices with steps: {devices}")
    kinds = collections.defaultdict(set)
    for e in steps + flights:
        a = e.get("args")
        if not a:
            continue
        kind = e["name"].split(" ")[0] + (" in flight" if e["pid"] == 1 else "")
        kinds[kind].add((a["bytes"], a.get("groups", ""), a.get("pairs", "")))
    for kind in sorted(kinds):
        for b, g, p in sorted(kinds[kind]):
            where = f"groups {g}" if g else f"pairs {p}" if p else "no groups"
            print(f"{kind}: {b} B, {where}")
    bad = [e for e in steps if e["dur"] < 0 or e["ts"] <= 0]
    if bad:
        print(f"{len(bad)} events with negative duration or no timestamp")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
