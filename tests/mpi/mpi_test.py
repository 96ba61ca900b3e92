#!/usr/bin/env python3
"""Scenarios of xshard over several MPI processes, one per ctest entry (tests/mpi/CMakeLists.txt):

  collectives_np2, collectives_np4, collectives_np2_l2
      mpi_collectives_check: every collective and group form, bitwise against the in-process
      communicator, at 2 / 4 processes (1 device each) and 2 processes x 2 devices, with the
      inputs sent along with the signatures and after them.
  mismatch     device 0 all-gathers f32[2], the others f32[3]: every process fails naming both.
  early_exit, late_arrival
               the last of 3 processes returns without joining an all-reduce, or arrives 5 s
               late with a 2 s timeout: the others fail naming it, at once / within 3 s.
  cli_global   `xshard run` of a global module (seed 001's matmul, 4 partitions): outputs saved
               under mpirun -np 2 (2 devices per process) and -np 4 equal the one-process run's.
  cli_shard_map  shard_map programs (psum, all_gather, all_to_all, ppermute ring, psum_scatter on
               8 devices): under mpirun -np 2 / -np 4 equal the one-process run bitwise and JAX's
               outputs (tests/data/shardy/*.out0.npy) to 1e-5.
  cli_bench    bench collectives / run / cmm under mpirun -np 2 print their results once.
  trace        `xshard run --trace` under mpirun -np 2 (8 devices): one file per process, and
               scripts/merge_traces.py joins them into one trace with a track for each of the 8
               devices.
  killed_rank  a 3-process SPMD loop of all-reduces; process 1 gets kill -9 after 2 s. Default
               mpirun: it ends every process within seconds naming the killed rank (no hang, no
               process left). --enable-recovery: the two survivors end with xshard's error naming
               process 1, the all-reduce and its group within --collective-timeout (3 s) + 5 s,
               each with exit code 1; none is left running.
  netns        two network namespaces as two hosts (a veth pair with made-up addresses
               10.231.0.1 / 10.231.0.2 that exist only inside them): mpirun launches one process
               in each through `ip netns exec` (plm_rsh_agent) and the collectives check passes
               over TCP between them. Skips (77) naming the reason when namespaces cannot be made.

Exit 0 pass, 1 fail, 77 skipped (a build without MPI, or no mpirun).
"""
import argparse
import os
import pathlib
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

SRC = pathlib.Path(__file__).resolve().parents[2]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl_vader_single_copy_mechanism="none")


def skip(reason):
    print(f"skipped: {reason}")
    sys.exit(77)


def mpirun(args, np, *extra):
    return [args.mpirun, "--oversubscribe", "-np", str(np), *extra]


def run(cmd, timeout=100, **kw):
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=timeout, **kw)
    return p, time.monotonic() - t0


def read_npy_f32(path):
    data = pathlib.Path(path).read_bytes()
    assert data[:6] == b"\x93NUMPY", path
    hlen = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + hlen].decode()
    assert "'<f4'" in header, f"{path}: only float32 .npy is compared here ({header})"
    body = data[10 + hlen:]
    return struct.unpack(f"<{len(body) // 4}f", body)


def collectives(args, np, per_process):
    """Twice: inputs sent with the signatures (the default for these small arrays), and after
    them (--eager-bytes 0, which also takes MPI_Iallreduce where it applies)."""
    failures = 0
    for eager in ("default", "0"):
        extra = [] if eager == "default" else ["--eager-bytes", eager]
        p, secs = run(mpirun(args, np) + [f"{args.build}/tests/mpi/mpi_collectives_check",
                                          "--devices-per-process", str(per_process), *extra])
        print(f"--eager-bytes {eager}:", p.stdout, p.stderr[-3000:], f"({secs:.1f} s)")
        lines = [l for l in p.stdout.splitlines() if l.startswith("process ")]
        ok = (p.returncode == 0 and sum(" 0 of " in l for l in lines) == np
              and sum(l.endswith(": sharing ok") for l in lines) == np)
        failures += 0 if ok else 1
    return 0 if failures == 0 else 1


