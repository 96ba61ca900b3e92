#!/usr/bin/env python3
"""Corpus conformance run for the partitioner: `xshard run --check` over the OpenXLA corpus.

Every module of ../shared/corpus/xla whose MANIFEST.tsv row has shardings (has_sharding=yes), a
partition count and no `test_expects_error` flag is partitioned for its count and run on random
arguments with --check (the partitioned run is compared with a reference run). Each module is:

  passed       xshard exited 0 (every output within tolerance of the reference);
  unsupported  xshard exited 1 and said "unsupported: ..." (an op or form xshard refuses clearly);
  failed       anything else: a wrong result (--check failed), any other error, a crash (killed
               by a signal) or a timeout.

A row whose module xshard finds no sharding annotation in (MANIFEST's has_sharding is a text
match and also fires on shardings quoted inside an attribute string) is not a partitioner case:
it is listed as "excluded" with the reason, never counted as passed; so is a module in MALFORMED
(its declared shapes contradict an op's definition) that xshard refuses with the expected error.

Every virtual device lives in one xshard process, so a module can need more host memory than the
machine has; xshard refuses such a module up front ("unsupported: ... needs about N GiB of host
memory"). The script gives each of its --jobs processes an equal share of the memory available
when it starts ($XSHARD_HOST_MEMORY, unless already set).

Prints the counts, the unsupported reasons grouped by op / reason and every failed module with
the first line of its error (timeouts and crashes marked as such). Exits 0 when nothing failed,
1 otherwise, and 1 with a message when the corpus or the binary is missing (--skip-code N: exit N
for a missing corpus instead; the ctest `conformance` uses 77, a skip).

  scripts/conformance.py                          # build/xshard over ../shared/corpus/xla, ~9 min on 2 cores
  scripts/conformance.py --xshard build-rel/xshard --jobs 2 --filter dot_handler --verbose
  scripts/conformance.py --max-array-mib 16       # the quick subset CI runs (~50 s)
  scripts/conformance.py --shard 1/4 --list-failures
Python 3 standard library only.
"""

