#!/usr/bin/env python3
"""Merges the per-process traces of an mpirun job into one Chrome trace.

  mpirun -np 2 build/xshard run model.hlo --devices 8 --trace run.json   # run.process0.json, ...
  python3 scripts/merge_traces.py run.json                               # -> run.json

Every process writes FILE.process<r>.json with one track per device it hosts (track ids are
global device ids). This concatenates their events into FILE (or --out), keeping each metadata
event once, so the merged trace has one track per device of the job. Timestamps are each host's
monotonic clock: on one host the tracks line up; across hosts each host's tracks keep their own
origin. Exits 1 naming the problem when no per-process file exists or one is not a trace.
"""
import argparse
import json
import pathlib
import re
import sys


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", help="the --trace FILE given to xshard under mpirun")
    ap.add_argument("--out", help="where to write the merged trace (default: FILE itself)")
    args = ap.parse_args(argv)
    given = pathlib.Path(args.trace)
    stem = given.name[:-5] if given.name.endswith(".json") else given.name
    pattern = re.compile(re.escape(stem) + r"\.process(\d+)\.json$")
    parts = sorted((int(m.group(1)), p) for p in given.parent.glob(stem + ".process*.json")
                   if (m := pattern.match(p.name)))
    if not parts:
        print(f"merge_traces: no {stem}.process<r>.json next to {given} (run xshard under mpirun "
              f"with --trace {given} first)", file=sys.stderr)
        return 1
    events, seen_meta = [], set()
    for rank, path in parts:
        try:
            doc = json.loads(path.read_text())
            part = doc["traceEvents"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"merge_traces: {path} is not a Chrome trace ({e}); rerun the job to rewrite it",
                  file=sys.stderr)
            return 1
        for ev in part:
            if ev.get("ph") == "M":
                key = json.dumps(ev, sort_keys=True)
                if key in seen_meta:
                    continue
                seen_meta.add(key)
            events.append(ev)
    out = pathlib.Path(args.out) if args.out else given
    out.write_text(json.dumps({"traceEvents": events}, separators=(",", ":")) + "\n")
    tracks = sorted({ev["tid"] for ev in events if ev.get("ph") == "X" and ev.get("pid") == 0})
    print(f"merged {len(parts)} process traces ({len(events)} events, device tracks "
          f"{','.join(map(str, tracks))}) into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