def mismatch(args):
    p, _ = run(mpirun(args, 2) + [f"{args.build}/tests/mpi/mpi_collectives_check",
                                  "--mode", "mismatch"])
    print(p.stdout)
    lines = [l for l in p.stdout.splitlines() if l.startswith("process ")]
    ok = len(lines) == 2 and all("collective mismatch" in l and "f32[2]" in l and "f32[3]" in l
                                 for l in lines)
    return 0 if ok else 1


def absent(args, mode):
    """The last of 3 processes skips an all-reduce (early) or comes 5 s late (late, timeout 2 s):
    processes 0 and 1 fail naming process 2, at once or within the timeout + 1 s."""
    p, secs = run(mpirun(args, 3) + [f"{args.build}/tests/mpi/mpi_collectives_check",
                                     "--mode", mode])
    print(p.stdout)
    lines = {l.split(":")[0]: l for l in p.stdout.splitlines() if l.startswith("process ")}
    limit = 1.0 if mode == "early" else 3.0
    ok = True
    for proc in ("process 0", "process 1"):
        line = lines.get(proc, "")
        took = float(line.rsplit("(", 1)[-1].split()[0]) if line.endswith("s)") else 99
        ok = ok and "process 2 (device 2)" in line and took <= limit
        if mode == "early":
            ok = ok and "finished its program without joining" in line
        else:
            ok = ok and "timed out after 2000 ms" in line
    return 0 if ok else 1


def cli_compare(args, hlo, run_args, devices, nps, reference=None):
    """Saves the outputs of `xshard run` in one process and under mpirun -np each of `nps`; they
    must be equal bitwise (and close to `reference` .npy files when given)."""
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        base = [f"{args.build}/xshard", "run", str(hlo), "--devices", str(devices), *run_args]
        p, _ = run(base + ["--save", f"{tmp}/one"])
        if p.returncode != 0:
            print("one process:", p.stderr)
            return 1
        outs = sorted(pathlib.Path(f"{tmp}/one").glob("out*.npy"))
        for np in nps:
            p, secs = run(mpirun(args, np) + base + ["--save", f"{tmp}/np{np}"])
            if p.returncode != 0:
                print(f"mpirun -np {np}:", p.stderr[-2000:])
                failures += 1
                continue
            for o in outs:
                got = pathlib.Path(f"{tmp}/np{np}/{o.name}")
                same = got.exists() and got.read_bytes() == o.read_bytes()
                print(f"{hlo.name} -np {np} {o.name}: {'equal' if same else 'DIFFERENT'} "
                      f"({secs:.1f} s)")
                failures += 0 if same else 1
        for i, ref in enumerate(reference or []):
            want, got = read_npy_f32(ref), read_npy_f32(f"{tmp}/one/out{i}.npy")
            err = max(abs(a - b) for a, b in zip(want, got)) if want else 0
            close = len(want) == len(got) and err <= 1e-5
            print(f"{hlo.name} out{i} vs JAX {ref.name}: max abs error {err:g}")
            failures += 0 if close else 1
    return 0 if failures == 0 else 1


def cli_global(args):
    d = SRC / "tests/data/seeds_global"
    return cli_compare(args, d / "seed001_matmul.hlo",
                       ["--args", str(d / "seed001_matmul.arg0.npy"),
                        str(d / "seed001_matmul.arg1.npy")], 4, [2, 4])


def cli_shard_map(args):
    d = SRC / "tests/data/shardy"
    failures = 0
    for name in ["psum", "all_gather", "all_to_all", "ppermute_ring", "psum_scatter"]:
        failures += cli_compare(args, d / f"{name}.hlo", ["--args", str(d / f"{name}.arg0.npy")],
                                8, [2, 4], [d / f"{name}.out0.npy"])
    return 0 if failures == 0 else 1