import argparse
import collections
import concurrent.futures
import csv
import os
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# One module's result: status passed / unsupported / failed; kind (failed only) mismatch / error /
# crash / timeout; message the first stderr line.
Outcome = collections.namedtuple("Outcome", "row status kind message stderr seconds")


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Partition every sharded corpus module for its partition count and run it with "
                    "`xshard run --check` on random arguments; print passed / failed / unsupported counts.")
    p.add_argument("--xshard", default=os.path.join(REPO, "build", "xshard"),
                   help="the xshard binary (default: %(default)s)")
    p.add_argument("--corpus", default=os.path.normpath(os.path.join(REPO, "..", "shared", "corpus", "xla")),
                   help="the corpus folder holding MANIFEST.tsv (default: %(default)s)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="modules run at once (default: the number of cores, %(default)s)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds per module before it counts as a failed timeout (default: %(default)s)")
    p.add_argument("--filter", default="", help="only modules whose path contains this substring")
    p.add_argument("--shard", default="", metavar="I/N",
                   help="only the I-th of N deterministic slices of the selected modules (1-based)")
    p.add_argument("--max-array-mib", type=float, default=None, metavar="MIB",
                   help="only modules whose every array (global shape) is at most this many MiB: a "
                        "deterministic quick subset (the summary says how many were left out)")
    p.add_argument("--seed", type=int, default=1, help="--random-args seed (default: %(default)s)")
    p.add_argument("--max-while-iterations", type=int, default=1000,
                   help="bound on every while loop, so loops on random inputs end (default: %(default)s)")
    p.add_argument("--verbose", action="store_true",
                   help="one line per module: its outcome, time and the first line of its stderr")
    p.add_argument("--list-failures", action="store_true",
                   help="after the summary, each failed module's command and its stderr (up to 20 lines)")
    p.add_argument("--skip-code", type=int, default=None,
                   help="exit with this code (instead of 1) when the corpus folder does not exist")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("--jobs must be at least 1, got %d" % args.jobs)
    if args.timeout <= 0:
        p.error("--timeout must be positive, got %g" % args.timeout)
    if args.shard:
        m = re.fullmatch(r"(\d+)/(\d+)", args.shard)
        if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
            p.error("--shard takes I/N with 1 <= I <= N (e.g. 1/4), got '%s'" % args.shard)
        args.shard = (int(m.group(1)), int(m.group(2)))
    return args


BYTES = {"pred": 1, "s4": 1, "u4": 1, "s8": 1, "u8": 1, "f8e4m3fn": 1, "f8e5m2": 1, "f8e4m3b11fnuz": 1,
         "f8e8m0fnu": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
         "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}


def largest_array_bytes(path):
    """The largest array shape written in the module text (dtype[dims]), in bytes."""
    with open(path, errors="replace") as f:
        text = f.read()
    largest = 0
    for dtype, dims in re.findall(r"\b([a-z]+[0-9]*[a-z0-9]*)\[([0-9, ]*)\]", text):
        if dtype not in BYTES:
            continue
        n = 1
        for d in dims.split(","):
            if d.strip():
                n *= int(d)
        largest = max(largest, n * BYTES[dtype])
    return largest


def select_rows(corpus, substring, shard):
    """MANIFEST rows with shardings, a partition count and no test_expects_error flag."""
    with open(os.path.join(corpus, "MANIFEST.tsv"), newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    chosen = []
    for r in rows:
        if r.get("has_sharding") != "yes" or not (r.get("num_partitions") or "").isdigit():
            continue
        if "test_expects_error" in (r.get("notes") or "").split(";"):
            continue
        chosen.append(r)
    if shard:
        i, n = shard
        chosen = [r for k, r in enumerate(chosen) if k % n == i - 1]
    return [r for r in chosen if substring in r["file"]]


def command(args, row):
    return [args.xshard, "run", os.path.join(args.corpus, row["file"]), "--devices", row["num_partitions"],
            "--random-args", str(args.seed), "--check", "--max-while-iterations", str(args.max_while_iterations),
            "--blas-threads", "1"]


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def mem_available():
    """MemAvailable from /proc/meminfo in bytes, or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


# Modules whose declared shapes contradict the definition of an op they use, so no correct
# executor can run them; xshard must refuse them (exit 1) naming the mismatch. A module listed
# here that runs, or fails another way, still counts as failed.
MALFORMED = {
    "spmd_partitioner_test/CustomCallWrap.hlo":
        ("the result must be f32[14]",
         "declares f32[20] for _SPMDInternalOp_Wrap of f32[12] by 1 + 1 (the wrap is f32[14]); "
         "XLA's test checks only the pattern its partitioner emits"),
}


def run_one(args, row, env):
    start = time.monotonic()
    try:
        p = subprocess.run(command(args, row), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=args.timeout, errors="replace", env=env)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return Outcome(row, "failed", "timeout", "timeout after %gs" % args.timeout, err, time.monotonic() - start)
    seconds = time.monotonic() - start
    err = p.stderr
    if p.returncode == 0:
        return Outcome(row, "passed", "", first_line(err), err, seconds)
    if p.returncode < 0:
        sig = -p.returncode
        return Outcome(row, "failed", "crash", "killed by signal %d; %s" % (sig, first_line(err) or "no stderr"),
                       err, seconds)
    if p.returncode == 1 and "unsupported" in err:
        return Outcome(row, "unsupported", "", first_line(err), err, seconds)
    if p.returncode == 1 and "has no sharding annotations to partition" in err:
        return Outcome(row, "excluded", "", "no sharding annotation in the module (has_sharding matched quoted text)",
                       err, seconds)
    malformed = MALFORMED.get(row["file"])
    if p.returncode == 1 and malformed and malformed[0] in err:
        return Outcome(row, "excluded", "", "malformed: " + malformed[1], err, seconds)
    kind = "mismatch" if "--check failed" in err else "error"
    return Outcome(row, "failed", kind, first_line(err) or "exit %d, no stderr" % p.returncode, err, seconds)


def unsupported_reason(stderr):
    """Groups an "unsupported: ..." message by op / reason, dropping names, numbers and shapes."""
    line = next((l for l in stderr.splitlines() if "unsupported" in l), stderr)
    m = re.search(r"instruction '[^']*' \(([^)]+)\) is not supported by the executor(?:; (.*))?", line)
    if m:
        target = re.search(r'custom_call_target="([^"]*)"', m.group(2) or "")
        if target:
            return 'executor: custom-call target "%s"' % target.group(1)
        reason = "executor: " + m.group(1) + (": " + m.group(2) if m.group(2) else "")
    elif "of host memory" in line:
        return "host memory: the run needs more than this job's share of the machine's memory"
    elif "cannot compare runs that do not finish" in line:
        return "--check: a while loop does not finish on the random inputs, partitioned or not"
    else:
        reason = line[line.find("unsupported"):]
    reason = re.sub(r"'[^']*'", "'…'", reason)
    reason = re.sub(r"\b[a-z]+[0-9]*\[[^\]]*\](\{[^}]*\})?", "T[…]", reason)
    reason = re.sub(r"\{[^{}]*\}", "{…}", reason)
    reason = re.sub(r"\d+", "N", reason)
    return reason[:110]


def main(argv):
    args = parse_args(argv)
    if not os.path.isfile(os.path.join(args.corpus, "MANIFEST.tsv")):
        print("conformance: corpus not found: %s has no MANIFEST.tsv; pass --corpus DIR (the OpenXLA corpus "
              "folder, ../shared/corpus/xla next to the repository)" % args.corpus, file=sys.stderr)
        return args.skip_code if args.skip_code is not None else 1
    if not (os.path.isfile(args.xshard) and os.access(args.xshard, os.X_OK)):
        print("conformance: xshard binary not found or not executable: %s; build it (ninja -C build xshard) "
              "or pass --xshard PATH" % args.xshard, file=sys.stderr)
        return 1
    rows = select_rows(args.corpus, args.filter, args.shard)
    args.left_out = 0
    if args.max_array_mib is not None:
        limit = args.max_array_mib * 2**20
        kept = [r for r in rows if largest_array_bytes(os.path.join(args.corpus, r["file"])) <= limit]
        args.left_out = len(rows) - len(kept)
        rows = kept
    if not rows:
        print("conformance: no module selected (filter '%s')" % args.filter, file=sys.stderr)
        return 1
    env = dict(os.environ)
    available = mem_available()
    if "XSHARD_HOST_MEMORY" not in env and available:
        env["XSHARD_HOST_MEMORY"] = str(available // min(args.jobs, len(rows)))
    args.memory_note = env.get("XSHARD_HOST_MEMORY")
    start = time.monotonic()
    outcomes = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_one, args, r, env) for r in rows]
        for fut in concurrent.futures.as_completed(futures):
            o = fut.result()
            outcomes.append(o)
            if args.verbose:
                label = o.status + ("/" + o.kind if o.kind else "")
                print("%-22s %6.1fs  %s  %s" % (label, o.seconds, o.row["file"], o.message), flush=True)
    wall = time.monotonic() - start
    outcomes.sort(key=lambda o: o.row["file"])
    report(args, outcomes, wall)
    return 0 if not any(o.status == "failed" for o in outcomes) else 1


def report(args, outcomes, wall):
    by_status = collections.Counter(o.status for o in outcomes)
    failed = [o for o in outcomes if o.status == "failed"]
    kinds = collections.Counter(o.kind for o in failed)
    memory = ""
    if args.memory_note:
        note = args.memory_note
        memory = ", host memory per job %s" % ("%.1f GiB" % (int(note) / 2**30) if note.isdigit() else note)
    print("\nxshard run --check over %s (%d modules, seed %d, %d jobs%s, %.0fs wall)"
          % (args.corpus, len(outcomes), args.seed, args.jobs, memory, wall))
    if getattr(args, "left_out", 0):
        print("  (%d modules with an array over %g MiB left out by --max-array-mib)" % (args.left_out, args.max_array_mib))
    print("  %5d  passed" % by_status["passed"])
    print("  %5d  unsupported" % by_status["unsupported"])
    print("  %5d  failed" % by_status["failed"]
          + ("  (" + ", ".join("%s %d" % (k, n) for k, n in sorted(kinds.items())) + ")" if failed else ""))
    excluded = [o for o in outcomes if o.status == "excluded"]
    if excluded:
        print("  %5d  excluded (not partitioner cases, or malformed)" % len(excluded))
        for o in excluded:
            print("           %s: %s" % (o.row["file"], o.message))
    reasons = collections.Counter(unsupported_reason(o.stderr) for o in outcomes if o.status == "unsupported")
    if reasons:
        print("\nunsupported, by reason:")
        for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
            print("  %5d  %s" % (n, reason))
    if failed:
        print("\nfailed:")
        for o in failed:
            print("  [%s] %s: %s" % (o.kind, o.row["file"], o.message))
    if args.list_failures and failed:
        print("\nfailure details:")
        for o in failed:
            print("\n$ " + " ".join(command(args, o.row)))
            lines = o.stderr.splitlines()
            print("\n".join("  " + l for l in lines[:20]) + ("\n  ..." if len(lines) > 20 else ""))
    slowest = sorted(outcomes, key=lambda o: -o.seconds)[:5]
    print("\nslowest: " + ", ".join("%s %.1fs" % (os.path.basename(o.row["file"]), o.seconds) for o in slowest))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
