#!/usr/bin/env python3
"""Prints each collective of an HLO text file with the bytes a device receives, as
bench/xla_compare/collectives.py counts them (the ring model of `xshard partition --report`), then
the total: a check of the counter on XLA's compiled text (tests/cli/collectives_count.test)."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench" / "xla_compare"))
import collectives  # noqa: E402


def main():
    text = pathlib.Path(sys.argv[1]).read_text(encoding="utf-8")
    c = collectives.count(text, 8)
    for kind, shape, b in c["list"]:
        print(f"{kind} {shape}: {b} B")
    print(f"total {c['count']} collectives, {c['bytes']} B")


if __name__ == "__main__":
    main()