def cli_bench(args):
    """bench collectives, bench run and bench cmm under mpirun -np 2: each prints its table once
    (rank 0) and exits 0."""
    failures = 0
    x = f"{args.build}/xshard"
    cases = [
        ([x, "bench", "collectives", "--devices", "2", "--bytes", "4096,64K",
          "--op", "all-gather,all-reduce"], ["all-gather", "all-reduce"]),
        ([x, "bench", "run", str(SRC / "tests/data/seeds_global/seed001_matmul.hlo"),
          "--devices", "4", "--random-args", "1"], ["median_ms="]),
        ([x, "bench", "cmm", "--algo", "gspmd,wang", "--mesh", "row=2,col=2",
          "--bshd", "2,64,8,16"], ["max_abs_err=", "median_ms="]),
    ]
    for cmd, wants in cases:
        p, secs = run(mpirun(args, 2) + cmd)
        out = p.stdout
        once = all(out.count(w) >= 1 for w in wants) and out.count("median_ms=") <= 1
        print(" ".join(cmd[1:3]), f"exit {p.returncode}, {secs:.1f} s, found {wants}: {once}")
        if p.returncode != 0 or not once:
            print(out[-2000:], p.stderr[-2000:])
            failures += 1
    return 0 if failures == 0 else 1


LOOP = """HloModule loop, num_partitions=3

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

cond {
  p = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(100000000)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  p = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  x = f32[64] get-tuple-element(p), index=1
  ar = f32[64] all-reduce(x), channel_id=1, replica_groups={{0,1,2}}, use_global_device_ids=true, to_apply=add
  ROOT t = (s32[], f32[64]) tuple(i2, ar)
}

ENTRY e {
  x = f32[64] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[64]) tuple(z, x)
  w = (s32[], f32[64]) while(t), condition=cond, body=body
  ROOT r = f32[64] get-tuple-element(w), index=1
}
"""


def trace(args):
    d = SRC / "tests/data/shardy"
    with tempfile.TemporaryDirectory() as tmp:
        given = pathlib.Path(tmp) / "run.json"
        p, _ = run(mpirun(args, 2) + [f"{args.build}/xshard", "run", str(d / "psum.hlo"),
                                      "--devices", "8", "--args", str(d / "psum.arg0.npy"),
                                      "--trace", str(given)])
        if p.returncode != 0:
            print("mpirun -np 2 xshard run --trace:", p.stderr[-2000:])
            return 1
        parts = sorted(x.name for x in pathlib.Path(tmp).glob("run.process*.json"))
        print("per-process traces:", parts)
        if parts != ["run.process0.json", "run.process1.json"]:
            return 1
        m = subprocess.run([sys.executable, str(SRC / "scripts/merge_traces.py"), str(given)],
                           capture_output=True, text=True, timeout=60)
        print(m.stdout, m.stderr)
        if m.returncode != 0:
            return 1
        import json
        events = json.loads(given.read_text())["traceEvents"]
        tracks = {e["tid"] for e in events if e.get("ph") == "X" and e.get("pid") == 0}
        print("device tracks in the merged trace:", sorted(tracks))
        if tracks != set(range(8)):
            return 1
        missing = subprocess.run([sys.executable, str(SRC / "scripts/merge_traces.py"),
                                  str(pathlib.Path(tmp) / "none.json")],
                                 capture_output=True, text=True, timeout=60)
        print("no per-process files:", missing.returncode, missing.stderr.strip())
        return 0 if missing.returncode == 1 and "no none.process" in missing.stderr else 1


def xshard_pids(exe, tag):
    """(pid, MPI rank) of the running `exe` processes whose environment holds `tag` (this test's
    own, not those of tests running beside it)."""
    pids = []
    for p in pathlib.Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            if os.path.realpath(p / "exe") == exe:
                env = (p / "environ").read_bytes().split(b"\0")
                if tag.encode() not in env:
                    continue
                rank = [e for e in env if e.startswith(b"OMPI_COMM_WORLD_RANK=")]
                pids.append((int(p.name), int(rank[0].split(b"=")[1]) if rank else -1))
        except OSError:
            pass
    return pids


def killed_rank(args):
    exe = os.path.realpath(f"{args.build}/xshard")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        hlo = pathlib.Path(tmp) / "loop.hlo"
        hlo.write_text(LOOP)
        codes = pathlib.Path(tmp) / "codes"
        for recovery in [False, True]:
            # Each process's exit code, written by the shell that started it.
            wrapper = ["sh", "-c", f'"$0" "$@"; echo "$OMPI_COMM_WORLD_RANK $?" >> {codes}', exe,
                       "run", str(hlo), "--spmd", "--devices", "3", "--random-args", "1",
                       "--collective-timeout", "3"]
            extra = ["--enable-recovery"] if recovery else []
            codes.write_text("")
            tag = f"XSHARD_KILL_TEST={os.getpid()}"
            proc = subprocess.Popen(mpirun(args, 3, *extra) + wrapper,
                                    env=dict(ENV, XSHARD_KILL_TEST=str(os.getpid())), text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            # Wait until all three run (a loaded machine starts them slowly), then let them loop.
            deadline = time.monotonic() + 20
            while len(xshard_pids(exe, tag)) < 3 and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(1.5)
            victims = [pid for pid, rank in xshard_pids(exe, tag) if rank == 1]
            if not victims:
                print("no process of rank 1 found")
                proc.kill()
                return 1
            os.kill(victims[0], signal.SIGKILL)
            t0 = time.monotonic()
            try:
                out, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                print("HANG: mpirun still running 30 s after the kill")
                return 1
            secs = time.monotonic() - t0
            left = xshard_pids(exe, tag)
            exits = dict(l.split() for l in codes.read_text().splitlines())
            print(f"--- {'--enable-recovery' if recovery else 'default mpirun'}: ended {secs:.1f} s "
                  f"after the kill, mpirun exit {proc.returncode}, process exits {exits}, "
                  f"left running {left}")
            print("\n".join(l for l in err.splitlines() if "error" in l or "rank 1" in l))
            if left:
                print(f"FAIL: processes left running: {left}")
                failures += 1
            if not recovery:
                good = proc.returncode != 0 and secs < 10 and "rank 1" in err
                if not good:
                    print(f"FAIL: mpirun exit {proc.returncode} after {secs:.1f} s:\n{err}")
                failures += 0 if good else 1
                continue
            # The survivors' stderr lines may interleave: cut at each error's start.
            errors = [seg.splitlines()[0] for seg in err.split("xshard run (process ")[1:]
                      if seg[:1] in "02" and "): error:" in seg.split("\n")[0]]
            named = all("process 1 (device 1)" in l and "all-reduce" in l and "group {0,1,2}" in l
                        for l in errors)
            exit1 = exits.get("0") == "1" and exits.get("2") == "1"
            # 3 s timeout + 1 s roll call + 0.3 s before exiting + mpirun's teardown, with slack
            # for a loaded machine.
            good = len(errors) == 2 and named and exit1 and secs < 8
            if not good:
                print(f"FAIL: {len(errors)} errors {errors}, named {named}, exit codes {exits}, "
                      f"{secs:.1f} s")
            failures += 0 if good else 1
    return 0 if failures == 0 else 1


AGENT = """#!/bin/sh
# plm_rsh_agent for the netns test: "ssh host cmd..." becomes "ip netns exec <ns of host> cmd".
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
host="$1"; shift
ns=$(awk -v h="$host" '$1 == h { print $2 }' "{hosts}")
exec ip netns exec "$ns" sh -c "$*"
"""


def netns(args):
    if os.geteuid() != 0:
        skip("network namespaces need root (ip netns add)")
    if shutil.which("ip") is None:
        skip("the ip command (iproute2) is missing")
    tag = f"xs{os.getpid() % 100000}"
    a, b = f"{tag}a", f"{tag}b"
    made = []

    def sh(*cmd):
        return subprocess.run(cmd, capture_output=True, text=True)

    try:
        for ns in (a, b):
            r = sh("ip", "netns", "add", ns)
            if r.returncode != 0:
                skip(f"the kernel refused a network namespace: {r.stderr.strip()}")
            made.append(ns)
        steps = [("ip", "link", "add", f"{tag}va", "type", "veth", "peer", "name", f"{tag}vb"),
                 ("ip", "link", "set", f"{tag}va", "netns", a),
                 ("ip", "link", "set", f"{tag}vb", "netns", b),
                 ("ip", "-n", a, "addr", "add", "10.231.0.1/24", "dev", f"{tag}va"),
                 ("ip", "-n", b, "addr", "add", "10.231.0.2/24", "dev", f"{tag}vb"),
                 ("ip", "-n", a, "link", "set", f"{tag}va", "up"),
                 ("ip", "-n", b, "link", "set", f"{tag}vb", "up"),
                 ("ip", "-n", a, "link", "set", "lo", "up"),
                 ("ip", "-n", b, "link", "set", "lo", "up")]
        for s in steps:
            r = sh(*s)
            if r.returncode != 0:
                skip(f"could not wire the namespaces ({' '.join(s)}): {r.stderr.strip()}")
        with tempfile.TemporaryDirectory() as tmp:
            hosts = pathlib.Path(tmp) / "hosts"
            hosts.write_text(f"10.231.0.1 {a}\n10.231.0.2 {b}\n")
            agent = pathlib.Path(tmp) / "agent.sh"
            agent.write_text(AGENT.replace("{hosts}", str(hosts)))
            agent.chmod(0o755)
            hostfile = pathlib.Path(tmp) / "hostfile"
            hostfile.write_text("10.231.0.1 slots=1\n10.231.0.2 slots=1\n")
            # mpirun runs inside host A; it starts its daemons on both "hosts" through the agent,
            # and every process talks TCP over the veth pair only.
            cmd = ["ip", "netns", "exec", a, args.mpirun, "--hostfile", str(hostfile),
                   "-np", "2", "--mca", "plm_rsh_agent", str(agent),
                   "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "10.231.0.0/24",
                   "--mca", "oob_tcp_if_include", "10.231.0.0/24",
                   "-x", "OMPI_ALLOW_RUN_AS_ROOT", "-x", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
                   f"{args.build}/tests/mpi/mpi_collectives_check"]
            # First: each rank says which network namespace it runs in; they must be a's and b's.
            where, _ = run(cmd[:-1] + ["sh", "-c",
                                       'echo "$OMPI_COMM_WORLD_RANK $(readlink /proc/self/ns/net)"'])
            want = {sh("ip", "netns", "exec", ns, "readlink", "/proc/self/ns/net").stdout.strip()
                    for ns in (a, b)}
            got = {l.split()[1] for l in where.stdout.splitlines() if len(l.split()) == 2}
            print(f"ranks' namespaces {sorted(got)}, the two hosts' {sorted(want)}")
            if got != want or len(want) != 2:
                print(where.stdout, where.stderr[-2000:])
                return 1
            p, secs = run(cmd, timeout=100)
            print(" ".join(cmd))
            print(p.stdout, p.stderr[-3000:], f"({secs:.1f} s)")
            lines = [l for l in p.stdout.splitlines() if l.startswith("process ")]
            ok = (p.returncode == 0 and sum(" 0 of " in l for l in lines) == 2
                  and sum(l.endswith(": sharing ok") for l in lines) == 2)
            return 0 if ok else 1
    finally:
        for ns in made:
            sh("ip", "netns", "del", ns)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("--build", required=True)
    ap.add_argument("--mpi", default="0")
    ap.add_argument("--mpirun", default="")
    args = ap.parse_args()
    if args.mpi not in ("1", "ON", "TRUE"):
        skip("this build has no MPI support (CMake did not find MPI; install libopenmpi-dev "
             "openmpi-bin and reconfigure)")
    if not args.mpirun or shutil.which(args.mpirun) is None:
        skip("mpirun was not found (install openmpi-bin)")
    table = {
        "collectives_np2": lambda: collectives(args, 2, 1),
        "collectives_np4": lambda: collectives(args, 4, 1),
        "collectives_np2_l2": lambda: collectives(args, 2, 2),
        "mismatch": lambda: mismatch(args),
        "early_exit": lambda: absent(args, "early"),
        "late_arrival": lambda: absent(args, "late"),
        "cli_global": lambda: cli_global(args),
        "cli_shard_map": lambda: cli_shard_map(args),
        "cli_bench": lambda: cli_bench(args),
        "trace": lambda: trace(args),
        "killed_rank": lambda: killed_rank(args),
        "netns": lambda: netns(args),
    }
    sys.exit(table[args.scenario]())


if __name__ == "__main__":
    main()
